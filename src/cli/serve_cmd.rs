//! `cascade serve`: flags (each with a `CASCADE_*` environment twin) to the server.
//! Each forge (the GitHub App, a GitLab instance) is configured by all of its
//! flags or none: a half-configured forge is an error naming what is missing,
//! never a server that quietly serves less. Without the GitHub flags the server
//! serves the App the setup page stored in the data directory, and with no forge
//! at all it serves the setup page (`--github-url` says where GitHub is).

use super::serve_secrets::{
    DATABASE_URL, GITHUB_WEBHOOK_SECRET, GITLAB_SIGNING_TOKEN, GITLAB_WEBHOOK_SECRET,
};
use crate::bot::AllowedOwners;
use crate::event::gitlab::{SigningKey, WebhookSecrets};
use crate::server::{
    GitHubServeConfig, GitLabServeConfig, HttpLimits, ServeConfig, SetupConfig, serve,
};
use anyhow::{Context, bail};
use clap::builder::RangedU64ValueParser;
use secrecy::{SecretSlice, SecretString};
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// How `cascade serve` writes its log to stderr.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// One line per event for people: time, level, spans, message, fields.
    Text,
    /// One JSON object per line, with the current span, for a log collector.
    Json,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// How the log on stderr is written (default: text when stderr is a terminal, json
    /// otherwise, as under systemd, Docker or Kubernetes).
    #[arg(long, env = "CASCADE_LOG_FORMAT", value_enum)]
    log_format: Option<LogFormat>,
    /// Address to listen on.
    #[arg(long, env = "CASCADE_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
    /// Where the database, workspaces, runs and logs live.
    #[arg(long, env = "CASCADE_DATA_DIR", default_value = "cascade-data")]
    data_dir: PathBuf,
    /// `sqlite://PATH`, or `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (default: a SQLite
    /// file in the data directory). A URL holding a password is refused as a flag: use the
    /// environment variable or --database-url-file.
    #[arg(long, env = "CASCADE_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// A file holding the database URL.
    #[arg(
        long,
        env = "CASCADE_DATABASE_URL_FILE",
        conflicts_with = "database_url"
    )]
    database_url_file: Option<PathBuf>,
    /// The GitHub App's id.
    #[arg(long, env = "CASCADE_GITHUB_APP_ID")]
    github_app_id: Option<u64>,
    /// The GitHub App's private key (PEM), as downloaded from the App's settings.
    #[arg(long, env = "CASCADE_GITHUB_PRIVATE_KEY_FILE")]
    github_private_key_file: Option<PathBuf>,
    /// Webhook secret; separate with commas to accept several while rotating. Refused as a
    /// flag: set the environment variable or use --github-webhook-secret-file.
    #[arg(
        long,
        env = "CASCADE_GITHUB_WEBHOOK_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    github_webhook_secret: Vec<String>,
    /// A file holding the webhook secret (several: one per line, or comma-separated).
    #[arg(long, env = "CASCADE_GITHUB_WEBHOOK_SECRET_FILE")]
    github_webhook_secret_file: Option<PathBuf>,
    /// GitHub's API (GitHub Enterprise: https://HOST/api/v3).
    #[arg(
        long,
        env = "CASCADE_GITHUB_API_URL",
        default_value = "https://api.github.com"
    )]
    github_api_url: String,
    /// GitHub's web root, where the setup page creates the App (GitHub Enterprise: https://HOST).
    #[arg(long, env = "CASCADE_GITHUB_URL", default_value = "https://github.com")]
    github_url: String,
    /// The GitLab instance's root URL (`https://gitlab.com`, or a self-managed
    /// `https://HOST`); the API is under `URL/api/v4`.
    #[arg(long, env = "CASCADE_GITLAB_URL")]
    gitlab_url: Option<String>,
    /// A file holding the GitLab access token cascade acts with.
    #[arg(long, env = "CASCADE_GITLAB_TOKEN_FILE")]
    gitlab_token_file: Option<PathBuf>,
    /// The GitLab webhook's secret token; separate with commas to accept several while
    /// rotating (`PROJECT=SECRET` for one project only, as in the file). Refused as a
    /// flag: set the environment variable or use --gitlab-webhook-secret-file.
    #[arg(
        long,
        env = "CASCADE_GITLAB_WEBHOOK_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    gitlab_webhook_secret: Vec<String>,
    /// A file holding the GitLab webhook's secret token (several: one per line, or
    /// comma-separated). A line `PROJECT=SECRET` (PROJECT a numeric project id or a
    /// path with its namespace, like `acme/platform/infra`) is a secret that speaks for
    /// that project only; a plain line speaks for every project.
    #[arg(long, env = "CASCADE_GITLAB_WEBHOOK_SECRET_FILE")]
    gitlab_webhook_secret_file: Option<PathBuf>,
    /// The GitLab webhook's signing token (`whsec_…`): deliveries must then also be signed.
    /// Refused as a flag: set the environment variable or use --gitlab-signing-token-file.
    #[arg(long, env = "CASCADE_GITLAB_SIGNING_TOKEN", hide_env_values = true)]
    gitlab_signing_token: Option<String>,
    /// A file holding the GitLab webhook's signing token.
    #[arg(
        long,
        env = "CASCADE_GITLAB_SIGNING_TOKEN_FILE",
        conflicts_with = "gitlab_signing_token"
    )]
    gitlab_signing_token_file: Option<PathBuf>,
    /// The secret flags given on the command line rather than by their environment
    /// twins, noted after parsing (`serve_secrets::given_on_command_line`): refused.
    #[arg(skip)]
    secrets_on_command_line: Vec<&'static str>,
    /// How many units plan or apply at once, over every pull request.
    #[arg(long, env = "CASCADE_PARALLELISM", default_value_t = 4)]
    parallelism: usize,
    /// Plan pull requests from forks (runs their code with this server's credentials).
    #[arg(long, env = "CASCADE_ALLOW_FORKS")]
    allow_forks: bool,
    /// Serve only repositories of this owner (repeatable; the variable takes a comma
    /// list): a GitHub user or organisation (`acme`), or a GitLab group with everything
    /// under it (`acme/platform`); `github:` or `gitlab:` before it limits it to one
    /// forge. Others get one refusal. Default: every owner.
    #[arg(
        long = "allow-owner",
        env = "CASCADE_ALLOW_OWNERS",
        value_delimiter = ',',
        value_name = "OWNER"
    )]
    allow_owners: Vec<String>,
    /// Label metrics with repository names (`cascade_drifted_units{repo}`, …). Off:
    /// `/metrics` names no repository, so whoever can read it learns nothing about them.
    #[arg(long, env = "CASCADE_METRICS_REPO_LABELS")]
    metrics_repo_labels: bool,
    #[arg(long, env = "CASCADE_TERRAFORM_BIN", default_value = "terraform")]
    terraform_bin: String,
    #[arg(long, env = "CASCADE_TOFU_BIN", default_value = "tofu")]
    tofu_bin: String,
    #[arg(long, env = "CASCADE_TERRAGRUNT_BIN", default_value = "terragrunt")]
    terragrunt_bin: String,
    /// Seconds running applies get to finish on shutdown.
    #[arg(long, env = "CASCADE_SHUTDOWN_GRACE", default_value_t = 600)]
    shutdown_grace: u64,
    /// Seconds one terraform command may run.
    #[arg(long, env = "CASCADE_UNIT_TIMEOUT", default_value_t = 1800)]
    unit_timeout: u64,
    /// Seconds one `init` may run (module and provider downloads); it holds its
    /// repository's provider cache meanwhile.
    #[arg(long, env = "CASCADE_INIT_TIMEOUT", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    init_timeout: u64,
    /// Seconds discovering one pull request may take; past it the pull request gets a failed check.
    #[arg(long, env = "CASCADE_DISCOVERY_TIMEOUT", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    discovery_timeout: u64,
    /// Seconds a replica's claims on deliveries and pull requests outlive its last
    /// heartbeat (sent every fifth of it): how soon another replica takes over a
    /// dead one's work.
    #[arg(long, env = "CASCADE_REPLICA_LEASE", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(2..=3600))]
    replica_lease: u64,
    /// Seconds between two looks for repositories due a drift run (`drift:` in their
    /// default branch's `.cascade.yaml`).
    #[arg(long, env = "CASCADE_DRIFT_TICK", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    drift_tick: u64,
    /// HTTP connections open at once; more wait until one closes.
    #[arg(long, env = "CASCADE_MAX_CONNECTIONS", default_value_t = HttpLimits::default().max_connections,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// Webhook requests handled at once; more wait (up to the 10 s request timeout).
    #[arg(long, env = "CASCADE_MAX_REQUESTS", default_value_t = HttpLimits::default().max_requests,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_requests: usize,
    /// A host the server may fetch stacks' remote sources from, besides the forge it
    /// serves (repeatable; comma-separated in the variable): `github.com`,
    /// `git.example.com:8443`, `http://10.0.0.5:3000` (plain http only when written so).
    /// A source anywhere else is not fetched, and its units stay unresolved.
    #[arg(
        long = "source-host",
        env = "CASCADE_SOURCE_HOSTS",
        value_delimiter = ','
    )]
    source_hosts: Vec<String>,
    /// A git configuration file of the operator's, the only one the server's git reads
    /// when it fetches remote sources: `url.<base>.insteadOf` rewrites to a mirror,
    /// credentials for a private catalog.
    #[arg(long, env = "CASCADE_GIT_CONFIG")]
    git_config: Option<PathBuf>,
    #[command(flatten)]
    pass: super::PassEnv,
    #[command(flatten)]
    unit_env: super::UnitEnvArgs,
    #[command(flatten)]
    sandbox: super::SandboxArgs,
    #[command(flatten)]
    plan_limits: super::PlanLimitArgs,
}

