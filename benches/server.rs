//! The GitHub App server's own costs:
//! - webhook acknowledgement latency (p50 / p99 / max) under 200 signed deliveries a second
//!   on loopback, each verified, parsed and stored before the answer;
//! - resident memory of an idle `cascade serve`;
//! - GitHub write calls for one plan event and one apply event.
//!
//! `cargo bench --bench server` (needs terraform on PATH for the write-call figures).

#[path = "../tests/support/fake_github.rs"]
mod fake_github;

use cascade::server::{ServeConfig, start};
use fake_github::{APP_ID, FakeGitHub, FileChange, PrSpec, app_key};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RATE: u32 = 200;
const SECONDS: u32 = 10;

fn config(fake: &FakeGitHub, data: &Path) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: data.to_path_buf(),
        database_url: None,
        github_app_id: APP_ID,
        github_private_key: app_key(),
        webhook_secrets: vec![fake.webhook_secret().into_bytes()],
        github_api_url: fake.url(),
        parallelism: 4,
        allow_forks: false,
        terraform_bin: "terraform".into(),
        tofu_bin: "tofu".into(),
        terragrunt_bin: "terragrunt".into(),
        shutdown_grace: Duration::from_secs(30),
        unit_timeout: Duration::from_secs(300),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

async fn ack_latency() {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let data = tempfile::tempdir().unwrap();
    let server = start(config(&fake, data.path())).await.unwrap();
    let url = format!("http://{}/webhooks/github", server.addr);
    let total = (RATE * SECONDS) as usize;
    let deliveries: Vec<_> = (0..total)
        .map(|i| fake.installation_repositories_event(77, "added", &[&format!("acme/repo-{i}")]))
        .collect();
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for (i, d) in deliveries.into_iter().enumerate() {
        // Paced: delivery i leaves at i / RATE seconds, whatever the answers do.
        let due = started + Duration::from_secs_f64(i as f64 / RATE as f64);
        tokio::time::sleep_until(due.into()).await;
        let mut request = client.post(&url).body(d.body.clone());
        for (name, value) in d.headers() {
            request = request.header(name, value);
        }
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let status = request.send().await.unwrap().status().as_u16();
            (sent.elapsed(), status)
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    for t in tasks {
        let (latency, status) = t.await.unwrap();
        assert_eq!(status, 202);
        latencies.push(latency);
    }
    latencies.sort();
    println!(
        "webhook acknowledgement, {total} signed deliveries at {RATE}/s on loopback (verify, parse, store, 202):"
    );
    println!(
        "  p50 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
    server.shutdown().await.unwrap();
}

async fn idle_memory() {
    let fake = FakeGitHub::start().await;
    let data = tempfile::tempdir().unwrap();
    let key = data.path().join("key.pem");
    std::fs::write(&key, app_key()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--github-app-id",
            &APP_ID.to_string(),
            "--github-api-url",
            &fake.url(),
        ])
        .arg("--data-dir")
        .arg(data.path().join("served"))
        .arg("--github-private-key-file")
        .arg(&key)
        .env("CASCADE_GITHUB_WEBHOOK_SECRET", fake.webhook_secret())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(3));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap()
        .to_string();
    child.kill().unwrap();
    child.wait().unwrap();
    println!(
        "idle `cascade serve` resident memory: {}",
        rss.trim_start_matches("VmRSS:").trim()
    );
}

async fn write_calls() {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let work = tempfile::tempdir().unwrap();
    let live = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live");
    assert!(
        Command::new("cp")
            .arg("-r")
            .arg(format!("{}/.", live.display()))
            .arg(work.path())
            .status()
            .unwrap()
            .success()
    );
    git(work.path(), &["init", "-q"]);
    git(work.path(), &["add", "-A"]);
    git(work.path(), &["commit", "-qm", "example"]);
    let base = git(work.path(), &["rev-parse", "HEAD"]);
    git(work.path(), &["checkout", "-qb", "feature"]);
    std::fs::write(
        work.path().join("root.hcl"),
        std::fs::read_to_string(work.path().join("root.hcl")).unwrap() + "\n# every unit\n",
    )
    .unwrap();
    git(work.path(), &["commit", "-qam", "change"]);
    let head = git(work.path(), &["rev-parse", "HEAD"]);
    let origin = work.path().join("origin.git");
    git(
        work.path(),
        &["clone", "-q", "--bare", ".", origin.to_str().unwrap()],
    );
    fake.add_repo("acme/infra", origin.to_str().unwrap());
    let n = fake.open_pull_request(
        "acme/infra",
        PrSpec {
            head_ref: "feature".into(),
            head_sha: head.clone(),
            base_sha: base,
            files: vec![FileChange::modified("root.hcl")],
            ..PrSpec::default()
        },
    );
    let data = tempfile::tempdir().unwrap();
    let server = start(config(&fake, data.path())).await.unwrap();
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
        "GitHub write calls for one event on a plan of all 11 units: plan {plan_writes}, apply {apply_writes}"
    );
    server.shutdown().await.unwrap();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        ack_latency().await;
        idle_memory().await;
        write_calls().await;
    });
}
