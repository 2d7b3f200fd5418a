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

/// The job watches of the servers in this process.
pub type Jobs = Vec<watch::Receiver<JobCounts>>;

/// Waits until `cond` holds, at most `limit`. With `jobs` (the watches of the servers in
/// this process doing the work) it looks each time one of their jobs finishes; with
/// none it polls. The panic names `what` and shows `context()`.
pub async fn until(
    what: &str,
    limit: Duration,
    jobs: Jobs,
    cond: impl Fn() -> bool,
    context: impl Fn() -> String,
) {
    let counts = |jobs: &Jobs| {
        jobs.iter()
            .map(|j| format!("{:?}", *j.borrow()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match holds_within(limit, jobs.clone(), cond).await {
        Ok(()) => {}
        Err(Stopped) => panic!(
            "the servers stopped while waiting for {what}; {}",
            context()
        ),
        Err(TimedOut) => panic!(
            "timed out after {limit:?} waiting for {what} (jobs: {}); {}",
            counts(&jobs),
            context()
        ),
    }
}

/// Waits until every job `jobs`' servers took has finished: the deliveries sent so far
/// are handled, and what they queued in turn.
pub async fn settled(jobs: Jobs, context: impl Fn() -> String) {
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

/// [`settled`] from a `Drop`, at most `limit` and without a panic: it blocks the thread,
/// so only on a multi-thread runtime, whose workers run the servers meanwhile.
pub fn settle_blocking(jobs: Jobs, limit: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if jobs.is_empty() || runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    let idle = || jobs.iter().all(|j| j.borrow().idle());
    tokio::task::block_in_place(|| {
        runtime.block_on(async {
            let _ = holds_within(limit, jobs.clone(), idle).await;
        })
    });
}

/// Why a wait ended without its condition.
enum Unmet {
    TimedOut,
    /// Every server watched stopped: no job will finish any more.
    Stopped,
}
use Unmet::{Stopped, TimedOut};

async fn holds_within(limit: Duration, jobs: Jobs, cond: impl Fn() -> bool) -> Result<(), Unmet> {
    let deadline = Instant::now() + limit;
    let watched = !jobs.is_empty();
    let (finished, mut on_finish) = mpsc::unbounded_channel();
    let mut forwarders = tokio::task::JoinSet::new();
    for mut watch in jobs {
        let finished = finished.clone();
        forwarders.spawn(async move {
            while watch.changed().await.is_ok() && finished.send(()).is_ok() {}
        });
    }
    drop(finished);
    loop {
        while on_finish.try_recv().is_ok() {}
        if cond() {
            return Ok(());
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
            _ if cond() => return Ok(()),
            Ok(None) => return Err(Stopped),
            Err(_) => return Err(TimedOut),
        }
    }
}