impl ServeArgs {
    /// `--log-format`, or text on a terminal and JSON lines anywhere else.
    pub fn log_format(&self) -> LogFormat {
        self.log_format
            .unwrap_or(if std::io::stderr().is_terminal() {
                LogFormat::Text
            } else {
                LogFormat::Json
            })
    }

    /// `--data-dir` made absolute: terraform runs elsewhere and must find the plugin cache and runs.
    pub fn make_paths_absolute(&mut self) -> std::io::Result<()> {
        self.data_dir = std::path::absolute(&self.data_dir)?;
        if let Some(file) = &self.git_config {
            self.git_config = Some(std::path::absolute(file)?);
        }
        Ok(())
    }

    /// Notes which secrets `matches` (this command's) took from the command line,
    /// for [`ServeArgs::into_config`] to refuse.
    pub(super) fn note_command_line(&mut self, matches: &clap::ArgMatches) {
        self.secrets_on_command_line = super::serve_secrets::given_on_command_line(matches);
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before any secret is read into memory.
    crate::private_dir::protect_process()?;
    let config = args.into_config()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(serve(config))?;
    Ok(ExitCode::SUCCESS)
}

/// The flags of one forge: which were given, by flag and environment name.
struct ForgeFlags {
    forge: &'static str,
    /// `--github-*`, `--gitlab-*`.
    prefix: &'static str,
    given: Vec<bool>,
    names: &'static [&'static str],
}

