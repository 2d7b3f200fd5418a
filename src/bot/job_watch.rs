//! A watch of the jobs the bot takes and finishes, for whoever runs the bot in its own
//! process (the tests' worlds, the benches): they await "a job finished" and then look
//! at what they wait for, instead of polling the forge on a timer. Each job a pull
//! request's (or a repository's drift) worker takes, and each delivery handled without
//! such a job, is counted once when taken and once when finished, the last one with its
//! key, its delivery and what became of it.
//!
//! Owns the counts. Never decides, delays or drops work: it is told after the fact, and
//! only a finished job wakes the watchers (a taken one is counted silently). After
//! [`super::Bot::abort`] the jobs left in the queues are never counted as finished.

use super::WorkKey;
use crate::event::DeliveryId;
use tokio::sync::watch;

/// What became of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// Done; its delivery is processed.
    Processed,
    /// Ended in an error or a panic (the pull request was told), or a delivery given
    /// up after too many attempts.
    Failed,
    /// Not run: a newer head of the same pull request was queued behind it.
    Superseded,
    /// Not run now: who pushed could not be recorded, so its delivery is handled again
    /// once its claim runs out.
    Deferred,
    /// A delivery with no work for a pull request: ignored, or an installation change
    /// recorded.
    Recorded,
}

/// One finished job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedJob {
    /// The pull request (or drift work) it was for; `None` for a delivery with none.
    pub key: Option<WorkKey>,
    /// The delivery it came from; `None` for work the bot made itself (a resumed plan,
    /// a drift run, a plan again after locks were released).
    pub delivery: Option<DeliveryId>,
    pub outcome: JobOutcome,
}

/// The jobs taken and finished since the bot started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobCounts {
    pub taken: u64,
    pub finished: u64,
    /// The job that finished last.
    pub last: Option<FinishedJob>,
}

impl JobCounts {
    /// Whether every job taken so far has finished.
    pub fn idle(&self) -> bool {
        self.taken == self.finished
    }
}

/// The sending half, kept by the bot.
pub(crate) struct JobWatch(watch::Sender<JobCounts>);

impl JobWatch {
    pub fn new() -> JobWatch {
        JobWatch(watch::Sender::new(JobCounts::default()))
    }

    /// Counts a job taken; wakes nobody.
    pub fn taken(&self) {
        self.0.send_if_modified(|counts| {
            counts.taken += 1;
            false
        });
    }

    /// Counts a job finished and wakes the watchers.
    pub fn finished(
        &self,
        key: Option<&WorkKey>,
        delivery: Option<&DeliveryId>,
        outcome: JobOutcome,
    ) {
        self.0.send_modify(|counts| {
            counts.finished += 1;
            counts.last = Some(FinishedJob {
                key: key.cloned(),
                delivery: delivery.cloned(),
                outcome,
            });
        });
    }

    pub fn subscribe(&self) -> watch::Receiver<JobCounts> {
        self.0.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_finished_job_wakes_a_watcher_and_a_taken_one_does_not() {
        let jobs = JobWatch::new();
        let mut seen = jobs.subscribe();
        jobs.taken();
        assert!(!seen.has_changed().unwrap(), "taking wakes nobody");
        assert!(!seen.borrow().idle());
        let key = WorkKey::PullRequest {
            repo: crate::forge::RepoKey::from_stored("acme/infra"),
            number: crate::forge::PrNumber::new(7),
        };
        let delivery = DeliveryId::new("d-1").unwrap();
        jobs.finished(Some(&key), Some(&delivery), JobOutcome::Processed);
        seen.changed().await.unwrap();
        let counts = seen.borrow_and_update().clone();
        assert!(counts.idle());
        assert_eq!(
            counts.last,
            Some(FinishedJob {
                key: Some(key),
                delivery: Some(delivery),
                outcome: JobOutcome::Processed,
            })
        );
    }
}
