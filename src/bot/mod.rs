//! The bot: what cascade does with each webhook. Work is serialised per pull
//! request (one actor each, alive while it has work) and bounded globally by
//! the executor pool; a new push supersedes a plan in progress; on restart,
//! deliveries that were not processed are processed again and runs resume
//! from the store.
//!
//! Isolation: each job runs in its own task, so a panic fails that job (one
//! generic comment) and the pull request's actor takes the next one.
//! Discovery runs off the async runtime within a deadline (`discover`). Every
//! attempt at a pull request's delivery is counted in the store before the work
//! starts, so a delivery that kills the process is given up after
//! [`MAX_DELIVERY_ATTEMPTS`] instead of crash-looping the server.
//!
//! Owns the pull request flows (plan on open/push, `/apply` with its checks in
//! order, `/plan`, `/unlock`, `/help`, close) and what they post. Never talks
//! HTTP itself: forges through `forge::Forge`, git through `workspace`.

mod access;
mod adapt;
mod apply;
mod approve_policies;
mod commands;
mod config_report;
mod ctx;
mod destroy;
mod discover;
mod drift;
mod job_watch;
mod jobs;
mod merge_group;
mod merged;
mod on_merge;
mod owners;
mod plan;
mod policies;
mod publish;
mod refusal;
mod replica;
mod reply_limit;
mod rules;
mod state_commands;
mod verdict;

pub use job_watch::{FinishedJob, JobCounts, JobOutcome};
pub use jobs::{PrJob, WorkKey};
pub use owners::AllowedOwners;

use crate::clock::Clock;
use crate::engine::{ApplyRecovery, Engine};
use crate::event::{DeliveryId, Event};
use crate::exec::ProcessExecutor;
use crate::forge::{ForgeRef, Forges};
use crate::store::{AnyStore, BotStore, DeliveryStatus, PrState};
use crate::workspace::Workspaces;
use discover::DiscoverySlots;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// A job for a pull request's actor, with the delivery it came from (none for resumed work).
type Queued = (Option<DeliveryId>, PrJob);

/// Attempts at processing one delivery, counting those a dead process started:
/// a delivery still unprocessed after this many is marked failed at start.
pub const MAX_DELIVERY_ATTEMPTS: u32 = 3;

/// What the bot is built from.
pub struct BotConfig {
    /// The forges this server serves.
    pub forges: Forges,
    pub store: Arc<AnyStore>,
    pub executor: Arc<ProcessExecutor>,
    pub data_dir: PathBuf,
    pub parallelism: usize,
    pub allow_forks: bool,
    pub unit_timeout: Duration,
    /// How long one `init` may take.
    pub init_timeout: Duration,
    /// How long discovering one pull request may take.
    pub discovery_timeout: Duration,
    /// How long this replica's claims and leases outlive its last heartbeat.
    pub replica_lease: Duration,
    /// How often this replica looks for repositories due a drift run.
    pub drift_tick: Duration,
    /// Whose repositories are served (`--allow-owner`); every owner's by default.
    pub owners: AllowedOwners,
    /// Where stacks' remote sources may be fetched from, besides the served forge.
    pub sources: crate::catalog::ServerSources,
    /// Whether metrics may name repositories (`--metrics-repo-labels`).
    pub metrics_repo_labels: bool,
    /// Where the bot and its engine read the time (`SystemClock` but in tests).
    pub clock: Arc<dyn Clock>,
    /// Fired when the server shuts down.
    pub shutdown: CancellationToken,
}

/// The running bot.
pub struct Bot {
    pub(crate) forges: Forges,
    pub(crate) store: Arc<AnyStore>,
    pub(crate) engine: Engine<ProcessExecutor, AnyStore>,
    pub(crate) workspaces: Workspaces,
    pub(crate) allow_forks: bool,
    /// Whose repositories are served.
    pub(crate) owners: AllowedOwners,
    /// Whether metrics may name repositories.
    pub(crate) metrics_repo_labels: bool,
    /// Where stacks' remote sources may come from, besides the served forge.
    sources: crate::catalog::ServerSources,
    /// The cache of fetched remote sources (`<data-dir>/sources`).
    sources_dir: PathBuf,
    /// Drifted units by repository, as this replica last found them: the unlabelled
    /// drift gauges are their totals.
    pub(crate) drifted_units: Mutex<HashMap<String, u64>>,
    pub(crate) discovery: DiscoverySlots,
    clock: Arc<dyn Clock>,
    actors: Mutex<HashMap<WorkKey, mpsc::UnboundedSender<Queued>>>,
    /// The cancel token of the plan each pull request is running, for a new push to supersede it.
    planning: Mutex<HashMap<WorkKey, CancellationToken>>,
    /// Replies per pull request in the current window.
    pub(crate) replies: reply_limit::ReplyLimits,
    tasks: TaskTracker,
    replica: replica::Replica,
    /// Stops the actors' work at once (a crash in tests); shutdown drains instead.
    kill: CancellationToken,
    /// The jobs taken and finished, for [`Bot::jobs`].
    jobs: job_watch::JobWatch,
}

