//! Git over smart HTTP from the fake's own address, as GitLab serves
//! `https://host/<path>.git`: behind GitLab's rule that a private project needs
//! credentials (HTTP Basic, any username, the token as password:
//! https://docs.gitlab.com/user/profile/personal_access_tokens/; otherwise 401 with
//! `WWW-Authenticate: Basic realm="GitLab"`), then `git-http-backend`
//! (`support::git_http`). Only fetching is served; a push is refused. Each request is
//! logged with whether it was authorised, never with its credentials.

use std::path::Path;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{Shared, routes};
use crate::support::git_http;

pub(super) async fn serve(fake: Arc<Shared>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let (origin, rest) = {
        let mut model = fake.lock();
        if let Some(failure) = model.take_failure("git", false) {
            return routes::failure_response(failure);
        }
        if routes::token_user(&model, request.headers()).is_none() {
            return git_http::unauthorized("GitLab", "HTTP Basic: Access denied\n");
        }
        let Some((project_path, rest)) = git_http::split_path(&path) else {
            return (StatusCode::NOT_FOUND, "Not Found\n").into_response();
        };
        let origin = model
            .find_project(project_path)
            .and_then(|id| model.projects[&id].origin.clone());
        let Some(origin) = origin else {
            return (
                StatusCode::NOT_FOUND,
                "The project you were looking for could not be found.\n",
            )
                .into_response();
        };
        (origin, rest.to_string())
    };
    git_http::serve(
        &origin,
        &rest,
        request,
        "The fake GitLab serves fetches only.\n",
    )
    .await
}

/// The head of `branch` in the bare repository at `origin`, if it has one.
pub(super) fn branch_head(origin: &Path, branch: &str) -> Option<String> {
    git_http::branch_head(origin, branch)
}

/// GitLab keeps every merge request's head at `refs/merge-requests/<iid>/head` in the
/// target project; a fork's commits reach it only that way.
pub(super) fn sync_mr_ref(origin: &Path, iid: u64, sha: &str, head_repo: Option<&Path>) {
    git_http::sync_head_ref(origin, "merge-requests", iid, sha, head_repo);
}
