//! The part of the store only the bot needs, on top of [`RunStore`]:
//! deliveries, installations, pull request state, unit locks and who waits
//! for them, comment parts, pushers, delivery claims and pull request leases
//! between replicas, and drift schedules. Owns the trait only; the SQL lives
//! in the backends. Never decides anything (whose approval counts, when a
//! replica is dead): the callers pass the facts and the times.

use super::{
    DeliveryRecord, DeliveryStatus, DriftRecord, Lock, PullRequestRecord, Pusher, ReplicaId,
    RunStore,
};
use super::{PlanKey, PolicyApproval};
use crate::event::DeliveryId;
use crate::plan::PlanId;
use crate::unit::UnitPath;
use std::future::Future;

/// The storage seam of the bot's records.
pub trait BotStore: RunStore {
    /// True when this store cannot be shared by several servers (SQLite): this
    /// server is then the only one, and whatever a dead process left behind is
    /// its own to take up at start.
    fn single_replica(&self) -> bool;

    /// Stores a verified delivery; false when its id was already stored (a redelivery).
    fn insert_delivery(
        &self,
        delivery: &DeliveryRecord,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;

    /// Records where a delivery stands. Once it is no longer `Received`, its
    /// body is dropped (only the id is needed, to refuse redeliveries).
    fn set_delivery_status(
        &self,
        id: &DeliveryId,
        status: DeliveryStatus,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Deliveries received but not yet processed, oldest first (to resume after a restart).
    fn pending_deliveries(
        &self,
    ) -> impl Future<Output = anyhow::Result<Vec<DeliveryRecord>>> + Send;

    /// How many deliveries wait to be processed (cheap: no bodies are read).
    fn pending_delivery_count(&self) -> impl Future<Output = anyhow::Result<u64>> + Send;

    /// Counts one more attempt at processing a delivery, before the work starts
    /// (so a process that dies during it still counts), and returns the count.
    fn start_delivery_attempt(
        &self,
        id: &DeliveryId,
    ) -> impl Future<Output = anyhow::Result<u32>> + Send;

    /// How many attempts at processing a delivery were started (0 if none or unknown).
    fn delivery_attempts(
        &self,
        id: &DeliveryId,
    ) -> impl Future<Output = anyhow::Result<u32>> + Send;

    fn upsert_installation(
        &self,
        id: u64,
        account: &str,
        active: bool,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Adds and removes repositories (`owner/name`) of an installation.
    fn change_installation_repos(
        &self,
        id: u64,
        added: &[String],
        removed: &[String],
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    fn installation_repos(
        &self,
        id: u64,
    ) -> impl Future<Output = anyhow::Result<Vec<String>>> + Send;

    fn save_pull_request(
        &self,
        pr: &PullRequestRecord,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    fn pull_request(
        &self,
        repo: &str,
        number: u64,
    ) -> impl Future<Output = anyhow::Result<Option<PullRequestRecord>>> + Send;

    /// Pull requests whose work was under way (discovering, planning, applying).
    fn unfinished_pull_requests(
        &self,
    ) -> impl Future<Output = anyhow::Result<Vec<PullRequestRecord>>> + Send;

    /// Takes every free unit for `pr` in one transaction and returns the units
    /// other pull requests hold (not taken). Units `pr` already holds stay its own.
    fn take_locks(
        &self,
        repo: &str,
        pr: u64,
        units: &[UnitPath],
    ) -> impl Future<Output = anyhow::Result<Vec<Lock>>> + Send;

    /// Releases every lock `pr` holds; returns how many.
    fn release_locks(
        &self,
        repo: &str,
        pr: u64,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;

    fn locks(&self, repo: &str) -> impl Future<Output = anyhow::Result<Vec<Lock>>> + Send;

    /// Records that `pr` waits for the locks of `holders` (replacing what it waited for
    /// before; none: it waits for nothing).
    fn set_waiting(
        &self,
        repo: &str,
        pr: u64,
        holders: &[u64],
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// The pull requests waiting for `holder`'s locks.
    fn waiting_for(
        &self,
        repo: &str,
        holder: u64,
    ) -> impl Future<Output = anyhow::Result<Vec<u64>>> + Send;

    /// Pull requests (`repo`, number) waiting for a holder that holds no lock any more:
    /// the ones to plan again (after a restart, too).
    fn released_waiters(&self) -> impl Future<Output = anyhow::Result<Vec<(String, u64)>>> + Send;

    /// The ids of the plan comment's parts 2, 3, … in order.
    fn comment_parts(
        &self,
        repo: &str,
        number: u64,
    ) -> impl Future<Output = anyhow::Result<Vec<u64>>> + Send;

    /// Replaces the ids of the plan comment's parts 2, 3, ….
    fn set_comment_parts(
        &self,
        repo: &str,
        number: u64,
        ids: &[u64],
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Records that `pusher` pushed to pull request `number`; recording the same login
    /// again changes nothing.
    fn add_pusher(
        &self,
        repo: &str,
        number: u64,
        pusher: &Pusher,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Everyone recorded as having pushed to pull request `number`, by login.
    fn pushers(
        &self,
        repo: &str,
        number: u64,
    ) -> impl Future<Output = anyhow::Result<Vec<Pusher>>> + Send;

    /// Records an owner's approval of a policy set's failures for plan `plan_id` of
    /// `key`; the same set approved again by the same user keeps the first record.
    fn approve_policies(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
        approval: &PolicyApproval,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Every policy approval recorded for plan `plan_id` of `key`, by set then user.
    fn policy_approvals(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
    ) -> impl Future<Output = anyhow::Result<Vec<PolicyApproval>>> + Send;

    /// Claims, for `owner` until `until`, at most `limit` deliveries still to
    /// process whose claim ran out before `now` (or that nobody claimed), oldest
    /// first. Replicas claiming at once get disjoint sets. `now = i64::MAX`
    /// takes every one (a lone server's start-up: nobody else holds them).
    fn claim_deliveries(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> impl Future<Output = anyhow::Result<Vec<DeliveryRecord>>> + Send;

    /// Extends to `until` `owner`'s claims on the deliveries `ids` still to
    /// process (the ones it has in hand: a delivery it holds but no longer
    /// processes, say its result could not be recorded, runs out and is
    /// processed again). Answers how many were extended.
    fn renew_deliveries(
        &self,
        owner: &ReplicaId,
        ids: &[DeliveryId],
        until: i64,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;

    /// Takes the lease on a pull request's jobs for `owner` until `until`: true
    /// when it was free, ran out before `now`, or was `owner`'s already (its
    /// supersede mark is cleared). Two takers at once: one wins.
    fn take_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        now: i64,
        until: i64,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;

    /// Extends `owner`'s lease to `until`: `None` when it is no longer
    /// `owner`'s, else whether another replica marked it superseded.
    fn renew_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        until: i64,
    ) -> impl Future<Output = anyhow::Result<Option<bool>>> + Send;

    /// Gives `owner`'s lease back (nothing when someone else holds it now).
    fn release_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Tells the replica holding the lease (when it is not `owner`) that a
    /// newer head arrived; true when another replica holds it.
    fn supersede_pr(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;

    /// Adds a drift schedule, due at `now`, for every repository the store knows
    /// (an active installation's, or one a pull request came from) without one;
    /// answers how many were added.
    fn seed_drift(&self, now: i64) -> impl Future<Output = anyhow::Result<u64>> + Send;

    /// Claims, for `owner` until `until`, at most `limit` schedules due at `now`
    /// that nobody holds (or whose holder's claim ran out), soonest first.
    /// Replicas claiming at once get disjoint sets.
    fn claim_due_drift(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> impl Future<Output = anyhow::Result<Vec<DriftRecord>>> + Send;

    /// Extends `owner`'s claims on the schedules of `repos` to `until`.
    fn renew_drift(
        &self,
        owner: &ReplicaId,
        repos: &[String],
        until: i64,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;

    /// Gives `owner`'s claim on `repo`'s schedule back, due next at `next_at`;
    /// false when it was not `owner`'s any more.
    fn release_drift(
        &self,
        repo: &str,
        owner: &ReplicaId,
        next_at: i64,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;

    /// Records a finished drift run of `repo` (the schedule is made if missing):
    /// when, the drift issue (kept when `None`), how many units drifted.
    fn record_drift_run(
        &self,
        repo: &str,
        forge_id: u64,
        at: i64,
        issue_number: Option<u64>,
        drifted: u64,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    fn drift_schedule(
        &self,
        repo: &str,
    ) -> impl Future<Output = anyhow::Result<Option<DriftRecord>>> + Send;
}
