//! Apply claims: who applies which plan id right now, the same statements on
//! both backends. Taking one is a single `INSERT … ON CONFLICT DO NOTHING`;
//! taking over a dead owner's is a compare-and-swap `UPDATE` on the claim as
//! it was read, so two processes racing for a plan id never both win (on
//! PostgreSQL a second `UPDATE` waits for the first and re-checks the row it
//! changed). Whether an owner is dead is the engine's decision, not the store's.

use super::PlanKey;
use crate::plan::PlanId;

/// A process applying a plan id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyClaim {
    pub repo: PlanKey,
    pub plan_id: PlanId,
    /// A fresh id per apply: two applies in one process are different owners.
    pub owner: String,
    /// The owning cascade process, and the host it runs on.
    pub pid: u32,
    pub host: String,
    /// When the owner last said it was alive (seconds since the epoch).
    pub heartbeat_at: i64,
}

/// The claim statements for one pool type (`$n` parameters: SQLite takes them too).
macro_rules! claim_queries {
    ($module:ident, $pool:ty) => {
        pub(super) mod $module {
            use super::ApplyClaim;
            use crate::plan::PlanId;
            use crate::store::PlanKey;

            type Pool = $pool;

            pub(in crate::store) async fn insert(
                pool: &Pool,
                claim: &ApplyClaim,
            ) -> anyhow::Result<Option<ApplyClaim>> {
                // The holder may release between the two statements: then insert again.
                for _ in 0..3 {
                    let done = sqlx::query(
                        "INSERT INTO apply_claims (repo, plan_id, owner, pid, host, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (repo, plan_id) DO NOTHING",
                    )
                    .bind(claim.repo.as_str())
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

            pub(in crate::store) async fn take_over(
                pool: &Pool,
                old: &ApplyClaim,
                new: &ApplyClaim,
            ) -> anyhow::Result<bool> {
                let done = sqlx::query(
                    "UPDATE apply_claims SET owner = $1, pid = $2, host = $3, heartbeat_at = $4
                     WHERE repo = $5 AND plan_id = $6 AND owner = $7 AND heartbeat_at = $8",
                )
                .bind(&new.owner)
                .bind(new.pid as i64)
                .bind(&new.host)
                .bind(new.heartbeat_at)
                .bind(old.repo.as_str())
                .bind(old.plan_id.as_str())
                .bind(&old.owner)
                .bind(old.heartbeat_at)
                .execute(pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            pub(in crate::store) async fn heartbeat(
                pool: &Pool,
                repo: &PlanKey,
                plan_id: &PlanId,
                owner: &str,
                now: i64,
            ) -> anyhow::Result<bool> {
                let done = sqlx::query(
                    "UPDATE apply_claims SET heartbeat_at = $1 WHERE repo = $2 AND plan_id = $3 AND owner = $4",
                )
                .bind(now)
                .bind(repo.as_str())
                .bind(plan_id.as_str())
                .bind(owner)
                .execute(pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            pub(in crate::store) async fn release(
                pool: &Pool,
                repo: &PlanKey,
                plan_id: &PlanId,
                owner: &str,
            ) -> anyhow::Result<()> {
                sqlx::query("DELETE FROM apply_claims WHERE repo = $1 AND plan_id = $2 AND owner = $3")
                    .bind(repo.as_str())
                    .bind(plan_id.as_str())
                    .bind(owner)
                    .execute(pool)
                    .await?;
                Ok(())
            }

            pub(in crate::store) async fn get(
                pool: &Pool,
                repo: &PlanKey,
                plan_id: &PlanId,
            ) -> anyhow::Result<Option<ApplyClaim>> {
                let row = sqlx::query("SELECT * FROM apply_claims WHERE repo = $1 AND plan_id = $2")
                    .bind(repo.as_str())
                    .bind(plan_id.as_str())
                    .fetch_optional(pool)
                    .await?;
                row.as_ref().map(crate::store::rows::apply_claim).transpose()
            }
        }
    };
}

claim_queries!(sqlite, sqlx::SqlitePool);
claim_queries!(postgres, sqlx::PgPool);
