//! Per-unit credentials (`--unit-env-file`) end to end with `cascade plan` and
//! `cascade apply` and the real terraform: which unit gets which values, a
//! plan's values apart from an apply's, a unit that matches no entry, a broken
//! file refused at start naming where, no value in the comment, cascade's output,
//! its logs or its database, and no credential from `.cascade.yaml`.

use crate::plan_apply_e2e::{commit_modules, ok, state_resources};
use crate::support;
use serde_json::Value as Json;
use std::path::Path;
use std::process::Output;

const DEV: &str = "dev-shared-role-3333";
const PROD_PLAN: &str = "prod-plan-role-1111";
const PROD_APPLY: &str = "prod-apply-role-2222";
/// In an entry no unit of the CLI's reaches: its repository is a directory, not `acme/…`.
const NEVER: &str = "never-used-role-4444";

/// `dev/app` and `other/app` keep `var.role` in their state; `prod/app` keeps a fixed
/// value and writes the role its apply sees to `role-at-apply` (a provisioner runs at
/// apply only, and its environment is not part of the plan), so a plan and an apply
/// with different roles still have one fingerprint.
fn repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let variable = "variable \"role\" {\n  type    = string\n  default = \"no-role\"\n}\n";
    let backend = "terraform {\n  backend \"local\" {}\n}\n";
    for (unit, body) in [
        (
            "dev/app",
            "resource \"terraform_data\" \"unit\" {\n  input = var.role\n}\n",
        ),
        (
            "other/app",
            "resource \"terraform_data\" \"unit\" {\n  input = var.role\n}\n",
        ),
        (
            "prod/app",
            r#"resource "terraform_data" "unit" {
  input = "prod"
  provisioner "local-exec" {
    command     = "printf %s \"$ROLE\" > role-at-apply"
    environment = { ROLE = var.role }
  }
}
"#,
        ),
    ] {
        std::fs::create_dir_all(dir.join(unit)).unwrap();
        std::fs::write(
            dir.join(unit).join("main.tf"),
            format!("{backend}\n{variable}\n{body}"),
        )
        .unwrap();
    }
    commit_modules(
        dir,
        "modules:\n  - path: dev/app\n  - path: other/app\n  - path: prod/app\n",
    );
    tmp
}

