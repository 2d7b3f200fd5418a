//! The PostgreSQL store: what several `cascade serve` replicas share. Same
//! records and the same guarantees as SQLite, where SQLite gets them from
//! running one writer at a time and PostgreSQL from row locks and advisory
//! locks:
//!
//! - the schema (`migrations/postgres/`) is migrated at open on a connection
//!   of its own, under sqlx's session advisory lock (keyed by the database
//!   name), so replicas starting together migrate once and the others wait;
//! - inserts that must happen once (a delivery, an apply claim, a lock) are
//!   `INSERT … ON CONFLICT DO NOTHING`, which waits for a concurrent insert of
//!   the same key and then does nothing;
//! - the multi-statement writes that read or replace several rows (superseding
//!   a repository's current plan, taking a pull request's locks, replacing
//!   what it waits for or its comment's parts) take a transaction-scoped
//!   advisory lock on the repository first, so they run one at a time per
//!   repository, a replacement is never mixed with another, and lock rows are
//!   never waited for in two orders.
//!
//! PostgreSQL text cannot hold a NUL byte (SQLite's can): a unit name or an
//! error excerpt, the strings a pull request's files reach, is stored with
//! each NUL replaced by U+FFFD rather than failing the write. This module never
//! puts the database URL, which may hold a password, in a message.

use super::rows;
use super::{
    ApplyClaim, BotStore, DeliveryRecord, DeliveryStatus, Lock, PlanRecord, PlanStatus,
    PullRequestRecord, Pusher, RunKind, RunRecord, RunStore, UnitRecord,
};
use super::{PlanKey, PolicyApproval, ReplicaId};
use crate::event::DeliveryId;
use crate::plan::PlanId;
use crate::unit::UnitPath;
use anyhow::Context;
use sqlx::PgTransaction;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::borrow::Cow;
use std::time::Duration;

/// Connections one replica keeps: webhook requests, pull request jobs and
/// heartbeats share them; each statement is short.
const MAX_CONNECTIONS: u32 = 10;
/// How long a statement waits for a connection before it fails: a free one
/// from the pool, or a new one (a refused connection is retried until then).
/// Shorter than GitHub's 10 s webhook timeout: while the database is down a
/// delivery is answered 503 (to redeliver) before GitHub gives up on it.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://…` or `postgresql://…`)
    /// and brings its schema up to date.
    pub async fn open(url: &str) -> anyhow::Result<PostgresStore> {
        let options: PgConnectOptions = url.parse().context(
            "the PostgreSQL URL does not parse; write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE",
        )?;
        let options = options.application_name("cascade");
        let place = place(&options);
        // On a connection of its own (a pool of one, closed after): the
        // migrator's advisory lock belongs to the session, and closing the
        // session releases it whatever happened.
        let migrating = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .with_context(|| format!("cannot connect to PostgreSQL at {place}; check --database-url and that the server accepts connections"))?;
        let migrated = super::migrations::migrator(super::migrations::POSTGRES)
            .run(&migrating)
            .await;
        migrating.close().await;
        migrated.with_context(|| {
            format!("cannot migrate the PostgreSQL database at {place} (if a newer cascade migrated it, run that version on every replica)")
        })?;
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot connect to PostgreSQL at {place}"))?;
        Ok(PostgresStore { pool })
    }

    async fn find_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
        filter: &'static str,
    ) -> anyhow::Result<Option<RunRecord>> {
        let sql = format!(
            "SELECT id, repo, key, dir, status, created_at FROM runs WHERE repo = $1 AND kind = $2 AND key = $3 {filter} ORDER BY created_at DESC, seq DESC LIMIT 1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(repo.as_str())
            .bind(kind.as_str())
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| rows::run(&r, kind)).transpose()
    }
}

/// Where the database is, for messages: host (or socket directory), port and
/// database name, never the user's password.
fn place(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(dir) => dir.display().to_string(),
        None => options.get_host().to_string(),
    };
    let database = options.get_database().unwrap_or(options.get_username());
    format!("{host}:{}/{database}", options.get_port())
}

/// A string a pull request's files may reach, as PostgreSQL text can hold it.
fn text(value: &str) -> Cow<'_, str> {
    if value.contains('\0') {
        Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(value)
    }
}

