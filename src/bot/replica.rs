//! Replicas: several `cascade serve` on one database, none doing one piece of
//! work twice. Each process is a replica with an id of its own. It claims
//! the deliveries it stores (in the same insert, so acknowledging costs
//! nothing more) and runs each pull request job under the pull request's
//! lease. A heartbeat, every fifth of the lease, pushes both forward, passes
//! on a newer head another replica received (superseding the plan running
//! here), and sweeps: deliveries whose claim ran out belonged to a replica
//! that died, and are taken and processed here, resuming its runs from the
//! store. With SQLite there is one replica and the same code runs.

use super::{Bot, WorkKey};
use crate::engine::ApplyRecovery;
use crate::event::DeliveryId;
use crate::store::{BotStore, DeliveryRecord, DeliveryStatus, PrState, ReplicaId};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Deliveries one sweep takes at most: the rest are left to the next sweep or
/// to other replicas, so one replica does not take all of a dead one's work.
const SWEEP_LIMIT: u32 = 16;

/// This process as a replica.
pub(crate) struct Replica {
    /// `host/pid/random`: unique per process, readable in the database.
    pub id: ReplicaId,
    pub lease: Duration,
    /// Pull requests whose job runs here under their lease.
    held: Mutex<HashSet<WorkKey>>,
    /// Deliveries queued or processed here, whose claims the heartbeat renews.
    in_hand: Mutex<HashSet<DeliveryId>>,
    /// Repositories whose drift schedule fired here and whose run is queued or running.
    drift_in_hand: Mutex<HashSet<String>>,
}

impl Replica {
    pub fn new(lease: Duration) -> Replica {
        let random = uuid::Uuid::new_v4().simple().to_string();
        Replica {
            id: ReplicaId::new(
                &crate::engine::this_host(),
                std::process::id(),
                &random[..8],
            ),
            lease,
            held: Mutex::new(HashSet::new()),
            in_hand: Mutex::new(HashSet::new()),
            drift_in_hand: Mutex::new(HashSet::new()),
        }
    }

    /// Notes that delivery `id` is in hand here (`true`) or done with (`false`).
    pub fn hold_delivery(&self, id: &DeliveryId, on: bool) {
        let mut in_hand = self.in_hand.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            in_hand.insert(id.clone());
        } else {
            in_hand.remove(id);
        }
    }

    /// Notes that `repo`'s drift schedule is in hand here (`true`) or given back.
    pub fn hold_drift(&self, repo: &str, on: bool) {
        let mut in_hand = self.drift_in_hand.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            in_hand.insert(repo.to_string());
        } else {
            in_hand.remove(repo);
        }
    }

    fn drift_in_hand(&self) -> Vec<String> {
        let in_hand = self.drift_in_hand.lock().unwrap_or_else(|p| p.into_inner());
        in_hand.iter().cloned().collect()
    }

    fn deliveries_in_hand(&self) -> Vec<DeliveryId> {
        let in_hand = self.in_hand.lock().unwrap_or_else(|p| p.into_inner());
        in_hand.iter().cloned().collect()
    }

    fn heartbeat_every(&self) -> Duration {
        self.lease / 5
    }

    fn held(&self) -> Vec<WorkKey> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter().cloned().collect()
    }

    fn set_held(&self, key: &WorkKey, on: bool) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            held.insert(key.clone());
        } else {
            held.remove(key);
        }
    }
}

impl Bot {
    /// This replica's id, as it claims deliveries and leases.
    pub fn replica_id(&self) -> &ReplicaId {
        &self.replica.id
    }

    /// Until when a claim or lease taken now holds without a heartbeat.
    pub fn claim_until(&self) -> i64 {
        self.now() + self.replica.lease.as_secs() as i64
    }

