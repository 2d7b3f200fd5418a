//! The SQLite store: one file, WAL mode, migrations embedded in the binary.

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
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::Path;
use std::time::Duration;

pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub async fn open(path: &Path) -> anyhow::Result<SqliteStore> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // A commit is written to the WAL but not fsynced; checkpoints are. It survives
            // a crash of cascade, not of the machine: a power loss can take the last
            // commits before the next checkpoint, acknowledged deliveries among them
            // (docs/design/store.md, "Durability"). sqlx's default, FULL, fsyncs every
            // commit, and that was most of a webhook's acknowledgement time.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        super::migrations::migrator(super::migrations::SQLITE)
            .run(&pool)
            .await
            .context("cannot migrate the database")?;
        Ok(SqliteStore { pool })
    }
}

impl SqliteStore {
    async fn find_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: &str,
        filter: &'static str,
    ) -> anyhow::Result<Option<RunRecord>> {
        let sql = format!(
            "SELECT id, repo, key, dir, status, created_at FROM runs WHERE repo = ? AND kind = ? AND key = ? {filter} ORDER BY created_at DESC, rowid DESC LIMIT 1"
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

impl RunStore for SqliteStore {
    async fn insert_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO runs (id, repo, kind, key, dir, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
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
        sqlx::query("UPDATE runs SET status = 'finished' WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
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
        sqlx::query("UPDATE runs SET status = 'running' WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn record_unit(&self, run_id: &str, unit: &UnitRecord) -> anyhow::Result<()> {
        let summary = rows::json(unit.summary.as_ref())?;
        let rendered = rows::json(unit.rendered.as_ref())?;
        sqlx::query(
            "INSERT INTO unit_results (run_id, unit, status, detail, summary, rendered, retried, retry_at, steps, policies, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%s','now'))
             ON CONFLICT (run_id, unit) DO UPDATE SET status = excluded.status, detail = excluded.detail, summary = excluded.summary, rendered = excluded.rendered,
             retried = excluded.retried, retry_at = excluded.retry_at, steps = excluded.steps, policies = excluded.policies, updated_at = excluded.updated_at",
        )
        .bind(run_id)
        .bind(unit.unit.as_str())
        .bind(unit.status.as_str())
        .bind(&unit.detail)
        .bind(summary)
        .bind(rendered)
        .bind(i64::from(unit.retried))
        .bind(unit.retry_at)
        .bind(rows::json(Some(&unit.steps).filter(|s| !s.is_empty()))?)
        .bind(rows::json(Some(&unit.policies).filter(|p| !p.is_empty()))?)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn unit_records(&self, run_id: &str) -> anyhow::Result<Vec<UnitRecord>> {
        let found = sqlx::query(
            "SELECT unit, status, detail, summary, rendered, retried, retry_at, steps, policies FROM unit_results WHERE run_id = ? ORDER BY unit",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        found.iter().map(rows::unit_record).collect()
    }

    async fn save_plan(&self, plan: &PlanRecord) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE plans SET status = 'superseded' WHERE repo = ? AND status = 'current' AND id <> ?")
            .bind(plan.repo.as_str())
            .bind(plan.id.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO plans (id, repo, head, base, status, run_id, units, created_at, policies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
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
        let row = sqlx::query("SELECT * FROM plans WHERE repo = ? AND id = ?")
            .bind(repo.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(rows::plan).transpose()
    }

    async fn current_plan(&self, repo: &PlanKey) -> anyhow::Result<Option<PlanRecord>> {
        let row = sqlx::query("SELECT * FROM plans WHERE repo = ? AND status = 'current' ORDER BY created_at DESC LIMIT 1")
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
        sqlx::query("UPDATE plans SET status = ? WHERE repo = ? AND id = ?")
            .bind(status.as_str())
            .bind(repo.as_str())
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn insert_apply_claim(&self, claim: &ApplyClaim) -> anyhow::Result<Option<ApplyClaim>> {
        super::claims::sqlite::insert(&self.pool, claim).await
    }

    async fn take_over_apply_claim(
        &self,
        old: &ApplyClaim,
        new: &ApplyClaim,
    ) -> anyhow::Result<bool> {
        super::claims::sqlite::take_over(&self.pool, old, new).await
    }

    async fn heartbeat_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
        now: i64,
    ) -> anyhow::Result<bool> {
        super::claims::sqlite::heartbeat(&self.pool, repo, plan_id, owner, now).await
    }

    async fn release_apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
        owner: &str,
    ) -> anyhow::Result<()> {
        super::claims::sqlite::release(&self.pool, repo, plan_id, owner).await
    }

    async fn apply_claim(
        &self,
        repo: &PlanKey,
        plan_id: &PlanId,
    ) -> anyhow::Result<Option<ApplyClaim>> {
        super::claims::sqlite::get(&self.pool, repo, plan_id).await
    }
}

impl BotStore for SqliteStore {
    fn single_replica(&self) -> bool {
        true
    }

    async fn insert_delivery(&self, d: &DeliveryRecord) -> anyhow::Result<bool> {
        let done = sqlx::query(
            "INSERT INTO deliveries (id, event, body, status, received_at, owner, claimed_until) VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (id) DO NOTHING",
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
            "UPDATE deliveries SET status = ?1, body = CASE WHEN ?1 = 'received' THEN body ELSE x'' END WHERE id = ?2",
        )
        .bind(status.as_str())
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn pending_delivery_count(&self) -> anyhow::Result<u64> {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'received'")
                .fetch_one(&self.pool)
                .await?;
        Ok(n.max(0) as u64)
    }

    async fn start_delivery_attempt(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        let n: Option<i64> = sqlx::query_scalar(
            "UPDATE deliveries SET attempts = attempts + 1 WHERE id = ? RETURNING attempts",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(rows::count(n))
    }

    async fn delivery_attempts(&self, id: &DeliveryId) -> anyhow::Result<u32> {
        let n: Option<i64> = sqlx::query_scalar("SELECT attempts FROM deliveries WHERE id = ?")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        Ok(rows::count(n))
    }

    async fn pending_deliveries(&self) -> anyhow::Result<Vec<DeliveryRecord>> {
        sqlx::query(
            "SELECT * FROM deliveries WHERE status = 'received' ORDER BY received_at, rowid",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(rows::delivery)
        .collect()
    }

    async fn upsert_installation(
        &self,
        id: u64,
        account: &str,
        active: bool,
    ) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO installations (id, account, active, updated_at) VALUES (?, ?, ?, strftime('%s','now'))
             ON CONFLICT (id) DO UPDATE SET account = excluded.account, active = excluded.active, updated_at = excluded.updated_at",
        )
        .bind(id as i64)
        .bind(account)
        .bind(active)
        .execute(&self.pool)
        .await?;
        if !active {
            sqlx::query("DELETE FROM installation_repositories WHERE installation_id = ?")
                .bind(id as i64)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    async fn change_installation_repos(
        &self,
        id: u64,
        added: &[String],
        removed: &[String],
    ) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        for repo in added {
            sqlx::query("INSERT INTO installation_repositories (installation_id, repo) VALUES (?, ?) ON CONFLICT DO NOTHING")
                .bind(id as i64)
                .bind(repo)
                .execute(&mut *tx)
                .await?;
        }
        for repo in removed {
            sqlx::query(
                "DELETE FROM installation_repositories WHERE installation_id = ? AND repo = ?",
            )
            .bind(id as i64)
            .bind(repo)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn installation_repos(&self, id: u64) -> anyhow::Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT repo FROM installation_repositories WHERE installation_id = ? ORDER BY repo",
        )
        .bind(id as i64)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn save_pull_request(&self, pr: &PullRequestRecord) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO pull_requests (repo, number, installation_id, clone_url, head_sha, base_sha, state, plan_id, comment_id, check_run_id, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
        .bind(pr.plan_id.as_ref().map(PlanId::to_string))
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
        let row = sqlx::query("SELECT * FROM pull_requests WHERE repo = ? AND number = ?")
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
        // One transaction: two pull requests asking at once cannot both get a unit.
        let mut tx = self.pool.begin().await?;
        let mut held = Vec::new();
        for unit in units {
            let taken = sqlx::query(
                "INSERT INTO locks (repo, unit, pr, taken_at) VALUES (?, ?, ?, strftime('%s','now')) ON CONFLICT (repo, unit) DO NOTHING",
            )
            .bind(repo)
            .bind(unit.as_str())
            .bind(pr as i64)
            .execute(&mut *tx)
            .await?;
            if taken.rows_affected() == 0 {
                let holder: i64 =
                    sqlx::query_scalar("SELECT pr FROM locks WHERE repo = ? AND unit = ?")
                        .bind(repo)
                        .bind(unit.as_str())
                        .fetch_one(&mut *tx)
                        .await?;
                if holder as u64 != pr {
                    held.push(Lock {
                        unit: unit.clone(),
                        pr: holder as u64,
                    });
                }
            }
        }
        tx.commit().await?;
        Ok(held)
    }

    async fn release_locks(&self, repo: &str, pr: u64) -> anyhow::Result<u64> {
        let done = sqlx::query("DELETE FROM locks WHERE repo = ? AND pr = ?")
            .bind(repo)
            .bind(pr as i64)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn locks(&self, repo: &str) -> anyhow::Result<Vec<Lock>> {
        sqlx::query("SELECT unit, pr FROM locks WHERE repo = ? ORDER BY unit")
            .bind(repo)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(rows::lock)
            .collect()
    }

    async fn set_waiting(&self, repo: &str, pr: u64, holders: &[u64]) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        super::waiting::sqlite::set_waiting(&mut tx, repo, pr, holders).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn waiting_for(&self, repo: &str, holder: u64) -> anyhow::Result<Vec<u64>> {
        super::waiting::sqlite::waiting_for(&mut *self.pool.acquire().await?, repo, holder).await
    }

    async fn released_waiters(&self) -> anyhow::Result<Vec<(String, u64)>> {
        super::waiting::sqlite::released_waiters(&mut *self.pool.acquire().await?).await
    }

    async fn comment_parts(&self, repo: &str, number: u64) -> anyhow::Result<Vec<u64>> {
        super::comment_parts::sqlite::comment_parts(&mut *self.pool.acquire().await?, repo, number)
            .await
    }

    async fn set_comment_parts(&self, repo: &str, number: u64, ids: &[u64]) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        super::comment_parts::sqlite::set_comment_parts(&mut tx, repo, number, ids).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn add_pusher(&self, repo: &str, number: u64, pusher: &Pusher) -> anyhow::Result<()> {
        super::pushers::sqlite::add_pusher(&mut *self.pool.acquire().await?, repo, number, pusher)
            .await
    }

    async fn pushers(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Pusher>> {
        super::pushers::sqlite::pushers(&mut *self.pool.acquire().await?, repo, number).await
    }

    async fn approve_policies(
        &self,
        key: &PlanKey,
        plan_id: &PlanId,
        approval: &PolicyApproval,
    ) -> anyhow::Result<()> {
        let conn = &mut *self.pool.acquire().await?;
        super::policy_approvals::sqlite::approve_policies(
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
        super::policy_approvals::sqlite::policy_approvals(conn, key.as_str(), plan_id.as_str())
            .await
    }

    async fn claim_deliveries(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<DeliveryRecord>> {
        super::leases::sqlite::claim_deliveries(&self.pool, owner, now, until, limit).await
    }

    async fn renew_deliveries(
        &self,
        owner: &ReplicaId,
        ids: &[DeliveryId],
        until: i64,
    ) -> anyhow::Result<u64> {
        super::leases::sqlite::renew_deliveries(&self.pool, owner, ids, until).await
    }

    async fn take_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        now: i64,
        until: i64,
    ) -> anyhow::Result<bool> {
        super::leases::sqlite::take_pr_lease(&self.pool, repo, number, owner, now, until).await
    }

    async fn renew_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
        until: i64,
    ) -> anyhow::Result<Option<bool>> {
        super::leases::sqlite::renew_pr_lease(&self.pool, repo, number, owner, until).await
    }

    async fn release_pr_lease(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<()> {
        super::leases::sqlite::release_pr_lease(&self.pool, repo, number, owner).await
    }

    async fn supersede_pr(
        &self,
        repo: &str,
        number: u64,
        owner: &ReplicaId,
    ) -> anyhow::Result<bool> {
        super::leases::sqlite::supersede_pr(&self.pool, repo, number, owner).await
    }

    async fn seed_drift(&self, now: i64) -> anyhow::Result<u64> {
        super::drift::sqlite::seed(&self.pool, now).await
    }

    async fn claim_due_drift(
        &self,
        owner: &ReplicaId,
        now: i64,
        until: i64,
        limit: u32,
    ) -> anyhow::Result<Vec<super::DriftRecord>> {
        super::drift::sqlite::claim_due(&self.pool, owner, now, until, limit).await
    }

    async fn renew_drift(
        &self,
        owner: &ReplicaId,
        repos: &[String],
        until: i64,
    ) -> anyhow::Result<u64> {
        super::drift::sqlite::renew(&self.pool, owner, repos, until).await
    }

    async fn release_drift(
        &self,
        repo: &str,
        owner: &ReplicaId,
        next_at: i64,
    ) -> anyhow::Result<bool> {
        super::drift::sqlite::release(&self.pool, repo, owner, next_at).await
    }

    async fn record_drift_run(
        &self,
        repo: &str,
        forge_id: u64,
        at: i64,
        issue_number: Option<u64>,
        drifted: u64,
    ) -> anyhow::Result<()> {
        super::drift::sqlite::record_run(&self.pool, repo, forge_id, at, issue_number, drifted)
            .await
    }

    async fn drift_schedule(&self, repo: &str) -> anyhow::Result<Option<super::DriftRecord>> {
        super::drift::sqlite::get(&self.pool, repo).await
    }
}
