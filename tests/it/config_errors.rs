//! `.cascade.yaml`: what a valid file turns into, every message a user can get for an
//! invalid one (as insta snapshots of `file:line:column: message`), and the shipped
//! JSON schema staying in step with the code.

use cascade::config::{
    ApplyPermission, ApplyRequirement, ApprovalRule, Environment, FILE_NAME, ModuleUnit,
    RepoConfig, TeamName,
};
use cascade::problem::{Problem, ProblemKind};
use cascade::unit::{Tool, UnitPath};
use std::collections::BTreeMap;
use std::path::Path;

const FULL_EXAMPLE: &str = r#"# .cascade.yaml
environments:
  dev: live/dev
  prod:
    path: live/prod/
    executor: terraform
implicit_deps:
  live/prod/app: [live/dev/app, ./live/dev/db]
ignore:
  - "sandbox/**"
  - "**/experimental"
modules:
  - path: global/dns
    depends_on: [live/prod/vpc]
  - path: global/iam
    executor: tofu
"#;

fn unit(path: &str) -> UnitPath {
    UnitPath::new(path)
}

/// The problem `yaml` is rejected with; always a `Config` problem in `.cascade.yaml`.
fn rejection(yaml: &str) -> Problem {
    let problem = RepoConfig::parse(yaml).expect_err("this configuration should be rejected");
    assert_eq!(problem.kind, ProblemKind::Config);
    assert_eq!(problem.file.as_deref(), Some(FILE_NAME));
    assert!(
        problem.line.is_some() && problem.column.is_some(),
        "no location: {problem}"
    );
    problem
}

/// Snapshots the message for `yaml`, with the input as the snapshot's description.
macro_rules! assert_rejected {
    ($name:literal, $yaml:expr) => {{
        let yaml: &str = $yaml;
        insta::with_settings!({ description => yaml, omit_expression => true }, {
            insta::assert_snapshot!($name, rejection(yaml).to_string());
        });
    }};
}

fn at(problem: &Problem) -> (u32, u32) {
    (problem.line.unwrap(), problem.column.unwrap())
}

#[test]
fn full_example_becomes_the_config() {
    let config = RepoConfig::parse(FULL_EXAMPLE).unwrap();
    assert_eq!(
        config.environments,
        vec![
            Environment {
                name: "dev".into(),
                path: "live/dev".into(),
                executor: None
            },
            Environment {
                name: "prod".into(),
                path: "live/prod".into(),
                executor: Some(Tool::Terraform),
            },
        ]
    );
    assert_eq!(
        config.implicit_deps,
        BTreeMap::from([(
            unit("live/prod/app"),
            vec![unit("live/dev/app"), unit("live/dev/db")]
        )])
    );
    assert_eq!(config.ignore, vec!["sandbox/**", "**/experimental"]);
    assert_eq!(
        config.modules,
        vec![
            ModuleUnit {
                path: unit("global/dns"),
                depends_on: vec![unit("live/prod/vpc")],
                executor: Tool::Terraform,
            },
            ModuleUnit {
                path: unit("global/iam"),
                depends_on: vec![],
                executor: Tool::Tofu
            },
        ]
    );
    assert!(config.is_ignored("sandbox/a/terragrunt.hcl"));
    assert!(config.is_ignored("live/dev/experimental/main.tf"));
    assert_eq!(
        config.executor_for(&unit("live/prod/app")),
        Some(Tool::Terraform)
    );
    assert_eq!(config.executor_for(&unit("global/iam")), Some(Tool::Tofu));
}

#[test]
fn empty_files_and_empty_keys_are_the_default() {
    for yaml in [
        "",
        "# nothing yet\n",
        "environments:\nimplicit_deps:\nignore:\nmodules:\n",
    ] {
        let config = RepoConfig::parse(yaml).unwrap();
        assert!(config.environments.is_empty() && config.implicit_deps.is_empty());
        assert!(config.ignore.is_empty() && config.modules.is_empty());
    }
}

#[test]
fn load_reads_the_file_at_the_repo_root() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join(FILE_NAME), FULL_EXAMPLE).unwrap();
    let config = RepoConfig::load(repo.path()).unwrap();
    assert_eq!(config.environments.len(), 2);
}

