//! One store type for the bot, the engine and the CLI, whichever database the
//! URL names: `store::open` picks the backend by scheme and [`AnyStore`]
//! answers every `RunStore` and `BotStore` call by handing it to that backend. It owns no
//! records and no SQL, and never puts the URL (it may hold a password) in a
//! message.

use super::{
    ApplyClaim, BotStore, DeliveryRecord, DeliveryStatus, DriftRecord, Lock, PlanRecord,
    PlanStatus, PostgresStore, PullRequestRecord, Pusher, RunKind, RunRecord, RunStore,
    SqliteStore, UnitRecord,
};
use super::{PlanKey, PolicyApproval, ReplicaId};
use crate::event::DeliveryId;
use crate::plan::PlanId;
use crate::unit::UnitPath;
use std::path::{Path, PathBuf};

/// The store `--database-url` named: SQLite for one server, PostgreSQL for replicas.
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

/// Opens the store `url` names and brings its schema up to date:
/// `sqlite://PATH` (a file, created if missing), `postgres://…` or
/// `postgresql://…` (a database that exists), or no URL for
/// `<data_dir>/cascade.db`.
pub async fn open(url: Option<&str>, data_dir: &Path) -> anyhow::Result<AnyStore> {
    let Some(url) = url else {
        return Ok(AnyStore::Sqlite(
            SqliteStore::open(&data_dir.join("cascade.db")).await?,
        ));
    };
    if let Some(path) = url.strip_prefix("sqlite://") {
        return Ok(AnyStore::Sqlite(
            SqliteStore::open(&PathBuf::from(path)).await?,
        ));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(AnyStore::Postgres(PostgresStore::open(url).await?));
    }
    anyhow::bail!(
        "the database URL is neither sqlite:// nor postgres://: write sqlite:///path/to/cascade.db, \
         postgres://USER:PASSWORD@HOST:PORT/DATABASE, or leave --database-url out for a SQLite \
         file in the data directory"
    )
}

/// Hands one call to the backend, awaiting its answer.
macro_rules! on_backend {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::Sqlite($store) => $call.await,
            AnyStore::Postgres($store) => $call.await,
        }
    };
}

impl RunStore for AnyStore {
    async fn insert_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        on_backend!(self, s => s.insert_run(run))
    }

    async fn finish_run(&self, id: &str) -> anyhow::Result<()> {
        on_backend!(self, s => s.finish_run(id))
    }

    async fn unfinished_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
    ) -> anyhow::Result<Option<RunRecord>> {
        on_backend!(self, s => s.unfinished_run(repo, kind, key))
    }

    async fn latest_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
    ) -> anyhow::Result<Option<RunRecord>> {
        on_backend!(self, s => s.latest_run(repo, kind, key))
    }

    async fn reopen_run(&self, id: &str) -> anyhow::Result<()> {
        on_backend!(self, s => s.reopen_run(id))
    }

    async fn record_unit(&self, run_id: &str, unit: &UnitRecord) -> anyhow::Result<()> {
        on_backend!(self, s => s.record_unit(run_id, unit))
    }

    async fn unit_records(&self, run_id: &str) -> anyhow::Result<Vec<UnitRecord>> {
        on_backend!(self, s => s.unit_records(run_id))
    }

    async fn save_plan(&self, plan: &PlanRecord) -> anyhow::Result<()> {
        on_backend!(self, s => s.save_plan(plan))
    }

    async fn plan(&self, repo: &PlanKey, id: &PlanId) -> anyhow::Result<Option<PlanRecord>> {
        on_backend!(self, s => s.plan(repo, id))
    }

    async fn current_plan(&self, repo: &PlanKey) -> anyhow::Result<Option<PlanRecord>> {
        on_backend!(self, s => s.current_plan(repo))
    }

    async fn set_plan_status(
        &self,
        repo: &PlanKey,
        id: &PlanId,
        status: PlanStatus,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.set_plan_status(repo, id, status))
    }

    async fn insert_apply_claim(&self, claim: &ApplyClaim) -> anyhow::Result<Option<ApplyClaim>> {
        on_backend!(self, s => s.insert_apply_claim(claim))
    }

    async fn take_over_apply_claim(
        &self,
        old: &ApplyClaim,
        new: &ApplyClaim,
    ) -> anyhow::Result<bool> {
        on_backend!(self, s => s.take_over_apply_claim(old, new))
    }

    async fn heartbeat_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
        now: i64,
    ) -> anyhow::Result<bool> {
        on_backend!(self, s => s.heartbeat_apply_claim(repo, plan_id, owner, now))
    }

    async fn release_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.release_apply_claim(repo, plan_id, owner))
    }

    async fn apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
    ) -> anyhow::Result<Option<ApplyClaim>> {
        on_backend!(self, s => s.apply_claim(repo, plan_id))
    }
}

impl BotStore for AnyStore {
    fn single_replica(&self) -> bool {
        match self {
            AnyStore::Sqlite(s) => s.single_replica(),
            AnyStore::Postgres(s) => s.single_replica(),
        }
    }

    async fn insert_delivery(&self, delivery: &DeliveryRecord) -> anyhow::Result<bool> {
        on_backend!(self, s => s.insert_delivery(delivery))
    }

