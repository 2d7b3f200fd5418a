//! Rows to records, once for both backends: the column names and the JSON
//! kept in text columns are the same in SQLite and PostgreSQL, so each record
//! is decoded by one function whatever row it comes from.

use super::{
    ApplyClaim, DeliveryRecord, DeliveryStatus, Lock, PlanRecord, PlanStatus, PrState,
    PullRequestRecord, RunKind, RunRecord, UnitRecord, UnitStatus,
};
use super::{PlanKey, ReplicaId};
use crate::event::DeliveryId;
use crate::plan::PlanId;
use crate::unit::UnitPath;
use anyhow::Context;
use sqlx::Row;

/// The column types the store reads.
pub(super) trait StoredRow {
    fn text(&self, column: &str) -> anyhow::Result<String>;
    fn maybe_text(&self, column: &str) -> anyhow::Result<Option<String>>;
    fn int(&self, column: &str) -> anyhow::Result<i64>;
    fn maybe_int(&self, column: &str) -> anyhow::Result<Option<i64>>;
    fn bytes(&self, column: &str) -> anyhow::Result<Vec<u8>>;
}

macro_rules! stored_row {
    ($($row:ty),*) => {$(
        impl StoredRow for $row {
            fn text(&self, column: &str) -> anyhow::Result<String> {
                Ok(self.try_get(column)?)
            }
            fn maybe_text(&self, column: &str) -> anyhow::Result<Option<String>> {
                Ok(self.try_get(column)?)
            }
            fn int(&self, column: &str) -> anyhow::Result<i64> {
                Ok(self.try_get(column)?)
            }
            fn maybe_int(&self, column: &str) -> anyhow::Result<Option<i64>> {
                Ok(self.try_get(column)?)
            }
            fn bytes(&self, column: &str) -> anyhow::Result<Vec<u8>> {
                Ok(self.try_get(column)?)
            }
        }
    )*};
}

stored_row!(sqlx::sqlite::SqliteRow, sqlx::postgres::PgRow);

/// A value kept as JSON text (summaries, renderings, plan units).
pub(super) fn json<T: serde::Serialize>(value: Option<&T>) -> anyhow::Result<Option<String>> {
    Ok(value.map(serde_json::to_string).transpose()?)
}

pub(super) fn run(row: &impl StoredRow, kind: RunKind) -> anyhow::Result<RunRecord> {
    Ok(RunRecord {
        id: row.text("id")?,
        repo: PlanKey::from_stored(row.text("repo")?),
        kind,
        key: row.text("key")?,
        dir: row.text("dir")?,
        finished: row.text("status")? == "finished",
        created_at: row.int("created_at")?,
    })
}

pub(super) fn unit_record(row: &impl StoredRow) -> anyhow::Result<UnitRecord> {
    let status = row.text("status")?;
    Ok(UnitRecord {
        unit: UnitPath::new(row.text("unit")?),
        status: UnitStatus::parse(&status)
            .with_context(|| format!("unknown unit status {status}"))?,
        detail: row.text("detail")?,
        summary: row
            .maybe_text("summary")?
            .map(|s| serde_json::from_str(&s))
            .transpose()?,
        rendered: row
            .maybe_text("rendered")?
            .map(|s| serde_json::from_str(&s))
            .transpose()?,
        retried: u32::try_from(row.int("retried")?).unwrap_or(0),
        retry_at: row.maybe_int("retry_at")?,
        steps: row
            .maybe_text("steps")?
            .map(|s| serde_json::from_str(&s))
            .transpose()?
            .unwrap_or_default(),
        policies: row
            .maybe_text("policies")?
            .map(|s| serde_json::from_str(&s))
            .transpose()?
            .unwrap_or_default(),
    })
}

pub(super) fn plan(row: &impl StoredRow) -> anyhow::Result<PlanRecord> {
    Ok(PlanRecord {
        id: PlanId::from_stored(row.text("id")?),
        repo: PlanKey::from_stored(row.text("repo")?),
        head: row.text("head")?,
        base: row.text("base")?,
        status: PlanStatus::parse(&row.text("status")?),
        run_id: row.text("run_id")?,
        units: serde_json::from_str(&row.text("units")?)
            .context("a stored plan does not decode")?,
        created_at: row.int("created_at")?,
        policies: row
            .maybe_text("policies")?
            .map(|s| serde_json::from_str(&s))
            .transpose()
            .context("a stored plan's policy findings do not decode")?
            .unwrap_or_default(),
    })
}

