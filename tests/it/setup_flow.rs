//! The setup page over HTTP (the browser walk is `tests/it/setup_browser.rs`): a server
//! started with no forge creates its GitHub App through the fake GitHub's manifest
//! flow and serves it without a restart, and again after one; the callback takes
//! only states it issued; hostile form values and headers come back escaped; a public
//! URL GitHub cannot reach is warned about, not refused; the status page links to the
//! App it created.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::html::{text_of, unescape};

use bot_world::{REPO, push_change, serve_config, setup_config, world_configured};
use cascade::server::{RunningServer, SetupConfig, start};
use fake_github::{APP_ID, FakeGitHub};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The value of `attr="…"` in the tag holding `marker`, unescaped.
fn attribute(html: &str, marker: &str, attr: &str) -> String {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let tag = &html[html[..at].rfind('<').unwrap()..at + html[at..].find('>').unwrap()];
    let start = tag
        .find(&format!(" {attr}=\""))
        .unwrap_or_else(|| panic!("no {attr} in {tag}"))
        + attr.len()
        + 3;
    let end = tag[start..].find('"').unwrap();
    unescape(&tag[start..start + end])
}

/// GitHub's manifest form as the setup page answered it.
struct ManifestForm {
    action: String,
    manifest: Value,
    html: String,
}

