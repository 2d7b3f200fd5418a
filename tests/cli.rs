//! The command-line contract: `cascade graph` and `cascade affected`, their
//! JSON shapes and exit codes, run as a user runs them.

mod support;

use serde_json::Value as Json;
use std::path::Path;
use std::process::Command;

fn cascade(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn graph_json_contract() {
    let repo = support::fixture_repo("graph-dependencies");
    let (code, out, _) = cascade(
        &["graph", "--repo", "root", "--format", "json"],
        repo.path(),
    );
    assert_eq!(code, 0);
    let g = json(&out);
    let unit = &g["units"][0];
    assert_eq!(unit["path"], "backend-app");
    assert_eq!(
        unit["dependencies"],
        serde_json::json!(["mysql", "redis", "vpc"])
    );
    // Paths are relative to --repo; root.hcl lives one level up.
    assert!(
        unit["reads"]
            .as_array()
            .unwrap()
            .contains(&"../root.hcl".into()),
        "{unit}"
    );
    assert!(
        unit["reads"]
            .as_array()
            .unwrap()
            .contains(&"backend-app/terragrunt.hcl".into()),
        "{unit}"
    );
    assert_eq!(
        g["waves"],
        serde_json::json!([
            ["vpc"],
            ["mysql", "redis"],
            ["backend-app"],
            ["frontend-app"]
        ])
    );
    assert_eq!(
        g["critical_path"],
        serde_json::json!(["vpc", "mysql", "backend-app", "frontend-app"])
    );
    assert_eq!(g["errors"], serde_json::json!([]));
}

#[test]
fn graph_dot_matches_terragrunt_dag_graph() {
    let repo = support::fixture_repo("graph-dependencies");
    let (code, out, _) = cascade(
        &["graph", "--repo", "root", "--format", "dot", "--full"],
        repo.path(),
    );
    assert_eq!(code, 0);
    let expected = "digraph {\n\t\"backend-app\" ;\n\t\"backend-app\" -> \"mysql\";\n\t\"backend-app\" -> \"redis\";\n\t\"backend-app\" -> \"vpc\";\n\t\"frontend-app\" ;\n\t\"frontend-app\" -> \"backend-app\";\n\t\"frontend-app\" -> \"vpc\";\n\t\"mysql\" ;\n\t\"mysql\" -> \"vpc\";\n\t\"redis\" ;\n\t\"redis\" -> \"vpc\";\n\t\"vpc\" ;\n}\n";
    assert_eq!(out, expected);
    let (_, reduced, _) = cascade(&["graph", "--repo", "root", "--format", "dot"], repo.path());
    assert!(!reduced.contains("\"frontend-app\" -> \"vpc\""));
    let (_, mermaid, _) = cascade(
        &["graph", "--repo", "root", "--format", "mermaid"],
        repo.path(),
    );
    assert!(mermaid.starts_with("flowchart"));
}

#[test]
fn graph_errors_exit_one_and_still_print_json() {
    let repo = support::fixture_repo("missing-dependencies");
    let (code, out, _) = cascade(&["graph", "--format", "json"], repo.path());
    assert_eq!(code, 1);
    let g = json(&out);
    let err = &g["errors"][0];
    assert_eq!(err["kind"], "missing_dependency");
    assert_eq!(err["unit"], "main");
    assert_eq!(err["file"], "main/terragrunt.hcl");
    assert_eq!(err["line"], 2);
    let (code, text, _) = cascade(&["graph"], repo.path());
    assert_eq!(code, 1);
    assert!(
        text.contains("main/terragrunt.hcl:2: main depends on hl3-release"),
        "{text}"
    );
}

#[test]
fn cycle_is_an_error_naming_the_cycle() {
    let repo = support::fixture_repo("cycle");
    let (code, out, _) = cascade(
        &["graph", "--repo", "abcda", "--format", "json"],
        repo.path(),
    );
    assert_eq!(code, 1);
    let g = json(&out);
    assert_eq!(g["errors"][0]["kind"], "cycle");
    assert!(
        g["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("bar -> baz -> car -> foo -> bar")
    );
}

#[test]
fn affected_from_changed_files() {
    let repo = support::fixture_repo("graph-dependencies");
    let (code, out, _) = cascade(
        &[
            "affected",
            "--repo",
            "root",
            "--changed",
            "redis/main.tf",
            "--format",
            "json",
        ],
        repo.path(),
    );
    assert_eq!(code, 0);
    let a = json(&out);
    assert_eq!(a["changed"], serde_json::json!(["redis/main.tf"]));
    assert_eq!(
        a["units"],
        serde_json::json!([
            {"path": "backend-app", "reason": "depends on redis"},
            {"path": "frontend-app", "reason": "depends on backend-app"},
            {"path": "redis", "reason": "changed redis/main.tf"},
        ])
    );
    assert_eq!(
        a["waves"],
        serde_json::json!([["redis"], ["backend-app"], ["frontend-app"]])
    );
    let (_, text, _) = cascade(
        &["affected", "--repo", "root", "--changed", "../root.hcl"],
        repo.path(),
    );
    assert!(text.contains("affect 5 units"), "{text}");
}

#[test]
fn affected_from_git_with_renames_and_deleted_units() {
    let repo = support::fixture_repo("graph-dependencies");
    let dir = repo.path();
    support::git(dir, &["checkout", "-qb", "change"]);
    std::fs::write(dir.join("root/vpc/main.tf"), "# changed\n").unwrap();
    support::git(dir, &["mv", "root/mysql/main.tf", "root/mysql/db.tf"]);
    // frontend-app is deleted by the change: it is planned as a destroy.
    support::git(dir, &["rm", "-rq", "root/frontend-app"]);
    support::git(dir, &["commit", "-qam", "change"]);
    let (code, out, err) = cascade(
        &[
            "affected", "--repo", "root", "--base", "main", "--format", "json",
        ],
        dir,
    );
    assert_eq!(code, 0, "{err}");
    let a = json(&out);
    let reasons: Vec<(String, String)> = a["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap().to_string(),
                u["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        reasons.contains(&("frontend-app".into(), "deleted".into())),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("vpc".into(), "changed vpc/main.tf".into())),
        "{reasons:?}"
    );
    assert!(
        a["changed"]
            .as_array()
            .unwrap()
            .contains(&"mysql/db.tf".into())
    );
    assert!(
        a["changed"]
            .as_array()
            .unwrap()
            .contains(&"mysql/main.tf".into())
    );
    assert_eq!(a["destroy_waves"], serde_json::json!([["frontend-app"]]));
    assert_eq!(
        a["waves"],
        serde_json::json!([["vpc"], ["mysql", "redis"], ["backend-app"]])
    );
}

#[test]
fn bad_input_says_what_to_do() {
    let repo = support::fixture_repo("graph-dependencies");
    let (code, _, err) = cascade(&["graph", "--repo", "nowhere"], repo.path());
    assert_eq!(code, 2);
    assert!(err.contains("--repo"), "{err}");
    let (code, _, err) = cascade(&["affected", "--base", "no-such-branch"], repo.path());
    assert_eq!(code, 2);
    assert!(err.contains("no-such-branch"), "{err}");
    std::fs::write(repo.path().join(".cascade.yaml"), "enviroments: {}\n").unwrap();
    let (code, out, _) = cascade(&["graph", "--format", "json"], repo.path());
    assert_eq!(code, 1);
    let g = json(&out);
    assert_eq!(g["errors"][0]["kind"], "config");
    assert_eq!(g["errors"][0]["line"], 1);
}
