//! Policies (`.cascade.yaml` `policies:`, the default branch's) in the server, over the
//! fake GitHub with the real terraform and the real sandbox: a blocking set's denial in the
//! comment and the check, judged by the default branch's rules although the pull request
//! rewrote them; `/apply` refused naming the rule and its owners; `/approve-policies`
//! refused for the author and for a writer who owns no failing set, taken from an owner,
//! after which the plan applies; an approval bound to its plan id, so a push needs a new one.

use crate::support::bot_world::{World, git_out, push, world_with_files};

const POLICIES: &str = r#"
policies:
  - name: guard
    path: policies/guard
    owners: {users: [carol, alice]}
  - name: cost
    path: policies/cost
    enforcement: warn
"#;

/// Denies any change to `global/dns`, naming the pull request's author (a fact only the
/// server gives a policy).
const GUARD: &str = r#"package main

import rego.v1

deny contains msg if {
    input.unit.path == "global/dns"
    input.change.add > 0
    msg := sprintf("global/dns changes need the security team (opened by %s, %d files changed)", [input.pull_request.author, count(input.pull_request.changed_files)])
}
"#;

const COST: &str = r#"package main

import rego.v1

warn contains msg if {
    input.change.add > 0
    count(input.unit.dependents) > 0
    msg := sprintf("%s creates resources that %d units depend on (labels: %s)", [input.unit.path, count(input.unit.dependents), concat(" ", input.pull_request.labels)])
}
"#;

/// A world whose default branch holds both sets, and pull request 1 from alice whose head
/// changes `global/dns` and rewrites the guard to deny nothing: its id and number.
async fn world_with_policies() -> (World, u64) {
    let mut w = world_with_files(
        POLICIES,
        &[
            ("policies/guard/guard.rego", GUARD),
            ("policies/cost/cost.rego", COST),
        ],
    )
    .await;
    // The head: the world's change to global/dns, and a guard that allows everything.
    let dir = w.work.path();
    std::fs::write(
        dir.join("policies/guard/guard.rego"),
        "package main\n\nimport rego.v1\n\ndeny contains msg if { false; msg := \"\" }\n",
    )
    .unwrap();
    git_out(dir, &["commit", "-qam", "allow everything"]);
    w.head_sha = push(&w, "feature");
    let n = w.open_pr("alice", "feature", &w.head_sha.clone(), false);
    w.fake
        .set_labels(crate::support::bot_world::REPO, n, &["infra", "urgent"]);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    (w, n)
}