/// Serialises writers of one kind for one repository until the transaction ends.
async fn lock_repository(
    tx: &mut PgTransaction<'_>,
    kind: &'static str,
    repo: &str,
) -> anyhow::Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))")
        .bind(kind)
        .bind(repo)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Seconds since the epoch, by the database's clock (SQLite's `strftime('%s','now')`).
const NOW: &str = "extract(epoch from now())::bigint";

impl RunStore for PostgresStore {
    async fn insert_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO runs (id, repo, kind, key, dir, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)")
            .bind(&run.id)
            .bind(run.repo.as_str())
            .bind(run.kind.as_str())
            .bind(&run.key)
            .bind(&run.dir)
            .bind(if run.finished { "finished" } else { "running" })
            .bind(run.created_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn finish_run(&self, id: &str) -> anyhow::Result<()> {
        self.set_run_status(id, "finished").await
    }

    async fn unfinished_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
    ) -> anyhow::Result<Option<RunRecord>> {
        self.find_run(repo, kind, key, "AND status = 'running'")
            .await
    }

    async fn latest_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
    ) -> anyhow::Result<Option<RunRecord>> {
        self.find_run(repo, kind, key, "").await
    }

    async fn reopen_run(&self, id: &str) -> anyhow::Result<()> {
        self.set_run_status(id, "running").await
    }

    async fn record_unit(&self, run_id: &str, unit: &UnitRecord) -> anyhow::Result<()> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO unit_results (run_id, unit, status, detail, summary, rendered, retried, retry_at, steps, policies, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {NOW})
             ON CONFLICT (run_id, unit) DO UPDATE SET status = excluded.status, detail = excluded.detail, summary = excluded.summary, rendered = excluded.rendered,
             retried = excluded.retried, retry_at = excluded.retry_at, steps = excluded.steps, policies = excluded.policies, updated_at = excluded.updated_at",
        )))
        .bind(run_id)
        .bind(text(unit.unit.as_str()))
        .bind(unit.status.as_str())
        .bind(text(&unit.detail))
        .bind(rows::json(unit.summary.as_ref())?)
        .bind(rows::json(unit.rendered.as_ref())?)
        .bind(i64::from(unit.retried))
        .bind(unit.retry_at)
        .bind(rows::json(Some(&unit.steps).filter(|s| !s.is_empty()))?)
        .bind(rows::json(Some(&unit.policies).filter(|p| !p.is_empty()))?)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn unit_records(&self, run_id: &str) -> anyhow::Result<Vec<UnitRecord>> {
        sqlx::query(
            "SELECT unit, status, detail, summary, rendered, retried, retry_at, steps, policies FROM unit_results WHERE run_id = $1 ORDER BY unit",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(rows::unit_record)
        .collect()
    }

    async fn save_plan(&self, plan: &PlanRecord) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        // Two replicas saving plans for one repository at once: the second
        // supersedes the first's, as it would on SQLite, instead of both
        // staying current.
        lock_repository(&mut tx, "cascade.plans", plan.repo.as_str()).await?;
        sqlx::query("UPDATE plans SET status = 'superseded' WHERE repo = $1 AND status = 'current' AND id <> $2")
            .bind(plan.repo.as_str())
            .bind(plan.id.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO plans (id, repo, head, base, status, run_id, units, created_at, policies) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (repo, id) DO UPDATE SET head = excluded.head, base = excluded.base, status = excluded.status,
               run_id = excluded.run_id, units = excluded.units, created_at = excluded.created_at, policies = excluded.policies",
        )
        .bind(plan.id.as_str())
        .bind(plan.repo.as_str())
        .bind(&plan.head)
        .bind(&plan.base)
        .bind(plan.status.as_str())
        .bind(&plan.run_id)
        .bind(serde_json::to_string(&plan.units)?)
        .bind(plan.created_at)
        .bind(rows::json(Some(&plan.policies).filter(|p| !p.is_empty()))?)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn plan(&self, repo: &PlanKey, id: &PlanId) -> anyhow::Result<Option<PlanRecord>> {
        let row = sqlx::query("SELECT * FROM plans WHERE repo = $1 AND id = $2")
            .bind(repo.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(rows::plan).transpose()
    }

    async fn current_plan(&self, repo: &PlanKey) -> anyhow::Result<Option<PlanRecord>> {
        let row = sqlx::query("SELECT * FROM plans WHERE repo = $1 AND status = 'current' ORDER BY created_at DESC LIMIT 1")
            .bind(repo.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(rows::plan).transpose()
    }

    async fn set_plan_status(
        &self,
        repo: &PlanKey,
        id: &PlanId,
        status: PlanStatus,
    ) -> anyhow::Result<()> {
        sqlx::query("UPDATE plans SET status = $1 WHERE repo = $2 AND id = $3")
            .bind(status.as_str())
            .bind(repo.as_str())
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn insert_apply_claim(&self, claim: &ApplyClaim) -> anyhow::Result<Option<ApplyClaim>> {
        super::claims::postgres::insert(&self.pool, claim).await
    }

    async fn take_over_apply_claim(
        &self,
        old: &ApplyClaim,
        new: &ApplyClaim,
    ) -> anyhow::Result<bool> {
        super::claims::postgres::take_over(&self.pool, old, new).await
    }

    async fn heartbeat_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
        now: i64,
    ) -> anyhow::Result<bool> {
        super::claims::postgres::heartbeat(&self.pool, repo, plan_id, owner, now).await
    }

    async fn release_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
    ) -> anyhow::Result<()> {
        super::claims::postgres::release(&self.pool, repo, plan_id, owner).await
    }

    async fn apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
    ) -> anyhow::Result<Option<ApplyClaim>> {
        super::claims::postgres::get(&self.pool, repo, plan_id).await
    }
}

