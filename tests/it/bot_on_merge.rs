//! `apply: on_merge` over the fake GitHub with the real terraform and real merge commits:
//! the plan comment says the plan is applied after merge, the check turns green once the
//! plan is approved (a `pull_request_review` re-sets it), `/apply` before merge is refused,
//! and the merge applies exactly the approved plan at the merge commit. A unit whose plan
//! changed between approval and merge is not applied: a new plan with a new id is posted
//! on the merged pull request, and `/apply` of it there applies it. Two quick merges apply
//! one after the other, in merge order.

use crate::support::bot_world::{REPO, World, world_with};

const ON_MERGE: &str = "apply: on_merge\n";

/// The plan id in the plan comment's header (`### cascade plan `<id>``): an on-merge plan
/// has no `/apply` line.
fn header_id(w: &World, number: u64) -> String {
    let plan = w.plan_comment(number);
    let at = plan.find("### cascade plan `").expect("the plan header") + 18;
    plan[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

/// The apply results cascade posted on `number`, oldest first (not read).
fn apply_results(w: &World, number: u64) -> Vec<crate::support::fake_github::CommentSnapshot> {
    w.fake
        .bot_comments(REPO, number)
        .into_iter()
        .filter(|c| c.body.starts_with("<!-- cascade:apply"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_applies_exactly_the_approved_plan_at_the_merge_commit() {
    let w = world_with(ON_MERGE).await;
    // prod/monitoring depends on units this plan does not change: its plan is not
    // provisional, so the merge applies it as approved.
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    let plan = w.plan_comment(n);
    let id = header_id(&w, n);
    assert!(
        plan.contains("**Applied after merge if the merged plan equals this one.**"),
        "{plan}"
    );
    assert!(!plan.contains("To apply exactly this plan"), "{plan}");
    let check = w.check_now(&head);
    assert_eq!(
        check.conclusion.as_deref(),
        Some("action_required"),
        "{check:?}"
    );
    assert_eq!(
        check.title,
        format!("cascade: plan {id} waits for approval; applied after merge")
    );
    // bob approves: the review event turns the check green, with no new plan.
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(n, "bob").await;
    w.until("the green check", |w| {
        w.check_now(&head).conclusion.as_deref() == Some("success")
    })
    .await;
    assert_eq!(
        w.check_now(&head).title,
        format!("cascade: plan {id} approved; applied after merge")
    );
    // An /apply before merge is refused: these units apply after merge.
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let refused = w.nth_reply(n, 2).await;
    assert!(
        refused.contains("applied by cascade after merge") && refused.contains("`prod/monitoring`"),
        "{refused}"
    );
    assert!(apply_results(&w, n).is_empty());
    // The merge applies it at the merge commit.
    let merge = w.merge_pr(n, &head).await;
    w.until("the apply after merge", |w| w.applied(n)).await;
    let result = w.apply_comment(n);
    assert!(
        result.contains(&format!("### ✅ cascade applied `{id}` after merge")),
        "{result}"
    );
    assert!(
        result.contains(&format!("At merge commit `{}`", &merge[..7])),
        "{result}"
    );
    assert_eq!(
        crate::support::applied_units(&result),
        ["prod/monitoring"],
        "{result}"
    );
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_changed_between_approval_and_merge_is_planned_again_and_not_applied() {
    let w = world_with(ON_MERGE).await;
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    let id = header_id(&w, n);
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(n, "bob").await;
    w.until("the green check", |w| {
        w.check_now(&head).conclusion.as_deref() == Some("success")
    })
    .await;
    // Out of band, after the approval: someone applies prod/monitoring by hand, with
    // another input, so the plan at the merge commit is an update, not a create.
    let unit = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/prod/monitoring");
    crate::support::terraform::apply_by_hand(&unit, "by-hand");
    w.merge_pr(n, &head).await;
    w.until("the result after merge", |w| w.applied(n)).await;
    let result = w.apply_comment(n);
    assert!(
        result.contains(&format!(
            "cascade stopped applying `{id}`: the plan changed at the merge"
        )),
        "{result}"
    );
    let line = result
        .lines()
        .find(|l| l.starts_with("| `prod/monitoring` |"))
        .unwrap_or_else(|| panic!("{result}"));
    assert!(
        line.contains("plan changed since approval, not applied"),
        "{line}"
    );
    assert!(result.contains("**changed outside this plan**"), "{result}");
    // The new plan is on the merged pull request; `/apply` of it there applies it, with
    // no approval asked (the merge settled that), at the merge commit.
    let at = result.rfind("/apply ").expect("the new plan's /apply line");
    let next: String = result[at + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_ne!(next, id);
    w.comment(n, "bob", &format!("/apply {next}")).await;
    w.until("the second apply", |w| apply_results(w, n).len() >= 2)
        .await;
    let second = w.apply_comment(n);
    assert!(
        second.contains(&format!("cascade applied `{next}` after merge")),
        "{second}"
    );
    // The merged pull request holds no lock any more: the next one plans the unit.
    let (later, _) = w
        .open_changing("carol", "monitoring-again", "prod/monitoring/main.tf")
        .await;
    let plan = w.plan_comment(later);
    assert!(!plan.contains("locked by"), "{plan}");
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_quick_merges_apply_one_after_the_other_in_merge_order() {
    let w = world_with(ON_MERGE).await;
    // global/dns (its dependents dev/dns and prod/dns come back as a new plan once it is
    // applied: they read its outputs), then prod/monitoring: no unit in common.
    let first_head = w.head_sha.clone();
    let first = w.open_pr("alice", "feature", &first_head, false);
    w.send_pr(first, "opened").await;
    w.until("the first plan", |w| w.checks_done(&first_head))
        .await;
    let (second, second_head) = w
        .open_changing("carol", "monitoring", "prod/monitoring/main.tf")
        .await;
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(first, "bob").await;
    w.approve_with_event(second, "bob").await;
    w.until("both checks green", |w| {
        [&first_head, &second_head]
            .iter()
            .all(|h| w.check_now(h).conclusion.as_deref() == Some("success"))
    })
    .await;
    // Both merged, their events sent back to back: the first merge first.
    w.merge_commit(first, &first_head);
    w.merge_commit(second, &second_head);
    assert_eq!(w.send_pr(first, "closed").await, 202);
    assert_eq!(w.send_pr(second, "closed").await, 202);
    w.until("both applies", |w| w.applied(first) && w.applied(second))
        .await;
    let (a, b) = (apply_results(&w, first), apply_results(&w, second));
    assert!(
        a[0].id < b[0].id,
        "the first merge's result is posted before the second's"
    );
    let first_result = w.apply_comment(first);
    let second_result = w.apply_comment(second);
    assert!(first_result.contains("at the merge"), "{first_result}");
    assert_eq!(
        crate::support::applied_units(&first_result),
        ["global/dns"],
        "{first_result}"
    );
    assert!(
        first_result.contains("re-planned with the real outputs of `global/dns`"),
        "{first_result}"
    );
    assert!(second_result.contains("after merge"), "{second_result}");
    assert_eq!(
        crate::support::applied_units(&second_result),
        ["prod/monitoring"],
        "{second_result}"
    );
    let _ = (w.plan_comment(first), w.plan_comment(second));
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_changed_at_the_merge_is_pointed_to_from_the_drift_issue() {
    use crate::support::fake_github::BOT_LOGIN;
    let extra = "apply: on_merge\ndrift:\n  schedule: 10m\n  units: [\"prod/monitoring\"]\n";
    let w = crate::support::bot_world::world_configured(extra, |c| {
        c.drift_tick = std::time::Duration::from_secs(1);
    })
    .await;
    let status =
        crate::support::replicas::post(&w.fake.installation_event(77, "created"), &w.hook()).await;
    assert!((200..300).contains(&status), "{status}");
    // The first drift run finds prod/monitoring missing and opens the drift issue.
    w.until("the drift issue", |w| {
        w.fake.issues(REPO).iter().any(|i| i.author == BOT_LOGIN)
    })
    .await;
    let issue = w
        .fake
        .issues(REPO)
        .into_iter()
        .find(|i| i.author == BOT_LOGIN)
        .unwrap();
    let (n, head) = w
        .open_changing("alice", "monitoring", "prod/monitoring/main.tf")
        .await;
    w.fake.set_permission(REPO, "bob", "write");
    w.approve_with_event(n, "bob").await;
    w.until("the green check", |w| {
        w.check_now(&head).conclusion.as_deref() == Some("success")
    })
    .await;
    let unit = w.data.path().join(format!(
        "workspaces/checkouts/acme/infra/pr-{n}/prod/monitoring"
    ));
    crate::support::terraform::apply_by_hand(&unit, "by-hand");
    w.merge_pr(n, &head).await;
    w.until("the pointer on the drift issue", |w| {
        !w.bot_texts(issue.number).is_empty()
    })
    .await;
    let pointer = w.bot_texts(issue.number).remove(0);
    let result = w.apply_comment(n);
    let at = result.rfind("/apply ").expect("the new plan's /apply line");
    let next: String = result[at + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert!(
        pointer.contains(&format!("#{n} was merged"))
            && pointer.contains("`prod/monitoring`")
            && pointer.contains(&format!("`/apply {next}` there")),
        "{pointer}"
    );
    let _ = w.plan_comment(n);
    w.finish().await;
}
