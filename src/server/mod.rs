//! `cascade serve`: the HTTP server of the GitHub App and the GitLab webhook.
//! Routes each configured forge's webhooks to its receiver (a forge that is not
//! configured has no route: 404), answers health and readiness probes, exposes
//! Prometheus metrics, and shuts down gracefully: it stops taking work and lets
//! running applies finish within a grace period. A server started with no forge
//! serves the setup page (`setup`), which creates the GitHub App and serves it
//! without a restart; a later start finds it in the data directory (`stored_app`).
//!
//! Every request is bounded ([`HttpLimits`]): connections, header and body
//! time, body size, whole-request time, webhook requests in flight. The server
//! never runs a pull request's work on its own tasks: that is the bot's, which
//! keeps discovery off the async runtime.

mod gitlab_webhook;
mod listen;
mod public_address;
mod setup;
mod status;
mod stored_app;
mod webhook;

pub use listen::HttpLimits;
pub use setup::SetupConfig;

use crate::bot::{AllowedOwners, Bot, BotConfig};
use crate::clock::SystemClock;
use crate::event::gitlab::{SigningKey, WebhookSecrets};
use crate::exec::ProcessExecutor;
use crate::forge::github::GitHubApp;
use crate::forge::{Forges, GitOrigin};
use crate::store::{AnyStore, BotStore};
use anyhow::{Context, bail};
use arc_swap::ArcSwapOption;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use metrics_exporter_prometheus::PrometheusHandle;
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

/// Everything `cascade serve` is configured with.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// `sqlite://…`, `postgres://…` or `postgresql://…` (default: `<data-dir>/cascade.db`).
    /// It may hold the database's password: `Debug` never shows it.
    pub database_url: Option<SecretString>,
    /// The GitHub App, when this server serves GitHub.
    pub github: Option<GitHubServeConfig>,
    /// The GitLab instance, when this server serves GitLab.
    pub gitlab: Option<GitLabServeConfig>,
    /// Where a GitHub App created by the setup page lives. With it and no `github`,
    /// the App stored in the data directory is served; with no forge at all and none
    /// stored, `/setup` creates one. `None`: neither.
    pub setup: Option<SetupConfig>,
    pub parallelism: usize,
    pub allow_forks: bool,
    pub terraform_bin: String,
    /// The `cascade` binary policies are evaluated in, one child process each under a
    /// memory ceiling (`exec::policy_worker`); `None`: in this process, bounded by time.
    pub policy_worker: Option<PathBuf>,
    pub tofu_bin: String,
    pub terragrunt_bin: String,
    /// How long running applies may take to finish once a shutdown starts.
    pub shutdown_grace: Duration,
    pub unit_timeout: Duration,
    /// How long one `init` may take.
    pub init_timeout: Duration,
    /// How terraform, tofu and terragrunt are confined.
    pub sandbox: crate::exec::sandbox::SandboxConfig,
    /// The largest plan JSON of one unit, and the memory all plans share.
    pub plan_limits: crate::exec::PlanLimits,
    /// The operator's per-unit credentials (`--unit-env-file`); `Debug` shows no value.
    pub unit_env: Arc<crate::exec::UnitEnv>,
    /// How long discovering one pull request (head and base) may take.
    pub discovery_timeout: Duration,
    /// How long a replica's claims and leases outlive its last heartbeat: a
    /// replica that died has its work taken over after at most about this long.
    pub replica_lease: Duration,
    /// How often each replica looks for repositories due a drift run.
    pub drift_tick: Duration,
    /// Whose repositories are served (`--allow-owner`); every owner's by default.
    pub allowed_owners: AllowedOwners,
    /// Where stacks' remote sources may be fetched from (`--source-host`, `--git-config`).
    pub sources: crate::catalog::ServerSources,
    /// Whether `/metrics` may name repositories (`--metrics-repo-labels`); off by default.
    pub metrics_repo_labels: bool,
    pub http: HttpLimits,
}