    async fn set_delivery_status(
        &self,
        id: &DeliveryId,
        status: DeliveryStatus,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.set_delivery_status(id, status))
    }

    async fn pending_deliveries(&self) -> anyhow::Result<Vec<DeliveryRecord>> {
        on_backend!(self, s => s.pending_deliveries())
    }

    async fn pending_delivery_count(&self) -> anyhow::Result<u64> {
        on_backend!(self, s => s.pending_delivery_count())
    }

    async fn start_delivery_attempt(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        on_backend!(self, s => s.start_delivery_attempt(id))
    }

    async fn delivery_attempts(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        on_backend!(self, s => s.delivery_attempts(id))
    }

    async fn upsert_installation(
        &self,
        id: u64,
        account: &str,
        active: bool,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.upsert_installation(id, account, active))
    }

    async fn change_installation_repos(
        &self,
        id: u64,
        added: &[String],
        removed: &[String],
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.change_installation_repos(id, added, removed))
    }

    async fn installation_repos(&self, id: u64) -> anyhow::Result<Vec<String>> {
        on_backend!(self, s => s.installation_repos(id))
    }

    async fn save_pull_request(&self, pr: &PullRequestRecord) -> anyhow::Result<()> {
        on_backend!(self, s => s.save_pull_request(pr))
    }

    async fn pull_request(
        &self,
        repo: &str,
        number: u64,
    ) -> anyhow::Result<Option<PullRequestRecord>> {
        on_backend!(self, s => s.pull_request(repo, number))
    }

    async fn unfinished_pull_requests(&self) -> anyhow::Result<Vec<PullRequestRecord>> {
        on_backend!(self, s => s.unfinished_pull_requests())
    }

    async fn take_locks(
        &self,
        repo: &str,
        pr: u64,
        units: &[UnitPath],
    ) -> anyhow::Result<Vec<Lock>> {
        on_backend!(self, s => s.take_locks(repo, pr, units))
    }

    async fn release_locks(&self, repo: &str, pr: u64) -> anyhow::Result<u64> {
        on_backend!(self, s => s.release_locks(repo, pr))
    }

    async fn locks(&self, repo: &str) -> anyhow::Result<Vec<Lock>> {
        on_backend!(self, s => s.locks(repo))
    }

    async fn set_waiting(&self, repo: &str, pr: u64, holders: &[u64]) -> anyhow::Result<()> {
        on_backend!(self, s => s.set_waiting(repo, pr, holders))
    }

    async fn waiting_for(&self, repo: &str, holder: u64) -> anyhow::Result<Vec<u64>> {
        on_backend!(self, s => s.waiting_for(repo, holder))
    }

    async fn released_waiters(&self) -> anyhow::Result<Vec<(String, u64)>> {
        on_backend!(self, s => s.released_waiters())
    }

    async fn comment_parts(&self, repo: &str, number: u64) -> anyhow::Result<Vec<u64>> {
        on_backend!(self, s => s.comment_parts(repo, number))
    }

    async fn set_comment_parts(&self, repo: &str, number: u64, ids: &[u64]) -> anyhow::Result<()> {
        on_backend!(self, s => s.set_comment_parts(repo, number, ids))
    }

    async fn add_pusher(&self, repo: &str, number: u64, pusher: &Pusher) -> anyhow::Result<()> {
        on_backend!(self, s => s.add_pusher(repo, number, pusher))
    }

    async fn pushers(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Pusher>> {
        on_backend!(self, s => s.pushers(repo, number))
    }

    async fn approve_policies(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
        approval: &PolicyApproval,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.approve_policies(key, plan_id, approval))
    }

    async fn policy_approvals(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
    ) -> anyhow::Result<Vec<PolicyApproval>> {
        on_backend!(self, s => s.policy_approvals(key, plan_id))
    }

    async fn claim_deliveries(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<DeliveryRecord>> {
        on_backend!(self, s => s.claim_deliveries(owner, now, until, limit))
    }

    async fn renew_deliveries(
        &self,
        owner: &ReplicaId,
        ids: &[DeliveryId],
        until: i64,
    ) -> anyhow::Result<u64> {
        on_backend!(self, s => s.renew_deliveries(owner, ids, until))
    }

    async fn take_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        now: i64,
        until: i64,
    ) -> anyhow::Result<bool> {
        on_backend!(self, s => s.take_pr_lease(repo, number, owner, now, until))
    }

    async fn renew_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        until: i64,
    ) -> anyhow::Result<Option<bool>> {
        on_backend!(self, s => s.renew_pr_lease(repo, number, owner, until))
    }

    async fn release_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.release_pr_lease(repo, number, owner))
    }

    async fn supersede_pr(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<bool> {
        on_backend!(self, s => s.supersede_pr(repo, number, owner))
    }

    async fn seed_drift(&self, now: i64) -> anyhow::Result<u64> {
        on_backend!(self, s => s.seed_drift(now))
    }

    async fn claim_due_drift(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<DriftRecord>> {
        on_backend!(self, s => s.claim_due_drift(owner, now, until, limit))
    }

    async fn renew_drift(
        &self,
        owner: &ReplicaId,
        repos: &[String],
        until: i64,
    ) -> anyhow::Result<u64> {
        on_backend!(self, s => s.renew_drift(owner, repos, until))
    }

    async fn release_drift(
        &self,
        repo: &str,
        owner: &ReplicaId,
        next_at: i64,
    ) -> anyhow::Result<bool> {
        on_backend!(self, s => s.release_drift(repo, owner, next_at))
    }

    async fn record_drift_run(
        &self,
        repo: &str,
        forge_id: u64,
        at: i64,
        issue_number: Option<u64>,
        drifted: u64,
    ) -> anyhow::Result<()> {
        on_backend!(self, s => s.record_drift_run(repo, forge_id, at, issue_number, drifted))
    }

    async fn drift_schedule(&self, repo: &str) -> anyhow::Result<Option<DriftRecord>> {
        on_backend!(self, s => s.drift_schedule(repo))
    }
}
