//! The bot: what cascade does with each webhook. Work is serialised per pull
//! request (one actor each) and bounded globally by the executor pool; a new
//! push supersedes a plan in progress; on restart, deliveries that were not
//! processed are processed again and runs resume from the store.
//!
//! Owns the pull request flows (plan on open/push, `/apply` with its checks in
//! order, `/plan`, `/unlock`, `/help`, close) and what they post. Never talks
//! HTTP itself: GitHub through `forge::github`, git through `workspace`.

mod adapt;
mod apply;
mod jobs;
mod plan;
mod publish;

pub use jobs::{PrJob, PrKey};

use crate::engine::{ApplyRecovery, Engine};
use crate::event::Event;
use crate::exec::ProcessExecutor;
use crate::forge::github::GitHubApp;
use crate::store::{Clock, DeliveryStatus, PrState, SqliteStore, Store, SystemClock};
use crate::workspace::Workspaces;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A job for a pull request's actor, with the delivery it came from (none for resumed work).
type Queued = (Option<String>, PrJob);

/// What the bot is built from.
pub struct BotConfig {
    pub github: Arc<GitHubApp>,
    pub store: Arc<SqliteStore>,
    pub executor: Arc<ProcessExecutor>,
    pub data_dir: PathBuf,
    pub parallelism: usize,
    pub allow_forks: bool,
    pub unit_timeout: Duration,
    /// Fired when the server shuts down.
    pub shutdown: CancellationToken,
}

/// The running bot.
pub struct Bot {
    pub(crate) github: Arc<GitHubApp>,
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) engine: Engine<ProcessExecutor, SqliteStore>,
    pub(crate) workspaces: Workspaces,
    pub(crate) allow_forks: bool,
    clock: Arc<dyn Clock>,
    actors: Mutex<HashMap<PrKey, mpsc::UnboundedSender<Queued>>>,
    /// The cancel token of the plan each pull request is running, for a new push to supersede it.
    planning: Mutex<HashMap<PrKey, CancellationToken>>,
    tasks: TaskTracker,
    /// Stops the actors' work at once (a crash in tests); shutdown drains instead.
    kill: CancellationToken,
}

impl Bot {
    /// Starts the bot and resumes what a previous process left unfinished.
    pub async fn start(config: BotConfig) -> anyhow::Result<Arc<Bot>> {
        let engine = Engine {
            executor: config.executor.clone(),
            store: config.store.clone(),
            clock: Arc::new(SystemClock),
            data_dir: config.data_dir.clone(),
            parallelism: config.parallelism,
            timeout: config.unit_timeout,
            shutdown: config.shutdown.clone(),
        };
        let bot = Arc::new(Bot {
            github: config.github,
            store: config.store,
            engine,
            workspaces: Workspaces::new(config.data_dir.join("workspaces")),
            allow_forks: config.allow_forks,
            clock: Arc::new(SystemClock),
            actors: Mutex::new(HashMap::new()),
            planning: Mutex::new(HashMap::new()),
            tasks: TaskTracker::new(),
            kill: CancellationToken::new(),
        });
        // A pull request a dead process left `applying`: record what its applies did and
        // put it back, so the re-processed `/apply` resumes the run (re-attaching to any
        // terraform still running) instead of answering that an apply is running.
        for mut pr in bot.store.unfinished_pull_requests().await? {
            if pr.state != PrState::Applying {
                continue;
            }
            let key = PrKey {
                repo: pr.repo.clone(),
                number: pr.number,
            };
            if let Some(id) = &pr.plan_id
                && let ApplyRecovery::Busy(_) =
                    bot.engine.recover_apply(&key.plan_key(), id).await?
            {
                continue;
            }
            pr.state = PrState::Commented;
            bot.store.save_pull_request(&pr).await?;
        }
        for delivery in bot.store.pending_deliveries().await? {
            match crate::event::parse_event(&delivery.event, &delivery.body) {
                Ok(event) => {
                    tracing::info!(delivery = %delivery.id, "resuming a delivery left unprocessed");
                    bot.enqueue(delivery.id, event);
                }
                Err(e) => {
                    tracing::error!(delivery = %delivery.id, error = %e, "a stored delivery no longer parses");
                    bot.store
                        .set_delivery_status(&delivery.id, DeliveryStatus::Failed)
                        .await?;
                }
            }
        }
        Ok(bot)
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Hands a stored delivery to the pull request it concerns (or handles it at once).
    pub fn enqueue(self: &Arc<Self>, delivery: String, event: Event) {
        match jobs::route(event) {
            jobs::Routed::Pr(key, job) => self.send(key, Some(delivery), job),
            jobs::Routed::Installation(change) => {
                let bot = self.clone();
                self.tasks.spawn(async move {
                    let status = match jobs::apply_installation(&bot.store, change).await {
                        Ok(()) => DeliveryStatus::Processed,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot record an installation change");
                            DeliveryStatus::Failed
                        }
                    };
                    let _ = bot.store.set_delivery_status(&delivery, status).await;
                });
            }
            jobs::Routed::Done => {
                let bot = self.clone();
                self.tasks.spawn(async move {
                    let _ = bot
                        .store
                        .set_delivery_status(&delivery, DeliveryStatus::Ignored)
                        .await;
                });
            }
        }
    }

