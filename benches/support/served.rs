//! A real `cascade serve` for benches, and a pull request for it to plan.

use super::support::fake_github::{APP_ID, FakeGitHub, FileChange, PrSpec, app_key};
use super::support::git;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Commits what is in `work` as `main`, appends a line to `changed` on a
/// `feature` branch, serves both from a bare origin as `acme/infra`, and opens
/// a pull request for it: its number and head.
pub fn pull_request_on(fake: &FakeGitHub, work: &Path, changed: &str) -> (u64, String) {
    git(work, &["init", "-q"]);
    git(work, &["add", "-A"]);
    git(work, &["commit", "-qm", "start"]);
    let base = git(work, &["rev-parse", "HEAD"]);
    git(work, &["checkout", "-qb", "feature"]);
    let file = work.join(changed);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text + "\n# a change\n").unwrap();
    git(work, &["commit", "-qam", "change"]);
    let head = git(work, &["rev-parse", "HEAD"]);
    let origin = work.join("origin.git");
    git(
        work,
        &["clone", "-q", "--bare", ".", origin.to_str().unwrap()],
    );
    fake.add_repo("acme/infra", Some(&origin));
    let n = fake.open_pull_request(
        "acme/infra",
        PrSpec {
            head_ref: "feature".into(),
            head_sha: head.clone(),
            base_sha: base,
            files: vec![FileChange::modified(changed)],
            ..PrSpec::default()
        },
    );
    (n, head)
}

/// A `cascade serve` process (the real binary) on a free port of 127.0.0.1.
pub struct Served {
    child: std::process::Child,
    port: u16,
}

impl Served {
    /// Started with `extra` flags besides the App's.
    pub fn start(fake: &FakeGitHub, data: &Path, extra: &[&str]) -> Served {
        let key = data.join("key.pem");
        std::fs::write(&key, app_key()).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_cascade"))
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
            .arg(data.join("served"))
            .arg("--github-private-key-file")
            .arg(&key)
            .args(extra)
            .env("CASCADE_GITHUB_WEBHOOK_SECRET", fake.webhook_secret())
            .env("RUST_LOG", "warn")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Served { child, port }
    }

    /// (VmRSS, VmHWM) in MiB, from /proc/<pid>/status.
    pub fn memory(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib = |field: &str| -> f64 {
            let line = status.lines().find(|l| l.starts_with(field)).unwrap();
            line[field.len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .unwrap()
        };
        (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the bundled example in `dir`.
pub fn copy_example(dir: &Path) {
    let live = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live");
    assert!(
        Command::new("cp")
            .arg("-r")
            .arg(format!("{}/.", live.display()))
            .arg(dir)
            .status()
            .unwrap()
            .success()
    );
}
