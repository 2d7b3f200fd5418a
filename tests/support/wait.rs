//! Waiting for the bot's work to show. A server in this process says when each of its
//! jobs finishes (`Bot::jobs`): a wait looks again then, and only then, so it neither
//! sleeps longer than the work takes nor looks in the middle of a job. A `cascade serve`
//! process says nothing: a wait on one looks every 100 ms.

use cascade::bot::JobCounts;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How long the worlds wait for the bot: a 2-core machine running other tests at once.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How often a wait on a `cascade serve` process looks.
const POLL: Duration = Duration::from_millis(100);

/// Waits until `cond` holds, at most `limit`. With `jobs` (the watches of the servers in
/// this process doing the work) it looks each time one of their jobs finishes; with
/// none it polls. The panic names `what` and shows `context()`.
pub async fn until(
    what: &str,
    limit: Duration,
    jobs: Vec<watch::Receiver<JobCounts>>,
    cond: impl Fn() -> bool,
    context: impl Fn() -> String,
) {
    let deadline = Instant::now() + limit;
    let watched = !jobs.is_empty();
    let counts = || {
        jobs.iter()
            .map(|j| format!("{:?}", *j.borrow()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (finished, mut on_finish) = mpsc::unbounded_channel();
    let mut forwarders = tokio::task::JoinSet::new();
    for mut watch in jobs.iter().cloned() {
        let finished = finished.clone();
        forwarders.spawn(async move {
            while watch.changed().await.is_ok() && finished.send(()).is_ok() {}
        });
    }
    drop(finished);
    loop {
        while on_finish.try_recv().is_ok() {}
        if cond() {
            return;
        }
        let woken = if watched {
            tokio::time::timeout_at(deadline, on_finish.recv()).await
        } else {
            tokio::time::timeout_at(deadline, tokio::time::sleep(POLL))
                .await
                .map(Some)
        };
        match woken {
            Ok(Some(())) => {}
            Ok(None) => panic!(
                "the servers stopped while waiting for {what}; {}",
                context()
            ),
            Err(_) if cond() => return,
            Err(_) => panic!(
                "timed out after {limit:?} waiting for {what} (jobs: {}); {}",
                counts(),
                context()
            ),
        }
    }
}

/// Waits until every job `jobs`' servers took has finished: the deliveries sent so far
/// are handled, and what they queued in turn.
pub async fn settled(jobs: Vec<watch::Receiver<JobCounts>>, context: impl Fn() -> String) {
    assert!(
        !jobs.is_empty(),
        "only a server in this process says when its jobs are done"
    );
    let idle = || jobs.iter().all(|j| j.borrow().idle());
    until(
        "the jobs taken to finish",
        PATIENCE,
        jobs.clone(),
        idle,
        context,
    )
    .await;
}