impl ForgeFlags {
    fn any(&self) -> bool {
        self.given.iter().any(|g| *g)
    }

    /// All or none; "some" is an error naming what to add.
    fn check(&self) -> anyhow::Result<bool> {
        if !self.any() {
            return Ok(false);
        }
        let missing: Vec<&str> = self
            .given
            .iter()
            .zip(self.names)
            .filter(|(given, _)| !**given)
            .map(|(_, name)| *name)
            .collect();
        if let Some((last, rest)) = missing.split_last() {
            let missing = if rest.is_empty() {
                last.to_string()
            } else {
                format!("{} and {last}", rest.join(", "))
            };
            bail!(
                "{} is only partly configured: add {missing}, or remove the {} flags to serve without it",
                self.forge,
                self.prefix,
            );
        }
        Ok(true)
    }
}

/// Non-empty secrets, each registered for redaction.
fn secrets(values: Vec<String>) -> Vec<SecretSlice<u8>> {
    values
        .into_iter()
        .filter(|s| !s.is_empty())
        .inspect(|s| crate::redact::register_secret(s))
        .map(|s| s.into_bytes().into())
        .collect()
}

impl ServeArgs {
    /// The server's configuration: each forge all-or-none, at least one, files
    /// read, and every secret registered for redaction (whatever a command
    /// prints, these never reach a log, a stored detail or a comment).
    pub(super) fn into_config(self) -> anyhow::Result<ServeConfig> {
        super::serve_secrets::refuse_command_line(
            &self.secrets_on_command_line,
            self.database_url.as_deref(),
        )?;
        let github_flags = ForgeFlags {
            forge: "the GitHub App",
            prefix: "--github-*",
            given: vec![
                self.github_app_id.is_some(),
                self.github_private_key_file.is_some(),
                self.github_webhook_secret.iter().any(|s| !s.is_empty())
                    || self.github_webhook_secret_file.is_some(),
            ],
            names: &[
                "--github-app-id (CASCADE_GITHUB_APP_ID)",
                "--github-private-key-file (CASCADE_GITHUB_PRIVATE_KEY_FILE)",
                "--github-webhook-secret-file (CASCADE_GITHUB_WEBHOOK_SECRET_FILE) or CASCADE_GITHUB_WEBHOOK_SECRET",
            ],
        };
        let gitlab_flags = ForgeFlags {
            forge: "GitLab",
            prefix: "--gitlab-*",
            given: vec![
                self.gitlab_url.is_some(),
                self.gitlab_token_file.is_some(),
                self.gitlab_webhook_secret.iter().any(|s| !s.is_empty())
                    || self.gitlab_webhook_secret_file.is_some(),
                // Optional, but only with the others.
                self.gitlab_signing_token.is_some()
                    || self.gitlab_signing_token_file.is_some()
                    || self.gitlab_url.is_some(),
            ],
            names: &[
                "--gitlab-url (CASCADE_GITLAB_URL)",
                "--gitlab-token-file (CASCADE_GITLAB_TOKEN_FILE)",
                "--gitlab-webhook-secret-file (CASCADE_GITLAB_WEBHOOK_SECRET_FILE) or CASCADE_GITLAB_WEBHOOK_SECRET",
                "--gitlab-signing-token-file (CASCADE_GITLAB_SIGNING_TOKEN_FILE) or CASCADE_GITLAB_SIGNING_TOKEN",
            ],
        };
        let (serve_github, serve_gitlab) = (github_flags.check()?, gitlab_flags.check()?);
        // Without the App's flags: the App the setup page stored, or the setup page.
        let setup = if serve_github {
            None
        } else {
            let github_url = self.github_url.trim().trim_end_matches('/').to_owned();
            if !(github_url.starts_with("https://") || github_url.starts_with("http://")) {
                bail!(
                    "--github-url must be GitHub's web root, like https://github.com or https://github.example.com"
                );
            }
            Some(SetupConfig {
                github_url,
                api_url: self.github_api_url.clone(),
            })
        };
        // cascade's secret files: unreadable to terraform, and named by a label
        // (never their path) in what a pull request sees.
        let mut sandbox = self.sandbox.config();
        for (file, label, class) in [
            (
                &self.github_private_key_file,
                "<github-app-key>",
                "the GitHub App's private key",
            ),
            (
                &self.github_webhook_secret_file,
                "<github-webhook-secret>",
                "the GitHub webhook secret",
            ),
            (
                &self.gitlab_token_file,
                "<gitlab-token>",
                "the GitLab token",
            ),
            (
                &self.gitlab_webhook_secret_file,
                "<gitlab-webhook-secret>",
                "the GitLab webhook secret",
            ),
            (
                &self.gitlab_signing_token_file,
                "<gitlab-signing-token>",
                "the GitLab signing token",
            ),
            (
                &self.database_url_file,
                "<database-url>",
                "the database's address and password",
            ),
        ] {
            if let Some(file) = file {
                crate::redact::register_server_path(file, label);
                sandbox.secrets.push((file.clone(), class));
            }
        }
        let github = match (
            serve_github,
            self.github_app_id,
            self.github_private_key_file,
        ) {
            (true, Some(app_id), Some(key_file)) => {
                let key = std::fs::read(&key_file).with_context(|| {
                    format!(
                        "cannot read the GitHub App private key {}",
                        key_file.display()
                    )
                })?;
                crate::redact::register_secret(&String::from_utf8_lossy(&key));
                Some(GitHubServeConfig {
                    app_id,
                    private_key: key.into(),
                    webhook_secrets: secrets(GITHUB_WEBHOOK_SECRET.list(
                        self.github_webhook_secret,
                        self.github_webhook_secret_file.as_deref(),
                    )?),
                    api_url: self.github_api_url,
                })
            }
            _ => None,
        };
        let gitlab = match (serve_gitlab, self.gitlab_url, self.gitlab_token_file) {
            (true, Some(url), Some(token_file)) => Some(gitlab_config(
                url,
                &token_file,
                WebhookSecrets::parse(GITLAB_WEBHOOK_SECRET.list(
                    self.gitlab_webhook_secret,
                    self.gitlab_webhook_secret_file.as_deref(),
                )?),
                GITLAB_SIGNING_TOKEN.one(
                    self.gitlab_signing_token,
                    self.gitlab_signing_token_file.as_deref(),
                )?,
            )?),
            _ => None,
        };
        crate::exec::set_default_pass_env(self.pass.names.clone());
        Ok(ServeConfig {
            listen: self.listen,
            data_dir: self.data_dir,
            database_url: DATABASE_URL
                .one(self.database_url, self.database_url_file.as_deref())?
                .map(SecretString::from),
            github,
            gitlab,
            setup,
            parallelism: self.parallelism,
            allow_forks: self.allow_forks,
            terraform_bin: self.terraform_bin,
            // This very binary: `cascade policy-worker` evaluates one policy set.
            policy_worker: std::env::current_exe().ok(),
            tofu_bin: self.tofu_bin,
            terragrunt_bin: self.terragrunt_bin,
            shutdown_grace: Duration::from_secs(self.shutdown_grace),
            unit_timeout: Duration::from_secs(self.unit_timeout),
            init_timeout: Duration::from_secs(self.init_timeout),
            plan_limits: self.plan_limits.limits()?,
            unit_env: self.unit_env.load()?,
            sandbox,
            discovery_timeout: Duration::from_secs(self.discovery_timeout),
            replica_lease: Duration::from_secs(self.replica_lease),
            drift_tick: Duration::from_secs(self.drift_tick),
            allowed_owners: AllowedOwners::parse(&self.allow_owners)?,
            sources: crate::catalog::ServerSources {
                hosts: crate::catalog::SourceHosts::parse(&self.source_hosts)?,
                git_config: match self.git_config {
                    Some(file) if !file.is_file() => bail!(
                        "--git-config {}: no such file; give the git configuration file the server's git should read",
                        file.display()
                    ),
                    other => other,
                },
            },
            metrics_repo_labels: self.metrics_repo_labels,
            http: HttpLimits {
                max_connections: self.max_connections,
                max_requests: self.max_requests,
                ..HttpLimits::default()
            },
        })
    }
}