impl BotStore for PostgresStore {
    fn single_replica(&self) -> bool {
        false
    }

    async fn insert_delivery(&self, d: &DeliveryRecord) -> anyhow::Result<bool> {
        let done = sqlx::query(
            "INSERT INTO deliveries (id, event, body, status, received_at, owner, claimed_until) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
        )
        .bind(d.id.as_str())
        .bind(&d.event)
        .bind(&d.body)
        .bind(d.status.as_str())
        .bind(d.received_at)
        .bind(d.owner.as_ref().map(ReplicaId::as_str))
        .bind(d.owner.as_ref().map(|_| d.claimed_until))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_delivery_status(
        &self,
        id: &DeliveryId,
        status: DeliveryStatus,
    ) -> anyhow::Result<()> {
        // A handled delivery's body is never read again: keeping it would grow
        // the database with every delivery GitHub ever sent.
        sqlx::query(
            "UPDATE deliveries SET status = $1, body = CASE WHEN $1 = 'received' THEN body ELSE ''::bytea END WHERE id = $2",
        )
        .bind(status.as_str())
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn pending_deliveries(&self) -> anyhow::Result<Vec<DeliveryRecord>> {
        sqlx::query("SELECT * FROM deliveries WHERE status = 'received' ORDER BY received_at, seq")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(rows::delivery)
            .collect()
    }

    async fn pending_delivery_count(&self) -> anyhow::Result<u64> {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'received'")
                .fetch_one(&self.pool)
                .await?;
        Ok(n.max(0) as u64)
    }

    async fn start_delivery_attempt(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        // One statement: the row lock makes concurrent attempts count one each.
        let n: Option<i64> = sqlx::query_scalar(
            "UPDATE deliveries SET attempts = attempts + 1 WHERE id = $1 RETURNING attempts",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(rows::count(n))
    }

    async fn delivery_attempts(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        let n: Option<i64> = sqlx::query_scalar("SELECT attempts FROM deliveries WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        Ok(rows::count(n))
    }

    async fn upsert_installation(
        &self,
        id: u64,
        account: &str,
        active: bool,
    ) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO installations (id, account, active, updated_at) VALUES ($1, $2, $3, {NOW})
             ON CONFLICT (id) DO UPDATE SET account = excluded.account, active = excluded.active, updated_at = excluded.updated_at",
        )))
        .bind(id as i64)
        .bind(account)
        .bind(active)
        .execute(&mut *tx)
        .await?;
        if !active {
            sqlx::query("DELETE FROM installation_repositories WHERE installation_id = $1")
                .bind(id as i64)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn change_installation_repos(
        &self,
        id: u64,
        added: &[String],
        removed: &[String],
    ) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO installation_repositories (installation_id, repo) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING")
            .bind(id as i64)
            .bind(added)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM installation_repositories WHERE installation_id = $1 AND repo = ANY($2)",
        )
        .bind(id as i64)
        .bind(removed)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn installation_repos(&self, id: u64) -> anyhow::Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT repo FROM installation_repositories WHERE installation_id = $1 ORDER BY repo",
        )
        .bind(id as i64)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn save_pull_request(&self, pr: &PullRequestRecord) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO pull_requests (repo, number, installation_id, clone_url, head_sha, base_sha, state, plan_id, comment_id, check_run_id, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (repo, number) DO UPDATE SET installation_id = excluded.installation_id, clone_url = '', head_sha = excluded.head_sha,
               base_sha = excluded.base_sha, state = excluded.state, plan_id = excluded.plan_id, comment_id = excluded.comment_id,
               check_run_id = excluded.check_run_id, updated_at = excluded.updated_at",
        )
        .bind(&pr.repo)
        .bind(pr.number as i64)
        .bind(pr.installation_id as i64)
        // Unused: clone URLs come from the forge's API each time, never from what was
        // stored (older versions stored a webhook's).
        .bind("")
        .bind(&pr.head_sha)
        .bind(&pr.base_sha)
        .bind(pr.state.as_str())
        .bind(pr.plan_id.as_ref().map(|p| p.as_str()))
        .bind(pr.comment_id.map(|c| c as i64))
        .bind(pr.check_run_id.map(|c| c as i64))
        .bind(pr.updated_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn pull_request(
        &self,
        repo: &str,
        number: u64,
    ) -> anyhow::Result<Option<PullRequestRecord>> {
        let row = sqlx::query("SELECT * FROM pull_requests WHERE repo = $1 AND number = $2")
            .bind(repo)
            .bind(number as i64)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(rows::pull_request).transpose()
    }

    async fn unfinished_pull_requests(&self) -> anyhow::Result<Vec<PullRequestRecord>> {
        sqlx::query(
            "SELECT * FROM pull_requests WHERE state IN ('discovering', 'planning', 'applying') ORDER BY updated_at, repo, number",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(rows::pull_request)
        .collect()
    }

    async fn take_locks(
        &self,
        repo: &str,
        pr: u64,
        units: &[UnitPath],
    ) -> anyhow::Result<Vec<Lock>> {
        let units: Vec<String> = units
            .iter()
            .map(|u| text(u.as_str()).into_owned())
            .collect();
        let mut tx = self.pool.begin().await?;
        // One taker per repository at a time: two replicas asking for
        // overlapping units never wait on each other's rows in opposite orders.
        lock_repository(&mut tx, "cascade.locks", repo).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO locks (repo, unit, pr, taken_at) SELECT $1, wanted.unit, $2, {NOW} FROM unnest($3::text[]) AS wanted (unit)
             ON CONFLICT (repo, unit) DO NOTHING",
        )))
        .bind(repo)
        .bind(pr as i64)
        .bind(&units)
        .execute(&mut *tx)
        .await?;
        // A statement of its own, so it sees every lock committed before it;
        // in the order asked for, as SQLite answers.
        let held = sqlx::query(
            "SELECT locks.unit, locks.pr FROM unnest($2::text[]) WITH ORDINALITY AS wanted (unit, n)
             JOIN locks ON locks.repo = $1 AND locks.unit = wanted.unit
             WHERE locks.pr <> $3 ORDER BY wanted.n",
        )
        .bind(repo)
        .bind(&units)
        .bind(pr as i64)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(rows::lock)
        .collect::<anyhow::Result<Vec<Lock>>>()?;
        tx.commit().await?;
        Ok(held)
    }

    async fn release_locks(&self, repo: &str, pr: u64) -> anyhow::Result<u64> {
        let done = sqlx::query("DELETE FROM locks WHERE repo = $1 AND pr = $2")
            .bind(repo)
            .bind(pr as i64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn locks(&self, repo: &str) -> anyhow::Result<Vec<Lock>> {
        sqlx::query("SELECT unit, pr FROM locks WHERE repo = $1 ORDER BY unit")
            .bind(repo)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(rows::lock)
            .collect()
    }

    async fn set_waiting(&self, repo: &str, pr: u64, holders: &[u64]) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_repository(&mut tx, "cascade.waiting", repo).await?;
        super::waiting::postgres::set_waiting(&mut tx, repo, pr, holders).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn waiting_for(&self, repo: &str, holder: u64) -> anyhow::Result<Vec<u64>> {
        super::waiting::postgres::waiting_for(&mut *self.pool.acquire().await?, repo, holder).await
    }

    async fn released_waiters(&self) -> anyhow::Result<Vec<(String, u64)>> {
        super::waiting::postgres::released_waiters(&mut *self.pool.acquire().await?).await
    }

    async fn comment_parts(&self, repo: &str, number: u64) -> anyhow::Result<Vec<u64>> {
        super::comment_parts::postgres::comment_parts(
            &mut *self.pool.acquire().await?,
            repo,
            number,
        )
        .await
    }

    async fn set_comment_parts(&self, repo: &str, number: u64, ids: &[u64]) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_repository(&mut tx, "cascade.comment_parts", repo).await?;
        super::comment_parts::postgres::set_comment_parts(&mut tx, repo, number, ids).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn add_pusher(&self, repo: &str, number: u64, pusher: &Pusher) -> anyhow::Result<()> {
        super::pushers::postgres::add_pusher(&mut *self.pool.acquire().await?, repo, number, pusher)
            .await
    }

    async fn pushers(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Pusher>> {
        super::pushers::postgres::pushers(&mut *self.pool.acquire().await?, repo, number).await
    }

    async fn approve_policies(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
        approval: &PolicyApproval,
    ) -> anyhow::Result<()> {
        let conn = &mut *self.pool.acquire().await?;
        super::policy_approvals::postgres::approve_policies(
            conn,
            key.as_str(),
            plan_id.as_str(),
            approval,
        )
        .await
    }

    async fn policy_approvals(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
    ) -> anyhow::Result<Vec<PolicyApproval>> {
        let conn = &mut *self.pool.acquire().await?;
        super::policy_approvals::postgres::policy_approvals(conn, key.as_str(), plan_id.as_str())
            .await
    }

    async fn claim_deliveries(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<DeliveryRecord>> {
        super::leases::postgres::claim_deliveries(&self.pool, owner, now, until, limit).await
    }

    async fn renew_deliveries(
        &self,
        owner: &ReplicaId,
        ids: &[DeliveryId],
        until: i64,
    ) -> anyhow::Result<u64> {
        super::leases::postgres::renew_deliveries(&self.pool, owner, ids, until).await
    }

    async fn take_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        now: i64,
        until: i64,
    ) -> anyhow::Result<bool> {
        super::leases::postgres::take_pr_lease(&self.pool, repo, number, owner, now, until).await
    }

    async fn renew_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        until: i64,
    ) -> anyhow::Result<Option<bool>> {
        super::leases::postgres::renew_pr_lease(&self.pool, repo, number, owner, until).await
    }

    async fn release_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<()> {
        super::leases::postgres::release_pr_lease(&self.pool, repo, number, owner).await
    }

    async fn supersede_pr(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<bool> {
        super::leases::postgres::supersede_pr(&self.pool, repo, number, owner).await
    }

    async fn seed_drift(&self, now: i64) -> anyhow::Result<u64> {
        super::drift::postgres::seed(&self.pool, now).await
    }

    async fn claim_due_drift(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<super::DriftRecord>> {
        super::drift::postgres::claim_due(&self.pool, owner, now, until, limit).await
    }

    async fn renew_drift(
        &self,
        owner: &ReplicaId,
        repos: &[String],
        until: i64,
    ) -> anyhow::Result<u64> {
        super::drift::postgres::renew(&self.pool, owner, repos, until).await
    }

    async fn release_drift(
        &self,
        repo: &str,
        owner: &ReplicaId,
        next_at: i64,
    ) -> anyhow::Result<bool> {
        super::drift::postgres::release(&self.pool, repo, owner, next_at).await
    }

    async fn record_drift_run(
        &self,
        repo: &str,
        forge_id: u64,
        at: i64,
        issue_number: Option<u64>,
        drifted: u64,
    ) -> anyhow::Result<()> {
        super::drift::postgres::record_run(&self.pool, repo, forge_id, at, issue_number, drifted)
            .await
    }

    async fn drift_schedule(&self, repo: &str) -> anyhow::Result<Option<super::DriftRecord>> {
        super::drift::postgres::get(&self.pool, repo).await
    }
}

impl PostgresStore {
    async fn set_run_status(&self, id: &str, status: &'static str) -> anyhow::Result<()> {
        sqlx::query("UPDATE runs SET status = $1 WHERE id = $2")
            .bind(status)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
