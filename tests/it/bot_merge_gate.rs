//! `mergeable_state: "blocked"` over the fake GitHub: applied only when everything the
//! base branch requires, except cascade's own check, is met.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::replies::redacted;

use bot_world::{DNS_APPLIED, REPO, World, world};
use fake_github::merge_gate::Protection;
use fake_github::{FileChange, PrSpec};

/// alice's pull request from `feature`, which GitHub calls blocked, planned and approved
/// by bob; returns its number and plan id.
async fn blocked_and_approved(w: &World) -> (u64, String) {
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "alice".into(),
            head_ref: "feature".into(),
            head_sha: w.head_sha.clone(),
            base_ref: "main".into(),
            base_sha: w.base_sha.clone(),
            mergeable: Some(true),
            mergeable_state: "blocked".into(),
            files: vec![FileChange::modified("global/dns/main.tf")],
            ..PrSpec::default()
        },
    );
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    (n, w.plan_id(n))
}

fn protection(checks: &[&str], via_ruleset: bool) -> Protection {
    Protection {
        required_checks: checks.iter().map(|c| c.to_string()).collect(),
        required_approvals: 1,
        via_ruleset,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_required_check_refuses_and_only_cascades_own_pending_applies() {
    let w = world().await;
    w.fake
        .protect(REPO, "main", protection(&["cascade", "ci"], false));
    w.fake.foreign_check(REPO, &w.head_sha, "ci", "failure");
    let (n, id) = blocked_and_approved(&w).await;
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(
        reply.contains("the required check `ci` is `failure`"),
        "{reply}"
    );
    insta::assert_snapshot!("apply_refused_required_check_failing", redacted(&reply));
    assert!(!w.applied(n), "nothing applied");
    // CI passes on a rerun: only cascade's own check is left, and that is the apply.
    w.fake.foreign_check(REPO, &w.head_sha, "ci", "success");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rulesets_required_check_that_never_reported_refuses() {
    let w = world().await;
    w.fake.protect(
        REPO,
        "main",
        protection(&["cascade", "security-scan"], true),
    );
    let (n, id) = blocked_and_approved(&w).await;
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(
        reply.contains("the required check `security-scan` has not reported"),
        "{reply}"
    );
    insta::assert_snapshot!(
        "apply_refused_required_check_not_reported",
        redacted(&reply)
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_for_a_reason_other_than_cascade_refuses() {
    let w = world().await;
    // cascade's check is not required: GitHub's `blocked` is someone else's doing.
    w.fake.protect(REPO, "main", protection(&["ci"], false));
    w.fake.foreign_check(REPO, &w.head_sha, "ci", "success");
    let (n, id) = blocked_and_approved(&w).await;
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(reply.contains("something else is missing"), "{reply}");
    insta::assert_snapshot!("apply_refused_blocked_by_something_else", redacted(&reply));
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_required_reviews_refuse() {
    let w = world().await;
    let mut rule = protection(&["cascade"], false);
    rule.required_approvals = 2;
    w.fake.protect(REPO, "main", rule);
    let (n, id) = blocked_and_approved(&w).await;
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(
        reply.contains("reviews the branch requires are missing"),
        "{reply}"
    );
    insta::assert_snapshot!("apply_refused_required_reviews_missing", redacted(&reply));
    assert!(!w.applied(n), "nothing applied");
}
