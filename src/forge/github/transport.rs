//! The one road every GitHub request takes: it attaches the App's JWT or an
//! installation token, keeps installation tokens fresh, keeps content writes
//! under GitHub's per-minute budget, and waits out rate limits and server
//! errors the way GitHub's documentation prescribes. Octocrab's own retry
//! layer is switched off so nothing retries twice.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use octocrab::Octocrab;
use tokio::time::Instant;

use super::types::WireToken;
use crate::backoff::Backoff;

/// A token is replaced this long before GitHub says it expires, so a long
/// `git fetch` or a slow walk never holds a token that dies mid-way.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// How cascade waits when GitHub pushes back.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// The longest single wait cascade accepts; when GitHub asks for longer
    /// the call fails at once with a message saying when to try again.
    pub max_wait: Duration,
    /// First wait on a secondary rate limit that names no time (GitHub: "at
    /// least one minute"); doubled on each repeat, capped at `max_wait`.
    pub secondary_backoff: Duration,
    /// First wait after a 5xx or a broken connection; doubled on each
    /// repeat, capped at `max_wait`.
    pub server_error_backoff: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_wait: Duration::from_secs(60),
            secondary_backoff: Duration::from_secs(60),
            server_error_backoff: Duration::from_secs(1),
            max_attempts: 4,
        }
    }
}

impl RetryPolicy {
    /// The waits after secondary rate limits that name no time.
    pub(crate) fn secondary(&self) -> Backoff {
        Backoff::doubling(self.secondary_backoff, self.max_wait)
    }

    /// The waits after 5xx answers and broken connections.
    pub(crate) fn server_errors(&self) -> Backoff {
        Backoff::doubling(self.server_error_backoff, self.max_wait)
    }
}

/// Content writes (comments, check runs, reactions, minimising) allowed per
/// installation in any window of `per`: GitHub's secondary limit is "no more
/// than 80 content-generating requests per minute".
#[derive(Debug, Clone, Copy)]
pub struct WriteBudget {
    pub writes: u32,
    pub per: Duration,
}

impl Default for WriteBudget {
    fn default() -> Self {
        WriteBudget {
            writes: 80,
            per: Duration::from_secs(60),
        }
    }
}

