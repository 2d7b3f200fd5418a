//! `policies:` in `.cascade.yaml`: what a valid set turns into, the defaults, and every
//! refusal's message (one snapshot of them all).

use super::*;
use crate::config::{FILE_NAME, RepoConfig, TeamName};
use crate::problem::{Problem, ProblemKind};

/// The policy sets of `yaml`, which must be accepted.
fn sets(yaml: &str) -> Vec<PolicySet> {
    match RepoConfig::parse(yaml) {
        Ok(config) => config.policies,
        Err(problem) => panic!("refused: {problem}\n{yaml}"),
    }
}

/// The problem `yaml` is refused with: a `Config` problem at a line and column.
fn refusal(yaml: &str) -> Problem {
    let problem = match RepoConfig::parse(yaml) {
        Err(problem) => problem,
        Ok(config) => panic!("accepted: {yaml}\n{:?}", config.policies),
    };
    assert_eq!(problem.kind, ProblemKind::Config);
    assert_eq!(problem.file.as_deref(), Some(FILE_NAME));
    assert!(
        problem.line.is_some() && problem.column.is_some(),
        "no location: {problem}"
    );
    problem
}

/// A file with one policy set, `prod`, in `policies/prod`, whose other keys are `body`
/// (one key a line, written at the set's indentation).
fn one_set(body: &str) -> String {
    let mut yaml = String::from("policies:\n  - name: prod\n    path: policies/prod\n");
    for line in body.lines() {
        yaml.push_str("    ");
        yaml.push_str(line);
        yaml.push('\n');
    }
    yaml
}

#[test]
fn a_full_set_becomes_the_model() {
    let yaml = one_set(
        "enforcement: warn\nowners: {users: [\"@Alice\", alice, bob], teams: [acme/Security]}\n\
         namespaces: [terraform.aws, main, terraform.aws, _x.y_z]\ninput: plan",
    );
    assert_eq!(
        sets(&yaml),
        vec![PolicySet {
            name: "prod".into(),
            path: "policies/prod".into(),
            enforcement: Enforcement::Warn,
            owners: ApplyPermission {
                users: vec!["Alice".into(), "bob".into()],
                teams: vec![TeamName {
                    org: "acme".into(),
                    slug: "security".into()
                }],
            },
            namespaces: vec!["main".into(), "terraform.aws".into(), "_x.y_z".into()],
            scope: PolicyScope::Plan,
        }]
    );
}

#[test]
fn defaults_block_with_no_owners_only_main_and_each_unit() {
    let set = &sets("policies:\n  - {name: base, path: ./policies/}\n  - {name: all, path: .}\n");
    assert_eq!(set[0].name, "base");
    assert_eq!(set[0].path, "policies");
    assert_eq!(set[0].enforcement, Enforcement::Block);
    assert_eq!(set[0].owners, ApplyPermission::default());
    assert_eq!(set[0].namespaces, vec!["main".to_string()]);
    assert_eq!(
        set[0].scope,
        PolicyScope::Unit,
        "each unit's document by default"
    );
    assert_eq!(sets(&one_set("input: unit"))[0].scope, PolicyScope::Unit);
    assert_eq!(set[1].path, ".");
    assert!(RepoConfig::default().policies.is_empty());
    assert!(sets("policies:\n").is_empty());
    assert!(sets("policies: []\n").is_empty());
}

#[test]
fn the_most_sets_allowed_are_accepted() {
    let mut yaml = String::from("policies:\n");
    for i in 0..MAX_POLICY_SETS {
        yaml.push_str(&format!("  - {{name: p{i}, path: policies/p{i}}}\n"));
    }
    assert_eq!(sets(&yaml).len(), MAX_POLICY_SETS);
}

#[test]
fn package_names_are_identifiers_joined_by_dots() {
    for good in ["main", "a.b_c", "_x", "Terraform.AWS2"] {
        assert!(is_package_name(good), "{good}");
    }
    for bad in [
        "", "a.", ".a", "a..b", "1a", "a-b", "a b", "a[\"b\"]", "data/x",
    ] {
        assert!(!is_package_name(bad), "{bad}");
    }
}

#[test]
fn refusals_say_where_and_what_to_write() {
    let mut many_sets = String::from("policies:\n");
    for i in 0..=MAX_POLICY_SETS {
        many_sets.push_str(&format!("  - {{name: p{i}, path: p}}\n"));
    }
    let many_namespaces = one_set(&format!(
        "namespaces: [{}]",
        (0..=MAX_NAMESPACES)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let cases: Vec<(&str, String)> = vec![
        ("name not plain", one_set("").replace("prod", "Prod Safety")),
        (
            "name too long",
            one_set("").replace("name: prod", &format!("name: {}", "p".repeat(65))),
        ),
        ("name missing", "policies:\n  - path: policies\n".into()),
        ("path missing", "policies:\n  - name: prod\n".into()),
        (
            "name twice",
            "policies:\n  - {name: prod, path: a}\n  - {name: dev, path: b}\n  - {name: prod, path: c}\n"
                .into(),
        ),
        ("too many sets", many_sets),
        (
            "path leaves the repository",
            "policies:\n  - {name: prod, path: ../policies}\n".into(),
        ),
        (
            "path absolute",
            "policies:\n  - {name: prod, path: /etc/policies}\n".into(),
        ),
        (
            "path not plain",
            "policies:\n  - {name: prod, path: a//b}\n".into(),
        ),
        ("bad enforcement", one_set("enforcement: deny")),
        ("bad input", one_set("input: units")),
        ("bad namespace", one_set("namespaces: [terraform-aws]")),
        ("namespace not a list", one_set("namespaces: {a: b}")),
        ("too many namespaces", many_namespaces),
        ("unknown key", one_set("enforce: warn")),
        ("unknown owners key", one_set("owners: {user: [alice]}")),
        ("owners empty", one_set("owners: {users: []}")),
        ("owners not a mapping", one_set("owners: [alice]")),
        ("bad owner", one_set("owners: {users: [\"not a login\"]}")),
        ("bad team", one_set("owners: {teams: [security]}")),
        ("policies not a list", "policies: {prod: policies}\n".into()),
        ("set not a mapping", "policies: [policies/prod]\n".into()),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(label, yaml)| format!("{label}: {}", refusal(yaml)))
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}
