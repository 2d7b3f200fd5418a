//! Replicas sharing one database: delivery claims and pull request leases,
//! the same statements on both backends (SQLite runs them too, so one server
//! and many take one code path).
//!
//! A delivery is claimed by the replica that stored it, until a time that
//! replica keeps pushing forward while it has the delivery in hand. A claim
//! that ran out is a dead replica's: another takes it in one statement
//! (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once take
//! disjoint sets). A pull request's jobs run under a lease taken by an
//! upsert that only succeeds on a free, expired or own row, so they stay one
//! at a time across replicas. Times are the caller's (seconds since the
//! epoch): the store holds no clock, and the tests move time by hand.

/// The statements for one pool type; `$claim` is the backend's statement for
/// taking expired delivery claims (`$1` owner, `$2` until, `$3` now, `$4`
/// limit), `$ids` its set of ids from a JSON array of strings.
macro_rules! lease_queries {
    ($module:ident, $pool:ty, $claim:literal, $ids:literal) => {
        pub(super) mod $module {
            use crate::event::DeliveryId;
            use crate::store::{DeliveryRecord, ReplicaId};

            type Pool = $pool;

            pub(in crate::store) async fn claim_deliveries(
                pool: &Pool,
                owner: &ReplicaId,
                now: i64,
                until: i64,
                limit: u32,
            ) -> anyhow::Result<Vec<DeliveryRecord>> {
                let rows = sqlx::query($claim)
                    .bind(owner.as_str())
                    .bind(until)
                    .bind(now)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?;
                let mut claimed = Vec::with_capacity(rows.len());
                for row in &rows {
                    let order: i64 = sqlx::Row::try_get(row, "arrival")?;
                    claimed.push((order, crate::store::rows::delivery(row)?));
                }
                // RETURNING has no order: oldest first, as they arrived.
                claimed.sort_by_key(|(order, d)| (d.received_at, *order));
                Ok(claimed.into_iter().map(|(_, d)| d).collect())
            }

            pub(in crate::store) async fn renew_deliveries(
                pool: &Pool,
                owner: &ReplicaId,
                ids: &[DeliveryId],
                until: i64,
            ) -> anyhow::Result<u64> {
                if ids.is_empty() {
                    return Ok(0);
                }
                let done = sqlx::query(concat!(
                    "UPDATE deliveries SET claimed_until = $1 WHERE owner = $2 AND status = 'received' AND id IN ",
                    $ids
                ))
                .bind(until)
                .bind(owner.as_str())
                .bind(serde_json::to_string(
                    &ids.iter().map(DeliveryId::as_str).collect::<Vec<_>>(),
                )?)
                .execute(pool)
                .await?;
                Ok(done.rows_affected())
            }

            pub(in crate::store) async fn take_pr_lease(
                pool: &Pool,
                repo: &str,
                number: u64,
                owner: &ReplicaId,
                now: i64,
                until: i64,
            ) -> anyhow::Result<bool> {
                // On PostgreSQL a second taker waits for the first's row lock and
                // re-checks the WHERE against the row the first wrote: one wins.
                let done = sqlx::query(
                    "INSERT INTO pr_leases (repo, number, owner, expires_at, superseded) VALUES ($1, $2, $3, $4, 0)
                     ON CONFLICT (repo, number) DO UPDATE
                     SET owner = excluded.owner, expires_at = excluded.expires_at, superseded = 0
                     WHERE pr_leases.owner = excluded.owner OR pr_leases.expires_at < $5",
                )
                .bind(repo)
                .bind(number as i64)
                .bind(owner.as_str())
                .bind(until)
                .bind(now)
                .execute(pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            pub(in crate::store) async fn renew_pr_lease(
                pool: &Pool,
                repo: &str,
                number: u64,
                owner: &ReplicaId,
                until: i64,
            ) -> anyhow::Result<Option<bool>> {
                let superseded: Option<i64> = sqlx::query_scalar(
                    "UPDATE pr_leases SET expires_at = $1 WHERE repo = $2 AND number = $3 AND owner = $4
                     RETURNING superseded",
                )
                .bind(until)
                .bind(repo)
                .bind(number as i64)
                .bind(owner.as_str())
                .fetch_optional(pool)
                .await?;
                Ok(superseded.map(|s| s != 0))
            }

            pub(in crate::store) async fn release_pr_lease(
                pool: &Pool,
                repo: &str,
                number: u64,
                owner: &ReplicaId,
            ) -> anyhow::Result<()> {
                sqlx::query("DELETE FROM pr_leases WHERE repo = $1 AND number = $2 AND owner = $3")
                    .bind(repo)
                    .bind(number as i64)
                    .bind(owner.as_str())
                    .execute(pool)
                    .await?;
                Ok(())
            }

            pub(in crate::store) async fn supersede_pr(
                pool: &Pool,
                repo: &str,
                number: u64,
                owner: &ReplicaId,
            ) -> anyhow::Result<bool> {
                let done = sqlx::query(
                    "UPDATE pr_leases SET superseded = 1 WHERE repo = $1 AND number = $2 AND owner <> $3",
                )
                .bind(repo)
                .bind(number as i64)
                .bind(owner.as_str())
                .execute(pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }
        }
    };
}

lease_queries!(
    sqlite,
    sqlx::SqlitePool,
    "UPDATE deliveries SET owner = $1, claimed_until = $2
     WHERE id IN (SELECT id FROM deliveries
                  WHERE status = 'received' AND (claimed_until IS NULL OR claimed_until < $3)
                  ORDER BY received_at, rowid LIMIT $4)
     RETURNING *, rowid AS arrival",
    "(SELECT value FROM json_each($3))"
);
lease_queries!(
    postgres,
    sqlx::PgPool,
    "UPDATE deliveries SET owner = $1, claimed_until = $2
     WHERE id IN (SELECT id FROM deliveries
                  WHERE status = 'received' AND (claimed_until IS NULL OR claimed_until < $3)
                  ORDER BY received_at, seq LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *, seq AS arrival",
    "(SELECT jsonb_array_elements_text($3::jsonb))"
);
