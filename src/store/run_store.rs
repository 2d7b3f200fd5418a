//! The part of the store the engine needs: runs, each unit's result in a run,
//! approvable plans, and apply claims. Owns the trait only; the SQL lives in
//! the backends (`sqlite.rs`, `postgres.rs`) and `AnyStore` hands each call on.
//! Never names pull requests, deliveries, locks or anything else of the bot's
//! (those are [`super::BotStore`]'s), so the engine and the CLI can run plans
//! and applies against it without the bot's records.

use super::PlanKey;
use super::{ApplyClaim, PlanRecord, PlanStatus, RunKind, RunRecord, UnitRecord};
use crate::plan::PlanId;
use std::future::Future;

/// The storage seam of runs, plans and apply claims.
pub trait RunStore: Send + Sync + 'static {
    fn insert_run(&self, run: &RunRecord) -> impl Future<Output = anyhow::Result<()>> + Send;

    fn finish_run(&self, id: &str) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// The newest unfinished run of this kind and key, to resume.
    fn unfinished_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
    ) -> impl Future<Output = anyhow::Result<Option<RunRecord>>> + Send;

    /// The newest run of this kind and key, finished or not: an apply of the
    /// same plan continues where the last attempt stopped.
    fn latest_run(
        &self,
        repo: &PlanKey,
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
        repo: &PlanKey,
        id: &PlanId,
    ) -> impl Future<Output = anyhow::Result<Option<PlanRecord>>> + Send;

    fn current_plan(
        &self,
        repo: &PlanKey,
    ) -> impl Future<Output = anyhow::Result<Option<PlanRecord>>> + Send;

    fn set_plan_status(
        &self,
        repo: &PlanKey,
        id: &PlanId,
        status: PlanStatus,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

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
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
        now: i64,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;

    /// Deletes `owner`'s claim (nothing when someone else holds it now).
    fn release_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    fn apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
    ) -> impl Future<Output = anyhow::Result<Option<ApplyClaim>>> + Send;
}