fn gitlab_config(
    url: String,
    token_file: &std::path::Path,
    webhook_secrets: WebhookSecrets,
    signing_token: Option<String>,
) -> anyhow::Result<GitLabServeConfig> {
    let url = url.trim().trim_end_matches('/').to_owned();
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        bail!(
            "--gitlab-url must be the instance's root URL, like https://gitlab.com or https://gitlab.example.com"
        );
    }
    let token = std::fs::read_to_string(token_file).with_context(|| {
        format!(
            "cannot read the GitLab token file {} (--gitlab-token-file)",
            token_file.display()
        )
    })?;
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!(
            "the GitLab token file {} is empty: put a project, group or personal access token in it",
            token_file.display()
        );
    }
    crate::redact::register_secret(&token);
    for secret in webhook_secrets.values() {
        crate::redact::register_secret(&String::from_utf8_lossy(secret));
    }
    let signing_key = signing_token
        .map(|t| {
            crate::redact::register_secret(&t);
            SigningKey::parse(&t).context(
                "the GitLab signing token (CASCADE_GITLAB_SIGNING_TOKEN, --gitlab-signing-token-file)",
            )
        })
        .transpose()?;
    Ok(GitLabServeConfig {
        url,
        token: token.into(),
        webhook_secrets,
        signing_key,
    })
}
