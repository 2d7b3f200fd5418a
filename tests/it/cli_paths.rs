//! Directory names as git keeps them, through `cascade plan` with the real
//! terraform: a backslash twin of a unit with an `exclude` block does not hide
//! the real unit's change, and a directory whose name climbs out with `..`
//! between backslashes (next to the repository, or into another unit) is a
//! failed unit that says to rename it, with nothing run for it.

use crate::support;

use std::path::Path;
use support::hostile::resource;
use support::{cascade_in as cascade, git, write_file};

const CONFIG: &str = "environments:\n  live:\n    path: live\n    executor: terraform\n";

/// `<tmp>/repo`, a git repository holding `files` and the configuration, one commit.
fn repo(tmp: &Path, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = tmp.join("repo");
    write_file(&dir, ".cascade.yaml", CONFIG);
    for (rel, text) in files {
        write_file(&dir, rel, text);
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    dir
}

/// A repository of one unit, `live/app`.
fn one_unit(tmp: &Path) -> std::path::PathBuf {
    repo(
        tmp,
        &[
            ("live/app/terragrunt.hcl", ""),
            ("live/app/main.tf", &resource("app")),
        ],
    )
}

#[test]
fn a_backslash_twin_with_an_exclude_block_does_not_hide_the_real_change() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = repo(
        tmp.path(),
        &[
            ("live/base/terragrunt.hcl", ""),
            ("live/base/main.tf", &resource("real_marker")),
            (
                "live\\base/terragrunt.hcl",
                "exclude {\n  if      = true\n  actions = [\"all\"]\n}\n",
            ),
            ("live\\base/main.tf", &resource("twin_marker")),
        ],
    );
    write_file(
        &dir,
        "live/base/main.tf",
        &(resource("real_marker") + &resource("real_change")),
    );
    git(&dir, &["commit", "-qam", "a real change"]);
    let (code, out, err) = cascade(&dir, &["plan", "--base", "HEAD~1"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("No changes"), "{out}");
    assert!(out.contains("| `live/base` | 2 to add |"), "{out}");
    assert!(out.contains("terraform_data.real_change"), "{out}");
    assert!(!out.contains("twin_marker"), "{out}");
}

#[test]
fn directories_climbing_out_with_backslashes_are_refused_and_nothing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // Beside the repository: what `live/x/../../../victim` would be.
    write_file(tmp.path(), "victim/main.tf", &resource("victim_marker"));
    let escape = "live/x\\..\\..\\..\\victim";
    let sideways = "live/x\\..\\base";
    let up = "live/..\\..\\victim";
    let own = resource("own_marker");
    let mut files = vec![
        ("live/x/keep".to_string(), String::new()),
        ("live/base/terragrunt.hcl".to_string(), String::new()),
        ("live/base/main.tf".to_string(), resource("base_marker")),
    ];
    for unit in [escape, sideways, up] {
        files.push((format!("{unit}/terragrunt.hcl"), String::new()));
        files.push((format!("{unit}/main.tf"), own.clone()));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    let dir = repo(tmp.path(), &files);
    let changed: Vec<String> = [escape, sideways, up]
        .iter()
        .map(|u| format!("{u}/main.tf"))
        .collect();
    let mut args = vec!["plan"];
    for file in &changed {
        args.extend(["--changed", file.as_str()]);
    }
    let (code, out, err) = cascade(&dir, &args);
    assert_eq!(code, 1, "{out}\n{err}");
    for unit in [escape, sideways, up] {
        assert!(
            out.contains(&format!(
                "- `{unit}` — ``cascade runs nothing for `{unit}`: its path has a `..` part"
            )),
            "{unit}: {out}"
        );
    }
    assert!(out.contains("rename the directory"), "{out}");
    for marker in ["own_marker", "victim_marker", "base_marker"] {
        assert!(!out.contains(marker), "{marker}: {out}");
    }
    // Terraform ran nowhere: not beside the repository, not in `live/base`, not in
    // the odd directories themselves.
    for ran in [
        tmp.path().join("victim/.terraform"),
        dir.join("live/base/.terraform"),
        dir.join(escape).join(".terraform"),
        dir.join(sideways).join(".terraform"),
        dir.join(up).join(".terraform"),
    ] {
        assert!(!ran.exists(), "{}", ran.display());
    }
}

#[test]
fn a_changed_file_outside_the_repository_is_refused_and_one_inside_is_named_as_git_would() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = one_unit(tmp.path());
    for command in ["affected", "plan"] {
        for outside in ["../outside/main.tf", "live/../../x.tf", "/etc/passwd"] {
            let (code, stdout, stderr) = cascade(&dir, &[command, "--changed", outside]);
            assert_eq!(code, 2, "{command} {outside}: {stdout}{stderr}");
            assert!(
                stderr.contains(&format!(
                    "--changed {outside} is not a file inside the repository"
                )) && stderr.contains("relative to the current directory"),
                "{command} {outside}: {stderr}"
            );
        }
    }
    // Inside, however it is spelled: relative and unclean, or absolute.
    let absolute = std::fs::canonicalize(&dir)
        .unwrap()
        .join("live/app/main.tf");
    for inside in ["./live/./app/main.tf", absolute.to_str().unwrap()] {
        let (code, stdout, stderr) = cascade(&dir, &["affected", "--changed", inside]);
        assert_eq!(code, 0, "{inside}: {stderr}");
        assert!(
            stdout.starts_with("1 changed file affect 1 unit\n\nwave 1 (1 unit)\n  live/app  (changed live/app/main.tf)\n"),
            "{inside}: {stdout}"
        );
    }
}

