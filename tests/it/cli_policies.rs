//! Policy checks in `cascade plan`, with the real terraform and the embedded Rego engine:
//! a `deny` over a prod unit's change, a `warn`, a rule over the unit's dependents, a policy
//! that prints its whole input (no sensitive value in it), and one that runs past the time
//! limit (that unit's set records the error; the command finishes).

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
    commit_modules(
        dir,
        "modules:\n  - path: prod/db\n  - path: prod/app\n    depends_on: [prod/db]\npolicies:\n  - name: guard\n    path: policies/guard\n    owners: {users: [carol]}\n  - name: leak\n    path: policies/leak\n    enforcement: warn\n    owners: {users: [carol]}\n  - name: spin\n    path: policies/spin\n    owners: {users: [carol]}\n",
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
    assert!(spin["error"].as_str().unwrap().contains("limit"), "{spin}");
    assert_eq!(set(&db, "spin")["error"], "", "{db}");
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
