//! `POST /webhooks/gitlab` on the real server: only deliveries with a
//! configured secret token (and, where a signing token is set, a fresh valid
//! signature) are stored; a secret given for one project speaks for that project
//! only; a project at another origin than `--gitlab-url` is refused; each delivery
//! is stored once, before the 202; what is not GitLab's shape is refused without
//! storing anything; and the route exists only when GitLab is configured. Payloads
//! are the real ones in `../shared/webhooks/gitlab/`, their project's URLs moved to
//! the fake GitLab's origin as that GitLab would send them (`Hook::at`).

use crate::support;
use crate::support::bot_world;
use crate::support::fake_github;

use bot_world::serve_config;
use cascade::event::gitlab::{SigningKey, WebhookSecrets};
use cascade::server::{GitLabServeConfig, HttpLimits, RunningServer, start};
use cascade::store::{BotStore, DeliveryRecord, DeliveryStatus, SqliteStore};
use fake_github::FakeGitHub;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use support::fake_gitlab::FakeGitLab;
use support::wait;

const TOKEN: &str = "gitlab-webhook-token";
const OLD_TOKEN: &str = "gitlab-webhook-token-before-rotation";
const SIGNING_TOKEN: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

struct Served {
    fake: FakeGitHub,
    gitlab: FakeGitLab,
    server: RunningServer,
    data: tempfile::TempDir,
}

fn gitlab_config(gitlab: &FakeGitLab, signing: bool) -> GitLabServeConfig {
    GitLabServeConfig {
        url: gitlab.url(),
        token: gitlab.token().into(),
        webhook_secrets: vec![OLD_TOKEN.as_bytes().to_vec(), TOKEN.as_bytes().to_vec()].into(),
        signing_key: signing.then(|| SigningKey::parse(SIGNING_TOKEN).unwrap()),
    }
}

/// The server with GitHub and GitLab (both fakes) configured.
async fn served(signing: bool, limits: HttpLimits) -> Served {
    served_with(signing, limits, |_| {}).await
}

/// [`served`], with GitLab's configuration changed by `tweak`.
async fn served_with(
    signing: bool,
    limits: HttpLimits,
    tweak: impl FnOnce(&mut GitLabServeConfig),
) -> Served {
    let fake = FakeGitHub::start().await;
    let gitlab = FakeGitLab::start().await;
    let data = tempfile::tempdir().unwrap();
    let mut config = serve_config(&fake, data.path());
    let mut gitlab_config = gitlab_config(&gitlab, signing);
    tweak(&mut gitlab_config);
    config.gitlab = Some(gitlab_config);
    config.http = limits;
    let server = start(config).await.unwrap();
    Served {
        fake,
        gitlab,
        server,
        data,
    }
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.addr)
    }

    /// What `/metrics` shows now.
    async fn metrics(&self) -> String {
        let metrics = reqwest::get(self.url("/metrics")).await.unwrap();
        metrics.text().await.unwrap()
    }

    /// Every stored delivery, `(id, event)`, read straight from the database.
    async fn rows(&self) -> Vec<(String, String)> {
        rows(self.data.path()).await
    }
}

async fn rows(data: &Path) -> Vec<(String, String)> {
    query_pairs(data, "SELECT id, event FROM deliveries ORDER BY id").await
}