    fn send(self: &Arc<Self>, key: PrKey, delivery: Option<String>, job: PrJob) {
        // A new head supersedes the plan in progress: queued work is dropped by the
        // actor (it plans only the newest head), running units finish.
        if job.is_new_head()
            && let Some(running) = self
                .planning
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
        {
            running.cancel();
        }
        let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        let sender = actors.entry(key.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let bot = self.clone();
            let k = key.clone();
            self.tasks.spawn(async move { bot.actor(k, rx).await });
            tx
        });
        metrics::gauge!("cascade_queue_depth").increment(1.0);
        if sender.send((delivery, job)).is_err() {
            tracing::error!(pr = %key, "a pull request's worker stopped");
        }
    }

    /// One pull request's worker: jobs run one at a time, in order.
    async fn actor(self: Arc<Self>, key: PrKey, mut rx: mpsc::UnboundedReceiver<Queued>) {
        while let Some((delivery, job)) = rx.recv().await {
            metrics::gauge!("cascade_queue_depth").decrement(1.0);
            // A later push makes an earlier queued plan pointless.
            if job.is_new_head() && !rx.is_empty() {
                if let Some(d) = &delivery {
                    let _ = self
                        .store
                        .set_delivery_status(d, DeliveryStatus::Processed)
                        .await;
                }
                continue;
            }
            let span = tracing::info_span!("pr", pr = %key);
            let _ = span.enter();
            let result = tokio::select! {
                r = self.run_job(&key, job) => r,
                _ = self.kill.cancelled() => return,
            };
            let status = match result {
                Ok(()) => DeliveryStatus::Processed,
                Err(e) => {
                    tracing::error!(pr = %key, error = %format!("{e:#}"), "internal error");
                    let _ = publish::internal_error(&self, &key).await;
                    DeliveryStatus::Failed
                }
            };
            if let Some(d) = delivery {
                let _ = self.store.set_delivery_status(&d, status).await;
            }
        }
    }

    async fn run_job(self: &Arc<Self>, key: &PrKey, job: PrJob) -> anyhow::Result<()> {
        match job {
            PrJob::Update(pr) => {
                metrics::counter!("cascade_runs_total", "kind" => "plan").increment(1);
                let cancel = CancellationToken::new();
                self.planning
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), cancel.clone());
                let result = plan::plan_pull_request(self, key, &pr, None, cancel).await;
                self.planning
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(key);
                result
            }
            PrJob::Closed(pr) => plan::close_pull_request(self, key, &pr).await,
            PrJob::Comment(comment) => apply::handle_comment(self, key, &comment).await,
        }
    }

    /// Waits for running work to finish (applies first of all), at most `grace`.
    pub async fn drain(&self, grace: Duration) {
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("shutdown grace period over; stopping what is still running");
            self.kill.cancel();
        }
    }

    /// Stops everything now, without draining.
    pub fn abort(&self) {
        self.kill.cancel();
    }
}