pub(super) fn delivery(row: &impl StoredRow) -> anyhow::Result<DeliveryRecord> {
    Ok(DeliveryRecord {
        id: DeliveryId::from_stored(row.text("id")?),
        event: row.text("event")?,
        body: row.bytes("body")?,
        status: DeliveryStatus::parse(&row.text("status")?),
        received_at: row.int("received_at")?,
        owner: row.maybe_text("owner")?.map(ReplicaId::from_stored),
        claimed_until: row.maybe_int("claimed_until")?.unwrap_or(0),
    })
}

pub(super) fn pull_request(row: &impl StoredRow) -> anyhow::Result<PullRequestRecord> {
    let state = row.text("state")?;
    Ok(PullRequestRecord {
        repo: row.text("repo")?,
        number: row.int("number")? as u64,
        installation_id: row.int("installation_id")? as u64,
        head_sha: row.text("head_sha")?,
        base_sha: row.text("base_sha")?,
        state: PrState::parse(&state)
            .with_context(|| format!("unknown pull request state {state}"))?,
        plan_id: row.maybe_text("plan_id")?.map(PlanId::from_stored),
        comment_id: row.maybe_int("comment_id")?.map(|c| c as u64),
        check_run_id: row.maybe_int("check_run_id")?.map(|c| c as u64),
        updated_at: row.int("updated_at")?,
    })
}

pub(super) fn lock(row: &impl StoredRow) -> anyhow::Result<Lock> {
    Ok(Lock {
        unit: UnitPath::new(row.text("unit")?),
        pr: row.int("pr")? as u64,
    })
}

pub(super) fn apply_claim(row: &impl StoredRow) -> anyhow::Result<ApplyClaim> {
    Ok(ApplyClaim {
        repo: PlanKey::from_stored(row.text("repo")?),
        plan_id: PlanId::from_stored(row.text("plan_id")?),
        owner: row.text("owner")?,
        pid: row.int("pid")? as u32,
        host: row.text("host")?,
        heartbeat_at: row.int("heartbeat_at")?,
    })
}

/// A count the store keeps as an integer, as the `u32` callers use.
pub(super) fn count(n: Option<i64>) -> u32 {
    n.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text each status is stored as: databases written by earlier versions must read
    /// back the same, so these never change.
    #[test]
    fn stored_names_are_the_ones_databases_hold() {
        let runs = [RunKind::Plan, RunKind::Apply].map(RunKind::as_str);
        assert_eq!(runs, ["plan", "apply"]);
        use UnitStatus::*;
        let units = [
            Planning,
            Planned,
            Failed,
            Skipped,
            Applying,
            Applied,
            Unchanged,
            ChangedSinceApproval,
            Cancelled,
        ];
        assert_eq!(
            units.map(UnitStatus::as_str),
            [
                "planning",
                "planned",
                "failed",
                "skipped",
                "applying",
                "applied",
                "unchanged",
                "changed-since-approval",
                "cancelled",
            ]
        );
        for status in units {
            assert_eq!(UnitStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(UnitStatus::parse("Planned"), None);
        let plans = [
            PlanStatus::Current,
            PlanStatus::Superseded,
            PlanStatus::Consumed,
        ];
        assert_eq!(
            plans.map(PlanStatus::as_str),
            ["current", "superseded", "consumed"]
        );
        for status in plans {
            assert_eq!(PlanStatus::parse(status.as_str()), status);
        }
        assert_eq!(PlanStatus::parse("archived"), PlanStatus::Current);
        let deliveries = [
            DeliveryStatus::Received,
            DeliveryStatus::Processed,
            DeliveryStatus::Ignored,
            DeliveryStatus::Failed,
        ];
        assert_eq!(
            deliveries.map(DeliveryStatus::as_str),
            ["received", "processed", "ignored", "failed"]
        );
        for status in deliveries {
            assert_eq!(DeliveryStatus::parse(status.as_str()), status);
        }
        assert_eq!(DeliveryStatus::parse("lost"), DeliveryStatus::Received);
        let states = [
            PrState::Discovering,
            PrState::Planning,
            PrState::Commented,
            PrState::Applying,
            PrState::Applied,
            PrState::Failed,
            PrState::Closed,
            PrState::NotServed,
        ];
        assert_eq!(
            states.map(PrState::as_str),
            [
                "discovering",
                "planning",
                "commented",
                "applying",
                "applied",
                "failed",
                "closed",
                "not_served",
            ]
        );
        for state in states {
            assert_eq!(PrState::parse(state.as_str()), Some(state));
        }
        assert_eq!(PrState::parse("notserved"), None);
    }
}
