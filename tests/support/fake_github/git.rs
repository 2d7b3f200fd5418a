//! Git over smart HTTP at the fake's own address, as GitHub serves
//! `https://github.com/<owner>/<name>.git` (the API's `clone_url`): a private repository
//! needs an installation token as HTTP Basic credentials with the user `x-access-token`
//! (https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/authenticating-as-a-github-app-installation#about-authentication-as-a-github-app-installation),
//! answered 401 with `WWW-Authenticate: Basic realm="GitHub"` otherwise, and 404 for a
//! repository the token's installation cannot see. Then `git-http-backend`
//! (`support::git_http`) serves the fetch; a push is refused. Each request is in the
//! fake's log like any other (path only, never its credentials).

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::Shared;
use crate::support::git_http;

/// The user name GitHub wants with an installation token.
const TOKEN_USER: &str = "x-access-token";

pub(super) async fn serve(fake: Arc<Shared>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let Some((repo, rest)) = git_http::split_path(&path) else {
        return (StatusCode::NOT_FOUND, "Not Found\n").into_response();
    };
    let origin = {
        let mut model = fake.lock();
        if let Some(failure) = model.failures.get_mut("git").and_then(|q| q.pop_front()) {
            return (
                StatusCode::from_u16(failure.status).unwrap(),
                failure.message,
            )
                .into_response();
        }
        let installation = git_http::basic_credentials(&request)
            .filter(|(user, _)| user == TOKEN_USER)
            .and_then(|(_, token)| {
                model
                    .tokens
                    .get(&token)
                    .map(|t| (t.installation, t.expires_at))
            })
            .filter(|(_, expires)| *expires > SystemTime::now())
            .map(|(installation, _)| installation);
        let Some(installation) = installation else {
            return git_http::unauthorized("GitHub", "Invalid username or token.\n");
        };
        let origin = model
            .repos
            .get(repo)
            .filter(|r| r.installation == installation)
            .and_then(|r| r.origin.clone());
        let Some(origin) = origin else {
            return (StatusCode::NOT_FOUND, "Repository not found.\n").into_response();
        };
        origin
    };
    git_http::serve(
        &origin,
        rest,
        request,
        "The fake GitHub serves fetches only.\n",
    )
    .await
}