impl Bot {
    /// The remote sources of a repository's stacks, fetched as the server fetches them:
    /// from its forge with `credential` (so only what the installation can read), and
    /// from the hosts the operator listed.
    pub(crate) fn catalog(
        &self,
        credential: crate::forge::GitCredential,
    ) -> Arc<crate::catalog::Catalog> {
        Arc::new(crate::catalog::Catalog::new(
            self.sources_dir.clone(),
            self.sources.access(Some(credential)),
        ))
    }

    /// The sandbox pull requests' code runs in.
    pub fn sandbox(&self) -> &crate::exec::sandbox::Sandbox {
        self.engine.executor.sandbox()
    }

    /// Starts the bot and resumes what a previous process left unfinished.
    pub async fn start(config: BotConfig) -> anyhow::Result<Arc<Bot>> {
        let engine = Engine {
            executor: config.executor.clone(),
            store: config.store.clone(),
            clock: config.clock.clone(),
            data_dir: config.data_dir.clone(),
            parallelism: config.parallelism,
            timeout: config.unit_timeout,
            init_timeout: config.init_timeout,
            shutdown: config.shutdown.clone(),
        };
        let bot = Arc::new(Bot {
            forges: config.forges,
            store: config.store,
            engine,
            workspaces: Workspaces::new(config.data_dir.join("workspaces")),
            allow_forks: config.allow_forks,
            owners: config.owners,
            metrics_repo_labels: config.metrics_repo_labels,
            sources: config.sources,
            sources_dir: config.data_dir.join("sources"),
            drifted_units: Mutex::default(),
            discovery: DiscoverySlots::new(config.discovery_timeout),
            clock: config.clock,
            actors: Mutex::new(HashMap::new()),
            planning: Mutex::new(HashMap::new()),
            replies: reply_limit::ReplyLimits::default(),
            tasks: TaskTracker::new(),
            replica: replica::Replica::new(config.replica_lease),
            kill: CancellationToken::new(),
            jobs: job_watch::JobWatch::new(),
        });
        tracing::info!(replica = %bot.replica.id, "replica started");
        // A pull request a dead process left `applying`: record what its applies did and
        // put it back, so the re-processed `/apply` resumes the run (re-attaching to any
        // terraform still running) instead of answering that an apply is running.
        // With a shared store (PostgreSQL) another replica may be applying it now: the job that
        // next runs under the pull request's lease recovers it instead.
        let lone = bot.store.single_replica();
        for mut pr in bot.store.unfinished_pull_requests().await? {
            if !lone || pr.state != PrState::Applying {
                continue;
            }
            let key = WorkKey::from_stored(&pr.repo, pr.number);
            if let Some(id) = &pr.plan_id
                && let ApplyRecovery::Busy(_) =
                    bot.engine.recover_apply(&key.plan_key(), id).await?
            {
                continue;
            }
            pr.state = PrState::Commented;
            bot.store.save_pull_request(&pr).await?;
        }
        let left = bot.claim_at_start().await?;
        bot.resume_deliveries(left).await?;
        // Pull requests that waited for locks released before the last process could
        // plan them again (level-based: read from the store, not remembered).
        for (repo, number) in bot.store.released_waiters().await? {
            bot.replan(WorkKey::from_stored(&repo, number)).await?;
        }
        bot.start_heartbeat(config.shutdown.clone());
        bot.start_drift_schedule(config.drift_tick, config.shutdown.clone());
        Ok(bot)
    }

