//! The review rules are the default branch's, whatever base a pull request names, over
//! the fake GitHub: a base branch with weaker rules (`apply_requirements: []`) changes
//! nothing, a base `branches:` does not list is not planned, and switching an already
//! planned pull request's base plans it again, so the id reviewed before is refused.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::replies::redacted;

use bot_world::{REPO, World, git_out, push, world, world_with};
use fake_github::{FileChange, PrSpec};

/// `bob-base`: the default branch plus `apply_requirements: []` in its `.cascade.yaml`,
/// pushed; returns its head.
fn weak_base(w: &World) -> String {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", "bob-base", &w.base_sha]);
    let file = dir.join(".cascade.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\napply_requirements: []\n")).unwrap();
    git_out(dir, &["commit", "-qam", "no requirements here"]);
    push(w, "bob-base")
}

/// `bob-change`: a change to the DNS unit on top of `bob-base`, pushed; returns its head.
fn change_on_weak_base(w: &World) -> String {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", "bob-change", "bob-base"]);
    let file = dir.join("global/dns/main.tf");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n# bob's change\n")).unwrap();
    git_out(dir, &["commit", "-qam", "bob's change"]);
    push(w, "bob-change")
}

/// A pull request by bob from `bob-change` into `base` (at `base_sha`).
fn open_bobs(w: &World, head: &str, base: &str, base_sha: &str) -> u64 {
    w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "bob".into(),
            head_ref: "bob-change".into(),
            head_sha: head.into(),
            base_ref: base.into(),
            base_sha: base_sha.into(),
            files: vec![FileChange::modified("global/dns/main.tf")],
            ..PrSpec::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_into_an_unlisted_base_is_told_once_and_never_planned() {
    let w = world().await;
    let base = weak_base(&w);
    let head = change_on_weak_base(&w);
    w.fake.set_permission(REPO, "bob", "write");
    let n = open_bobs(&w, &head, "bob-base", &base);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the check", |w| w.checks_done(&head)).await;
    let check = w.fake.check_runs(REPO, &head)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    assert_eq!(check.title, "cascade: base branch not planned");
    let texts = w.bot_texts(n);
    assert_eq!(texts.len(), 1, "one comment: {texts:#?}");
    assert!(
        texts[0].contains("into `bob-base` is not planned")
            && texts[0].contains("`branches:`")
            && !texts[0].contains("/apply "),
        "{}",
        texts[0]
    );
    insta::assert_snapshot!("base_branch_not_planned", redacted(&texts[0]));
    // Another event says the same in the same comment, not a new one.
    assert_eq!(w.send_pr(n, "reopened").await, 202);
    w.settled().await;
    assert_eq!(w.bot_texts(n).len(), 1, "still one comment");
    // Nothing to apply, and the base's `apply_requirements: []` gives bob nothing.
    w.comment(n, "bob", "/apply 0123456789ab").await;
    let reply = w.nth_reply(n, 2).await;
    assert!(reply.contains("is not planned"), "{reply}");
    insta::assert_snapshot!("apply_refused_base_branch_not_planned", redacted(&reply));
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_base_is_planned_under_the_default_branchs_rules() {
    let w = world_with("branches: [\"bob-*\"]\n").await;
    let base = weak_base(&w);
    let head = change_on_weak_base(&w);
    w.fake.set_permission(REPO, "bob", "write");
    let n = open_bobs(&w, &head, "bob-base", &base);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&head)).await;
    let id = w.plan_id(n);
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    // bob-base says `apply_requirements: []`; main, whose rules count, wants a review.
    assert!(
        reply.contains("needs an approving review") && reply.contains("other than @bob"),
        "{reply}"
    );
    insta::assert_snapshot!(
        "apply_refused_under_the_default_branchs_rules",
        redacted(&reply)
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_an_unlisted_base_kills_the_plan_already_reviewed() {
    let w = world_with("apply_requirements: []\n").await;
    weak_base(&w);
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    let base = git_out(w.work.path(), &["rev-parse", "bob-base"]);
    w.fake.change_base(REPO, n, "bob-base", &base);
    assert_eq!(w.send_pr(n, "edited").await, 202);
    w.until("the refusal", |w| {
        w.bot_texts(n)
            .first()
            .is_some_and(|t| t.contains("is not planned"))
    })
    .await;
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(reply.starts_with("Not applied:"), "{reply}");
    insta::assert_snapshot!(
        "apply_refused_after_switching_to_an_unlisted_base",
        redacted(&reply)
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_a_listed_base_plans_again_and_the_old_id_names_the_new() {
    let w = world_with("branches: [bob-base]\napply_requirements: []\n").await;
    weak_base(&w);
    let head = change_on_weak_base(&w);
    // Opened into main first: the diff holds bob-base's commit too.
    let n = open_bobs(&w, &head, "main", &w.base_sha);
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&head)).await;
    let old = w.plan_id(n);
    let base = git_out(w.work.path(), &["rev-parse", "bob-base"]);
    w.fake.change_base(REPO, n, "bob-base", &base);
    assert_eq!(w.send_pr(n, "edited").await, 202);
    w.until("the new plan", |w| w.plan_id(n) != old).await;
    let new = w.plan_id(n);
    w.fake.set_permission(REPO, "carol", "write");
    w.comment(n, "carol", &format!("/apply {old}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(
        reply.contains(&format!("`{old}` is not this pull request's latest plan"))
            && reply.contains(&format!("/apply {new}")),
        "{reply}"
    );
    insta::assert_snapshot!(
        "apply_refused_old_id_after_switching_base",
        redacted(&reply)
    );
    assert!(!w.applied(n), "nothing applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_title_edit_is_ignored() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    // No `changes.base`: GitHub's edit of a title or body.
    assert_eq!(w.send_pr(n, "edited").await, 200);
}
