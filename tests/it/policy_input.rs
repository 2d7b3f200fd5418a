//! The policy input document over real `terraform show -json` plans: whatever terraform
//! marks sensitive (a `sensitive` variable, its default, a `sensitive()` value inside a
//! map and a list, a sensitive output, the unmarked copy `terraform_data.output` keeps)
//! appears nowhere in the serialized input, on a create, an update and a destroy, while
//! the values next to them stay for policies to read.

use crate::support::terraform::terraform;
use cascade::policy::input::{
    ChangeCounts, PullRequestFacts, SENSITIVE, UnitFacts, unit_input, whole_plan_input,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Every secret below contains this; nothing else does.
const SECRET_MARK: &str = "s3cr3t";

const MAIN_TF: &str = r#"
variable "db_password" {
  type      = string
  sensitive = true
  default   = "s3cr3t-default-pw"
}

locals {
  token = sensitive("s3cr3t-token-in-a-map")
}

resource "terraform_data" "password" {
  input = var.db_password
}

resource "terraform_data" "settings" {
  input = {
    token = local.token
    name  = "plain-value-kept"
    items = ["visible-item", sensitive("s3cr3t-item-in-a-list")]
  }
}

output "password" {
  value     = terraform_data.password.output
  sensitive = true
}

output "name" {
  value = terraform_data.settings.input.name
}
"#;

/// Plans with `extra` arguments and returns the parsed `show -json` document.
fn plan(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["plan", "-input=false", "-no-color", "-out=p"];
    args.extend_from_slice(extra);
    terraform(dir, &args);
    serde_json::from_slice(&terraform(dir, &["show", "-json", "p"])).unwrap()
}

fn facts() -> (UnitFacts, ChangeCounts, PullRequestFacts) {
    let unit = UnitFacts {
        path: "live/prod/db".into(),
        environment: Some("prod".into()),
        tool: "terraform".into(),
        dependencies: vec![],
        dependents: vec!["live/prod/app".into()],
        wave: 1,
        reads: vec!["live/prod/db/main.tf".into()],
    };
    let pr = PullRequestFacts {
        number: 1,
        author: "alice".into(),
        base_ref: "main".into(),
        head_sha: "a".repeat(40),
        ..PullRequestFacts::default()
    };
    (unit, ChangeCounts::default(), pr)
}

/// The input for `plan` must hold no secret, and keep the plain values.
fn assert_no_secret(what: &str, plan: &Value, kept: &[&str]) {
    let raw = plan.to_string();
    assert!(
        raw.contains(SECRET_MARK),
        "{what}: the plan itself should hold a secret for this test to mean anything"
    );
    let (unit, change, pr) = facts();
    let input = unit_input(plan, &unit, &change, Some(&pr), Some("p-1"), 1_800_000_000);
    let whole = whole_plan_input(vec![input.clone()], Some(&pr), Some("p-1"), 1_800_000_000);
    for (form, document) in [("unit", &input), ("whole plan", &whole)] {
        let text = serde_json::to_string(document).unwrap();
        if let Some(at) = text.find(SECRET_MARK) {
            let start = text[..at]
                .char_indices()
                .rev()
                .nth(80)
                .map_or(0, |(i, _)| i);
            panic!(
                "{what} ({form} form): a secret is left in the input: …{}…",
                &text[start..(at + 40).min(text.len())]
            );
        }
        assert!(text.contains(SENSITIVE), "{what}: nothing was replaced");
        for value in kept {
            assert!(
                text.contains(value),
                "{what} ({form} form): {value} was lost"
            );
        }
    }
}

#[test]
fn no_sensitive_value_of_a_real_plan_reaches_a_policy() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    std::fs::write(work.join("main.tf"), MAIN_TF).unwrap();
    terraform(work, &["init", "-input=false", "-no-color"]);

    let create = plan(work, &[]);
    assert_no_secret(
        "create",
        &create,
        &[
            "plain-value-kept",
            "visible-item",
            "terraform_data.settings",
        ],
    );

    terraform(
        work,
        &["apply", "-input=false", "-no-color", "-auto-approve"],
    );
    // The state now holds `output`, terraform_data's copy of each input.
    let update = plan(work, &["-var=db_password=s3cr3t-new-pw"]);
    assert_no_secret(
        "update",
        &update,
        &[
            "plain-value-kept",
            "visible-item",
            "terraform_data.password",
        ],
    );
    let actions = update["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "terraform_data.password")
        .map(|c| c["change"]["actions"].clone());
    assert_eq!(actions, Some(serde_json::json!(["update"])));

    let destroy = plan(work, &["-destroy"]);
    assert_no_secret(
        "destroy",
        &destroy,
        &["plain-value-kept", "visible-item", "delete"],
    );
}

#[test]
fn cascade_schema_policy_input_prints_the_documents_schema() {
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["schema", "--policy-input"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schema: Value = serde_json::from_slice(&out.stdout).expect("the schema is JSON");
    let mut keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "change",
            "now",
            "now_unix",
            "plan",
            "plan_id",
            "pull_request",
            "unit"
        ]
    );
    assert_eq!(schema["title"], "cascade policy input (one unit)");
    // Without the flag it is still `.cascade.yaml`'s.
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .arg("schema")
        .output()
        .unwrap();
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(config["properties"]["policies"].is_object());
}