    /// Plans again, by itself, every pull request that waited for `holder`'s locks
    /// (which it has just released).
    pub(crate) async fn wake_waiters(
        self: &Arc<Self>,
        repo: &str,
        holder: u64,
    ) -> anyhow::Result<()> {
        for number in self.store.waiting_for(repo, holder).await? {
            let key = WorkKey::from_stored(repo, number);
            tracing::info!(pr = %key, holder, "locks released: planning the pull request that waited for them");
            self.replan(key).await?;
        }
        Ok(())
    }

    /// Queues a plan of `key` as it is on its forge now (no delivery: it is resumed from the
    /// waiting records if the process stops first).
    async fn replan(self: &Arc<Self>, key: WorkKey) -> anyhow::Result<()> {
        match self
            .store
            .pull_request(&key.repo().stored(), key.number())
            .await?
        {
            Some(record) => {
                let forge = ForgeRef::stored(&record.repo, record.installation_id);
                self.send(key, None, PrJob::Replan { forge });
            }
            None => {
                self.store
                    .set_waiting(&key.repo().stored(), key.number(), &[])
                    .await?
            }
        }
        Ok(())
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// A watch of the jobs this bot has taken and finished (see [`JobCounts`]): whoever
    /// runs the bot in process awaits its change instead of polling for a job's effects.
    pub fn jobs(&self) -> tokio::sync::watch::Receiver<JobCounts> {
        self.jobs.subscribe()
    }

    /// Hands a stored delivery to the pull request it concerns (or handles it at once).
    pub fn enqueue(self: &Arc<Self>, delivery: DeliveryId, event: Event) {
        match jobs::route(event) {
            jobs::Routed::Pr(key, job) => self.send(key, Some(delivery), job),
            jobs::Routed::Installation(change) => {
                self.jobs.taken();
                let bot = self.clone();
                // No attempt is counted: recording an installation runs nothing a
                // pull request wrote, and every write slows the acknowledgements.
                self.tasks.spawn(async move {
                    let status = match jobs::apply_installation(&bot.store, change).await {
                        Ok(()) => DeliveryStatus::Processed,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot record an installation change");
                            DeliveryStatus::Failed
                        }
                    };
                    let _ = bot.store.set_delivery_status(&delivery, status).await;
                    let outcome = match status {
                        DeliveryStatus::Processed => JobOutcome::Recorded,
                        _ => JobOutcome::Failed,
                    };
                    bot.jobs.finished(None, Some(&delivery), outcome);
                });
            }
            jobs::Routed::Done => {
                self.jobs.taken();
                let bot = self.clone();
                self.tasks.spawn(async move {
                    let _ = bot
                        .store
                        .set_delivery_status(&delivery, DeliveryStatus::Ignored)
                        .await;
                    bot.jobs
                        .finished(None, Some(&delivery), JobOutcome::Recorded);
                });
            }
        }
    }

