//! The command-line contract: `cascade graph` and `cascade affected`, their
//! JSON shapes and exit codes, run as a user runs them; `cascade serve`'s
//! forge flags (GitHub, GitLab, both; all or none of each) and their twins;
//! its secrets refused on the command line, taken from their twins and files.

use crate::support;

use cascade::event::gitlab::ProjectKey;
use secrecy::{ExposeSecret, SecretSlice};
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

// ---------------------------------------------------------------- cascade serve: forges

/// `cascade serve ARGS` with `env` and no other `CASCADE_*` variable; the server
/// must refuse to start before it binds anything.
fn serve_refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cascade"));
    command.arg("serve").args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("CASCADE_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let out = command.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?} must be refused");
    String::from_utf8(out.stderr).unwrap()
}

/// Files a deployment points the flags at.
struct Secrets {
    dir: tempfile::TempDir,
}

impl Secrets {
    fn new() -> Secrets {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "  glpat-0123456789abcdef\n").unwrap();
        std::fs::write(dir.path().join("empty"), "\n").unwrap();
        std::fs::write(dir.path().join("key.pem"), "not read until the App starts").unwrap();
        std::fs::write(dir.path().join("gh-secret"), "gh-secret\n").unwrap();
        std::fs::write(
            dir.path().join("gl-secrets"),
            "gl-old,gl-new\n gl-next \nacme/platform/infra = gl-infra-only\n4242=gl-4242\n\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("signing"),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
        )
        .unwrap();
        Secrets { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }
}

fn github_flags(s: &Secrets) -> Vec<String> {
    [
        "--github-app-id",
        "42",
        "--github-private-key-file",
        &s.path("key.pem"),
        "--github-webhook-secret-file",
        &s.path("gh-secret"),
    ]
    .map(str::to_owned)
    .to_vec()
}

