//! The engine's behaviour on small policies: conftest's rules and shapes, refusals
//! (impure builtins, unsafe files), limits and determinism.

use super::*;
use serde_json::json;
use std::time::Instant;

fn file(path: &str, text: &str) -> PolicyFile {
    PolicyFile {
        path: path.to_string(),
        text: text.to_string(),
    }
}

fn evaluator(text: &str) -> Evaluator {
    Evaluator::new("test", &[file("policies/main.rego", text)], &[]).unwrap()
}

fn messages(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| format!("{}: {}", f.rule, f.message))
        .collect()
}

#[test]
fn deny_violation_and_warn_in_main() {
    let eval = evaluator(
        r#"package main
deny contains msg if { input.kind == "destroy"; msg := sprintf("%s is destroyed", [input.name]) }
violation contains {"msg": "no owner tag", "details": 1} if { not input.tags.owner }
warn contains "large change" if { input.count > 10 }
"#,
    );
    let findings = eval
        .evaluate_blocking(&json!({"kind": "destroy", "name": "db", "tags": {}, "count": 11}))
        .unwrap();
    assert_eq!(
        messages(&findings.deny),
        [
            "data.main.deny: db is destroyed",
            "data.main.violation: no owner tag"
        ]
    );
    assert_eq!(messages(&findings.warn), ["data.main.warn: large change"]);
    let clean = eval
        .evaluate_blocking(&json!({"kind": "create", "tags": {"owner": "a"}, "count": 1}))
        .unwrap();
    assert_eq!(clean, Findings::default());
}

#[test]
fn namespaces_are_read_besides_main() {
    let files = [
        file(
            "p/a.rego",
            "package main\ndeny contains \"from main\" if { true }\n",
        ),
        file(
            "p/b.rego",
            "package aws.tags\ndeny contains \"from aws.tags\" if { true }\nwarn contains \"w\" if { true }\n",
        ),
        file(
            "p/c.rego",
            "package other\ndeny contains \"never read\" if { true }\n",
        ),
    ];
    let eval = Evaluator::new("s", &files, &["aws.tags".to_string()]).unwrap();
    let findings = eval.evaluate_blocking(&json!({})).unwrap();
    assert_eq!(
        messages(&findings.deny),
        [
            "data.aws.tags.deny: from aws.tags",
            "data.main.deny: from main"
        ]
    );
    assert_eq!(messages(&findings.warn), ["data.aws.tags.warn: w"]);
    let err = Evaluator::new("s", &files, &["bad-name".to_string()]).unwrap_err();
    assert!(err.to_string().contains("namespace `bad-name`"), "{err}");
}

#[test]
fn messages_come_from_strings_objects_and_booleans() {
    let eval = evaluator(
        r#"package main
deny contains {"msg": "with msg"} if { true }
deny contains {"resource": "x"} if { true }
deny contains "with msg" if { true }
warn := true
"#,
    );
    let findings = eval.evaluate_blocking(&json!({})).unwrap();
    // Repeated messages are kept once; an object without `msg` is shown as JSON.
    assert_eq!(
        messages(&findings.deny),
        [
            r#"data.main.deny: with msg"#,
            r#"data.main.deny: {"resource":"x"}"#
        ]
    );
    assert_eq!(
        messages(&findings.warn),
        ["data.main.warn: data.main.warn is true"]
    );
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let err = Evaluator::new(
        "s",
        &[file(
            "policies/bad.rego",
            "package main\n\ndeny contains msg if {\n",
        )],
        &[],
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PolicyError::Parse { .. }), "{text}");
    assert!(text.contains("policies/bad.rego:"), "{text}");
}

#[test]
fn impure_builtins_are_refused_at_load() {
    for builtin in IMPURE_BUILTINS {
        let text = format!(
            "package main\n\n# {builtin}() in a comment is no call\ndeny contains \"x\" if {{ {builtin}(\"a\") }}\n"
        );
        let err = Evaluator::new("s", &[file("p/impure.rego", &text)], &[]).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, PolicyError::ImpureBuiltin { line: 4, .. }),
            "{builtin}: {message}"
        );
        assert!(message.contains(&format!("`{builtin}`")), "{message}");
        assert!(message.contains("p/impure.rego:4"), "{message}");
        assert!(message.contains("input.now"), "{message}");
    }
    // A name in a string, or a rule of the same last name, is no call.
    evaluator("package main\nsend := \"http.send(\"\ndeny contains send if { false }\n");
}

