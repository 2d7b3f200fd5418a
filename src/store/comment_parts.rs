//! The plan comment's parts after the first, in SQLite: their ids, replaced whole each
//! time the comment is posted, so the next plan edits them in place.

use sqlx::Row;
use sqlx::sqlite::SqlitePool;

pub(super) async fn comment_parts(
    pool: &SqlitePool,
    repo: &str,
    number: u64,
) -> anyhow::Result<Vec<u64>> {
    let rows = sqlx::query(
        "SELECT comment_id FROM comment_parts WHERE repo = ? AND number = ? ORDER BY part",
    )
    .bind(repo)
    .bind(number as i64)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<i64, _>("comment_id")? as u64))
        .collect()
}

pub(super) async fn set_comment_parts(
    pool: &SqlitePool,
    repo: &str,
    number: u64,
    ids: &[u64],
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM comment_parts WHERE repo = ? AND number = ?")
        .bind(repo)
        .bind(number as i64)
        .execute(&mut *tx)
        .await?;
    for (i, id) in ids.iter().enumerate() {
        sqlx::query(
            "INSERT INTO comment_parts (repo, number, part, comment_id) VALUES (?, ?, ?, ?)",
        )
        .bind(repo)
        .bind(number as i64)
        .bind(i as i64 + 2)
        .bind(*id as i64)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}