    /// Waits until this replica holds `key`'s lease. While the database does not
    /// answer, it keeps waiting: no job starts without the lease. `None` when
    /// the process is killed meanwhile.
    pub(super) async fn take_lease(&self, key: &WorkKey) -> Option<()> {
        let mut waited = false;
        loop {
            let now = self.now();
            match self
                .store
                .take_pr_lease(
                    &key.repo().stored(),
                    key.number(),
                    &self.replica.id,
                    now,
                    self.claim_until(),
                )
                .await
            {
                Ok(true) => {
                    self.replica.set_held(key, true);
                    if waited {
                        tracing::info!(pr = %key, "another replica finished its job here; running the next one");
                    }
                    return Some(());
                }
                Ok(false) => waited = true,
                Err(e) => {
                    tracing::warn!(pr = %key, error = %format!("{e:#}"), "cannot take the pull request's lease; the database may be unreachable");
                }
            }
            let pause = (self.replica.heartbeat_every() / 4)
                .clamp(Duration::from_millis(100), Duration::from_secs(1));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.kill.cancelled() => return None,
            }
        }
    }

    pub(super) async fn release_lease(&self, key: &WorkKey) {
        self.replica.set_held(key, false);
        if let Err(e) = self
            .store
            .release_pr_lease(&key.repo().stored(), key.number(), &self.replica.id)
            .await
        {
            // It runs out by itself: another replica waits at most the lease.
            tracing::warn!(pr = %key, error = %format!("{e:#}"), "cannot release a pull request's lease");
        }
    }

    /// Tells a replica running `key`'s job elsewhere that a newer head arrived here.
    pub(super) fn supersede_elsewhere(self: &Arc<Self>, key: &WorkKey) {
        let bot = self.clone();
        let key = key.clone();
        tokio::spawn(async move {
            if let Err(e) = bot
                .store
                .supersede_pr(&key.repo().stored(), key.number(), &bot.replica.id)
                .await
            {
                tracing::warn!(pr = %key, error = %format!("{e:#}"), "cannot tell other replicas about a new head");
            }
        });
    }

    /// A pull request left `applying` while nobody runs its jobs (this replica
    /// holds its lease): whoever applied died. Records what its applies did and
    /// puts it back, so the job about to run (the `/apply` processed again)
    /// resumes the run instead of answering that an apply is running.
    pub(super) async fn recover_stale_apply(&self, key: &WorkKey) -> anyhow::Result<()> {
        let Some(mut pr) = self
            .store
            .pull_request(&key.repo().stored(), key.number())
            .await?
        else {
            return Ok(());
        };
        if pr.state != PrState::Applying {
            return Ok(());
        }
        if let Some(id) = &pr.plan_id {
            // The dead replica's apply claim outlives it by up to the claim's lease
            // when it ran on another host (no pid to look at): wait that out, as
            // holding this lease means no live replica applies this pull request.
            let give_up = self.now() + crate::engine::LEASE_SECS + 10;
            let mut told = false;
            while let ApplyRecovery::Busy(holder) =
                self.engine.recover_apply(&key.plan_key(), id).await?
            {
                if self.now() > give_up {
                    tracing::warn!(pr = %key, pid = holder.pid, host = %holder.host, "the apply claim is still renewed; leaving the apply to its holder");
                    return Ok(());
                }
                if !told {
                    tracing::info!(pr = %key, host = %holder.host, "waiting for a stopped replica's apply claim to run out");
                    told = true;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        tracing::warn!(pr = %key, "an apply was interrupted (its replica died); it resumes with the next /apply");
        pr.state = PrState::Commented;
        self.store.save_pull_request(&pr).await
    }

    /// Processes deliveries claimed from the store: given up after too many
    /// attempts, else handed to their pull request like a new one.
    pub(super) async fn resume_deliveries(
        self: &Arc<Self>,
        claimed: Vec<DeliveryRecord>,
    ) -> anyhow::Result<()> {
        for delivery in claimed {
            if self.store.delivery_attempts(&delivery.id).await? >= super::MAX_DELIVERY_ATTEMPTS {
                self.give_up(&delivery).await?;
                continue;
            }
            let parsed = match delivery
                .event
                .strip_prefix(crate::event::gitlab::STORED_EVENT_PREFIX)
            {
                Some(hook) => crate::event::parse_gitlab_event(hook, &delivery.body),
                None => crate::event::parse_event(&delivery.event, &delivery.body),
            };
            match parsed {
                Ok(event) => {
                    tracing::info!(delivery = %delivery.id, "resuming a delivery left unprocessed");
                    self.enqueue(delivery.id, event);
                }
                Err(e) => {
                    tracing::error!(delivery = %delivery.id, error = %e, "a stored delivery no longer parses");
                    self.store
                        .set_delivery_status(&delivery.id, DeliveryStatus::Failed)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// The deliveries to process at start: with a single-replica store (SQLite)
    /// every one left unprocessed (this is the only server); with a shared one
    /// (PostgreSQL) only those whose claim ran out (the others are live replicas' work).
    pub(super) async fn claim_at_start(&self) -> anyhow::Result<Vec<DeliveryRecord>> {
        let now = if self.store.single_replica() {
            i64::MAX
        } else {
            self.now()
        };
        self.store
            .claim_deliveries(&self.replica.id, now, self.claim_until(), u32::MAX)
            .await
    }

    /// Runs the heartbeat until the process stops.
    pub(super) fn start_heartbeat(self: &Arc<Self>, shutdown: CancellationToken) {
        let bot = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(bot.replica.heartbeat_every()) => {}
                    _ = bot.kill.cancelled() => return,
                }
                if let Err(e) = bot.heartbeat(!shutdown.is_cancelled()).await {
                    tracing::warn!(error = %format!("{e:#}"), "replica heartbeat failed; the database may be unreachable");
                }
            }
        });
    }

    /// One heartbeat: renew what this replica holds, act on supersede marks and
    /// lost leases, and (unless shutting down) take a dead replica's deliveries.
    async fn heartbeat(self: &Arc<Self>, sweep: bool) -> anyhow::Result<()> {
        let until = self.claim_until();
        self.store
            .renew_deliveries(&self.replica.id, &self.replica.deliveries_in_hand(), until)
            .await?;
        self.store
            .renew_drift(&self.replica.id, &self.replica.drift_in_hand(), until)
            .await?;
        for key in self.replica.held() {
            let renewed = self
                .store
                .renew_pr_lease(&key.repo().stored(), key.number(), &self.replica.id, until)
                .await?;
            let why = match renewed {
                Some(false) => continue,
                Some(true) => "a newer head arrived through another replica",
                None => "this replica lost the pull request's lease (it missed its heartbeats)",
            };
            if let Some(plan) = self.planning_token(&key) {
                tracing::info!(pr = %key, "{why}: stopping the plan running here");
                plan.cancel();
            }
        }
        if sweep {
            let mut claimed = self
                .store
                .claim_deliveries(&self.replica.id, self.now(), until, SWEEP_LIMIT)
                .await?;
            // Its own, when a renewal came too late: still being processed here.
            let in_hand = self.replica.deliveries_in_hand();
            claimed.retain(|d| !in_hand.contains(&d.id));
            if !claimed.is_empty() {
                tracing::warn!(
                    count = claimed.len(),
                    "taking over deliveries of a replica that stopped"
                );
                metrics::counter!("cascade_deliveries_taken_over_total")
                    .increment(claimed.len() as u64);
            }
            self.resume_deliveries(claimed).await?;
        }
        Ok(())
    }
}
