//! `cascade serve`: the GitHub App's HTTP server. Routes webhooks to the
//! receiver, answers health and readiness probes, exposes Prometheus metrics,
//! and shuts down gracefully: it stops taking work and lets running applies
//! finish within a grace period.
//!
//! Every request is bounded ([`HttpLimits`]): connections, header and body
//! time, body size, whole-request time, webhook requests in flight. The server
//! never runs a pull request's work on its own tasks: that is the bot's, which
//! keeps discovery off the async runtime.

mod listen;
mod webhook;

pub use listen::HttpLimits;

use crate::bot::{Bot, BotConfig};
use crate::exec::ProcessExecutor;
use crate::forge::Forges;
use crate::forge::github::GitHubApp;
use crate::store::{AnyStore, Store};
use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use metrics_exporter_prometheus::PrometheusHandle;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower::limit::ConcurrencyLimitLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

/// Everything `cascade serve` is configured with.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// `sqlite://…`, `postgres://…` or `postgresql://…` (default: `<data-dir>/cascade.db`).
    pub database_url: Option<String>,
    pub github_app_id: u64,
    pub github_private_key: Vec<u8>,
    /// Every secret is accepted (rotation).
    pub webhook_secrets: Vec<Vec<u8>>,
    pub github_api_url: String,
    pub parallelism: usize,
    pub allow_forks: bool,
    pub terraform_bin: String,
    pub tofu_bin: String,
    pub terragrunt_bin: String,
    /// How long running applies may take to finish once a shutdown starts.
    pub shutdown_grace: Duration,
    pub unit_timeout: Duration,
    /// How long discovering one pull request (head and base) may take.
    pub discovery_timeout: Duration,
    pub http: HttpLimits,
}

/// What the HTTP handlers share.
pub struct AppState {
    pub secrets: Vec<Vec<u8>>,
    pub store: Arc<AnyStore>,
    pub bot: Arc<Bot>,
    pub metrics: PrometheusHandle,
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

/// The process-wide Prometheus recorder (a recorder can be installed once per process).
fn metrics_handle() -> PrometheusHandle {
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

/// Starts the server and the bot's workers; returns once it listens.
pub async fn start(config: ServeConfig) -> anyhow::Result<RunningServer> {
    if config.webhook_secrets.is_empty() {
        bail!(
            "no webhook secret: set --github-webhook-secret (or CASCADE_GITHUB_WEBHOOK_SECRET); cascade refuses unsigned deliveries"
        );
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create {}", config.data_dir.display()))?;
    let store =
        Arc::new(crate::store::open(config.database_url.as_deref(), &config.data_dir).await?);
    let github = Arc::new(
        GitHubApp::new(
            &config.github_api_url,
            config.github_app_id,
            &config.github_private_key,
        )
        .context("cannot load the GitHub App's private key (--github-private-key-file)")?,
    );
    let executor = ProcessExecutor::new(config.data_dir.join("plugin-cache"))
        .with_binary(
            crate::config::Executor::Terraform,
            config.terraform_bin.clone(),
        )
        .with_binary(crate::config::Executor::Tofu, config.tofu_bin.clone())
        .with_binary(
            crate::config::Executor::Terragrunt,
            config.terragrunt_bin.clone(),
        )
        .with_grace(config.shutdown_grace)
        .with_limit(config.parallelism);
    let shutdown = CancellationToken::new();
    let bot = Bot::start(BotConfig {
        forges: Forges {
            github: Some(github),
        },
        store: store.clone(),
        executor: Arc::new(executor),
        data_dir: config.data_dir.clone(),
        parallelism: config.parallelism.max(1),
        allow_forks: config.allow_forks,
        unit_timeout: config.unit_timeout,
        discovery_timeout: config.discovery_timeout,
        shutdown: shutdown.clone(),
    })
    .await?;
    let state = Arc::new(AppState {
        secrets: config.webhook_secrets.clone(),
        store,
        bot: bot.clone(),
        metrics: metrics_handle(),
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

/// The HTTP routes, with the per-request limits (the listener enforces the rest).
pub fn router(state: Arc<AppState>, limits: &HttpLimits) -> Router {
    // Only webhooks do work worth queueing for; probes must answer under load.
    let webhook = post(webhook::receive).layer(ConcurrencyLimitLayer::new(limits.max_requests));
    Router::new()
        .route("/webhooks/github", webhook)
        .route("/healthz", get(|| async { "ok" }))
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

/// Ready when the store answers (the App's key was loaded at start-up, or the server would not run).
async fn readyz(State(state): State<Arc<AppState>>) -> (StatusCode, &'static str) {
    match state.store.pending_delivery_count().await {
        Ok(_) => (StatusCode::OK, "ready"),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the store is not reachable",
        ),
    }
}

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
