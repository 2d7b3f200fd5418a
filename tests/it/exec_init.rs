//! `init` with real terraform: bounded by its own timeout, one at a time per
//! repository's provider cache, and never holding an executor slot while it
//! waits for its turn. A module host that never answers (a loopback listener
//! that accepts and says nothing) stands in for one that hangs.

use cascade::exec::{ExecError, Executor, ProcessExecutor, UnitJob};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A listener that accepts every connection and never answers; each accepted
/// connection is announced on the returned channel.
fn silent_host() -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (port, rx)
}

fn job(tmp: &Path, repo: &str, unit: &str, main_tf: &str, init_timeout: Duration) -> UnitJob {
    let root = tmp.join(repo.replace('/', "-"));
    let dir = root.join(unit);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.tf"), main_tf).unwrap();
    let run = tmp.join("data/runs").join(repo.replace('/', "-"));
    UnitJob {
        unit: UnitPath::new(unit),
        dir,
        root,
        repo: repo.into(),
        sources: vec![],
        tool: Tool::Terraform,
        plan_file: run.join(format!("plans/{unit}.tfplan")),
        log: run.join(format!("{unit}.log")),
        work: run.join(format!("work/{unit}")),
        destroy: false,
        init_args: vec![],
        timeout: Duration::from_secs(600),
        init_timeout,
        phase: cascade::exec::Phase::Plan,
        workflow: None,
        plan_targets: Vec::new(),
        state_change: None,
    }
}

const PLAIN: &str = "resource \"terraform_data\" \"x\" {\n  input = \"x\"\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_init_times_out_alone_while_another_repository_plans() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, accepted) = silent_host();
    let parent = [
        ("PATH", std::env::var("PATH").unwrap()),
        ("CHECKPOINT_DISABLE", "1".into()),
        ("TF_IN_AUTOMATION", "1".into()),
    ];
    // Two slots over everything: the hung init holds one while it runs.
    let exec = Arc::new(
        ProcessExecutor::new(tmp.path().join("data/exec"))
            .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
            .with_limit(2),
    );
    let timeout = Duration::from_secs(8);
    let hung = job(
        tmp.path(),
        "acme/slow",
        "app",
        &format!("module \"m\" {{\n  source = \"git::http://127.0.0.1:{port}/m.git\"\n}}\n"),
        timeout,
    );
    let started = tokio::time::Instant::now();
    let a = {
        let exec = exec.clone();
        tokio::spawn(async move { exec.plan(&hung, &CancellationToken::new()).await })
    };
    tokio::task::spawn_blocking(move || accepted.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("terraform init reaches the module host");
    // The same repository's next unit waits for the cache's turn, holding no slot.
    let c = {
        let exec = exec.clone();
        let next = job(tmp.path(), "acme/slow", "db", PLAIN, timeout);
        tokio::spawn(async move { exec.plan(&next, &CancellationToken::new()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another repository plans meanwhile, in the one slot left.
    let other = job(tmp.path(), "acme/other", "app", PLAIN, timeout);
    exec.plan(&other, &CancellationToken::new())
        .await
        .expect("another repository's unit plans while the init hangs");
    assert!(
        !a.is_finished() && !c.is_finished(),
        "planned before the hung init gave up ({:?} in)",
        started.elapsed()
    );
    let err = a.await.unwrap().unwrap_err();
    assert!(
        matches!(&err, ExecError::TimedOut { command, seconds: 8 } if command == "terraform init"),
        "{err}"
    );
    // Its turn over, the waiting unit of the same repository goes on.
    c.await
        .unwrap()
        .expect("the next unit plans once the turn is free");
}
