//! platctl's hooks (`../shared/seeds/`) written as cascade workflows, as README's
//! "Workflows" section shows them, run through the CLI with the real terraform in the
//! real sandbox:
//! - `crd_two_stage`: the CRDs' resource applied on its own first, then the rest;
//! - `secret_cleanup`: a `pre_apply` step clearing what would block the apply;
//! - `argocd_account_token`: a best-effort `post_apply` step whose failure is a warning;
//! - `state_purge`: a `pre_destroy` step taking resources out of state before the destroy.

use crate::plan_apply_e2e::commit_modules;
use crate::support;
use serde_json::Value as Json;
use std::path::Path;

fn cascade(dir: &Path, args: &[&str]) -> std::process::Output {
    support::run_in(env!("CARGO_BIN_EXE_cascade"), dir, args)
}

fn ok_json(out: &std::process::Output) -> Json {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    support::stdout_json(out)
}

/// A repository of one plain module `unit` holding `main_tf`, with `workflows`.
fn repo(unit: &str, main_tf: &str, workflows: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(unit)).unwrap();
    std::fs::write(
        tmp.path().join(unit).join("main.tf"),
        format!("terraform {{\n  backend \"local\" {{}}\n}}\n\n{main_tf}"),
    )
    .unwrap();
    commit_modules(
        tmp.path(),
        &format!("modules:\n  - path: {unit}\n{workflows}"),
    );
    tmp
}

fn plan_and_apply(dir: &Path, changed: &str) -> Json {
    let plan = ok_json(&cascade(
        dir,
        &["plan", "--format", "json", "--changed", changed],
    ));
    let id = plan["plan_id"].as_str().unwrap().to_string();
    ok_json(&cascade(dir, &["apply", &id, "--format", "json"]))
}

fn unit<'a>(result: &'a Json, path: &str) -> &'a Json {
    result["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in {result}"))
}

fn unit_log(dir: &Path, unit: &str) -> String {
    walkdir::WalkDir::new(dir.join(".cascade/runs"))
        .into_iter()
        .filter_map(Result::ok)
        // `<wave>_<unit>-<digest>.log`
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".log") && name.contains(&format!("_{unit}-"))
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect()
}

#[test]
fn crd_two_stage_applies_the_crds_first_then_what_uses_them() {
    // `app` can only be applied once `crds` is: its provisioner checks for the CRDs' mark.
    let main = r#"resource "terraform_data" "crds" {
  input = "crds"
  provisioner "local-exec" {
    command = "touch crds-installed"
  }
}

resource "terraform_data" "app" {
  input = "app"
  provisioner "local-exec" {
    command = "test -f crds-installed"
  }
}
"#;
    let repo = repo(
        "cert-manager",
        main,
        "workflows:\n  - name: crd_two_stage\n    units: [cert-manager]\n    apply: {targets: [terraform_data.crds]}\n",
    );
    let dir = repo.path();
    let result = plan_and_apply(dir, "cert-manager/main.tf");
    assert_eq!(
        unit(&result, "cert-manager")["status"],
        "applied",
        "{result}"
    );
    let log = unit_log(dir, "cert-manager");
    assert!(log.contains("-target=terraform_data.crds"), "{log}");
    assert_eq!(
        log.matches("Apply complete! Resources: 1 added").count(),
        2,
        "two stages of one resource each: {log}"
    );
    let state = std::fs::read_to_string(dir.join("cert-manager/terraform.tfstate")).unwrap();
    assert!(
        state.contains("\"crds\"") && state.contains("\"app\""),
        "{state}"
    );
}

#[test]
fn secret_cleanup_runs_before_the_apply() {
    let main = r#"resource "terraform_data" "oauth" {
  input = "oauth"
  provisioner "local-exec" {
    command = "test ! -f pending-deletion"
  }
}
"#;
    let repo = repo(
        "tailscale-admin",
        main,
        "workflows:\n  - name: secret_cleanup\n    units: [tailscale-admin]\n    pre_apply:\n      - run: {name: secret_cleanup, command: [sh, -c, \"rm -f pending-deletion && echo cleaned\"]}\n",
    );
    let dir = repo.path();
    // A leftover from an earlier run that would make the apply fail.
    std::fs::write(dir.join("tailscale-admin/pending-deletion"), "").unwrap();
    let result = plan_and_apply(dir, "tailscale-admin/main.tf");
    let unit = unit(&result, "tailscale-admin");
    assert_eq!(unit["status"], "applied", "{result}");
    assert_eq!(unit["steps"][0]["hook"], "pre_apply", "{result}");
    assert_eq!(unit["steps"][0]["status"], "passed", "{result}");
    assert!(!dir.join("tailscale-admin/pending-deletion").exists());
}

