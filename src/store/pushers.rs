//! Who pushed to each pull request, as its webhook events said, the same statements on
//! both backends. A push is recorded once per person (the first head they pushed is
//! kept) and never forgotten while the store lives: an approval counts only from
//! someone who did not push, and a later force-push that drops their commits does not
//! make them an independent reviewer. Nothing here decides whose approval counts.

/// Someone who pushed to a pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pusher {
    /// The login (GitHub) or username (GitLab) as the event spelled it.
    pub login: String,
    /// The forge's user id, where the event carried it (GitLab's hooks do).
    pub user_id: Option<u64>,
    /// The head of the first push recorded for them.
    pub head_sha: String,
}

/// The statements for one connection type (`$n` parameters: SQLite takes them too).
macro_rules! pusher_queries {
    ($module:ident, $connection:ty) => {
        pub(super) mod $module {
            use super::Pusher;

            type Connection = $connection;

            /// Records `pusher` on the pull request; one already recorded keeps its row.
            pub(in crate::store) async fn add_pusher(
                conn: &mut Connection,
                repo: &str,
                number: u64,
                pusher: &Pusher,
            ) -> anyhow::Result<()> {
                sqlx::query(
                    "INSERT INTO pushers (repo, number, login, user_id, head_sha)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                )
                .bind(repo)
                .bind(number as i64)
                .bind(&pusher.login)
                .bind(pusher.user_id.map(|id| id as i64))
                .bind(&pusher.head_sha)
                .execute(conn)
                .await?;
                Ok(())
            }

            /// Everyone recorded as having pushed to the pull request, by login.
            pub(in crate::store) async fn pushers(
                conn: &mut Connection,
                repo: &str,
                number: u64,
            ) -> anyhow::Result<Vec<Pusher>> {
                let rows: Vec<(String, Option<i64>, String)> = sqlx::query_as(
                    "SELECT login, user_id, head_sha FROM pushers
                     WHERE repo = $1 AND number = $2 ORDER BY login",
                )
                .bind(repo)
                .bind(number as i64)
                .fetch_all(conn)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(login, user_id, head_sha)| Pusher {
                        login,
                        user_id: user_id.map(|id| id as u64),
                        head_sha,
                    })
                    .collect())
            }
        }
    };
}

pusher_queries!(sqlite, sqlx::SqliteConnection);
pusher_queries!(postgres, sqlx::PgConnection);
