//! The setup page: a server started with no forge creates its GitHub App
//! through GitHub's App manifest flow and serves it without a restart.
//!
//! `GET /setup` shows one form (this server's public URL, prefilled from the
//! request, and an optional organisation); `POST /setup` answers GitHub's
//! manifest form (the manifest from `forge::github::manifest`, and a `state`
//! this server issued and remembers for an hour); GitHub sends the browser to
//! `GET /setup/callback?code=…&state=…`, where a remembered state is spent,
//! the code exchanged for the App, the App stored (`stored_app`) and swapped
//! into the bot and the webhook receiver; the page links to the App's install
//! page. Every page is off (404) once a GitHub App is served.
//!
//! A public URL GitHub cannot reach (loopback, private, link-local, a local name:
//! `public_address`) gets a warning on the form and on GitHub's form, never a refusal:
//! people test through tunnels, and a GitHub Enterprise Server may be on the same network.
//!
//! Everything a request carries is hostile: forms are bounded, URLs parsed and
//! rebuilt, every rendered value HTML-escaped by the template engine. Never
//! shows, logs or keeps in memory beyond the swap the App's key or secret.
//! Whoever reaches this server first can finish its setup: the page is meant
//! for the minutes after the first start.

use super::AppState;
use super::stored_app::StoredApp;
use crate::forge::github::GitHubApp;
use crate::forge::github::manifest::{
    APP_EVENTS, APP_PERMISSIONS, NewApp, PermissionScope, app_manifest, convert_manifest,
};
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use handlebars::Handlebars;
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq as _;

/// Where the setup page creates the App, and where a created App is served from.
#[derive(Clone, Debug)]
pub struct SetupConfig {
    /// GitHub's web root (`https://github.com`, or a GitHub Enterprise Server's `https://HOST`).
    pub github_url: String,
    /// GitHub's API (`https://api.github.com`, `https://HOST/api/v3`).
    pub api_url: String,
}

/// The longest public URL the form takes.
const MAX_URL: usize = 512;
/// GitHub's longest organisation name.
const MAX_ORG: usize = 39;
/// The largest setup form body.
pub(super) const MAX_FORM_BYTES: usize = 4096;
/// States remembered at once; the oldest is forgotten first.
const MAX_PENDING: usize = 32;
/// GitHub's code lives an hour; so does the state that asked for it.
const STATE_LIFETIME: Duration = Duration::from_secs(3600);
/// The longest `code` or `state` the callback reads.
const MAX_PARAM: usize = 128;

/// The setup page's state: the pages, and the states issued and not yet spent.
pub struct Setup {
    config: SetupConfig,
    data_dir: PathBuf,
    pages: Handlebars<'static>,
    pending: Mutex<VecDeque<(String, Instant)>>,
    /// One callback at a time finishes the setup.
    finishing: tokio::sync::Mutex<()>,
}

#[derive(Serialize)]
struct FormPage<'a> {
    public_url: &'a str,
    organization: &'a str,
    error: Option<&'a str>,
    /// Why GitHub cannot reach the URL in the form, when it cannot (`public_address`).
    warning: Option<String>,
    max_url: usize,
    max_org: usize,
}

#[derive(Serialize)]
struct PermissionRow {
    title: String,
    access: &'static str,
}

#[derive(Serialize)]
struct ManifestPage {
    action: String,
    manifest: String,
    owner: String,
    webhook_url: String,
    events: &'static [&'static str],
    permissions: Vec<PermissionRow>,
    /// Why GitHub cannot reach the URL given, when it cannot: a warning, not a refusal.
    warning: Option<String>,
}

#[derive(Serialize)]
struct DonePage<'a> {
    slug: &'a str,
    install_url: &'a str,
}

#[derive(Serialize)]
struct MessagePage<'a> {
    title: &'a str,
    message: &'a str,
}

/// What the first form sends.
#[derive(Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    public_url: String,
    #[serde(default)]
    organization: String,
}

/// What GitHub sends back.
#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
}

