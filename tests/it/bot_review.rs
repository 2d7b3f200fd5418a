//! Nothing skips review, end to end over the fake GitHub: who may apply, plan and
//! unlock; which approvals count (never one from someone who pushed to the pull
//! request or made one of its commits, unless allowed); one reply per comment and a
//! reply limit per pull request; a check that is green only when nothing waits; pull
//! requests waiting for locks planned again by themselves, across a restart too.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::replies::redacted;

use bot_world::{DNS_APPLIED, REPO, World, config, push_change, push_change_as, world, world_with};
use cascade::store::{BotStore, SqliteStore};
use fake_github::Failure;

/// A pull request from `feature` by alice, planned.
async fn planned(w: &World) -> u64 {
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("/apply "), "{plan}");
    n
}

/// A planned pull request that bob (a writer) approved, then a new push planned, and
/// bob's `/apply` of the new plan: the pull request, its new head and the plan id.
async fn approved_then_pushed(w: &World) -> (u64, String, String) {
    let n = planned(w).await;
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    let head = push_change(w, "feature", "global/dns/main.tf", "after the review");
    w.synchronize(n, &head, "global/dns/main.tf").await;
    w.until("the new plan", |w| w.checks_done(&head)).await;
    let id = w.plan_id(n);
    w.comment(n, "bob", &format!("/apply {id}")).await;
    (n, head, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_approval_does_not_count_unless_any_head_is_configured() {
    let w = world().await;
    let (n, head, id) = approved_then_pushed(&w).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("apply_refused_stale_approval", redacted(&text));
    assert!(
        text.contains("@bob approved") && text.contains("an earlier commit"),
        "{text}"
    );
    assert!(text.contains(&head[..7]), "names the current head: {text}");
    assert!(!w.applied(n), "nothing applied");
    // Approved again on the head: applied.
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_any_head_an_earlier_approval_counts() {
    let w = world_with("approvals: any_head\n").await;
    let (n, _, _) = approved_then_pushed(&w).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

/// alice's pull request, planned; then bob (a writer) pushes a commit onto it, the new
/// head is planned, and bob approves it: the pull request and the plan id.
async fn pushed_onto_and_approved_by_bob(w: &World) -> (u64, String) {
    let n = planned(w).await;
    w.fake.set_permission(REPO, "bob", "write");
    let head = push_change(w, "feature", "global/dns/main.tf", "bob's change");
    w.synchronize_by(n, &head, "global/dns/main.tf", "bob")
        .await;
    w.until("the new plan", |w| w.checks_done(&head)).await;
    w.fake.approve(REPO, n, "bob");
    (n, w.plan_id(n))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_by_a_writer_who_pushed_to_the_pull_request_does_not_count() {
    let mut w = world().await;
    let (n, id) = pushed_onto_and_approved_by_bob(&w).await;
    // Who pushed is in the store: a restart does not forget it.
    w.server.take().unwrap().shutdown().await.unwrap();
    w.server = Some(cascade::server::start(config(&w)).await.unwrap());
    w.fake.set_permission(REPO, "carol", "write");
    for (who, count) in [("bob", 2), ("carol", 3)] {
        w.comment(n, who, &format!("/apply {id}")).await;
        let text = w.nth_reply(n, count).await;
        insta::assert_snapshot!(
            format!("apply_refused_approver_pushed_{who}"),
            redacted(&text)
        );
        assert!(
            text.contains("@bob pushed to this pull request")
                && text.contains("only from someone who did not push to it")
                && text.contains("`approvals: allow_pushers`"),
            "{who}: {text}"
        );
    }
    assert!(!w.applied(n), "nothing applied");
    // carol pushed nothing: her approval counts, whoever applies.
    w.fake.approve(REPO, n, "carol");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_pushers_a_pushers_approval_counts() {
    let w = world_with("approvals: allow_pushers\n").await;
    let (n, id) = pushed_onto_and_approved_by_bob(&w).await;
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_by_the_author_of_one_of_its_commits_does_not_count() {
    let w = world().await;
    let n = planned(&w).await;
    // alice pushes a commit carol wrote; GitHub links carol's email to her account.
    w.fake.link_email("carol@example.com", "carol");
    let file = "global/dns/main.tf";
    let head = push_change_as(&w, "feature", file, "carol's", "Carol <carol@example.com>");
    w.synchronize(n, &head, file).await;
    w.until("the new plan", |w| w.checks_done(&head)).await;
    w.fake.set_permission(REPO, "carol", "write");
    w.fake.approve(REPO, n, "carol");
    let id = w.plan_id(n);
    w.comment(n, "carol", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("apply_refused_approver_committed", redacted(&text));
    assert!(
        text.contains(&format!("@carol committed `{}`", &head[..7]))
            && text.contains("`approvals: allow_pushers`"),
        "{text}"
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_github_does_not_list_let_no_approval_count() {
    let w = world().await;
    let n = planned(&w).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.fake.fail_next("pulls.commits", Failure::status(404));
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("apply_refused_commits_unreadable", redacted(&text));
    assert!(
        text.contains("could not read this pull request's commits"),
        "{text}"
    );
    assert!(!w.applied(n), "nothing applied");
    // GitHub lists them again: bob pushed nothing, so his approval counts.
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_by_a_reader_does_not_count() {
    let w = world().await;
    let n = planned(&w).await;
    let id = w.plan_id(n);
    // mallory can only read; her approval is on the head.
    w.fake.approve(REPO, n, "mallory");
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("apply_refused_reader_approval", redacted(&text));
    assert!(
        text.contains("@mallory approved without write permission"),
        "{text}"
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_may_neither_unlock_nor_plan() {
    let w = world().await;
    let n = planned(&w).await;
    let check_states = |w: &World| w.fake.check_runs(REPO, &w.head_sha)[0].history.len();
    let before = check_states(&w);
    w.comment(n, "mallory", "/unlock").await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("unlock_refused_reader", redacted(&text));
    assert!(
        text.contains("@mallory cannot run `/unlock`") && text.contains("write permission"),
        "{text}"
    );
    w.comment(n, "mallory", "/plan").await;
    let text = w.nth_reply(n, 3).await;
    insta::assert_snapshot!("plan_refused_reader", redacted(&text));
    assert!(
        text.contains("@mallory cannot run `/plan`") && text.contains("write permission"),
        "{text}"
    );
    assert_eq!(check_states(&w), before, "nothing was planned again");
    // The locks are still held: a writer's /unlock releases them.
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", "/unlock").await;
    let text = w.nth_reply(n, 4).await;
    insta::assert_snapshot!("unlock_released", redacted(&text));
    assert!(
        text.starts_with("Released ") && !text.starts_with("Released 0"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_restricted_apply_needs_an_active_member_and_says_which_permission_is_missing() {
    let w = world_with("apply_permission:\n  teams: [acme/infra-admins]\n").await;
    let n = planned(&w).await;
    let id = w.plan_id(n);
    for user in ["bob", "carol", "dave"] {
        w.fake.set_permission(REPO, user, "write");
    }
    w.fake.approve(REPO, n, "bob");
    w.fake.add_team_member("acme", "infra-admins", "carol");
    w.fake.invite_team_member("acme", "infra-admins", "dave");
    // The App was not granted Organization → Members: cascade cannot tell, and says so.
    w.comment(n, "carol", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("apply_refused_team_membership_unreadable", redacted(&text));
    assert!(
        text.contains("members of `acme/infra-admins`")
            && text.contains("Organization → Members (read)"),
        "{text}"
    );
    w.fake.set_app_permission(77, "members", Some("read"));
    // A writer outside the team, and an invitee who has not accepted, may not.
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 3).await;
    insta::assert_snapshot!("apply_refused_not_in_team", redacted(&text));
    assert!(
        text.contains("@bob cannot run `/apply") && !text.contains("Organization"),
        "{text}"
    );
    w.comment(n, "dave", &format!("/apply {id}")).await;
    let text = w.nth_reply(n, 4).await;
    insta::assert_snapshot!("apply_refused_invited_not_member", redacted(&text));
    assert!(text.contains("@dave cannot run"), "{text}");
    // An active member with write permission may.
    w.comment(n, "carol", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ninety_help_lines_get_one_reply() {
    let w = world().await;
    let n = planned(&w).await;
    let writes = w.fake.write_calls();
    w.comment(n, "mallory", &"/help\n".repeat(90)).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("help", redacted(&text));
    assert!(text.contains("cascade commands"), "{text}");
    w.settled().await;
    assert_eq!(w.bot_texts(n).len(), 2, "one reply");
    assert_eq!(w.fake.write_calls() - writes, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_different_mistakes_get_one_short_reply() {
    let w = world().await;
    let n = planned(&w).await;
    let body: String = (0..3000).map(|i| format!("/help x{i}\n")).collect();
    w.comment(n, "mallory", &body).await;
    let text = w.nth_reply(n, 2).await;
    insta::assert_snapshot!("help_for_3000_mistakes", redacted(&text));
    assert!(text.contains("`x0`"), "{text}");
    assert!(
        text.contains("2995 more lines cascade could not read"),
        "{text}"
    );
    assert!(text.len() < 4_000, "{} characters", text.len());
    w.settled().await;
    assert_eq!(w.bot_texts(n).len(), 2, "one reply");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_on_one_pull_request_stop_after_ten_with_one_notice() {
    let w = world().await;
    let n = planned(&w).await;
    for _ in 0..13 {
        w.comment(n, "mallory", "/help").await;
    }
    // The plan comment, ten replies and the notice.
    w.until("the notice", |w| w.bot_texts(n).len() >= 12).await;
    w.settled().await;
    let texts = w.bot_texts(n);
    assert_eq!(texts.len(), 12, "{texts:#?}");
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("cascade commands"))
            .count(),
        10
    );
    assert!(
        texts[11].contains("will not reply to commands here for the next"),
        "{}",
        texts[11]
    );
    insta::assert_snapshot!("reply_limit_notice", redacted(&texts[11]));
    // Another pull request has its own allowance.
    let m = w.open_pr("dave", "feature", &w.head_sha, false);
    w.comment(m, "mallory", "/help").await;
    let reply = w.nth_reply(m, 1).await;
    assert!(reply.contains("cascade commands"), "{reply}");
}

/// Two pull requests changing the same unit: the second waits for the first's locks.
async fn second_waits(w: &World) -> (u64, u64, String) {
    let first = planned(w).await;
    let other = push_change(w, "other", "global/dns/main.tf", "a competing change");
    let second = w.open_pr("dave", "other", &other, false);
    assert_eq!(w.send_pr(second, "opened").await, 202);
    w.until("the second plan", |w| w.checks_done(&other)).await;
    (first, second, other)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_whose_units_are_all_locked_is_not_green_until_unlocked() {
    let w = world().await;
    let (first, second, other) = second_waits(&w).await;
    let check = w.fake.check_runs(REPO, &other)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("action_required"));
    assert!(check.title.contains("locked by #1"), "{}", check.title);
    assert!(!check.title.contains("no changes"), "{}", check.title);
    let text = &w.bot_texts(second)[0];
    assert!(!text.contains("No changes"), "{text}");
    assert!(text.contains("Not ready to apply"), "{text}");
    // A writer's `/unlock` on the first releases its locks: the second plans by itself.
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(first, "bob", "/unlock").await;
    let released = w.nth_reply(first, 2).await;
    assert!(released.starts_with("Released 3 locks"), "{released}");
    w.until("the second planned without the lock", |w| {
        !w.bot_texts(second)[0].contains("locked by #1")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_pull_request_is_planned_again_when_the_other_closes_after_a_restart() {
    let mut w = world().await;
    let (first, second, other) = second_waits(&w).await;
    // Restarted while the second waits: the waiting is in the store.
    w.server.take().unwrap().shutdown().await.unwrap();
    w.server = Some(cascade::server::start(config(&w)).await.unwrap());
    w.fake.close_pull_request(REPO, first, false);
    assert_eq!(w.send_pr(first, "closed").await, 202);
    w.until("the second planned without the lock", |w| {
        !w.bot_texts(second)[0].contains("locked by #1")
    })
    .await;
    w.until("its check", |w| {
        let runs = w.fake.check_runs(REPO, &other);
        runs.last().unwrap().current().conclusion.as_deref() == Some("action_required")
            && !runs.last().unwrap().current().title.contains("locked")
    })
    .await;
    assert_eq!(w.bot_texts(second).len(), 1, "the same comment, edited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_released_just_before_a_crash_still_wake_the_waiting_pull_request() {
    let mut w = world().await;
    let (first, second, _) = second_waits(&w).await;
    w.server.take().unwrap().abort();
    // The crash came after the first's locks were released, before the second was
    // planned again: only the store knows.
    {
        let store = SqliteStore::open(&w.data.path().join("cascade.db"))
            .await
            .unwrap();
        assert!(store.release_locks(REPO, first).await.unwrap() > 0);
    }
    w.server = Some(cascade::server::start(config(&w)).await.unwrap());
    w.until("the second planned without the lock", |w| {
        !w.bot_texts(second)[0].contains("locked by #1")
    })
    .await;
    let plan = w.plan_comment(second);
    assert!(plan.contains("/apply "), "ready to apply: {plan}");
}
