//! The README's worked policy examples (`examples/policies/<name>/`): each passes its own
//! `*_test.rego` tests through `cascade policy test`, the README shows each policy file
//! and its `.cascade.yaml` entry as they are, and the first one denies a real
//! `terraform_data` in `cascade plan`.
//!
//! The README is checked against the files, not the other way round: an edit to a
//! policy that the README does not follow fails here.

use crate::plan_apply_e2e::commit_modules;
use crate::support;
use std::path::Path;

/// Each example's directory name (also its policy file's stem) and its `.cascade.yaml`
/// entry as the README gives it.
const EXAMPLES: [(&str, &str); 3] = [
    (
        "deny_null_resource",
        "policies:\n  - name: deny_null_resource\n    path: policies/deny_null_resource\n    owners: {teams: [acme/platform]}\n",
    ),
    (
        "prod_destroy_approvals",
        "policies:\n  - name: prod_destroy_approvals\n    path: policies/prod_destroy_approvals\n    owners: {teams: [acme/sre]}\n",
    ),
    (
        "create_before_destroy",
        "policies:\n  - name: create_before_destroy\n    path: policies/create_before_destroy\n    owners: {teams: [acme/network]}\n",
    ),
];

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn policy_text(name: &str) -> String {
    let path = repo_root().join(format!("examples/policies/{name}/{name}.rego"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_example_directory_is_a_listed_example() {
    let mut found: Vec<String> = std::fs::read_dir(repo_root().join("examples/policies"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<String> = EXAMPLES.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "a directory of examples/policies/ that this file does not test"
    );
}

#[test]
fn each_example_passes_its_own_tests() {
    let root = repo_root().to_str().unwrap();
    for (name, _) in EXAMPLES {
        let dir = format!("examples/policies/{name}");
        let (code, stdout, stderr) = support::cascade_in(
            repo_root(),
            &["policy", "test", "--repo", root, "--dir", &dir],
        );
        assert_eq!(code, 0, "{name}: {stdout}{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let (summary, tests) = lines.split_last().unwrap();
        assert!(
            tests.len() >= 2,
            "{name}: a failing and a passing input at least: {stdout}"
        );
        for line in tests {
            let prefix = format!("ok    {dir}/{name}_test.rego: data.main.test_");
            assert!(line.starts_with(&prefix), "{name}: {line}");
        }
        let n = tests.len();
        assert_eq!(
            *summary,
            format!("{n} tests: {n} passed, 0 failed"),
            "{name}"
        );
    }
}

#[test]
fn the_readme_shows_each_example_as_it_is() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    for (name, entry) in EXAMPLES {
        let rego = format!("```rego\n{}```\n", policy_text(name));
        assert!(
            readme.contains(&rego),
            "README.md does not show examples/policies/{name}/{name}.rego as it is: copy the file into its ```rego block"
        );
        let yaml = format!("```yaml\n{entry}```\n");
        assert!(
            readme.contains(&yaml),
            "README.md does not show {name}'s .cascade.yaml entry:\n{yaml}"
        );
    }
}

#[test]
fn the_first_example_denies_a_real_terraform_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (name, entry) = EXAMPLES[0];
    support::write_file(
        dir,
        "prod/app/main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"hook\" {\n  input = \"app\"\n}\n",
    );
    support::write_file(
        dir,
        &format!("policies/{name}/{name}.rego"),
        &policy_text(name),
    );
    commit_modules(dir, &format!("modules:\n  - path: prod/app\n{entry}"));

    let out = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--format", "json", "--changed", "prod/app/main.tf"],
    );
    let plan = support::stdout_json(&out);
    let set = &plan["units"][0]["policies"][0];
    assert_eq!(plan["units"][0]["path"], "prod/app", "{plan}");
    assert_eq!(set["set"], name, "{plan}");
    assert_eq!(set["blocking"], true, "{set}");
    assert_eq!(
        set["denies"][0]["message"],
        "prod/app: terraform_data.hook cannot be created (no terraform_data)",
        "{set}"
    );

    let md = support::run_in(
        env!("CARGO_BIN_EXE_cascade"),
        dir,
        &["plan", "--changed", "prod/app/main.tf"],
    );
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("Policies: blocking (1)"), "{md}");
    // The message as the comment shows it: inert, its Markdown escaped.
    assert!(
        md.contains(r"prod/app: terraform\_data.hook cannot be created \(no terraform\_data\)"),
        "{md}"
    );
}
