//! The plan engine: plans a set of units in dependency order, binds the
//! result to one plan id, and applies exactly that plan — re-planning each
//! unit first and refusing any unit whose plan changed since approval.
//!
//! Owns the run lifecycle (run directories, resume after a crash, the plan
//! record a reviewer approves). Knows terraform only through the `Executor`
//! seam and persistence only through the `Store` seam.

mod apply_run;
mod plan_run;
mod targets;
pub mod views;

pub use apply_run::{ApplyError, ApplyOutcome, UnitApply};
pub use plan_run::PlanOutcome;
pub use targets::{PlanTarget, targets};

use crate::exec::Executor;
use crate::store::{Clock, RunKind, RunRecord, Store, UnitRecord};
use crate::unit::UnitPath;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the engine needs, shared by its runs.
pub struct Engine<E: Executor, S: Store> {
    pub executor: Arc<E>,
    pub store: Arc<S>,
    pub clock: Arc<dyn Clock>,
    /// Run directories live in `<data_dir>/runs/<run id>/`.
    pub data_dir: PathBuf,
    /// How many units run at once.
    pub parallelism: usize,
    /// The longest one command of a unit may take.
    pub timeout: Duration,
    /// Fired on server shutdown: running applies get their grace period, then stop.
    pub shutdown: CancellationToken,
}

/// A unit's name as a file name: `/` becomes `--`, `.` (the root) becomes `root`.
pub fn slug(unit: &UnitPath) -> String {
    if unit.as_str() == "." {
        "root".into()
    } else {
        unit.as_str().replace('/', "--").replace("..", "up")
    }
}

impl<E: Executor, S: Store> Engine<E, S> {
    /// Records a new run, with a fresh id and a private directory under the data directory.
    async fn new_run(&self, repo: &str, kind: RunKind, key: String) -> anyhow::Result<RunRecord> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = self.data_dir.join("runs").join(&id);
        let run = RunRecord {
            id,
            repo: repo.to_string(),
            kind,
            key,
            dir: dir.display().to_string(),
            finished: false,
            created_at: self.clock.now(),
        };
        self.store.insert_run(&run).await?;
        Ok(run)
    }

    /// What a run has recorded so far, by unit.
    async fn unit_results(&self, run_id: &str) -> anyhow::Result<BTreeMap<UnitPath, UnitRecord>> {
        Ok(self
            .store
            .unit_records(run_id)
            .await?
            .into_iter()
            .map(|r| (r.unit.clone(), r))
            .collect())
    }
}