#[test]
fn load_without_a_file_is_the_default() {
    let repo = tempfile::tempdir().unwrap();
    let config = RepoConfig::load(repo.path()).unwrap();
    assert!(config.environments.is_empty() && config.modules.is_empty());
}

#[test]
fn load_reports_parse_errors_with_their_location() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join(FILE_NAME),
        "ignore: [a]\nenviroments: {}\n",
    )
    .unwrap();
    let problem = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(at(&problem), (2, 1));
}

#[test]
fn load_reports_an_unreadable_file() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(FILE_NAME)).unwrap();
    let problem = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(problem.kind, ProblemKind::Config);
    assert!(
        problem
            .to_string()
            .starts_with(".cascade.yaml: cannot read .cascade.yaml: "),
        "{problem}"
    );
}

#[test]
fn load_reports_a_file_that_is_not_utf8() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join(FILE_NAME), b"ignore: [\xff]\n").unwrap();
    let problem = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(
        problem.to_string(),
        ".cascade.yaml: .cascade.yaml is not UTF-8 text; save it as UTF-8"
    );
}

// Locations: serde-saphyr's own, pinned so an upgrade cannot quietly move them.

#[test]
fn unknown_keys_point_at_the_key() {
    assert_eq!(
        at(&rejection("ignore: []\nenviroments:\n  dev: live/dev\n")),
        (2, 1)
    );
    assert_eq!(
        at(&rejection("modules:\n  - path: a\n    depend_on: [b]\n")),
        (3, 5)
    );
    assert_eq!(
        at(&rejection(
            "environments:\n  prod:\n    path: p\n    executr: tofu\n"
        )),
        (4, 5)
    );
}

#[test]
fn bad_executors_point_at_the_value() {
    assert_eq!(
        at(&rejection(
            "modules:\n  - path: a\n    executor: terrafrom\n"
        )),
        (3, 15)
    );
    assert_eq!(
        at(&rejection(
            "environments:\n  prod: {path: p, executor: tf}\n"
        )),
        (2, 29)
    );
}

#[test]
fn value_checks_point_at_the_value() {
    assert_eq!(at(&rejection("environments:\n  dev: /live/dev\n")), (2, 8));
    assert_eq!(
        at(&rejection("environments:\n  dev:\n    path: ../dev\n")),
        (3, 11)
    );
    assert_eq!(
        at(&rejection("ignore:\n  - ok/**\n  - \"bad/[\"\n")),
        (3, 5)
    );
    assert_eq!(at(&rejection("implicit_deps:\n  a: [b, /c]\n")), (2, 10));
}

// Messages, one snapshot each.

#[test]
fn unknown_top_level_key() {
    assert_rejected!(
        "config_unknown_top_level_key",
        "enviroments:\n  dev: live/dev\n"
    );
}

#[test]
fn unknown_module_key() {
    assert_rejected!(
        "config_unknown_module_key",
        "modules:\n  - path: global/dns\n    depend_on: [live/prod/vpc]\n"
    );
}

#[test]
fn unknown_environment_key() {
    assert_rejected!(
        "config_unknown_environment_key",
        "environments:\n  prod:\n    path: live/prod\n    executr: tofu\n"
    );
}

#[test]
fn bad_executor() {
    assert_rejected!(
        "config_bad_executor",
        "environments:\n  prod:\n    path: live/prod\n    executor: terrafrom\n"
    );
}

#[test]
fn bad_glob() {
    assert_rejected!(
        "config_bad_glob",
        "ignore:\n  - \"sandbox/**\"\n  - \"live/[dev\"\n"
    );
}

#[test]
fn glob_with_leading_slash() {
    assert_rejected!("config_glob_leading_slash", "ignore: [/sandbox]\n");
}

#[test]
fn empty_glob() {
    assert_rejected!("config_empty_glob", "ignore: [\"\"]\n");
}

#[test]
fn absolute_path() {
    assert_rejected!(
        "config_absolute_path",
        "environments:\n  dev: /srv/live/dev\n"
    );
}

#[test]
fn windows_absolute_path() {
    assert_rejected!(
        "config_windows_absolute_path",
        "modules:\n  - path: 'C:\\infra\\dns'\n"
    );
}