/// The operator's file, outside the repository; the prod apply role read from a file.
fn unit_env_file(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("prod-apply-role"), format!("{PROD_APPLY}\n")).unwrap();
    let file = dir.join("unit-env.yaml");
    std::fs::write(
        &file,
        format!(
            r#"- repository: "acme/*"
  units: "**"
  env: {{TF_VAR_role: {NEVER}}}
- units: prod/**
  plan: {{TF_VAR_role: {PROD_PLAN}}}
  apply: {{TF_VAR_role: {{file: prod-apply-role}}}}
- units: ["dev/*"]
  env: {{TF_VAR_role: {DEV}}}
"#
        ),
    )
    .unwrap();
    file
}

/// `cascade ARGS… --unit-env-file FILE` in `dir`.
fn cascade(dir: &Path, env_file: &Path, args: &[&str]) -> Output {
    let file = env_file.to_string_lossy();
    let mut args = args.to_vec();
    args.extend(["--unit-env-file", &file]);
    support::run_in(env!("CARGO_BIN_EXE_cascade"), dir, &args)
}

/// The variables terraform saved in a plan file of `unit` under `runs`: what its plan saw.
fn saved_role(dir: &Path, runs: &[std::path::PathBuf], unit: &str) -> Vec<String> {
    let stem = unit.replace('/', "--");
    runs.iter()
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| s.to_string_lossy().contains(&stem))
        })
        .map(|plan| {
            let out = support::run_in(
                "terraform",
                &dir.join(unit),
                &["show", "-json", &plan.to_string_lossy()],
            );
            let show: Json = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
            show["variables"]["role"]["value"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn plan_files(dir: &Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir.join(".cascade"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.path().extension().is_some_and(|x| x == "tfplan"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

#[test]
fn each_unit_gets_its_entrys_values_the_plan_its_own_and_the_apply_its_own() {
    support::example_repo(); // terraform is on PATH
    let repo = repo();
    let dir = repo.path();
    let operator = tempfile::tempdir().unwrap();
    let env_file = unit_env_file(operator.path());
    let changed = ["dev/app/main.tf", "other/app/main.tf", "prod/app/main.tf"];

    let mut args = vec!["plan", "--changed"];
    args.extend(changed);
    let comment_out = cascade(dir, &env_file, &args);
    let comment = ok(&comment_out);
    // dev/app's plan shows its role, masked: a value of the file is a secret.
    assert!(comment.contains("input  = \"[redacted]\""), "{comment}");
    assert!(
        comment.contains("input  = \"no-role\""),
        "other/app gets no value: {comment}"
    );
    // The plan saw the plan role (terraform keeps variables in the saved plan).
    assert_eq!(saved_role(dir, &plan_files(dir), "prod/app"), [PROD_PLAN]);

    let mut args = vec!["plan", "--format", "json", "--changed"];
    args.extend(changed);
    let planned = cascade(dir, &env_file, &args);
    let id = support::stdout_json(&planned)["plan_id"]
        .as_str()
        .unwrap()
        .to_string();
    let before_apply = plan_files(dir);
    let applied = cascade(dir, &env_file, &["apply", &id, "--format", "json"]);
    let result = ok(&applied);
    assert_eq!(support::stdout_json(&applied)["complete"], true, "{result}");

    // Two units, two values; the one no entry matched kept its default.
    assert_eq!(
        state_resources(dir, "dev/app"),
        [("unit".to_string(), Json::from(DEV))]
    );
    assert_eq!(
        state_resources(dir, "other/app"),
        [("unit".to_string(), Json::from("no-role"))]
    );
    // The apply (and the fresh plan it applied) saw the apply role, read from its file.
    assert_eq!(
        std::fs::read_to_string(dir.join("prod/app/role-at-apply")).unwrap(),
        PROD_APPLY
    );
    let apply_plans: Vec<_> = plan_files(dir)
        .into_iter()
        .filter(|p| !before_apply.contains(p))
        .collect();
    assert_eq!(saved_role(dir, &apply_plans, "prod/app"), [PROD_APPLY]);

    let mut scanned = vec![
        ("the plan comment".to_string(), comment.clone().into_bytes()),
        ("the JSON plan".to_string(), planned.stdout.clone()),
        ("the apply result".to_string(), applied.stdout.clone()),
    ];
    for out in [&comment_out, &planned, &applied] {
        scanned.push(("cascade's stderr".into(), out.stderr.clone()));
    }
    for entry in walkdir::WalkDir::new(dir.join(".cascade"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
    {
        let path = entry.path();
        // Provider binaries; terraform's saved plans hold variables by design.
        if path.starts_with(dir.join(".cascade/plugin-cache"))
            || path.extension().is_some_and(|e| e == "tfplan")
        {
            continue;
        }
        scanned.push((path.display().to_string(), std::fs::read(path).unwrap()));
    }
    assert!(scanned.iter().any(|(n, _)| n.ends_with(".log")));
    for (name, bytes) in &scanned {
        for secret in [DEV, PROD_PLAN, PROD_APPLY, NEVER] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} is in {name}"
            );
        }
    }
}

#[test]
fn a_broken_file_stops_the_start_naming_where_and_no_value() {
    support::example_repo();
    let repo = repo();
    let operator = tempfile::tempdir().unwrap();
    let file = operator.path().join("unit-env.yaml");
    std::fs::write(
        &file,
        "- units: prod/**\n  plan: {TF_VAR_role: plan-secret-5555}\n  aply: {TF_VAR_role: apply-secret-6666}\n",
    )
    .unwrap();
    let out = cascade(
        repo.path(),
        &file,
        &["plan", "--changed", "prod/app/main.tf"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unit-env.yaml is not valid"), "{stderr}");
    assert!(
        stderr.contains("[0].aply: unknown field `aply`"),
        "{stderr}"
    );
    assert!(stderr.contains("line 3"), "{stderr}");
    assert!(!stderr.contains("secret-"), "{stderr}");
    assert!(!repo.path().join(".cascade/runs").exists(), "nothing ran");
}

/// Only the operator defines credentials: `.cascade.yaml` has no key that sets a variable.
#[test]
fn a_cascade_yaml_that_defines_a_credential_is_refused() {
    support::example_repo();
    let repo = repo();
    let dir = repo.path();
    let config = std::fs::read_to_string(dir.join(".cascade.yaml")).unwrap();
    std::fs::write(
        dir.join(".cascade.yaml"),
        format!("{config}env:\n  TF_VAR_role: from-the-repository\n"),
    )
    .unwrap();
    support::git(dir, &["commit", "-qam", "a credential in the repository"]);
    let out = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--changed", "dev/app/main.tf"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("unknown key `env`"), "{stderr}");
    assert!(!dir.join("dev/app/terraform.tfstate").exists());
}
