//! GitHub's App manifest flow, as GitHub documents it ("Registering a GitHub App
//! from a manifest"): the web page `POST /settings/apps/new?state=…` (or
//! `/organizations/{org}/settings/apps/new`) takes a form whose `manifest` field
//! is the App's JSON and, where GitHub would show the App and wait for the
//! "Create" click, registers it at once and redirects (302) to the manifest's
//! `redirect_url?code=…&state=…`; `POST /app-manifests/{code}/conversions`
//! (unauthenticated) answers 201 with the App's id, slug, html_url, pem and
//! webhook_secret, once per code (404 otherwise). The fake then serves that App:
//! it accepts its JWTs, attributes the App's comments and checks to it, and signs
//! the deliveries it builds with its webhook secret.
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Shared, json};

/// An App registered from a manifest, before and after its code was converted.
#[derive(Debug, Clone)]
pub struct CreatedApp {
    pub id: u64,
    pub slug: String,
    /// `None`: the person creating it owns it.
    pub organization: Option<String>,
    /// The manifest as the form posted it.
    pub manifest: Value,
    pub webhook_secret: String,
    /// The code GitHub put in the redirect; converted at most once.
    pub code: String,
    pub converted: bool,
}

/// GitHub's permission levels in a manifest.
const LEVELS: [&str; 2] = ["read", "write"];

pub fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/settings/apps/new", get(blank_form).post(personal))
        .route(
            "/organizations/{org}/settings/apps/new",
            get(blank_form).post(organization),
        )
        .route("/app-manifests/{code}/conversions", post(convert))
        .route("/apps/{slug}/installations/new", get(install_page))
}

#[derive(Deserialize)]
struct StateQuery {
    state: Option<String>,
}

#[derive(Deserialize)]
struct ManifestForm {
    manifest: Option<String>,
}

fn page(status: StatusCode, text: &str) -> Response {
    (
        status,
        Html(format!(
            "<!doctype html><title>GitHub</title><p id=\"message\">{text}</p>"
        )),
    )
        .into_response()
}

/// `GET …/settings/apps/new`: the empty registration form (the manual path).
async fn blank_form() -> Response {
    page(StatusCode::OK, "Register new GitHub App")
}

async fn personal(
    State(fake): State<Arc<Shared>>,
    Query(q): Query<StateQuery>,
    Form(form): Form<ManifestForm>,
) -> Response {
    register(&fake, None, q.state, form.manifest)
}

async fn organization(
    State(fake): State<Arc<Shared>>,
    Path(org): Path<String>,
    Query(q): Query<StateQuery>,
    Form(form): Form<ManifestForm>,
) -> Response {
    register(&fake, Some(org), q.state, form.manifest)
}

/// What GitHub checks in a manifest before it shows the App: a JSON object with a
/// `url`, an absolute `redirect_url` and `hook_attributes.url`, known permission levels.
fn check_manifest(manifest: &Value) -> Result<url::Url, &'static str> {
    if !manifest.is_object() {
        return Err("The manifest is not a JSON object.");
    }
    if manifest["url"].as_str().is_none_or(str::is_empty) {
        return Err("The manifest has no url.");
    }
    if manifest["hook_attributes"]["url"]
        .as_str()
        .and_then(|u| url::Url::parse(u).ok())
        .is_none()
    {
        return Err("The manifest's hook_attributes.url is not a URL.");
    }
    let levels_known = manifest["default_permissions"].as_object().is_none_or(|p| {
        p.values()
            .all(|l| l.as_str().is_some_and(|l| LEVELS.contains(&l)))
    });
    if !levels_known {
        return Err("The manifest has an unknown permission level.");
    }
    manifest["redirect_url"]
        .as_str()
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or("The manifest's redirect_url is not an http(s) URL.")
}

/// GitHub's slug for an App name: lower case, runs of other characters as one `-`.
fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_string()
}

fn register(
    fake: &Shared,
    organization: Option<String>,
    state: Option<String>,
    manifest: Option<String>,
) -> Response {
    let Some(text) = manifest else {
        return page(StatusCode::OK, "Register new GitHub App");
    };
    let Ok(manifest) = serde_json::from_str::<Value>(&text) else {
        return page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The manifest is not valid JSON.",
        );
    };
    let mut redirect = match check_manifest(&manifest) {
        Ok(url) => url,
        Err(why) => return page(StatusCode::UNPROCESSABLE_ENTITY, why),
    };
    let mut model = fake.lock();
    let id = model.next_id();
    let name = manifest["name"].as_str().unwrap_or("cascade");
    let slug = slug(name);
    if model.created_apps.iter().any(|a| a.slug == slug) {
        return page(StatusCode::UNPROCESSABLE_ENTITY, "Name is already in use");
    }
    let code = uuid::Uuid::new_v4().simple().to_string()[..20].to_string();
    model.created_apps.push(CreatedApp {
        id,
        slug,
        organization,
        manifest,
        webhook_secret: format!("whsec-fake-{}", uuid::Uuid::new_v4().simple()),
        code: code.clone(),
        converted: false,
    });
    redirect.query_pairs_mut().append_pair("code", &code);
    if let Some(state) = state {
        redirect.query_pairs_mut().append_pair("state", &state);
    }
    (
        StatusCode::FOUND,
        [(header::LOCATION, redirect.to_string())],
    )
        .into_response()
}

/// `POST /app-manifests/{code}/conversions`: the App and its credentials, once.
async fn convert(State(fake): State<Arc<Shared>>, Path(code): Path<String>) -> Response {
    let mut model = fake.lock();
    let Some(app) = model
        .created_apps
        .iter_mut()
        .find(|a| a.code == code && !a.converted)
    else {
        return (StatusCode::NOT_FOUND, axum::Json(json::error("Not Found"))).into_response();
    };
    app.converted = true;
    let app = app.clone();
    // From now on this GitHub serves the new App.
    model.app_id = app.id;
    model.webhook_secret = app.webhook_secret.clone();
    let owner = app.organization.clone().unwrap_or_else(|| "octocat".into());
    let now = json::timestamp(SystemTime::now());
    let body = json!({
        "id": app.id,
        "slug": app.slug,
        "node_id": format!("A_kwDOFake{}", app.id),
        "owner": json::user(&fake.url, &owner),
        "name": app.manifest["name"],
        "description": app.manifest["description"],
        "external_url": app.manifest["url"],
        "html_url": format!("{}/apps/{}", fake.url, app.slug),
        "created_at": now,
        "updated_at": now,
        "permissions": app.manifest["default_permissions"],
        "events": app.manifest["default_events"],
        "installations_count": 0,
        "client_id": format!("Iv1.fake{}", app.id),
        "client_secret": format!("fake-client-secret-{}", app.id),
        "webhook_secret": app.webhook_secret,
        "pem": String::from_utf8(super::app_key()).unwrap(),
    });
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// `GET /apps/{slug}/installations/new`: where an App is installed.
async fn install_page(State(fake): State<Arc<Shared>>, Path(slug): Path<String>) -> Response {
    let known = fake.lock().created_apps.iter().any(|a| a.slug == slug);
    if known {
        page(StatusCode::OK, "Install the App on your repositories")
    } else {
        page(StatusCode::NOT_FOUND, "Not Found")
    }
}
