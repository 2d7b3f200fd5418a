//! The plan comment's parts after the first, the same statements on both
//! backends: their ids, replaced whole each time the comment is posted (in the
//! caller's transaction), so the next plan edits them in place.

/// The statements for one connection type (`$n` parameters: SQLite takes them too).
macro_rules! comment_part_queries {
    ($module:ident, $connection:ty) => {
        pub(super) mod $module {
            type Connection = $connection;

            pub(in crate::store) async fn comment_parts(
                conn: &mut Connection,
                repo: &str,
                number: u64,
            ) -> anyhow::Result<Vec<u64>> {
                let ids: Vec<i64> = sqlx::query_scalar(
                    "SELECT comment_id FROM comment_parts WHERE repo = $1 AND number = $2 ORDER BY part",
                )
                .bind(repo)
                .bind(number as i64)
                .fetch_all(conn)
                .await?;
                Ok(ids.into_iter().map(|id| id as u64).collect())
            }

            /// Replaces the ids of parts 2, 3, … (inside the caller's transaction).
            pub(in crate::store) async fn set_comment_parts(
                conn: &mut Connection,
                repo: &str,
                number: u64,
                ids: &[u64],
            ) -> anyhow::Result<()> {
                sqlx::query("DELETE FROM comment_parts WHERE repo = $1 AND number = $2")
                    .bind(repo)
                    .bind(number as i64)
                    .execute(&mut *conn)
                    .await?;
                for (i, id) in ids.iter().enumerate() {
                    sqlx::query(
                        "INSERT INTO comment_parts (repo, number, part, comment_id) VALUES ($1, $2, $3, $4)",
                    )
                    .bind(repo)
                    .bind(number as i64)
                    .bind(i as i64 + 2)
                    .bind(*id as i64)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            }
        }
    };
}

comment_part_queries!(sqlite, sqlx::SqliteConnection);
comment_part_queries!(postgres, sqlx::PgConnection);
