//! Plan expiry in the server (`plan_ttl:` in the default branch's `.cascade.yaml`), over
//! the fake GitHub with the real terraform: `/apply` of a plan older than `plan_ttl` is
//! refused naming `/plan` and applies nothing; `/plan` makes the same plan again, fresh,
//! and its id (the same: same head, same changes) applies.

use crate::support::bot_world::{REPO, world_with};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_plan_id_is_refused_until_planned_again() {
    // Three seconds, not the one the config allows: the fresh plan must still be within
    // it when the engine checks it again under its claim, on a busy machine too.
    let w = world_with("plan_ttl: 3s\n").await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    // Ages are whole seconds: four of them are past a ttl of three.
    tokio::time::sleep(Duration::from_millis(4100)).await;
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    assert_eq!(w.comment(n, "bob", &format!("/apply {id}")).await, 202);
    let refusal = w.nth_reply(n, 2).await;
    assert!(
        refusal.starts_with(&format!("Plan `{id}` is ")),
        "{refusal}"
    );
    assert!(
        refusal.contains(
            "old, older than `plan_ttl` (3 seconds) in the default branch's `.cascade.yaml`: \
             comment `/plan` to plan again, then apply the new id."
        ),
        "{refusal}"
    );
    w.settled().await;
    assert!(!w.applied(n), "nothing applied");

    assert_eq!(w.comment(n, "bob", "/plan").await, 202);
    w.settled().await;
    assert_eq!(w.plan_id(n), id, "the same head and changes: the same id");
    assert_eq!(w.comment(n, "bob", &format!("/apply {id}")).await, 202);
    w.until("the apply result", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), ["global/dns"]);
    w.finish().await;
}
