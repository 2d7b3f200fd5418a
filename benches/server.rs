//! The GitHub App server's own costs:
//! - webhook acknowledgement latency (p50 / p99 / max) under 200 signed deliveries a second
//!   on loopback, each verified, parsed and stored before the answer, on SQLite and on
//!   PostgreSQL (a throwaway cluster, as the tests start; needs `initdb`);
//! - resident memory of an idle `cascade serve`, and before, during and after 10,000
//!   deliveries of each kind (ping, pull_request, issue_comment, installation, an unknown
//!   event, a bad signature, and `closed` for 10,000 different pull requests) at 200 a
//!   second;
//! - GitHub write calls for one plan event and one apply event;
//! - GitLab webhook acknowledgement latency under 200 deliveries a second (token
//!   checked, parsed, stored before the 202), on a GitLab-only server.
//!
//! `cargo bench --bench server` (needs terraform on PATH for the write-call figures);
//! `cargo bench --bench server -- gitlab_ack_latency ack_latency` runs only those parts.

// The tests' helpers, of which a bench uses a part.
#[allow(dead_code, unused_imports)]
#[path = "../tests/support/mod.rs"]
mod support;
use support::{bot_world, fake_github, postgres};

#[path = "support/served.rs"]
mod served;

use bot_world::serve_config;
use cascade::server::{GitLabServeConfig, start};
use fake_github::{Delivery, FakeGitHub, PrSpec};
use served::{Served, copy_example, pull_request_on};
use std::time::{Duration, Instant};
use support::fake_gitlab::{FakeGitLab, MrSpec};

const RATE: u32 = 200;
const SECONDS: u32 = 10;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Acknowledgement latency on SQLite, then on PostgreSQL (a throwaway cluster on a unix
/// socket, as the tests use), side by side.
async fn ack_latency() {
    ack_latency_on(None).await;
    ack_latency_on(Some(postgres::database().await)).await;
}

async fn ack_latency_on(database_url: Option<String>) {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let data = tempfile::tempdir().unwrap();
    let backend = if database_url.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let mut config = serve_config(&fake, data.path());
    config.database_url = database_url.map(Into::into);
    let server = start(config).await.unwrap();
    let url = format!("http://{}/webhooks/github", server.addr);
    let total = (RATE * SECONDS) as usize;
    let deliveries: Vec<_> = (0..total)
        .map(|i| {
            let d = fake.installation_repositories_event(77, "added", &[&format!("acme/repo-{i}")]);
            (d.body.clone(), d.headers())
        })
        .collect();
    let latencies = paced(&url, deliveries).await;
    println!(
        "webhook acknowledgement on {backend}, {total} signed deliveries at {RATE}/s on loopback (verify, parse, store, 202):"
    );
    print_latencies(&latencies);
    server.shutdown().await.unwrap();
}

/// The same on `/webhooks/gitlab` of a GitLab-only server: Note Hooks on one merge
/// request (a note that is no command: stored, then read and dropped by the bot without
/// a call to GitLab), each a new delivery with its own `Idempotency-Key`.
async fn gitlab_ack_latency() {
    let gitlab = FakeGitLab::start().await;
    let project = gitlab.add_project("acme/platform/infra", None);
    let iid = gitlab.open_merge_request(project, MrSpec::default());
    let note = gitlab.user_note(project, iid, "alice", "Looks good to me.");
    let data = tempfile::tempdir().unwrap();
    let mut config = serve_config(&FakeGitHub::start().await, data.path());
    config.github = None;
    config.gitlab = Some(GitLabServeConfig {
        url: gitlab.url(),
        token: gitlab.token().into(),
        webhook_secrets: vec![gitlab.webhook_secret().into_bytes()].into(),
        signing_key: None,
    });
    let server = start(config).await.unwrap();
    let url = format!("http://{}/webhooks/gitlab", server.addr);
    let total = (RATE * SECONDS) as usize;
    let first = gitlab.note_event(&note);
    let deliveries: Vec<_> = (0..total)
        .map(|_| {
            let d = first.renewed();
            (d.body.clone(), d.headers())
        })
        .collect();
    let latencies = paced(&url, deliveries).await;
    println!(
        "GitLab webhook acknowledgement, {total} deliveries at {RATE}/s on loopback (token, parse, store, 202):"
    );
    print_latencies(&latencies);
    server.shutdown().await.unwrap();
}

/// A delivery as sent: its body and headers.
type Request = (Vec<u8>, Vec<(&'static str, String)>);

/// Posts `deliveries` to `url` at `RATE` a second, each leaving on time whatever the
/// answers do; every answer must be 202. The latencies, sorted.
async fn paced(url: &str, deliveries: Vec<Request>) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(deliveries.len());
    for (i, (body, headers)) in deliveries.into_iter().enumerate() {
        let due = started + Duration::from_secs_f64(i as f64 / RATE as f64);
        tokio::time::sleep_until(due.into()).await;
        let mut request = client.post(url).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let status = request.send().await.unwrap().status().as_u16();
            (sent.elapsed(), status)
        }));
    }
    let mut latencies = Vec::with_capacity(tasks.len());
    for t in tasks {
        let (latency, status) = t.await.unwrap();
        assert_eq!(status, 202);
        latencies.push(latency);
    }
    latencies.sort();
    latencies
}