/// The setup form posted: the status and the page.
async fn post_setup(server: &str, public_url: &str, org: &str) -> (u16, String) {
    let response = client()
        .post(format!("{server}/setup"))
        .form(&[("public_url", public_url), ("organization", org)])
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// `GET url` with `headers`: the page.
async fn page_text(url: &str, headers: &[(&str, &str)]) -> String {
    let mut request = client().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().text().await.unwrap()
}

async fn manifest_form(server: &str, public_url: &str, org: &str) -> ManifestForm {
    let (status, html) = post_setup(server, public_url, org).await;
    assert_eq!(status, 200, "{html}");
    ManifestForm {
        action: attribute(&html, "id=\"manifest-form\"", "action"),
        manifest: serde_json::from_str(&attribute(&html, "name=\"manifest\"", "value")).unwrap(),
        html,
    }
}

/// Posts the manifest form to the fake GitHub; returns where it redirects.
async fn create_on_github(form: &ManifestForm) -> String {
    let response = client()
        .post(&form.action)
        .form(&[("manifest", form.manifest.to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    response.headers()["location"].to_str().unwrap().to_string()
}

/// The whole setup over HTTP; returns the final page.
async fn set_up(server: &str) -> String {
    let form = manifest_form(server, server, "").await;
    let callback = create_on_github(&form).await;
    assert!(
        callback.starts_with(&format!("{server}/setup/callback?code=")),
        "{callback}"
    );
    let done = client().get(&callback).send().await.unwrap();
    assert_eq!(done.status(), 200);
    done.text().await.unwrap()
}

fn base(server: &RunningServer) -> String {
    format!("http://{}", server.addr)
}

async fn status(url: &str) -> u16 {
    client().get(url).send().await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setup_page_creates_the_app_which_plans_without_a_restart_and_after_one() {
    let w = world_configured("", |c| {
        let api = c.github.take().unwrap().api_url;
        c.setup = Some(SetupConfig {
            github_url: api.clone(),
            api_url: api,
        });
    })
    .await;
    let server = base(w.server.as_ref().unwrap());
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    // Not set up: deliveries cannot be verified, so they are not taken.
    assert_eq!(w.send_pr(n, "opened").await, 503);

    let form = client()
        .get(format!("{server}/setup"))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    let csp = form.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(
        attribute(&form.text().await.unwrap(), "id=\"public_url\"", "value"),
        server
    );

    let done = set_up(&server).await;
    let app = w
        .fake
        .created_apps()
        .pop()
        .expect("an App created on GitHub");
    assert!(app.converted);
    assert_eq!(w.fake.app_id(), app.id);
    assert_ne!(app.id, APP_ID);
    let install = attribute(&done, "id=\"install\"", "href");
    assert_eq!(
        install,
        format!("{}/apps/{}/installations/new", w.fake.url(), app.slug)
    );
    assert_eq!(status(&install).await, 200);
    let key = String::from_utf8(fake_github::app_key()).unwrap();
    assert!(!done.contains(&app.webhook_secret) && !done.contains("PRIVATE KEY"));

    // Stored for this user only; the setup is off.
    let stored = w.data.path().join("github-app");
    assert_eq!(mode(&stored), 0o700);
    for file in ["private-key.pem", "webhook-secret", "app.json"] {
        assert_eq!(mode(&stored.join(file)), 0o600, "{file}");
    }
    assert_eq!(
        std::fs::read_to_string(stored.join("private-key.pem")).unwrap(),
        key
    );
    assert_eq!(status(&format!("{server}/setup")).await, 404);
    assert_eq!(
        status(&format!("{server}/setup/callback?code=x&state=y")).await,
        404
    );

    // Served at once: the new App's JWT mints tokens, its comments are its own.
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    let head = push_change(&w, "feature", "global/dns/main.tf", "a second change");
    w.synchronize(n, &head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.checks_done(&head)).await;
    let comments = w.bot_comments(n);
    assert_eq!(
        comments.len(),
        1,
        "the App found its own comment and edited it"
    );
    let forged = w
        .fake
        .pull_request_event(REPO, n, "synchronize")
        .signed_with("fake-webhook-secret");
    assert_eq!(forged.post(&w.hook()).await.status(), 401);

    // A restart with the data directory serves the stored App.
    let mut w = w;
    w.server.take().unwrap().shutdown().await.unwrap();
    let mut config = setup_config(&w.fake, w.data.path());
    config.parallelism = 1;
    w.server = Some(start(config).await.unwrap());
    let server = base(w.server.as_ref().unwrap());
    assert_eq!(status(&format!("{server}/setup")).await, 404);
    assert_eq!(w.comment(n, "alice", "/help").await, 202);
    let help = w.nth_reply(n, 2).await;
    assert!(help.contains("cascade commands"), "{help}");
    let forged = w
        .fake
        .pull_request_event(REPO, n, "synchronize")
        .signed_with("another secret");
    assert_eq!(forged.post(&w.hook()).await.status(), 401);

    // Flags win over the stored App.
    w.server.take().unwrap().shutdown().await.unwrap();
    let mut flags = serve_config(&w.fake, w.data.path());
    flags.setup = setup_config(&w.fake, w.data.path()).setup;
    let configured = "fake-webhook-secret";
    if let Some(github) = &mut flags.github {
        github.webhook_secrets = vec![configured.as_bytes().to_vec().into()];
    }
    w.server = Some(start(flags).await.unwrap());
    let stored_secret = w.fake.pull_request_event(REPO, n, "edited");
    assert_eq!(stored_secret.post(&w.hook()).await.status(), 401);
    let flag_signed = stored_secret.renewed().signed_with(configured);
    assert_ne!(flag_signed.post(&w.hook()).await.status(), 401);
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A server in setup mode against a fresh fake GitHub.
async fn setup_server() -> (FakeGitHub, tempfile::TempDir, RunningServer) {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let server = start(setup_config(&fake, data.path())).await.unwrap();
    (fake, data, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_takes_only_a_state_it_issued_and_stores_nothing_otherwise() {
    let (fake, data, server) = setup_server().await;
    let url = base(&server);
    // Someone creates an App with a state of their own and sends its code here.
    let mut form = manifest_form(&url, &url, "").await;
    let issued = form.action.split("state=").nth(1).unwrap().to_string();
    assert!(
        issued.len() >= 16 && issued.bytes().all(|b| b.is_ascii_hexdigit()),
        "{issued}"
    );
    form.action = form
        .action
        .replace(&issued, "forged-state-0123456789abcdef");
    let forged = create_on_github(&form).await;
    let refused = client().get(&forged).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("Start again at /setup")
    );
    assert!(
        !fake.created_apps()[0].converted,
        "the code was not exchanged"
    );
    let code = forged
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    for query in [
        format!("code={code}"),
        format!("state={issued}"),
        String::new(),
    ] {
        assert_eq!(
            status(&format!("{url}/setup/callback?{query}")).await,
            400,
            "{query}"
        );
    }
    let long = "a".repeat(200);
    assert_eq!(
        status(&format!("{url}/setup/callback?code={code}&state={long}")).await,
        403
    );
    // An issued state with a code GitHub does not know: refused by GitHub, state spent.
    let unknown = client()
        .get(format!(
            "{url}/setup/callback?code=0123456789abcdef0123&state={issued}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 502);
    assert!(
        unknown
            .text()
            .await
            .unwrap()
            .contains("start again at /setup")
    );
    assert_eq!(
        status(&format!("{url}/setup/callback?code={code}&state={issued}")).await,
        403
    );
    assert!(!data.path().join("github-app").exists(), "nothing stored");
    let delivery = fake.ping_event();
    assert_eq!(
        delivery
            .post(&format!("{url}/webhooks/github"))
            .await
            .status(),
        503
    );
    assert_eq!(status(&format!("{url}/setup")).await, 200, "still open");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_setup_inputs_are_bounded_and_come_back_escaped() {
    let (fake, _data, server) = setup_server().await;
    let url = base(&server);
    for (public_url, org) in [
        ("javascript:alert(1)", ""),
        ("\"><script>alert(1)</script>", ""),
        ("https://user:pw@example.com", ""),
        ("https://example.com/?next=evil", ""),
        ("https://example.com", "<script>"),
        ("https://example.com", "acme/../evil"),
    ] {
        let (status, html) = post_setup(&url, public_url, org).await;
        assert_eq!(status, 400, "{public_url} {org}");
        assert!(
            !html.contains("<script>") && html.contains("id=\"error\""),
            "{html}"
        );
        assert!(
            !html.contains("manifest"),
            "no manifest for {public_url} {org}"
        );
    }
    // Bounded: a form body over 4 KiB is refused before it is read.
    let big = client()
        .post(format!("{url}/setup"))
        .form(&[("public_url", "x".repeat(10_000))])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    // A hostile Host is not echoed; a proxy's headers are.
    let setup = format!("{url}/setup");
    let hostile = page_text(&setup, &[("host", "evil.example\"><script>")]).await;
    assert!(
        !hostile.contains("<script>") && !hostile.contains("evil"),
        "{hostile}"
    );
    let proxied = page_text(
        &setup,
        &[
            ("x-forwarded-host", "cascade.example.com"),
            ("x-forwarded-proto", "https"),
        ],
    )
    .await;
    assert_eq!(
        attribute(&proxied, "id=\"public_url\"", "value"),
        "https://cascade.example.com"
    );

    // For an organisation: its own page on GitHub, and Members read.
    let form = manifest_form(&url, "https://ci.example.com/cascade/", "acme-corp").await;
    let (action, state) = form.action.split_once("?state=").unwrap();
    assert_eq!(
        action,
        format!("{}/organizations/acme-corp/settings/apps/new", fake.url())
    );
    assert!(state.len() >= 16);
    let m = &form.manifest;
    assert_eq!(m["url"], "https://ci.example.com/cascade");
    assert_eq!(
        m["hook_attributes"]["url"],
        "https://ci.example.com/cascade/webhooks/github"
    );
    assert_eq!(
        m["redirect_url"],
        "https://ci.example.com/cascade/setup/callback"
    );
    assert_eq!(
        m["setup_url"],
        "https://ci.example.com/cascade/setup/installed"
    );
    assert_eq!(m["public"], false);
    assert_eq!(
        m["default_events"],
        json!([
            "pull_request",
            "issue_comment",
            "pull_request_review",
            "merge_group"
        ])
    );
    assert_eq!(
        m["default_permissions"],
        json!({"checks": "write", "contents": "read", "issues": "write", "merge_queues": "read", "metadata": "read", "pull_requests": "write", "members": "read"})
    );
    assert!(form.html.contains("Organization → Members"));
    let personal = manifest_form(&url, "https://ci.example.com", "").await;
    assert!(
        personal
            .action
            .starts_with(&format!("{}/settings/apps/new?state=", fake.url()))
    );
    assert!(
        personal.manifest["default_permissions"]
            .get("members")
            .is_none()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_url_github_cannot_reach_is_warned_about_not_refused() {
    let (_fake, _data, server) = setup_server().await;
    let url = base(&server);
    for (public_url, host, what) in [
        (
            "http://127.0.0.1:8080",
            "127.0.0.1",
            "this machine's own (loopback) address",
        ),
        (
            "http://[::1]:8080",
            "[::1]",
            "this machine's own (loopback) address",
        ),
        (
            "http://localhost:8080",
            "localhost",
            "this machine's own (loopback) address",
        ),
        (
            "http://10.1.2.3:8080",
            "10.1.2.3",
            "a private network address",
        ),
        (
            "https://192.168.1.5/cascade",
            "192.168.1.5",
            "a private network address",
        ),
        (
            "http://169.254.169.254",
            "169.254.169.254",
            "a link-local address",
        ),
        (
            "http://build.local:8080",
            "build.local",
            "a name only a local network resolves",
        ),
    ] {
        let form = manifest_form(&url, public_url, "").await;
        assert_eq!(
            form.manifest["hook_attributes"]["url"],
            format!("{}/webhooks/github", public_url.trim_end_matches('/')),
            "not refused: GitHub's form is there"
        );
        let warning = text_of(&form.html, "warning");
        assert!(
            warning.starts_with(&format!("GitHub cannot reach {host}: it is {what}.")),
            "{warning}"
        );
        assert!(
            warning.contains("a tunnel such as cloudflared or ngrok"),
            "{warning}"
        );
    }
    for public_url in ["https://cascade.example.com", "http://8.8.8.8:8080"] {
        let form = manifest_form(&url, public_url, "").await;
        assert!(
            !form.html.contains("id=\"warning\""),
            "{public_url}: {}",
            form.html
        );
    }
    // The form itself warns about the address it was reached at (here 127.0.0.1),
    // and not about a proxy's public one.
    let setup = format!("{url}/setup");
    let direct = page_text(&setup, &[]).await;
    assert!(
        text_of(&direct, "warning").starts_with("GitHub cannot reach 127.0.0.1:"),
        "{direct}"
    );
    let proxied = page_text(&setup, &[("x-forwarded-host", "cascade.example.com")]).await;
    assert!(!proxied.contains("id=\"warning\""), "{proxied}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_links_to_the_app_the_setup_page_created() {
    let (fake, data, server) = setup_server().await;
    let url = base(&server);
    let before = page_text(&format!("{url}/"), &[]).await;
    assert_eq!(text_of(&before, "github"), "no App yet: set it up");
    set_up(&url).await;
    let app = fake.created_apps().pop().unwrap();
    let expected = format!(
        "the App {} (id {}), created by the setup page",
        app.slug, app.id
    );
    let page_link = format!("{}/apps/{}", fake.url(), app.slug);
    let after = page_text(&format!("{url}/"), &[]).await;
    assert_eq!(text_of(&after, "github"), expected);
    assert_eq!(
        attribute(&after, &format!(">{}</a>", app.slug), "href"),
        page_link
    );
    assert!(!after.contains(&app.webhook_secret) && !after.contains("PRIVATE KEY"));
    // Started again: the stored App, and its page.
    server.shutdown().await.unwrap();
    let server = start(setup_config(&fake, data.path())).await.unwrap();
    let restarted = page_text(&format!("{}/", base(&server)), &[]).await;
    assert_eq!(text_of(&restarted, "github"), expected);
    assert!(
        restarted.contains(&format!("href=\"{page_link}\"")),
        "{restarted}"
    );
    server.shutdown().await.unwrap();
}
