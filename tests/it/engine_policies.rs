//! Policy sets in a plan run, with the scripted executor of `engine_rules`: a set with
//! `input: plan` is evaluated once, after every unit has planned, over `input.units[]`
//! (the planned units' own documents, in plan order) and recorded with the plan, never
//! for one unit; a per-unit set never sees the whole plan. A resumed run, whose earlier
//! units' plans are gone from memory, records its whole-plan sets as not checked.

use crate::cli_policies::SPREAD;
use crate::engine_rules::{Fixture, Plan, REPO, Scripted, fixture, interrupted_plan, targets};
use cascade::config::policies::{Enforcement, PolicyScope};
use cascade::engine::{PlanOutcome, PolicyCheck, RunRules};
use cascade::policy::engine::{Evaluator, PolicyFile};
use cascade::store::{PlanKey, PolicyResult, RunStore, UnitStatus};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The per-unit set: says which unit it saw, and never sees `input.units`.
const GUARD: &str = r#"package main

import rego.v1

warn contains sprintf("%s seen", [input.unit.path])

deny contains "saw the whole plan" if input.units
"#;

fn set(name: &str, scope: PolicyScope, rego: &str) -> PolicyCheck {
    let file = PolicyFile {
        path: format!("policies/{name}/main.rego"),
        text: rego.into(),
    };
    PolicyCheck {
        evaluator: Arc::new(Evaluator::new(name, &[file], &[]).unwrap()),
        enforcement: Enforcement::Block,
        scope,
    }
}

fn rules() -> RunRules {
    RunRules::default().with_policies(vec![
        set("guard", PolicyScope::Unit, GUARD),
        set("spread", PolicyScope::Plan, SPREAD),
    ])
}

async fn plan(f: &Fixture) -> PlanOutcome {
    f.engine
        .plan(
            &PlanKey::from_stored(REPO),
            "h1",
            "base",
            targets(),
            rules(),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap()
}

fn messages(list: &[cascade::store::PolicyMessage]) -> Vec<&str> {
    list.iter().map(|m| m.message.as_str()).collect()
}

/// The one whole-plan result of `outcome`.
fn spread(outcome: &PlanOutcome) -> &PolicyResult {
    match outcome.plan.policies.as_slice() {
        [one] if one.set == "spread" => one,
        other => panic!("one result of `spread` on the plan: {other:?}"),
    }
}

#[tokio::test]
async fn a_whole_plan_set_sees_every_planned_unit_once_and_is_recorded_with_the_plan() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(2, "v")]);
    exec.script("db", &[Plan::Creates(1, "d")]);
    exec.script("app", &[Plan::Creates(1, "a")]);
    let f = fixture(exec).await;
    let outcome = plan(&f).await;
    assert!(!outcome.failed);
    let whole = spread(&outcome);
    assert!(whole.blocks(), "{whole:?}");
    assert_eq!(
        messages(&whole.denies),
        ["the plan adds 4 resources; at most 1 per pull request"],
        "the rule on `input.unit` never fired: the set ran on the whole plan only"
    );
    assert_eq!(
        messages(&whole.warnings),
        [
            "dns, vpc, db, app".to_string(),
            format!("plan {}", outcome.plan.id)
        ],
        "every unit, in plan order, under the plan's id"
    );
    for unit in &outcome.plan.units {
        let sets: Vec<&str> = unit.policies.iter().map(|r| r.set.as_str()).collect();
        assert_eq!(
            sets,
            ["guard"],
            "{}: a whole-plan set is not run per unit",
            unit.path
        );
        assert!(unit.policies[0].denies.is_empty(), "{:?}", unit.policies);
        assert_eq!(
            messages(&unit.policies[0].warnings),
            [format!("{} seen", unit.path)]
        );
    }
    assert_eq!(outcome.plan.policy_results().count(), 1 + 4);
    let stored = f
        .engine
        .store
        .current_plan(&PlanKey::from_stored(REPO))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.policies, outcome.plan.policies);
}

#[tokio::test]
async fn a_unit_that_failed_is_not_in_the_whole_plan_so_a_rule_over_dependents_sees_it_missing() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "v")]);
    exec.script("db", &[Plan::Creates(1, "d")]);
    exec.script("app", &[Plan::Fails]);
    let f = fixture(exec).await;
    let outcome = plan(&f).await;
    assert!(outcome.failed);
    let whole = spread(&outcome);
    assert_eq!(
        messages(&whole.denies),
        [
            "db changes but its dependent app did not plan",
            "the plan adds 2 resources; at most 1 per pull request"
        ]
    );
    assert_eq!(messages(&whole.warnings)[0], "dns, vpc, db");
}

#[tokio::test]
async fn a_resumed_run_records_its_whole_plan_sets_as_not_checked() {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app", "dns"] {
        exec.script(unit, &[Plan::Creates(1, "v1")]);
    }
    let f = fixture(exec).await;
    let first = interrupted_plan(&f, rules()).await;
    assert!(
        first
            .plan
            .units
            .iter()
            .any(|u| u.status == UnitStatus::Cancelled)
    );
    assert_eq!(spread(&first).error, "", "what did plan was checked");
    // Resumed: the units planned before are not planned again, and their plan JSON is gone.
    let second = plan(&f).await;
    assert!(!second.failed);
    assert_eq!(second.plan.run_id, first.plan.run_id);
    let whole = spread(&second);
    assert!(
        whole.error.contains("interrupted earlier attempt") && whole.error.contains("plan again"),
        "{whole:?}"
    );
    assert!(whole.blocks(), "a blocking set not checked blocks");
    assert!(whole.denies.is_empty() && whole.warnings.is_empty());
}
