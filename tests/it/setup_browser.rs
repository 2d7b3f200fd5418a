//! The setup page in a real browser: Debian's `chromium`, driven over WebDriver
//! (`chromedriver`, started here on a free port of 127.0.0.1) with fantoccini.
//! A new repo owner's first minutes: open `/setup` on a server started with no
//! forge, continue, create the App on (the fake) GitHub, come back through
//! GitHub's redirect, see the install link; the App is then served: a webhook
//! signed with its new secret is taken, one signed otherwise refused.
//! A missing browser fails the test (`./scripts/test` installs both packages as root on Debian).

use crate::support::bot_world;
use crate::support::fake_github;

use bot_world::setup_config;
use cascade::server::start;
use fake_github::FakeGitHub;
use fantoccini::{ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long the browser may take for anything: the machine is shared and small.
const PATIENCE: Duration = Duration::from_secs(120);

/// `name` on PATH, or a failure saying how to install it.
fn on_path(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is required for the browser test: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; ./scripts/test does as root)"
            )
        })
}

/// chromedriver in a process group of its own: dropping it kills the group, so
/// the browser it started goes too, whatever the test did.
struct Chromedriver {
    child: Child,
    url: String,
}

impl Chromedriver {
    /// chromedriver on a free port, ready for sessions. The port is picked by binding
    /// port 0 and letting it go, so another test of this binary (hundreds of client
    /// sockets at once) can take it first: a chromedriver that exits or never answers
    /// is started again on another port, and the last failure says what its log said.
    async fn start_ready(dir: &Path) -> Chromedriver {
        let mut failures = Vec::new();
        for attempt in 1..=3 {
            let log = dir.join(format!("chromedriver-{attempt}.log"));
            let mut driver = Chromedriver::spawn(&log);
            match driver.wait_ready(Duration::from_secs(40)).await {
                Ok(()) => return driver,
                Err(why) => failures.push(format!(
                    "attempt {attempt}: {why}; its log ends:\n{}",
                    log_tail(&log)
                )),
            }
        }
        panic!("chromedriver never became ready:\n{}", failures.join("\n"));
    }

    fn spawn(log: &Path) -> Chromedriver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(log).unwrap();
        let child = Command::new(on_path("chromedriver"))
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        Chromedriver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Ready, or why not: it exited, or it did not say ready within `patience`.
    async fn wait_ready(&mut self, patience: Duration) -> Result<(), String> {
        let status = format!("{}/status", self.url);
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            if let Ok(r) = reqwest::get(&status).await
                && let Ok(body) = r.json::<serde_json::Value>().await
                && body["value"]["ready"] == true
            {
                return Ok(());
            }
            if let Ok(Some(exit)) = self.child.try_wait() {
                return Err(format!("chromedriver exited ({exit})"));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("not ready after {patience:?}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The last lines of a log, for a failure message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_owner_sets_up_the_app_in_a_browser_and_it_takes_webhooks() {
    let chromium = on_path("chromium");
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let data = tempfile::tempdir().unwrap();
    let server = start(setup_config(&fake, data.path())).await.unwrap();
    let url = format!("http://{}", server.addr);
    let hook = format!("{url}/webhooks/github");
    assert_eq!(fake.ping_event().post(&hook).await.status(), 503);

    let driver = Chromedriver::start_ready(data.path()).await;
    let profile = data.path().join("chromium-profile");
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-dev-shm-usage",
                "--disable-gpu",
                "--window-size=1000,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let browser = session(&driver, capabilities).await;

    browser.goto(&format!("{url}/setup")).await.unwrap();
    let public_url = browser.find(Locator::Id("public_url")).await.unwrap();
    assert_eq!(
        public_url.prop("value").await.unwrap().as_deref(),
        Some(url.as_str()),
        "prefilled with the address the browser used"
    );
    browser
        .find(Locator::Id("continue"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let create = browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Id("create"))
        .await
        .unwrap();
    create.click().await.unwrap();
    // GitHub creates the App and sends the browser back to /setup/callback.
    let install = browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Id("install"))
        .await
        .unwrap();
    let app = fake.created_apps().pop().expect("an App created on GitHub");
    assert!(app.converted);
    assert_eq!(
        install.attr("href").await.unwrap(),
        Some(format!(
            "{}/apps/{}/installations/new",
            fake.url(),
            app.slug
        ))
    );
    let page = browser.source().await.unwrap();
    assert!(!page.contains(&app.webhook_secret) && !page.contains("PRIVATE KEY"));
    let shot = browser.screenshot().await.unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG screenshot");
    let shot_file = data.path().join("setup-done.png");
    std::fs::write(&shot_file, &shot).unwrap();
    install.click().await.unwrap();
    let message = browser
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Id("message"))
        .await
        .unwrap();
    assert_eq!(
        message.text().await.unwrap(),
        "Install the App on your repositories"
    );
    browser.close().await.unwrap();
    drop(driver);

    // Served without a restart: the new secret is the only one taken.
    let delivery = fake.installation_event(77, "created");
    assert_eq!(delivery.post(&hook).await.status(), 202);
    let forged = fake
        .installation_event(77, "created")
        .signed_with("fake-webhook-secret");
    assert_eq!(forged.post(&hook).await.status(), 401);
    let wrong = fake.installation_event(77, "created").signed_with("guess");
    assert_eq!(wrong.post(&hook).await.status(), 401);
    assert_eq!(
        reqwest::get(format!("{url}/setup")).await.unwrap().status(),
        404
    );
    assert!(std::fs::metadata(&shot_file).unwrap().len() > 1000);
    server.shutdown().await.unwrap();
}

/// A WebDriver session with chromium. A browser that fails to start under load
/// (every other test of this binary runs beside this one) is started again, twice;
/// the failure names every try's error and chromedriver's log.
async fn session(
    driver: &Chromedriver,
    capabilities: serde_json::Map<String, serde_json::Value>,
) -> fantoccini::Client {
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let mut builder = ClientBuilder::new(HttpConnector::new());
        builder.capabilities(capabilities.clone());
        match tokio::time::timeout(PATIENCE, builder.connect(&driver.url)).await {
            Ok(Ok(client)) => return client,
            Ok(Err(e)) => failures.push(format!("attempt {attempt}: {e}")),
            Err(_) => failures.push(format!("attempt {attempt}: no session after {PATIENCE:?}")),
        }
    }
    panic!(
        "chromium never started a WebDriver session:\n{}",
        failures.join("\n")
    );
}
