//! Where the CLI works, as a git user expects: without `--repo`, from the top level of the
//! git repository around the current directory (so the root's `.cascade.yaml` applies)
//! with `--changed` paths relative to the current directory; with `--repo`, that
//! directory, and a note when a `.cascade.yaml` above it is not read. A directory with no
//! unit is an error naming it and what a unit is, and one whose units `.cascade.yaml`
//! leaves out says so instead.

use crate::support;

use std::path::{Path, PathBuf};
use support::hostile::resource;
use support::{cascade_in as cascade, git, write_file};

/// `<tmp>/repo`, a git repository holding `files`, one commit; its canonical path.
fn repo(tmp: &Path, files: &[(&str, &str)]) -> PathBuf {
    let dir = tmp.join("repo");
    std::fs::create_dir_all(&dir).unwrap();
    for (rel, text) in files {
        write_file(&dir, rel, text);
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base", "--allow-empty"]);
    std::fs::canonicalize(dir).unwrap()
}

/// The unit paths `cascade graph --format json` prints, run in `dir` with `args`.
fn graph_units(dir: &Path, args: &[&str]) -> (Vec<String>, String) {
    let mut all = vec!["graph", "--format", "json"];
    all.extend(args);
    let (code, stdout, stderr) = cascade(dir, &all);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let graph: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let units = graph["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap().to_string())
        .collect();
    (units, stderr)
}

#[test]
fn a_repository_without_units_is_an_error_that_names_it_and_says_what_a_unit_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo(
        tmp.path(),
        &[
            ("README.md", "infrastructure, one day\n"),
            ("modules/vpc/main.tf", &resource("vpc")),
        ],
    );
    let runs: [(&[&str], i32); 4] = [
        (&["graph"], 2),
        (&["affected", "--changed", "README.md"], 2),
        (&["plan", "--changed", "README.md"], 2),
        // Exit status 2 is drift there: its errors are 1.
        (&["drift"], 1),
    ];
    for (args, status) in runs {
        let (code, stdout, stderr) = cascade(&dir, args);
        assert_eq!(code, status, "{args:?}: {stdout}{stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(
            stderr.contains(&format!(
                "cascade: no unit in {}: a unit is a directory holding terragrunt.hcl",
                dir.display()
            )) && stderr.contains("terragrunt.stack.hcl")
                && stderr.contains(
                    "1 directory holds .tf files without being a unit (modules/vpc): list a root module under `modules:`"
                )
                && stderr.contains("or pass --repo DIR"),
            "{args:?}: {stderr}"
        );
    }
    // Nothing was created for the refused plan and drift.
    assert!(!dir.join(".cascade").exists());
    // --repo naming a directory without units says to point it at the units.
    let (code, _, stderr) = cascade(&dir, &["graph", "--repo", "modules"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("no unit in {}/modules:", dir.display()))
            && stderr.contains("pass --repo the directory holding the units"),
        "{stderr}"
    );
}

#[test]
fn a_repository_whose_units_are_all_left_out_by_its_configuration_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo(
        tmp.path(),
        &[
            (".cascade.yaml", "ignore:\n  - sandbox\n"),
            ("sandbox/a/terragrunt.hcl", ""),
            ("sandbox/b/terragrunt.hcl", ""),
            ("other/terragrunt.stack.hcl", ""),
        ],
    );
    // The stack is still a unit: nothing to say.
    let (units, _) = graph_units(&dir, &[]);
    assert_eq!(units, ["other"]);
    std::fs::remove_dir_all(dir.join("other")).unwrap();
    let (code, stdout, stderr) = cascade(&dir, &["graph"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "no unit in {0}: {0}/.cascade.yaml leaves out every one discovery found:\n`ignore` matches 2 directories (sandbox/a, sandbox/b)\nchange `ignore` or `environments`",
            dir.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("a unit is a directory"), "{stderr}");
    // Outside every environment: the other way to leave a unit out.
    write_file(
        &dir,
        ".cascade.yaml",
        "environments:\n  live:\n    path: live\n",
    );
    let (code, _, stderr) = cascade(&dir, &["graph"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`environments` covers none of 2 directories (sandbox/a, sandbox/b)"),
        "{stderr}"
    );
}

#[test]
fn from_a_subdirectory_the_roots_configuration_applies_and_changed_paths_start_where_you_are() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo(
        tmp.path(),
        &[
            (".cascade.yaml", "ignore:\n  - live/scratch\n"),
            ("live/app/terragrunt.hcl", ""),
            ("live/app/main.tf", &resource("app")),
            ("live/scratch/terragrunt.hcl", ""),
        ],
    );
    let live = dir.join("live");
    // As from the root: every path relative to it, `ignore` kept.
    for from in [&dir, &live, &live.join("app")] {
        let (units, stderr) = graph_units(from, &[]);
        assert_eq!(units, ["live/app"], "{}", from.display());
        assert!(!stderr.contains("note"), "{stderr}");
    }
    // `--changed` as git reads a path: from the current directory.
    for (from, changed) in [
        (&live, "app/main.tf"),
        (&live.join("app"), "main.tf"),
        (&live.join("app"), "../app/./main.tf"),
        (&dir, "live/app/main.tf"),
    ] {
        let (code, stdout, stderr) = cascade(from, &["affected", "--changed", changed]);
        assert_eq!(code, 0, "{changed}: {stderr}");
        assert!(
            stdout.starts_with(
                "1 changed file affect 1 unit\n\nwave 1 (1 unit)\n  live/app  (changed live/app/main.tf)\n"
            ),
            "{changed}: {stdout}"
        );
    }
    // A typo names where the path was read from.
    let (code, _, stderr) = cascade(&live, &["affected", "--changed", "main.tf"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--changed main.tf: no such file in the working tree or in the checked-out commit; check the path (relative to the current directory, {})",
            live.display()
        )),
        "{stderr}"
    );
    // `--repo` is the root it names, with its own (missing) configuration, and says so.
    let (units, stderr) = graph_units(&dir, &["--repo", "live"]);
    assert_eq!(units, ["app", "scratch"]);
    assert!(
        stderr.contains(&format!(
            "cascade: note: --repo {} holds no .cascade.yaml, so cascade runs with the defaults; {}/.cascade.yaml applies only with --repo {} (or without --repo)",
            live.display(),
            dir.display(),
            dir.display()
        )),
        "{stderr}"
    );
    let (code, stdout, stderr) = cascade(
        &dir,
        &["affected", "--repo", "live", "--changed", "app/main.tf"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  app  (changed app/main.tf)"), "{stdout}");
    // A subdirectory with a configuration of its own is taken as meant: no note.
    write_file(&live, ".cascade.yaml", "ignore: []\n");
    let (_, stderr) = graph_units(&dir, &["--repo", "live"]);
    assert!(!stderr.contains("note"), "{stderr}");
}
