//! An unresolved unit through `cascade plan` and `cascade apply` with the real terraform:
//! its dependencies are unknown, so it is planned and applied after every other unit but
//! its known dependents, alone, and the comment says so on its line of the unresolved list.
//! The layout is the live-stacks example's: `service` needs `db` and `role`, `role` needs
//! `db`; only `role`'s edge is known (`service`'s is read from the environment, which
//! discovery never has), and `dns` is known to need `service`.

use crate::support;

use std::path::Path;
use std::time::SystemTime;
use support::hostile::resource;
use support::replies::redacted;
use support::{git, run_in, stdout_json, write_file};

const CONFIG: &str = "environments:\n  live:\n    path: live\n    executor: terraform\n";

fn cascade(dir: &Path, args: &[&str]) -> std::process::Output {
    run_in(env!("CARGO_BIN_EXE_cascade"), dir, args)
}

fn needs(paths: &str) -> String {
    format!("dependencies {{\n  paths = [{paths}]\n}}\n")
}

/// The repository, one commit: four units run by terraform, `service` unresolved.
fn repo(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("repo");
    write_file(&dir, ".cascade.yaml", CONFIG);
    for (unit, config) in [
        ("db", String::new()),
        ("role", needs("\"../db\"")),
        ("service", needs("get_env(\"SERVICE_NEEDS\")")),
        ("dns", needs("\"../service\"")),
    ] {
        write_file(&dir, &format!("live/{unit}/terragrunt.hcl"), &config);
        write_file(&dir, &format!("live/{unit}/main.tf"), &resource(unit));
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    dir
}

/// When terraform last wrote the unit's local state: at the end of its apply.
fn state_written(dir: &Path, unit: &str) -> SystemTime {
    std::fs::metadata(dir.join(format!("live/{unit}/terraform.tfstate")))
        .and_then(|m| m.modified())
        .unwrap()
}

#[test]
fn an_unresolved_unit_is_planned_and_applied_after_the_others_and_the_comment_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo(tmp.path());
    let out = cascade(&dir, &["plan", "--changed", "live/db/main.tf"]);
    let comment = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{comment}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One wave each: db, role, then service (ordered last), then its known dependent dns.
    for (wave, unit) in [(1, "db"), (2, "role"), (3, "service"), (4, "dns")] {
        assert!(
            comment.contains(&format!("| {wave} | `live/{unit}`")),
            "{unit} is not in wave {wave}: {comment}"
        );
    }
    assert_eq!(
        comment
            .matches("ordered last: its dependencies are unknown")
            .count(),
        1,
        "{comment}"
    );
    insta::assert_snapshot!("plan_with_an_unresolved_unit", redacted(&comment));

    let id = support::plan_id_of(&comment);
    let applied = cascade(&dir, &["apply", &id, "--format", "json"]);
    let result = stdout_json(&applied);
    assert!(applied.status.success(), "{result}");
    assert_eq!(result["complete"], true, "{result}");
    // The apply walks the plan's order: each state is written after the one before.
    let written: Vec<SystemTime> = ["db", "role", "service", "dns"]
        .iter()
        .map(|u| state_written(&dir, u))
        .collect();
    assert!(
        written.windows(2).all(|w| w[0] < w[1]),
        "states written at {written:?}"
    );
}
