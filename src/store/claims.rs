//! Apply claims in SQLite: who applies which plan id right now. Taking one is
//! a single `INSERT … ON CONFLICT DO NOTHING`; taking over a dead owner's is a
//! compare-and-swap `UPDATE` on the claim as it was read, so two processes
//! racing for a plan id never both win. Whether an owner is dead is the
//! engine's decision, not the store's.

use crate::plan::PlanId;
use sqlx::Row;
use sqlx::sqlite::{SqlitePool, SqliteRow};

/// A process applying a plan id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyClaim {
    pub repo: String,
    pub plan_id: PlanId,
    /// A fresh id per apply: two applies in one process are different owners.
    pub owner: String,
    /// The owning cascade process, and the host it runs on.
    pub pid: u32,
    pub host: String,
    /// When the owner last said it was alive (seconds since the epoch).
    pub heartbeat_at: i64,
}

fn from_row(row: &SqliteRow) -> anyhow::Result<ApplyClaim> {
    Ok(ApplyClaim {
        repo: row.try_get("repo")?,
        plan_id: PlanId(row.try_get("plan_id")?),
        owner: row.try_get("owner")?,
        pid: row.try_get::<i64, _>("pid")? as u32,
        host: row.try_get("host")?,
        heartbeat_at: row.try_get("heartbeat_at")?,
    })
}

pub(super) async fn insert(
    pool: &SqlitePool,
    claim: &ApplyClaim,
) -> anyhow::Result<Option<ApplyClaim>> {
    // The holder may release between the two statements: then insert again.
    for _ in 0..3 {
        let done = sqlx::query(
            "INSERT INTO apply_claims (repo, plan_id, owner, pid, host, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (repo, plan_id) DO NOTHING",
        )
        .bind(&claim.repo)
        .bind(claim.plan_id.as_str())
        .bind(&claim.owner)
        .bind(claim.pid as i64)
        .bind(&claim.host)
        .bind(claim.heartbeat_at)
        .execute(pool)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(None);
        }
        if let Some(holder) = get(pool, &claim.repo, &claim.plan_id).await? {
            return Ok(Some(holder));
        }
    }
    anyhow::bail!(
        "the apply claim on plan {} keeps changing hands; try again",
        claim.plan_id
    )
}

pub(super) async fn take_over(
    pool: &SqlitePool,
    old: &ApplyClaim,
    new: &ApplyClaim,
) -> anyhow::Result<bool> {
    let done = sqlx::query(
        "UPDATE apply_claims SET owner = ?, pid = ?, host = ?, heartbeat_at = ?
         WHERE repo = ? AND plan_id = ? AND owner = ? AND heartbeat_at = ?",
    )
    .bind(&new.owner)
    .bind(new.pid as i64)
    .bind(&new.host)
    .bind(new.heartbeat_at)
    .bind(&old.repo)
    .bind(old.plan_id.as_str())
    .bind(&old.owner)
    .bind(old.heartbeat_at)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn heartbeat(
    pool: &SqlitePool,
    repo: &str,
    plan_id: &PlanId,
    owner: &str,
    now: i64,
) -> anyhow::Result<bool> {
    let done = sqlx::query(
        "UPDATE apply_claims SET heartbeat_at = ? WHERE repo = ? AND plan_id = ? AND owner = ?",
    )
    .bind(now)
    .bind(repo)
    .bind(plan_id.as_str())
    .bind(owner)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn release(
    pool: &SqlitePool,
    repo: &str,
    plan_id: &PlanId,
    owner: &str,
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM apply_claims WHERE repo = ? AND plan_id = ? AND owner = ?")
        .bind(repo)
        .bind(plan_id.as_str())
        .bind(owner)
        .execute(pool)
        .await?;
    Ok(())
}

pub(super) async fn get(
    pool: &SqlitePool,
    repo: &str,
    plan_id: &PlanId,
) -> anyhow::Result<Option<ApplyClaim>> {
    let row = sqlx::query("SELECT * FROM apply_claims WHERE repo = ? AND plan_id = ?")
        .bind(repo)
        .bind(plan_id.as_str())
        .fetch_optional(pool)
        .await?;
    row.as_ref().map(from_row).transpose()
}
