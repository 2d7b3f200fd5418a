//! What cascade must not lose: plans a reviewer may approve, runs, and each
//! unit's result, so a run killed half-way resumes without planning or
//! applying a finished unit again.
//!
//! The store is one of the three seams (with `Executor` and `crate::clock`),
//! in two traits: [`RunStore`] (runs, unit results, plans, apply claims: what
//! the engine needs) and [`BotStore`] on top of it (the bot's records). Two
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
mod bot_store;
mod claims;
mod comment_parts;
mod drift;
mod leases;
mod migrations;
mod plan_key;
mod policy_approvals;
mod policy_results;
mod postgres;
mod pushers;
mod replica_id;
mod rows;
mod run_store;
mod sqlite;
mod steps;
mod waiting;

pub use any::{AnyStore, open};
pub use bot::{DeliveryRecord, DeliveryStatus, Lock, PrState, PullRequestRecord};
pub use bot_store::BotStore;
pub use claims::ApplyClaim;
pub use drift::DriftRecord;
pub use plan_key::{DRIFT_NUMBER, PlanKey};
pub use policy_approvals::PolicyApproval;
pub use policy_results::{PolicyMessage, PolicyResult};
pub use postgres::PostgresStore;
pub use pushers::Pusher;
pub use replica_id::ReplicaId;
pub use run_store::RunStore;
pub use sqlite::SqliteStore;
pub use steps::{StepRecord, StepStatus};

use crate::plan::render::RenderedPlan;
use crate::plan::{Fingerprint, PlanId, PlanSummary};
use crate::unit::UnitPath;
use serde::{Deserialize, Serialize};

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
    pub repo: PlanKey,
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
    /// Its workflow's `run` steps so far, in the order they ran.
    pub steps: Vec<StepRecord>,
    /// What each policy set found in its plan (none when no set applies or it did not plan).
    pub policies: Vec<PolicyResult>,
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
    /// Its workflow's plan-phase steps (`pre_plan`, `post_plan`) and how they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRecord>,
    /// What each policy set found in its plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicyResult>,
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
    pub repo: PlanKey,
    pub head: String,
    pub base: String,
    pub status: PlanStatus,
    pub run_id: String,
    pub units: Vec<PlannedUnit>,
    pub created_at: i64,
    /// What the policy sets that ask for the whole plan (`input: plan`) found in it, one
    /// result per set (`plans.policies`, migration 0013); each unit's own sets' findings
    /// are in its `PlannedUnit::policies`.
    pub policies: Vec<PolicyResult>,
}

impl PlanRecord {
    /// A current plan `id` of pull request `acme/infra#1` at head `h` against base `b`,
    /// holding `units`: the unit tests' plan.
    #[cfg(test)]
    pub fn sample(id: PlanId, units: Vec<PlannedUnit>) -> PlanRecord {
        PlanRecord {
            id,
            repo: PlanKey::from_stored("acme/infra#1"),
            head: "h".into(),
            base: "b".into(),
            status: PlanStatus::Current,
            run_id: "r".into(),
            units,
            created_at: 0,
            policies: Vec::new(),
        }
    }

    /// Every policy finding of the plan, in one place: the whole-plan sets' first (unit
    /// `None`), then each unit's (`Some(path)`) in plan order. What decides whether the
    /// plan is blocked reads this, so no set's result is left out.
    pub fn policy_results(&self) -> impl Iterator<Item = (Option<&UnitPath>, &PolicyResult)> {
        let whole = self.policies.iter().map(|r| (None, r));
        let units = self
            .units
            .iter()
            .flat_map(|u| u.policies.iter().map(move |r| (Some(&u.path), r)));
        whole.chain(units)
    }
}