fn gitlab_flags(s: &Secrets) -> Vec<String> {
    [
        "--gitlab-url",
        "https://gitlab.example.com/",
        "--gitlab-token-file",
        &s.path("token"),
        "--gitlab-webhook-secret-file",
        &s.path("gl-secrets"),
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn serve_takes_allowed_owners_and_repository_labels() {
    let s = Secrets::new();
    // Defaults: every owner, no repository in a metric.
    let config = cascade::cli::serve_config(github_flags(&s)).unwrap();
    assert!(!config.allowed_owners.is_restricted());
    assert!(!config.metrics_repo_labels);
    let mut flags = github_flags(&s);
    flags.extend(
        [
            "--allow-owner",
            "acme",
            "--allow-owner",
            "gitlab:globex/platform,initech",
            "--metrics-repo-labels",
        ]
        .map(str::to_owned),
    );
    let config = cascade::cli::serve_config(flags).unwrap();
    let owners = &config.allowed_owners;
    for served in ["acme/infra", "initech/x", "gitlab:globex/platform/infra"] {
        assert!(owners.allows(served), "{served}");
    }
    for refused in ["evil/infra", "globex/infra", "gitlab:globex/other"] {
        assert!(!owners.allows(refused), "{refused}");
    }
    assert!(config.metrics_repo_labels);
    // The twin is read and checked; a bad entry stops the start, named.
    let github: Vec<String> = github_flags(&s);
    let github: Vec<&str> = github.iter().map(String::as_str).collect();
    let err = serve_refused(&github, &[("CASCADE_ALLOW_OWNERS", "acme,bitbucket:acme")]);
    assert!(err.contains("--allow-owner \"bitbucket:acme\""), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for twin in ["CASCADE_ALLOW_OWNERS", "CASCADE_METRICS_REPO_LABELS"] {
        assert!(help.contains(twin), "{twin}: {help}");
    }
}

#[test]
fn serve_refuses_a_broken_unit_env_file_naming_where_and_no_value() {
    let s = Secrets::new();
    let file = s.dir.path().join("unit-env.yaml");
    std::fs::write(
        &file,
        "- units: prod/**\n  plan: {AWS_PROFILE: plan-hush-7777}\n  apply: {AWS_PROFILE: [apply-hush-8888]}\n",
    )
    .unwrap();
    let github: Vec<String> = github_flags(&s);
    let github: Vec<&str> = github.iter().map(String::as_str).collect();
    let err = serve_refused(
        &github,
        &[("CASCADE_UNIT_ENV_FILE", file.to_str().unwrap())],
    );
    assert!(
        err.contains("unit-env.yaml is not valid: [0].apply.AWS_PROFILE"),
        "{err}"
    );
    assert!(err.contains("line 3"), "{err}");
    assert!(!err.contains("hush"), "{err}");
}

#[test]
fn serve_takes_source_hosts_and_a_git_config_of_the_operators() {
    let s = Secrets::new();
    let config = cascade::cli::serve_config(github_flags(&s)).unwrap();
    assert!(config.sources.hosts.is_empty() && config.sources.git_config.is_none());
    let mut flags = github_flags(&s);
    flags.extend(
        [
            "--source-host",
            "github.com",
            "--source-host",
            "http://10.0.0.5:3000,git.example.com:8443",
            "--git-config",
            &s.path("token"),
        ]
        .map(str::to_owned),
    );
    let config = cascade::cli::serve_config(flags).unwrap();
    let hosts = &config.sources.hosts;
    for allowed in [
        "https://github.com/acme/catalog.git",
        "http://10.0.0.5:3000/x.git",
        "https://git.example.com:8443/x.git",
    ] {
        assert!(
            hosts.allows(&url::Url::parse(allowed).unwrap()),
            "{allowed}"
        );
    }
    assert!(!hosts.allows(&url::Url::parse("http://169.254.169.254/x").unwrap()));
    assert_eq!(
        config.sources.git_config.as_deref(),
        Some(std::path::Path::new(&s.path("token")))
    );
    let github: Vec<String> = github_flags(&s);
    let github: Vec<&str> = github.iter().map(String::as_str).collect();
    let err = serve_refused(&github, &[("CASCADE_SOURCE_HOSTS", "github.com/acme")]);
    assert!(err.contains("--source-host \"github.com/acme\""), "{err}");
    let mut missing = github.clone();
    missing.extend(["--git-config", "/nonexistent/gitconfig"]);
    let err = serve_refused(&missing, &[]);
    assert!(
        err.contains("--git-config /nonexistent/gitconfig: no such file"),
        "{err}"
    );
}

#[test]
fn serve_takes_github_only_gitlab_only_or_both() {
    let s = Secrets::new();
    let github = cascade::cli::serve_config(github_flags(&s)).unwrap();
    let app = github.github.expect("GitHub is configured");
    assert_eq!(app.app_id, 42);
    assert_eq!(exposed(&app.webhook_secrets), vec![b"gh-secret".to_vec()]);
    assert_eq!(app.api_url, "https://api.github.com");
    assert!(github.gitlab.is_none());

    let gitlab = cascade::cli::serve_config(gitlab_flags(&s)).unwrap();
    assert!(gitlab.github.is_none());
    let gl = gitlab.gitlab.expect("GitLab is configured");
    assert_eq!(gl.url, "https://gitlab.example.com");
    assert_eq!(
        gl.token.expose_secret(),
        "glpat-0123456789abcdef",
        "read from the file, trimmed"
    );
    assert_eq!(
        exposed(&gl.webhook_secrets.any_project),
        vec![b"gl-old".to_vec(), b"gl-new".to_vec(), b"gl-next".to_vec()]
    );
    // `PROJECT=SECRET` lines speak for one project each.
    assert_eq!(
        gl.webhook_secrets
            .per_project
            .iter()
            .map(|(key, secret)| (key.clone(), secret.expose_secret().to_vec()))
            .collect::<Vec<_>>(),
        vec![
            (
                ProjectKey::Path("acme/platform/infra".into()),
                b"gl-infra-only".to_vec()
            ),
            (ProjectKey::Id(4242), b"gl-4242".to_vec()),
        ]
    );
    assert!(gl.signing_key.is_none());
    let shown = format!("{gl:?}");
    assert!(
        !shown.contains("glpat") && !shown.contains("gl-old") && !shown.contains("gl-infra-only"),
        "{shown}"
    );

    let mut both_flags = github_flags(&s);
    both_flags.extend(gitlab_flags(&s));
    both_flags.extend(["--gitlab-signing-token-file".to_owned(), s.path("signing")]);
    let both = cascade::cli::serve_config(both_flags).unwrap();
    assert!(both.github.is_some());
    assert!(both.gitlab.unwrap().signing_key.is_some());
}

#[test]
fn serve_without_a_forge_serves_the_setup_page_where_github_url_says() {
    let none = cascade::cli::serve_config(Vec::<String>::new()).unwrap();
    assert!(none.github.is_none() && none.gitlab.is_none());
    let setup = none.setup.expect("no forge: the setup page");
    assert_eq!(setup.github_url, "https://github.com");
    assert_eq!(setup.api_url, "https://api.github.com");
    let ghe = cascade::cli::serve_config([
        "--github-url",
        "https://github.example.com/",
        "--github-api-url",
        "https://github.example.com/api/v3",
    ])
    .unwrap()
    .setup
    .unwrap();
    assert_eq!(ghe.github_url, "https://github.example.com");
    assert_eq!(ghe.api_url, "https://github.example.com/api/v3");
    // The App's flags win over anything stored or set up.
    let s = Secrets::new();
    assert!(
        cascade::cli::serve_config(github_flags(&s))
            .unwrap()
            .setup
            .is_none()
    );
    let err = serve_refused(&["--github-url", "github.example.com"], &[]);
    assert!(
        err.contains("--github-url must be GitHub's web root"),
        "{err}"
    );
}

#[test]
fn serve_refuses_a_partial_forge_and_says_what_to_add() {
    let s = Secrets::new();
    let (gh_secret, signing) = (s.path("gh-secret"), s.path("signing"));
    type Case<'a> = (
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: [Case; 6] = [
        (
            &["--gitlab-url", "https://gitlab.com"],
            &[],
            &["--gitlab-token-file", "--gitlab-webhook-secret"],
            &["--gitlab-url ("],
        ),
        (
            &[],
            &[(
                "CASCADE_GITLAB_SIGNING_TOKEN",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            )],
            &[
                "--gitlab-url",
                "--gitlab-token-file",
                "--gitlab-webhook-secret",
            ],
            &["whsec_MfKQ"],
        ),
        (
            &["--github-app-id", "42"],
            &[],
            &["--github-private-key-file", "--github-webhook-secret"],
            &["--github-app-id ("],
        ),
        (
            &[],
            &[("CASCADE_GITHUB_WEBHOOK_SECRET", "gh-secret")],
            &["--github-app-id", "--github-private-key-file"],
            &["gh-secret"],
        ),
        // A secret's file counts as the secret.
        (
            &["--github-webhook-secret-file", &gh_secret],
            &[],
            &["--github-app-id", "--github-private-key-file"],
            &["--github-webhook-secret-file ("],
        ),
        (
            &["--gitlab-signing-token-file", &signing],
            &[],
            &[
                "--gitlab-url",
                "--gitlab-token-file",
                "--gitlab-webhook-secret",
            ],
            &["--gitlab-signing-token-file (", "whsec_MfKQ"],
        ),
    ];
    for (args, env, missing, absent) in cases {
        let err = serve_refused(args, env);
        assert!(err.contains("only partly configured"), "{args:?}: {err}");
        for name in missing {
            assert!(err.contains(name), "{args:?} must name {name}: {err}");
        }
        for text in absent {
            assert!(!err.contains(text), "{args:?} must not show {text}: {err}");
        }
    }
    // A complete GitLab set with a bad URL, an empty token or a bad signing token.
    let token = s.path("token");
    let empty = s.path("empty");
    let secret = [("CASCADE_GITLAB_WEBHOOK_SECRET", "x")];
    let err = serve_refused(
        &["--gitlab-url", "gitlab.com", "--gitlab-token-file", &token],
        &secret,
    );
    assert!(err.contains("https://gitlab.com"), "{err}");
    let err = serve_refused(
        &[
            "--gitlab-url",
            "https://gitlab.com",
            "--gitlab-token-file",
            &empty,
        ],
        &secret,
    );
    assert!(
        err.contains("is empty") && err.contains("access token"),
        "{err}"
    );
    let err = serve_refused(
        &[
            "--gitlab-url",
            "https://gitlab.com",
            "--gitlab-token-file",
            &token,
        ],
        &[
            ("CASCADE_GITLAB_WEBHOOK_SECRET", "x"),
            ("CASCADE_GITLAB_SIGNING_TOKEN", "topsecret"),
        ],
    );
    assert!(
        err.contains("whsec_") && !err.contains("topsecret"),
        "{err}"
    );
}

#[test]
fn serve_reads_every_gitlab_flag_from_its_environment_twin() {
    let s = Secrets::new();
    let empty = s.path("empty");
    // Each twin counts as given: only the one left out is named.
    let err = serve_refused(
        &[],
        &[
            ("CASCADE_GITLAB_URL", "https://gitlab.com"),
            ("CASCADE_GITLAB_WEBHOOK_SECRET", "a,b"),
        ],
    );
    assert!(err.contains("--gitlab-token-file"), "{err}");
    assert!(!err.contains("--gitlab-webhook-secret"), "{err}");
    assert!(!err.contains("--gitlab-url ("), "{err}");
    // The token file's twin is read (and found empty).
    let err = serve_refused(
        &[],
        &[
            ("CASCADE_GITLAB_URL", "https://gitlab.com"),
            ("CASCADE_GITLAB_TOKEN_FILE", &empty),
            ("CASCADE_GITLAB_WEBHOOK_SECRET", "a,b"),
        ],
    );
    assert!(err.contains("is empty"), "{err}");
    // The signing token's twin is read, and checked.
    let err = serve_refused(
        &[],
        &[
            ("CASCADE_GITLAB_URL", "https://gitlab.com"),
            ("CASCADE_GITLAB_TOKEN_FILE", &s.path("token")),
            ("CASCADE_GITLAB_WEBHOOK_SECRET", "a"),
            ("CASCADE_GITLAB_SIGNING_TOKEN", "not-a-signing-token"),
        ],
    );
    assert!(err.contains("--gitlab-signing-token"), "{err}");
    // Secrets given in the environment never show in the help.
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["serve", "--help"])
        .env("CASCADE_GITLAB_WEBHOOK_SECRET", "hush-webhook")
        .env("CASCADE_GITLAB_SIGNING_TOKEN", "whsec_aHVzaA==")
        .env("CASCADE_DATABASE_URL", "postgres://u:hush-db@db/cascade")
        .env("CASCADE_GITLAB_URL", "https://gitlab.example.com")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("CASCADE_GITLAB_TOKEN_FILE"), "{help}");
    assert!(
        help.contains("gitlab.example.com"),
        "non-secret values show: {help}"
    );
    assert!(
        !help.contains("hush-webhook") && !help.contains("aHVzaA") && !help.contains("hush-db"),
        "{help}"
    );
}

// ---------------------------------------------------------------- cascade serve: secrets

/// The error `cascade serve ARGS` (in this process) stops at.
fn serve_error<T: Into<std::ffi::OsString> + Clone>(args: impl IntoIterator<Item = T>) -> String {
    format!("{:#}", cascade::cli::serve_config(args).unwrap_err())
}

/// A secret on the command line is readable by every local user: each is refused,
/// saying where to put it, never showing it; a database URL only with a password.
#[test]
fn serve_refuses_secrets_on_the_command_line_and_says_where_to_put_them() {
    let cases = [
        ("--github-webhook-secret", "gh-argv-secret"),
        ("--gitlab-webhook-secret", "gl-argv-secret"),
        (
            "--gitlab-signing-token",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ),
        (
            "--database-url",
            "postgres://cascade:pg-argv-pass@db:5432/cascade",
        ),
        (
            "--database-url",
            "postgresql://cascade@db/cascade?sslmode=require&password=pg-argv-pass",
        ),
    ];
    for (flag, value) in cases {
        let env = format!("CASCADE_{}", flag[2..].replace('-', "_").to_uppercase());
        let err = serve_error([flag, value]);
        let expected = format!(
            "is readable by every local user (/proc/<pid>/cmdline): set {env} instead, or put"
        );
        assert!(err.contains(&expected), "{flag}: {err}");
        assert!(
            err.contains(&format!("in a file and pass {flag}-file")),
            "{err}"
        );
        assert!(!err.contains(value) && !err.contains("argv"), "{err}");
        // Also in `--flag=value` form.
        let err = serve_error([&format!("{flag}={value}")]);
        assert!(err.contains("/proc/<pid>/cmdline"), "{flag}=: {err}");
    }
    // A database URL without a password is no secret.
    for url in [
        "postgres://cascade@db:5432/cascade?sslmode=verify-full",
        "sqlite:///var/lib/cascade/cascade.db",
    ] {
        let config = cascade::cli::serve_config(["--database-url", url]).unwrap();
        assert_eq!(
            config
                .database_url
                .as_ref()
                .map(ExposeSecret::expose_secret),
            Some(url)
        );
    }
    // The real binary: exit 2, every secret named, none shown.
    let err = serve_refused(
        &[
            "--github-webhook-secret",
            "gh-argv-secret",
            "--gitlab-signing-token",
            "whsec_aHVzaA==",
            "--database-url",
            "postgres://cascade:pg-argv-pass@db/cascade",
        ],
        &[],
    );
    for name in [
        "as --github-webhook-secret is",
        "as --gitlab-signing-token is",
        "--database-url holds a password",
    ] {
        assert!(err.contains(name), "{name}: {err}");
    }
    assert!(!err.contains("argv") && !err.contains("aHVzaA"), "{err}");
}

/// The same secrets from their `CASCADE_*` twins pass the refusal: the start stops
/// only later, at the bad GitLab URL (which is checked after them).
#[test]
fn serve_takes_secrets_from_their_environment_twins() {
    let s = Secrets::new();
    let token = s.path("token");
    let env = [
        ("CASCADE_GITLAB_WEBHOOK_SECRET", "gl-env-secret"),
        ("CASCADE_GITLAB_SIGNING_TOKEN", "whsec_aHVzaA=="),
        (
            "CASCADE_DATABASE_URL",
            "postgres://cascade:pg-env-pass@db/cascade",
        ),
    ];
    let args = ["--gitlab-url", "gitlab.com", "--gitlab-token-file", &token];
    let err = serve_refused(&args, &env);
    assert!(err.contains("--gitlab-url must be"), "{err}");
    assert!(!err.contains("cmdline") && !err.contains("env-"), "{err}");
    let err = serve_refused(
        &args,
        &[("CASCADE_GITHUB_WEBHOOK_SECRET", "gh-env-secret"), env[1]],
    );
    assert!(err.contains("only partly configured"), "{err}");
}

/// The `--…-file` flags: trimmed, rotation secrets one per line or comma-separated,
/// registered for redaction; a file that cannot be read or holds nothing names its
/// flag and never its content.
#[test]
fn serve_reads_secrets_from_files() {
    let s = Secrets::new();
    let write = |name: &str, text: &str| {
        std::fs::write(s.dir.path().join(name), text).unwrap();
        s.path(name)
    };
    let rotating = write(
        "rotating",
        "  gh-file-secret-old,gh-file-secret-new\n\ngh-third-one \n",
    );
    let database = write(
        "database",
        "\n  postgres://cascade:pg-file-pass@db/cascade \n",
    );
    let key = s.path("key.pem");
    let config = cascade::cli::serve_config([
        "--github-app-id",
        "42",
        "--github-private-key-file",
        &key,
        "--github-webhook-secret-file",
        &rotating,
        "--database-url-file",
        &database,
    ])
    .unwrap();
    assert_eq!(
        exposed(&config.github.unwrap().webhook_secrets),
        [
            &b"gh-file-secret-old"[..],
            b"gh-file-secret-new",
            b"gh-third-one"
        ]
    );
    assert_eq!(
        config
            .database_url
            .as_ref()
            .map(ExposeSecret::expose_secret),
        Some("postgres://cascade:pg-file-pass@db/cascade")
    );
    assert_eq!(
        cascade::redact::redact("a gh-file-secret-new b gh-third-one c"),
        "a [redacted] b [redacted] c"
    );
    let gitlab_signed_by = |file: String| {
        let mut flags = gitlab_flags(&s);
        flags.extend(["--gitlab-signing-token-file".to_owned(), file]);
        flags
    };
    let gitlab = cascade::cli::serve_config(gitlab_signed_by(s.path("signing")))
        .unwrap()
        .gitlab
        .unwrap();
    assert!(gitlab.signing_key.is_some(), "read and trimmed");

    let blank = write("blank", " \n,\n ,, \n");
    let missing = s.path("missing");
    let bad_token = write("bad-token", "topsecret-signing\n");
    let github = |flag: &'static str, file: &str| {
        serve_error([
            "--github-app-id",
            "42",
            "--github-private-key-file",
            &key,
            flag,
            file,
        ])
    };
    let err = github("--github-webhook-secret-file", &blank);
    assert!(
        err.contains(&format!("{blank} (--github-webhook-secret-file) is empty")),
        "{err}"
    );
    let err = github("--github-webhook-secret-file", &missing);
    assert!(
        err.contains(&format!("from {missing} (--github-webhook-secret-file)")),
        "{err}"
    );
    let err = serve_error(["--database-url-file", &write("spaces", " \n\t\n")]);
    assert!(err.contains("(--database-url-file) is empty"), "{err}");
    let err = serve_error(gitlab_signed_by(bad_token));
    assert!(
        err.contains("--gitlab-signing-token-file") && err.contains("whsec_"),
        "{err}"
    );
    assert!(!err.contains("topsecret"), "{err}");
    // A secret and its file for one value: refused, and the value not shown.
    let database = s.path("database");
    let err = serve_refused(
        &["--database-url-file", &database],
        &[("CASCADE_DATABASE_URL", "postgres://u:pg-env-pass@db/x")],
    );
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(!err.contains("pg-env-pass"), "{err}");
}

