//! `/destroy unit…` over the fake GitHub with the real terraform: a destroy that leaves
//! out a unit depending on a named one is refused, naming it and the command to type; a
//! destroy that names every dependent is planned with a loud header and its own id, the
//! dependents first, and `/apply <id>` destroys the resources; a unit the default
//! branch's `prevent_destroy` protects is refused, naming the glob's line, however the
//! pull request's own `.cascade.yaml` reads.

use crate::support::bot_world::{REPO, World, world, world_with};

/// The resources left in a unit's state in the pull request's checkout.
fn resources_in_state(w: &World, n: u64, unit: &str) -> usize {
    let state = w.data.path().join(format!(
        "workspaces/checkouts/acme/infra/pr-{n}/{unit}/terraform.tfstate"
    ));
    let text = std::fs::read_to_string(&state).unwrap_or_else(|e| panic!("{state:?}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["resources"].as_array().map_or(0, Vec::len)
}

/// Waits for the `count`-th apply result on `n` and reads it.
async fn nth_apply(w: &World, n: u64, count: usize) -> String {
    w.until("an apply result", |w| {
        w.looking(|| {
            w.fake
                .bot_comments(REPO, n)
                .iter()
                .filter(|c| c.body.starts_with("<!-- cascade:apply"))
                .count()
                >= count
        })
    })
    .await;
    w.apply_comment(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destroy_goes_dependents_first_and_must_name_every_dependent() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    // global/dns, dev/dns and prod/dns exist once this pull request's plan is applied.
    // global/dns first; its dependents planned again after it, under a new id.
    w.approve_and_apply(n).await;
    let first = w.apply_comment(n);
    assert_eq!(
        crate::support::applied_units(&first),
        ["global/dns"],
        "{first}"
    );
    let at = first.find("/apply ").expect("the rest's new plan id");
    let rest: String = first[at + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    w.comment(n, "bob", &format!("/apply {rest}")).await;
    let second = nth_apply(&w, n, 2).await;
    assert_eq!(crate::support::applied_units(&second).len(), 2, "{second}");
    for unit in ["dev/dns", "global/dns", "prod/dns"] {
        assert!(resources_in_state(&w, n, unit) > 0, "{unit}");
    }
    // dev/dns and prod/dns depend on global/dns: refused, naming them and the command.
    w.comment(n, "bob", "/destroy global/dns").await;
    let refused = w.nth_reply(n, 4).await;
    assert!(
        refused.starts_with("Nothing was planned to destroy"),
        "{refused}"
    );
    assert!(
        refused.contains("`dev/dns` (depends on `global/dns`)"),
        "{refused}"
    );
    assert!(
        refused.contains("`/destroy global/dns dev/dns prod/dns`"),
        "the command to type instead: {refused}"
    );
    assert!(!w.plan_comment(n).contains("DESTROY"));
    // Named with its dependents: a plan of its own, loud, dependents first.
    w.comment(n, "bob", "/destroy global/* dev/dns prod/dns")
        .await;
    w.until("the destroy plan", |w| {
        w.looking(|| w.fake.bot_comments(REPO, n)[0].body.contains("DESTROY"))
    })
    .await;
    let plan = w.plan_comment(n);
    assert!(
        plan.contains("### 🔥 cascade plans to DESTROY 3 units: plan `"),
        "{plan}"
    );
    assert!(plan.contains("#### 🔥 Units to destroy (3)"), "{plan}");
    let listed = |unit: &str| {
        plan.find(&format!("- `{unit}` — 1 to destroy"))
            .unwrap_or_else(|| panic!("{unit} listed: {plan}"))
    };
    assert!(listed("dev/dns") < listed("global/dns"), "{plan}");
    assert!(listed("prod/dns") < listed("global/dns"), "{plan}");
    let id = w.plan_id(n);
    // Applied as any plan: the resources are gone.
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let result = nth_apply(&w, n, 3).await;
    let mut destroyed = crate::support::applied_units(&result);
    // Listed in the plan's waves: global/dns after the units that depend on it.
    assert_eq!(
        destroyed.last().map(String::as_str),
        Some("global/dns"),
        "{result}"
    );
    // And run so: its state was written last.
    let written = |unit: &str| {
        let state = w.data.path().join(format!(
            "workspaces/checkouts/acme/infra/pr-{n}/{unit}/terraform.tfstate"
        ));
        std::fs::metadata(state).unwrap().modified().unwrap()
    };
    assert!(written("global/dns") > written("dev/dns"));
    assert!(written("global/dns") > written("prod/dns"));
    destroyed.sort();
    assert_eq!(destroyed, ["dev/dns", "global/dns", "prod/dns"], "{result}");
    for unit in ["dev/dns", "global/dns", "prod/dns"] {
        assert_eq!(resources_in_state(&w, n, unit), 0, "{unit}: {result}");
    }
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_unit_is_refused_whatever_the_branch_says() {
    let w = world_with("prevent_destroy:\n  - prod/*\n").await;
    let config = w.work.path().join(".cascade.yaml");
    let base_config = std::fs::read_to_string(&config).unwrap();
    let line = base_config.lines().position(|l| l == "  - prod/*").unwrap() + 1;
    // The pull request lifts the protection on its own branch: that does not count.
    let lifted = base_config.replace("prevent_destroy:\n  - prod/*\n", "prevent_destroy: []\n");
    let (n, head) = w.open_adding("alice", "lift", &[(".cascade.yaml", &lifted)]);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&head)).await;
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", "/destroy prod/dns").await;
    let refused = w.nth_reply(n, 2).await;
    assert_eq!(
        refused,
        format!(
            "Nothing was planned to destroy: `.cascade.yaml` on `main` protects `prod/dns` \
             (`prevent_destroy` glob `prod/*`, `.cascade.yaml` line {line}). To destroy it, \
             first remove its glob from `prevent_destroy` in `.cascade.yaml` on `main`: a \
             change on this pull request's branch does not count."
        )
    );
    // A unit the protected one depends on is refused too: its dependent would go with it.
    w.comment(n, "bob", "/destroy global/dns dev/dns prod/dns")
        .await;
    let refused = w.nth_reply(n, 3).await;
    assert!(refused.contains("protects `prod/dns`"), "{refused}");
    assert!(!w.plan_comment(n).contains("DESTROY"));
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascade_destroy_on_gitlab_is_refused_or_planned_in_its_spelling() {
    use crate::support::gitlab_world::{AUTHOR, REVIEWER, world_with};
    let w = world_with("prevent_destroy:\n  - prod/*\n").await;
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    let plan = w.nth_note(iid, 1).await;
    assert!(!plan.contains("DESTROY"), "{plan}");
    w.note(iid, REVIEWER, "cascade destroy prod/dns").await;
    let refused = w.nth_note(iid, 2).await;
    assert!(
        refused.starts_with(
            "Nothing was planned to destroy: `.cascade.yaml` on `main` protects `prod/dns`"
        ),
        "{refused}"
    );
    assert!(refused.contains("this merge request's branch"), "{refused}");
    // dev/dns has no dependents: planned, in GitLab's spelling, as the merge request's plan.
    // Nothing was applied here, so its state is empty: nothing to destroy, said quietly.
    w.note(iid, REVIEWER, "cascade destroy dev/dns").await;
    w.until("the destroy plan", |w| {
        w.fake.bot_notes(w.project, iid)[0]
            .body
            .contains("by `cascade destroy`")
    })
    .await;
    let plan = w.nth_note(iid, 1).await;
    assert!(plan.contains(": nothing to destroy"), "{plan}");
    assert!(plan.contains("by `cascade destroy`"), "{plan}");
    assert!(plan.contains("- `dev/dns` — "), "{plan}");
    w.finish().await;
}