fn print_latencies(latencies: &[Duration]) {
    println!(
        "  p50 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
        percentile(latencies, 0.50).as_secs_f64() * 1e3,
        percentile(latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
}

async fn idle_memory() {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let served = Served::start(&fake, data.path(), &[]);
    std::thread::sleep(Duration::from_secs(3));
    println!(
        "idle `cascade serve` resident memory: {:.1} MiB",
        served.memory().0
    );
}

const FLOOD: usize = 10_000;

/// Sends `FLOOD` deliveries made by `next` at `RATE` a second to the served
/// binary, printing its resident memory before, during and after, the
/// answers' statuses and their p99 latency.
async fn flood(served: &Served, kind: &str, expected: u16, next: impl Fn(usize) -> Delivery) {
    let client = reqwest::Client::new();
    let url = served.url("/webhooks/github");
    let (before, _) = served.memory();
    let mut during = Vec::new();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(FLOOD);
    for i in 0..FLOOD {
        let due = started + Duration::from_secs_f64(i as f64 / RATE as f64);
        tokio::time::sleep_until(due.into()).await;
        if i > 0 && i % (FLOOD / 4) == 0 {
            during.push(served.memory().0);
        }
        let d = next(i);
        let mut request = client.post(&url).body(d.body.clone());
        for (name, value) in d.headers() {
            request = request.header(name, value);
        }
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let status = request.send().await.map(|r| r.status().as_u16());
            (sent.elapsed(), status)
        }));
    }
    let mut latencies = Vec::with_capacity(FLOOD);
    let mut statuses: std::collections::BTreeMap<String, usize> = Default::default();
    for t in tasks {
        let (latency, status) = t.await.unwrap();
        let status = status.map_or_else(|e| format!("error ({e})"), |s| s.to_string());
        *statuses.entry(status).or_default() += 1;
        latencies.push(latency);
    }
    let (end, _) = served.memory();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (settled, peak) = served.memory();
    latencies.sort();
    let during: Vec<String> = during.iter().map(|m| format!("{m:.1}")).collect();
    println!(
        "  {kind:<26} RSS MiB: before {before:.1} | during {} | end {end:.1} | +5 s {settled:.1} | peak so far {peak:.1}   ack p99 {:.2} ms   answers {statuses:?}",
        during.join(" / "),
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
    );
    assert_eq!(
        statuses.get(&expected.to_string()),
        Some(&FLOOD),
        "{kind}: every delivery answered {expected}"
    );
}