/// The GitHub App this server acts as. `Debug` never shows a secret (`secrecy`).
#[derive(Clone, Debug)]
pub struct GitHubServeConfig {
    pub app_id: u64,
    /// The App's private key (PEM).
    pub private_key: SecretSlice<u8>,
    /// Every secret is accepted (rotation).
    pub webhook_secrets: Vec<SecretSlice<u8>>,
    /// `https://api.github.com`, or `https://HOST/api/v3` on GitHub Enterprise.
    pub api_url: String,
}

/// The GitLab instance this server acts on, and how its webhook authenticates.
/// `Debug` never shows a secret (`secrecy`).
#[derive(Clone, Debug)]
pub struct GitLabServeConfig {
    /// The instance root (`https://gitlab.com`); the API is under `/api/v4`.
    pub url: String,
    /// The access token cascade acts with (read from its file, trimmed).
    pub token: SecretString,
    /// Every secret is accepted as `X-Gitlab-Token` (rotation), each for every project
    /// or for one project only.
    pub webhook_secrets: WebhookSecrets,
    /// When set, deliveries must also carry a valid Standard-Webhooks signature.
    pub signing_key: Option<SigningKey>,
}

/// How GitLab deliveries are authenticated, and the instance their projects must be at.
pub struct GitLabHookAuth {
    pub secrets: WebhookSecrets,
    pub signing_key: Option<SigningKey>,
    /// `--gitlab-url`'s origin: a delivery whose project's URLs are elsewhere is refused.
    pub origin: GitOrigin,
}

/// What the HTTP handlers share.
pub struct AppState {
    /// GitHub's webhook secrets; `None` until the setup page created the App
    /// (deliveries are answered 503), and when GitHub is not served (no route).
    pub github_secrets: ArcSwapOption<Vec<SecretSlice<u8>>>,
    /// `None` when GitLab is not served (no route).
    pub gitlab: Option<GitLabHookAuth>,
    pub store: Arc<AnyStore>,
    pub bot: Arc<Bot>,
    pub metrics: PrometheusHandle,
    /// The setup page, when this server started with no forge and no stored App.
    pub setup: Option<Arc<setup::Setup>>,
    /// The App's page on GitHub, for the status page, when the setup page created the
    /// App (now or at an earlier start); `None` for an App given by flags.
    pub github_app_page: ArcSwapOption<status::AppPage>,
}

/// A server started in this process (the binary runs one; tests run several).
pub struct RunningServer {
    pub addr: SocketAddr,
    pub bot: Arc<Bot>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// Stops taking work, lets running applies finish (within the grace period), and returns.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.task.await.context("the server task panicked")?
    }

    /// Stops at once, as a crash would: nothing is drained (tests use it to check recovery).
    pub fn abort(self) {
        self.bot.abort();
        self.task.abort();
    }
}

/// The process-wide Prometheus recorder, installed on first use (a recorder can be
/// installed once per process): `/metrics` renders it, and anything else in the process
/// that reads metrics (tests of the forge clients next to running servers) must read
/// this one rather than install its own.
pub fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The GitLab client, with its own identity read (`GET /user`): cascade must know which
/// notes are its own before it acts on any, and a wrong token should stop the start, not
/// the first merge request.
async fn connect_gitlab(
    config: &GitLabServeConfig,
) -> anyhow::Result<crate::forge::gitlab::GitLab> {
    let client = crate::forge::gitlab::GitLab::new(&config.url, config.token.expose_secret())
        .context("cannot use --gitlab-url")?;
    let me = client
        .current_user()
        .await
        .context("cannot start serving GitLab; check --gitlab-url and --gitlab-token-file")?;
    tracing::info!(gitlab = %config.url, user = %me.login, "GitLab token accepted");
    Ok(client)
}