impl Setup {
    pub fn new(config: SetupConfig, data_dir: PathBuf) -> anyhow::Result<Setup> {
        let mut pages = Handlebars::new();
        pages.set_strict_mode(true);
        // HTML escaping is the registry's default and stays on.
        for (name, text) in [
            ("style", include_str!("../../templates/setup/style.hbs")),
            ("form", include_str!("../../templates/setup/form.html.hbs")),
            (
                "manifest",
                include_str!("../../templates/setup/manifest.html.hbs"),
            ),
            ("done", include_str!("../../templates/setup/done.html.hbs")),
            (
                "message",
                include_str!("../../templates/setup/message.html.hbs"),
            ),
        ] {
            pages.register_template_string(name, text)?;
        }
        Ok(Setup {
            config: SetupConfig {
                github_url: config.github_url.trim_end_matches('/').to_string(),
                api_url: config.api_url.trim_end_matches('/').to_string(),
            },
            data_dir,
            pages,
            pending: Mutex::new(VecDeque::new()),
            finishing: tokio::sync::Mutex::new(()),
        })
    }

    fn page(&self, status: StatusCode, name: &str, data: &impl Serialize) -> Response {
        match self.pages.render(name, data) {
            Ok(html) => (status, page_headers(), html).into_response(),
            Err(e) => {
                tracing::error!(error = %e, page = name, "cannot render a setup page");
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
    }

    fn message(&self, status: StatusCode, title: &str, message: &str) -> Response {
        self.page(status, "message", &MessagePage { title, message })
    }

    fn form(&self, status: StatusCode, form: &SetupForm, error: Option<&str>) -> Response {
        let page = FormPage {
            public_url: &form.public_url,
            organization: &form.organization,
            error,
            warning: public_url(&form.public_url)
                .ok()
                .and_then(|url| super::public_address::warning(&url)),
            max_url: MAX_URL,
            max_org: MAX_ORG,
        };
        self.page(status, "form", &page)
    }

    /// A new unguessable state, remembered for [`STATE_LIFETIME`].
    fn issue_state(&self) -> anyhow::Result<String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| anyhow::anyhow!("the system has no randomness to offer: {e}"))?;
        let state = hex::encode(bytes);
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|(_, at)| at.elapsed() < STATE_LIFETIME);
        while pending.len() >= MAX_PENDING {
            pending.pop_front();
        }
        pending.push_back((state.clone(), Instant::now()));
        Ok(state)
    }

    /// Spends `state` when this server issued it within the hour.
    fn take_state(&self, state: &str) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|(_, at)| at.elapsed() < STATE_LIFETIME);
        // Every entry is compared, in constant time each: the answer's timing tells nothing.
        let mut found = None;
        for (i, (issued, _)) in pending.iter().enumerate() {
            if bool::from(issued.as_bytes().ct_eq(state.as_bytes())) {
                found = Some(i);
            }
        }
        found.and_then(|i| pending.remove(i)).is_some()
    }
}

/// Headers of every setup page: not cached, not framed, no script, no referrer.
pub(super) fn page_headers() -> [(header::HeaderName, HeaderValue); 5] {
    [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
            ),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ]
}

/// The setup page's state when it is on: this server started with no forge and
/// serves no GitHub App yet.
fn open_setup(state: &AppState) -> Option<&Setup> {
    let setup = state.setup.as_deref()?;
    state.bot.forges.github().is_none().then_some(setup)
}

/// `GET /setup/installed`: where GitHub sends whoever installed the App (the manifest's
/// `setup_url`). A fixed page: the `installation_id` GitHub adds is not to be trusted.
pub async fn installed() -> Response {
    (
        StatusCode::OK,
        page_headers(),
        include_str!("../../templates/setup/installed.html"),
    )
        .into_response()
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

/// The first value of a header, if it is short, visible ASCII.
fn header_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let value = headers.get(name)?.to_str().ok()?;
    let first = value.split(',').next()?.trim();
    (!first.is_empty() && first.len() <= 255).then_some(first)
}