#[test]
fn a_unit_named_with_control_characters_cannot_write_to_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = "live/a\u{1b}[2J\nfake line";
    let dir = repo(
        tmp.path(),
        &[
            (&format!("{evil}/terragrunt.hcl"), ""),
            (&format!("{evil}/main.tf"), &resource("evil")),
        ],
    );
    let changed = format!("{evil}/main.tf");
    for args in [vec!["graph"], vec!["affected", "--changed", &changed]] {
        let (code, stdout, stderr) = cascade(&dir, &args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(
            !stdout.contains('\u{1b}') && !stdout.contains("\nfake line"),
            "{args:?}: {stdout:?}"
        );
        assert!(
            stdout.contains("live/a␛[2J␊fake line"),
            "{args:?}: {stdout}"
        );
    }
}

#[test]
fn cascades_own_data_directory_is_not_discovered() {
    let tmp = tempfile::tempdir().unwrap();
    // What `cascade plan --base` leaves in its default data directory: a whole tree of
    // the base revision.
    let dir = repo(
        tmp.path(),
        &[
            ("live/app/terragrunt.hcl", ""),
            (".cascade/trees/0123abc/live/app/terragrunt.hcl", ""),
            ("live/.cascade/trees/0123abc/app/terragrunt.hcl", ""),
        ],
    );
    let (code, stdout, stderr) = cascade(&dir, &["graph", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let graph: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let units: Vec<&str> = graph["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(units, ["live/app"]);
}

#[test]
fn a_changed_file_that_is_nowhere_is_refused_and_a_deleted_one_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = one_unit(tmp.path());
    for command in ["affected", "plan"] {
        let (code, _, stderr) = cascade(&dir, &[command, "--changed", "live/ap/main.tf"]);
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(
            stderr.contains("--changed live/ap/main.tf: no such file in the working tree or in the checked-out commit")
                && stderr.contains("--base"),
            "{command}: {stderr}"
        );
    }
    // Deleted from the working tree, still in the commit: a change like any other.
    std::fs::remove_file(dir.join("live/app/main.tf")).unwrap();
    let (code, stdout, stderr) = cascade(&dir, &["affected", "--changed", "live/app/main.tf"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("live/app  (changed live/app/main.tf)"),
        "{stdout}"
    );
}