#[test]
fn impure_builtins_fail_at_evaluation_too() {
    // The second lock, should a call slip past the scan: regorus's own engine, the
    // policy added without `Evaluator::new`'s scan, then the guards.
    for (call, name) in [
        ("time.now_ns()", "time.now_ns"),
        ("rand.intn(\"a\", 9)", "rand.intn"),
    ] {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("p.rego".into(), format!("package main\nx := {call}\n"))
            .unwrap();
        purity::install_guards(&mut engine).unwrap();
        let err = engine.eval_rule("data.main.x".into()).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains(&format!("`{name}` is not available")),
            "{text}"
        );
        assert!(text.contains("input.now"), "{text}");
    }
}

#[test]
fn a_loop_is_stopped_at_the_time_limit() {
    let eval = evaluator(
        r#"package main
deny contains "never" if {
    xs := [x | some i in numbers.range(1, 1000000); x := concat("", [sprintf("%d", [i]), "abcdefgh"])]
    ys := {y | some a in xs; some b in xs; y := concat("", [a, b])}
    count(ys) < 0
}
"#,
    );
    let start = Instant::now();
    let err = eval.evaluate_blocking(&json!({})).unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(
            err,
            PolicyError::Limit {
                what: LimitKind::Time(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        took < limits::EVALUATION_TIME + std::time::Duration::from_secs(1),
        "{took:?}"
    );
    assert!(
        err.to_string().contains("evaluation time limit (2000 ms"),
        "{err}"
    );
}

#[test]
fn a_huge_range_is_refused_before_it_is_allocated() {
    let eval =
        evaluator("package main\ndeny contains \"x\" if { count(numbers.range(0, 1e9)) > 0 }\n");
    let err = eval.evaluate_blocking(&json!({})).unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::Limit {
                what: LimitKind::Range,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("range limit"), "{err}");
    let small = evaluator(
        "package main\ndeny contains sprintf(\"%v\", [numbers.range(3, 1)]) if { true }\ndeny contains sprintf(\"%v\", [numbers.range_step(0, 10, 4)]) if { true }\n",
    );
    assert_eq!(
        messages(&small.evaluate_blocking(&json!({})).unwrap().deny),
        ["data.main.deny: [0, 4, 8]", "data.main.deny: [3, 2, 1]"]
    );
}

#[test]
fn the_same_input_gives_the_same_findings() {
    let eval = evaluator(
        r#"package main
deny contains sprintf("%s is destroyed", [rc.address]) if {
    some rc in input.resource_changes
    "delete" in rc.change.actions
}
"#,
    );
    let changes: Vec<_> = (0..50)
        .rev()
        .map(|i| json!({"address": format!("r{i:02}"), "change": {"actions": ["delete"]}}))
        .collect();
    let input = json!({"resource_changes": changes});
    let first = eval.evaluate_blocking(&input).unwrap();
    assert_eq!(first.deny.len(), 50);
    assert_eq!(first.deny[0].message, "r00 is destroyed");
    for _ in 0..5 {
        assert_eq!(eval.evaluate_blocking(&input).unwrap(), first);
    }
}

#[tokio::test]
async fn evaluate_runs_off_the_runtime() {
    let eval = std::sync::Arc::new(evaluator(
        "package main\nwarn contains input.x if { true }\n",
    ));
    let findings = eval
        .evaluate(std::sync::Arc::new(json!({"x": "hi"})))
        .await
        .unwrap();
    assert_eq!(messages(&findings.warn), ["data.main.warn: hi"]);
}

#[test]
fn load_set_reads_rego_files_in_order() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("policies/sub");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(root.path().join("policies/b.rego"), "package main\n").unwrap();
    std::fs::write(dir.join("a.rego"), "package main\n").unwrap();
    std::fs::write(root.path().join("policies/a_test.rego"), "package main\n").unwrap();
    std::fs::write(root.path().join("policies/README.md"), "not rego").unwrap();
    let files = load_set(root.path(), "policies").unwrap();
    let paths: Vec<_> = files
        .iter()
        .map(|f| (f.path.as_str(), f.is_test()))
        .collect();
    assert_eq!(
        paths,
        [
            ("policies/a_test.rego", true),
            ("policies/b.rego", false),
            ("policies/sub/a.rego", false)
        ]
    );
}

#[test]
fn load_set_refuses_links_escapes_and_oversize() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("policies");
    std::fs::create_dir_all(&dir).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.rego"), "package main\n").unwrap();

    for rel in ["../policies", "/etc", "policies/../..", ""] {
        let err = load_set(root.path(), rel).unwrap_err();
        assert!(err.to_string().contains("without `..`"), "{rel}: {err}");
    }
    let err = load_set(root.path(), "missing").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the policy directory `missing` does not exist"
    );

    std::os::unix::fs::symlink(outside.path().join("x.rego"), dir.join("x.rego")).unwrap();
    let err = load_set(root.path(), "policies").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the policy file policies/x.rego is a symlink; cascade follows none"
    );
    std::fs::remove_file(dir.join("x.rego")).unwrap();

    std::os::unix::fs::symlink(outside.path(), root.path().join("linked")).unwrap();
    let err = load_set(root.path(), "linked").unwrap_err();
    assert!(err.to_string().contains("linked is a symlink"), "{err}");

    let big = "#".repeat(limits::MAX_POLICY_FILE_BYTES as usize + 1);
    std::fs::write(dir.join("big.rego"), big).unwrap();
    let err = load_set(root.path(), "policies").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the policy file policies/big.rego is larger than 256 KiB"
    );
    std::fs::remove_file(dir.join("big.rego")).unwrap();

    for i in 0..=limits::MAX_POLICY_FILES {
        std::fs::write(dir.join(format!("p{i:03}.rego")), "package main\n").unwrap();
    }
    let err = load_set(root.path(), "policies").unwrap_err();
    assert!(
        err.to_string().contains("more than 256 .rego files"),
        "{err}"
    );
}

