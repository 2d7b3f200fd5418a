//! The schema of each backend, embedded in the binary: `migrations/*.sql` for
//! SQLite and their twins in `migrations/postgres/` for PostgreSQL. Every
//! migration has a twin with the same number and name (a test holds the two
//! sets and the directories to that), so one schema change is one pair.
//!
//! This module never runs a migration itself: each backend runs its set at
//! open (PostgreSQL under an advisory lock, see `postgres.rs`).

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// One embedded migration: its number, name and SQL.
pub(super) type Embedded = (i64, &'static str, &'static str);

/// The SQLite schema, in order.
pub(super) const SQLITE: &[Embedded] = &[
    (1, "runs", include_str!("../../migrations/0001_runs.sql")),
    (2, "bot", include_str!("../../migrations/0002_bot.sql")),
    (
        3,
        "apply_claims",
        include_str!("../../migrations/0003_apply_claims.sql"),
    ),
    (
        4,
        "delivery_attempts",
        include_str!("../../migrations/0004_delivery_attempts.sql"),
    ),
    (
        5,
        "unit_rendered",
        include_str!("../../migrations/0005_unit_rendered.sql"),
    ),
    (
        6,
        "waiting_and_comment_parts",
        include_str!("../../migrations/0006_waiting_and_comment_parts.sql"),
    ),
    (
        7,
        "replicas",
        include_str!("../../migrations/0007_replicas.sql"),
    ),
    (
        8,
        "unit_retries",
        include_str!("../../migrations/0008_unit_retries.sql"),
    ),
    (9, "drift", include_str!("../../migrations/0009_drift.sql")),
    (
        10,
        "pushers",
        include_str!("../../migrations/0010_pushers.sql"),
    ),
    (
        11,
        "unit_steps",
        include_str!("../../migrations/0011_unit_steps.sql"),
    ),
    (
        12,
        "policy_approvals",
        include_str!("../../migrations/0012_policy_approvals.sql"),
    ),
    (
        13,
        "plan_policies",
        include_str!("../../migrations/0013_plan_policies.sql"),
    ),
];

/// The PostgreSQL schema, in order: the twins of [`SQLITE`].
pub(super) const POSTGRES: &[Embedded] = &[
    (
        1,
        "runs",
        include_str!("../../migrations/postgres/0001_runs.sql"),
    ),
    (
        2,
        "bot",
        include_str!("../../migrations/postgres/0002_bot.sql"),
    ),
    (
        3,
        "apply_claims",
        include_str!("../../migrations/postgres/0003_apply_claims.sql"),
    ),
    (
        4,
        "delivery_attempts",
        include_str!("../../migrations/postgres/0004_delivery_attempts.sql"),
    ),
    (
        5,
        "unit_rendered",
        include_str!("../../migrations/postgres/0005_unit_rendered.sql"),
    ),
    (
        6,
        "waiting_and_comment_parts",
        include_str!("../../migrations/postgres/0006_waiting_and_comment_parts.sql"),
    ),
    (
        7,
        "replicas",
        include_str!("../../migrations/postgres/0007_replicas.sql"),
    ),
    (
        8,
        "unit_retries",
        include_str!("../../migrations/postgres/0008_unit_retries.sql"),
    ),
    (
        9,
        "drift",
        include_str!("../../migrations/postgres/0009_drift.sql"),
    ),
    (
        10,
        "pushers",
        include_str!("../../migrations/postgres/0010_pushers.sql"),
    ),
    (
        11,
        "unit_steps",
        include_str!("../../migrations/postgres/0011_unit_steps.sql"),
    ),
    (
        12,
        "policy_approvals",
        include_str!("../../migrations/postgres/0012_policy_approvals.sql"),
    ),
    (
        13,
        "plan_policies",
        include_str!("../../migrations/postgres/0013_plan_policies.sql"),
    ),
];

/// A migrator over one embedded set (sqlx's default: each migration in its own
/// transaction, and on PostgreSQL an advisory lock around the whole run).
pub(super) fn migrator(set: &'static [Embedded]) -> Migrator {
    Migrator::with_migrations(
        set.iter()
            .map(|&(version, name, sql)| {
                Migration::new(
                    version,
                    name.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// `NNNN_name.sql` files of a directory, sorted.
    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        names.sort();
        names
    }

    fn names(set: &[Embedded]) -> Vec<String> {
        set.iter()
            .map(|(v, name, _)| format!("{v:04}_{name}.sql"))
            .collect()
    }

    #[test]
    fn every_migration_file_is_embedded_and_has_a_postgres_twin() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        assert_eq!(
            names(SQLITE),
            files(&root),
            "embed every migrations/*.sql in SQLITE"
        );
        assert_eq!(
            names(POSTGRES),
            files(&root.join("postgres")),
            "embed every migrations/postgres/*.sql in POSTGRES"
        );
        assert_eq!(
            names(SQLITE),
            names(POSTGRES),
            "each SQLite migration needs its PostgreSQL twin (same number and name) in migrations/postgres/"
        );
    }
}