/// `plan` and `drift` run terraform: with a `.cascade.yaml` they cannot read they refuse,
/// naming the file and line, instead of running with the defaults (another executor, no
/// `ignore`); nothing is planned and no run is recorded. `graph` still reports and goes on.
#[test]
fn plan_and_drift_refuse_a_broken_cascade_yaml() {
    let repo = support::example_repo();
    let dir = repo.path();
    let config = dir.join(".cascade.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let line = text.lines().count() + 2;
    std::fs::write(&config, format!("{text}\nretries:\n  attempts: 0\n")).unwrap();
    for (args, command) in [
        (
            &["plan", "--changed", "global/dns/main.tf"][..],
            "cascade plan",
        ),
        (&["drift"][..], "cascade drift"),
    ] {
        let (code, out, err) = cascade(args, dir);
        assert_ne!(code, 0, "{command}: {out}");
        assert!(out.is_empty(), "{command} printed a report: {out}");
        assert!(
            err.contains(&format!(".cascade.yaml:{}", line + 1)),
            "{command}: {err}"
        );
        assert!(err.contains("attempts"), "{command}: {err}");
        assert!(
            err.contains(&format!("run `{command}` again")),
            "{command}: {err}"
        );
    }
    assert!(!dir.join(".cascade/runs").exists(), "a run was recorded");
    // `graph` lists the problem with the rest of the graph (and exits 1 for problems).
    let (code, out, err) = cascade(&["graph"], dir);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("critical path"), "{out}");
    assert!(format!("{out}{err}").contains("attempts"), "{out}{err}");
}

/// The bytes of each secret, to compare with what the flags gave.
fn exposed(secrets: &[SecretSlice<u8>]) -> Vec<Vec<u8>> {
    secrets.iter().map(|s| s.expose_secret().to_vec()).collect()
}

#[test]
fn plan_and_affected_without_a_change_name_both_ways_to_give_one() {
    for command in ["plan", "affected"] {
        let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
            .arg(command)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--changed <CHANGED>") && err.contains("--base <BASE>"),
            "{command}: {err}"
        );
    }
}
