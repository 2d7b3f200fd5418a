//! `cascade plan` on units that cannot plan, with the real terraform on the bundled
//! example: a unit Terragrunt itself would refuse (a dependency that is no unit, a
//! `terragrunt.hcl` that does not parse) fails with its `file:line` before anything runs,
//! its dependents are skipped, and the plan has no `/apply` line (exit 1); a unit whose
//! terraform fails names terraform's error, summary and location, on its line.

use crate::support;

use std::path::Path;
use support::replies::redacted;
use support::{example_repo, git, run_in};

fn cascade(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = run_in(env!("CARGO_BIN_EXE_cascade"), dir, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rewrites `file` of the example with `edit` and commits it.
fn commit_edit(dir: &Path, file: &str, edit: impl Fn(&str) -> String) {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed {file}");
    std::fs::write(&path, edited).unwrap();
    git(dir, &["commit", "-qam", "a broken change"]);
}

/// The 1-based line of `file` that starts with `prefix`.
fn line_of(dir: &Path, file: &str, prefix: &str) -> usize {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in {file}"))
        + 1
}

/// The list item of `unit` in the comment's section `heading` (`Failed to plan`, `Skipped`).
fn item<'a>(comment: &'a str, heading: &str, unit: &str) -> &'a str {
    let section = &comment[comment
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} section:\n{comment}"))..];
    section
        .lines()
        .find(|l| l.starts_with(&format!("- `{unit}`")))
        .unwrap_or_else(|| panic!("{unit} not under {heading}:\n{comment}"))
}

#[test]
fn a_config_path_typo_fails_the_unit_at_its_line_and_the_plan_cannot_be_applied() {
    let repo = example_repo();
    let dir = repo.path();
    commit_edit(dir, "dev/app/terragrunt.hcl", |t| {
        t.replace(
            "config_path = \"../database\"",
            "config_path = \"../databse\"",
        )
    });
    let line = line_of(
        dir,
        "dev/app/terragrunt.hcl",
        "  config_path = \"../databse\"",
    );
    let (code, out, err) = cascade(dir, &["plan", "--changed", "dev/app/terragrunt.hcl"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(!out.contains("/apply "), "an /apply line:\n{out}");
    assert!(out.contains("**Not ready to apply:**"), "{out}");
    let failed = item(&out, "Failed to plan", "dev/app");
    assert!(
        failed.contains(&format!(
            "dev/app/terragrunt.hcl:{line}: dev/app depends on dev/databse"
        )),
        "{failed}"
    );
    assert!(failed.contains("DependencyDirNotFoundError"), "{failed}");
    // Nothing ran: dev/app failed before terraform, and everything else waited for it.
    let logs = support::files_with_extension(&dir.join(".cascade"), "log");
    assert!(logs.is_empty(), "a command ran: {logs:?}");
    insta::assert_snapshot!("plan_with_a_missing_dependency", redacted(&out));
}

#[test]
fn a_terragrunt_hcl_that_does_not_parse_fails_at_its_line_and_is_not_unresolved() {
    let repo = example_repo();
    let dir = repo.path();
    commit_edit(dir, "dev/database/terragrunt.hcl", |t| {
        format!("{t}\nlocals {{\n  x = \n}}\n")
    });
    let (code, out, err) = cascade(dir, &["plan", "--changed", "dev/database/terragrunt.hcl"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(!out.contains("/apply "), "an /apply line:\n{out}");
    assert!(!out.contains("Unresolved"), "listed unresolved:\n{out}");
    let failed = item(&out, "Failed to plan", "dev/database");
    assert!(failed.contains("dev/database/terragrunt.hcl:"), "{failed}");
    assert!(failed.contains("fix the syntax"), "{failed}");
    assert!(!failed.contains("planned on every change"), "{failed}");
    // dev/app depends on the database: skipped, naming it.
    let skipped = item(&out, "Skipped", "dev/app");
    assert!(skipped.contains("dev/database failed"), "{skipped}");
}

#[test]
fn a_main_tf_syntax_error_is_named_with_its_file_and_line() {
    let repo = example_repo();
    let dir = repo.path();
    commit_edit(dir, "global/dns/main.tf", |t| {
        format!("{t}\nresource \"terraform_data\" \"open\" {{\n  input = \"x\"\n")
    });
    let (code, out, err) = cascade(dir, &["plan", "--changed", "global/dns/main.tf"]);
    assert_eq!(code, 1, "{out}\n{err}");
    let failed = item(&out, "Failed to plan", "global/dns");
    let line = line_of(
        dir,
        "global/dns/main.tf",
        "resource \"terraform_data\" \"open\"",
    );
    assert!(
        failed.contains(&format!(
            "failed (exit code 1): Error: Unclosed configuration block (main.tf line {line})"
        )),
        "{failed}"
    );
    assert!(!failed.contains("Initializing"), "{failed}");
    insta::assert_snapshot!("plan_with_a_main_tf_syntax_error", redacted(&out));
}
