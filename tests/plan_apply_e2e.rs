//! `cascade plan` and `cascade apply` end to end on copies of the bundled
//! example, with the real terraform binary (terraform_data and local state
//! only: nothing is downloaded).

mod support;

use serde_json::Value as Json;
use std::path::Path;
use std::process::{Command, Output};

fn example_repo() -> tempfile::TempDir {
    assert!(
        Command::new("terraform")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "terraform must be on PATH: these tests plan and apply for real"
    );
    let tmp = tempfile::tempdir().unwrap();
    support::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live"),
        tmp.path(),
    );
    support::git(tmp.path(), &["init", "-q"]);
    support::git(tmp.path(), &["add", "-A"]);
    support::git(tmp.path(), &["commit", "-qm", "example"]);
    tmp
}

fn cascade(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .output()
        .unwrap()
}

fn json(out: &Output) -> Json {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn plan(dir: &Path, changed: &[&str]) -> (Output, Json) {
    let mut args = vec!["plan", "--format", "json", "--changed"];
    args.extend(changed);
    let out = cascade(dir, &args);
    let j = json(&out);
    (out, j)
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
    // Round by round (dependents come back as new plans), until only the failure is left.
    let mut last = Json::Null;
    for _ in 0..6 {
        let (out, j) = apply(dir, &id);
        assert!(!out.status.success());
        last = j.clone();
        match j["new_plan"]["plan_id"].as_str() {
            Some(next) => id = next.to_string(),
            None => break,
        }
    }
    let s = statuses(&last);
    assert!(
        s.contains(&("dev/database".into(), "failed".into())),
        "{s:?}"
    );
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
fn killing_an_apply_midway_and_running_it_again_applies_nothing_twice() {
    let repo = example_repo();
    let dir = repo.path();
    // Slow every unit's apply down so the kill lands mid-run.
    for unit in ["global/dns", "prod/network", "dev/network"] {
        let tf = dir.join(unit).join("main.tf");
        let text = std::fs::read_to_string(&tf).unwrap();
        std::fs::write(&tf, format!("{text}\nresource \"terraform_data\" \"slow\" {{\n  provisioner \"local-exec\" {{\n    command = \"sleep 1\"\n  }}\n}}\n")).unwrap();
    }
    support::git(dir, &["commit", "-qam", "slow units"]);
    let (_, j) = plan(
        dir,
        &[
            "global/dns/main.tf",
            "prod/network/main.tf",
            "dev/network/main.tf",
        ],
    );
    let id = j["plan_id"].as_str().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["apply", &id, "--parallelism", "1", "--format", "json"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once the first unit has been applied.
    let started = std::time::Instant::now();
    while !dir.join("dev/network/terraform.tfstate").exists() && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2)); // let an orphaned terraform finish
    apply_until_done(dir, id);
    // No unit's apply completed twice. A terraform killed with cascade (its output pipe
    // closes) may have started and stopped before changing anything, or part-way: the next
    // run re-plans the unit and either applies the unchanged plan or asks for a new approval
    // for what is left, so each unit completes exactly one apply over all runs.
    let runs = dir.join(".cascade/runs");
    let mut completed: std::collections::BTreeMap<String, usize> = Default::default();
    for run in std::fs::read_dir(&runs).unwrap() {
        for log in std::fs::read_dir(run.unwrap().path()).unwrap() {
            let log = log.unwrap().path();
            if log.extension().is_some_and(|e| e == "log") {
                let n = std::fs::read_to_string(&log)
                    .unwrap()
                    .matches("Apply complete!")
                    .count();
                let unit = log
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .split_once('_')
                    .unwrap()
                    .1
                    .to_string();
                *completed.entry(unit).or_default() += n;
            }
        }
    }
    // (The unit killed mid-apply may log none: an orphaned terraform can finish unheard.)
    assert!(completed.values().all(|n| *n <= 1), "{completed:?}");
    assert_eq!(
        completed.get("prod--network.log"),
        Some(&1),
        "{completed:?}"
    );
    // And every unit ends applied exactly once in state: nothing was created twice.
    for unit in ["dev/network", "global/dns", "prod/network"] {
        let state: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(unit).join("terraform.tfstate")).unwrap(),
        )
        .unwrap();
        let names: Vec<&str> = state["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "{unit}: {names:?}");
        assert!(names.contains(&"slow"), "{unit}: {names:?}");
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
    assert!(
        !std::fs::read_to_string(&state)
            .unwrap()
            .contains("terraform_data"),
        "its resources are destroyed"
    );
}