/// This server's URL as the browser reached it (through a proxy's `X-Forwarded-*`
/// when there is one), or nothing when the headers do not make a plain origin.
fn url_from_request(headers: &HeaderMap) -> String {
    let scheme = match header_value(headers, "x-forwarded-proto") {
        Some(p) if p.eq_ignore_ascii_case("https") => "https",
        _ => "http",
    };
    let Some(host) =
        header_value(headers, "x-forwarded-host").or_else(|| header_value(headers, "host"))
    else {
        return String::new();
    };
    // A host and an optional port, nothing that could carry a path or user-info.
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
    {
        return String::new();
    }
    match url::Url::parse(&format!("{scheme}://{host}")) {
        Ok(url) if url.host().is_some() => url.origin().ascii_serialization(),
        _ => String::new(),
    }
}

/// The public URL as typed, checked and rebuilt: `http(s)://host[:port][/path]`,
/// without user-info, query, fragment or a trailing `/`.
fn public_url(text: &str) -> Result<url::Url, &'static str> {
    let text = text.trim();
    if text.is_empty() {
        return Err(
            "Give the URL GitHub reaches this server at, like https://cascade.example.com.",
        );
    }
    if text.len() > MAX_URL {
        return Err("That URL is too long: give this server's address, at most 512 characters.");
    }
    let url = url::Url::parse(text).map_err(
        |_| "That is not a URL: give this server's address, like https://cascade.example.com.",
    )?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("The URL must start with https:// (or http://) and name a host.");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("The URL must not carry a user name or password.");
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("The URL must not have a query (?…) or a fragment (#…).");
    }
    Ok(url)
}

/// An organisation name as GitHub allows it: letters, digits and single inner hyphens.
fn organization(text: &str) -> Result<Option<&str>, &'static str> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let valid = text.len() <= MAX_ORG
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
        && !text.contains("--");
    if valid {
        Ok(Some(text))
    } else {
        Err(
            "An organisation name has only letters, digits and single hyphens (at most 39): leave it empty to create the App on your own account.",
        )
    }
}

/// The App's default name: `cascade-` and the host, in the characters GitHub keeps.
fn app_name(url: &url::Url) -> String {
    let host: String = url
        .host_str()
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("cascade-{host}")
}

/// `GET /setup`: the form, prefilled with this server's URL as the request reached it.
pub async fn show_form(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(setup) = open_setup(&state) else {
        return not_found();
    };
    let form = SetupForm {
        public_url: url_from_request(&headers),
        organization: String::new(),
    };
    setup.form(StatusCode::OK, &form, None)
}

/// `POST /setup`: GitHub's manifest form for the URL and organisation given.
pub async fn make_manifest(
    State(state): State<Arc<AppState>>,
    Form(form): Form<SetupForm>,
) -> Response {
    let Some(setup) = open_setup(&state) else {
        return not_found();
    };
    let checked =
        public_url(&form.public_url).and_then(|url| Ok((url, organization(&form.organization)?)));
    let (url, org) = match checked {
        Ok(checked) => checked,
        Err(why) => {
            // Echoed back escaped, and cut so a huge value is not sent back whole.
            let form = SetupForm {
                public_url: form.public_url.chars().take(MAX_URL).collect(),
                organization: form.organization.chars().take(MAX_ORG).collect(),
            };
            return setup.form(StatusCode::BAD_REQUEST, &form, Some(why));
        }
    };
    let state_value = match setup.issue_state() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot issue a setup state");
            return setup.message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Setup is not possible now",
                "This server cannot make an unguessable value. Start it with --github-app-id, --github-private-key-file and --github-webhook-secret-file instead.",
            );
        }
    };
    let base = url.as_str().trim_end_matches('/').to_string();
    let manifest = app_manifest(&app_name(&url), &base, org.is_some());
    let github = &setup.config.github_url;
    let action = match org {
        Some(org) => format!("{github}/organizations/{org}/settings/apps/new?state={state_value}"),
        None => format!("{github}/settings/apps/new?state={state_value}"),
    };
    let permissions = APP_PERMISSIONS
        .iter()
        .filter(|p| org.is_some() || p.scope == PermissionScope::Repository)
        .map(|p| PermissionRow {
            title: match p.scope {
                PermissionScope::Repository => format!("Repository → {}", p.title),
                PermissionScope::Organization => format!("Organization → {}", p.title),
            },
            access: if p.access == "write" {
                "read & write"
            } else {
                "read"
            },
        })
        .collect();
    let page = ManifestPage {
        action,
        manifest: manifest.to_string(),
        owner: org.map_or_else(
            || "your account".to_string(),
            |o| format!("the organisation {o}"),
        ),
        webhook_url: format!("{base}/webhooks/github"),
        events: &APP_EVENTS,
        permissions,
        warning: super::public_address::warning(&url),
    };
    setup.page(StatusCode::OK, "manifest", &page)
}

