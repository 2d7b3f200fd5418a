//! Pull requests waiting for others' unit locks, in SQLite. Level-based: a pull
//! request's rows are replaced whole at each plan, and who is to be planned again is
//! read from them and the locks, never from memory.

use sqlx::Row;
use sqlx::sqlite::SqlitePool;

pub(super) async fn set_waiting(
    pool: &SqlitePool,
    repo: &str,
    pr: u64,
    holders: &[u64],
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM waiting WHERE repo = ? AND pr = ?")
        .bind(repo)
        .bind(pr as i64)
        .execute(&mut *tx)
        .await?;
    for holder in holders.iter().filter(|h| **h != pr) {
        sqlx::query(
            "INSERT INTO waiting (repo, pr, holder) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .bind(repo)
        .bind(pr as i64)
        .bind(*holder as i64)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

pub(super) async fn waiting_for(
    pool: &SqlitePool,
    repo: &str,
    holder: u64,
) -> anyhow::Result<Vec<u64>> {
    let rows = sqlx::query("SELECT pr FROM waiting WHERE repo = ? AND holder = ? ORDER BY pr")
        .bind(repo)
        .bind(holder as i64)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<i64, _>("pr")? as u64))
        .collect()
}

pub(super) async fn released_waiters(pool: &SqlitePool) -> anyhow::Result<Vec<(String, u64)>> {
    let rows = sqlx::query(
        "SELECT DISTINCT w.repo, w.pr FROM waiting w
         WHERE NOT EXISTS (SELECT 1 FROM locks l WHERE l.repo = w.repo AND l.pr = w.holder)
         ORDER BY w.repo, w.pr",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("repo")?, r.try_get::<i64, _>("pr")? as u64)))
        .collect()
}