/// A backslash is part of a directory's name on Linux (as git keeps it), so
/// `dev\\dns` is refused rather than read as `dev/dns` or as one odd name.
#[test]
fn backslash_path() {
    assert_rejected!(
        "config_backslash_path",
        "implicit_deps:\n  'live\\prod\\app': [live/dev/app]\n"
    );
}

#[test]
fn parent_dir_path() {
    assert_rejected!(
        "config_parent_dir_path",
        "modules:\n  - path: global/dns\n    depends_on: [../other-repo/vpc]\n"
    );
}

#[test]
fn path_that_is_not_plain() {
    assert_rejected!(
        "config_path_not_plain",
        "implicit_deps:\n  live//app: [live/./db]\n"
    );
}

#[test]
fn empty_path() {
    assert_rejected!("config_empty_path", "environments:\n  dev: ''\n");
}

#[test]
fn duplicate_environment_name() {
    assert_rejected!(
        "config_duplicate_environment_name",
        "environments:\n  dev: live/dev\n  dev: live/dev2\n"
    );
}

#[test]
fn duplicate_environment_path() {
    assert_rejected!(
        "config_duplicate_environment_path",
        "environments:\n  dev: live/dev\n  staging:\n    path: ./live/dev/\n"
    );
}

#[test]
fn duplicate_module() {
    assert_rejected!(
        "config_duplicate_module",
        "modules:\n  - path: global/dns\n  - path: global/iam\n  - path: global/dns/\n"
    );
}

#[test]
fn module_in_implicit_deps_is_fine() {
    let yaml = "implicit_deps:\n  global/dns: [live/vpc]\nmodules:\n  - path: global/dns\n";
    let config = RepoConfig::parse(yaml).unwrap();
    assert_eq!(
        config.implicit_deps[&unit("global/dns")],
        vec![unit("live/vpc")]
    );
}

#[test]
fn same_unit_twice_in_implicit_deps() {
    assert_rejected!(
        "config_duplicate_implicit_deps_unit",
        "implicit_deps:\n  live/app: [live/db]\n  live/app/: [live/vpc]\n"
    );
}

#[test]
fn self_dependency() {
    assert_rejected!(
        "config_self_dependency",
        "implicit_deps:\n  live/app: [live/app]\n"
    );
}

#[test]
fn wrong_type_ignore() {
    assert_rejected!("config_wrong_type_ignore", "ignore: 3\n");
}

#[test]
fn wrong_type_environment() {
    assert_rejected!(
        "config_wrong_type_environment",
        "environments:\n  dev: [live/dev]\n"
    );
}

#[test]
fn wrong_type_environments() {
    assert_rejected!("config_wrong_type_environments", "environments: live/dev\n");
}

#[test]
fn wrong_type_implicit_deps() {
    assert_rejected!(
        "config_wrong_type_implicit_deps",
        "implicit_deps:\n  live/app: live/db\n"
    );
}

#[test]
fn wrong_type_module() {
    assert_rejected!("config_wrong_type_module", "modules:\n  - global/dns\n");
}

#[test]
fn wrong_type_depends_on() {
    assert_rejected!(
        "config_wrong_type_depends_on",
        "modules:\n  - path: global/dns\n    depends_on: live/vpc\n"
    );
}

#[test]
fn list_where_a_path_belongs() {
    assert_rejected!("config_list_for_path", "modules:\n  - path: [global/dns]\n");
}

#[test]
fn missing_module_path() {
    assert_rejected!(
        "config_missing_module_path",
        "modules:\n  - depends_on: [live/vpc]\n"
    );
}

#[test]
fn not_a_mapping() {
    assert_rejected!("config_not_a_mapping", "- live/dev\n- live/prod\n");
}

#[test]
fn malformed_yaml() {
    assert_rejected!(
        "config_malformed_yaml",
        "environments:\n  dev: live/dev\n prod: live/prod\n"
    );
}

#[test]
fn unclosed_quote() {
    assert_rejected!("config_unclosed_quote", "ignore:\n  - \"sandbox/**\n");
}

