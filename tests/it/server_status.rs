//! The server's status page at `/` (version, forges, sandbox; never a secret, never
//! what a request carries) and `cascade serve --log-format`: text for people, JSON
//! lines for log collectors, the real binary's stderr read back. The status page of
//! a server whose App the setup page created is in `setup_flow`.

use crate::support;
use crate::support::bot_world::{serve_config, setup_config};
use crate::support::fake_github::{APP_ID, FakeGitHub, app_key};
use crate::support::fake_gitlab::FakeGitLab;
use crate::support::html::text_of;

use cascade::server::{GitLabServeConfig, RunningServer, start};
use std::process::{Command, Stdio};
use std::time::Duration;

const GITLAB_SECRET: &str = "gitlab-webhook-secret-never-shown";

/// `GET path` on `server` with `headers`: the status, the CSP header and the page.
async fn get(
    server: &RunningServer,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut request = reqwest::Client::new().get(format!("http://{}{path}", server.addr));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let csp = response
        .headers()
        .get("content-security-policy")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        response.status().as_u16(),
        csp,
        response.text().await.unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_says_version_forges_and_sandbox_and_no_secret() {
    let fake = FakeGitHub::start().await;
    let gitlab = FakeGitLab::start().await;
    let data = tempfile::tempdir().unwrap();
    let mut config = serve_config(&fake, data.path());
    config.gitlab = Some(GitLabServeConfig {
        url: gitlab.url(),
        token: gitlab.token().into(),
        webhook_secrets: vec![GITLAB_SECRET.as_bytes().to_vec()].into(),
        signing_key: None,
    });
    let server = start(config).await.unwrap();

    let (status, csp, page) = get(&server, "/", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(
        page.contains(&format!(
            "<span id=\"version\">{}</span>",
            env!("CARGO_PKG_VERSION")
        )),
        "{page}"
    );
    assert_eq!(
        text_of(&page, "github"),
        format!("the App with id {APP_ID}, from the command line")
    );
    assert_eq!(text_of(&page, "gitlab"), gitlab.url());
    let (_, _, health) = get(&server, "/healthz", &[]).await;
    let sandbox = health.lines().find_map(|l| l.strip_prefix("sandbox: "));
    assert_eq!(Some(text_of(&page, "sandbox").as_str()), sandbox);
    for secret in [
        fake.webhook_secret(),
        GITLAB_SECRET.to_string(),
        gitlab.token().to_string(),
        String::from_utf8(app_key()).unwrap(),
        "PRIVATE KEY".to_string(),
        data.path().display().to_string(),
    ] {
        assert!(!page.contains(&secret), "the page shows {secret:?}");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_forge_the_status_page_links_to_the_setup() {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let server = start(setup_config(&fake, data.path())).await.unwrap();
    let (status, _, page) = get(&server, "/", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(text_of(&page, "github"), "no App yet: set it up");
    assert!(page.contains("<a href=\"setup\">set it up</a>"), "{page}");
    assert_eq!(text_of(&page, "gitlab"), "not served");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_echoes_nothing_a_request_carries() {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let server = start(setup_config(&fake, data.path())).await.unwrap();
    let script = "<script>alert(1)</script>";
    for (path, headers) in [
        ("/?q=%3Cscript%3Ealert(1)%3C/script%3E", vec![]),
        ("/?<script>alert(1)</script>", vec![]),
        (
            "/",
            vec![("host", "evil.example\"><script>alert(1)</script>")],
        ),
        (
            "/",
            vec![
                ("x-forwarded-host", script),
                ("x-forwarded-proto", "javascript"),
            ],
        ),
    ] {
        let (status, _, page) = get(&server, path, &headers).await;
        assert_eq!(status, 200, "{path} {headers:?}: {page}");
        assert!(!page.contains("<script"), "{path} {headers:?}: {page}");
        assert!(!page.contains("alert(1)"), "{path} {headers:?}: {page}");
        assert!(!page.contains("evil.example"), "{path} {headers:?}: {page}");
    }
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- --log-format

/// The real `cascade serve` (the setup page: no forge needed) with `args` and `env`,
/// stopped once it listens: its stderr.
fn serve_log(args: &[&str], env: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let mut command = support::setup_serve_command(data.path(), port);
    command
        .args(args)
        .envs(env.iter().copied())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let listening = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    // The "listening" line is written just after the socket opens.
    std::thread::sleep(Duration::from_millis(200));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8(out.stderr).unwrap();
    assert!(listening, "cascade serve did not listen:\n{log}");
    assert!(log.contains("cascade is listening"), "{log}");
    log
}

fn all_json(log: &str) -> bool {
    log.lines()
        .all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok())
}

#[test]
fn log_format_text_is_for_people_and_json_for_collectors() {
    for log in [
        serve_log(&["--log-format", "text"], &[]),
        serve_log(&[], &[("CASCADE_LOG_FORMAT", "text")]),
    ] {
        for line in log.lines() {
            assert!(!line.starts_with('{'), "a JSON line in text logs: {line}");
        }
        // Not a terminal: no colours.
        assert!(!log.contains('\x1b'), "{log}");
        let listening = log
            .lines()
            .find(|l| l.contains("cascade is listening"))
            .unwrap();
        assert!(listening.contains("INFO"), "{listening}");
        assert!(listening.contains("addr=127.0.0.1:"), "{listening}");
    }
    // JSON when asked, and by default when stderr is not a terminal (here: a pipe).
    for log in [
        serve_log(&["--log-format", "json"], &[]),
        serve_log(&[], &[]),
    ] {
        assert!(all_json(&log), "{log}");
        let listening: serde_json::Value = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .find(|l: &serde_json::Value| l["fields"]["message"] == "cascade is listening")
            .unwrap();
        assert_eq!(listening["level"], "INFO");
    }
}

#[test]
fn an_unknown_log_format_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["serve", "--log-format", "yaml"])
        .env_remove("CASCADE_LOG_FORMAT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[possible values: text, json]"), "{err}");
}