#[test]
fn tests_pass_fail_and_error_by_name() {
    let files = [
        file(
            "p/main.rego",
            "package main\ndeny contains \"destroy\" if { input.destroy }\n",
        ),
        file(
            "p/main_test.rego",
            r#"package main
test_denies_a_destroy if { deny["destroy"] with input as {"destroy": true} }
test_wrongly_expects_nothing if { count(deny) == 0 with input as {"destroy": true} }
test_loops if { count(numbers.range(0, 1e9)) > 0 }
"#,
        ),
    ];
    let report = run_tests("s", &files).unwrap();
    let got: Vec<_> = report
        .results
        .iter()
        .map(|r| (r.file.as_str(), r.name.as_str(), r.outcome.clone()))
        .collect();
    assert_eq!(
        got[0],
        (
            "p/main_test.rego",
            "data.main.test_denies_a_destroy",
            TestOutcome::Pass
        )
    );
    assert_eq!(
        got[1],
        (
            "p/main_test.rego",
            "data.main.test_wrongly_expects_nothing",
            TestOutcome::Fail
        )
    );
    assert!(
        matches!(&got[2].2, TestOutcome::Error(m) if m.contains("range limit")),
        "{:?}",
        got[2]
    );
    assert_eq!(report.passed(), 1);
    assert!(!report.all_passed());
}

#[test]
fn prefixed_rules_are_read_as_conftest_reads_them() {
    let files = [
        file(
            "p/main.rego",
            "package main\nimport rego.v1\ndeny_public_bucket contains \"public\" if { input.public }\nwarn_big contains \"big\" if { input.size > 10 }\ndenyish contains \"not a deny\" if { true }\ndeny_ := \"not one either\"\nviolation_tags contains {\"msg\": \"no tags\"} if { not input.tags }\n",
        ),
        file(
            "p/aws.rego",
            "package terraform.aws\nimport rego.v1\ndeny_unencrypted contains \"unencrypted\" if { input.public }\n",
        ),
        file(
            "p/other.rego",
            "package other\nimport rego.v1\ndeny_elsewhere contains \"not watched\" if { true }\n",
        ),
    ];
    let eval = Evaluator::new("test", &files, &["terraform.aws".to_string()]).unwrap();
    let found = eval
        .evaluate_blocking(&json!({"public": true, "size": 11}))
        .unwrap();
    assert_eq!(
        messages(&found.deny),
        [
            "data.main.deny_public_bucket: public",
            "data.main.violation_tags: no tags",
            "data.terraform.aws.deny_unencrypted: unencrypted",
        ]
    );
    assert_eq!(messages(&found.warn), ["data.main.warn_big: big"]);
}
