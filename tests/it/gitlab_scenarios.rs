//! GitLab merge requests end to end: a stateful fake GitLab over HTTP (a project at a
//! nested path, its repository fetched over smart HTTP with the token as Basic
//! credentials), a server serving GitLab alone driven with GitLab's webhook deliveries,
//! real git and the real terraform on the bundled example. The GitHub scenarios again,
//! and what only GitLab has: the `cascade <command>` spelling, "pipelines must succeed"
//! with cascade's own status, approvals GitLab records on no commit, commits that name
//! their author only as written.

use crate::support;
use crate::support::gitlab_world;
use crate::support::replies::redacted;

use gitlab_world::{
    AUTHOR, PROJECT, REPO_KEY, REPORTER_USER, REVIEWER, World, push_change, push_change_as,
    serve_binary, serve_process, world, world_with, world_without_server,
};
use serde_json::json;
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;
use support::fake_gitlab::{DEVELOPER, DiffFile, Failure, MrSpec, TOKEN};

/// A merge request from `feature` by alice, planned.
async fn planned(w: &World) -> u64 {
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    let plan = w.nth_note(iid, 1).await;
    assert!(plan.contains("\ncascade apply "), "{plan}");
    iid
}

fn apply_results(w: &World, iid: u64) -> usize {
    w.fake
        .bot_notes(w.project, iid)
        .iter()
        .filter(|n| n.body.starts_with("<!-- cascade:apply"))
        .count()
}

