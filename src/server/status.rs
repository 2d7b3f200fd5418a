//! The status page at `/`: cascade's version, the forges this server serves (the
//! GitHub App, with a link to it or to `/setup`; the GitLab instance), and the
//! sandbox terraform runs in, for whoever opens the server's address.
//!
//! Shows what the server was configured with and nothing a request carries (no
//! header, no query is read), every value HTML-escaped by the template engine.
//! Never shows a key, a secret, a token or a path of the server's; the App's id,
//! the GitLab origin and the sandbox line are no secret (`/healthz` says the last).

use super::AppState;
use crate::exec::sandbox::SandboxState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use handlebars::Handlebars;
use serde::Serialize;
use std::sync::{Arc, OnceLock};

/// The GitHub App the setup page created (now, or at an earlier start): its page on GitHub.
#[derive(Clone, Debug)]
pub struct AppPage {
    pub slug: String,
    /// `https://github.com/apps/<slug>`.
    pub url: String,
}

#[derive(Serialize)]
struct GitHubStatus {
    app_id: Option<u64>,
    app_name: Option<String>,
    app_url: Option<String>,
    /// No App yet, and the setup page can create one.
    setup: bool,
}

#[derive(Serialize)]
struct StatusPage {
    version: &'static str,
    github: GitHubStatus,
    /// The GitLab instance's origin, when GitLab is served.
    gitlab: Option<String>,
    sandbox: String,
    /// `ok`, `warning` or `error`: how the sandbox line is shown.
    sandbox_class: &'static str,
}

fn pages() -> &'static Handlebars<'static> {
    static PAGES: OnceLock<Handlebars<'static>> = OnceLock::new();
    PAGES.get_or_init(|| {
        let mut pages = Handlebars::new();
        pages.set_strict_mode(true);
        // HTML escaping is the registry's default and stays on.
        for (name, text) in [
            ("style", include_str!("../../templates/setup/style.hbs")),
            (
                "status",
                include_str!("../../templates/setup/status.html.hbs"),
            ),
        ] {
            pages
                .register_template_string(name, text)
                .expect("the status page's templates are part of the binary and parse");
        }
        pages
    })
}

fn status_page(state: &AppState) -> StatusPage {
    let app = state.bot.forges.github();
    let page = state.github_app_page.load_full();
    let sandbox = state.bot.sandbox();
    StatusPage {
        version: env!("CARGO_PKG_VERSION"),
        github: GitHubStatus {
            app_id: app.as_ref().map(|app| app.app_id()),
            app_name: page.as_ref().map(|p| p.slug.clone()),
            app_url: app.and(page).map(|p| p.url.clone()),
            setup: state.setup.is_some(),
        },
        gitlab: state.gitlab.as_ref().map(|g| g.origin.serialized()),
        sandbox: sandbox.describe(),
        sandbox_class: match sandbox.state() {
            SandboxState::Enforced { .. } => "ok",
            SandboxState::Unconfined { .. } => "warning",
            SandboxState::Refusing { .. } => "error",
        },
    }
}

/// `GET /`: the status page.
pub async fn show(State(state): State<Arc<AppState>>) -> Response {
    match pages().render("status", &status_page(&state)) {
        Ok(html) => (StatusCode::OK, super::setup::page_headers(), html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot render the status page");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