/// Runs `sql` (two text columns) on the server's database, read-only.
async fn query_pairs(data: &Path, sql: &'static str) -> Vec<(String, String)> {
    let url = format!("sqlite://{}?mode=ro", data.join("cascade.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
    pool.close().await;
    rows
}

fn payload(file: &str) -> Vec<u8> {
    let path = support::shared().join("webhooks/gitlab").join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// One GitLab delivery as GitLab sends it; tests change what they attack.
#[derive(Clone)]
struct Hook {
    event: String,
    key: Option<String>,
    uuid: Option<String>,
    token: Option<String>,
    body: Vec<u8>,
    /// `(timestamp, signature)`; `None` sends no signature headers.
    signature: Option<(i64, String)>,
    /// Signed with the signing token at this time once the body is final (`Hook::at`).
    sign_at: Option<i64>,
    /// `webhook-id`, when it is not the `Idempotency-Key` (as GitLab sends it).
    webhook_id: Option<String>,
}

impl Hook {
    fn new(event: &str, file: &str, key: &str) -> Hook {
        Hook {
            event: event.into(),
            key: Some(key.into()),
            uuid: Some(uuid::Uuid::new_v4().to_string()),
            token: Some(TOKEN.into()),
            body: payload(file),
            signature: None,
            sign_at: None,
            webhook_id: None,
        }
    }

    fn note(key: &str) -> Hook {
        Hook::new("Note Hook", "note.merge_request.json", key)
    }

    fn signed_at(mut self, timestamp: i64) -> Hook {
        self.sign_at = Some(timestamp);
        self
    }

    /// The hook as the GitLab at `origin` sends it: the body's project URLs at `origin`
    /// (the body is rewritten only when one is elsewhere), then signed if asked.
    fn at(&self, origin: &str) -> Hook {
        let mut hook = self.clone();
        if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&hook.body) {
            let mut moved = false;
            if let Some(project) = value
                .get_mut("project")
                .and_then(serde_json::Value::as_object_mut)
            {
                for field in ["web_url", "git_http_url"] {
                    let Some(url) = project.get(field).and_then(|u| u.as_str()) else {
                        continue;
                    };
                    let here = format!("{origin}{}", url::Url::parse(url).unwrap().path());
                    if here != url {
                        project.insert(field.into(), here.into());
                        moved = true;
                    }
                }
            }
            if moved {
                hook.body = serde_json::to_vec(&value).unwrap();
            }
        }
        if let Some(timestamp) = hook.sign_at.take() {
            let key = SigningKey::parse(SIGNING_TOKEN).unwrap();
            let id = hook
                .webhook_id
                .clone()
                .or(hook.key.clone())
                .unwrap_or_default();
            hook.signature = Some((timestamp, key.sign(&id, timestamp, &hook.body)));
        }
        hook
    }

    /// Sends the hook as the served fake GitLab would.
    async fn send(&self, s: &Served) -> u16 {
        self.at(&s.gitlab.url())
            .send_to(s.url("/webhooks/gitlab"))
            .await
    }

    async fn send_to(&self, url: String) -> u16 {
        let mut request = reqwest::Client::new()
            .post(url)
            .header("Content-Type", "application/json")
            .header("X-Gitlab-Event", &self.event)
            .body(self.body.clone());
        if let Some(key) = &self.key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(id) = self.webhook_id.as_ref().or(self.key.as_ref()) {
            request = request.header("webhook-id", id);
        }
        if let Some(uuid) = &self.uuid {
            request = request.header("X-Gitlab-Event-UUID", uuid);
        }
        if let Some(token) = &self.token {
            request = request.header("X-Gitlab-Token", token);
        }
        if let Some((timestamp, signature)) = &self.signature {
            request = request
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", signature);
        }
        request.send().await.unwrap().status().as_u16()
    }
}

const KEY: &str = "f5e5f430-f57b-4e6e-9fac-d9128cd7232f";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_or_missing_token_is_refused_and_nothing_is_stored() {
    let s = served(false, HttpLimits::default()).await;
    let github_secret = s.fake.webhook_secret();
    for token in [
        None,
        Some(""),
        Some("gitlab-webhook-toke"),
        Some("GITLAB-WEBHOOK-TOKEN"),
        Some(github_secret.as_str()),
    ] {
        let hook = Hook {
            token: token.map(str::to_owned),
            ..Hook::note(KEY)
        };
        assert_eq!(hook.send(&s).await, 401, "token {token:?}");
    }
    assert_eq!(s.rows().await, vec![], "nothing unauthenticated is stored");
    // Both secrets are accepted while the token rotates.
    assert_eq!(Hook::note(KEY).send(&s).await, 202);
    let old = Hook {
        token: Some(OLD_TOKEN.into()),
        ..Hook::note("0b9a2d43-7c6e-4f57-9a53-3d0e4ef1d9a1")
    };
    assert_eq!(old.send(&s).await, 202);
    assert_eq!(
        s.rows().await,
        vec![
            (
                "gitlab-0b9a2d43-7c6e-4f57-9a53-3d0e4ef1d9a1".into(),
                "gitlab:Note Hook".into()
            ),
            (format!("gitlab-{KEY}"), "gitlab:Note Hook".into()),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_is_stored_once() {
    let s = served(false, HttpLimits::default()).await;
    let hook = Hook::new(
        "Merge Request Hook",
        "merge_request.update.new-commit.json",
        KEY,
    )
    .at(&s.gitlab.url());
    assert_eq!(hook.send(&s).await, 202);
    // GitLab's retries keep the Idempotency-Key, not the event UUID.
    let retries: Vec<_> = (0..20)
        .map(|_| {
            let retry = Hook {
                uuid: Some(uuid::Uuid::new_v4().to_string()),
                ..hook.clone()
            };
            let url = s.url("/webhooks/gitlab");
            tokio::spawn(async move { retry.send_to(url).await })
        })
        .collect();
    let mut answers = Vec::new();
    for retry in retries {
        answers.push(retry.await.unwrap());
    }
    assert!(answers.iter().all(|a| *a == 200), "{answers:?}");
    // Without an Idempotency-Key (before GitLab 17.4), the event UUID is the key.
    let uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e";
    let old_gitlab = Hook {
        key: None,
        uuid: Some(uuid.into()),
        ..Hook::note("unused")
    };
    assert_eq!(old_gitlab.send(&s).await, 202);
    assert_eq!(old_gitlab.send(&s).await, 200);
    assert_eq!(
        s.rows().await,
        vec![
            (format!("gitlab-{uuid}"), "gitlab:Note Hook".into()),
            (format!("gitlab-{KEY}"), "gitlab:Merge Request Hook".into()),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_deliveries_are_refused_and_ignored_ones_are_not_stored() {
    let s = served(false, HttpLimits::default()).await;
    let bodies: [&[u8]; 3] = [b"not json", b"[]", br#"{"object_kind":"note"}"#];
    for body in bodies {
        let hook = Hook {
            body: body.to_vec(),
            ..Hook::note(&uuid::Uuid::new_v4().to_string())
        };
        assert_eq!(
            hook.send(&s).await,
            400,
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    let no_key = Hook {
        key: None,
        uuid: None,
        ..Hook::note("unused")
    };
    assert_eq!(no_key.send(&s).await, 400, "no delivery id");
    let too_long = "Hook ".repeat(14);
    for event in ["Note_Hook", "", too_long.trim_end()] {
        let bad_event = Hook {
            event: event.into(),
            ..Hook::note(KEY)
        };
        assert_eq!(bad_event.send(&s).await, 400, "{event:?}");
    }
    // Title-only updates, ready → draft and hooks cascade does not read: 200, not stored.
    for (event, file) in [
        ("Merge Request Hook", "merge_request.update.title.json"),
        (
            "Merge Request Hook",
            "merge_request.update.mark-as-ready.json",
        ),
        ("Confidential Note Hook", "note.merge_request.json"),
        ("Push Hook", "note.merge_request.json"),
    ] {
        let hook = Hook::new(event, file, &uuid::Uuid::new_v4().to_string());
        assert_eq!(hook.send(&s).await, 200, "{event} {file}");
    }
    assert_eq!(s.rows().await, vec![]);
    let metrics = s.metrics().await;
    assert!(metrics.contains(r#"event="gitlab_note""#), "{metrics}");
    assert!(
        metrics.contains(r#"event="gitlab_merge_request""#),
        "{metrics}"
    );
    assert!(!metrics.contains("Push Hook"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_signing_token_only_fresh_valid_signatures_are_stored() {
    let s = served(true, HttpLimits::default()).await;
    let t = now();
    let unsigned = Hook::note("a1");
    let wrong = Hook {
        signature: Some((t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".into())),
        ..Hook::note("a2")
    };
    let stale = Hook::note("a3").signed_at(t - 600);
    let future = Hook::note("a4").signed_at(t + 600);
    let mut tampered = Hook::note("a5").signed_at(t).at(&s.gitlab.url());
    tampered.body.push(b' ');
    let signed_bad_token = Hook {
        token: Some("nope".into()),
        ..Hook::note("a6").signed_at(t)
    };
    // A captured signed delivery replayed under a fresh dedupe key.
    let replayed = Hook {
        key: Some("a8".into()),
        webhook_id: Some("a7".into()),
        ..Hook::note("a7").signed_at(t)
    };
    for (what, hook) in [
        ("unsigned", unsigned),
        ("wrong", wrong),
        ("stale", stale),
        ("future", future),
        ("tampered", tampered),
        ("bad token", signed_bad_token),
        ("replayed under another key", replayed),
    ] {
        assert_eq!(hook.send(&s).await, 401, "{what}");
    }
    assert_eq!(s.rows().await, vec![]);
    assert_eq!(Hook::note("a7").signed_at(t).send(&s).await, 202);
    assert_eq!(
        s.rows().await,
        vec![("gitlab-a7".into(), "gitlab:Note Hook".into())]
    );
}

/// A maintainer who knows the secret of their own project cannot speak for another's
/// (`PROJECT=SECRET`, by path or id); a hook cascade would ignore is refused too, and
/// a plain secret still speaks for every project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_secret_speaks_for_that_project_only() {
    let s = served_with(false, HttpLimits::default(), |gitlab| {
        gitlab.webhook_secrets = WebhookSecrets::parse(vec![
            TOKEN.into(),
            "Gitlab-Org/Gitlab-Test=secret-of-gitlab-test".into(),
            "910=secret-of-atlantis-example".into(),
        ]);
    })
    .await;
    let with = |token: &str, hook: Hook| Hook {
        token: Some(token.into()),
        ..hook
    };
    let note = |key: &str| Hook::note(key); // project 5, gitlab-org/gitlab-test
    let push = |key: &str| {
        // project 910, quan.hoang/atlantis-example
        Hook::new(
            "Merge Request Hook",
            "merge_request.update.new-commit.json",
            key,
        )
    };
    let title = |key: &str| Hook::new("Merge Request Hook", "merge_request.update.title.json", key);
    for (what, hook) in [
        (
            "the other project's secret",
            with("secret-of-atlantis-example", note("b1")),
        ),
        (
            "the other project's secret",
            with("secret-of-gitlab-test", push("b2")),
        ),
        (
            "an ignored hook too",
            with("secret-of-gitlab-test", title("b3")),
        ),
    ] {
        assert_eq!(hook.send(&s).await, 401, "{what}");
    }
    assert_eq!(s.rows().await, vec![]);
    assert_eq!(
        with("secret-of-gitlab-test", note("b4")).send(&s).await,
        202
    );
    assert_eq!(
        with("secret-of-atlantis-example", push("b5"))
            .send(&s)
            .await,
        202
    );
    assert_eq!(
        with("secret-of-atlantis-example", title("b6"))
            .send(&s)
            .await,
        200
    );
    assert_eq!(with(TOKEN, note("b7")).send(&s).await, 202);
    let ids: Vec<String> = s.rows().await.into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["gitlab-b4", "gitlab-b5", "gitlab-b7"]);
}

/// A delivery whose project lives at another origin than `--gitlab-url` (its web page
/// or its clone URL) is refused with a 403 and nothing stored, whatever the hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_at_another_origin_is_refused_and_nothing_is_stored() {
    let s = served(false, HttpLimits::default()).await;
    let hooks = [
        ("Note Hook", "note.merge_request.json"),
        ("Merge Request Hook", "merge_request.update.new-commit.json"),
        ("Merge Request Hook", "merge_request.update.title.json"),
    ];
    for (event, file) in hooks {
        let hook = Hook::new(event, file, &uuid::Uuid::new_v4().to_string());
        let elsewhere = hook.at("https://gitlab.evil.example");
        assert_eq!(
            elsewhere.send_to(s.url("/webhooks/gitlab")).await,
            403,
            "{file}"
        );
    }
    // The same host on another port is another origin; one URL elsewhere is enough.
    let port = support::free_port();
    let mut hook = Hook::note(KEY).at(&s.gitlab.url());
    let mut body: serde_json::Value = serde_json::from_slice(&hook.body).unwrap();
    body["project"]["git_http_url"] = format!("http://127.0.0.1:{port}/g/p.git").into();
    hook.body = serde_json::to_vec(&body).unwrap();
    assert_eq!(hook.send_to(s.url("/webhooks/gitlab")).await, 403);
    assert_eq!(s.rows().await, vec![]);
    let metrics = s.metrics().await;
    assert!(metrics.contains(r#"outcome="foreign_origin""#), "{metrics}");
    assert!(!metrics.contains("evil"), "{metrics}");
    // The project's own origin is accepted.
    assert_eq!(Hook::note(KEY).send(&s).await, 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused() {
    let limits = HttpLimits {
        max_body: 64 * 1024,
        ..HttpLimits::default()
    };
    let s = served(false, limits).await;
    let mut hook = Hook::note(KEY);
    hook.body = vec![b' '; 64 * 1024 + 1];
    assert_eq!(hook.send(&s).await, 413);
    assert_eq!(s.rows().await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gitlab_route_exists_only_when_gitlab_is_configured() {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let server = start(serve_config(&fake, data.path())).await.unwrap();
    let url = format!("http://{}/webhooks/gitlab", server.addr);
    let hook = Hook::note(KEY);
    let answer = reqwest::Client::new()
        .post(&url)
        .header("X-Gitlab-Event", &hook.event)
        .header("X-Gitlab-Token", TOKEN)
        .header("Idempotency-Key", KEY)
        .body(hook.body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 404);
    server.shutdown().await.unwrap();
    assert_eq!(rows(data.path()).await, vec![]);

    // GitLab alone: its route answers, GitHub's does not exist.
    let gitlab = FakeGitLab::start().await;
    let mut config = serve_config(&fake, data.path());
    config.github = None;
    config.gitlab = Some(gitlab_config(&gitlab, false));
    let server = start(config).await.unwrap();
    let github_url = format!("http://{}/webhooks/github", server.addr);
    let answer = reqwest::Client::new()
        .post(&github_url)
        .header("X-GitHub-Event", "ping")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 404);
    server.shutdown().await.unwrap();

    // A token GitLab refuses stops the start, plainly, without showing the token.
    let mut config = serve_config(&fake, data.path());
    config.github = None;
    let mut refused = gitlab_config(&gitlab, false);
    refused.token = "glpat-revoked-token-value".into();
    config.gitlab = Some(refused);
    let error = start(config)
        .await
        .err()
        .expect("a refused token stops the start");
    let message = format!("{error:#}");
    assert!(message.contains("--gitlab-token-file"), "{message}");
    assert!(!message.contains("glpat-revoked-token-value"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_gitlab_deliveries_are_read_back_by_the_gitlab_parser_at_start() {
    let s = served(false, HttpLimits::default()).await;
    let Served {
        fake,
        gitlab,
        server,
        data,
    } = s;
    server.shutdown().await.unwrap();
    let store = SqliteStore::open(&data.path().join("cascade.db"))
        .await
        .unwrap();
    // As a process that died before handling them would have left them. The
    // second is not a note GitLab sends: only the GitLab parser refuses it
    // (the GitHub one would ignore an event it does not know).
    for (id, body) in [
        ("gitlab-left-over", payload("note.merge_request.json")),
        (
            "gitlab-not-a-note",
            br#"{"object_attributes":{"noteable_type":"MergeRequest"}}"#.to_vec(),
        ),
    ] {
        let record = DeliveryRecord {
            id: cascade::event::DeliveryId::new(id).unwrap(),
            event: "gitlab:Note Hook".into(),
            body,
            status: DeliveryStatus::Received,
            received_at: 1,
            owner: None,
            claimed_until: 0,
        };
        assert!(store.insert_delivery(&record).await.unwrap());
    }
    let mut config = serve_config(&fake, data.path());
    config.gitlab = Some(gitlab_config(&gitlab, false));
    let server = start(config).await.unwrap();
    // Both were taken at start: once the bot's jobs are done, so are they.
    wait::settled(vec![server.bot.jobs()], String::new).await;
    let rows = query_pairs(data.path(), "SELECT id, status FROM deliveries ORDER BY id").await;
    // Routed to the merge request's comment job (its note is no command): processed.
    assert_eq!(rows[0], ("gitlab-left-over".into(), "processed".into()));
    assert_eq!(rows[1], ("gitlab-not-a-note".into(), "failed".into()));
    server.shutdown().await.unwrap();
}
