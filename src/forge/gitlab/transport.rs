//! The one road every GitLab request takes: the `gitlab` crate's typed endpoints build
//! the requests, and this transport (cascade's own [`gitlab::api::AsyncClient`]) sends
//! them with the token in `PRIVATE-TOKEN`, waits out 429s the way GitLab asks
//! (`Retry-After`, else `RateLimit-Reset`), backs off on 5xx, and counts writes.
//!
//! The token lives only in a sensitive header value: it is never in a URL, a log line,
//! an error or a `Debug` output, and it is registered with [`crate::redact`] so nothing a
//! build prints can carry it either.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bytes::Bytes;
use gitlab::api::{ApiError as CrateError, AsyncClient, RestClient};
use http::{HeaderValue, Method, Request, Response};
use url::Url;

use crate::backoff::Backoff;

/// How cascade waits when GitLab pushes back.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// The longest single wait cascade accepts; when GitLab asks for longer the call
    /// fails at once with a message saying when to try again.
    pub max_wait: Duration,
    /// First wait on a 429 that names no time; doubled on each repeat, capped at `max_wait`.
    pub rate_limit_backoff: Duration,
    /// First wait after a 5xx or a broken connection; doubled on each repeat, capped at
    /// `max_wait`.
    pub server_error_backoff: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_wait: Duration::from_secs(60),
            rate_limit_backoff: Duration::from_secs(10),
            server_error_backoff: Duration::from_secs(1),
            max_attempts: 4,
        }
    }
}

impl RetryPolicy {
    /// The waits after 429 answers that name no time.
    pub(crate) fn rate_limits(&self) -> Backoff {
        Backoff::doubling(self.rate_limit_backoff, self.max_wait)
    }

    /// The waits after 5xx answers and broken connections.
    pub(crate) fn server_errors(&self) -> Backoff {
        Backoff::doubling(self.server_error_backoff, self.max_wait)
    }
}

/// A request GitLab refused. Callers may downcast an `anyhow::Error` to this to branch
/// on `status` (404 for a note already gone, 400 for a refused status transition).
#[derive(Debug, thiserror::Error)]
#[error("GitLab {kind} failed with HTTP {status}: {message}. {advice}")]
pub struct ApiError {
    /// Names the endpoint, e.g. `notes.create`.
    pub kind: &'static str,
    pub status: u16,
    /// GitLab's own `message` (or `error`), or the start of the body.
    pub message: String,
    pub advice: String,
}

/// No answer at all: the network, TLS, or a body cut short.
#[derive(Debug, thiserror::Error)]
#[error("GitLab got no answer for {method} {path}: {reason}; check the GitLab URL and the network")]
pub struct NoAnswer {
    method: Method,
    path: String,
    reason: String,
}

/// True when `error` is a 5xx from GitLab or no answer at all: a write may or may not
/// have been stored.
pub(crate) fn is_server_failure(error: &anyhow::Error) -> bool {
    match error.downcast_ref::<ApiError>() {
        Some(api) => (500..600).contains(&api.status),
        None => error.downcast_ref::<NoAnswer>().is_some(),
    }
}

/// The status of a refusal, if `error` is one.
pub(crate) fn status_of(error: &anyhow::Error) -> Option<u16> {
    error.downcast_ref::<ApiError>().map(|e| e.status)
}

pub(crate) struct Transport {
    http: reqwest013::Client,
    /// `<instance>/api/v4/`.
    api: Url,
    token: HeaderValue,
    policy: RetryPolicy,
    write_calls: AtomicU64,
    waits: AtomicU64,
}

