//! The server losing its PostgreSQL database and getting it back: the real
//! server on the test cluster, reached through a unix-socket proxy the test
//! cuts (new connections refused, open ones dropped) and restores. While the
//! database is gone, `/readyz` answers 503 within a probe's timeout and a
//! signed delivery 503 before GitHub's 10 s timeout (so GitHub shows it
//! failed, to redeliver); once it is back, both recover without a restart
//! and a new delivery is planned.

use crate::support::bot_world;
use crate::support::postgres as pg_cluster;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A unix-socket proxy in front of the test cluster, listening where a
/// PostgreSQL client looks for `host=<dir>`: `<dir>/.s.PGSQL.5432`.
struct DatabaseProxy {
    dir: tempfile::TempDir,
    target: PathBuf,
    /// The accept loop while the database is "up".
    running: Option<(CancellationToken, JoinHandle<()>)>,
}

impl DatabaseProxy {
    fn start(target: PathBuf) -> DatabaseProxy {
        let mut proxy = DatabaseProxy {
            dir: tempfile::tempdir().unwrap(),
            target,
            running: None,
        };
        proxy.restore();
        proxy
    }

    /// The URL of `database` through this proxy.
    fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost/{database}?host={}",
            self.dir.path().display()
        )
    }

    /// The database goes away: the socket refuses connections (as a host
    /// whose PostgreSQL stopped does) and every open connection is dropped.
    async fn cut(&mut self) {
        let (stop, task) = self.running.take().expect("the proxy runs");
        stop.cancel();
        task.await.unwrap();
    }

    /// The database is back.
    fn restore(&mut self) {
        let socket = self.dir.path().join(".s.PGSQL.5432");
        // The file a cut listener leaves behind.
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn(forward(listener, self.target.clone(), stop.clone()));
        self.running = Some((stop, task));
    }
}

/// Forwards every connection to `target` until `stop`, then drops them all.
async fn forward(listener: UnixListener, target: PathBuf, stop: CancellationToken) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut client, _) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted.unwrap(),
        };
        while connections.try_join_next().is_some() {}
        let target = target.clone();
        connections.spawn(async move {
            if let Ok(mut server) = UnixStream::connect(&target).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        });
    }
    // Aborting a forwarding task drops both of its sockets.
    connections.shutdown().await;
}

/// A readiness probe as Kubernetes sends it: an answer within `timeout` or a failure.
async fn probe(url: &str, timeout: Duration) -> u16 {
    reqwest::Client::new()
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .unwrap_or_else(|e| panic!("/readyz did not answer within {timeout:?}: {e}"))
        .status()
        .as_u16()
}

/// Probes until `/readyz` answers `status`, for at most `within`.
async fn until_ready_says(url: &str, status: u16, within: Duration) {
    let started = Instant::now();
    loop {
        let got = probe(url, Duration::from_secs(4)).await;
        if got == status {
            return;
        }
        assert!(
            started.elapsed() < within,
            "/readyz still answers {got} after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_database_fails_readiness_and_deliveries_until_it_is_back() {
    let direct = pg_cluster::database().await;
    let name = direct
        .split('/')
        .nth(3)
        .and_then(|rest| rest.split('?').next())
        .expect("a database name in the cluster's URL")
        .to_string();
    let mut proxy = DatabaseProxy::start(pg_cluster::cluster().socket());
    let url = proxy.url(&name);
    let w = bot_world::world_configured("", |config| config.database_url = Some(url.into())).await;
    let ready = format!("http://{}/readyz", w.server.as_ref().unwrap().addr);
    assert_eq!(probe(&ready, Duration::from_secs(4)).await, 200);

    proxy.cut().await;
    // Each probe is answered within a probe's timeout (the store's pool would
    // keep retrying the refused connection for longer).
    for _ in 0..3 {
        let started = Instant::now();
        assert_eq!(probe(&ready, Duration::from_secs(4)).await, 503);
        eprintln!("/readyz answered 503 in {:?}", started.elapsed());
    }

    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let started = Instant::now();
    let refused = tokio::time::timeout(
        Duration::from_secs(10),
        w.fake
            .pull_request_event(bot_world::REPO, n, "opened")
            .post(&w.hook()),
    )
    .await
    .expect("a delivery is answered before GitHub's 10 s timeout");
    eprintln!("the delivery was answered in {:?}", started.elapsed());
    assert_eq!(refused.status().as_u16(), 503);
    let text = refused.text().await.unwrap();
    assert!(text.contains("once /readyz answers 200"), "{text}");

    proxy.restore();
    until_ready_says(&ready, 200, Duration::from_secs(15)).await;
    assert_eq!(
        w.send_pr(n, "opened").await,
        202,
        "a new delivery is stored"
    );
    w.until("the plan comment", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    assert!(
        w.bot_texts(n)[0].contains("global/dns"),
        "{:?}",
        w.bot_texts(n)
    );
}
