//! Unit tests for the questions `RepoConfig` answers. Messages for bad files are pinned
//! in `tests/it/config_errors.rs`.

use super::*;

fn config(yaml: &str) -> RepoConfig {
    RepoConfig::parse(yaml).unwrap()
}

fn unit(path: &str) -> UnitPath {
    UnitPath::new(path)
}

fn env_name<'a>(config: &'a RepoConfig, path: &str) -> Option<&'a str> {
    config
        .environment_of(&unit(path))
        .map(|env| env.name.as_str())
}

#[test]
fn environment_of_is_the_deepest_containing_environment() {
    let config = config("environments:\n  live: live\n  prod: live/prod\n  dev: live/dev\n");
    assert_eq!(env_name(&config, "live/prod/vpc"), Some("prod"));
    assert_eq!(env_name(&config, "live/prod"), Some("prod"));
    assert_eq!(env_name(&config, "live/staging/vpc"), Some("live"));
    assert_eq!(env_name(&config, "global/dns"), None);
}

#[test]
fn environment_of_respects_directory_boundaries() {
    let config = config("environments:\n  prod: live/prod\n");
    assert_eq!(env_name(&config, "live/prod2/vpc"), None);
    assert_eq!(env_name(&config, "live"), None);
}

#[test]
fn root_environment_contains_everything_but_loses_to_deeper_ones() {
    let config = config("environments:\n  all: .\n  prod: live/prod\n");
    assert_eq!(env_name(&config, "global/dns"), Some("all"));
    assert_eq!(env_name(&config, "."), Some("all"));
    assert_eq!(env_name(&config, "live/prod/vpc"), Some("prod"));
}

#[test]
fn outside_environments_only_when_environments_are_configured() {
    assert!(!RepoConfig::default().outside_environments(&unit("anything")));
    let config = config("environments:\n  dev: live/dev\n");
    assert!(!config.outside_environments(&unit("live/dev/vpc")));
    assert!(config.outside_environments(&unit("live/prod/vpc")));
}

#[test]
fn executor_for_prefers_the_module_entry_then_the_environment() {
    let config = config(
        "environments:\n  prod:\n    path: live/prod\n    executor: tofu\n  dev: live/dev\n\
         modules:\n  - path: live/prod/legacy\n  - path: global/iam\n    executor: tofu\n",
    );
    assert_eq!(
        config.executor_for(&unit("live/prod/legacy")),
        Some(Tool::Terraform)
    );
    assert_eq!(
        config.executor_for(&unit("live/prod/vpc")),
        Some(Tool::Tofu)
    );
    assert_eq!(config.executor_for(&unit("global/iam")), Some(Tool::Tofu));
    assert_eq!(config.executor_for(&unit("live/dev/vpc")), None);
    assert_eq!(config.executor_for(&unit("elsewhere")), None);
}

#[test]
fn is_ignored_matches_globs_and_everything_under_a_match() {
    let config =
        config("ignore:\n  - sandbox\n  - \"**/experimental\"\n  - \"live/*/scratch-*\"\n");
    assert!(config.is_ignored("sandbox"));
    assert!(config.is_ignored("sandbox/a/terragrunt.hcl"));
    assert!(config.is_ignored("./sandbox/a/"));
    assert!(config.is_ignored("live/dev/experimental"));
    assert!(config.is_ignored("experimental/main.tf"));
    assert!(config.is_ignored("live/dev/scratch-1/main.tf"));
    assert!(!config.is_ignored("sandboxes/a"));
    assert!(!config.is_ignored("live/dev/vpc/main.tf"));
}

#[test]
fn single_star_stays_within_a_directory() {
    let config = config("ignore: [\"live/*.hcl\"]\n");
    assert!(config.is_ignored("live/root.hcl"));
    assert!(!config.is_ignored("live/dev/root.hcl"));
}

#[test]
fn ignore_globs_are_stored_without_a_leading_dot_slash() {
    let config = config("ignore: [./sandbox/**]\n");
    assert_eq!(config.ignore, vec!["sandbox/**"]);
    assert!(config.is_ignored("sandbox/x/main.tf"));
}

#[test]
fn nothing_is_ignored_by_default() {
    assert!(!RepoConfig::default().is_ignored("sandbox/a"));
}

#[test]
fn paths_are_normalised() {
    let config = config(
        "environments:\n  dev: ./live/dev/\n\
         implicit_deps:\n  ./live/app/: [live/db/, live/db]\n\
         modules:\n  - path: ./global/dns/\n    depends_on: [live/vpc/]\n",
    );
    assert_eq!(config.environments[0].path, "live/dev");
    assert_eq!(
        config.implicit_deps[&unit("live/app")],
        vec![unit("live/db")]
    );
    assert_eq!(config.modules[0].path, unit("global/dns"));
    assert_eq!(config.modules[0].depends_on, vec![unit("live/vpc")]);
}

#[test]
fn environments_keep_file_order() {
    let config = config("environments:\n  prod: live/prod\n  dev: live/dev\n");
    let names: Vec<&str> = config
        .environments
        .iter()
        .map(|env| env.name.as_str())
        .collect();
    assert_eq!(names, ["prod", "dev"]);
}

#[test]
fn approvals_is_a_word_or_a_list_and_head_excludes_any_head() {
    let default = RepoConfig::default();
    assert_eq!(default.approvals, ApprovalRule::Head);
    assert!(!default.pushers_may_approve);
    let one = config("approvals: any_head\n");
    assert_eq!(one.approvals, ApprovalRule::AnyHead);
    assert!(!one.pushers_may_approve);
    let list = config("approvals: [allow_pushers]\n");
    assert_eq!(list.approvals, ApprovalRule::Head);
    assert!(list.pushers_may_approve);
    let both = RepoConfig::parse("approvals: [head, any_head]\n").unwrap_err();
    assert!(
        both.to_string().contains("both `head` and `any_head`"),
        "{both}"
    );
    let wrong = RepoConfig::parse("approvals: sometimes\n").unwrap_err();
    assert!(wrong.to_string().contains("sometimes"), "{wrong}");
}

#[test]
fn branches_allow_bases_besides_the_default_one() {
    let none = RepoConfig::default();
    assert!(none.plans_into("main", "main"));
    assert!(!none.plans_into("bob-base", "main"));
    let listed = config("branches: [\"release/*\", hotfix]\n");
    assert!(listed.plans_into("release/1.2", "main"));
    assert!(listed.plans_into("hotfix", "main"));
    assert!(
        !listed.plans_into("release/1/2", "main"),
        "`*` stays in one part"
    );
    assert!(!listed.plans_into("hotfix-2", "main"));
    assert!(RepoConfig::parse("branches: release\n").is_err());
}
