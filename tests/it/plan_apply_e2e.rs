//! `cascade plan` and `cascade apply` end to end on copies of the bundled
//! example (and small repositories of plain root modules), with the real
//! terraform binary (terraform_data and local state only: nothing is
//! downloaded): plans, applies, stale ids, failures, deletions, an apply that
//! outlives a SIGKILLed cascade, two applies of one id at once, units whose
//! names once collided on disk, relative paths on the command line, and the
//! comment of a real change: its attribute diff shown, no sensitive value in
//! the comment, the logs, the run directories or the database.

use crate::support;

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use support::{example_repo, stdout_json as json};

fn cascade(dir: &Path, args: &[&str]) -> Output {
    support::run_in(env!("CARGO_BIN_EXE_cascade"), dir, args)
}

fn plan(dir: &Path, changed: &[&str]) -> (Output, Json) {
    let mut args = vec!["plan", "--format", "json", "--changed"];
    args.extend(changed);
    let out = cascade(dir, &args);
    let j = json(&out);
    (out, j)
}

/// Plans, and insists that every unit planned.
fn plan_ok(dir: &Path, changed: &[&str]) -> Json {
    let (out, j) = plan(dir, changed);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    j
}

fn apply(dir: &Path, id: &str) -> (Output, Json) {
    let out = cascade(dir, &["apply", id, "--format", "json"]);
    if !out.status.success() && out.stdout.is_empty() {
        return (out, Json::Null);
    }
    let j = json(&out);
    (out, j)
}

