//! Git over smart HTTP as a forge serves it, for the fakes (`fake_github`, `fake_gitlab`):
//! `git-http-backend` run as a CGI for each request (https://git-scm.com/docs/git-http-backend),
//! fetches only. Each fake decides first whether the request is authorised (its forge's
//! rule for the `Authorization` header) and which bare repository it names; this serves it.

use std::path::Path;
use std::process::Stdio;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncWriteExt;

const BACKEND: &str = "/usr/lib/git-core/git-http-backend";

/// Largest request body a fake reads (a fetch negotiation is small).
const MAX_BODY: usize = 16 << 20;

/// The repository path and the rest of a git request's path: `acme/infra` and
/// `info/refs` for `/acme/infra.git/info/refs`.
pub fn split_path(path: &str) -> Option<(&str, &str)> {
    path.trim_start_matches('/').split_once(".git/")
}

/// Whether `rest?query` asks for a fetch (`info/refs?service=git-upload-pack` or
/// `git-upload-pack`); a push is refused by both forges' fakes.
pub fn is_fetch(rest: &str, query: &str) -> bool {
    rest == "info/refs" && query.contains("service=git-upload-pack") || rest == "git-upload-pack"
}

/// 401 with the `WWW-Authenticate` challenge of `realm`, as a forge answers a git request
/// without credentials it accepts.
pub fn unauthorized(realm: &str, body: &'static str) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
    response.headers_mut().insert(
        "www-authenticate",
        HeaderValue::from_str(&format!("Basic realm=\"{realm}\"")).unwrap(),
    );
    response
}

/// The token of an `Authorization: Basic` header (the password), and its user name.
pub fn basic_credentials(request: &Request) -> Option<(String, String)> {
    use base64::Engine as _;
    let auth = request.headers().get("authorization")?.to_str().ok()?;
    let basic = auth.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(basic.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Serves a fetch request for `rest` (`info/refs`, `git-upload-pack`) of the bare
/// repository `origin`: anything but a fetch is 403.
pub async fn serve(origin: &Path, rest: &str, request: Request, refused: &'static str) -> Response {
    let query = request.uri().query().unwrap_or_default().to_string();
    if !is_fetch(rest, &query) {
        return (StatusCode::FORBIDDEN, refused).into_response();
    }
    cgi(origin, rest, &query, request).await
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

/// The head of `branch` in the bare repository at `origin`, if both exist.
/// Whether `sha` is a commit of the bare repository `origin` (any branch's, or none's).
pub fn has_commit(origin: &Path, sha: &str) -> bool {
    origin.is_dir()
        && std::process::Command::new("git")
            .arg("-C")
            .arg(origin)
            .args(["cat-file", "-e"])
            .arg(format!("{sha}^{{commit}}"))
            .status()
            .is_ok_and(|s| s.success())
}

pub fn branch_head(origin: &Path, branch: &str) -> Option<String> {
    if !origin.is_dir() {
        return None;
    }
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

/// Points (or pushes) `refs/<kind>/<number>/head` of the bare repository `origin` at
/// `sha`, as GitHub (`pull`) and GitLab (`merge-requests`) keep every change request's
/// head in the base repository; a fork's commits reach it only that way. With
/// `head_repo` (a fork's own repository) the head is pushed from there. Heads that exist
/// nowhere (tests that never fetch) are left alone.
pub fn sync_head_ref(origin: &Path, kind: &str, number: u64, sha: &str, head_repo: Option<&Path>) {
    if !origin.is_dir() {
        return;
    }
    let head_ref = format!("refs/{kind}/{number}/head");
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
                &format!("{sha}:{head_ref}"),
            ],
        ),
        None => {
            git(origin, &["cat-file", "-e", &format!("{sha}^{{commit}}")])
                && git(origin, &["update-ref", &head_ref, sha])
        }
    };
    assert!(
        done || head_repo.is_none(),
        "the fake forge could not push {sha} to {head_ref}"
    );
}