/// Starts the server and the bot's workers; returns once it listens.
pub async fn start(mut config: ServeConfig) -> anyhow::Result<RunningServer> {
    // Flags win; else the App the setup page stored.
    let mut github_app_page = None;
    if config.github.is_none()
        && let Some(site) = &config.setup
        && let Some(app) = stored_app::StoredApp::load(&config.data_dir)?
    {
        crate::redact::register_secret(&String::from_utf8_lossy(app.private_key.expose_secret()));
        crate::redact::register_secret(app.webhook_secret.expose_secret());
        tracing::info!(app_id = app.id, slug = %app.slug, "serving the GitHub App stored in the data directory");
        github_app_page = Some(Arc::new(status::AppPage {
            slug: app.slug.clone(),
            url: app.html_url.clone(),
        }));
        config.github = Some(GitHubServeConfig {
            app_id: app.id,
            private_key: app.private_key,
            webhook_secrets: vec![
                app.webhook_secret
                    .expose_secret()
                    .as_bytes()
                    .to_vec()
                    .into(),
            ],
            api_url: site.api_url.clone(),
        });
    }
    let setup_page = match &config.setup {
        Some(site) if config.github.is_none() && config.gitlab.is_none() => Some(site.clone()),
        _ => None,
    };
    if let Some(gitlab) = &config.gitlab
        && gitlab.webhook_secrets.is_empty()
    {
        bail!(
            "no GitLab webhook secret: set CASCADE_GITLAB_WEBHOOK_SECRET or --gitlab-webhook-secret-file; cascade refuses deliveries without a token"
        );
    }
    if let Some(github) = &config.github
        && github
            .webhook_secrets
            .iter()
            .all(|secret| secret.expose_secret().is_empty())
    {
        bail!(
            "no webhook secret: set CASCADE_GITHUB_WEBHOOK_SECRET or --github-webhook-secret-file; cascade refuses unsigned deliveries"
        );
    }
    if config.github.is_none() && config.gitlab.is_none() && setup_page.is_none() {
        bail!(
            "no forge configured: give the GitHub App's flags (--github-app-id, --github-private-key-file, --github-webhook-secret-file), GitLab's (--gitlab-url, --gitlab-token-file, --gitlab-webhook-secret-file), or both"
        );
    }
    // Created private, and made private if an earlier start (or a person) left it
    // looser. Only the walk is here: the umask that keeps what the server creates
    // private is the process's, set by `cascade serve` (`private_dir::protect_process`).
    let data_dir = config.data_dir.clone();
    tokio::task::spawn_blocking(move || crate::private_dir::make_private(&data_dir))
        .await
        .context("making the data directory private panicked")??;
    let store = Arc::new(
        crate::store::open(
            config
                .database_url
                .as_ref()
                .map(ExposeSecret::expose_secret),
            &config.data_dir,
        )
        .await?,
    );
    let github = match &config.github {
        Some(github) => Some(Arc::new(
            GitHubApp::new(
                &github.api_url,
                github.app_id,
                github.private_key.expose_secret(),
            ).context(
                "cannot load the GitHub App's private key (--github-private-key-file, or github-app/ in the data directory)",
            )?,
        )),
        None => None,
    };
    let gitlab = match &config.gitlab {
        Some(gitlab) => Some(Arc::new(connect_gitlab(gitlab).await?)),
        None => None,
    };
    let gitlab_origin = gitlab.as_ref().map(|client| client.origin().clone());
    if !config.allowed_owners.is_restricted() {
        tracing::warn!(
            "no --allow-owner: cascade plans the repositories of every owner whose App \
             installation or GitLab webhook reaches it, with this server's credentials; restrict \
             it with --allow-owner OWNER (repeatable) or CASCADE_ALLOW_OWNERS=owner,group/subgroup"
        );
    }
    let sandbox = server_sandbox(&config)?;
    if !config.unit_env.is_empty() {
        tracing::info!(
            entries = config.unit_env.len(),
            "per-unit credentials (--unit-env-file): units matching an entry get its values"
        );
    }
    let executor = ProcessExecutor::new(config.data_dir.join("exec"))
        .with_sandbox(sandbox)
        .with_binary(crate::unit::Tool::Terraform, config.terraform_bin.clone())
        .with_binary(crate::unit::Tool::Tofu, config.tofu_bin.clone())
        .with_binary(crate::unit::Tool::Terragrunt, config.terragrunt_bin.clone())
        .with_grace(config.shutdown_grace)
        .with_limit(config.parallelism)
        .with_plan_limits(config.plan_limits)
        .with_unit_env(config.unit_env.clone());
    let executor = match &config.policy_worker {
        Some(exe) => {
            executor.with_policy_worker(crate::exec::policy_worker::PolicyWorker::new(exe.clone()))
        }
        None => executor,
    };
    let shutdown = CancellationToken::new();
    let bot = Bot::start(BotConfig {
        forges: Forges::new(github, gitlab),
        store: store.clone(),
        executor: Arc::new(executor),
        data_dir: config.data_dir.clone(),
        parallelism: config.parallelism.max(1),
        allow_forks: config.allow_forks,
        unit_timeout: config.unit_timeout,
        init_timeout: config.init_timeout,
        discovery_timeout: config.discovery_timeout,
        replica_lease: config.replica_lease,
        drift_tick: config.drift_tick,
        owners: config.allowed_owners.clone(),
        sources: config.sources.clone(),
        metrics_repo_labels: config.metrics_repo_labels,
        clock: Arc::new(SystemClock),
        shutdown: shutdown.clone(),
    })
    .await?;
    let setup = match setup_page {
        Some(site) => {
            tracing::info!("no forge configured: open /setup to create the GitHub App");
            Some(Arc::new(setup::Setup::new(site, config.data_dir.clone())?))
        }
        None => None,
    };
    let state = Arc::new(AppState {
        github_secrets: ArcSwapOption::new(
            config
                .github
                .as_ref()
                .map(|g| Arc::new(g.webhook_secrets.clone())),
        ),
        gitlab: match (&config.gitlab, gitlab_origin) {
            (Some(g), Some(origin)) => Some(GitLabHookAuth {
                secrets: g.webhook_secrets.clone(),
                signing_key: g.signing_key.clone(),
                origin,
            }),
            _ => None,
        },
        store,
        bot: bot.clone(),
        metrics: metrics_handle(),
        setup,
        github_app_page: ArcSwapOption::new(github_app_page),
    });
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let addr = listener.local_addr()?;
    let app = router(state, &config.http);
    let stop = shutdown.clone();
    let drain_bot = bot.clone();
    let grace = config.shutdown_grace;
    let limits = config.http.clone();
    let task = tokio::spawn(async move {
        listen::serve(listener, app, limits, stop).await;
        drain_bot.drain(grace).await;
        Ok(())
    });
    tracing::info!(%addr, "cascade is listening");
    Ok(RunningServer {
        addr,
        bot,
        shutdown,
        task,
    })
}