/// Resident memory of the real `cascade serve` under `FLOOD` deliveries of each kind.
async fn flood_memory() {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    // A repository without units: planning it is cheap, the flood is about the server.
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("README.md"), "infrastructure\n").unwrap();
    let (n, _) = pull_request_on(&fake, work.path(), "README.md");
    let data = tempfile::tempdir().unwrap();
    let served = Served::start(&fake, data.path(), &[]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "`cascade serve` (the binary cargo bench built) under {FLOOD} deliveries of each kind at {RATE}/s, one kind after another:"
    );
    let ping = fake.ping_event();
    flood(&served, "ping", 200, |_| ping.renewed()).await;
    let push = fake.pull_request_event("acme/infra", n, "synchronize");
    flood(&served, "pull_request (one PR)", 202, |_| push.renewed()).await;
    let said = fake.user_comment("acme/infra", n, "bob", "Looks good to me.");
    let comment = fake.issue_comment_event(&said);
    flood(&served, "issue_comment", 202, |_| comment.renewed()).await;
    let installed = fake.installation_event(77, "created");
    flood(&served, "installation", 202, |_| installed.renewed()).await;
    flood(&served, "unknown event (random name)", 200, |i| {
        fake.event(
            &format!("made_up_{i}"),
            &serde_json::json!({ "action": "done" }),
        )
    })
    .await;
    let forged = fake.pull_request_event("acme/infra", n, "opened");
    flood(&served, "bad signature (random name)", 401, |i| Delivery {
        event: format!("forged_{i}"),
        ..forged.renewed().signed_with("not the secret")
    })
    .await;
    // Every delivery a different pull request: a worker per pull request must end with
    // its queue, or memory grows with every pull request ever seen.
    let many = many_pull_requests(&fake, FLOOD);
    flood(&served, "pull_request closed (10,000 PRs)", 202, |i| {
        fake.pull_request_event("acme/many", many[i], "closed")
    })
    .await;
    let metrics = reqwest::get(served.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    println!(
        "  /metrics after the floods: {} bytes, {} delivery series",
        metrics.len(),
        metrics
            .lines()
            .filter(|l| l.starts_with("cascade_deliveries_total{"))
            .count()
    );
}

/// `count` closed pull requests in `acme/many`, a repository the fake has no git remote
/// for (closing one fetches nothing): their numbers.
fn many_pull_requests(fake: &FakeGitHub, count: usize) -> Vec<u64> {
    fake.add_repo("acme/many", None);
    (0..count)
        .map(|_| {
            let n = fake.open_pull_request("acme/many", PrSpec::default());
            fake.close_pull_request("acme/many", n, false);
            n
        })
        .collect()
}

async fn write_calls() {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let work = tempfile::tempdir().unwrap();
    copy_example(work.path());
    let (n, head) = pull_request_on(&fake, work.path(), "root.hcl");
    let data = tempfile::tempdir().unwrap();
    let server = start(serve_config(&fake, data.path())).await.unwrap();
    let url = format!("http://{}/webhooks/github", server.addr);
    let before = fake.write_calls();
    fake.pull_request_event("acme/infra", n, "opened")
        .post(&url)
        .await;
    let done = |fake: &FakeGitHub| {
        fake.check_runs("acme/infra", &head)
            .iter()
            .any(|c| c.current().status == "completed")
    };
    for _ in 0..600 {
        if done(&fake) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let plan_writes = fake.write_calls() - before;
    let plan_comments = fake.bot_comments("acme/infra", n).len() as u64;
    let comment = fake.bot_comments("acme/infra", n)[0].body.clone();
    let id: String = comment[comment.find("/apply ").unwrap() + 7..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    fake.set_permission("acme/infra", "bob", "write");
    fake.approve("acme/infra", n, "bob");
    let before = fake.write_calls();
    let c = fake.user_comment("acme/infra", n, "bob", &format!("/apply {id}"));
    fake.issue_comment_event(&c).post(&url).await;
    for _ in 0..900 {
        if fake
            .bot_comments("acme/infra", n)
            .iter()
            .any(|c| c.body.starts_with("<!-- cascade:apply"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let apply_writes = fake.write_calls() - before;
    println!(
        "GitHub write calls for one event on a plan of all 11 units: plan {plan_writes} ({plan_comments} comment(s)), apply {apply_writes}"
    );
    // Three per event; a plan in several comments one more per extra part.
    assert!(
        plan_writes <= 2 + plan_comments,
        "plan: {plan_writes} writes"
    );
    assert!(apply_writes <= 3, "apply: {apply_writes} writes");
    server.shutdown().await.unwrap();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench --bench server -- NAME…` runs only the named parts.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    runtime.block_on(async {
        if wanted("ack_latency") {
            ack_latency().await;
        }
        if wanted("gitlab_ack_latency") {
            gitlab_ack_latency().await;
        }
        if wanted("idle_memory") {
            idle_memory().await;
        }
        if wanted("flood_memory") {
            flood_memory().await;
        }
        if wanted("write_calls") {
            write_calls().await;
        }
    });
}
