//! A hand-made state change in the process executor (`/import`, `/state rm`): the unit
//! checked and initialised as a plan's is, `state list` before and after, the change
//! itself between, each command detached in the sandbox within the job's timeout, as
//! `run` runs every command.
//!
//! Owns only the order of those commands and reading `state list`. Never runs a change
//! the job does not carry (`Step::StateChange` without one only lists).

use super::{ProcessExecutor, Stop, needs_init};
use crate::exec::command::Step;
use crate::exec::preflight;
use crate::exec::{ExecError, StateDiff, UnitJob};
use tokio_util::sync::CancellationToken;

impl ProcessExecutor {
    /// The addresses in the unit's state (`state list`), in a slot of its own. No state
    /// yet (terraform's "No state file was found!") is an empty state.
    async fn state_list(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<Vec<String>, ExecError> {
        let _slot = self.slot().await;
        match self.run(job, Step::StateList, Stop::Cancel(cancel)).await {
            Ok((mut listed, _)) => Ok(String::from_utf8_lossy(&listed.take_bytes())
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_string)
                .collect()),
            Err(ExecError::Failed { excerpt, .. })
                if excerpt.contains("No state file was found") =>
            {
                Ok(Vec::new())
            }
            Err(e) => Err(e),
        }
    }

    /// Checks and initialises the unit as a plan does, lists its state, makes the job's
    /// state change, and lists the state again: what the change added and removed.
    pub(super) async fn change_unit_state(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<StateDiff, ExecError> {
        self.ready(job)?;
        preflight::check(job, &self.tracked, &self.records)?;
        self.job_vars(job)?;
        let initialised = self.records.initialised(job);
        if !initialised {
            self.init(job, cancel).await?;
        }
        let before = match self.state_list(job, cancel).await {
            Err(e) if initialised && needs_init(&e) => {
                self.init(job, cancel).await?;
                self.state_list(job, cancel).await?
            }
            other => other?,
        };
        {
            let _slot = self.slot().await;
            self.run(job, Step::StateChange, Stop::Cancel(cancel))
                .await?;
        }
        let after = self.state_list(job, cancel).await?;
        Ok(StateDiff::between(&before, &after))
    }
}
