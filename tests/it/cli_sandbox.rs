//! The sandbox through the CLI, on a fresh copy of the bundled example: `cascade
//! plan` keeps its data directory (inside the repository) out of terraform's reach
//! and refuses a committed provider; without Landlock it warns and goes on, and
//! `--sandbox landlock` there refuses to run.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::{example_repo, git, run_in};

fn cascade(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = run_in(env!("CARGO_BIN_EXE_cascade"), dir, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn append(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    let old = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{old}\n{text}\n")).unwrap();
}

#[test]
fn cascade_plan_keeps_its_data_directory_out_of_reach() {
    let repo = example_repo();
    let dir = repo.path();
    // A first plan makes the data directory and its database.
    let (code, _, err) = cascade(dir, &["plan", "--changed", "dev/dns/main.tf"]);
    assert_eq!(code, 0, "{err}");
    assert!(dir.join(".cascade/cascade.db").is_file());
    append(
        dir,
        "dev/dns/main.tf",
        "resource \"terraform_data\" \"leak\" {\n  input = filebase64(\"${path.module}/../../.cascade/cascade.db\")\n}",
    );
    let (code, out, err) = cascade(dir, &["plan", "--changed", "dev/dns/main.tf"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("the sandbox refused reading cascade's database"),
        "{out}\n{err}"
    );
    assert!(!out.contains("SQLite format"), "{out}");
}

#[test]
fn cascade_plan_refuses_a_committed_provider_and_runs_nothing() {
    let repo = example_repo();
    let dir = repo.path();
    append(
        dir,
        "dev/dns/main.tf",
        "terraform {\n  required_providers {\n    evil = { source = \"example.com/acme/evil\", version = \"1.0.0\" }\n  }\n}\nprovider \"evil\" {}",
    );
    let plugin = dir.join("dev/dns/terraform.d/plugins/example.com/acme/evil/1.0.0/linux_amd64");
    std::fs::create_dir_all(&plugin).unwrap();
    let binary = plugin.join("terraform-provider-evil_v1.0.0");
    std::fs::write(&binary, "#!/bin/sh\ntouch provider-ran\nexit 1\n").unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "a provider of our own"]);
    let (code, out, err) = cascade(dir, &["plan", "--changed", "dev/dns/main.tf"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("`dev/dns/terraform.d` is a provider directory"),
        "{out}\n{err}"
    );
    assert!(
        !dir.join("dev/dns/provider-ran").exists(),
        "the provider ran"
    );
}

#[test]
fn without_landlock_the_cli_warns_and_goes_on_unless_landlock_is_asked_for() {
    let repo = example_repo();
    let dir = repo.path();
    // The test hook stands in for a kernel without Landlock.
    let (code, out, err) = cascade(
        dir,
        &[
            "plan",
            "--changed",
            "dev/dns/main.tf",
            "--sandbox-assume-abi",
            "0",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("warning: no sandbox") && err.contains("--sandbox off"),
        "{err}"
    );
    assert!(out.contains("cascade plan"), "{out}");
    let (code, _, err) = cascade(
        dir,
        &[
            "plan",
            "--changed",
            "dev/dns/main.tf",
            "--sandbox",
            "landlock",
            "--sandbox-assume-abi",
            "0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--sandbox landlock"), "{err}");
    // Off by choice: no warning.
    let (code, _, err) = cascade(
        dir,
        &["plan", "--changed", "dev/dns/main.tf", "--sandbox", "off"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning: no sandbox"), "{err}");
}

#[test]
fn a_plan_larger_than_max_plan_json_fails_its_unit_only() {
    let repo = example_repo();
    let dir = repo.path();
    // About 2 MiB of string from 16 bytes, in the plan JSON twice over.
    append(
        dir,
        "dev/dns/main.tf",
        "locals {\n  big = join(\"\", [for i in range(1024) : join(\"\", [for j in range(128) : \"0123456789abcdef\"])])\n}\nresource \"terraform_data\" \"big\" {\n  input = local.big\n}",
    );
    let (code, out, err) = cascade(
        dir,
        &[
            "plan",
            "--changed",
            "dev/dns/main.tf",
            "--max-plan-json",
            "1",
        ],
    );
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("the plan's JSON is larger than 1 MiB"),
        "{out}\n{err}"
    );
    // Under the default cap the same unit plans.
    let (code, out, err) = cascade(dir, &["plan", "--changed", "dev/dns/main.tf"]);
    assert_eq!(code, 0, "{out}\n{err}");
    // A budget no plan of the cap's size fits is refused at start.
    let (code, _, err) = cascade(
        dir,
        &[
            "plan",
            "--changed",
            "dev/dns/main.tf",
            "--max-plan-json",
            "512",
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("--plan-memory 1536 or more"), "{err}");
}
