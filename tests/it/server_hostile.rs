//! The server cannot be crashed, starved or flooded: slow and greedy clients
//! over raw TCP, oversized bodies, floods of forged deliveries, and pull
//! requests whose configuration makes discovery panic, abort or run too long.

use crate::support::bot_world;
use crate::support::fake_github;

use bot_world::{
    REPO, World, git_out, push, push_change, serve_binary, serve_config, serve_process,
    wait_listening, world_configured,
};
use cascade::bot::MAX_DELIVERY_ATTEMPTS;
use cascade::event::DeliveryId;
use cascade::server::{HttpLimits, RunningServer, start};
use cascade::store::{BotStore, DeliveryRecord, DeliveryStatus, SqliteStore};
use fake_github::FakeGitHub;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with `limits`, against an empty fake GitHub.
struct Served {
    fake: FakeGitHub,
    server: RunningServer,
    _data: tempfile::TempDir,
}

async fn served(limits: HttpLimits) -> Served {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let mut config = serve_config(&fake, data.path());
    config.http = limits;
    let server = start(config).await.unwrap();
    Served {
        fake,
        server,
        _data: data,
    }
}

impl Served {
    fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.addr)
    }
}

/// Reads until the server closes the connection (or `limit` passes): what
/// it sent, and when it closed.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, Option<Instant>) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let until = Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(until.into(), stream.read(&mut buf)).await {
            Err(_) => return (String::from_utf8_lossy(&seen).into(), None),
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (String::from_utf8_lossy(&seen).into(), Some(Instant::now()));
            }
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// The status line's code of a raw HTTP/1.1 response, if any arrived.
fn status_of(response: &str) -> Option<u16> {
    response.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn quick_limits() -> HttpLimits {
    HttpLimits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(3),
        ..HttpLimits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_headers_byte_by_byte_is_cut_off_after_the_header_timeout() {
    let s = served(quick_limits()).await;
    let stream = TcpStream::connect(s.addr()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    // Well-formed headers, one byte every 100 ms: 20 s to finish, never finished in time.
    let trickle = tokio::spawn(async move {
        let headers = "POST /webhooks/github HTTP/1.1\r\nHost: cascade\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\nContent-Type: application/json\r\n";
        for byte in headers.bytes().cycle().take(200) {
            if writer.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {} // a 408 may come first; the close is what counts
            }
        }
    })
    .await
    .expect("the server must close a connection whose headers never finish");
    trickle.abort();
    let after = closed - started;
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(4),
        "closed after {after:?}; the header timeout is 1 s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_idle_connections_do_not_delay_a_normal_request() {
    let s = served(quick_limits()).await;
    let mut idle = Vec::new();
    for _ in 0..300 {
        let mut c = TcpStream::connect(s.addr()).await.unwrap();
        // Half send nothing, half start a request and stall.
        if idle.len() % 2 == 0 {
            c.write_all(b"POST /webhooks/github HTTP/1.1\r\nHost: c")
                .await
                .unwrap();
        }
        idle.push(c);
    }
    let client = reqwest::Client::new();
    let started = Instant::now();
    let health = client.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let ping = s.fake.ping_event();
    assert_eq!(ping.post(&s.url("/webhooks/github")).await.status(), 200);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "two requests beside 300 idle connections took {:?}",
        started.elapsed()
    );
    // And the idle ones are let go after the header timeout.
    let mut closed = 0;
    for c in &mut idle {
        if read_until_closed(c, Duration::from_secs(5))
            .await
            .1
            .is_some()
        {
            closed += 1;
        }
    }
    assert_eq!(closed, idle.len(), "every idle connection was closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_connection_limit_clients_wait_and_a_normal_request_is_still_served() {
    let s = served(HttpLimits {
        max_connections: 8,
        ..quick_limits()
    })
    .await;
    let started = Instant::now();
    let mut greedy = Vec::new();
    for _ in 0..40 {
        greedy.push(TcpStream::connect(s.addr()).await.unwrap());
    }
    // A normal request queued behind 40 silent connections, 8 served at a time.
    let client = reqwest::Client::new();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        client.get(s.url("/healthz")).send(),
    )
    .await
    .expect("the request is served once the silent connections time out")
    .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let mut closes = Vec::new();
    for c in &mut greedy {
        let (_, closed) = read_until_closed(c, Duration::from_secs(20)).await;
        closes.push(closed.expect("every silent connection is closed") - started);
    }
    // At most 8 held at once: the 9th is only accepted when one of the first 8
    // closes (after its 1 s header timeout), so it cannot close before 2 s.
    let early = closes
        .iter()
        .filter(|t| **t < Duration::from_millis(1900))
        .count();
    assert!(early <= 8, "{early} connections held at once: {closes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_content_length_is_refused_before_the_body_is_read() {
    let s = served(HttpLimits {
        body_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(10),
        ..HttpLimits::default()
    })
    .await;
    let mut c = TcpStream::connect(s.addr()).await.unwrap();
    c.write_all(
        b"POST /webhooks/github HTTP/1.1\r\nHost: cascade\r\nContent-Type: application/json\r\n\
          X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\n\
          Content-Length: 104857600\r\n\r\n",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf))
        .await
        .expect("the refusal comes at once, not after a body timeout")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert_eq!(status_of(&answer), Some(413), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_or_trickled_body_is_cut_off() {
    let s = served(quick_limits()).await;
    let headers = "POST /webhooks/github HTTP/1.1\r\nHost: cascade\r\nContent-Type: application/json\r\n\
                   X-GitHub-Event: ping\r\nX-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\n\
                   Content-Length: 1000\r\n\r\n";
    // Stalled: half the body, then nothing.
    let mut stalled = TcpStream::connect(s.addr()).await.unwrap();
    stalled.write_all(headers.as_bytes()).await.unwrap();
    stalled.write_all(&[b' '; 500]).await.unwrap();
    let started = Instant::now();
    let (answer, closed) = read_until_closed(&mut stalled, Duration::from_secs(10)).await;
    assert!(closed.is_some(), "a stalled body is cut off: {answer}");
    assert!(
        status_of(&answer).is_none_or(|code| code >= 400),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Trickled: a byte every 300 ms never trips the pause limit, only the whole-request one.
    let stream = TcpStream::connect(s.addr()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    writer.write_all(headers.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if writer.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(10), reader.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
        if seen.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    trickle.abort();
    let answer = String::from_utf8_lossy(&seen);
    assert_eq!(status_of(&answer), Some(408), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_forged_and_unknown_events_leaves_metrics_small() {
    let s = served(HttpLimits::default()).await;
    let client = reqwest::Client::new();
    let hook = s.url("/webhooks/github");
    let body = serde_json::to_vec(&serde_json::json!({"action": "opened"})).unwrap();
    let mut answers = Vec::new();
    for batch in 0..40 {
        let sends = (0..50).map(|i| {
            let n = batch * 50 + i;
            let request = client
                .post(&hook)
                .header(
                    "X-GitHub-Event",
                    format!("evil_{n}_{}", "x".repeat(n % 200)),
                )
                .header("X-GitHub-Delivery", uuid::Uuid::new_v4().to_string())
                .header("X-Hub-Signature-256", format!("sha256={:064x}", n))
                .body(body.clone());
            async move { request.send().await.unwrap().status().as_u16() }
        });
        answers.extend(all_at_once(sends).await);
    }
    assert!(
        answers.iter().all(|s| *s == 401),
        "forged deliveries are refused"
    );
    // Signed, under names cascade does not know: counted as `other`.
    for n in 0..200 {
        let d = s.fake.event(
            &format!("made_up_{n}"),
            &serde_json::json!({"action": "done"}),
        );
        assert_eq!(d.post(&hook).await.status().as_u16(), 200);
    }
    let metrics = client
        .get(s.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("evil_") && !metrics.contains("made_up_"),
        "{metrics}"
    );
    let series = metrics
        .lines()
        .filter(|l| l.starts_with("cascade_deliveries_total{"))
        .count();
    // Six event labels (five known, `other`) and `unauthenticated`, times seven outcomes at most.
    assert!(series <= 7 * 7, "{series} series:\n{metrics}");
    assert!(metrics.contains(r#"event="unauthenticated""#), "{metrics}");
    assert!(metrics.contains(r#"event="other""#), "{metrics}");
    assert!(
        metrics.len() < 16 * 1024,
        "/metrics is {} bytes",
        metrics.len()
    );
}

/// Runs every future at once and collects their outputs in order.
async fn all_at_once<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_id_that_is_not_a_guid_is_refused() {
    let s = served(HttpLimits::default()).await;
    let hook = s.url("/webhooks/github");
    let client = reqwest::Client::new();
    let ping = s.fake.ping_event();
    let long = "a".repeat(65);
    for bad in [
        "../../etc/passwd",
        "a b",
        "id'--",
        "<script>",
        long.as_str(),
        "",
    ] {
        let mut request = client.post(&hook).body(ping.body.clone());
        for (name, value) in ping.headers() {
            let value = if name == "x-github-delivery" {
                bad.to_string()
            } else {
                value
            };
            request = request.header(name, value);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status().as_u16(), 400, "{bad:?}");
        let text = answer.text().await.unwrap();
        assert!(text.contains("X-GitHub-Delivery"), "{text}");
        assert!(
            bad.is_empty() || !text.contains(bad),
            "the id is not echoed: {text}"
        );
    }
    assert_eq!(ping.post(&hook).await.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_the_request_in_flight_and_does_not_wait_for_idle_connections() {
    let s = served(quick_limits()).await;
    let addr = s.addr();
    let _idle = TcpStream::connect(addr).await.unwrap();
    // A request whose body is still coming when the shutdown starts.
    let ping = s.fake.ping_event();
    let mut head = format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: cascade\r\nContent-Length: {}\r\n",
        ping.body.len()
    );
    for (name, value) in ping.headers() {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut in_flight = TcpStream::connect(addr).await.unwrap();
    in_flight.write_all(head.as_bytes()).await.unwrap();
    in_flight.write_all(&ping.body[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Served {
        server,
        fake: _fake,
        _data,
    } = s;
    let started = Instant::now();
    let stopping = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(200)).await;
    in_flight.write_all(&ping.body[10..]).await.unwrap();
    let (answer, _) = read_until_closed(&mut in_flight, Duration::from_secs(5)).await;
    assert_eq!(status_of(&answer), Some(200), "{answer}");
    tokio::time::timeout(Duration::from_secs(5), stopping)
        .await
        .expect("an idle connection does not hold the shutdown up")
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no new connections after shutdown"
    );
}

// ---------------------------------------------------------------- pull requests

/// Commits `content` as `file` on `branch` (made from the current head) and pushes it.
fn commit_file(w: &World, branch: &str, file: &str, content: &str) -> String {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", branch]);
    std::fs::write(dir.join(file), content).unwrap();
    git_out(dir, &["add", "-A"]);
    git_out(dir, &["commit", "-qm", &format!("change {file}")]);
    push(w, branch)
}

/// `global/dns/terragrunt.hcl` as the example has it.
fn dns_original() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/live/global/dns/terragrunt.hcl"),
    )
    .unwrap()
}

/// `global/dns/terragrunt.hcl` with an edge computed by `expression`.
fn dns_with_edge(expression: &str) -> String {
    format!(
        "{}\ndependencies {{\n  paths = [{expression}]\n}}\n",
        dns_original()
    )
}

/// `count` units under `dir`, each a legitimate `terragrunt.hcl` of 165 KB
/// (3,000 inputs): costly to parse, with nothing for an evaluator limit to cut.
fn write_fat_units(dir: &std::path::Path, count: usize) {
    let inputs: String = (0..3000)
        .map(|k| format!("  key_{k:04} = [\"value-{k:04}\", {k}, {{ nested = \"n{k}\" }}]\n"))
        .collect();
    for u in 0..count {
        let unit = dir.join(format!("u{u:03}"));
        std::fs::create_dir_all(&unit).unwrap();
        std::fs::write(
            unit.join("terragrunt.hcl"),
            format!(
                "include \"root\" {{\n  path = find_in_parent_folders(\"root.hcl\")\n}}\n\ninputs = {{\n{inputs}}}\n"
            ),
        )
        .unwrap();
    }
}

async fn healthz_latency(w: &World) -> Duration {
    let url = format!("http://{}/healthz", w.server.as_ref().unwrap().addr);
    let started = Instant::now();
    let answer = reqwest::get(url).await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_whose_discovery_panics_fails_alone_and_its_next_push_is_planned() {
    let w = world_configured("", |_| {}).await;
    // An edge that panics today's evaluator; once it is bounded, an unresolved unit.
    let evil = commit_file(
        &w,
        "evil",
        "global/dns/terragrunt.hcl",
        &dns_with_edge(r#"format("%.99999999999f", 1)"#),
    );
    let n1 = w.open_pr("mallory", "evil", &evil, false);
    assert_eq!(w.send_pr(n1, "opened").await, 202);
    w.until("an answer on the hostile pull request", |w| {
        !w.bot_texts(n1).is_empty()
    })
    .await;
    let first = &w.bot_texts(n1)[0];
    assert!(
        first.contains("internal error") || first.starts_with("<!-- cascade:plan"),
        "{first}"
    );
    assert!(healthz_latency(&w).await < Duration::from_secs(1));
    // Another pull request is planned as usual.
    git_out(w.work.path(), &["checkout", "-q", "feature"]);
    let n2 = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n2, "opened").await, 202);
    w.until("the other pull request's plan", |w| {
        w.checks_done(&w.head_sha)
    })
    .await;
    // Its units are the hostile one's too, which holds their locks: it waits for them.
    let plan = w.plan_comment(n2);
    assert!(plan.contains("`global/dns` — `locked by #1"), "{plan}");
    // The hostile pull request's worker is alive: a fixed push is planned.
    git_out(w.work.path(), &["checkout", "-q", "evil"]);
    let fixed = commit_file(&w, "evil", "global/dns/terragrunt.hcl", &dns_original());
    w.synchronize(n1, &fixed, "global/dns/terragrunt.hcl").await;
    w.until("the fixed head's plan", |w| w.checks_done(&fixed))
        .await;
    assert!(
        w.bot_texts(n1)
            .iter()
            .any(|t| t.starts_with("<!-- cascade:plan")),
        "{:#?}",
        w.bot_texts(n1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_past_its_deadline_fails_the_pull_request_and_the_server_keeps_answering() {
    let w = world_configured("", |c| c.discovery_timeout = Duration::from_millis(500)).await;
    // 48 units of 165 KB each: seconds of parsing alone, past the 0.5 s limit
    // (the example's 11 units take ~40 ms), whatever the evaluator's own limits.
    git_out(w.work.path(), &["checkout", "-q", "-B", "big"]);
    write_fat_units(&w.work.path().join("dev/big"), 48);
    git_out(w.work.path(), &["add", "-A"]);
    git_out(w.work.path(), &["commit", "-qm", "48 large units"]);
    let big = push(&w, "big");
    // Two at once: with discovery on the runtime, both workers would be stuck.
    let n1 = w.open_pr("alice", "big", &big, false);
    let n2 = w.open_pr("bob", "big", &big, false);
    assert_eq!(w.send_pr(n1, "opened").await, 202);
    assert_eq!(w.send_pr(n2, "opened").await, 202);
    let hook = w.hook();
    let mut slowest = Duration::ZERO;
    let told = |w: &World, n: u64| {
        w.bot_texts(n)
            .iter()
            .any(|t| t.contains("took longer than 0.5 s"))
    };
    let until = Instant::now() + Duration::from_secs(120);
    while !(told(&w, n1) && told(&w, n2)) {
        assert!(
            Instant::now() < until,
            "{:#?}",
            (w.bot_texts(n1), w.bot_texts(n2))
        );
        slowest = slowest.max(healthz_latency(&w).await);
        let started = Instant::now();
        assert_eq!(w.fake.ping_event().post(&hook).await.status().as_u16(), 200);
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        slowest < Duration::from_secs(1),
        "slowest probe or ack: {slowest:?}"
    );
    let text = &w.bot_texts(n1)[0];
    assert!(
        text.contains("--discovery-timeout") && text.contains("Simplify"),
        "{text}"
    );
    let check = &w.fake.check_runs(REPO, &big)[0];
    assert_eq!(check.current().conclusion.as_deref(), Some("failure"));
    // Today's evaluator runs on past the deadline (holding its slot, not a
    // runtime thread); wait for it so the next plans do not share its cores.
    let bot = w.server.as_ref().unwrap().bot.clone();
    let until = Instant::now() + Duration::from_secs(120);
    while bot.discoveries_running() > 0 {
        assert!(Instant::now() < until, "discovery never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The same pull request, force-pushed without the large units, is planned; so is another one.
    git_out(w.work.path(), &["checkout", "-q", "feature"]);
    let fixed = push_change(&w, "big", "dev/app/main.tf", "a smaller change");
    w.synchronize(n1, &fixed, "dev/app/main.tf").await;
    w.until("the simplified head's plan", |w| w.checks_done(&fixed))
        .await;
    let text = &w.bot_texts(n1)[0];
    assert!(
        text.starts_with("<!-- cascade:plan") && !text.contains("took longer"),
        "{text}"
    );
    let n3 = w.open_pr("carol", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(n3, "opened").await, 202);
    w.until("another pull request's plan", |w| {
        w.checks_done(&w.head_sha)
    })
    .await;
    // Its units are #1's simplified head's too, which holds their locks: it waits for them.
    let plan = w.plan_comment(n3);
    assert!(plan.contains("`global/dns` — `locked by #1"), "{plan}");
}

/// The pull request's `opened` delivery, stored as a server that died
/// `attempts` times while handling it would have left it.
async fn stored_delivery(w: &World, number: u64, attempts: u32) -> String {
    let store = SqliteStore::open(&w.data.path().join("cascade.db"))
        .await
        .unwrap();
    let d = w.fake.pull_request_event(REPO, number, "opened");
    let record = DeliveryRecord {
        id: DeliveryId::new(&d.id).unwrap(),
        event: d.event.clone(),
        body: d.body.clone(),
        status: DeliveryStatus::Received,
        received_at: 1,
        owner: None,
        claimed_until: 0,
    };
    assert!(store.insert_delivery(&record).await.unwrap());
    for _ in 0..attempts {
        store.start_delivery_attempt(&record.id).await.unwrap();
    }
    d.id
}

async fn restart(w: &mut World) {
    if let Some(server) = w.server.take() {
        server.shutdown().await.unwrap();
    }
    w.server = Some(start(bot_world::config(w)).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_used_up_its_attempts_is_dropped_at_start_and_the_pull_request_told_once() {
    let mut w = world_configured("", |_| {}).await;
    w.server.take().unwrap().shutdown().await.unwrap();
    let poisoned = w.open_pr("mallory", "feature", &w.head_sha, false);
    stored_delivery(&w, poisoned, MAX_DELIVERY_ATTEMPTS).await;
    // One attempt short of the limit: resumed and planned as usual.
    let other = push_change(&w, "other", "dev/app/main.tf", "another change");
    let resumed = w.open_pr("alice", "other", &other, false);
    stored_delivery(&w, resumed, MAX_DELIVERY_ATTEMPTS - 1).await;
    restart(&mut w).await;
    w.until("the resumed delivery's plan", |w| w.checks_done(&other))
        .await;
    let plan = w.plan_comment(resumed);
    assert!(plan.contains("| `dev/app` |"), "{plan}");
    w.until("the notice on the dropped one", |w| {
        !w.bot_texts(poisoned).is_empty()
    })
    .await;
    let texts = w.bot_texts(poisoned);
    assert_eq!(texts.len(), 1, "{texts:#?}");
    assert!(
        texts[0].contains("dropped") && texts[0].contains("3 times"),
        "{}",
        texts[0]
    );
    assert!(
        w.fake.check_runs(REPO, &w.head_sha).is_empty(),
        "the dropped delivery was not processed"
    );
    // Another restart neither processes it nor says it again.
    restart(&mut w).await;
    w.settled().await;
    assert_eq!(w.bot_texts(poisoned).len(), 1);
    assert!(w.fake.check_runs(REPO, &w.head_sha).is_empty());
    let store = SqliteStore::open(&w.data.path().join("cascade.db"))
        .await
        .unwrap();
    assert_eq!(store.pending_delivery_count().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_aborts_the_process_is_given_up_after_three_attempts() {
    let w = world_configured("", |_| {}).await;
    // Aborts today's evaluator (an allocation it cannot make); once the evaluator
    // is bounded, an unresolved unit.
    let evil = commit_file(
        &w,
        "abort",
        "global/dns/terragrunt.hcl",
        &dns_with_edge(r#"format("%99999999999s", "x")"#),
    );
    let n = w.open_pr("mallory", "abort", &evil, false);
    let (mut server, port) = serve_binary(&w, &[]).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/github");
    assert_eq!(
        w.fake
            .pull_request_event(REPO, n, "opened")
            .post(&hook)
            .await
            .status(),
        202
    );
    let mut aborts = 0;
    let until = Instant::now() + Duration::from_secs(180);
    // Each start resumes the stored delivery; each abort is one attempt.
    loop {
        assert!(
            Instant::now() < until,
            "{aborts} aborts; comments {:#?}",
            w.bot_texts(n)
        );
        if let Some(status) = server.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(6), "the process aborted: {status:?}");
            aborts += 1;
            assert!(
                aborts <= MAX_DELIVERY_ATTEMPTS,
                "crash loop: {aborts} aborts"
            );
            server = serve_process(&w, port, &[]);
            wait_listening(port).await;
            continue;
        }
        if !w.bot_texts(n).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The server that answered stays up and answers probes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(server.try_wait().unwrap().is_none(), "the server stays up");
    let health = reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let texts = w.bot_texts(n);
    if aborts > 0 {
        assert_eq!(aborts, MAX_DELIVERY_ATTEMPTS);
        assert_eq!(texts.len(), 1, "{texts:#?}");
        assert!(texts[0].contains("dropped"), "{}", texts[0]);
    } else {
        assert!(texts[0].starts_with("<!-- cascade:plan"), "{}", texts[0]);
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
