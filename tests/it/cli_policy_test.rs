//! `cascade policy test`: a policy directory's `*_test.rego` tests run without the bot,
//! one `ok` / `FAIL` line each and a summary; exit 0 when all pass, 1 when one fails,
//! 2 with a clear error when the directory is missing or a policy does not compile.

use crate::support;

use support::{cascade_in as cascade, write_file};

const POLICY: &str = r#"package main

deny contains msg if {
    some rc in input.resource_changes
    "delete" in rc.change.actions
    msg := sprintf("%s would be destroyed", [rc.address])
}
"#;

const PASSING: &str = r#"package main

test_a_destroy_is_denied if {
    deny["aws_db.main would be destroyed"] with input as {"resource_changes": [
        {"address": "aws_db.main", "change": {"actions": ["delete"]}}
    ]}
}

test_a_create_is_not if {
    count(deny) == 0 with input as {"resource_changes": [
        {"address": "aws_db.main", "change": {"actions": ["create"]}}
    ]}
}
"#;

const FAILING: &str = r#"package main

test_expects_no_denial_of_a_destroy if {
    count(deny) == 0 with input as {"resource_changes": [
        {"address": "aws_db.main", "change": {"actions": ["delete"]}}
    ]}
}
"#;

#[test]
fn passing_tests_print_ok_and_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    write_file(tmp.path(), "policies/main.rego", POLICY);
    write_file(tmp.path(), "policies/main_test.rego", PASSING);
    let repo = tmp.path().to_str().unwrap();
    let (code, stdout, stderr) = cascade(tmp.path(), &["policy", "test", "--repo", repo]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "ok    policies/main_test.rego: data.main.test_a_destroy_is_denied\n\
         ok    policies/main_test.rego: data.main.test_a_create_is_not\n\
         2 tests: 2 passed, 0 failed\n"
    );
}

#[test]
fn a_failing_test_prints_fail_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    write_file(tmp.path(), "rules/main.rego", POLICY);
    write_file(tmp.path(), "rules/main_test.rego", PASSING);
    write_file(tmp.path(), "rules/wrong_test.rego", FAILING);
    let (code, stdout, stderr) = cascade(tmp.path(), &["policy", "test", "--dir", "rules"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "ok    rules/main_test.rego: data.main.test_a_destroy_is_denied\n\
         ok    rules/main_test.rego: data.main.test_a_create_is_not\n\
         FAIL  rules/wrong_test.rego: data.main.test_expects_no_denial_of_a_destroy\n\
         3 tests: 2 passed, 1 failed\n"
    );
}

#[test]
fn a_missing_directory_or_a_broken_policy_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = cascade(tmp.path(), &["policy", "test"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("the policy directory `policies` does not exist")
            && stderr.contains("pass the policy directory with --dir PATH"),
        "{stderr}"
    );

    write_file(
        tmp.path(),
        "policies/main.rego",
        "package main\n\ndeny contains x if {\n",
    );
    let (code, _, stderr) = cascade(tmp.path(), &["policy", "test"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("policy set `policies` does not compile")
            && stderr.contains("policies/main.rego:"),
        "{stderr}"
    );

    write_file(
        tmp.path(),
        "policies/main.rego",
        "package main\n\nnow := time.now_ns()\n",
    );
    let (code, _, stderr) = cascade(tmp.path(), &["policy", "test"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("policies/main.rego:3 calls `time.now_ns`, which is not available")
            && stderr.contains("use `input.now`"),
        "{stderr}"
    );
}