    fn send(self: &Arc<Self>, key: WorkKey, delivery: Option<DeliveryId>, job: PrJob) {
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
        if job.is_new_head() {
            self.supersede_elsewhere(&key);
        }
        // The map stays locked until the job is queued: an idle actor removes
        // itself only under this lock, after seeing its queue empty.
        let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        let sender = actors.entry(key.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let bot = self.clone();
            let k = key.clone();
            self.tasks.spawn(async move { bot.actor(k, rx).await });
            tx
        });
        if let Some(id) = &delivery {
            self.replica.hold_delivery(id, true);
        }
        metrics::gauge!("cascade_queue_depth").increment(1.0);
        self.jobs.taken();
        if let Err(mpsc::error::SendError(queued)) = sender.send((delivery, job)) {
            // Only after a kill (tests): start a fresh actor rather than drop the job.
            tracing::error!(pr = %key, "a pull request's worker had stopped; starting another");
            let (tx, rx) = mpsc::unbounded_channel();
            let bot = self.clone();
            let k = key.clone();
            self.tasks.spawn(async move { bot.actor(k, rx).await });
            let _ = tx.send(queued);
            actors.insert(key, tx);
        }
    }

    /// The next job of an actor's queue, or `None` when the actor should end:
    /// its queue is empty (it leaves the map, so memory does not grow with
    /// every pull request ever seen) or closed.
    fn next_job(&self, key: &WorkKey, rx: &mut mpsc::UnboundedReceiver<Queued>) -> Option<Queued> {
        loop {
            match rx.try_recv() {
                Ok(queued) => return Some(queued),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {
                    let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
                    if rx.is_empty() {
                        actors.remove(key);
                        return None;
                    }
                }
            }
        }
    }

    /// One pull request's worker: jobs run one at a time, in order, each in
    /// its own task (a panic fails the job, not the worker).
    async fn actor(self: Arc<Self>, key: WorkKey, mut rx: mpsc::UnboundedReceiver<Queued>) {
        while let Some((delivery, job)) = self.next_job(&key, &mut rx) {
            metrics::gauge!("cascade_queue_depth").decrement(1.0);
            // Who pushed is recorded even for a push whose plan is dropped below: their
            // approval must never count. Not recorded (the database is away), the
            // delivery is left to be handled again once its claim runs out.
            if let Err(e) = self.record_pusher(&key, &job).await {
                tracing::error!(pr = %key, error = %format!("{e:#}"), "cannot record who pushed; the delivery will be handled again");
                if let Some(d) = &delivery {
                    self.replica.hold_delivery(d, false);
                    self.jobs
                        .finished(Some(&key), Some(d), JobOutcome::Deferred);
                    continue;
                }
            }
            // A later push makes an earlier queued plan pointless.
            if job.is_new_head() && !rx.is_empty() {
                if let Some(d) = &delivery {
                    let _ = self
                        .store
                        .set_delivery_status(d, DeliveryStatus::Processed)
                        .await;
                    self.replica.hold_delivery(d, false);
                }
                self.jobs
                    .finished(Some(&key), delivery.as_ref(), JobOutcome::Superseded);
                continue;
            }
            if let Some(d) = &delivery {
                // Counted before the work: a process that dies in it still counts.
                if let Err(e) = self.store.start_delivery_attempt(d).await {
                    tracing::error!(pr = %key, error = %format!("{e:#}"), "cannot count a delivery attempt");
                }
            }
            let span = tracing::info_span!("pr", pr = %key);
            let at = job.forge();
            // One job of a pull request at a time, across every replica.
            if self.take_lease(&key).await.is_none() {
                return;
            }
            let mut running = tokio::spawn({
                let (bot, key) = (self.clone(), key.clone());
                async move {
                    bot.recover_stale_apply(&key).await?;
                    bot.run_job(&key, job).await
                }
                .instrument(span)
            });
            let result = tokio::select! {
                r = &mut running => r,
                _ = self.kill.cancelled() => {
                    running.abort();
                    return;
                }
            };
            self.release_lease(&key).await;
            let status = match result {
                Ok(Ok(())) => DeliveryStatus::Processed,
                Ok(Err(e)) => {
                    tracing::error!(pr = %key, error = %format!("{e:#}"), "internal error");
                    self.internal_error(&key, at).await;
                    DeliveryStatus::Failed
                }
                Err(e) => {
                    // A panic (the task is never aborted while the actor waits for it).
                    tracing::error!(pr = %key, error = %e, "a job panicked");
                    self.internal_error(&key, at).await;
                    DeliveryStatus::Failed
                }
            };
            if let Some(d) = &delivery {
                // Not recorded (the database is away): its claim runs out and
                // it is processed again, here or by another replica.
                let _ = self.store.set_delivery_status(d, status).await;
                self.replica.hold_delivery(d, false);
            }
            let outcome = match status {
                DeliveryStatus::Processed => JobOutcome::Processed,
                _ => JobOutcome::Failed,
            };
            self.jobs.finished(Some(&key), delivery.as_ref(), outcome);
        }
    }

    /// Stores who pushed the head `job` plans, when it is a push.
    async fn record_pusher(&self, key: &WorkKey, job: &PrJob) -> anyhow::Result<()> {
        let PrJob::Update(update) = job else {
            return Ok(());
        };
        let Some(actor) = &update.pusher else {
            return Ok(());
        };
        let pusher = crate::store::Pusher {
            login: actor.login.clone(),
            user_id: actor.id,
            head_sha: update.head_sha.to_string(),
        };
        self.store
            .add_pusher(&key.repo().stored(), key.number(), &pusher)
            .await
    }

    /// Says on the pull request that its job failed. A drift key has no conversation
    /// of its own (number 0 is no issue): its errors are only logged.
    async fn internal_error(&self, key: &WorkKey, at: ForgeRef) {
        match key {
            WorkKey::PullRequest { .. } => {
                let _ = publish::internal_error(self, key, at).await;
            }
            WorkKey::Drift { .. } => {}
        }
    }

    async fn run_job(self: &Arc<Self>, key: &WorkKey, job: PrJob) -> anyhow::Result<()> {
        if !self.owners.allows(&key.repo().stored()) && owners::refused(self, key, &job).await? {
            return Ok(());
        }
        match job {
            PrJob::Update(pr) if pr.is_partial() => {
                let ctx = ctx::PrCtx::read(self, key, pr.forge).await?;
                if !ctx.pr.open {
                    return Ok(());
                }
                self.plan_superseded_by_pushes(&ctx, None).await
            }
            PrJob::Update(pr) => {
                let ctx = ctx::PrCtx::open(self, key, pr).await?;
                self.plan_superseded_by_pushes(&ctx, None).await
            }
            PrJob::Replan { forge } => {
                let ctx = ctx::PrCtx::read(self, key, forge).await?;
                if !ctx.pr.open {
                    return self
                        .store
                        .set_waiting(&key.repo().stored(), key.number(), &[])
                        .await;
                }
                // Everything it affects, as it planned before (drafts and autoplan
                // decided that already).
                self.plan_superseded_by_pushes(&ctx, Some(&[])).await
            }
            PrJob::Closed(pr) => plan::close_pull_request(self, key, &pr).await,
            PrJob::Merged(pr) => merged::merged_job(self, key, pr).await,
            PrJob::Reviewed { forge } => on_merge::recheck(self, key, forge).await,
            PrJob::MergeGroup(group) => merge_group::merge_group_job(self, key, group).await,
            PrJob::Comment(comment) => commands::handle_comment(self, key, &comment).await,
            PrJob::Drift { forge, claimed } => drift::drift_job(self, key, forge, claimed).await,
            PrJob::DriftComment { issue, comment } => {
                drift::drift_comment(self, key, issue, &comment).await
            }
        }
    }

    /// The cancel token of the plan `key` runs here now, if any.
    fn planning_token(&self, key: &WorkKey) -> Option<CancellationToken> {
        self.planning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Plans `pr`; a new push cancels it (see `send`).
    async fn plan_superseded_by_pushes(
        &self,
        ctx: &ctx::PrCtx,
        only: Option<&[crate::command::UnitGlob]>,
    ) -> anyhow::Result<()> {
        let key = &ctx.key;
        metrics::counter!("cascade_runs_total", "kind" => "plan").increment(1);
        let cancel = CancellationToken::new();
        self.planning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), cancel.clone());
        // What a push plans (everything affected) is never refused.
        let result = plan::plan_pull_request(ctx, only, cancel).await.map(|_| ());
        self.planning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        result
    }

    /// A delivery whose attempts are used up: marked failed first (so the
    /// pull request is told at most once, whatever happens next), then the
    /// pull request it concerns is told it was dropped.
    async fn give_up(
        self: &Arc<Self>,
        delivery: &crate::store::DeliveryRecord,
    ) -> anyhow::Result<()> {
        tracing::error!(
            delivery = %delivery.id,
            attempts = MAX_DELIVERY_ATTEMPTS,
            "giving up a delivery: the server stopped every time it handled it"
        );
        self.store
            .set_delivery_status(&delivery.id, DeliveryStatus::Failed)
            .await?;
        let Ok(event) = crate::event::parse_event(&delivery.event, &delivery.body) else {
            return Ok(());
        };
        if let jobs::Routed::Pr(key, job) = jobs::route(event) {
            self.jobs.taken();
            let bot = self.clone();
            let id = delivery.id.clone();
            // Not awaited: start-up must not wait for GitHub.
            self.tasks.spawn(async move {
                if let Err(e) = publish::delivery_dropped(&bot, &key, job.forge()).await {
                    tracing::error!(pr = %key, error = %format!("{e:#}"), "cannot say a delivery was dropped");
                }
                bot.jobs.finished(Some(&key), Some(&id), JobOutcome::Failed);
            });
        }
        Ok(())
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

    /// Discoveries running now (a gauge too: `cascade_discoveries_running`),
    /// counting any still evaluating past their deadline.
    pub fn discoveries_running(&self) -> usize {
        self.discovery.running()
    }

    /// Stops everything now, without draining.
    pub fn abort(&self) {
        self.kill.cancel();
    }
}
