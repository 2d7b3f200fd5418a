//! Repository paths are bytes as git keeps them: a backslash is part of a
//! directory's name, never a separator; two units never share one path
//! silently; a directory name that is not UTF-8 is refused, not merged with
//! another. Real files in a temporary git repository, discovered, diffed and
//! mapped onto units as the CLI and the bot do.

use crate::support;

use cascade::affected::{ReadIndex, affected};
use cascade::problem::ProblemKind;
use cascade::scan::{Scan, scan};
use cascade::unit::UnitPath;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use support::{git, write_file};

const EXCLUDED: &str = "exclude {\n  if      = true\n  actions = [\"all\"]\n}\n";

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        write_file(tmp.path(), rel, text);
    }
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-qm", "base"]);
    tmp
}

fn scanned(dir: &Path) -> Scan {
    scan(dir, dir, &[])
}

fn paths(scan: &Scan) -> Vec<&str> {
    scan.discovery
        .units
        .iter()
        .map(|u| u.path.as_str())
        .collect()
}

/// The units a change to `changed` affects, by path.
fn affected_by(scan: &Scan, changed: &[String]) -> Vec<String> {
    let index = ReadIndex::new(&scan.discovery.units);
    affected(
        &index,
        &scan.discovery.units,
        &scan.graph,
        changed,
        &[],
        None,
    )
    .units
    .iter()
    .map(|u| u.path.to_string())
    .collect()
}

#[test]
fn a_backslash_twin_with_an_exclude_block_hides_nothing() {
    let tmp = repo(&[
        ("live/base/terragrunt.hcl", ""),
        ("live/base/main.tf", "# real\n"),
        ("live\\base/terragrunt.hcl", EXCLUDED),
        ("live\\base/main.tf", "# twin\n"),
    ]);
    write_file(tmp.path(), "live/base/main.tf", "# real, changed\n");
    git(tmp.path(), &["commit", "-qam", "change the real unit"]);
    let scan = scanned(tmp.path());
    assert_eq!(paths(&scan), ["live/base", "live\\base"]);
    let real = scan.discovery.unit(&UnitPath::new("live/base")).unwrap();
    assert_eq!(real.excluded, None);
    assert_eq!(real.refused, None);
    let twin = scan.discovery.unit(&UnitPath::new("live\\base")).unwrap();
    assert!(twin.excluded.is_some());
    assert!(scan.problems.is_empty(), "{:?}", scan.problems);

    // The diff names the file as git keeps it, and the real unit is affected.
    let changes = cascade::git::changed_files(tmp.path(), "HEAD~1", "HEAD").unwrap();
    assert_eq!(changes.paths(), ["live/base/main.tf"]);
    assert_eq!(affected_by(&scan, &changes.paths()), ["live/base"]);
}

#[test]
fn a_change_under_a_backslash_directory_is_that_units() {
    let tmp = repo(&[
        ("live/base/terragrunt.hcl", ""),
        ("live\\base/terragrunt.hcl", ""),
        ("live\\base/main.tf", "# twin\n"),
        ("live/x\\..\\..\\..\\pr-2\\live\\victim/terragrunt.hcl", ""),
        ("live/x\\..\\..\\..\\pr-2\\live\\victim/main.tf", "# own\n"),
    ]);
    write_file(tmp.path(), "live\\base/main.tf", "# twin, changed\n");
    write_file(
        tmp.path(),
        "live/x\\..\\..\\..\\pr-2\\live\\victim/main.tf",
        "# own, changed\n",
    );
    git(tmp.path(), &["commit", "-qam", "change the odd units"]);
    let scan = scanned(tmp.path());
    let changes = cascade::git::changed_files(tmp.path(), "HEAD~1", "HEAD").unwrap();
    assert_eq!(
        changes.paths(),
        [
            "live/x\\..\\..\\..\\pr-2\\live\\victim/main.tf",
            "live\\base/main.tf"
        ]
    );
    assert_eq!(
        affected_by(&scan, &changes.paths()),
        ["live/x\\..\\..\\..\\pr-2\\live\\victim", "live\\base"]
    );
    // Found and mapped, but its path would climb out wherever `\` is read as `/`.
    let odd = UnitPath::new("live/x\\..\\..\\..\\pr-2\\live\\victim");
    assert!(odd.odd_part().is_some());
}

#[test]
fn a_module_and_a_terragrunt_unit_at_one_path_are_both_reported_and_refused() {
    let tmp = repo(&[
        (
            ".cascade.yaml",
            "modules:\n  - path: global/dns\n    executor: terraform\n",
        ),
        ("global/dns/main.tf", "# module\n"),
        ("global/dns/terragrunt.hcl", EXCLUDED),
        ("live/app/terragrunt.hcl", ""),
    ]);
    let scan = scanned(tmp.path());
    assert_eq!(
        paths(&scan),
        ["global/dns", "live/app"],
        "one unit per path"
    );
    let dns = scan.discovery.unit(&UnitPath::new("global/dns")).unwrap();
    assert_eq!(dns.excluded, None, "one twin's exclude block hides neither");
    let why = dns.refused.as_deref().expect("refused");
    assert!(
        why.contains("a Terragrunt unit and a module of .cascade.yaml share this path"),
        "{why}"
    );
    let duplicates: Vec<String> = scan
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::DuplicateUnit)
        .map(|p| p.to_string())
        .collect();
    assert_eq!(duplicates.len(), 2, "{duplicates:?}");
    assert!(
        duplicates
            .iter()
            .any(|p| p.starts_with(".cascade.yaml: a module")),
        "{duplicates:?}"
    );
    assert!(
        duplicates
            .iter()
            .any(|p| p.starts_with("global/dns: a Terragrunt unit")),
        "{duplicates:?}"
    );
    // Still affected by a change to it: a failed unit, not a quiet one.
    assert_eq!(
        affected_by(&scan, &["global/dns/main.tf".to_string()]),
        ["global/dns"]
    );
}

#[test]
fn directory_names_that_are_not_utf8_are_refused_not_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_file(root, "live/terragrunt.hcl", "");
    for byte in [0xff_u8, 0xfe] {
        let name = [b'u', byte];
        let dir = root.join("live").join(std::ffi::OsStr::from_bytes(&name));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("terragrunt.hcl"), "").unwrap();
    }
    let scan = scanned(root);
    assert_eq!(
        paths(&scan),
        ["live"],
        "neither becomes a unit by a lossy name"
    );
    let live = scan.discovery.unit(&UnitPath::new("live")).unwrap();
    assert!(live.unresolved, "what it holds is unknown");
    let refusal = scan
        .problems
        .iter()
        .find(|p| p.message.contains("not valid UTF-8"))
        .expect("a problem names the refusal");
    assert_eq!(refusal.unit, Some(UnitPath::new("live")));
}
