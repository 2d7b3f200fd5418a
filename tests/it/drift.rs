//! `cascade drift` end to end on copies of the bundled example, with the real
//! terraform binary (terraform_data and local state only): the example is
//! applied with `cascade plan` + `cascade apply`, then one unit's real state is
//! changed out of band with terraform itself; drift must report exactly that
//! unit (exit 2), nothing once it is reverted (exit 0), a unit that cannot plan
//! and the units behind it (exit 1, over drift), only the units `--units`
//! picks, and must leave neither state nor a plan file behind.

use crate::support;

use serde_json::Value as Json;
use std::path::Path;
use std::process::Output;

use support::{example_repo, run_in as run, stdout_json as json};

fn cascade(dir: &Path, args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_cascade"), dir, args)
}

/// Panics with its stderr unless `out` succeeded.
fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cascade drift --format json ARGS…`: its exit status and report.
fn drift(dir: &Path, args: &[&str]) -> (i32, Json) {
    let mut all = vec!["drift", "--format", "json"];
    all.extend(args);
    let out = cascade(dir, &all);
    (out.status.code().unwrap(), json(&out))
}

fn paths(list: &Json) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            u.as_str()
                .unwrap_or_else(|| u["path"].as_str().unwrap())
                .to_string()
        })
        .collect();
    out.sort();
    out
}

/// Every unit of the example, sorted.
const ALL: [&str; 11] = [
    "dev/app",
    "dev/database",
    "dev/dns",
    "dev/monitoring",
    "dev/network",
    "global/dns",
    "prod/app",
    "prod/database",
    "prod/dns",
    "prod/monitoring",
    "prod/network",
];

/// Applies the whole example through cascade: every unit reads root.hcl.
fn apply_everything(dir: &Path) {
    let out = cascade(dir, &["plan", "--format", "json", "--changed", "root.hcl"]);
    succeeded(&out);
    let mut id = json(&out)["plan_id"].as_str().unwrap().to_string();
    for _ in 0..6 {
        let out = cascade(dir, &["apply", &id, "--format", "json"]);
        if out.status.success() {
            return;
        }
        id = json(&out)["new_plan"]["plan_id"]
            .as_str()
            .unwrap_or_else(|| panic!("apply failed: {}", String::from_utf8_lossy(&out.stdout)))
            .to_string();
    }
    panic!("the example did not converge");
}

/// `terraform apply` by hand in `unit`, behind cascade's back.
fn terraform_apply(unit: &Path, extra: &[&str]) {
    let mut args = vec!["apply", "-auto-approve", "-input=false", "-no-color"];
    args.extend(extra);
    succeeded(&run("terraform", unit, &args));
}

/// Files under `dir` whose name ends with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        if entry.ends_with(suffix) {
            out.push(entry);
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

#[test]
fn drift_reports_exactly_the_unit_changed_out_of_band_and_nothing_once_reverted() {
    let repo = example_repo();
    let dir = repo.path();
    apply_everything(dir);
    let (code, j) = drift(dir, &[]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(paths(&j["clean"]), ALL);
    assert_eq!(j["drifted"], Json::Array(vec![]));
    assert_eq!(j["failed"], Json::Array(vec![]));

    // Out of band: someone applies prod/monitoring by hand with another input.
    // Nothing reads its outputs, so no other unit may drift with it.
    let unit = dir.join("prod/monitoring");
    terraform_apply(&unit, &["-var", "environment=staging"]);
    let (code, j) = drift(dir, &[]);
    assert_eq!(code, 2, "{j}");
    let drifted = j["drifted"].as_array().unwrap();
    assert_eq!(drifted.len(), 1, "{j}");
    assert_eq!(drifted[0]["path"], "prod/monitoring");
    assert_eq!(drifted[0]["counts"]["change"], 1, "{j}");
    assert_eq!(drifted[0]["counts"]["add"], 0, "{j}");
    let mut others: Vec<&str> = ALL.to_vec();
    others.retain(|u| *u != "prod/monitoring");
    assert_eq!(paths(&j["clean"]), others);
    assert_eq!(j["failed"], Json::Array(vec![]));
    // The fingerprint is the plan engine's: `cascade plan` of that unit computes the same.
    let out = cascade(
        dir,
        &[
            "plan",
            "--format",
            "json",
            "--changed",
            "prod/monitoring/main.tf",
        ],
    );
    succeeded(&out);
    let plan = json(&out);
    assert_eq!(plan["units"][0]["path"], "prod/monitoring");
    assert_eq!(plan["units"][0]["fingerprint"], drifted[0]["fingerprint"]);
    // An object with exactly the three keys the report promises.
    let keys: Vec<&String> = drifted[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["counts", "fingerprint", "path"]);

    // Markdown shows the attribute that drifted, as the plan comment does.
    let out = cascade(dir, &["drift"]);
    assert_eq!(out.status.code(), Some(2));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("1 of 11 units drifted"), "{md}");
    assert!(md.contains("`prod/monitoring`"), "{md}");
    assert!(md.contains("0 to add, 1 to change, 0 to destroy"), "{md}");
    assert!(
        md.contains(r#""staging-monitoring" -> "prod-monitoring""#),
        "{md}"
    );
    assert!(md.contains("**Clean:** 10 units."), "{md}");

    // Drift never applies: the state still holds the out-of-band value.
    let state = std::fs::read_to_string(unit.join("terraform.tfstate")).unwrap();
    assert!(state.contains("staging"));

    // Reverted by hand → clean again (a second run plans afresh, it does not resume).
    terraform_apply(&unit, &[]);
    let (code, j) = drift(dir, &[]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(paths(&j["clean"]), ALL);
}

#[test]
fn a_unit_that_cannot_plan_fails_the_run_over_drift_and_names_itself_to_its_dependents() {
    let repo = example_repo();
    let dir = repo.path();
    // Nothing applied: every unit that plans drifts (its resources are missing).
    std::fs::write(
        dir.join("dev/network/main.tf"),
        "resource \"terraform_data\" \"broken\" {\n  input = var.nowhere\n}\n",
    )
    .unwrap();
    let (code, j) = drift(dir, &[]);
    assert_eq!(code, 1, "failure wins over drift: {j}");
    let failed = j["failed"].as_array().unwrap();
    let reason = |unit: &str| -> String {
        failed
            .iter()
            .find(|f| f["path"] == unit)
            .unwrap_or_else(|| panic!("{unit} not failed: {j}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason("dev/network").contains("nowhere"), "{j}");
    // Its dependents are not planned, each naming it.
    for behind in ["dev/database", "dev/app", "dev/dns", "dev/monitoring"] {
        assert!(reason(behind).contains("dev/network"), "{behind}: {j}");
    }
    // prod/monitoring depends on dev/monitoring.
    assert!(reason("prod/monitoring").contains("dev/"), "{j}");
    assert_eq!(
        paths(&j["drifted"]),
        [
            "global/dns",
            "prod/app",
            "prod/database",
            "prod/dns",
            "prod/network"
        ]
    );
    let md = cascade(dir, &["drift", "--units", "dev/network"]);
    assert_eq!(md.status.code(), Some(1));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("### Failed: 1 units"), "{md}");
}

#[test]
fn units_narrows_the_check_and_nothing_is_left_to_apply() {
    let repo = example_repo();
    let dir = repo.path();
    let (code, j) = drift(dir, &["--units", "prod/*", "--units", "global"]);
    assert_eq!(code, 2, "{j}");
    assert_eq!(
        paths(&j["drifted"]),
        [
            "global/dns",
            "prod/app",
            "prod/database",
            "prod/dns",
            "prod/monitoring",
            "prod/network"
        ]
    );
    // A unit picked without its dependencies plans alone.
    let (code, j) = drift(dir, &["--units", "dev/app"]);
    assert_eq!(code, 2, "{j}");
    assert_eq!(paths(&j["drifted"]), ["dev/app"]);
    // No glob matching is an error, not a clean report.
    let out = cascade(dir, &["drift", "--units", "staging/**"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no unit matches --units"));
    // Nor is a usage error drift: 1, not 2.
    let out = cascade(dir, &["drift", "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(1));

    // Never applied, no saved plan left, no plan in the store `cascade apply` reads.
    for unit in ALL {
        assert!(
            !dir.join(unit).join("terraform.tfstate").exists(),
            "{unit} applied"
        );
    }
    assert_eq!(files_ending(dir, ".tfplan"), Vec::<String>::new());
    assert!(!dir.join(".cascade/cascade.db").exists());
    let drift_dir: Vec<String> = std::fs::read_dir(dir.join(".cascade/drift"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(drift_dir, ["logs"]);
    assert!(!files_ending(&dir.join(".cascade/drift/logs"), ".log").is_empty());
}

#[test]
fn a_hostile_unit_name_cannot_break_the_markdown_report() {
    let repo = example_repo();
    let dir = repo.path();
    let odd = dir.join("prod/a`b<details>|c");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(
        odd.join("main.tf"),
        "resource \"terraform_data\" \"x\" {}\n",
    )
    .unwrap();
    std::fs::write(odd.join("terragrunt.hcl"), "# a unit\n").unwrap();
    let out = cascade(dir, &["drift", "--units", "prod/a*"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8_lossy(&out.stdout);
    // The name whole, in one code span, and nothing in the report active.
    assert!(md.contains("### ``prod/a`b<details>|c``"), "{md}");
    support::markdown_oracle::assert_inert(&md, &[]).assert_code("prod/a`b<details>|c");
}