/// The sandbox pull requests' code runs in, with cascade's own files named:
/// `--sandbox landlock` on a kernel without Landlock stops the start; `auto`
/// there starts a server that plans nothing, and says so.
fn server_sandbox(config: &ServeConfig) -> anyhow::Result<crate::exec::sandbox::Sandbox> {
    use crate::exec::sandbox::{SandboxState, SandboxUser};
    let sandbox = config
        .sandbox
        .build(SandboxUser::Server)?
        .with_data_dir(&config.data_dir);
    match sandbox.state() {
        SandboxState::Enforced { .. } => {
            tracing::info!(sandbox = %sandbox.describe(), "terraform runs in the sandbox")
        }
        SandboxState::Refusing { why } => tracing::error!(
            why = %why,
            "no working sandbox: pull requests will not be planned; run cascade where Landlock is available, or pass --sandbox off to plan without one"
        ),
        SandboxState::Unconfined { .. } => tracing::warn!(
            "--sandbox off: pull requests' code runs with cascade's own access to its keys, database and every checkout"
        ),
    }
    Ok(sandbox)
}

/// The HTTP routes, with the per-request limits (the listener enforces the rest):
/// `/webhooks/github` when GitHub is served or set up here, `/webhooks/gitlab`
/// when `state.gitlab` is set, `/setup…` when the setup page is on; `/` (the
/// status page), the probes and `/metrics` always.
pub fn router(state: Arc<AppState>, limits: &HttpLimits) -> Router {
    // Only webhooks do work worth queueing for; probes must answer under load.
    // One limit for both forges: what it bounds is the store and the bot.
    let in_flight = GlobalConcurrencyLimitLayer::new(limits.max_requests);
    let mut routes = Router::new();
    if state.github_secrets.load().is_some() || state.setup.is_some() {
        routes = routes
            .route(
                "/webhooks/github",
                post(webhook::receive).layer(in_flight.clone()),
            )
            .route("/setup/installed", get(setup::installed));
    }
    if state.setup.is_some() {
        routes = routes
            .route(
                "/setup",
                get(setup::show_form)
                    .post(setup::make_manifest)
                    .layer(DefaultBodyLimit::max(setup::MAX_FORM_BYTES)),
            )
            .route("/setup/callback", get(setup::callback));
    }
    if state.gitlab.is_some() {
        routes = routes.route(
            "/webhooks/gitlab",
            post(gitlab_webhook::receive).layer(in_flight),
        );
    }
    routes
        .route("/", get(status::show))
        // Alive whatever the sandbox says (a restart would not give it one), and
        // saying what it says: a server without one plans nothing.
        .route(
            "/healthz",
            get(|State(s): State<Arc<AppState>>| async move {
                format!("ok\nsandbox: {}\n", s.bot.sandbox().describe())
            }),
        )
        .route("/readyz", get(readyz))
        .route(
            "/metrics",
            get(|State(s): State<Arc<AppState>>| async move { s.metrics.render() }),
        )
        .layer(DefaultBodyLimit::max(limits.max_body))
        // Outermost last: the whole-request timeout covers everything inside,
        // and an oversized Content-Length is refused before the body is touched.
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout))
        .layer(RequestBodyLimitLayer::new(limits.max_body))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .with_state(state)
}

