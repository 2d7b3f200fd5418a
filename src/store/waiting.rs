//! Pull requests waiting for others' unit locks, the same statements on both
//! backends. Level-based: a pull request's rows are replaced whole at each plan,
//! and who is to be planned again is read from them and the locks, never from
//! memory. The replacing runs in the caller's transaction (on PostgreSQL after
//! the repository's advisory lock, so two replicas' replacements do not mix).

/// The statements for one connection type (`$n` parameters: SQLite takes them too).
macro_rules! waiting_queries {
    ($module:ident, $connection:ty) => {
        pub(super) mod $module {
            type Connection = $connection;

            /// Replaces what `pr` waits for (inside the caller's transaction).
            pub(in crate::store) async fn set_waiting(
                conn: &mut Connection,
                repo: &str,
                pr: u64,
                holders: &[u64],
            ) -> anyhow::Result<()> {
                sqlx::query("DELETE FROM waiting WHERE repo = $1 AND pr = $2")
                    .bind(repo)
                    .bind(pr as i64)
                    .execute(&mut *conn)
                    .await?;
                for holder in holders.iter().filter(|h| **h != pr) {
                    sqlx::query(
                        "INSERT INTO waiting (repo, pr, holder) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    )
                    .bind(repo)
                    .bind(pr as i64)
                    .bind(*holder as i64)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            }

            pub(in crate::store) async fn waiting_for(
                conn: &mut Connection,
                repo: &str,
                holder: u64,
            ) -> anyhow::Result<Vec<u64>> {
                let prs: Vec<i64> = sqlx::query_scalar(
                    "SELECT pr FROM waiting WHERE repo = $1 AND holder = $2 ORDER BY pr",
                )
                .bind(repo)
                .bind(holder as i64)
                .fetch_all(conn)
                .await?;
                Ok(prs.into_iter().map(|pr| pr as u64).collect())
            }

            pub(in crate::store) async fn released_waiters(
                conn: &mut Connection,
            ) -> anyhow::Result<Vec<(String, u64)>> {
                let rows: Vec<(String, i64)> = sqlx::query_as(
                    "SELECT DISTINCT w.repo, w.pr FROM waiting w
                     WHERE NOT EXISTS (SELECT 1 FROM locks l WHERE l.repo = w.repo AND l.pr = w.holder)
                     ORDER BY w.repo, w.pr",
                )
                .fetch_all(conn)
                .await?;
                Ok(rows.into_iter().map(|(repo, pr)| (repo, pr as u64)).collect())
            }
        }
    };
}

waiting_queries!(sqlite, sqlx::SqliteConnection);
waiting_queries!(postgres, sqlx::PgConnection);