/// Why finishing the setup failed, as the page says it.
enum Unfinished {
    AlreadyDone,
    Failed(anyhow::Error),
}

/// `GET /setup/callback`: spends the state, fetches the App, stores it and serves it.
pub async fn callback(
    State(state): State<Arc<AppState>>,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(setup) = open_setup(&state) else {
        return not_found();
    };
    let (Some(code), Some(state_value)) = (query.code, query.state) else {
        return setup.message(
            StatusCode::BAD_REQUEST,
            "Setup link incomplete",
            "GitHub sends you here with a code and a state. Start again at /setup.",
        );
    };
    if code.len() > MAX_PARAM || state_value.len() > MAX_PARAM || !setup.take_state(&state_value) {
        tracing::warn!("refused a setup callback with a state this server did not issue");
        return setup.message(
            StatusCode::FORBIDDEN,
            "Setup link not issued here",
            "This server did not issue this setup link, or it is over an hour old or already used. Start again at /setup.",
        );
    }
    // Finished in its own task: a client that goes away (or the request timeout)
    // must not stop it between GitHub handing out the App and cascade storing it.
    let finishing = tokio::spawn({
        let state = state.clone();
        async move { finish(&state, &code).await }
    });
    match finishing.await {
        Ok(Ok(app)) => {
            let install_url = format!("{}/installations/new", app.html_url);
            setup.page(
                StatusCode::OK,
                "done",
                &DonePage {
                    slug: &app.slug,
                    install_url: &install_url,
                },
            )
        }
        Ok(Err(Unfinished::AlreadyDone)) => not_found(),
        Ok(Err(Unfinished::Failed(e))) => {
            tracing::error!(error = %format!("{e:#}"), "the GitHub App setup failed");
            setup.message(StatusCode::BAD_GATEWAY, "Setup failed", &format!("{e:#}"))
        }
        Err(e) => {
            tracing::error!(error = %e, "the GitHub App setup panicked");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The App's public face, after the credentials went where they belong.
struct Finished {
    slug: String,
    html_url: String,
}

async fn finish(state: &Arc<AppState>, code: &str) -> Result<Finished, Unfinished> {
    let Some(setup) = state.setup.as_deref() else {
        return Err(Unfinished::AlreadyDone);
    };
    let _one = setup.finishing.lock().await;
    if state.bot.forges.github().is_some() {
        return Err(Unfinished::AlreadyDone);
    }
    let app: NewApp = convert_manifest(&setup.config.api_url, code)
        .await
        .map_err(Unfinished::Failed)?;
    crate::redact::register_secret(&app.private_key_pem);
    crate::redact::register_secret(&app.webhook_secret);
    let client = GitHubApp::new(
        &setup.config.api_url,
        app.id,
        app.private_key_pem.as_bytes(),
    )
    .map_err(|e| Unfinished::Failed(e.context("GitHub handed over a key cascade cannot use")))?;
    let html_url = install_base(&app, &setup.config.github_url);
    let stored = StoredApp {
        id: app.id,
        slug: app.slug.clone(),
        html_url: html_url.clone(),
        private_key: app.private_key_pem.into_bytes().into(),
        webhook_secret: app.webhook_secret.into(),
    };
    let data_dir = setup.data_dir.clone();
    let stored = tokio::task::spawn_blocking(move || stored.save(&data_dir).map(|()| stored))
        .await
        .map_err(|e| anyhow::anyhow!("storing the App stopped: {e}"))
        .and_then(|saved| saved)
        .map_err(|e| {
            Unfinished::Failed(e.context(
                "GitHub created the App but cascade could not store it: delete the App in its GitHub settings, make the data directory writable, and start again at /setup",
            ))
        })?;
    // The client first: a delivery accepted under the new secret finds the App.
    state.bot.forges.set_github(Arc::new(client));
    state.github_secrets.store(Some(Arc::new(vec![
        stored
            .webhook_secret
            .expose_secret()
            .as_bytes()
            .to_vec()
            .into(),
    ])));
    state
        .github_app_page
        .store(Some(Arc::new(super::status::AppPage {
            slug: app.slug.clone(),
            url: html_url.clone(),
        })));
    tracing::info!(app_id = app.id, slug = %app.slug, "GitHub App created through the setup page; serving it");
    Ok(Finished {
        slug: app.slug,
        html_url,
    })
}

/// The App's page, when GitHub's answer is a plain http(s) URL; else built from
/// GitHub's web root and the slug (both checked) so the install link goes to GitHub.
fn install_base(app: &NewApp, github_url: &str) -> String {
    match url::Url::parse(&app.html_url) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.username().is_empty()
                && url.query().is_none() =>
        {
            url.as_str().trim_end_matches('/').to_string()
        }
        _ => {
            let slug: String = app
                .slug
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            format!("{github_url}/apps/{slug}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn the_url_is_prefilled_from_the_request_or_not_at_all() {
        assert_eq!(
            url_from_request(&headers(&[("host", "ci.example.com:8080")])),
            "http://ci.example.com:8080"
        );
        assert_eq!(
            url_from_request(&headers(&[
                ("host", "10.0.0.1:8080"),
                ("x-forwarded-host", "cascade.example.com, proxy.internal"),
                ("x-forwarded-proto", "https, http"),
            ])),
            "https://cascade.example.com"
        );
        for hostile in ["a\"><script>", "evil.com/path", "user@evil.com", "", "a b"] {
            assert_eq!(
                url_from_request(&headers(&[("host", hostile)])),
                "",
                "{hostile}"
            );
        }
        assert_eq!(
            url_from_request(&headers(&[
                ("host", "x.com"),
                ("x-forwarded-proto", "javascript")
            ])),
            "http://x.com"
        );
    }

    #[test]
    fn only_plain_urls_and_organisation_names_pass() {
        assert_eq!(
            public_url(" https://ci.example.com/cascade/ ")
                .unwrap()
                .as_str(),
            "https://ci.example.com/cascade/"
        );
        for bad in [
            "ftp://x.com",
            "javascript:alert(1)",
            "https://user:pw@x.com",
            "https://x.com/?a=b",
            "https://x.com/#f",
            "not a url",
            "",
            &format!("https://x.com/{}", "a".repeat(600)),
        ] {
            assert!(public_url(bad).is_err(), "{bad}");
        }
        assert_eq!(organization(" acme-corp ").unwrap(), Some("acme-corp"));
        assert_eq!(organization("").unwrap(), None);
        for bad in ["-acme", "acme-", "ac--me", "acme/x", "a b", &"a".repeat(40)] {
            assert!(organization(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_state_is_spent_once_and_only_the_newest_are_kept() {
        let setup = Setup::new(
            SetupConfig {
                github_url: "https://github.com/".into(),
                api_url: "https://api.github.com".into(),
            },
            PathBuf::from("unused"),
        )
        .unwrap();
        let first = setup.issue_state().unwrap();
        assert!(first.len() >= 16);
        assert!(!setup.take_state("not-issued"));
        assert!(!setup.take_state(""));
        assert!(setup.take_state(&first));
        assert!(!setup.take_state(&first), "a state is spent once");
        let states: Vec<String> = (0..MAX_PENDING + 1)
            .map(|_| setup.issue_state().unwrap())
            .collect();
        assert!(
            !setup.take_state(&states[0]),
            "the oldest is forgotten past the cap"
        );
        assert!(setup.take_state(&states[MAX_PENDING]));
    }
}
