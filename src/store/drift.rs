//! Drift schedules: when each repository's default branch is next checked for
//! drift, and what the last check found. The same statements on both backends;
//! a due row is claimed by one replica at a time like a delivery (PostgreSQL:
//! `FOR UPDATE SKIP LOCKED`), so a schedule fires once across replicas.

use super::ReplicaId;

/// A repository's drift schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriftRecord {
    /// The store's repository key.
    pub repo: String,
    /// The GitHub installation id, or the GitLab project id.
    pub forge_id: u64,
    /// When to look next (seconds since the epoch).
    pub next_at: i64,
    /// The replica running it now, until when.
    pub owner: Option<ReplicaId>,
    pub claimed_until: i64,
    /// When the last drift run ended.
    pub last_run_at: Option<i64>,
    /// The repository's drift issue, once there is one.
    pub issue_number: Option<u64>,
    /// Units drifted at the last run.
    pub drifted: u64,
}

/// The statements for one pool type; `$claim` takes due rows (`$1` owner,
/// `$2` until, `$3` now, `$4` limit).
macro_rules! drift_queries {
    ($module:ident, $pool:ty, $claim:literal) => {
        pub(super) mod $module {
            use super::DriftRecord;
            use crate::store::ReplicaId;

            type Pool = $pool;

            fn record(row: &impl crate::store::rows::StoredRow) -> anyhow::Result<DriftRecord> {
                Ok(DriftRecord {
                    repo: row.text("repo")?,
                    forge_id: row.int("forge_id")? as u64,
                    next_at: row.int("next_at")?,
                    owner: row.maybe_text("owner")?.map(ReplicaId::from_stored),
                    claimed_until: row.maybe_int("claimed_until")?.unwrap_or(0),
                    last_run_at: row.maybe_int("last_run_at")?,
                    issue_number: row.maybe_int("issue_number")?.map(|n| n as u64),
                    drifted: row.int("drifted")?.max(0) as u64,
                })
            }

            pub(in crate::store) async fn seed(pool: &Pool, now: i64) -> anyhow::Result<u64> {
                // The WHERE keeps SQLite from reading `ON CONFLICT` as a join's `ON`.
                let done = sqlx::query(
                    "INSERT INTO drift_schedules (repo, forge_id, next_at)
                     SELECT repo, MIN(id), $1 FROM (
                         SELECT r.repo AS repo, r.installation_id AS id
                         FROM installation_repositories r JOIN installations i ON i.id = r.installation_id
                         WHERE i.active
                         UNION ALL
                         SELECT repo, installation_id AS id FROM pull_requests
                     ) known WHERE repo <> '' GROUP BY repo
                     ON CONFLICT (repo) DO NOTHING",
                )
                .bind(now)
                .execute(pool)
                .await?;
                Ok(done.rows_affected())
            }

            pub(in crate::store) async fn claim_due(
                pool: &Pool,
                owner: &ReplicaId,
                now: i64,
                until: i64,
                limit: u32,
            ) -> anyhow::Result<Vec<DriftRecord>> {
                let rows = sqlx::query($claim)
                    .bind(owner.as_str())
                    .bind(until)
                    .bind(now)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?;
                let mut due = rows.iter().map(record).collect::<anyhow::Result<Vec<_>>>()?;
                due.sort_by_key(|d| (d.next_at, d.repo.clone()));
                Ok(due)
            }

            pub(in crate::store) async fn renew(
                pool: &Pool,
                owner: &ReplicaId,
                repos: &[String],
                until: i64,
            ) -> anyhow::Result<u64> {
                let mut renewed = 0;
                for repo in repos {
                    let done = sqlx::query(
                        "UPDATE drift_schedules SET claimed_until = $1 WHERE repo = $2 AND owner = $3",
                    )
                    .bind(until)
                    .bind(repo)
                    .bind(owner.as_str())
                    .execute(pool)
                    .await?;
                    renewed += done.rows_affected();
                }
                Ok(renewed)
            }

            pub(in crate::store) async fn release(
                pool: &Pool,
                repo: &str,
                owner: &ReplicaId,
                next_at: i64,
            ) -> anyhow::Result<bool> {
                let done = sqlx::query(
                    "UPDATE drift_schedules SET next_at = $1, owner = NULL, claimed_until = NULL
                     WHERE repo = $2 AND owner = $3",
                )
                .bind(next_at)
                .bind(repo)
                .bind(owner.as_str())
                .execute(pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            pub(in crate::store) async fn record_run(
                pool: &Pool,
                repo: &str,
                forge_id: u64,
                at: i64,
                issue_number: Option<u64>,
                drifted: u64,
            ) -> anyhow::Result<()> {
                sqlx::query(
                    "INSERT INTO drift_schedules (repo, forge_id, next_at, last_run_at, issue_number, drifted)
                     VALUES ($1, $2, $3, $3, $4, $5)
                     ON CONFLICT (repo) DO UPDATE SET last_run_at = excluded.last_run_at,
                     issue_number = COALESCE(excluded.issue_number, drift_schedules.issue_number),
                     drifted = excluded.drifted",
                )
                .bind(repo)
                .bind(forge_id as i64)
                .bind(at)
                .bind(issue_number.map(|n| n as i64))
                .bind(drifted as i64)
                .execute(pool)
                .await?;
                Ok(())
            }

            pub(in crate::store) async fn get(
                pool: &Pool,
                repo: &str,
            ) -> anyhow::Result<Option<DriftRecord>> {
                let row = sqlx::query("SELECT * FROM drift_schedules WHERE repo = $1")
                    .bind(repo)
                    .fetch_optional(pool)
                    .await?;
                row.as_ref().map(record).transpose()
            }
        }
    };
}

drift_queries!(
    sqlite,
    sqlx::SqlitePool,
    "UPDATE drift_schedules SET owner = $1, claimed_until = $2
     WHERE repo IN (SELECT repo FROM drift_schedules
                    WHERE next_at <= $3 AND (claimed_until IS NULL OR claimed_until < $3)
                    ORDER BY next_at LIMIT $4)
     RETURNING *"
);
drift_queries!(
    postgres,
    sqlx::PgPool,
    "UPDATE drift_schedules SET owner = $1, claimed_until = $2
     WHERE repo IN (SELECT repo FROM drift_schedules
                    WHERE next_at <= $3 AND (claimed_until IS NULL OR claimed_until < $3)
                    ORDER BY next_at LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *"
);