/// Who a request acts as.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Actor {
    /// The App itself, with a JWT: only `/app/...` endpoints.
    App,
    Installation(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One request, described.
pub(crate) struct Call {
    /// Names the endpoint in metrics and errors, e.g. `issues.comments.create`.
    pub kind: &'static str,
    pub method: Method,
    /// Path and query, relative to the API base (or the GraphQL base).
    pub path: String,
    pub body: Option<serde_json::Value>,
    /// Creates or changes content, so it spends the write budget.
    pub write: bool,
    pub graphql: bool,
    /// Sent again after a 5xx or no answer. False for a create that GitHub may have
    /// stored although it failed: the caller looks before sending it again.
    pub retry_server_errors: bool,
}

impl Call {
    pub fn get(kind: &'static str, path: String) -> Call {
        Call {
            kind,
            method: Method::Get,
            path,
            body: None,
            write: false,
            graphql: false,
            retry_server_errors: true,
        }
    }

    pub fn write(
        kind: &'static str,
        method: Method,
        path: String,
        body: serde_json::Value,
    ) -> Call {
        Call {
            kind,
            method,
            path,
            body: Some(body),
            write: true,
            graphql: false,
            retry_server_errors: true,
        }
    }

    /// A write without a body (`DELETE`).
    pub fn delete(kind: &'static str, path: String) -> Call {
        Call {
            kind,
            method: Method::Delete,
            path,
            body: None,
            write: true,
            graphql: false,
            retry_server_errors: true,
        }
    }
}

/// A successful answer.
pub(crate) struct Reply {
    pub body: String,
    /// The `Link: rel="next"` page, as a path relative to the API base.
    pub next: Option<String>,
    /// GitHub's clock when it answered (the `Date` header).
    pub date: Option<SystemTime>,
}

impl Reply {
    pub fn json<T: serde::de::DeserializeOwned>(&self, kind: &str) -> anyhow::Result<T> {
        serde_json::from_str(&self.body).with_context(|| {
            format!("GitHub's answer to {kind} is not the JSON cascade expects; is the API URL a GitHub API?")
        })
    }
}

/// True when `error` is a 5xx from GitHub or no answer at all: a write may or may not
/// have been stored.
pub(crate) fn is_server_failure(error: &anyhow::Error) -> bool {
    match error.downcast_ref::<ApiError>() {
        Some(api) => (500..600).contains(&api.status),
        None => error.downcast_ref::<octocrab::Error>().is_some(),
    }
}

/// A request GitHub refused. Callers may downcast an `anyhow::Error` to this to
/// branch on `status` (e.g. 422 for a comment that is too long).
#[derive(Debug, thiserror::Error)]
#[error("GitHub {method} {path} ({kind}) failed with HTTP {status}: {message}. {advice}")]
pub struct ApiError {
    pub kind: &'static str,
    pub method: &'static str,
    pub path: String,
    pub status: u16,
    /// GitHub's own `message` (and `errors[].message`), or the start of the body.
    pub message: String,
    pub advice: String,
}

struct Token {
    value: String,
    refresh_at: SystemTime,
}

/// What a refused attempt tells us to do next.
enum Next {
    Fail,
    /// The installation token was refused: mint a new one, once.
    ReAuthenticate,
    /// GitHub named the wait (`retry-after` or the primary limit's reset).
    RateLimited(Duration),
    /// A secondary limit with no time named: exponential backoff.
    Secondary,
    /// A 5xx or no answer at all.
    ServerError,
}

struct RateHeaders {
    retry_after: Option<u64>,
    remaining: Option<u64>,
    reset: Option<u64>,
    link: Option<String>,
    date: Option<String>,
}

pub(crate) struct Transport {
    /// Authenticates as the App (JWT); `user_access_token` derives installation clients.
    rest: Octocrab,
    /// Same, rooted where GitHub serves GraphQL (`/api/graphql` on Enterprise Server).
    graphql: Octocrab,
    app_id: u64,
    policy: RetryPolicy,
    budget: WriteBudget,
    tokens: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<Option<Token>>>>>,
    recent_writes: Mutex<HashMap<u64, VecDeque<Instant>>>,
    write_calls: AtomicU64,
    waits: AtomicU64,
}

impl Transport {
    pub fn new(
        api_url: &str,
        app_id: u64,
        private_key_pem: &[u8],
        policy: RetryPolicy,
        budget: WriteBudget,
    ) -> anyhow::Result<Transport> {
        let api_url = api_url.trim_end_matches('/');
        // GitHub Enterprise Server serves REST at /api/v3 and GraphQL at /api/graphql.
        let graphql_root = api_url.strip_suffix("/v3").unwrap_or(api_url);
        let client = |base: &str| -> anyhow::Result<Octocrab> {
            let key = octocrab::EncodingKey::from_rsa_pem(private_key_pem).context(
                "the GitHub App private key is not an RSA key in PEM form: use the .pem file \
                 downloaded from the App's settings page (-----BEGIN RSA PRIVATE KEY-----)",
            )?;
            Octocrab::builder()
                .base_uri(base)
                .with_context(|| format!("the GitHub API URL {base:?} is not a valid URL"))?
                .app(octocrab::models::AppId(app_id), key)
                .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
                .set_connect_timeout(Some(Duration::from_secs(10)))
                .set_read_timeout(Some(Duration::from_secs(60)))
                .add_header(
                    axum::http::header::ACCEPT,
                    "application/vnd.github+json".to_string(),
                )
                .build()
                .context("could not build the GitHub HTTP client (are CA certificates installed?)")
        };
        Ok(Transport {
            rest: client(api_url)?,
            graphql: client(graphql_root)?,
            app_id,
            policy: RetryPolicy {
                max_attempts: policy.max_attempts.max(1),
                ..policy
            },
            budget: WriteBudget {
                writes: budget.writes.max(1),
                ..budget
            },
            tokens: Mutex::default(),
            recent_writes: Mutex::default(),
            write_calls: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        })
    }

    pub fn write_calls(&self) -> u64 {
        self.write_calls.load(Ordering::Relaxed)
    }

    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub fn app_id(&self) -> u64 {
        self.app_id
    }

    /// A token for installation `id`, minted when there is none or it is
    /// within [`TOKEN_REFRESH_MARGIN`] of expiring.
    pub async fn token(&self, id: u64) -> anyhow::Result<String> {
        let slot = self.tokens.lock().unwrap().entry(id).or_default().clone();
        let mut slot = slot.lock().await;
        if let Some(token) = slot.as_ref()
            && token.refresh_at > SystemTime::now()
        {
            return Ok(token.value.clone());
        }
        let call = Call {
            kind: "apps.access_tokens",
            method: Method::Post,
            path: format!("/app/installations/{id}/access_tokens"),
            body: None,
            write: false,
            graphql: false,
            retry_server_errors: true,
        };
        let minted: WireToken = Box::pin(self.send(Actor::App, &call))
            .await
            .with_context(|| format!("could not get a token for GitHub App installation {id}"))?
            .json(call.kind)?;
        metrics::counter!("cascade_github_token_mints_total").increment(1);
        // Builds can print it (a git URL, a provider's debug output): never let it through.
        crate::redact::register_secret(&minted.token);
        // GitHub's tokens live one hour; assume so if the expiry is unreadable.
        let expires_at = minted
            .expires_at
            .as_deref()
            .and_then(crate::forge::parse_timestamp)
            .unwrap_or_else(|| SystemTime::now() + Duration::from_secs(3600));
        let refresh_at = expires_at
            .checked_sub(TOKEN_REFRESH_MARGIN)
            .unwrap_or(UNIX_EPOCH);
        *slot = Some(Token {
            value: minted.token.clone(),
            refresh_at,
        });
        Ok(minted.token)
    }

    fn forget_token(&self, id: u64) {
        let slot = self.tokens.lock().unwrap().get(&id).cloned();
        if let Some(slot) = slot
            && let Ok(mut slot) = slot.try_lock()
        {
            *slot = None;
        }
    }

    /// Sends `call` as `actor`, retrying and waiting as GitHub asks.
    pub async fn send(&self, actor: Actor, call: &Call) -> anyhow::Result<Reply> {
        if call.write {
            let Actor::Installation(id) = actor else {
                anyhow::bail!("{} writes content and needs an installation", call.kind);
            };
            self.take_write_slot(id).await;
            self.write_calls.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("cascade_github_write_calls_total", "kind" => call.kind).increment(1);
        }
        let (mut secondary, mut server, mut reauthenticated) = (0u32, 0u32, false);
        let mut attempt = 0;
        loop {
            attempt += 1;
            metrics::counter!("cascade_github_calls_total", "kind" => call.kind).increment(1);
            let (next, error) = match self.attempt(actor, call).await? {
                Ok((status, headers, body)) if (200..300).contains(&status) => {
                    let next = headers.link.as_deref().and_then(next_link);
                    let date = headers
                        .date
                        .as_deref()
                        .and_then(|d| httpdate::parse_http_date(d).ok());
                    return Ok(Reply { body, next, date });
                }
                Ok((status, headers, body)) => {
                    let error = api_error(call, status, &body, &self.policy);
                    let next = next_step(status, &headers, &error.message, actor);
                    (next, anyhow::Error::new(error))
                }
                Err(error) => (
                    Next::ServerError,
                    anyhow::Error::new(error).context(format!(
                        "GitHub {} {} ({}) got no answer; check the API URL and the network",
                        call.method.as_str(),
                        call.path,
                        call.kind
                    )),
                ),
            };
            let wait = match next {
                Next::Fail => return Err(error),
                Next::ServerError if !call.retry_server_errors => return Err(error),
                Next::ReAuthenticate if reauthenticated => return Err(error),
                Next::ReAuthenticate => {
                    reauthenticated = true;
                    if let Actor::Installation(id) = actor {
                        self.forget_token(id);
                    }
                    Duration::ZERO
                }
                Next::RateLimited(wait) => wait,
                Next::Secondary => {
                    secondary += 1;
                    self.policy.secondary().wait_before(secondary)
                }
                Next::ServerError => {
                    server += 1;
                    self.policy.server_errors().wait_before(server)
                }
            };
            if attempt >= self.policy.max_attempts {
                return Err(error.context(format!(
                    "cascade gave up on {} after {attempt} attempts",
                    call.kind
                )));
            }
            if wait > self.policy.max_wait {
                return Err(error.context(format!(
                    "GitHub asked cascade to wait {} s, longer than its limit of {} s; \
                     the call can be retried after that",
                    wait.as_secs(),
                    self.policy.max_wait.as_secs()
                )));
            }
            match next {
                Next::RateLimited(_) | Next::Secondary => {
                    self.waits.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("cascade_github_rate_limit_waits_total").increment(1);
                    metrics::counter!("cascade_github_retries_total", "kind" => call.kind, "reason" => "rate_limit").increment(1);
                    tracing::warn!(
                        kind = call.kind,
                        wait_ms = wait.as_millis() as u64,
                        "GitHub rate limit: waiting"
                    );
                }
                Next::ServerError => {
                    metrics::counter!("cascade_github_retries_total", "kind" => call.kind, "reason" => "server_error").increment(1);
                    tracing::warn!(
                        kind = call.kind,
                        wait_ms = wait.as_millis() as u64,
                        "GitHub failed: retrying"
                    );
                }
                _ => {}
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// One HTTP exchange. The outer error is cascade's own (no token); the
    /// inner one is the network's.
    async fn attempt(
        &self,
        actor: Actor,
        call: &Call,
    ) -> anyhow::Result<Result<(u16, RateHeaders, String), octocrab::Error>> {
        let base = if call.graphql {
            &self.graphql
        } else {
            &self.rest
        };
        let crab = match actor {
            Actor::App => base.clone(),
            Actor::Installation(id) => {
                let token = self.token(id).await?;
                base.user_access_token(token)
                    .context("could not attach the installation token")?
            }
        };
        let path = call.path.as_str();
        let sent = match call.method {
            Method::Get => crab._get(path).await,
            Method::Post => crab._post(path, call.body.as_ref()).await,
            Method::Patch => crab._patch(path, call.body.as_ref()).await,
            Method::Delete => crab._delete(path, call.body.as_ref()).await,
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => return Ok(Err(error)),
        };
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let number = |name: &str| header(name).and_then(|v| v.trim().parse::<u64>().ok());
        let headers = RateHeaders {
            retry_after: number("retry-after"),
            remaining: number("x-ratelimit-remaining"),
            reset: number("x-ratelimit-reset"),
            link: header("link"),
            date: header("date"),
        };
        Ok(crab
            .body_to_string(response)
            .await
            .map(|body| (status, headers, body)))
    }

    /// Waits until installation `id` has spent fewer than its budget of writes
    /// in the last window. The wait is bounded by the window.
    async fn take_write_slot(&self, id: u64) {
        loop {
            let wait = {
                let mut all = self.recent_writes.lock().unwrap();
                let recent = all.entry(id).or_default();
                let now = Instant::now();
                while recent
                    .front()
                    .is_some_and(|t| now.duration_since(*t) >= self.budget.per)
                {
                    recent.pop_front();
                }
                match recent.front() {
                    Some(oldest) if recent.len() >= self.budget.writes as usize => {
                        self.budget.per - now.duration_since(*oldest)
                    }
                    _ => {
                        recent.push_back(now);
                        return;
                    }
                }
            };
            metrics::counter!("cascade_github_write_budget_waits_total").increment(1);
            tracing::debug!(
                installation = id,
                wait_ms = wait.as_millis() as u64,
                "write budget spent: waiting"
            );
            tokio::time::sleep(wait).await;
        }
    }
}

/// GitHub's prescribed order: `retry-after`, then `x-ratelimit-reset` when
/// nothing remains, then exponential backoff for a secondary limit.
fn next_step(status: u16, headers: &RateHeaders, message: &str, actor: Actor) -> Next {
    let secondary = message
        .to_ascii_lowercase()
        .contains("secondary rate limit");
    match status {
        401 if matches!(actor, Actor::Installation(_)) => Next::ReAuthenticate,
        403 | 429 => {
            if let Some(secs) = headers.retry_after {
                Next::RateLimited(Duration::from_secs(secs))
            } else if headers.remaining == Some(0)
                && let Some(reset) = headers.reset
            {
                let reset = UNIX_EPOCH + Duration::from_secs(reset);
                let wait = reset
                    .duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO);
                Next::RateLimited(wait)
            } else if secondary || status == 429 {
                Next::Secondary
            } else {
                Next::Fail
            }
        }
        500..=599 => Next::ServerError,
        _ => Next::Fail,
    }
}

fn api_error(call: &Call, status: u16, body: &str, policy: &RetryPolicy) -> ApiError {
    #[derive(serde::Deserialize)]
    struct Body {
        message: Option<String>,
        #[serde(default)]
        errors: Vec<serde_json::Value>,
    }
    let message = match serde_json::from_str::<Body>(body) {
        Ok(parsed) => {
            let mut message = parsed.message.unwrap_or_default();
            for detail in parsed.errors {
                let detail = detail
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| detail.to_string());
                message = format!("{message} ({detail})");
            }
            message
        }
        Err(_) => body.chars().take(200).collect(),
    };
    let message = message.trim_end_matches('.').to_string();
    let limited = status == 429 || message.to_ascii_lowercase().contains("rate limit");
    let advice = match status {
        _ if limited => format!(
            "GitHub's rate limit was hit; cascade waits up to {} s for it. Wait, or lower cascade's parallelism",
            policy.max_wait.as_secs()
        ),
        401 => "GitHub refused the App's credentials: check the App id and private key, and that the installation still exists".to_string(),
        403 => "The App lacks a permission: check that it is installed on the repository with pull requests, issues and checks write access".to_string(),
        404 if call.kind.starts_with("apps.") => "No such installation: check the installation id; the App may have been uninstalled".to_string(),
        404 => "It does not exist, or the App cannot see it: check the repository, the number, and that the App is installed on the repository".to_string(),
        409 | 422 => "GitHub rejected the request's content (for example a comment over 65,536 characters)".to_string(),
        500..=599 => "GitHub failed on its side; try again later (https://www.githubstatus.com)".to_string(),
        _ => "See GitHub's message above".to_string(),
    };
    ApiError {
        kind: call.kind,
        method: call.method.as_str(),
        path: call.path.clone(),
        status,
        message,
        advice,
    }
}

/// The `rel="next"` target of a `Link` header, as a path and query.
fn next_link(link: &str) -> Option<String> {
    let url = link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| url.trim().trim_start_matches('<').trim_end_matches('>'))
    })?;
    match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map(|i| rest[i..].to_string()),
        None => Some(url.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_only_the_next_link() {
        let link = r#"<https://api.github.com/repositories/1/pulls/2/files?per_page=100&page=2>; rel="next", <https://api.github.com/repositories/1/pulls/2/files?per_page=100&page=3>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("/repositories/1/pulls/2/files?per_page=100&page=2")
        );
        assert_eq!(next_link(r#"<https://x/a?page=1>; rel="prev""#), None);
    }
}
