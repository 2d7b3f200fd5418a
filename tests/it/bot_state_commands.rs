//! `/import <unit> <address> <id>` and `/state rm <unit> <address>` over the fake forges
//! with the real terraform: off unless the default branch's `.cascade.yaml` lists them
//! (a pull request listing them on its own branch does not turn them on); on, they change
//! the unit's state at the head's checkout and the reply says what was added or removed;
//! a failure shows terraform's error, without the server's paths; an address or id that
//! could become an option is refused before anything runs, and shown inert.
//!
//! `terraform_data` can be imported with any id (checked with terraform 1.11), so the
//! bundled example's `global/dns` unit serves both commands.

use crate::support::bot_world::{REPO, world, world_with};
use crate::support::gitlab_world;

const ENABLED: &str = "commands: [import, state_rm]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_even_when_the_pull_request_turns_them_on_for_itself() {
    let w = world().await;
    let config = std::fs::read_to_string(w.work.path().join(".cascade.yaml")).unwrap();
    let (n, _) = w.open_adding(
        "alice",
        "enable-state-commands",
        &[(".cascade.yaml", &format!("{config}{ENABLED}"))],
    );
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(
        n,
        "bob",
        "/state rm global/dns terraform_data.zone\n/import global/dns terraform_data.zone z-1",
    )
    .await;
    let reply = w.nth_reply(n, 1).await;
    assert!(
        reply.contains("`/state rm` is off in this repository")
            && reply.contains("```yaml\ncommands: [state_rm]\n```"),
        "{reply}"
    );
    assert!(
        reply.contains("`/import` is off in this repository")
            && reply.contains("```yaml\ncommands: [import]\n```"),
        "{reply}"
    );
    assert!(reply.contains("on `main` (the default branch"), "{reply}");
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_rm_and_import_change_the_applied_state_and_say_what_changed() {
    let w = world_with(ENABLED).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    w.approve_and_apply(n).await;
    let applied = w.apply_comment(n);
    assert!(
        crate::support::applied_units(&applied).contains(&"global/dns".to_string()),
        "{applied}"
    );
    let mut replies = w.bot_texts(n).len();
    let mut next = |body: &'static str| {
        replies += 1;
        let at = replies;
        let w = &w;
        async move {
            w.comment(n, "bob", body).await;
            w.nth_reply(n, at).await
        }
    };

    // The apply handed the rest back as a new plan: made against the old state, discarded.
    let removed = next("/state rm global/dns terraform_data.zone").await;
    assert!(
        removed.starts_with(
            "`/state rm global/dns terraform_data.zone` changed the state of `global/dns`: \
             removed `terraform_data.zone`.\n\nThis pull request's plan `"
        ) && removed.ends_with(
            "` was made against the old state, so it is discarded: comment `/plan` to plan again."
        ),
        "{removed}"
    );

    let imported = next("/import global/dns terraform_data.zone zone-1").await;
    assert_eq!(
        imported,
        "`/import global/dns terraform_data.zone zone-1` changed the state of `global/dns`: \
         added `terraform_data.zone`.\n\nComment `/plan` to plan this pull request against \
         the new state."
    );

    // An address the configuration lacks: terraform's error, nothing of the server's.
    let failed = next("/import global/dns terraform_data.nope x-1").await;
    assert!(
        failed.starts_with(
            "`/import global/dns terraform_data.nope x-1` failed in `global/dns`; this pull \
             request's plan is kept:\n\n```text\n`terraform import` failed (exit code 1): "
        ),
        "{failed}"
    );
    assert!(
        failed.contains("does not exist in the configuration"),
        "{failed}"
    );
    let data = w.data.path().to_str().unwrap();
    assert!(!failed.contains(data), "{failed}");

    // A unit the head does not have: refused before anything runs.
    let unknown = next("/state rm global/nothing terraform_data.zone").await;
    assert_eq!(
        unknown,
        "Nothing was changed: `global/nothing` is not a unit at this pull request's head. Name \
         the unit by its path from the repository root, as the plan comment lists it, in \
         `/state rm global/nothing terraform_data.zone`."
    );

    // Hostile arguments are refused when read: nothing runs, and they stay inert.
    let refused = next("/state rm global/dns -state=/etc/x\n/import global/dns @team.x`y` 1").await;
    assert!(
        refused.contains(
            "`/state rm` takes no options, and an address or id never starts with `-`: \
             `-state=/etc/x` is refused."
        ),
        "{refused}"
    );
    assert!(
        refused.contains(
            "`/import` cannot use `` @team.x`y` `` as a resource address: it holds a backtick."
        ),
        "{refused}"
    );
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_made_before_a_state_change_is_discarded() {
    let w = world_with(ENABLED).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", "/import global/dns terraform_data.zone zone-1")
        .await;
    let imported = w.nth_reply(n, 2).await;
    assert!(
        imported.contains(&format!(
            "added `terraform_data.zone`.\n\nThis pull request's plan `{id}` was made against \
             the old state, so it is discarded: comment `/plan` to plan again."
        )),
        "{imported}"
    );
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let refused = w.nth_reply(n, 3).await;
    assert!(!refused.contains("cascade:apply"), "{refused}");
    assert!(refused.contains("`/plan`"), "{refused}");
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascade_state_rm_works_on_gitlab() {
    let w = gitlab_world::world_with(ENABLED).await;
    let iid = w.open_mr(gitlab_world::AUTHOR, "feature", &w.head_sha, false);
    let reviewer = gitlab_world::REVIEWER;
    w.note(
        iid,
        reviewer,
        "cascade import global/dns terraform_data.zone zone-1",
    )
    .await;
    let imported = w.nth_note(iid, 1).await;
    assert!(
        imported.contains("added `terraform_data.zone`"),
        "{imported}"
    );
    w.note(
        iid,
        reviewer,
        "cascade state rm global/dns terraform_data.zone",
    )
    .await;
    let removed = w.nth_note(iid, 2).await;
    assert_eq!(
        removed,
        "`cascade state rm global/dns terraform_data.zone` changed the state of `global/dns`: \
         removed `terraform_data.zone`.\n\nComment `cascade plan` to plan this merge request \
         against the new state."
    );
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_another_pull_request_holds_is_refused_naming_it() {
    let w = world_with(ENABLED).await;
    let first = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(first, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    w.plan_comment(first);
    let (second, _) = w.open_adding("carol", "other", &[("global/dns/notes.tf", "# notes\n")]);
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(
        second,
        "bob",
        "/import global/dns terraform_data.zone zone-1",
    )
    .await;
    let refused = w.nth_reply(second, 1).await;
    assert_eq!(
        refused,
        format!(
            "Nothing was changed: `global/dns` is locked by #{first}. Merge or close that pull \
             request, or comment `/unlock` there, then try again."
        )
    );
    w.finish().await;
}
