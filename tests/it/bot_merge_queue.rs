//! GitHub merge queues over the fake GitHub with the real terraform: GitHub makes the
//! branch `gh-readonly-queue/main/pr-<n>-<base>` (main with the pull request merged) and
//! sends `merge_group`; cascade sets the `cascade` check on the group's head. With
//! `apply: on_merge` it is green only when the plan at the group head equals the approved
//! plan; with `comment` only once the pull request's plan was applied and the group's
//! plan for its units is empty.

use crate::support::bot_world::{REPO, world_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_merge_a_group_is_green_only_when_its_plan_equals_the_approved_one() {
    let w = world_with("apply: on_merge\n").await;
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    // Queued before anyone approved: red, naming why.
    let group = w.queue_pr(n, &head).await;
    w.until("the group's check", |w| w.checks_done(&group))
        .await;
    let check = w.check_now(&group);
    assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:?}");
    assert!(
        check.summary.contains("`prod/monitoring` (#1): plan `")
            && check.summary.contains("is not approved"),
        "{}",
        check.summary
    );
    // Approved: the next group is green.
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(n, "bob").await;
    let group = w.queue_pr(n, &head).await;
    w.until("the second group's check", |w| w.checks_done(&group))
        .await;
    let check = w.check_now(&group);
    assert_eq!(check.conclusion.as_deref(), Some("success"), "{check:?}");
    assert_eq!(
        check.title,
        "cascade: the merge group matches the reviewed plans"
    );
    assert!(
        check
            .summary
            .contains("✅ `prod/monitoring` (#1): equals the approved plan"),
        "{}",
        check.summary
    );
    let _ = w.plan_comment(n);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_merge_a_group_whose_plan_changed_since_approval_is_red() {
    let w = world_with("apply: on_merge\n").await;
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(n, "bob").await;
    // Out of band, after the approval: prod/monitoring applied by hand with another input.
    let unit = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/prod/monitoring");
    crate::support::terraform::apply_by_hand(&unit, "by-hand");
    let group = w.queue_pr(n, &head).await;
    w.until("the group's check", |w| w.checks_done(&group))
        .await;
    let check = w.check_now(&group);
    assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:?}");
    assert!(
        check
            .summary
            .contains("its plan at the group's head differs from approved plan"),
        "{}",
        check.summary
    );
    let _ = w.plan_comment(n);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_comment_mode_a_group_is_green_only_once_the_plan_was_applied() {
    let w = world_with("").await;
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    let id = w.plan_id(n);
    let group = w.queue_pr(n, &head).await;
    w.until("the group's check", |w| w.checks_done(&group))
        .await;
    let check = w.check_now(&group);
    assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:?}");
    assert!(
        check.summary.contains(&format!(
            "#1's plan was not applied: comment `/apply {id}` there first"
        )),
        "{}",
        check.summary
    );
    // Applied by comment: the group's plan for it is empty, and the check green.
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    let _ = w.apply_comment(n);
    let group = w.queue_pr(n, &head).await;
    w.until("the second group's check", |w| w.checks_done(&group))
        .await;
    let check = w.check_now(&group);
    assert_eq!(check.conclusion.as_deref(), Some("success"), "{check:?}");
    assert!(
        check
            .summary
            .contains("✅ `prod/monitoring` (#1): applied; no changes at the group's head"),
        "{}",
        check.summary
    );
    w.finish().await;
}
