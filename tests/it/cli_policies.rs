//! Policy checks in `cascade plan`, with the real terraform and the embedded Rego engine:
//! a `deny` over a prod unit's change, a `warn`, a rule over the unit's dependents, a policy
//! that prints its whole input (no sensitive value in it), and one that runs past the time
//! limit (that unit's set records the error; the command finishes). A set with `input:
//! plan` judges the whole plan once, over `input.units[]`: a cap across units and "a unit
//! that changes must plan its dependents".

use crate::plan_apply_e2e::commit_modules;
use crate::support;
use serde_json::Value as Json;
use std::path::Path;

const SECRET: &str = "s3cr3t-db-password-4242";

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const GUARD: &str = r#"package main

import rego.v1

deny contains msg if {
  startswith(input.unit.path, "prod/")
  input.change.add > 0
  msg := sprintf("%s adds %d resources in prod", [input.unit.path, input.change.add])
}

warn contains msg if {
  count(input.unit.dependents) > 0
  msg := sprintf("%s has dependents: %s", [input.unit.path, concat(", ", input.unit.dependents)])
}
"#;

const LEAK: &str = r#"package main

import rego.v1

warn contains json.marshal(input.plan) if input.unit.path == "prod/db"
"#;

/// Allocates as fast as it can: a million-number range for each of a million numbers.
const BOMB: &str = r#"package main

import rego.v1

deny contains "never" if {
  input.unit.path == "prod/db"
  count([numbers.range(0, 999999) | some i in numbers.range(0, 999999)]) < 0
}
"#;

const SPIN: &str = r#"package main

import rego.v1

deny contains "never" if {
  input.unit.path == "prod/app"
  count([x | some x in numbers.range(0, 999999); some y in numbers.range(0, 999999); x == y + 1]) < 0
}
"#;

#[test]
fn plan_checks_each_unit_against_the_policy_sets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let backend = "terraform {\n  backend \"local\" {}\n}\n";
    write(
        dir,
        "prod/db/main.tf",
        &format!(
            "{backend}variable \"pw\" {{\n  default   = \"{SECRET}\"\n  sensitive = true\n}}\n\nresource \"terraform_data\" \"db\" {{\n  input = var.pw\n}}\n"
        ),
    );
    write(
        dir,
        "prod/app/main.tf",
        &format!("{backend}resource \"terraform_data\" \"app\" {{\n  input = \"app\"\n}}\n"),
    );
    write(dir, "policies/guard/guard.rego", GUARD);
    write(dir, "policies/leak/leak.rego", LEAK);
    write(dir, "policies/spin/spin.rego", SPIN);
    write(dir, "policies/bomb/bomb.rego", BOMB);
    commit_modules(
        dir,
        "modules:\n  - path: prod/db\n  - path: prod/app\n    depends_on: [prod/db]\npolicies:\n  - name: guard\n    path: policies/guard\n    owners: {users: [carol]}\n  - name: leak\n    path: policies/leak\n    enforcement: warn\n    owners: {users: [carol]}\n  - name: spin\n    path: policies/spin\n    owners: {users: [carol]}\n  - name: bomb\n    path: policies/bomb\n",
    );
    let out = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--format", "json", "--changed", "prod/db/main.tf"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !stdout.contains(SECRET),
        "a policy printed a sensitive value: {stdout}"
    );
    let plan: Json = support::stdout_json(&out);
    let unit = |path: &str| {
        plan["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("{path} in {plan}"))
    };
    let set = |unit: &Json, name: &str| {
        unit["policies"]
            .as_array()
            .unwrap_or_else(|| panic!("no policies on {unit}"))
            .iter()
            .find(|s| s["set"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} on {unit}"))
    };
    let (db, app) = (unit("prod/db"), unit("prod/app"));
    let guard = set(&db, "guard");
    assert_eq!(guard["blocking"], true, "{guard}");
    assert_eq!(
        guard["denies"][0]["message"],
        "prod/db adds 1 resources in prod"
    );
    assert_eq!(guard["denies"][0]["rule"], "data.main.deny");
    assert_eq!(
        guard["warnings"][0]["message"], "prod/db has dependents: prod/app",
        "a rule over the unit's place in the graph: {guard}"
    );
    let leak = set(&db, "leak");
    assert_eq!(leak["blocking"], false, "{leak}");
    let printed = leak["warnings"][0]["message"].as_str().unwrap();
    assert!(printed.contains("(sensitive)"), "{printed}");
    assert!(printed.contains("terraform_data.db"), "{printed}");
    // The spinning set ran out of time on prod/app only; its error is recorded.
    let spin = set(&app, "spin");
    assert!(
        spin["error"]
            .as_str()
            .unwrap()
            .contains("evaluation time limit"),
        "{spin}"
    );
    assert_eq!(set(&db, "spin")["error"], "", "{db}");
    // The allocating set was stopped at its memory ceiling, in its own process, on
    // prod/db only; the other sets of that unit were still judged.
    let bomb = set(&db, "bomb");
    assert!(
        bomb["error"]
            .as_str()
            .unwrap()
            .contains("evaluation memory limit"),
        "{bomb}"
    );
    assert_eq!(set(&app, "bomb")["error"], "", "{app}");
    // The comment shows what blocks, inert; the same plan in Markdown.
    let md = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--changed", "prod/db/main.tf"],
    );
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("Policies: blocking"), "{md}");
    assert!(md.contains("prod/db adds 1 resources in prod"), "{md}");
    assert!(!md.contains(SECRET), "{md}");
}

