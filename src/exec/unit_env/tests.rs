use super::*;
use secrecy::ExposeSecret;

fn parse(text: &str) -> anyhow::Result<UnitEnv> {
    UnitEnv::parse(text, Path::new("/nonexistent"))
}

fn error(text: &str) -> String {
    format!("{:#}", parse(text).expect_err("refused"))
}

fn vars(env: &UnitEnv, repo: &str, unit: &str, phase: Phase) -> Vec<String> {
    env.vars(repo, &UnitPath::new(unit), phase)
        .map(|(k, v)| format!("{k}={}", v.expose_secret()))
        .collect()
}

const FILE: &str = r#"
- repository: "acme/*"
  units: prod/**
  env: {AWS_REGION: eu-west-1, AWS_PROFILE: shared-profile}
  plan: {AWS_PROFILE: prod-readonly}
  apply: {AWS_PROFILE: prod-admin}
- units: ["dev/*", "qa/*"]
  env: {AWS_PROFILE: dev-profile}
- repository: acme/infra
  units: prod/vpc
  env: {AWS_PROFILE: never-reached}
"#;

#[test]
fn the_first_matching_entry_gives_its_values_per_phase() {
    let env = parse(FILE).unwrap();
    assert_eq!(
        vars(&env, "acme/infra", "prod/vpc", Phase::Plan),
        ["AWS_PROFILE=prod-readonly", "AWS_REGION=eu-west-1"]
    );
    assert_eq!(
        vars(&env, "acme/infra", "prod/eu/vpc", Phase::Apply),
        ["AWS_PROFILE=prod-admin", "AWS_REGION=eu-west-1"]
    );
    // No repository glob: every repository.
    assert_eq!(
        vars(&env, "other/repo", "dev/app", Phase::Apply),
        ["AWS_PROFILE=dev-profile"]
    );
}

#[test]
fn a_unit_matching_no_entry_gets_nothing() {
    let env = parse(FILE).unwrap();
    assert!(vars(&env, "acme/infra", "staging/app", Phase::Plan).is_empty());
    // `*` stays within a directory, in repositories and units alike.
    assert!(vars(&env, "acme/infra", "dev/eu/app", Phase::Plan).is_empty());
    assert!(vars(&env, "other/acme/infra", "prod/vpc", Phase::Plan).is_empty());
    // A GitLab project is named with its forge: `acme/*` is GitHub's.
    assert!(vars(&env, "gitlab:acme/infra", "prod/vpc", Phase::Plan).is_empty());
}

#[test]
fn file_values_are_read_at_load_relative_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret"), "from-a-file-value\n").unwrap();
    let env = UnitEnv::parse(
        "- units: '**'\n  apply: {ARM_CLIENT_SECRET: {file: secret}}\n",
        dir.path(),
    )
    .unwrap();
    assert_eq!(
        vars(&env, "acme/infra", "a/b", Phase::Apply),
        ["ARM_CLIENT_SECRET=from-a-file-value"]
    );
    assert!(vars(&env, "acme/infra", "a/b", Phase::Plan).is_empty());
    // Registered: masked wherever cascade redacts.
    assert_eq!(
        crate::redact::redact("x from-a-file-value y"),
        "x [redacted] y"
    );
}

#[test]
fn errors_name_the_path_in_the_file_and_never_a_value() {
    insta::assert_snapshot!(
        error("- units: a\n  plan: {AWS_PROFILE: [no]}\n"),
        @"[0].plan.AWS_PROFILE: a string, or `{file: PATH}` to read the value from a file at line 2, column 23"
    );
    insta::assert_snapshot!(
        error("- units: a\n  plan: {AWS_PROFILE: [x]}\n"),
        @"[0].plan.AWS_PROFILE: a string, or `{file: PATH}` to read the value from a file at line 2, column 23"
    );
    insta::assert_snapshot!(
        error("- units: a\n  plan: {AWS_PROFILE: {file: x, mode: y}}\n"),
        @"[0].plan.AWS_PROFILE: a string, or `{file: PATH}` to read the value from a file at line 2, column 23"
    );
    insta::assert_snapshot!(
        error("- units: a\n  apply: topsecret-value\n"),
        @"[0].apply: expected mapping start at line 2, column 10"
    );
    insta::assert_snapshot!(
        error("- units: a\n  aply: {X: x}\n"),
        @"[0].aply: unknown field `aply`, expected one of name, repository, units, env, plan, apply at line 2, column 3"
    );
    insta::assert_snapshot!(error("- repository: x\n"), @"[0]: missing field `units`; name the units it is for (`prod/**`), or give the entry a `name:` for workflows to select it by");
    insta::assert_snapshot!(error("units: a\n"), @"the file: expected sequence start at line 1, column 1");
    insta::assert_snapshot!(error("- units: 'a/[b'\n"), @"[0].units[0]: `a/[b` is not a valid glob (unclosed character class; missing ']'); use `*`, `**`, `?`, `[abc]` or `{a,b}`");
    insta::assert_snapshot!(error("- units: []\n"), @"[0].units: name at least one glob (`prod/**`)");
    insta::assert_snapshot!(error("- units: a\n  env: {CASCADE_X: x}\n"), @"[0].env.CASCADE_X: `CASCADE_*` variables are cascade's own and never reach terraform");
    insta::assert_snapshot!(error("- units: a\n  plan: {TF_IN_AUTOMATION: '0'}\n"), @"[0].plan.TF_IN_AUTOMATION: cascade sets `TF_IN_AUTOMATION` itself for every command");
    insta::assert_snapshot!(error("- units: a\n  plan: {HOME: /root}\n"), @"[0].plan.HOME: cascade sets `HOME` itself for every command");
    insta::assert_snapshot!(error("- units: a\n  plan: {'A-B': x}\n"), @"[0].plan.A-B: not a variable name; use letters, digits and `_`");
    insta::assert_snapshot!(
        error("- units: a\n  apply: {X: {file: missing}}\n"),
        @"[0].apply.X: cannot read /nonexistent/missing: No such file or directory (os error 2)"
    );
}

#[test]
fn a_shape_error_that_quotes_a_value_loses_the_quote() {
    assert_eq!(
        unquoted(r#"invalid type: string "hush-9999", expected a map at line 2"#),
        "invalid type: string …, expected a map at line 2"
    );
}

const NAMED: &str = r#"
- units: prod/**
  plan: {AWS_PROFILE: prod-readonly}
- name: prod-deployer
  repository: "acme/*"
  units: prod/**
  plan: {AWS_ROLE_ARN: prod-plan-role}
  apply: {AWS_ROLE_ARN: prod-apply-role}
- name: argocd.token-1
  env: {ARGOCD_AUTH_TOKEN: argo-token-value}
"#;

fn selected(env: &UnitEnv, entry: &str, unit: &str, phase: Phase, var: &str) -> String {
    match env.selected(entry, "acme/infra", &UnitPath::new(unit), phase, var) {
        Ok(value) => value.expose_secret().to_string(),
        Err(not) => format!("{not:?}"),
    }
}

#[test]
fn a_named_entry_is_given_only_when_selected_and_only_where_its_globs_reach() {
    let env = parse(NAMED).unwrap();
    // Never automatically, even where it is the only entry matching.
    assert_eq!(
        vars(&env, "acme/infra", "prod/vpc", Phase::Apply),
        Vec::<String>::new()
    );
    assert_eq!(
        vars(&env, "acme/infra", "prod/vpc", Phase::Plan),
        ["AWS_PROFILE=prod-readonly"]
    );
    assert!(vars(&env, "acme/infra", "dev/app", Phase::Plan).is_empty());
    // Selected: the value for the job's phase.
    assert_eq!(
        selected(
            &env,
            "prod-deployer",
            "prod/vpc",
            Phase::Plan,
            "AWS_ROLE_ARN"
        ),
        "prod-plan-role"
    );
    assert_eq!(
        selected(
            &env,
            "prod-deployer",
            "prod/vpc",
            Phase::Apply,
            "AWS_ROLE_ARN"
        ),
        "prod-apply-role"
    );
    // `units` defaults to every unit for a named entry.
    assert_eq!(
        selected(
            &env,
            "argocd.token-1",
            "dev/app",
            Phase::Apply,
            "ARGOCD_AUTH_TOKEN"
        ),
        "argo-token-value"
    );
    // A unit outside its globs is told what an unknown name is told.
    assert_eq!(
        selected(
            &env,
            "prod-deployer",
            "dev/app",
            Phase::Plan,
            "AWS_ROLE_ARN"
        ),
        "NoEntry"
    );
    assert_eq!(
        env.selected(
            "prod-deployer",
            "other/infra",
            &UnitPath::new("prod/vpc"),
            Phase::Plan,
            "AWS_ROLE_ARN"
        )
        .map(|_| ()),
        Err(NotSelected::NoEntry)
    );
    assert_eq!(
        selected(&env, "nobody", "prod/vpc", Phase::Plan, "AWS_ROLE_ARN"),
        "NoEntry"
    );
    assert_eq!(
        selected(
            &env,
            "prod-deployer",
            "prod/vpc",
            Phase::Plan,
            "AWS_PROFILE"
        ),
        "NoVariable"
    );
}

#[test]
fn names_are_plain_and_unique() {
    insta::assert_snapshot!(
        error("- name: 'prod deployer'\n  env: {X: x}\n"),
        @"[0].name: not a plain name; use letters, digits, `_`, `.` and `-`"
    );
    insta::assert_snapshot!(error("- name: ''\n"), @"[0].name: not a plain name; use letters, digits, `_`, `.` and `-`");
    insta::assert_snapshot!(
        error("- name: a\n  env: {X: x}\n- units: b\n- name: a\n  units: c\n"),
        @"[2].name: `a` is also the name of [0]; make each name unique"
    );
}