fn statuses(j: &Json) -> Vec<(String, String)> {
    j["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap().to_string(),
                u["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Applies `id` and each new plan it hands back until everything is applied; returns how many rounds it took.
fn apply_until_done(dir: &Path, mut id: String) -> usize {
    for round in 1..=6 {
        let (out, j) = apply(dir, &id);
        if out.status.success() {
            assert_eq!(j["complete"], true);
            return round;
        }
        let new_id = j["new_plan"]["plan_id"]
            .as_str()
            .unwrap_or_else(|| panic!("apply failed without a new plan: {j}"))
            .to_string();
        assert_ne!(new_id, id);
        id = new_id;
    }
    panic!("apply did not converge");
}

#[test]
fn plan_apply_then_replan_is_empty_with_the_fixed_id() {
    let repo = example_repo();
    let dir = repo.path();
    let (out, j) = plan(dir, &["dev/network/main.tf"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = j["plan_id"].as_str().unwrap().to_string();
    assert_ne!(id, "000000000000");
    let units: Vec<&str> = j["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        units,
        [
            "dev/network",
            "dev/database",
            "dev/app",
            "dev/dns",
            "dev/monitoring",
            "prod/monitoring"
        ]
    );
    assert_eq!(j["units"][0]["counts"]["add"], 1);
    // Dependents were planned against mock outputs; each upstream apply changes
    // what they would do, so they come back as a new plan until all is applied.
    let rounds = apply_until_done(dir, id);
    assert!(
        rounds >= 2,
        "dependents read their upstream's real outputs after it is applied"
    );
    assert!(dir.join("dev/network/terraform.tfstate").is_file());
    assert!(dir.join("prod/monitoring/terraform.tfstate").is_file());
    let (out, j) = plan(dir, &["dev/network/main.tf"]);
    assert!(out.status.success());
    assert_eq!(j["plan_id"], "000000000000", "{j}");
    // The markdown output is the comment the bot would post.
    let md = cascade(dir, &["plan", "--changed", "dev/network/main.tf"]);
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.contains("<!-- cascade:plan -->"), "{text}");
    assert!(!text.contains("/apply "), "nothing to approve: {text}");
}

#[test]
fn a_file_changed_after_the_plan_refuses_the_old_id() {
    let repo = example_repo();
    let dir = repo.path();
    let (_, j) = plan(dir, &["global/dns/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let tf = dir.join("global/dns/main.tf");
    let text = std::fs::read_to_string(&tf).unwrap();
    std::fs::write(&tf, format!("{text}\n# edited after the plan\n")).unwrap();
    let out = cascade(dir, &["apply", &id]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("changed since plan") && err.contains("plan again"),
        "{err}"
    );
    assert!(
        !dir.join("global/dns/terraform.tfstate").exists(),
        "nothing was applied"
    );
    // Planning again gives a new id that applies.
    let (_, j) = plan(dir, &["global/dns/main.tf"]);
    let new_id = j["plan_id"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    let out = cascade(dir, &["apply", &id]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&new_id),
        "the refusal names the current plan: {err}"
    );
    assert!(apply_until_done(dir, new_id) >= 1);
}

#[test]
fn an_upstream_apply_that_changes_a_dependent_holds_it_back_with_a_new_id() {
    let repo = example_repo();
    let dir = repo.path();
    let (_, j) = plan(dir, &["dev/network/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let (out, j) = apply(dir, &id);
    assert_eq!(out.status.code(), Some(1));
    let s = statuses(&j);
    assert!(
        s.contains(&("dev/network".into(), "applied".into())),
        "{s:?}"
    );
    assert!(
        s.contains(&("dev/database".into(), "changed-since-approval".into())),
        "{s:?}"
    );
    assert!(s.contains(&("dev/app".into(), "skipped".into())), "{s:?}");
    assert!(
        !dir.join("dev/database/terraform.tfstate").exists(),
        "the changed dependent was not applied"
    );
    let new_plan = &j["new_plan"];
    let left: Vec<&str> = new_plan["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert!(
        !left.contains(&"dev/network"),
        "applied units are not in the new plan: {left:?}"
    );
    assert!(left.contains(&"dev/database"));
    // The markdown result shows the new id to approve.
    let new_id = new_plan["plan_id"].as_str().unwrap();
    let out = cascade(dir, &["apply", &id]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(new_id));
}

#[test]
fn a_dependent_re_planned_after_its_upstream_apply_shows_what_changed_and_why() {
    let repo = example_repo();
    let dir = repo.path();
    let (_, j) = plan(dir, &["dev/network/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let out = cascade(dir, &["apply", &id]);
    assert_eq!(out.status.code(), Some(1));
    let result = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        result.contains("- `dev/database`: re-planned with the real outputs of `dev/network`, applied just before."),
        "{result}"
    );
    // Its difference: the approved plan's lines against the new plan's, in a diff block.
    let start = result
        .find("<details><summary><code>dev/database</code> — what changed since approval</summary>")
        .unwrap_or_else(|| panic!("no difference block: {result}"));
    let block = &result[start..start + result[start..].find("</details>").unwrap()];
    assert!(
        block.contains("```diff\n--- approved\n+++ now\n@@"),
        "{block}"
    );
    assert!(
        block.lines().any(|l| l.starts_with('-')) && block.lines().any(|l| l.starts_with('+')),
        "{block}"
    );
    insta::assert_snapshot!("apply_changed_since_approval_difference", block);
}

#[test]
fn a_failed_unit_skips_its_dependents_while_an_unrelated_branch_is_applied() {
    let repo = example_repo();
    let dir = repo.path();
    // dev/database fails at apply time (a creation-time provisioner exits 1).
    let tf = dir.join("dev/database/main.tf");
    let text = std::fs::read_to_string(&tf).unwrap();
    std::fs::write(
        &tf,
        format!("{text}\nresource \"terraform_data\" \"fails\" {{\n  provisioner \"local-exec\" {{\n    command = \"exit 1\"\n  }}\n}}\n"),
    )
    .unwrap();
    support::git(dir, &["commit", "-qam", "a failing unit"]);
    let (_, j) = plan(dir, &["dev/network/main.tf", "prod/network/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let mut id = id;
    // Round by round (dependents come back as new plans), until nothing is left to approve.
    // Once dev/database failed, no new plan holds it or dev/app: approving the next id
    // must not run the failed unit again unfixed.
    let mut s = Vec::new();
    let mut failed_in = None;
    for round in 0..6 {
        let (out, j) = apply(dir, &id);
        s.extend(statuses(&j));
        if failed_in.is_none()
            && statuses(&j)
                .iter()
                .any(|(u, st)| u == "dev/database" && st == "failed")
        {
            failed_in = Some(round);
            assert!(!out.status.success());
        }
        if let Some(next) = j["new_plan"]["units"].as_array() {
            assert!(
                failed_in.is_none()
                    || next
                        .iter()
                        .all(|u| u["path"] != "dev/database" && u["path"] != "dev/app"),
                "{j}"
            );
        }
        match j["new_plan"]["plan_id"].as_str() {
            Some(next) => id = next.to_string(),
            None => break,
        }
    }
    assert!(failed_in.is_some(), "{s:?}");
    assert!(s.contains(&("dev/app".into(), "skipped".into())), "{s:?}");
    assert!(!dir.join("dev/app/terraform.tfstate").exists());
    for unrelated in ["prod/network", "prod/database", "prod/app", "prod/dns"] {
        assert!(
            dir.join(unrelated).join("terraform.tfstate").is_file(),
            "{unrelated} applied"
        );
    }
}

#[test]
fn a_deleted_unit_is_destroyed_from_the_base_revision() {
    let repo = example_repo();
    let dir = repo.path();
    let (_, j) = plan(dir, &["prod/monitoring/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    apply_until_done(dir, id);
    let state = dir.join("prod/monitoring/terraform.tfstate");
    assert!(
        std::fs::read_to_string(&state)
            .unwrap()
            .contains("terraform_data")
    );
    support::git(dir, &["checkout", "-qb", "remove-monitoring"]);
    support::git(
        dir,
        &[
            "rm",
            "-rq",
            "prod/monitoring/main.tf",
            "prod/monitoring/terragrunt.hcl",
        ],
    );
    support::git(dir, &["commit", "-qm", "remove prod/monitoring"]);
    let out = cascade(dir, &["plan", "--base", "main", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&out);
    let unit = &j["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "prod/monitoring")
        .cloned()
        .expect("planned");
    assert_eq!(unit["destroy"], true);
    assert_eq!(unit["counts"]["destroy"], 1, "{j}");
    let id = j["plan_id"].as_str().unwrap().to_string();
    let (out, j) = apply(dir, &id);
    assert!(out.status.success(), "{j}");
    // The result says what the apply did: destroyed, with its count, time and output.
    let unit = j["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "prod/monitoring")
        .cloned()
        .expect("applied");
    assert_eq!(
        (&unit["status"], &unit["destroy"]),
        (&Json::from("applied"), &Json::from(true)),
        "{j}"
    );
    assert_eq!(unit["applied"]["counts"]["destroy"], 1, "{j}");
    assert!(unit["duration_ms"].is_u64(), "{j}");
    assert!(
        unit["output"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .starts_with("Apply complete! Resources: 0 added, 0 changed, 1 destroyed")),
        "{j}"
    );
    assert!(
        !std::fs::read_to_string(&state)
            .unwrap()
            .contains("terraform_data"),
        "its resources are destroyed"
    );
}

/// A git repository of plain root modules (`.cascade.yaml` `modules:`), each
/// holding a `terraform_data` named after it; `slow` units sleep while applying.
fn modules_repo(units: &[&str], slow: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut config = String::from("modules:\n");
    for unit in units {
        config.push_str(&format!("  - path: \"{unit}\"\n"));
        let slow_block = if slow.contains(unit) {
            "resource \"terraform_data\" \"slow\" {\n  input = \"slow\"\n  provisioner \"local-exec\" {\n    command = \"sleep 6\"\n  }\n}\n"
        } else {
            ""
        };
        std::fs::create_dir_all(dir.join(unit)).unwrap();
        std::fs::write(
            dir.join(unit).join("main.tf"),
            format!(
                "terraform {{\n  backend \"local\" {{}}\n}}\n\nresource \"terraform_data\" \"unit\" {{\n  input = \"{unit}\"\n}}\n\n{slow_block}"
            ),
        )
        .unwrap();
    }
    commit_modules(dir, &config);
    tmp
}

/// Writes `.cascade.yaml` and a `.gitignore` for terraform's files, and commits everything.
pub(crate) fn commit_modules(dir: &Path, config: &str) {
    std::fs::write(dir.join(".cascade.yaml"), config).unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".terraform/\n*.tfstate\n*.tfstate.*\n.terraform.lock.hcl\n.cascade/\n",
    )
    .unwrap();
    support::git(dir, &["init", "-q"]);
    support::git(dir, &["add", "-A"]);
    support::git(dir, &["commit", "-qm", "modules"]);
}

/// The resources in a unit's state, by name, each with its `input`.
pub(crate) fn state_resources(dir: &Path, unit: &str) -> Vec<(String, Json)> {
    let state: Json = serde_json::from_str(
        &std::fs::read_to_string(dir.join(unit).join("terraform.tfstate")).unwrap(),
    )
    .unwrap();
    state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            r["instances"].as_array().unwrap().iter().map(move |i| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    i["attributes"]["input"]["value"].clone(),
                )
            })
        })
        .collect()
}

/// Waits until a running apply has written `needle` to its raw output file.
fn wait_for_apply_output(dir: &Path, needle: &str) -> PathBuf {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        for entry in walkdir::WalkDir::new(dir.join(".cascade/runs"))
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_name() == "apply.out"
                && std::fs::read_to_string(entry.path()).is_ok_and(|t| t.contains(needle))
            {
                return entry.path().to_path_buf();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no apply wrote {needle:?}");
}

fn spawn_apply(dir: &Path, id: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["apply", id, "--format", "json"])
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// How many times "Apply complete!" appears in the logs of `unit`.
fn completed_applies(dir: &Path, stem_prefix: &str) -> usize {
    walkdir::WalkDir::new(dir.join(".cascade/runs"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            name.ends_with(".log")
                && name
                    .split_once('_')
                    .is_some_and(|(_, s)| s.starts_with(stem_prefix))
        })
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .matches("Apply complete!")
                .count()
        })
        .sum()
}

#[test]
fn a_sigkilled_apply_leaves_terraform_running_and_the_rerun_re_attaches_without_applying_again() {
    let repo = modules_repo(&["slow", "quick"], &["slow"]);
    let dir = repo.path();
    let j = plan_ok(dir, &["slow/main.tf", "quick/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let mut first = spawn_apply(dir, &id);
    // SIGKILL cascade while terraform sleeps in the slow unit's provisioner.
    let raw = wait_for_apply_output(dir, "Provisioning with 'local-exec'");
    first.kill().unwrap();
    first.wait().unwrap();
    let group: i32 = std::fs::read_to_string(raw.with_file_name("running.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), None).is_ok(),
        "terraform outlives the cascade that started it"
    );
    // Run again at once: it waits for that terraform, records its result, applies the rest.
    let (out, j) = apply(dir, &id);
    assert!(
        out.status.success(),
        "{j}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let slow = j["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "slow")
        .unwrap();
    assert_eq!(slow["status"], "applied", "{j}");
    assert!(
        slow["detail"]
            .as_str()
            .unwrap()
            .contains("earlier cascade process"),
        "re-attached, not re-applied: {j}"
    );
    // The state is whole: every resource once, nothing half-written, no lock left behind.
    let mut names: Vec<String> = state_resources(dir, "slow")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.sort();
    assert_eq!(names, ["slow", "unit"]);
    assert!(
        !dir.join("slow/.terraform.tfstate.lock.info").exists(),
        "a stale state lock"
    );
    assert_eq!(completed_applies(dir, "slow-"), 1, "applied exactly once");
    assert!(!raw.exists(), "the raw output is deleted once consumed");
    // The plan is consumed: nothing is applied again.
    let out = cascade(dir, &["apply", &id]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already applied"));
}

#[test]
fn two_applies_of_one_plan_at_once_run_once() {
    let repo = modules_repo(&["slow"], &["slow"]);
    let dir = repo.path();
    let j = plan_ok(dir, &["slow/main.tf"]);
    let id = j["plan_id"].as_str().unwrap().to_string();
    let first = spawn_apply(dir, &id);
    wait_for_apply_output(dir, "Provisioning with 'local-exec'");
    let second = cascade(dir, &["apply", &id]);
    assert_eq!(second.status.code(), Some(1));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!(
            "plan {id} is being applied by pid {} on ",
            first.id()
        )) && err.contains("wait for it"),
        "{err}"
    );
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(completed_applies(dir, "slow-"), 1);
    assert_eq!(state_resources(dir, "slow").len(), 2);
}

#[test]
fn units_whose_names_once_collided_on_disk_plan_and_apply_their_own_plans() {
    let repo = modules_repo(&["a/b", "a--b"], &[]);
    let dir = repo.path();
    let j = plan_ok(dir, &["a/b/main.tf", "a--b/main.tf"]);
    let fingerprints: Vec<&str> = j["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["fingerprint"].as_str().unwrap())
        .collect();
    assert_eq!(fingerprints.len(), 2);
    assert_ne!(
        fingerprints[0], fingerprints[1],
        "each unit has its own plan"
    );
    let id = j["plan_id"].as_str().unwrap().to_string();
    let (out, j) = apply(dir, &id);
    assert!(out.status.success(), "{j}");
    for unit in ["a/b", "a--b"] {
        assert_eq!(
            state_resources(dir, unit),
            [("unit".to_string(), Json::from(unit))],
            "{unit} applied its own plan"
        );
    }
}

#[test]
fn relative_repo_and_data_dir_work_from_a_subdirectory() {
    let repo = example_repo();
    let sub = repo.path().join("dev");
    let out = cascade(
        &sub,
        &[
            "plan",
            "--repo",
            "..",
            "--data-dir",
            "../data",
            "--format",
            "json",
            "--changed",
            "global/dns/main.tf",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = json(&out)["plan_id"].as_str().unwrap().to_string();
    assert!(repo.path().join("data/cascade.db").is_file());
    assert!(!sub.join("data").exists() && !repo.path().join(".cascade").exists());
    let out = cascade(
        &sub,
        &[
            "apply",
            &id,
            "--repo",
            "..",
            "--data-dir",
            "../data",
            "--format",
            "json",
        ],
    );
    let j = json(&out);
    assert!(
        j["units"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["path"] == "global/dns" && u["status"] == "applied"),
        "{j}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(repo.path().join("global/dns/terraform.tfstate").is_file());
}

/// One plain root module, `web`, whose `terraform_data` holds an instance type, a value
/// marked `sensitive()` and a value from `TF_VAR_api_token` (under a name no redaction
/// pattern knows), and a sensitive output.
fn sensitive_repo(instance_type: &str, password: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("web")).unwrap();
    write_web(dir, instance_type, password);
    commit_modules(dir, "modules:\n  - path: web\n");
    tmp
}

fn write_web(dir: &Path, instance_type: &str, password: &str) {
    std::fs::write(
        dir.join("web/main.tf"),
        format!(
            r#"terraform {{
  backend "local" {{}}
}}

variable "api_token" {{
  type = string
}}

resource "terraform_data" "web" {{
  input = {{
    instance_type = "{instance_type}"
    db_password   = sensitive("{password}")
    upstream      = var.api_token
  }}
}}

output "password" {{
  value     = terraform_data.web.output.db_password
  sensitive = true
}}
"#
        ),
    )
    .unwrap();
}

const FIRST_PASSWORD: &str = "first-secret-value-4711";
const SECOND_PASSWORD: &str = "second-secret-value-4712";
/// Not marked sensitive in the configuration: only the redaction of the child's
/// `TF_VAR_*` values keeps it out.
const TOKEN: &str = "tfvar-secret-value-9931";

/// `cascade` with the token in the environment, as terraform's variable.
fn cascade_with_token(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_VAR_api_token", TOKEN)
        .output()
        .unwrap()
}

pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_real_change_shows_its_attribute_diff_and_no_sensitive_value_anywhere() {
    example_repo(); // terraform is on PATH
    let repo = sensitive_repo("t3.small", FIRST_PASSWORD);
    let dir = repo.path();
    let first = cascade_with_token(
        dir,
        &["plan", "--format", "json", "--changed", "web/main.tf"],
    );
    let id = json(&first)["plan_id"].as_str().unwrap().to_string();
    ok(&cascade_with_token(
        dir,
        &["apply", &id, "--format", "json"],
    ));

    write_web(dir, "t3.2xlarge", SECOND_PASSWORD);
    support::git(dir, &["commit", "-qam", "a bigger instance"]);
    let markdown = cascade_with_token(dir, &["plan", "--changed", "web/main.tf"]);
    let comment = ok(&markdown);
    // In the comment, terraform's `~` is a `!` in the first column, where GitHub colours it.
    let changed = |text: &str| {
        comment
            .lines()
            .any(|l| l.starts_with('!') && l[1..].trim_start() == text)
    };
    assert!(
        changed("instance_type = \"t3.small\" -> \"t3.2xlarge\""),
        "{comment}"
    );
    assert!(changed("db_password   = (sensitive value)"), "{comment}");
    assert!(
        comment.contains("<details><summary><code>web</code> — 1 resource, 1 output</summary>"),
        "{comment}"
    );
    // The JSON output carries the same text per unit.
    let plan = cascade_with_token(
        dir,
        &["plan", "--format", "json", "--changed", "web/main.tf"],
    );
    let planned = json(&plan);
    let diff = planned["units"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("~ instance_type = \"t3.small\" -> \"t3.2xlarge\""),
        "{diff}"
    );
    // Applying it re-plans and renders again (stored with the apply's unit results).
    let id = planned["plan_id"].as_str().unwrap().to_string();
    let applied = cascade_with_token(dir, &["apply", &id]);
    let result = ok(&applied);
    assert!(result.contains("cascade applied"), "{result}");

    let mut scanned = vec![
        ("the plan comment".to_string(), comment.into_bytes()),
        ("the JSON output".to_string(), plan.stdout.clone()),
        ("the apply result".to_string(), result.into_bytes()),
    ];
    for out in [&first, &markdown, &plan, &applied] {
        scanned.push(("cascade's stderr".into(), out.stderr.clone()));
    }
    let mut plan_files = 0;
    for entry in walkdir::WalkDir::new(dir.join(".cascade"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
    {
        let path = entry.path();
        if path.starts_with(dir.join(".cascade/plugin-cache")) {
            continue; // provider binaries cascade does not write
        }
        if path.extension().is_some_and(|e| e == "tfplan") {
            // Terraform's saved plan holds the values by design: it is what `apply`
            // applies. It stays in the run's private directory.
            use std::os::unix::fs::PermissionsExt;
            let run = path.parent().unwrap().parent().unwrap();
            let mode = std::fs::metadata(run).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{} is readable by others", run.display());
            plan_files += 1;
            continue;
        }
        let shown = path.strip_prefix(dir).unwrap().display().to_string();
        scanned.push((shown, std::fs::read(path).unwrap()));
    }
    assert!(plan_files >= 2);
    let names: Vec<&str> = scanned.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&".cascade/cascade.db"), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".log")), "{names:?}");
    for (name, bytes) in &scanned {
        for secret in [FIRST_PASSWORD, SECOND_PASSWORD, TOKEN] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} is in {name}"
            );
        }
    }
    // The rendering was stored (it is what a restarted server shows): the database holds
    // the diff line, so the scan above looked at the right place.
    let db = std::fs::read(dir.join(".cascade/cascade.db")).unwrap();
    let wal = std::fs::read(dir.join(".cascade/cascade.db-wal")).unwrap_or_default();
    let needle = b"\\\"t3.small\\\" -> \\\"t3.2xlarge\\\"";
    assert!(
        [db, wal]
            .iter()
            .any(|b| b.windows(needle.len()).any(|w| w == needle)),
        "the rendered diff is stored"
    );
}