#[test]
fn plan_ttl_is_read_from_seconds_to_days() {
    let ttl = |yaml: &str| RepoConfig::parse(yaml).unwrap().plan_ttl.get();
    let days = |n: u64| std::time::Duration::from_secs(n * 24 * 3600);
    assert_eq!(RepoConfig::default().plan_ttl.get(), days(7));
    assert_eq!(ttl(""), days(7));
    assert_eq!(ttl("plan_ttl: 3d\n"), days(3));
    assert_eq!(ttl("plan_ttl: 365d\n"), days(365));
    assert_eq!(ttl("plan_ttl: 12h\n"), days(1) / 2);
    assert_eq!(ttl("plan_ttl: 1s\n"), std::time::Duration::from_secs(1));
}

#[test]
fn plan_ttl_outside_a_second_to_a_year() {
    assert_rejected!("config_plan_ttl_too_short", "plan_ttl: 500ms\n");
    assert_eq!(at(&rejection("plan_ttl: 366d\n")), (1, 11));
    assert_eq!(at(&rejection("plan_ttl: 0s\n")), (1, 11));
    assert_eq!(at(&rejection("plan_ttl: 7 days\n")), (1, 11));
    assert_eq!(at(&rejection("plan_ttl: d\n")), (1, 11));
}

#[test]
fn commands_turn_on_import_and_state_rm_and_nothing_else() {
    use cascade::config::OptInCommand;
    let commands = |yaml: &str| RepoConfig::parse(yaml).unwrap().commands;
    assert_eq!(RepoConfig::default().commands, []);
    assert_eq!(commands(""), []);
    assert_eq!(
        commands("commands: [import, state_rm]\n"),
        [OptInCommand::Import, OptInCommand::StateRm]
    );
    assert_rejected!(
        "config_unknown_command",
        "autoplan: true\ncommands: [import, destroy]\n"
    );
    assert_eq!(at(&rejection("commands:\n  - state-rm\n")), (2, 5));
}

// The schema shipped for editors.

#[test]
fn schema_file_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/cascade.schema.json");
    let generated = format!("{}\n", RepoConfig::json_schema());
    if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == generated,
        "schema/cascade.schema.json is out of date with RepoConfig::json_schema(); \
         run `cargo test` with UPDATE_SCHEMA=1 to regenerate it"
    );
}