impl Transport {
    pub fn new(instance_url: &str, token: &str, policy: RetryPolicy) -> anyhow::Result<Transport> {
        let root = instance_url.trim().trim_end_matches('/');
        let api = Url::parse(&format!("{root}/api/v4/")).with_context(|| {
            format!(
                "the GitLab URL {root:?} is not a URL: give the instance root, e.g. \
                 https://gitlab.com or https://gitlab.example.com"
            )
        })?;
        anyhow::ensure!(
            matches!(api.scheme(), "https" | "http") && api.username().is_empty(),
            "the GitLab URL must be http(s):// without credentials (the token goes in \
             --gitlab-token-file), e.g. https://gitlab.example.com"
        );
        let token = token.trim();
        anyhow::ensure!(
            !token.is_empty(),
            "the GitLab token is empty: put a personal, group or project access token with \
             the `api` scope in the token file"
        );
        crate::redact::register_secret(token);
        let mut token = HeaderValue::from_str(token).map_err(|_| {
            anyhow::anyhow!(
                "the GitLab token holds characters a header cannot carry: check the token file \
                 holds only the token"
            )
        })?;
        token.set_sensitive(true);
        let http = reqwest013::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("cascade/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest013::redirect::Policy::none())
            .build()
            .context("could not build the GitLab HTTP client (are CA certificates installed?)")?;
        Ok(Transport {
            http,
            api,
            token,
            policy: RetryPolicy {
                max_attempts: policy.max_attempts.max(1),
                ..policy
            },
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

    /// The token, for `git fetch` over HTTPS.
    pub fn token(&self) -> String {
        String::from_utf8_lossy(self.token.as_bytes()).into_owned()
    }

    /// A client for one call of `kind`.
    pub fn call(&self, kind: &'static str) -> Call<'_> {
        Call {
            transport: self,
            kind,
            retry_server_errors: true,
            date: Mutex::new(None),
        }
    }

    /// Sends one request, retrying as GitLab asks; the final answer (success or not) is
    /// handed back for the `gitlab` crate to read.
    async fn send(
        &self,
        call: &Call<'_>,
        request: Request<Vec<u8>>,
    ) -> Result<Response<Bytes>, NoAnswer> {
        let (parts, body) = request.into_parts();
        let write = !matches!(parts.method, Method::GET | Method::HEAD);
        let path = parts.uri.path().to_string();
        let no_answer = |reason: String| NoAnswer {
            method: parts.method.clone(),
            path: path.clone(),
            reason,
        };
        let (mut limited, mut failed) = (0u32, 0u32);
        let mut attempt = 0;
        loop {
            attempt += 1;
            metrics::counter!("cascade_gitlab_calls_total", "kind" => call.kind).increment(1);
            let url = Url::parse(&parts.uri.to_string()).map_err(|e| no_answer(e.to_string()))?;
            let mut request = self.http.request(parts.method.clone(), url);
            for (name, value) in &parts.headers {
                request = request.header(name, value);
            }
            let sent = request
                .header("PRIVATE-TOKEN", self.token.clone())
                .body(body.clone())
                .send()
                .await;
            let (wait, outcome) = match sent {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let header = |name: &str| {
                        response
                            .headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    let wait = match status {
                        429 => {
                            limited += 1;
                            Some(Wait::RateLimited(rate_limit_wait(
                                header("retry-after").as_deref(),
                                header("ratelimit-reset").as_deref(),
                                self.policy.rate_limits().wait_before(limited),
                            )))
                        }
                        500..=599 if call.retry_server_errors => {
                            failed += 1;
                            Some(Wait::ServerError(
                                self.policy.server_errors().wait_before(failed),
                            ))
                        }
                        _ => None,
                    };
                    *call.date.lock().unwrap() = header("date")
                        .as_deref()
                        .and_then(|d| httpdate::parse_http_date(d).ok());
                    let mut answer = Response::builder().status(response.status());
                    for (name, value) in response.headers() {
                        answer = answer.header(name, value);
                    }
                    let bytes = response.bytes().await.map_err(|e| no_answer(describe(&e)));
                    let outcome =
                        bytes.and_then(|b| answer.body(b).map_err(|e| no_answer(e.to_string())));
                    (wait, outcome)
                }
                Err(error) => {
                    failed += 1;
                    let wait = call.retry_server_errors.then(|| {
                        Wait::ServerError(self.policy.server_errors().wait_before(failed))
                    });
                    (wait, Err(no_answer(describe(&error))))
                }
            };
            let give_up = match &wait {
                None => true,
                Some(Wait::RateLimited(w)) => {
                    attempt >= self.policy.max_attempts || *w > self.policy.max_wait
                }
                Some(Wait::ServerError(_)) => attempt >= self.policy.max_attempts,
            };
            if give_up {
                // A write GitLab refused (4xx) stored nothing: it is not counted.
                let refused = matches!(&outcome, Ok(r) if r.status().is_client_error());
                if write && !refused {
                    self.write_calls.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("cascade_gitlab_write_calls_total", "kind" => call.kind)
                        .increment(1);
                }
                return outcome;
            }
            let (wait, reason) = match wait.expect("not giving up") {
                Wait::RateLimited(w) => {
                    self.waits.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("cascade_gitlab_rate_limit_waits_total").increment(1);
                    (w, "GitLab rate limit: waiting")
                }
                Wait::ServerError(w) => (w, "GitLab failed: retrying"),
            };
            metrics::counter!("cascade_gitlab_retries_total", "kind" => call.kind).increment(1);
            tracing::warn!(
                kind = call.kind,
                wait_ms = wait.as_millis() as u64,
                "{reason}"
            );
            tokio::time::sleep(wait).await;
        }
    }
}

enum Wait {
    RateLimited(Duration),
    ServerError(Duration),
}

/// GitLab's order: `Retry-After` (seconds or an HTTP date), else `RateLimit-Reset` (Unix
/// seconds), else `fallback`.
fn rate_limit_wait(retry_after: Option<&str>, reset: Option<&str>, fallback: Duration) -> Duration {
    let now = SystemTime::now();
    if let Some(value) = retry_after.map(str::trim) {
        if let Ok(secs) = value.parse::<u64>() {
            return Duration::from_secs(secs);
        }
        if let Ok(at) = httpdate::parse_http_date(value) {
            return at.duration_since(now).unwrap_or(Duration::ZERO);
        }
    }
    if let Some(reset) = reset.and_then(|r| r.trim().parse::<u64>().ok()) {
        return (UNIX_EPOCH + Duration::from_secs(reset))
            .duration_since(now)
            .unwrap_or(Duration::ZERO);
    }
    fallback
}

/// A network error in words, without the URL (which holds no token, but is long).
fn describe(error: &reqwest013::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_body() || error.is_decode() {
        "the answer was cut short"
    } else {
        "the request failed"
    }
    .to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    crate::redact::redact(&text)
}

/// One call through the transport: what the `gitlab` crate's endpoints are queried
/// against. It remembers GitLab's clock (`Date`) from the last answer.
pub(crate) struct Call<'a> {
    transport: &'a Transport,
    pub kind: &'static str,
    /// Sent again after a 5xx or no answer. False for a create GitLab may have stored
    /// although it failed: the caller looks before sending it again.
    pub retry_server_errors: bool,
    date: Mutex<Option<SystemTime>>,
}

impl Call<'_> {
    pub fn no_server_retry(mut self) -> Self {
        self.retry_server_errors = false;
        self
    }

    /// GitLab's clock when it last answered this call.
    pub fn date(&self) -> Option<SystemTime> {
        *self.date.lock().unwrap()
    }

    /// Turns the `gitlab` crate's error into cascade's: an [`ApiError`] for a refusal,
    /// [`NoAnswer`] for the network, a plain error otherwise.
    pub fn error(&self, error: CrateError<NoAnswer>) -> anyhow::Error {
        let refused = |status: u16, message: String| {
            anyhow::Error::new(ApiError {
                kind: self.kind,
                status,
                advice: advice(self.kind, status, &self.transport.policy),
                message: crate::redact::redact(message.trim_end_matches('.')),
            })
        };
        match error {
            CrateError::Client { source } => anyhow::Error::new(source),
            CrateError::GitlabWithStatus { status, msg } => refused(status.as_u16(), msg),
            CrateError::GitlabObjectWithStatus { status, obj }
            | CrateError::GitlabUnrecognizedWithStatus { status, obj } => {
                refused(status.as_u16(), obj.to_string())
            }
            CrateError::GitlabService { status, data } => refused(
                status.as_u16(),
                String::from_utf8_lossy(&data).chars().take(200).collect(),
            ),
            CrateError::GitlabRateLimited { .. } => refused(429, "rate limited".to_string()),
            CrateError::DataType { source, typename } => anyhow::anyhow!(
                "GitLab's answer to {} is not the JSON cascade expects ({typename}: {source}); \
                 is the URL a GitLab instance root?",
                self.kind
            ),
            other => anyhow::anyhow!("GitLab {} failed: {other}", self.kind),
        }
    }
}

fn advice(kind: &str, status: u16, policy: &RetryPolicy) -> String {
    match status {
        401 => "GitLab refused the token: it is wrong, revoked or expired. Create a token with \
                the `api` scope (a project or group access token with the Developer role, or a \
                bot user's personal access token) and put it in the token file"
            .to_string(),
        403 => "The token's user lacks a permission: it needs the `api` scope and at least the \
                Developer role on the project"
            .to_string(),
        404 if kind.starts_with("members") => "Not a member".to_string(),
        404 => "It does not exist, or the token's user cannot see it: check the project and the \
                merge request, and that the token's user is a member of the project"
            .to_string(),
        429 => format!(
            "GitLab's rate limit was hit; cascade waits up to {} s for it. Wait, or raise the \
             instance's API rate limits for the token's user",
            policy.max_wait.as_secs()
        ),
        500..=599 => "GitLab failed on its side; try again later".to_string(),
        _ => "See GitLab's message above".to_string(),
    }
}

impl RestClient for Call<'_> {
    type Error = NoAnswer;

    fn rest_endpoint(&self, endpoint: &str) -> Result<Url, CrateError<NoAnswer>> {
        Ok(self.transport.api.join(endpoint)?)
    }
}

#[async_trait::async_trait]
impl AsyncClient for Call<'_> {
    async fn rest_async(
        &self,
        request: http::request::Builder,
        body: Vec<u8>,
    ) -> Result<Response<Bytes>, CrateError<NoAnswer>> {
        let request = request.body(body).map_err(|e| {
            CrateError::client(NoAnswer {
                method: Method::GET,
                path: String::new(),
                reason: format!("cascade built a bad request: {e}"),
            })
        })?;
        self.transport
            .send(self, request)
            .await
            .map_err(CrateError::client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_wins_over_reset() {
        let reset = (SystemTime::now() + Duration::from_secs(30))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .to_string();
        let fallback = Duration::from_millis(7);
        assert_eq!(
            rate_limit_wait(Some("2"), Some(&reset), fallback),
            Duration::from_secs(2)
        );
        let from_reset = rate_limit_wait(None, Some(&reset), fallback);
        assert!(from_reset > Duration::from_secs(25) && from_reset <= Duration::from_secs(30));
        assert_eq!(rate_limit_wait(None, None, fallback), fallback);
        assert_eq!(rate_limit_wait(Some("soon"), Some("x"), fallback), fallback);
    }

    #[test]
    fn the_token_stays_out_of_debug() {
        let transport = Transport::new(
            "http://127.0.0.1:9",
            "glpat-secret-token-value",
            RetryPolicy::default(),
        )
        .unwrap();
        assert!(!format!("{:?}", transport.token).contains("secret"));
        assert!(
            Transport::new(
                "gitlab.example.com",
                "t0ken-long-enough",
                RetryPolicy::default()
            )
            .is_err()
        );
        assert!(
            Transport::new("https://gitlab.example.com", "  ", RetryPolicy::default()).is_err()
        );
    }
}
