//! The plan engine: plans a set of units in dependency order, binds the
//! result to one plan id, and applies exactly that plan — re-planning each
//! unit first and refusing any unit whose plan changed since approval.
//!
//! Owns the run lifecycle (run directories, resume after a crash, re-attaching
//! to applies a dead process left running, the plan record a reviewer
//! approves, the claim that lets one process at a time apply a plan id).
//! Knows terraform only through the `Executor` seam and persistence only
//! through the `RunStore` seam. Never applies a unit recorded `applied` again,
//! and never re-plans a unit whose apply may still be running.

mod apply_output;
mod apply_run;
mod claim;
mod current_plan;
pub mod failure_log;
mod plan_run;
mod policies;
mod since_approval;
mod state_run;
mod steps;
mod subset;
mod two_stage;

pub use apply_run::{ApplyError, ApplyOutcome, ApplyRecovery, UnitApply};
pub use claim::{LEASE_SECS, owner_alive, this_host};
pub use current_plan::{NotCurrent, Was};
pub use failure_log::{LogTail, MAX_LOG_TAILS};
pub use plan_run::PlanOutcome;
pub use policies::{PolicyCheck, compile_sets};
pub use since_approval::SinceApproval;
pub use steps::RunRules;
pub use subset::missing_dependencies;
// What the engine plans: built from discovery below it (`scan::targets`).
pub use crate::scan::{
    PlanTarget, UnitDir, head_targets, stack_dir, stack_path, targets, unit_dir,
};

use crate::clock::Clock;
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::store::{PlanKey, RunKind, RunRecord, RunStore, UnitRecord};
use crate::unit::UnitPath;
use anyhow::Context;
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the engine needs, shared by its runs.
pub struct Engine<E: Executor, S: RunStore> {
    pub executor: Arc<E>,
    pub store: Arc<S>,
    pub clock: Arc<dyn Clock>,
    /// Run directories live in `<data_dir>/runs/<run id>/`.
    pub data_dir: PathBuf,
    /// How many units run at once.
    pub parallelism: usize,
    /// The longest one command of a unit may take.
    pub timeout: Duration,
    /// The longest a unit's `init` may take.
    pub init_timeout: Duration,
    /// Fired on server shutdown: running applies get their grace period, then stop.
    pub shutdown: CancellationToken,
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Records a new run, with a fresh id and a private directory under the data directory.
    async fn new_run(
        &self,
        repo: &PlanKey,
        kind: RunKind,
        key: String,
    ) -> anyhow::Result<RunRecord> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = self.data_dir.join("runs").join(&id);
        // Private: it holds plan files and, while a command runs, its raw output.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create the run directory {}", dir.display()))?;
        let run = RunRecord {
            id,
            repo: repo.clone(),
            kind,
            key,
            dir: dir.display().to_string(),
            finished: false,
            created_at: self.clock.now(),
        };
        self.store.insert_run(&run).await?;
        Ok(run)
    }

    /// Deletes the saved plan files of plan `id` (terraform's `.tfplan`, which holds
    /// sensitive values in clear): those its plan run wrote and those the apply run of
    /// `id` wrote when it re-planned. Call it once the plan can no longer be applied as
    /// it is: consumed, superseded, discarded or its pull request closed. Nothing reads a
    /// plan run's files again (an apply plans afresh), so this never breaks a resume.
    pub async fn discard_plan_files(&self, repo: &PlanKey, id: &PlanId) -> anyhow::Result<()> {
        let mut runs = Vec::new();
        if let Some(plan) = self.store.plan(repo, id).await? {
            runs.push(self.data_dir.join("runs").join(&plan.run_id));
        }
        if let Some(run) = self
            .store
            .latest_run(repo, RunKind::Apply, id.as_str())
            .await?
        {
            runs.push(PathBuf::from(run.dir));
        }
        for plans in runs.iter().map(|run| run.join("plans")) {
            match tokio::fs::remove_dir_all(&plans).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot delete the saved plans of plan {id} in {}",
                            plans.display()
                        )
                    });
                }
            }
        }
        Ok(())
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
