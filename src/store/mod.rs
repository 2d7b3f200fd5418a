//! What cascade must not lose: plans a reviewer may approve, runs, and each
//! unit's result, so a run killed half-way resumes without planning or
//! applying a finished unit again.
//!
//! `Store` is one of the three seams (with `Executor` and `Clock`), with two
//! implementations: SQLite (one server) and PostgreSQL (replicas sharing one
//! database). [`open`] picks one from the database URL and answers an
//! [`AnyStore`], the one type the bot, the engine and the CLI hold. Both
//! backends give the same answers and the same atomicity: the contract tests
//! (`tests/it/store_contract.rs`) run every store test against each. Records
//! hold plan summaries and each unit's rendered plan (the masked, redacted
//! text the pull request shows anyway), never plan JSON. Apply claims make
//! one plan id applied by at most one process at a time.

mod any;
mod bot;
mod claims;
mod comment_parts;
mod drift;
mod leases;
mod migrations;
mod postgres;
mod pushers;
mod rows;
mod sqlite;
mod waiting;

pub use any::{AnyStore, open};
pub use bot::{DeliveryRecord, DeliveryStatus, Lock, PrState, PullRequestRecord};
pub use claims::ApplyClaim;
pub use drift::DriftRecord;
pub use postgres::PostgresStore;
pub use pushers::Pusher;
pub use sqlite::SqliteStore;

use crate::plan::render::RenderedPlan;
use crate::plan::{Fingerprint, PlanId, PlanSummary};
use crate::unit::UnitPath;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// Plan or apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunKind {
    Plan,
    Apply,
}

impl RunKind {
    /// The text `runs.kind` holds.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A run: one walk over a plan's units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    pub id: String,
    pub repo: String,
    pub kind: RunKind,
    /// What a later run must match to resume this one.
    pub key: String,
    pub dir: String,
    pub finished: bool,
    pub created_at: i64,
}

/// Where one unit of a run stands.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum UnitStatus {
    Planning,
    Planned,
    Failed,
    Skipped,
    Applying,
    Applied,
    /// Re-planned before apply and still empty: nothing to do.
    Unchanged,
    /// Re-planned before apply and different from what was approved.
    ChangedSinceApproval,
    Cancelled,
}

impl UnitStatus {
    /// The text `unit_results.status` holds (and the JSON of a plan's units).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Read from `unit_results.status`.
    pub fn parse(text: &str) -> Option<UnitStatus> {
        text.parse().ok()
    }
}

/// One unit's result in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitRecord {
    pub unit: UnitPath,
    pub status: UnitStatus,
    /// An error excerpt, a skip reason, or empty.
    pub detail: String,
    pub summary: Option<PlanSummary>,
    /// The unit's plan as the comment shows it; `None` before it planned, or when it
    /// could not be drawn (the comment then lists the resources).
    pub rendered: Option<RenderedPlan>,
    /// How many times its plan or apply was tried again after a transient failure.
    pub retried: u32,
    /// While it waits to be tried again: when (seconds since the epoch). A run
    /// resumed after a restart waits out the rest and goes on counting.
    pub retry_at: Option<i64>,
}

/// One unit of an approvable plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedUnit {
    pub path: UnitPath,
    /// 1-based wave (destroys come after every wave of changes).
    pub wave: usize,
    /// Planned as a destroy: the change deletes this unit.
    pub destroy: bool,
    /// Units of this plan that must be applied first.
    pub deps: Vec<UnitPath>,
    /// The tool that planned it, and that will apply it.
    pub tool: crate::unit::Tool,
    /// Extra `init` arguments used at plan time (a deleted unit's local state).
    #[serde(default)]
    pub init_args: Vec<String>,
    /// The stack that generates the unit (relative like `path`): `terragrunt
    /// stack generate` runs there before the unit is planned again.
    #[serde(default)]
    pub stack: Option<UnitPath>,
    pub status: UnitStatus,
    pub detail: String,
    pub summary: Option<PlanSummary>,
    /// The plan as the comment shows it (masked text, never the JSON). Plans stored
    /// before cascade kept it have none; the comment then lists the resources.
    #[serde(default)]
    pub rendered: Option<RenderedPlan>,
    /// How many times its plan was tried again after a transient failure (0 for plans
    /// stored before cascade retried). Kept in the plan record's JSON, so no migration.
    #[serde(default)]
    pub retried: u32,
}

impl PlannedUnit {
    pub fn fingerprint(&self) -> Option<&Fingerprint> {
        self.summary.as_ref().map(|s| &s.fingerprint)
    }
}

/// Whether a plan can still be applied.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum PlanStatus {
    /// The latest plan for its repository (or pull request).
    Current,
    /// A newer plan replaced it.
    Superseded,
    /// Applied in full.
    Consumed,
}

impl PlanStatus {
    /// The text `plans.status` holds.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Read from `plans.status`; text no version wrote counts as `Current`, as it always has.
    fn parse(text: &str) -> PlanStatus {
        text.parse().unwrap_or(PlanStatus::Current)
    }
}

/// A plan a reviewer approves with `/apply <id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRecord {
    pub id: PlanId,
    pub repo: String,
    pub head: String,
    pub base: String,
    pub status: PlanStatus,
    pub run_id: String,
    pub units: Vec<PlannedUnit>,
    pub created_at: i64,
}