/// How long readiness waits for the store. A probe is answered within its
/// own timeout, not after the pool's wait for a connection (PostgreSQL's keeps
/// retrying a refused connection until its acquire timeout): a store slower
/// than this is as good as gone for the webhook too.
const READY_WAIT: Duration = Duration::from_secs(2);

/// Ready when the store answers within [`READY_WAIT`] (a configured App's key was
/// loaded at start-up, or the server would not run; a server waiting for its setup
/// is ready to serve `/setup`).
async fn readyz(State(state): State<Arc<AppState>>) -> (StatusCode, &'static str) {
    match tokio::time::timeout(READY_WAIT, state.store.pending_delivery_count()).await {
        Ok(Ok(_)) => (StatusCode::OK, "ready"),
        Ok(Err(e)) => {
            tracing::warn!(error = %format!("{e:#}"), "not ready: the store does not answer");
            (StatusCode::SERVICE_UNAVAILABLE, NOT_READY)
        }
        Err(_) => {
            tracing::warn!("not ready: the store did not answer within {READY_WAIT:?}");
            (StatusCode::SERVICE_UNAVAILABLE, NOT_READY)
        }
    }
}

/// What `/readyz` answers while the store cannot be reached.
const NOT_READY: &str = "the store is not reachable; check that the database --database-url names is up and accepts connections\n";

/// Runs until SIGINT or SIGTERM, then shuts down gracefully.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let server = start(config).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down: no new work; running applies get their grace period");
    server.shutdown().await
}
