//! `cascade serve`: flags (each with a `CASCADE_*` environment twin) to the server.

use crate::server::{HttpLimits, ServeConfig, serve};
use anyhow::Context;
use clap::builder::RangedU64ValueParser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CASCADE_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
    /// Where the database, workspaces, runs and logs live.
    #[arg(long, env = "CASCADE_DATA_DIR", default_value = "cascade-data")]
    data_dir: PathBuf,
    /// `sqlite://PATH`, or `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (default: a SQLite
    /// file in the data directory).
    #[arg(long, env = "CASCADE_DATABASE_URL")]
    database_url: Option<String>,
    /// The GitHub App's id.
    #[arg(long, env = "CASCADE_GITHUB_APP_ID")]
    github_app_id: u64,
    /// The GitHub App's private key (PEM), as downloaded from the App's settings.
    #[arg(long, env = "CASCADE_GITHUB_PRIVATE_KEY_FILE")]
    github_private_key_file: PathBuf,
    /// Webhook secret; repeat or separate with commas to accept several while rotating.
    #[arg(
        long,
        env = "CASCADE_GITHUB_WEBHOOK_SECRET",
        value_delimiter = ',',
        required = true,
        hide_env_values = true
    )]
    github_webhook_secret: Vec<String>,
    /// GitHub's API (GitHub Enterprise: https://HOST/api/v3).
    #[arg(
        long,
        env = "CASCADE_GITHUB_API_URL",
        default_value = "https://api.github.com"
    )]
    github_api_url: String,
    /// How many units plan or apply at once, over every pull request.
    #[arg(long, env = "CASCADE_PARALLELISM", default_value_t = 4)]
    parallelism: usize,
    /// Plan pull requests from forks (runs their code with this server's credentials).
    #[arg(long, env = "CASCADE_ALLOW_FORKS")]
    allow_forks: bool,
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
    /// Seconds discovering one pull request may take; past it the pull request gets a failed check.
    #[arg(long, env = "CASCADE_DISCOVERY_TIMEOUT", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    discovery_timeout: u64,
    /// HTTP connections open at once; more wait until one closes.
    #[arg(long, env = "CASCADE_MAX_CONNECTIONS", default_value_t = HttpLimits::default().max_connections,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// Webhook requests handled at once; more wait (up to the 10 s request timeout).
    #[arg(long, env = "CASCADE_MAX_REQUESTS", default_value_t = HttpLimits::default().max_requests,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    max_requests: usize,
    #[command(flatten)]
    pass: super::PassEnv,
}

impl ServeArgs {
    /// `--data-dir` made absolute: terraform runs elsewhere and must find the plugin cache and runs.
    pub fn make_paths_absolute(&mut self) -> std::io::Result<()> {
        self.data_dir = std::path::absolute(&self.data_dir)?;
        Ok(())
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let key = std::fs::read(&args.github_private_key_file).with_context(|| {
        format!(
            "cannot read the GitHub App private key {}",
            args.github_private_key_file.display()
        )
    })?;
    // Whatever a command prints, these never reach a log, a stored detail or a comment.
    for secret in &args.github_webhook_secret {
        crate::redact::register_secret(secret);
    }
    crate::redact::register_secret(&String::from_utf8_lossy(&key));
    crate::exec::set_default_pass_env(args.pass.names.clone());
    let config = ServeConfig {
        listen: args.listen,
        data_dir: args.data_dir,
        database_url: args.database_url,
        github_app_id: args.github_app_id,
        github_private_key: key,
        webhook_secrets: args
            .github_webhook_secret
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(String::into_bytes)
            .collect(),
        github_api_url: args.github_api_url,
        parallelism: args.parallelism,
        allow_forks: args.allow_forks,
        terraform_bin: args.terraform_bin,
        tofu_bin: args.tofu_bin,
        terragrunt_bin: args.terragrunt_bin,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        unit_timeout: Duration::from_secs(args.unit_timeout),
        discovery_timeout: Duration::from_secs(args.discovery_timeout),
        http: HttpLimits {
            max_connections: args.max_connections,
            max_requests: args.max_requests,
            ..HttpLimits::default()
        },
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(serve(config))?;
    Ok(ExitCode::SUCCESS)
}