/// The storage seam.
pub trait Store: Send + Sync + 'static {
    fn insert_run(&self, run: &RunRecord) -> impl Future<Output = anyhow::Result<()>> + Send;
    fn finish_run(&self, id: &str) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// The newest unfinished run of this kind and key, to resume.
    fn unfinished_run(
        &self,
        repo: &str,
        kind: RunKind,
        key: &str,
    ) -> impl Future<Output = anyhow::Result<Option<RunRecord>>> + Send;
    /// The newest run of this kind and key, finished or not: an apply of the
    /// same plan continues where the last attempt stopped.
    fn latest_run(
        &self,
        repo: &str,
        kind: RunKind,
        key: &str,
    ) -> impl Future<Output = anyhow::Result<Option<RunRecord>>> + Send;
    /// Marks a run as running again.
    fn reopen_run(&self, id: &str) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Records (or replaces) a unit's result in a run.
    fn record_unit(
        &self,
        run_id: &str,
        unit: &UnitRecord,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;
    fn unit_records(
        &self,
        run_id: &str,
    ) -> impl Future<Output = anyhow::Result<Vec<UnitRecord>>> + Send;
    /// Saves a plan as the repository's current one; the previous current plan is superseded.
    fn save_plan(&self, plan: &PlanRecord) -> impl Future<Output = anyhow::Result<()>> + Send;
    fn plan(
        &self,
        repo: &str,
        id: &PlanId,
    ) -> impl Future<Output = anyhow::Result<Option<PlanRecord>>> + Send;
    fn current_plan(
        &self,
        repo: &str,
    ) -> impl Future<Output = anyhow::Result<Option<PlanRecord>>> + Send;
    fn set_plan_status(
        &self,
        repo: &str,
        id: &PlanId,
        status: PlanStatus,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Stores a verified delivery; false when its id was already stored (a redelivery).
    fn insert_delivery(
        &self,
        delivery: &DeliveryRecord,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;
    /// Records where a delivery stands. Once it is no longer `Received`, its
    /// body is dropped (only the id is needed, to refuse redeliveries).
    fn set_delivery_status(
        &self,
        id: &str,
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
    fn start_delivery_attempt(&self, id: &str) -> impl Future<Output = anyhow::Result<u32>> + Send;
    /// How many attempts at processing a delivery were started (0 if none or unknown).
    fn delivery_attempts(&self, id: &str) -> impl Future<Output = anyhow::Result<u32>> + Send;
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

    /// Takes the claim to apply `claim.plan_id` when nobody holds it; answers
    /// the holder's claim otherwise (nothing is changed then).
    fn insert_apply_claim(
        &self,
        claim: &ApplyClaim,
    ) -> impl Future<Output = anyhow::Result<Option<ApplyClaim>>> + Send;
    /// Replaces a dead owner's claim `old` by `new`, only if `old` is still
    /// exactly what is stored (two processes taking over at once: one wins).
    fn take_over_apply_claim(
        &self,
        old: &ApplyClaim,
        new: &ApplyClaim,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;
    /// Refreshes the heartbeat of `owner`'s claim; false when it is no longer `owner`'s.
    fn heartbeat_apply_claim(
        &self,
        repo: &str,
        plan_id: &PlanId,
        owner: &str,
        now: i64,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;
    /// Deletes `owner`'s claim (nothing when someone else holds it now).
    fn release_apply_claim(
        &self,
        repo: &str,
        plan_id: &PlanId,
        owner: &str,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;
    fn apply_claim(
        &self,
        repo: &str,
        plan_id: &PlanId,
    ) -> impl Future<Output = anyhow::Result<Option<ApplyClaim>>> + Send;

    /// Claims, for `owner` until `until`, at most `limit` deliveries still to
    /// process whose claim ran out before `now` (or that nobody claimed), oldest
    /// first. Replicas claiming at once get disjoint sets. `now = i64::MAX`
    /// takes every one (a lone server's start-up: nobody else holds them).
    fn claim_deliveries(
        &self,
        owner: &str,
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
        owner: &str,
        ids: &[String],
        until: i64,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;
    /// Takes the lease on a pull request's jobs for `owner` until `until`: true
    /// when it was free, ran out before `now`, or was `owner`'s already (its
    /// supersede mark is cleared). Two takers at once: one wins.
    fn take_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &str,
        now: i64,
        until: i64,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;
    /// Extends `owner`'s lease to `until`: `None` when it is no longer
    /// `owner`'s, else whether another replica marked it superseded.
    fn renew_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &str,
        until: i64,
    ) -> impl Future<Output = anyhow::Result<Option<bool>>> + Send;
    /// Gives `owner`'s lease back (nothing when someone else holds it now).
    fn release_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &str,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Tells the replica holding the lease (when it is not `owner`) that a
    /// newer head arrived; true when another replica holds it.
    fn supersede_pr(
        &self,
        repo: &str,
        number: u64,
        owner: &str,
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
        owner: &str,
        now: i64,
        until: i64,
        limit: u32,
    ) -> impl Future<Output = anyhow::Result<Vec<DriftRecord>>> + Send;
    /// Extends `owner`'s claims on the schedules of `repos` to `until`.
    fn renew_drift(
        &self,
        owner: &str,
        repos: &[String],
        until: i64,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;
    /// Gives `owner`'s claim on `repo`'s schedule back, due next at `next_at`;
    /// false when it was not `owner`'s any more.
    fn release_drift(
        &self,
        repo: &str,
        owner: &str,
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

/// The time seam: seconds since the epoch.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> i64;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}
