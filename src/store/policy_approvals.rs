//! Policy approvals: who approved which policy set's failures for which plan id
//! (`/approve-policies <id>`), the same statements on both backends. An approval is
//! bound to its plan id: a new push or a changed fingerprint makes a new id, which no
//! approval names, so nothing here ever clears one. Approving twice keeps the first.
//! Nothing here decides who may approve.

/// One owner's approval of one policy set's failures for one plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyApproval {
    /// The policy set's name (`.cascade.yaml` `policies:`).
    pub set: String,
    /// The approver's login (GitHub) or username (GitLab), as the comment's event spelled it.
    pub user: String,
    /// When it was recorded (seconds since the epoch).
    pub at: i64,
}

/// The statements for one connection type (`$n` parameters: SQLite takes them too).
macro_rules! policy_approval_queries {
    ($module:ident, $connection:ty) => {
        pub(super) mod $module {
            use super::PolicyApproval;

            type Connection = $connection;

            /// Records `approval` of plan `plan_id` of `key`; an approval of the same set
            /// by the same user keeps its first row.
            pub(in crate::store) async fn approve_policies(
                conn: &mut Connection,
                key: &str,
                plan_id: &str,
                approval: &PolicyApproval,
            ) -> anyhow::Result<()> {
                sqlx::query(
                    "INSERT INTO policy_approvals (plan_key, plan_id, policy_set, login, approved_at)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                )
                .bind(key)
                .bind(plan_id)
                .bind(&approval.set)
                .bind(&approval.user)
                .bind(approval.at)
                .execute(conn)
                .await?;
                Ok(())
            }

            /// Every approval recorded for plan `plan_id` of `key`, by set then user.
            pub(in crate::store) async fn policy_approvals(
                conn: &mut Connection,
                key: &str,
                plan_id: &str,
            ) -> anyhow::Result<Vec<PolicyApproval>> {
                let rows: Vec<(String, String, i64)> = sqlx::query_as(
                    "SELECT policy_set, login, approved_at FROM policy_approvals
                     WHERE plan_key = $1 AND plan_id = $2 ORDER BY policy_set, login",
                )
                .bind(key)
                .bind(plan_id)
                .fetch_all(conn)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(set, user, at)| PolicyApproval { set, user, at })
                    .collect())
            }
        }
    };
}

policy_approval_queries!(sqlite, sqlx::SqliteConnection);
policy_approval_queries!(postgres, sqlx::PgConnection);
