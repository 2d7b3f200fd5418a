//! The SQLite store: one file, WAL mode, migrations embedded in the binary.

use super::{PlanRecord, PlanStatus, RunKind, RunRecord, Store, UnitRecord, UnitStatus};
use crate::plan::PlanId;
use crate::unit::UnitPath;
use anyhow::Context;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Row, SqlSafeStr};
use std::path::Path;
use std::time::Duration;

pub struct SqliteStore {
    pool: SqlitePool,
}

fn migrator() -> Migrator {
    Migrator::with_migrations(vec![Migration::new(
        1,
        "runs".into(),
        MigrationType::Simple,
        include_str!("../../migrations/0001_runs.sql").into_sql_str(),
        false,
    )])
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
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        migrator()
            .run(&pool)
            .await
            .context("cannot migrate the database")?;
        Ok(SqliteStore { pool })
    }
}

impl SqliteStore {
    async fn find_run(
        &self,
        repo: &str,
        kind: RunKind,
        key: &str,
        filter: &'static str,
    ) -> anyhow::Result<Option<RunRecord>> {
        let sql = format!(
            "SELECT id, repo, key, dir, status, created_at FROM runs WHERE repo = ? AND kind = ? AND key = ? {filter} ORDER BY created_at DESC, rowid DESC LIMIT 1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(repo)
            .bind(kind_str(kind))
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(RunRecord {
                id: r.try_get("id")?,
                repo: r.try_get("repo")?,
                kind,
                key: r.try_get("key")?,
                dir: r.try_get("dir")?,
                finished: r.try_get::<String, _>("status")? == "finished",
                created_at: r.try_get("created_at")?,
            })
        })
        .transpose()
    }
}

fn kind_str(kind: RunKind) -> &'static str {
    match kind {
        RunKind::Plan => "plan",
        RunKind::Apply => "apply",
    }
}

fn plan_from_row(row: &sqlx::sqlite::SqliteRow) -> anyhow::Result<PlanRecord> {
    let units: String = row.try_get("units")?;
    Ok(PlanRecord {
        id: PlanId(row.try_get("id")?),
        repo: row.try_get("repo")?,
        head: row.try_get("head")?,
        base: row.try_get("base")?,
        status: PlanStatus::parse(&row.try_get::<String, _>("status")?),
        run_id: row.try_get("run_id")?,
        units: serde_json::from_str(&units).context("a stored plan does not decode")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store for SqliteStore {
    async fn insert_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO runs (id, repo, kind, key, dir, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .bind(&run.id)
            .bind(&run.repo)
            .bind(kind_str(run.kind))
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
        repo: &str,
        kind: RunKind,
        key: &str,
    ) -> anyhow::Result<Option<RunRecord>> {
        self.find_run(repo, kind, key, "AND status = 'running'")
            .await
    }

    async fn latest_run(
        &self,
        repo: &str,
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
        let summary = unit
            .summary
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        sqlx::query(
            "INSERT INTO unit_results (run_id, unit, status, detail, summary, updated_at) VALUES (?, ?, ?, ?, ?, strftime('%s','now'))
             ON CONFLICT (run_id, unit) DO UPDATE SET status = excluded.status, detail = excluded.detail, summary = excluded.summary, updated_at = excluded.updated_at",
        )
        .bind(run_id)
        .bind(unit.unit.as_str())
        .bind(unit.status.as_str())
        .bind(&unit.detail)
        .bind(summary)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn unit_records(&self, run_id: &str) -> anyhow::Result<Vec<UnitRecord>> {
        let rows = sqlx::query(
            "SELECT unit, status, detail, summary FROM unit_results WHERE run_id = ? ORDER BY unit",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let status: String = r.try_get("status")?;
                let summary: Option<String> = r.try_get("summary")?;
                Ok(UnitRecord {
                    unit: UnitPath::new(r.try_get::<String, _>("unit")?),
                    status: UnitStatus::parse(&status)
                        .with_context(|| format!("unknown unit status {status}"))?,
                    detail: r.try_get("detail")?,
                    summary: summary.map(|s| serde_json::from_str(&s)).transpose()?,
                })
            })
            .collect()
    }

    async fn save_plan(&self, plan: &PlanRecord) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE plans SET status = 'superseded' WHERE repo = ? AND status = 'current' AND id <> ?")
            .bind(&plan.repo)
            .bind(plan.id.0.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO plans (id, repo, head, base, status, run_id, units, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (repo, id) DO UPDATE SET head = excluded.head, base = excluded.base, status = excluded.status,
               run_id = excluded.run_id, units = excluded.units, created_at = excluded.created_at",
        )
        .bind(plan.id.0.as_str())
        .bind(&plan.repo)
        .bind(&plan.head)
        .bind(&plan.base)
        .bind(plan.status.as_str())
        .bind(&plan.run_id)
        .bind(serde_json::to_string(&plan.units)?)
        .bind(plan.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn plan(&self, repo: &str, id: &PlanId) -> anyhow::Result<Option<PlanRecord>> {
        let row = sqlx::query("SELECT * FROM plans WHERE repo = ? AND id = ?")
            .bind(repo)
            .bind(id.0.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn current_plan(&self, repo: &str) -> anyhow::Result<Option<PlanRecord>> {
        let row = sqlx::query("SELECT * FROM plans WHERE repo = ? AND status = 'current' ORDER BY created_at DESC LIMIT 1")
            .bind(repo)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn set_plan_status(
        &self,
        repo: &str,
        id: &PlanId,
        status: PlanStatus,
    ) -> anyhow::Result<()> {
        sqlx::query("UPDATE plans SET status = ? WHERE repo = ? AND id = ?")
            .bind(status.as_str())
            .bind(repo)
            .bind(id.0.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
