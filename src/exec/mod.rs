//! Running terraform, tofu or terragrunt in a unit: the process seam.
//!
//! Owns the command lines, the environment (non-interactive, no colour, no
//! checkpoint calls, one shared plugin cache), timeouts and signals, and the
//! per-unit logs. The plan JSON from `show -json` is read through a pipe into
//! memory and handed back: it is never written to disk or to a log. An apply
//! that has started is never killed on cancel; only a shutdown, after its
//! grace period, stops it.

mod command;
mod process;
mod redact;

pub use command::{Step, command_line};
pub use process::ProcessExecutor;
pub use redact::redact;

use crate::config::Executor as Tool;
use crate::unit::UnitPath;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything needed to run one unit's commands.
#[derive(Clone, Debug)]
pub struct UnitJob {
    pub unit: UnitPath,
    /// The directory the tool runs in (absolute).
    pub dir: PathBuf,
    pub tool: Tool,
    /// The saved plan file, inside the run's private directory.
    pub plan_file: PathBuf,
    /// The unit's log file: `<run>/<wave>_<unit with / as -->.log`.
    pub log: PathBuf,
    /// Plan a destroy (a unit the change deletes).
    pub destroy: bool,
    /// Extra `init` arguments (a deleted unit's local state, for instance).
    pub init_args: Vec<String>,
    /// The longest any single command may run.
    pub timeout: Duration,
}

/// Why a command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("`{command}` failed (exit code {code}): {excerpt}")]
    Failed {
        command: String,
        code: i32,
        excerpt: String,
    },
    #[error("`{command}` timed out after {seconds} s")]
    TimedOut { command: String, seconds: u64 },
    #[error("cancelled")]
    Cancelled,
    #[error("cannot run `{command}`: {source}; is it installed and on PATH?")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot write the log {path}: {source}")]
    Log {
        path: String,
        source: std::io::Error,
    },
}

/// The process seam. The real implementation runs binaries; tests script outcomes.
pub trait Executor: Send + Sync + 'static {
    /// Initialises when needed, plans into `job.plan_file`, and returns the
    /// plan as `show -json` bytes, held in memory only. `cancel` stops it
    /// (SIGTERM, then SIGKILL after the grace period).
    fn plan(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<Vec<u8>, ExecError>> + Send;

    /// Applies exactly the saved plan file. Cancellation is not offered: a
    /// running apply is only stopped by `shutdown`, after the grace period.
    fn apply(
        &self,
        job: &UnitJob,
        shutdown: &CancellationToken,
    ) -> impl Future<Output = Result<(), ExecError>> + Send;
}