#[test]
fn schema_describes_every_key_both_environment_forms_and_workflows() {
    let schema: serde_json::Value = serde_json::from_str(&RepoConfig::json_schema()).unwrap();
    let properties = schema["properties"].as_object().unwrap();
    let mut keys: Vec<&str> = properties.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "apply",
            "apply_permission",
            "apply_requirements",
            "approvals",
            "autoplan",
            "branches",
            "commands",
            "drafts",
            "drift",
            "environments",
            "ignore",
            "implicit_deps",
            "modules",
            "plan_ttl",
            "policies",
            "prevent_destroy",
            "retries",
            "workflows"
        ]
    );
    for (key, property) in properties {
        assert!(
            property["description"].is_string(),
            "`{key}` has no description"
        );
    }
    assert_eq!(schema["additionalProperties"], false);

    let defs = &schema["$defs"];
    let entry = &defs["EnvironmentEntry"]["anyOf"];
    assert_eq!(entry[0]["type"], "string");
    assert_eq!(entry[1]["$ref"], "#/$defs/EnvironmentTable");
    for def in ["EnvironmentTable", "ModuleEntry", "ApplyPermissionEntry"] {
        assert_eq!(defs[def]["additionalProperties"], false, "{def}");
        for (key, property) in defs[def]["properties"].as_object().unwrap() {
            assert!(
                property["description"].is_string(),
                "`{def}.{key}` has no description"
            );
        }
    }
    for def in [
        "WorkflowEntry",
        "PhaseEntry",
        "ApplyEntry",
        "VarEntry",
        "StepEntry",
        "RunEntry",
    ] {
        assert_eq!(defs[def]["additionalProperties"], false, "{def}");
        for (key, property) in defs[def]["properties"].as_object().unwrap() {
            assert!(
                property["description"].is_string(),
                "`{def}.{key}` has no description"
            );
        }
    }
    let words = |def: &str| -> Vec<String> {
        defs[def]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variant| variant["const"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(words("When"), ["success", "failure", "always"]);
    assert_eq!(words("VisibleOn"), ["never", "failure", "always"]);
    assert_eq!(words("Format"), ["code", "markdown"]);
    assert_eq!(words("Stdin"), ["none", "plan_json"]);
    let executors: Vec<&str> = defs["Executor"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| variant["const"].as_str().unwrap())
        .collect();
    assert_eq!(executors, ["terragrunt", "tofu", "terraform"]);
}

#[test]
fn bot_settings_default_and_parse() {
    let default = RepoConfig::parse("").unwrap();
    assert!(!default.drafts && default.autoplan);
    assert_eq!(
        default.apply_requirements,
        [ApplyRequirement::Approved, ApplyRequirement::Mergeable]
    );
    let c = RepoConfig::parse("drafts: true\nautoplan: false\napply_requirements: [mergeable]\n")
        .unwrap();
    assert!(c.drafts && !c.autoplan);
    assert_eq!(c.apply_requirements, [ApplyRequirement::Mergeable]);
    assert!(
        RepoConfig::parse("apply_requirements: []\n")
            .unwrap()
            .apply_requirements
            .is_empty()
    );
    let err = RepoConfig::parse("apply_requirements: [approvd]\n").unwrap_err();
    assert_eq!(err.line, Some(1), "{err}");
}

#[test]
fn bot_settings_after_other_keys() {
    let c = RepoConfig::parse("environments:\n  dev:\n    path: dev\n    executor: terraform\ndrafts: true\napply_requirements: [mergeable]\n").unwrap();
    assert!(c.drafts);
    assert_eq!(c.apply_requirements, [ApplyRequirement::Mergeable]);
}

/// A value of any length is quoted by its first 80 characters, so a message stays short
/// whatever the file holds (found by the `cascade_yaml` fuzz target: messages quoted whole
/// values, kilobytes long).
#[test]
fn long_values_are_shortened_in_messages() {
    assert_rejected!(
        "config_long_value_shortened",
        &format!("environments:\n  dev: /{}\n", "k".repeat(120))
    );
    let long = "k".repeat(3000);
    let cases = [
        format!("{long}: 1\n"),
        format!("environments:\n  {long}: a\n  b: a\n"),
        format!("ignore: ['{long}[']\n"),
        format!("ignore: ['/{long}']\n"),
        format!("modules:\n  - path: a\n    executor: {long}\n"),
        format!("modules:\n  - path: {long}\n  - path: {long}\n"),
        format!("implicit_deps:\n  {long}: [{long}]\n"),
        format!("implicit_deps:\n  a/{long}: [b]\n  a/{long}/: [c]\n"),
        format!("implicit_deps:\n  a: [./a/{long}/../]\n"),
        format!("apply_requirements: [{long}]\n"),
        format!("drafts: {long}\n"),
        format!("environments:\n  dev: \"{long}\n"),
    ];
    for yaml in &cases {
        let problem = rejection(yaml);
        let chars = problem.message.chars().count();
        assert!(chars < 400, "{chars} characters: {problem}");
    }
}

#[test]
fn who_may_apply_and_which_approvals_count() {
    let default = RepoConfig::parse("").unwrap();
    assert_eq!(default.apply_permission, None);
    assert_eq!(default.approvals, ApprovalRule::Head);
    let c = RepoConfig::parse(
        "apply_permission:\n  users: [alice, \"@Bob\", alice]\n  teams: [acme/Platform, acme/sre]\napprovals: any_head\n",
    )
    .unwrap();
    assert_eq!(
        c.apply_permission,
        Some(ApplyPermission {
            users: vec!["alice".into(), "Bob".into()],
            teams: vec![
                TeamName {
                    org: "acme".into(),
                    slug: "platform".into()
                },
                TeamName {
                    org: "acme".into(),
                    slug: "sre".into()
                }
            ],
        })
    );
    assert!(c.apply_permission.as_ref().unwrap().lists_user("bob"));
    assert_eq!(c.approvals, ApprovalRule::AnyHead);
    let teams_only = RepoConfig::parse("apply_permission: {teams: [acme/platform]}\n").unwrap();
    assert!(teams_only.apply_permission.unwrap().users.is_empty());
}

#[test]
fn gitlab_usernames_and_nested_groups_may_apply_but_not_paths_that_escape() {
    let c = RepoConfig::parse(
        "apply_permission:\n  users: [john.doe, jane_smith]\n  teams: [acme/platform/sre_team, my.org/infra]\n",
    )
    .unwrap();
    let allowed = c.apply_permission.unwrap();
    assert_eq!(allowed.users, ["john.doe", "jane_smith"]);
    let teams: Vec<String> = allowed.teams.iter().map(ToString::to_string).collect();
    assert_eq!(teams, ["acme/platform/sre_team", "my.org/infra"]);
    let deep = format!("apply_permission:\n  teams: [{}]\n", ["g"; 22].join("/"));
    for yaml in [
        "apply_permission:\n  teams: [acme/../x]\n",
        "apply_permission:\n  teams: [acme/platform/]\n",
        "apply_permission:\n  teams: [acme//sre]\n",
        "apply_permission:\n  users: [.hidden]\n",
        "apply_permission:\n  users: [-dash]\n",
        "apply_permission:\n  users: [\"a/b\"]\n",
        &deep,
    ] {
        assert!(RepoConfig::parse(yaml).is_err(), "{yaml}");
    }
}

#[test]
fn apply_permission_naming_nobody() {
    assert_rejected!(
        "config_apply_permission_empty",
        "drafts: true\napply_permission: {}\n"
    );
}

#[test]
fn apply_permission_team_without_organization() {
    assert_rejected!(
        "config_apply_permission_bad_team",
        "apply_permission:\n  teams: [platform]\n"
    );
}

#[test]
fn apply_permission_bad_login() {
    assert_rejected!(
        "config_apply_permission_bad_login",
        "apply_permission:\n  users: [\"alice smith\"]\n"
    );
}

#[test]
fn apply_permission_unknown_key() {
    assert_rejected!(
        "config_apply_permission_unknown_key",
        "apply_permission:\n  user: [alice]\n"
    );
}

#[test]
fn apply_permission_as_a_list() {
    assert_rejected!(
        "config_apply_permission_list",
        "apply_permission: [alice]\n"
    );
}

#[test]
fn approvals_unknown_rule() {
    assert_rejected!("config_approvals_unknown", "approvals: anyhead\n");
}

#[test]
fn drift_sections_are_checked_with_their_line() {
    for (yaml, says) in [
        ("drift:\n  schedule: 1m\n", ".cascade.yaml:2:"),
        ("drift:\n  schedule: 1m\n", "from 10m to 31d"),
        ("drift:\n  schedule: \"0 0 31 2 *\"\n", "never fires"),
        ("drift:\n  schedule: \"* * *\"\n", "not a cron expression"),
        (
            "drift:\n  units: [\"/live/**\"]\n",
            "`drift.units` glob `/live/**` starts with `/`",
        ),
        (
            "drift:\n  units: \"live/**\"\n",
            "`units` must be a list of globs",
        ),
        ("drift:\n  every: 6h\n", "unknown key `every` in `drift`"),
        ("drift: 6h\n", "`drift` must be a mapping"),
    ] {
        let problem = RepoConfig::parse(yaml).unwrap_err().to_string();
        assert!(problem.contains(says), "{yaml}: {problem}");
    }
}

#[test]
fn drift_defaults_and_unit_globs() {
    let config = RepoConfig::parse("drift:\n").unwrap();
    let drift = config.drift.expect("an empty `drift:` turns drift on");
    assert!(drift.enabled);
    assert_eq!(drift.schedule_text, "24h");
    assert!(drift.covers("live/dev/app"));
    let config = RepoConfig::parse(
        "drift:\n  schedule: \"0 6 * * 1-5\"\n  units: [\"live/prod/**\"]\n  enabled: false\n",
    )
    .unwrap();
    let drift = config.drift.unwrap();
    assert!(!drift.enabled);
    assert!(drift.covers("live/prod/vpc"));
    assert!(!drift.covers("live/dev/vpc"));
    assert!(RepoConfig::parse("").unwrap().drift.is_none());
}