#[test]
fn argocd_account_token_is_best_effort_after_the_apply() {
    let repo = repo(
        "argocd",
        "resource \"terraform_data\" \"argocd\" {\n  input = \"argocd\"\n}\n",
        "workflows:\n  - name: argocd_account_token\n    units: [argocd]\n    post_apply:\n      - run: {name: argocd_account_token, command: [sh, -c, \"echo token still valid check failed; exit 1\"], ignore_errors: true, visible_on: always}\n",
    );
    let dir = repo.path();
    let result = plan_and_apply(dir, "argocd/main.tf");
    assert_eq!(result["complete"], true, "{result}");
    let unit = unit(&result, "argocd");
    assert_eq!(unit["status"], "applied", "{result}");
    assert_eq!(unit["steps"][0]["status"], "warned", "{result}");
    assert_eq!(unit["steps"][0]["code"], 1, "{result}");
    // The warning is shown, and the unit is not applied again by a second apply.
    let id = result["plan_id"].as_str().unwrap();
    let again = cascade(dir, &["apply", id, "--format", "json"]);
    assert!(
        !again.status.success(),
        "a consumed plan is not applied again"
    );
    assert_eq!(
        unit_log(dir, "argocd").matches("Apply complete!").count(),
        1
    );
}

#[test]
fn state_purge_takes_resources_out_of_state_before_the_destroy() {
    let main = r#"terraform {
  backend "local" {}
}

resource "terraform_data" "realm" {
  input = "realm"
}

resource "terraform_data" "other" {
  input = "other"
}
"#;
    let keep = "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"keep\" {\n  input = \"keep\"\n}\n";
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (unit, text) in [("live/keycloak-config", main), ("live/keep", keep)] {
        std::fs::create_dir_all(dir.join(unit)).unwrap();
        std::fs::write(dir.join(unit).join("main.tf"), text).unwrap();
        std::fs::write(dir.join(unit).join("terragrunt.hcl"), "").unwrap();
    }
    commit_modules(
        dir,
        "environments:\n  live: {path: live, executor: terraform}\nworkflows:\n  - name: state_purge\n    units: [live/keycloak-config]\n    pre_destroy:\n      - run: {name: state_purge, command: [terraform, state, rm, terraform_data.realm]}\n",
    );
    plan_and_apply(dir, "live/keycloak-config/main.tf");
    support::git(dir, &["checkout", "-qb", "teardown"]);
    support::git(
        dir,
        &[
            "rm",
            "-q",
            "live/keycloak-config/main.tf",
            "live/keycloak-config/terragrunt.hcl",
        ],
    );
    support::git(dir, &["commit", "-qm", "tear down keycloak-config"]);
    let plan = ok_json(&cascade(
        dir,
        &["plan", "--base", "main", "--format", "json"],
    ));
    let planned = unit(&plan, "live/keycloak-config");
    assert_eq!(planned["destroy"], true, "{plan}");
    assert_eq!(planned["counts"]["destroy"], 2, "{plan}");
    let id = plan["plan_id"].as_str().unwrap().to_string();
    let result = ok_json(&cascade(dir, &["apply", &id, "--format", "json"]));
    let applied = unit(&result, "live/keycloak-config");
    assert_eq!(applied["status"], "applied", "{result}");
    assert_eq!(applied["steps"][0]["name"], "state_purge", "{result}");
    assert_eq!(applied["steps"][0]["status"], "passed", "{result}");
    assert_eq!(
        applied["applied"]["counts"]["destroy"], 1,
        "only what stayed in state: {result}"
    );
    let log = unit_log(dir, "live--keycloak-config");
    assert!(log.contains("Removed terraform_data.realm"), "{log}");
    assert!(
        !log.contains("terraform_data.realm: Destroying"),
        "the purged resource was not destroyed: {log}"
    );
}