/// `user` (with write permission) comments `body` on `n`; the reply, the `count`-th
/// comment of the App's.
async fn say(w: &World, n: u64, user: &str, body: &str, count: usize) -> String {
    w.fake
        .set_permission(crate::support::bot_world::REPO, user, "write");
    w.comment(n, user, body).await;
    w.nth_reply(n, count).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_blocks_the_apply_until_an_owner_who_is_not_the_author_approves_it() {
    let (w, n) = world_with_policies().await;
    let plan = w.plan_comment(n);
    let id = w.plan_id(n);
    // Judged by the default branch's guard, though the head rewrote it; and told so.
    assert!(plan.contains("Policies: blocking (1)"), "{plan}");
    assert!(
        plan.contains(
            "global/dns changes need the security team \\(opened by alice, 2 files changed\\)"
        ),
        "{plan}"
    );
    assert!(plan.contains("**blocks the apply**"), "{plan}");
    assert!(
        plan.contains(&format!("comment `/approve-policies {id}`")),
        "{plan}"
    );
    assert!(
        plan.contains("changes policy files (`policies/guard/guard.rego`)"),
        "{plan}"
    );
    // The warn set's finding is shown, collapsed, and blocks nothing.
    assert!(plan.contains("Policy warnings"), "{plan}");
    assert!(
        plan.contains("creates resources that 2 units depend on \\(labels: infra urgent\\)"),
        "{plan}"
    );
    let check = w.check_now(&w.head_sha);
    assert!(
        check.title.contains("policies block 1 unit"),
        "{}",
        check.title
    );
    assert!(check.summary.contains("### Policies"), "{}", check.summary);
    assert!(
        check.summary.contains("need the security team"),
        "{}",
        check.summary
    );

    // An approved pull request still does not apply: the reply names the rule and owners.
    w.fake.approve(crate::support::bot_world::REPO, n, "bob");
    let refused = say(&w, n, "bob", &format!("/apply {id}"), 2).await;
    assert!(refused.contains("policies block plan"), "{refused}");
    assert!(refused.contains("`data.main.deny`"), "{refused}");
    assert!(refused.contains("`carol`, `alice`"), "{refused}");
    assert!(!w.applied(n));

    // The author owns the set, but does not approve their own change.
    let own = say(&w, n, "alice", &format!("/approve-policies {id}"), 3).await;
    assert!(own.contains("@alice cannot approve"), "{own}");
    // A writer who owns nothing is told who does.
    let other = say(&w, n, "dave", &format!("/approve-policies {id}"), 4).await;
    assert!(other.contains("@dave cannot approve"), "{other}");
    assert!(other.contains("`guard`: `carol`, `alice`"), "{other}");
    // An owner's approval lets the same plan through.
    let approved = say(&w, n, "carol", &format!("/approve-policies {id}"), 5).await;
    assert!(
        approved.contains(&format!(
            "approved the failures of policy set `guard` for plan `{id}` only"
        )),
        "{approved}"
    );
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply result", |w| w.applied(n)).await;
    let result = w.apply_comment(n);
    assert!(
        crate::support::applied_units(&result)
            .iter()
            .any(|u| u == "global/dns"),
        "{result}"
    );
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_bound_to_its_plan_id_and_a_push_needs_a_new_one() {
    let (mut w, n) = world_with_policies().await;
    let first = w.plan_id(n);
    let approved = say(&w, n, "carol", &format!("/approve-policies {first}"), 2).await;
    assert!(approved.contains("approved the failures"), "{approved}");
    // A push makes a new plan, with a new id that no approval names.
    let head = crate::support::bot_world::push_change(&w, "feature", "global/dns/main.tf", "more");
    w.head_sha = head.clone();
    w.synchronize(n, &head, "global/dns/main.tf").await;
    w.until("the new plan", |w| w.checks_done(&head)).await;
    let second = w.plan_id(n);
    assert_ne!(first, second);
    let plan = w.plan_comment(n);
    assert!(plan.contains("**blocks the apply**"), "{plan}");
    w.fake.approve(crate::support::bot_world::REPO, n, "bob");
    let stale = say(&w, n, "bob", &format!("/apply {first}"), 3).await;
    assert!(
        stale.contains("is not this pull request's latest plan"),
        "{stale}"
    );
    let blocked = say(&w, n, "bob", &format!("/apply {second}"), 4).await;
    assert!(blocked.contains("policies block plan"), "{blocked}");
    // And the old id cannot be approved either.
    let old = say(&w, n, "carol", &format!("/approve-policies {first}"), 5).await;
    assert!(
        old.contains("is not this pull request's latest plan"),
        "{old}"
    );
    assert!(!w.applied(n));
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_branch_policy_that_cannot_be_used_plans_nothing_and_says_why() {
    // `http.send` is refused at load: a policy gets no network.
    let w = world_with_files(
        POLICIES,
        &[
            (
                "policies/guard/guard.rego",
                "package main\n\nimport rego.v1\n\ndeny contains msg if {\n    r := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1:9/\"})\n    msg := r.body\n}\n",
            ),
            ("policies/cost/cost.rego", COST),
        ],
    )
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the verdict", |w| w.checks_done(&w.head_sha)).await;
    let body = w.plan_comment(n);
    assert!(body.contains("cannot be used"), "{body}");
    assert!(body.contains("policies/guard/guard.rego"), "{body}");
    assert!(body.contains("http.send"), "{body}");
    assert!(body.contains("comment `/plan`"), "{body}");
    let check = w.check_now(&w.head_sha);
    assert_eq!(check.conclusion.as_deref(), Some("failure"), "{check:?}");
    w.finish().await;
}

/// Denies `dev/dns` once it points at the real zone: true of its fresh plan after
/// `global/dns` is applied, never of the first plan (which stands in `zone-mock`).
const REAL_ZONE: &str = r#"package main

import rego.v1

deny contains msg if {
    input.unit.path == "dev/dns"
    some rc in input.plan.resource_changes
    rc.change.after.input.zone_id != "zone-mock"
    msg := sprintf("dev/dns would point at %s", [rc.change.after.input.zone_id])
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_whose_plan_changed_at_apply_is_judged_again_in_the_new_plan() {
    let w = world_with_files(
        "\npolicies:\n  - name: zones\n    path: policies/zones\n    owners: {users: [carol]}\n",
        &[("policies/zones/zones.rego", REAL_ZONE)],
    )
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let first = w.plan_id(n);
    assert!(!w.plan_comment(n).contains("Policies"));
    // global/dns applies; dev/dns's fresh plan differs and goes to a new plan.
    w.approve_and_apply(n).await;
    let result = w.apply_comment(n);
    assert!(result.contains("plan changed since approval"), "{result}");
    let at = result.find("/apply ").expect("the new plan's id");
    let second: String = result[at + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_ne!(first, second);
    // Its fresh plan was judged: the new plan is blocked until an owner approves it.
    assert!(
        result.contains("dev/dns would point at zone-"),
        "the new plan shows its findings: {result}"
    );
    let blocked = say(&w, n, "bob", &format!("/apply {second}"), 3).await;
    assert!(blocked.contains("policies block plan"), "{blocked}");
    assert!(blocked.contains("`dev/dns`"), "{blocked}");
    assert!(!blocked.contains("`prod/dns`"), "{blocked}");
    w.finish().await;
}

/// Denies a plan that changes more than two units at once, naming the author: a rule
/// across units, judged once over `input.units[]`.
const SPREAD: &str = r#"package main

import rego.v1

changed := [u.unit.path | some u in input.units; u.change.add + u.change.change + u.change.destroy > 0]

deny contains msg if {
    count(changed) > 2
    msg := sprintf("%s changes %d units at once: %s", [input.pull_request.author, count(changed), concat(", ", changed)])
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_plan_denial_blocks_the_apply_until_an_owner_approves_it() {
    let w = world_with_files(
        "\npolicies:\n  - name: spread\n    path: policies/spread\n    input: plan\n    owners: {users: [carol]}\n",
        &[("policies/spread/spread.rego", SPREAD)],
    )
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    let id = w.plan_id(n);
    assert!(
        plan.contains("- whole plan — `spread`: **blocks the apply**"),
        "{plan}"
    );
    assert!(plan.contains("alice changes 3 units at once"), "{plan}");
    let check = w.check_now(&w.head_sha);
    assert!(
        check.title.contains("policies block the whole plan"),
        "{}",
        check.title
    );
    w.fake.approve(crate::support::bot_world::REPO, n, "bob");
    let refused = say(&w, n, "bob", &format!("/apply {id}"), 2).await;
    assert!(refused.contains("fails the whole plan;"), "{refused}");
    let approved = say(&w, n, "carol", &format!("/approve-policies {id}"), 3).await;
    assert!(approved.contains("policy set `spread`"), "{approved}");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply result", |w| w.applied(n)).await;
    let result = w.apply_comment(n);
    assert!(result.contains("global/dns"), "{result}");
    w.finish().await;
}
