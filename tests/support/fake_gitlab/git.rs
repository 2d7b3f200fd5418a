//! Git over smart HTTP from the fake's own address, as GitLab serves
//! `https://host/<path>.git`: `git-http-backend` run as CGI for each request, behind
//! GitLab's rule that a private project needs credentials (HTTP Basic, any username,
//! the token as password; otherwise 401 with `WWW-Authenticate: Basic realm="GitLab"`).
//! Only fetching is served; a push is refused. Each request is logged with whether it
//! was authorised, never with its credentials.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncWriteExt;

use super::{Shared, routes};

const BACKEND: &str = "/usr/lib/git-core/git-http-backend";

/// Largest request body the fake reads (a fetch negotiation is small).
const MAX_BODY: usize = 16 << 20;

pub(super) async fn serve(fake: Arc<Shared>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    let (origin, rest) = {
        let mut model = fake.lock();
        if let Some(failure) = model.take_failure("git", false) {
            return routes::failure_response(failure);
        }
        if routes::token_user(&model, request.headers()).is_none() {
            let mut response =
                (StatusCode::UNAUTHORIZED, "HTTP Basic: Access denied\n").into_response();
            response.headers_mut().insert(
                "www-authenticate",
                HeaderValue::from_static("Basic realm=\"GitLab\""),
            );
            return response;
        }
        let Some((project_path, rest)) = path.trim_start_matches('/').split_once(".git/") else {
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
    let service_ok = rest == "info/refs" && query.contains("service=git-upload-pack")
        || rest == "git-upload-pack";
    if !service_ok {
        return (
            StatusCode::FORBIDDEN,
            "The fake GitLab serves fetches only.\n",
        )
            .into_response();
    }
    cgi(&origin, &rest, &query, request).await
}

/// Runs `git-http-backend` for `<origin>/<rest>` and turns its CGI answer into a response.
async fn cgi(origin: &Path, rest: &str, query: &str, request: Request) -> Response {
    let (content_type, encoding, protocol) = cgi_headers(&request);
    let method = request.method().to_string();
    let body = match axum::body::to_bytes(request.into_body(), MAX_BODY).await {
        Ok(body) => body,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "too large\n").into_response(),
    };
    let root = origin.parent().expect("an origin has a parent directory");
    let name = origin.file_name().unwrap().to_string_lossy();
    let mut child = tokio::process::Command::new(BACKEND)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", format!("/{name}/{rest}"))
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", &method)
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", encoding)
        .env("GIT_PROTOCOL", protocol)
        .env("REMOTE_USER", "cascade")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-http-backend runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = child
        .wait_with_output()
        .await
        .expect("git-http-backend finishes");
    let _ = writer.await;
    parse_cgi(&out.stdout)
}

/// The request headers git-http-backend reads, read before any await (a borrowed body
/// is not `Sync`, so a borrow must not live across one).
fn cgi_headers(request: &Request) -> (String, String, String) {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    (
        header("content-type"),
        header("content-encoding"),
        header("git-protocol"),
    )
}

/// A CGI answer: headers (with an optional `Status:`), a blank line, the body.
fn parse_cgi(out: &[u8]) -> Response {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, gap)) = split else {
        return (
            StatusCode::BAD_GATEWAY,
            "git-http-backend answered nothing\n",
        )
            .into_response();
    };
    let head = String::from_utf8_lossy(&out[..end]);
    let mut response = Response::new(Body::from(out[end + gap..].to_vec()));
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(500);
            *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
        } else if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// GitLab keeps every merge request's head at `refs/merge-requests/<iid>/head` in the
/// target project; a fork's commits reach it only that way. The fake does the same in
/// the project's bare repository: it pushes the head from `head_repo` (a fork) or points
/// the ref at a commit the project already has. Heads that exist nowhere (tests that
/// never fetch) are left alone.
/// The head of `branch` in the bare repository at `origin`, if it has one.
pub(super) fn branch_head(origin: &Path, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(origin)
        .args(["rev-parse", "--verify", "-q"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(super) fn sync_mr_ref(origin: &Path, iid: u64, sha: &str, head_repo: Option<&Path>) {
    if !origin.is_dir() {
        return;
    }
    let mr_ref = format!("refs/merge-requests/{iid}/head");
    let git = |dir: &Path, args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let done = match head_repo {
        Some(fork) => git(
            fork,
            &[
                "push",
                "-q",
                "--force",
                &origin.to_string_lossy(),
                &format!("{sha}:{mr_ref}"),
            ],
        ),
        None => {
            git(origin, &["cat-file", "-e", &format!("{sha}^{{commit}}")])
                && git(origin, &["update-ref", &mr_ref, sha])
        }
    };
    assert!(
        done || head_repo.is_none(),
        "the fake GitLab could not push {sha} to {mr_ref}"
    );
}