/// Whole-plan rules (also run by `engine_policies`): at most one resource added across the
/// plan, and a unit that changes must plan its dependents; a rule on `input.unit` that must
/// never fire on the whole plan; the planned units and the plan id, as warnings.
pub(crate) const SPREAD: &str = r#"package main

import rego.v1

deny contains msg if {
  total := sum([u.change.add | some u in input.units])
  total > 1
  msg := sprintf("the plan adds %d resources; at most 1 per pull request", [total])
}

deny contains msg if {
  some u in input.units
  u.change.add > 0
  some d in u.unit.dependents
  not planned(d)
  msg := sprintf("%s changes but its dependent %s did not plan", [u.unit.path, d])
}

planned(path) if {
  some u in input.units
  u.unit.path == path
}

deny contains "evaluated for one unit" if input.unit.path

warn contains concat(", ", [u.unit.path | some u in input.units])

warn contains sprintf("plan %s", [input.plan_id])
"#;

#[test]
fn a_whole_plan_set_judges_every_planned_unit_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let backend = "terraform {\n  backend \"local\" {}\n}\n";
    let data = |name: &str| {
        format!("{backend}resource \"terraform_data\" \"{name}\" {{\n  input = \"{name}\"\n}}\n")
    };
    write(dir, "network/main.tf", &data("vpc"));
    write(dir, "app/main.tf", &data("app"));
    // No value for a required variable: its plan fails, so it is not in `input.units`.
    write(
        dir,
        "worker/main.tf",
        &format!(
            "{backend}variable \"size\" {{}}\n\nresource \"terraform_data\" \"worker\" {{\n  input = var.size\n}}\n"
        ),
    );
    write(dir, "policies/guard/guard.rego", GUARD);
    write(dir, "policies/spread/spread.rego", SPREAD);
    commit_modules(
        dir,
        "modules:\n  - path: network\n  - path: app\n    depends_on: [network]\n  - path: worker\n    depends_on: [network]\npolicies:\n  - name: guard\n    path: policies/guard\n  - name: spread\n    path: policies/spread\n    input: plan\n",
    );
    let out = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--format", "json", "--changed", "network/main.tf"],
    );
    let plan: Json = support::stdout_json(&out);
    assert!(!out.status.success(), "worker fails to plan: {plan}");
    let whole = plan["policies"].as_array().expect("whole-plan results");
    assert_eq!(whole.len(), 1, "{plan}");
    let spread = &whole[0];
    assert_eq!(spread["set"], "spread");
    assert_eq!(spread["blocking"], true);
    let denies: Vec<&str> = spread["denies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        denies,
        [
            "network changes but its dependent worker did not plan",
            "the plan adds 2 resources; at most 1 per pull request",
        ],
        "the rule on `input.unit` never fired: {spread}"
    );
    assert_eq!(spread["warnings"][0]["message"], "network, app", "{spread}");
    assert_eq!(
        spread["warnings"][1]["message"],
        format!("plan {}", plan["plan_id"].as_str().unwrap()),
        "the plan's own id: {spread}"
    );
    for unit in plan["units"].as_array().unwrap() {
        let sets: Vec<&str> = unit["policies"]
            .as_array()
            .map(|list| list.iter().map(|s| s["set"].as_str().unwrap()).collect())
            .unwrap_or_default();
        assert!(
            !sets.contains(&"spread"),
            "a whole-plan set is not evaluated per unit: {unit}"
        );
    }
    // A per-unit rule over the unit's place in the graph, beside it.
    let network = &plan["units"][0];
    assert_eq!(network["path"], "network");
    assert_eq!(
        network["policies"][0]["warnings"][0]["message"],
        "network has dependents: app, worker"
    );
    let md = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--changed", "network/main.tf"],
    );
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("- whole plan — `spread`: **blocks the apply**"),
        "{md}"
    );
}