/// Requests the fake received for the project's repository over git.
fn git_requests(w: &World) -> Vec<support::fake_gitlab::RequestRecord> {
    w.fake
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with(&format!("/{PROJECT}.git/")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_merge_request_posts_one_note_and_a_cascade_status() {
    let w = world().await;
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let before = w.fake.write_calls();
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan note and the finished status", |w| {
        w.status_done(&w.head_sha) && !w.bot_texts(iid).is_empty()
    })
    .await;
    let notes = w.bot_texts(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let text = &notes[0];
    assert!(text.starts_with("<!-- cascade:plan"), "{text}");
    assert!(text.contains("global/dns"), "{text}");
    // GitLab runs `/…` quick actions itself: cascade's note offers its own spelling.
    assert!(text.contains("\ncascade apply "), "{text}");
    assert!(!text.contains("/apply"), "{text}");
    assert_eq!(w.plan_id(iid).len(), 12);
    let statuses = w.cascade_statuses(&w.head_sha);
    assert_eq!(statuses.len(), 1, "{statuses:#?}");
    assert_eq!(
        statuses[0].history,
        ["pending", "running"],
        "planned, then waits for review: never red"
    );
    let waiting = statuses[0].description.as_deref().unwrap_or_default();
    assert!(
        waiting.contains(&format!("cascade apply {}", w.plan_id(iid))),
        "{waiting}"
    );
    assert_eq!(statuses[0].git_ref.as_deref(), Some("feature"));
    let writes = w.fake.write_calls() - before;
    assert!(writes <= 3, "GitLab writes for one plan: {writes}");
    // The repository was fetched over HTTP from the fake, with the token, every time.
    let git = git_requests(&w);
    assert!(
        git.iter().any(|r| r.path.ends_with("/git-upload-pack")),
        "{git:#?}"
    );
    assert!(git.iter().all(|r| r.authorized), "{git:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_edits_the_same_note_and_the_old_id_is_refused() {
    let w = world().await;
    let iid = planned(&w).await;
    let old = w.plan_id(iid);
    let new_head = push_change(&w, "feature", "global/dns/main.tf", "a second change");
    w.pushed(iid, &new_head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.status_done(&new_head))
        .await;
    let notes = w.bot_notes(iid);
    assert_eq!(notes.len(), 1, "one note, edited in place: {notes:#?}");
    assert_eq!(notes[0].edits.len(), 1, "{notes:#?}");
    assert!(notes[0].edits[0].contains(&old));
    let new = w.plan_id(iid);
    assert_ne!(new, old);
    w.fake.approve(w.project, iid, REVIEWER);
    w.note(iid, REVIEWER, &format!("cascade apply {old}")).await;
    let reply = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_stale_id", redacted(&reply));
    assert!(
        reply.contains(&format!("cascade apply {new}")) && reply.contains("latest"),
        "{reply}"
    );
    assert_eq!(apply_results(&w, iid), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_without_new_commits_costs_no_request() {
    let w = world().await;
    let iid = planned(&w).await;
    w.settled().await;
    let requests = w.fake.requests().len();
    let title = w.fake.merge_request_updated_event(
        w.project,
        iid,
        json!({ "title": { "previous": "Change infrastructure", "current": "Change DNS" } }),
    );
    assert_eq!(title.post(&w.hook()).await.status().as_u16(), 200);
    let labels = w.fake.merge_request_updated_event(
        w.project,
        iid,
        json!({ "labels": { "previous": [], "current": [{ "id": 1, "title": "infra" }] } }),
    );
    assert_eq!(labels.post(&w.hook()).await.status().as_u16(), 200);
    w.settled().await;
    assert_eq!(
        w.fake.requests()[requests..],
        [],
        "no request reached GitLab"
    );
    assert_eq!(w.cascade_statuses(&w.head_sha).len(), 1);
    assert_eq!(w.bot_texts(iid).len(), 1, "nor a note");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_is_refused_to_a_reporter_before_approval_and_for_a_wrong_id() {
    let w = world().await;
    let iid = planned(&w).await;
    let id = w.plan_id(iid);
    // A Reporter may not apply, whichever spelling they use; the reply spells it GitLab's way.
    w.note(iid, REPORTER_USER, &format!("cascade apply {id}"))
        .await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_reporter", redacted(&text));
    assert!(
        text.contains(&format!("@{REPORTER_USER} cannot run `cascade apply {id}`")),
        "{text}"
    );
    assert!(!text.contains("/apply"), "{text}");
    w.note(iid, REPORTER_USER, &format!("/apply {id}")).await;
    let text = w.nth_note(iid, 3).await;
    insta::assert_snapshot!("apply_refused_reporter_slash_spelling", redacted(&text));
    assert!(
        text.contains(&format!("@{REPORTER_USER} cannot run `cascade apply {id}`")),
        "{text}"
    );
    // A Developer, before any approval.
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 4).await;
    insta::assert_snapshot!("apply_refused_without_approval", redacted(&text));
    assert!(
        text.contains("needs an approving review") && text.contains(&format!("@{AUTHOR}")),
        "{text}"
    );
    assert!(text.contains(&format!("`cascade apply {id}`")), "{text}");
    // The author's own approval does not count either.
    w.fake.approve(w.project, iid, AUTHOR);
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 5).await;
    insta::assert_snapshot!("apply_refused_authors_own_approval", redacted(&text));
    assert!(text.contains("needs an approving review"), "{text}");
    // A wrong id.
    w.fake.approve(w.project, iid, REVIEWER);
    w.note(iid, REVIEWER, "cascade apply deadbeefdead").await;
    let text = w.nth_note(iid, 6).await;
    insta::assert_snapshot!("apply_refused_wrong_id", redacted(&text));
    assert!(text.contains(&format!("cascade apply {id}")), "{text}");
    // A malformed command gets help in GitLab's spelling.
    w.note(iid, REVIEWER, "cascade apply").await;
    let text = w.nth_note(iid, 7).await;
    insta::assert_snapshot!("apply_without_an_id", redacted(&text));
    assert!(text.contains("`cascade help`"), "{text}");
    assert_eq!(apply_results(&w, iid), 0, "nothing applied");
    assert!(
        !w.checkout(iid)
            .join("global/dns/terraform.tfstate")
            .exists()
    );
}

/// bob approves and applies the merge request's plan through `hook`, then each new plan
/// the apply hands back (dependents planned against mock outputs change once their
/// upstream is applied), until it is all applied: the rounds it took and the last id.
async fn apply_round_by_round(w: &World, iid: u64, hook: &str) -> (usize, String) {
    w.fake.approve(w.project, iid, REVIEWER);
    let mut id = w.plan_id(iid);
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds <= 6, "the apply did not converge");
        let results = apply_results(w, iid);
        let statuses = w.status_histories(&w.head_sha);
        let writes = w.fake.write_calls();
        let note = w.user_note(iid, REVIEWER, &format!("cascade apply {id}"));
        let status = w.fake.note_event(&note).post(hook).await.status();
        assert_eq!(status.as_u16(), 202);
        w.until("the apply result", |w| apply_results(w, iid) > results)
            .await;
        w.until("the status after the apply", |w| {
            w.status_histories(&w.head_sha) != statuses && w.status_done(&w.head_sha)
        })
        .await;
        // Seen (👀 on the command), the result, the status: three writes (four when the
        // plan changed: the waiting status is canceled and set running with the new id).
        let awards = w.fake.awards(note.id);
        assert_eq!(
            awards,
            [(
                support::fake_gitlab::BOT_USERNAME.to_string(),
                "eyes".to_string()
            )]
        );
        let spent = w.fake.write_calls() - writes;
        let result = w.apply_result(iid).unwrap();
        if result.contains(&format!("cascade applied `{id}`")) {
            assert!(spent <= 3, "writes for one apply: {spent}");
            assert!(result.contains("merge request can be merged"), "{result}");
            assert_eq!(w.status_now(&w.head_sha).as_deref(), Some("success"));
            return (rounds, id);
        }
        assert!(
            spent <= 4,
            "writes for one apply whose plan changed: {spent}"
        );
        assert!(result.contains("the plan changed"), "{result}");
        let next = w.plan_id(iid);
        assert_ne!(next, id);
        // Waiting again, never red, and naming the new id.
        let newest = w.cascade_statuses(&w.head_sha).pop().unwrap();
        assert_eq!(newest.current(), "running");
        let says = newest.description.unwrap_or_default();
        assert!(says.contains(&format!("cascade apply {next}")), "{says}");
        assert!(
            w.status_histories(&w.head_sha)
                .iter()
                .flatten()
                .all(|state| state != "failed"),
            "{:?}",
            w.status_histories(&w.head_sha)
        );
        id = next;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_apply_applies_round_by_round_then_the_id_is_consumed() {
    let w = world().await;
    let iid = planned(&w).await;
    let first = w.plan_id(iid);
    let (rounds, id) = apply_round_by_round(&w, iid, &w.hook()).await;
    assert!(
        rounds >= 2,
        "dependents read global/dns's real outputs once applied"
    );
    let checkout = w.checkout(iid);
    for unit in ["global/dns", "dev/dns", "prod/dns"] {
        assert!(
            checkout.join(unit).join("terraform.tfstate").is_file(),
            "{unit} applied"
        );
    }
    // The consumed id is refused, and so is the first one.
    let notes = w.bot_texts(iid).len();
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, notes + 1).await;
    insta::assert_snapshot!("apply_refused_already_applied", redacted(&text));
    assert!(text.contains("already applied"), "{text}");
    w.note(iid, REVIEWER, &format!("cascade apply {first}"))
        .await;
    let text = w.nth_note(iid, notes + 2).await;
    insta::assert_snapshot!("apply_refused_first_id_after_an_apply", redacted(&text));
    assert!(!text.starts_with("<!-- cascade:apply"), "{text}");
    assert!(text.contains(&format!("`{first}`")), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_request_from_a_fork_is_refused_with_an_explanation() {
    let w = world().await;
    let iid = w.open_mr("eve", "feature", &w.head_sha, true);
    assert_eq!(w.send_mr(iid, "open").await, 202);
    let text = w.nth_note(iid, 1).await;
    insta::assert_snapshot!("fork_not_planned", redacted(&text));
    assert!(
        text.contains("merge requests from forks") && text.contains("push the branch"),
        "{text}"
    );
    assert!(w.cascade_statuses(&w.head_sha).is_empty());
    assert!(git_requests(&w).is_empty(), "nothing fetched");
    // Its /apply is refused too, with the same reason.
    w.fake.approve(w.project, iid, REVIEWER);
    w.note(iid, REVIEWER, "cascade apply 0123456789ab").await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_fork", redacted(&text));
    assert!(text.contains("from forks"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quoted_or_fenced_command_is_ignored() {
    let w = world().await;
    let iid = planned(&w).await;
    let id = w.plan_id(iid);
    w.fake.approve(w.project, iid, REVIEWER);
    let writes = w.fake.write_calls();
    let requests = w.fake.requests().len();
    for body in [
        format!("> cascade apply {id}\n\nwhy this?"),
        format!("> /apply {id}"),
        format!("```\ncascade apply {id}\n```"),
        format!("Run `cascade apply {id}` when ready"),
    ] {
        assert_eq!(w.note(iid, REVIEWER, &body).await, 202);
    }
    // GitLab sends a Note Hook for cascade's own notes too.
    let own = w.fake.bot_notes(w.project, iid).remove(0);
    let status = w.fake.note_event(&own).post(&w.hook()).await.status();
    assert!(status.is_success(), "{status}");
    w.settled().await;
    assert_eq!(w.bot_texts(iid).len(), 1, "{:#?}", w.bot_texts(iid));
    assert_eq!(w.fake.write_calls(), writes);
    assert_eq!(
        w.fake.requests()[requests..],
        [],
        "not even a read: nothing to act on"
    );
}

/// Two merge requests changing the same unit: the second waits for the first's locks.
async fn second_waits(w: &World) -> (u64, u64, String) {
    let first = planned(w).await;
    let other = push_change(w, "other", "global/dns/main.tf", "a competing change");
    let second = w.open_mr("dave", "other", &other, false);
    assert_eq!(w.send_mr(second, "open").await, 202);
    w.until("the second plan", |w| w.status_done(&other)).await;
    let text = &w.bot_texts(second)[0];
    assert!(text.contains("locked by !1"), "{text}");
    assert!(text.contains("`cascade unlock`"), "{text}");
    (first, second, other)
}

fn unlocked(w: &World, iid: u64) -> bool {
    w.bot_texts(iid)
        .first()
        .is_some_and(|t| !t.contains("locked by !"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascade_unlock_releases_the_locks_for_a_developer_only() {
    let w = world().await;
    let (first, second, other) = second_waits(&w).await;
    // `/unlock` is GitLab's own quick action (GitLab acts on it and sends no hook);
    // `cascade unlock` is cascade's.
    w.note(first, REPORTER_USER, "cascade unlock").await;
    let text = w.nth_note(first, 2).await;
    insta::assert_snapshot!("unlock_refused_reporter", redacted(&text));
    assert!(
        text.contains(&format!("@{REPORTER_USER} cannot run `cascade unlock`")),
        "{text}"
    );
    w.note(first, REVIEWER, "cascade unlock").await;
    let text = w.nth_note(first, 3).await;
    insta::assert_snapshot!("unlock_released", redacted(&text));
    assert!(
        text.starts_with("Released ") && !text.starts_with("Released 0"),
        "{text}"
    );
    assert!(text.contains("`cascade plan`"), "{text}");
    w.until("the second planned without the lock", |w| {
        unlocked(w, second)
    })
    .await;
    w.until("its new status", |w| w.cascade_statuses(&other).len() == 2)
        .await;
    assert_eq!(w.bot_texts(second).len(), 1, "the same note, edited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_or_merging_releases_the_locks() {
    let w = world().await;
    let (first, second, _) = second_waits(&w).await;
    w.fake.close(w.project, first);
    assert_eq!(w.send_mr(first, "close").await, 202);
    w.until("the second planned without the lock", |w| {
        unlocked(w, second)
    })
    .await;
    // The second holds the unit now; a third waits for it until it is merged.
    let third_head = push_change(&w, "third", "global/dns/main.tf", "a third change");
    let third = w.open_mr("erin", "third", &third_head, false);
    assert_eq!(w.send_mr(third, "open").await, 202);
    w.until("the third plan", |w| w.status_done(&third_head))
        .await;
    assert!(
        w.bot_texts(third)[0].contains("locked by !2"),
        "{}",
        w.bot_texts(third)[0]
    );
    w.fake.merge(w.project, second);
    assert_eq!(w.send_mr(second, "merge").await, 202);
    w.until("the third planned without the lock", |w| unlocked(w, third))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_delivery_fifty_times_plans_once() {
    let w = world().await;
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let delivery = w.fake.merge_request_event(w.project, iid, "open");
    let mut statuses = Vec::new();
    for _ in 0..50 {
        statuses.push(
            delivery
                .redelivered()
                .post(&w.hook())
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(statuses[0], 202);
    assert!(statuses[1..].iter().all(|s| *s == 200), "{statuses:?}");
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    w.settled().await;
    assert_eq!(w.bot_texts(iid).len(), 1);
    let statuses = w.cascade_statuses(&w.head_sha);
    assert_eq!(statuses.len(), 1, "{statuses:#?}");
    assert_eq!(statuses[0].history.len(), 2, "{statuses:#?}");
}

/// Every stored delivery id, straight from the server's database.
async fn stored_deliveries(data: &Path) -> Vec<String> {
    let url = format!("sqlite://{}?mode=ro", data.join("cascade.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows: Vec<(String,)> = sqlx::query_as("SELECT id FROM deliveries")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.into_iter().map(|r| r.0).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_or_missing_token_is_refused_and_nothing_is_stored() {
    let w = world().await;
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let requests = w.fake.requests().len();
    let delivery = w.fake.merge_request_event(w.project, iid, "open");
    for token in [Some("not the secret"), Some(""), None] {
        let forged = delivery.clone().with_token(token);
        assert_eq!(forged.post(&w.hook()).await.status().as_u16(), 401);
    }
    let note = w.user_note(iid, REVIEWER, "cascade plan");
    let forged = w.fake.note_event(&note).with_token(Some(TOKEN));
    assert_eq!(
        forged.post(&w.hook()).await.status().as_u16(),
        401,
        "the API token is not the webhook's secret"
    );
    w.settled().await;
    assert!(stored_deliveries(w.data.path()).await.is_empty());
    assert_eq!(w.fake.requests()[requests..], [], "nothing reached GitLab");
    assert!(w.bot_texts(iid).is_empty());
    // The same delivery with the secret is new to cascade: nothing was stored before.
    assert_eq!(delivery.post(&w.hook()).await.status().as_u16(), 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    assert_eq!(stored_deliveries(w.data.path()).await.len(), 1);
    let plan = w.nth_note(iid, 1).await;
    assert!(plan.contains("\ncascade apply "), "{plan}");
}

/// Approved by bob, then bob's `cascade apply` of the current plan: the apply note or
/// the refusal.
async fn apply_approved(w: &World, iid: u64) -> String {
    let id = w.plan_id(iid);
    w.fake.approve(w.project, iid, REVIEWER);
    let notes = w.bot_texts(iid).len();
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    w.nth_note(iid, notes + 1).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelines_must_succeed_counts_every_status_but_cascade_s_own() {
    let w = world().await;
    let iid = planned(&w).await;
    // cascade's own status waits for review (running), so GitLab holds the merge on it…
    assert_eq!(
        w.fake.detailed_merge_status(w.project, iid),
        "ci_still_running"
    );
    // …and another failing status blocks the apply.
    w.fake.add_status(w.project, &w.head_sha, "lint", "failed");
    let text = apply_approved(&w, iid).await;
    insta::assert_snapshot!("apply_refused_not_mergeable", redacted(&text));
    assert!(
        text.contains("not mergeable (state `ci_still_running`)"),
        "{text}"
    );
    assert_eq!(apply_results(&w, iid), 0);
    // The lint job retried and passed: only cascade's status runs, which does not count.
    w.fake.add_status(w.project, &w.head_sha, "lint", "success");
    assert_eq!(
        w.fake.detailed_merge_status(w.project, iid),
        "ci_still_running"
    );
    let text = apply_approved(&w, iid).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_count_on_the_head_only_when_gitlab_removes_them_on_push() {
    let w = world().await;
    w.fake.set_reset_approvals_on_push(w.project, false);
    let iid = planned(&w).await;
    let text = apply_approved(&w, iid).await;
    insta::assert_snapshot!("apply_refused_approval_not_on_the_head", redacted(&text));
    assert!(
        text.contains(&format!("@{REVIEWER} approved"))
            && text
                .contains("\"Remove all approvals when commits are added to the source branch\"")
            && text.contains("`approvals: any_head`"),
        "{text}"
    );
    assert_eq!(apply_results(&w, iid), 0);
    // The project now drops approvals on push: an approval in force is on the head.
    w.fake.set_reset_approvals_on_push(w.project, true);
    let text = apply_approved(&w, iid).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_any_head_an_approval_counts_whatever_the_project_setting() {
    let w = world_with("approvals: any_head\n").await;
    w.fake.set_reset_approvals_on_push(w.project, false);
    let iid = planned(&w).await;
    let text = apply_approved(&w, iid).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

/// Neither the token nor anything derived from it (its Basic credentials) is in `text`.
fn assert_no_token(what: &str, text: &str) {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"));
    for secret in [TOKEN, &basic, "glpat-"] {
        assert!(!text.contains(secret), "{what} shows the token: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_binary_mid_plan_then_restarting_finishes_the_plan_without_redoing_units() {
    let w = world_without_server("").await;
    let tools = tempfile::tempdir().unwrap();
    let (terraform, invocations) = support::slow_terraform(tools.path());
    let log = tools.path().join("serve.log");
    // A change every unit reads: root.hcl.
    let head = push_change(&w, "wide", "root.hcl", "touch every unit");
    let iid = w.open_mr_changing(AUTHOR, "wide", &head, false, "root.hcl");
    let args = [OsStr::new("--terraform-bin"), terraform.as_os_str()];
    let (mut server, port) = serve_binary(&w, &args, &log).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/gitlab");
    let delivery = w.fake.merge_request_event(w.project, iid, "open");
    assert_eq!(delivery.post(&hook).await.status().as_u16(), 202);
    for _ in 0..600 {
        let planned = std::fs::read_to_string(&invocations)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if planned >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill().unwrap();
    server.wait().unwrap();
    let before = std::fs::read_to_string(&invocations)
        .unwrap()
        .lines()
        .count();
    assert!(before < 11, "killed mid-plan ({before} of 11 units)");
    tokio::time::sleep(Duration::from_millis(1500)).await; // an orphaned terraform finishes
    let mut server = serve_process(&w, port, &args, &log);
    w.until("the plan after the restart", |w| w.status_done(&head))
        .await;
    // GitLab retries a delivery with the same Idempotency-Key: already stored.
    assert_eq!(delivery.post(&hook).await.status().as_u16(), 200);
    server.kill().unwrap();
    server.wait().unwrap();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for line in std::fs::read_to_string(&invocations).unwrap().lines() {
        *counts.entry(line.to_string()).or_default() += 1;
    }
    assert_eq!(counts.len(), 11, "every unit planned: {counts:#?}");
    let twice = counts.values().filter(|c| **c > 1).count();
    assert!(
        twice <= 1 && counts.values().all(|c| *c <= 2),
        "{counts:#?}"
    );
    let notes = w.bot_texts(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    // The token is in no note and no line of the server's log (at debug).
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("GitLab token accepted"), "{log}");
    assert!(log.contains("fetched"), "{log}");
    assert_no_token("the server's log", &log);
    for note in w.fake.notes(w.project, iid) {
        assert_no_token("a note", &note.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_refused_by_gitlab_fails_the_plan_without_showing_the_token() {
    let w = world_without_server("").await;
    let tools = tempfile::tempdir().unwrap();
    let log = tools.path().join("serve.log");
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let (mut server, port) = serve_binary(&w, &[], &log).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/gitlab");
    // GitLab refuses the token for git (revoked, or without read_repository) as it does:
    // 401 HTTP Basic: Access denied.
    let denied = || Failure {
        status: 401,
        headers: vec![(
            "WWW-Authenticate".to_string(),
            "Basic realm=\"GitLab\"".to_string(),
        )],
        message: None,
    };
    for _ in 0..4 {
        w.fake.fail_next("git", denied());
    }
    let delivery = w.fake.merge_request_event(w.project, iid, "open");
    assert_eq!(delivery.post(&hook).await.status().as_u16(), 202);
    let failed = |log: &Path| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("cannot fetch")
    };
    for _ in 0..300 {
        if failed(&log) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    w.until("the note saying so", |w| !w.bot_texts(iid).is_empty())
        .await;
    server.kill().unwrap();
    server.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("cannot fetch"))
        .unwrap_or_else(|| panic!("no fetch error logged: {text}"));
    assert!(line.contains(REPO_KEY), "{line}");
    assert!(line.contains("GitLab token may read the project"), "{line}");
    assert_no_token("the fetch error", line);
    assert!(!line.contains("x-access-token"), "{line}");
    assert!(
        !line.contains("@127.0.0.1"),
        "no credentials in a URL: {line}"
    );
    assert_no_token("the server's log", &text);
    assert!(
        w.cascade_statuses(&w.head_sha).is_empty(),
        "nothing planned"
    );
    // The merge request is told, though nothing about it was stored yet.
    let notes = w.bot_texts(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].contains("internal error") && notes[0].contains("`cascade plan`"),
        "{}",
        notes[0]
    );
    for note in w.fake.notes(w.project, iid) {
        assert_no_token("a note", &note.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_waits_until_it_is_marked_ready() {
    let w = world().await;
    let iid = w.fake.open_merge_request(
        w.project,
        MrSpec {
            author: AUTHOR.into(),
            head_sha: w.head_sha.clone(),
            base_sha: w.base_sha.clone(),
            draft: true,
            files: vec![DiffFile::modified("global/dns/main.tf")],
            ..MrSpec::default()
        },
    );
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.settled().await;
    assert!(w.bot_texts(iid).is_empty(), "a draft is not planned");
    assert!(w.cascade_statuses(&w.head_sha).is_empty());
    // Ready: GitLab sends `update` with `changes.draft` and no new commits.
    w.fake.set_draft(w.project, iid, false);
    let ready = w.fake.merge_request_ready_event(w.project, iid);
    assert_eq!(ready.post(&w.hook()).await.status().as_u16(), 202);
    w.until("the plan once ready", |w| w.status_done(&w.head_sha))
        .await;
    assert_eq!(w.bot_texts(iid).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_gitlab_removed_on_push_does_not_count() {
    let w = world().await;
    let iid = planned(&w).await;
    w.fake.approve(w.project, iid, REVIEWER);
    // GitLab removes approvals when commits are added (the project's default).
    let head = push_change(&w, "feature", "global/dns/main.tf", "after the review");
    w.pushed(iid, &head, "global/dns/main.tf").await;
    w.until("the new plan", |w| w.status_done(&head)).await;
    let id = w.plan_id(iid);
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_approval_removed_on_push", redacted(&text));
    assert!(text.contains("needs an approving review"), "{text}");
    assert_eq!(apply_results(&w, iid), 0);
    // Approved again, on the new head: applied.
    w.fake.approve(w.project, iid, REVIEWER);
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 3).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

/// alice's merge request, planned; then bob (a Developer) pushes a commit onto it, the new
/// head is planned, and bob approves it: the merge request and the plan id.
async fn pushed_onto_and_approved_by_bob(w: &World) -> (u64, String) {
    let iid = planned(w).await;
    let head = push_change(w, "feature", "global/dns/main.tf", "bob's change");
    w.pushed_by(iid, &head, "global/dns/main.tf", Some(REVIEWER))
        .await;
    w.until("the new plan", |w| w.status_done(&head)).await;
    w.fake.approve(w.project, iid, REVIEWER);
    (iid, w.plan_id(iid))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_by_a_developer_who_pushed_to_the_merge_request_does_not_count() {
    let w = world().await;
    let (iid, id) = pushed_onto_and_approved_by_bob(&w).await;
    w.fake.set_member(w.project, "carol", Some(DEVELOPER));
    for (who, count) in [(REVIEWER, 2), ("carol", 3)] {
        w.note(iid, who, &format!("cascade apply {id}")).await;
        let text = w.nth_note(iid, count).await;
        insta::assert_snapshot!(
            format!("apply_refused_approver_pushed_{who}"),
            redacted(&text)
        );
        assert!(
            text.contains(&format!("@{REVIEWER} pushed to this merge request"))
                && text.contains("`approvals: allow_pushers`"),
            "{who}: {text}"
        );
    }
    assert_eq!(apply_results(&w, iid), 0);
    // carol pushed nothing: her approval counts, whoever applies.
    w.fake.approve(w.project, iid, "carol");
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 4).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_pushers_a_pushers_approval_counts_on_gitlab() {
    let w = world_with("approvals: allow_pushers\n").await;
    let (iid, id) = pushed_onto_and_approved_by_bob(&w).await;
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 2).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_by_the_author_written_in_one_of_its_commits_does_not_count() {
    let w = world().await;
    let iid = planned(&w).await;
    // alice pushes a commit that names carol as its author (GitLab links it to nobody).
    let file = "global/dns/main.tf";
    let head = push_change_as(&w, "feature", file, "carol's", "Carol <carol@example.com>");
    w.pushed(iid, &head, file).await;
    w.until("the new plan", |w| w.status_done(&head)).await;
    w.fake.set_member(w.project, "carol", Some(DEVELOPER));
    w.fake.approve(w.project, iid, "carol");
    let id = w.plan_id(iid);
    w.note(iid, "carol", &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_approver_committed", redacted(&text));
    assert!(
        text.contains(&format!("@carol committed `{}`", &head[..7]))
            && text.contains("`approvals: allow_pushers`"),
        "{text}"
    );
    assert_eq!(apply_results(&w, iid), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_s_own_approval_rules_must_be_met_too() {
    // Only `approved` is required: GitLab's word on approvals must count by itself.
    let w = world_with("apply_requirements: [approved]\n").await;
    w.fake.set_approvals_required(w.project, 2);
    let iid = planned(&w).await;
    let text = apply_approved(&w, iid).await;
    insta::assert_snapshot!("apply_refused_gitlab_approval_rules", redacted(&text));
    assert!(
        text.contains("Not applied") && text.contains("1 more approval"),
        "{text}"
    );
    assert_eq!(apply_results(&w, iid), 0);
    w.fake
        .set_member(w.project, "carol", Some(support::fake_gitlab::DEVELOPER));
    w.fake.approve(w.project, iid, "carol");
    let text = apply_approved(&w, iid).await;
    assert!(text.starts_with("<!-- cascade:apply"), "{text}");
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_permission_names_gitlab_users_and_nested_groups() {
    let w =
        world_with("apply_permission:\n  users: [john.doe]\n  teams: [acme/platform/sre_team]\n")
            .await;
    let iid = planned(&w).await;
    let id = w.plan_id(iid);
    w.fake.approve(w.project, iid, REVIEWER);
    for user in ["john.doe", "gina"] {
        w.fake
            .set_member(w.project, user, Some(support::fake_gitlab::DEVELOPER));
    }
    // A member of a subgroup of the group named, inherited as GitLab does.
    w.fake.set_group_member(
        "acme/platform/sre_team",
        "gina",
        Some(support::fake_gitlab::DEVELOPER),
    );
    // bob is a Developer but neither listed nor in the group.
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("apply_refused_not_in_team", redacted(&text));
    assert!(
        text.contains(&format!("@{REVIEWER} cannot run `cascade apply {id}`"))
            && text.contains("members of `acme/platform/sre_team`"),
        "{text}"
    );
    w.note(iid, "gina", &format!("cascade apply {id}")).await;
    w.until("the apply", |w| apply_results(w, iid) == 1).await;
    let result = w.apply_result(iid).unwrap();
    assert_eq!(support::applied_units(&result), support::DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_is_planned_from_refs_merge_requests_with_allow_forks() {
    let w = gitlab_world::world_configured("", |c| c.allow_forks = true).await;
    // eve's fork: a clone of the project with a commit the project never had.
    let forks = tempfile::tempdir().unwrap();
    let fork = forks.path().join("infra");
    support::git(
        forks.path(),
        &["clone", "-q", w.origin.to_str().unwrap(), "infra"],
    );
    support::git(
        &fork,
        &["checkout", "-q", "-b", "eve-change", "origin/main"],
    );
    let file = fork.join("global/dns/main.tf");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n# from a fork\n")).unwrap();
    support::git(&fork, &["commit", "-qam", "from a fork"]);
    let head = support::git(&fork, &["rev-parse", "HEAD"]);
    let iid = w.fake.open_merge_request(
        w.project,
        MrSpec {
            author: "eve".into(),
            source_branch: "eve-change".into(),
            head_sha: head.clone(),
            base_sha: w.base_sha.clone(),
            fork: true,
            files: vec![DiffFile::modified("global/dns/main.tf")],
            head_repo: Some(fork.clone()),
            ..MrSpec::default()
        },
    );
    // As on GitLab: the project has the fork's head only under refs/merge-requests/<iid>/head.
    let refs = support::git(&w.origin, &["for-each-ref", "--contains", &head]);
    assert_eq!(refs.lines().count(), 1, "{refs}");
    assert!(
        refs.ends_with(&format!("refs/merge-requests/{iid}/head")),
        "{refs}"
    );
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the fork's plan", |w| w.status_done(&head)).await;
    let text = &w.bot_texts(iid)[0];
    assert!(
        text.starts_with("<!-- cascade:plan") && text.contains("global/dns"),
        "{text}"
    );
    assert_eq!(
        w.status_now(&head).as_deref(),
        Some("running"),
        "waits for review"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_note_is_found_again_by_its_marker_with_a_fresh_database() {
    let mut w = world().await;
    let iid = planned(&w).await;
    let first = w.bot_notes(iid);
    // A new server that remembers nothing (its database and mirrors lost).
    w.server.take().unwrap().shutdown().await.unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let mut config = gitlab_world::config(&w);
    config.data_dir = fresh.path().to_path_buf();
    w.server = Some(cascade::server::start(config).await.unwrap());
    let head = push_change(&w, "feature", "global/dns/main.tf", "after the restart");
    w.pushed(iid, &head, "global/dns/main.tf").await;
    w.until("the plan of the new head", |w| w.status_done(&head))
        .await;
    let notes = w.bot_notes(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0].id, first[0].id, "the same note, edited");
    assert_eq!(notes[0].edits.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_then_reopening_plans_again() {
    let w = world().await;
    let iid = planned(&w).await;
    w.fake.close(w.project, iid);
    assert_eq!(w.send_mr(iid, "close").await, 202);
    w.settled().await;
    w.fake.reopen(w.project, iid);
    assert_eq!(w.send_mr(iid, "reopen").await, 202);
    w.until("the plan after reopening", |w| {
        w.fake
            .bot_notes(w.project, iid)
            .first()
            .is_some_and(|n| n.edits.len() == 1)
    })
    .await;
    assert_eq!(w.bot_texts(iid).len(), 1, "the same note, edited");
    // The same plan waits as before: its running status says the same, so it stays.
    assert_eq!(w.status_histories(&w.head_sha), [["pending", "running"]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_is_spelled_the_gitlab_way() {
    let w = world().await;
    let iid = planned(&w).await;
    w.note(iid, REPORTER_USER, "cascade help").await;
    let text = w.nth_note(iid, 2).await;
    insta::assert_snapshot!("help", redacted(&text));
    for command in [
        "`cascade apply",
        "`cascade plan",
        "`cascade unlock`",
        "`cascade help`",
    ] {
        assert!(text.contains(command), "{command}: {text}");
    }
    assert!(!text.contains("`/"), "{text}");
    // The slash spelling is read too.
    w.note(iid, REPORTER_USER, "/help").await;
    let text = w.nth_note(iid, 3).await;
    insta::assert_snapshot!("help_slash_spelling", redacted(&text));
    assert!(text.contains("`cascade apply"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serving_gitlab_alone_plans_and_applies_the_example() {
    let w = world_without_server("").await;
    let tools = tempfile::tempdir().unwrap();
    let log = tools.path().join("serve.log");
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let (mut server, port) = serve_binary(&w, &[], &log).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/gitlab");
    let open = w.fake.merge_request_event(w.project, iid, "open");
    assert_eq!(open.post(&hook).await.status().as_u16(), 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    let (rounds, _) = apply_round_by_round(&w, iid, &hook).await;
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(rounds >= 2, "{rounds}");
    let checkout = w.data.path().join(
        "served/workspaces/checkouts/@gitlab/acme/platform/infra.git/pr-1/prod/dns/terraform.tfstate",
    );
    assert!(
        checkout.is_file(),
        "applied in the merge request's checkout"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert_no_token("the server's log", &log);
    for note in w.fake.notes(w.project, iid) {
        assert_no_token("a note", &note.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_and_a_note_gitlab_stored_despite_a_502_post_one_note() {
    let w = world().await;
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    w.fake.fail_next("notes.list", Failure::retry_after(1));
    w.fake
        .fail_next_after_storing("notes.create", Failure::status(502));
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    let notes = w.bot_texts(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    // And it is the note cascade edits on the next plan.
    let head = push_change(&w, "feature", "global/dns/main.tf", "again");
    w.pushed(iid, &head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.status_done(&head)).await;
    let notes = w.bot_notes(iid);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0].edits.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_longer_than_a_github_comment_is_one_gitlab_note() {
    let w = world().await;
    let dir = w.work.path();
    support::git(dir, &["checkout", "-q", "-B", "big", "feature"]);
    // About 20,000 characters of plan per unit: four of them overflow GitHub's 65,536.
    let filler = support::big_module(150);
    for unit in ["global/dns", "dev/network", "prod/network", "dev/app"] {
        std::fs::write(dir.join(unit).join("big.tf"), &filler).unwrap();
    }
    support::git(dir, &["add", "-A"]);
    support::git(dir, &["commit", "-qm", "big plans"]);
    let head = push_change(&w, "big", "global/dns/main.tf", "and a change");
    let iid = w.open_mr(AUTHOR, "big", &head, false);
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the long plan", |w| w.status_done(&head)).await;
    let notes = w.bot_texts(iid);
    assert_eq!(
        notes.len(),
        1,
        "one note: GitLab takes 1,000,000 characters"
    );
    assert!(notes[0].chars().count() > 65_536, "{}", notes[0].len());
    assert!(notes[0].contains("filler_149"));
}
