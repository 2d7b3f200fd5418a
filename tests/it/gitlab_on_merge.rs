//! `apply: on_merge` on GitLab: the plan note says the plan is applied after merge, the
//! `cascade` status turns `success` once a Developer approves (the `approved` hook re-sets
//! it), `cascade apply` before merge is refused, and the `merge` hook applies the approved
//! plan at the merge commit.

use crate::support::gitlab_world::{AUTHOR, REVIEWER, world_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merge_hook_applies_the_approved_plan_at_the_merge_commit() {
    let w = world_with("apply: on_merge\n").await;
    let (iid, head) = w.open_adding(
        AUTHOR,
        "monitoring",
        &[("prod/monitoring/note.tf", "# a note\n")],
    );
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan", |w| w.status_done(&head)).await;
    let plan = w.nth_note(iid, 1).await;
    assert!(
        plan.contains("**Applied after merge if the merged plan equals this one.**"),
        "{plan}"
    );
    assert_eq!(w.status_now(&head).as_deref(), Some("running"));
    let at = plan.find("### cascade plan `").unwrap() + 18;
    let id: String = plan[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    // Refused before merge, in GitLab's spelling.
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let refused = w.nth_note(iid, 2).await;
    assert!(
        refused.contains("applied by cascade after merge"),
        "{refused}"
    );
    assert!(
        refused.contains("Get this merge request approved and merge it"),
        "{refused}"
    );
    // Approved: the approval hook turns the status green.
    w.fake.approve(w.project, iid, REVIEWER);
    assert_eq!(w.send_mr(iid, "approved").await, 202);
    w.until("the green status", |w| {
        w.status_now(&head).as_deref() == Some("success")
    })
    .await;
    let merge = w.merge_mr(iid, &head).await;
    w.until("the apply after merge", |w| w.apply_result(iid).is_some())
        .await;
    let result = w.apply_result(iid).unwrap();
    assert!(
        result.contains(&format!("cascade applied `{id}` after merge")),
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
