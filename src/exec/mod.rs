//! Running terraform, tofu or terragrunt in a unit: the process seam.
//!
//! Owns the command lines, the environment (an allow-list of the server's
//! variables, the operator's per-unit variables for the job's phase and those
//! the unit's workflow selects or sets, non-interactive, no colour, no
//! checkpoint calls, one shared plugin cache), timeouts and signals, and the
//! per-unit logs. It also runs a workflow's `run` steps, under the same rules.
//! The plan JSON from `show -json` is read through a pipe into memory and
//! handed back (and to a step that asks, through a pipe): it is never written
//! to disk or to a log.
//!
//! Every command runs in its own process group with its output going to a
//! file in the run's private directory (mode 0700), so an apply outlives a
//! crash of cascade and a restarted cascade re-attaches to it
//! ([`Executor::resume_apply`]). The raw output stays there only until it has
//! been redacted into the unit's log; nothing unredacted is kept afterwards.
//! An apply that has started is never stopped on cancel; only a shutdown,
//! after its grace period, stops it. Stopping signals the whole group:
//! SIGTERM, then SIGKILL after the grace period.

mod command;
mod denied;
mod diagnostics;
mod env;
mod job_env;
mod log;
mod plan_json;
pub mod policy_worker;
mod preflight;
mod process;
pub mod sandbox;
mod step_process;
mod unit_env;

pub use crate::redact::redact;
pub use command::{Step, command_line};
pub use denied::Refused;
pub use env::{ChildEnv, set_default_pass_env};
pub use plan_json::{DEFAULT_MAX_PLAN_JSON_MIB, DEFAULT_PLAN_MEMORY_MIB, PlanJson, PlanLimits};
pub use process::ProcessExecutor;
pub use unit_env::UnitEnv;

use crate::unit::Tool;
use crate::unit::UnitPath;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything needed to run one unit's commands.
#[derive(Clone, Debug)]
pub struct UnitJob {
    pub unit: UnitPath,
    /// The directory the tool runs in (absolute), inside `root`.
    pub dir: PathBuf,
    /// The tree the unit belongs to (absolute): the pull request's checkout, or
    /// the base revision's tree for a destroy. Its commands may read it all,
    /// and nothing else of the repository's or cascade's.
    pub root: PathBuf,
    /// The repository, whose provider cache the unit uses (one per repository).
    pub repo: String,
    /// The local module directories the unit uses (absolute): checked, like
    /// its own directory, for providers committed with the change.
    pub sources: Vec<PathBuf>,
    pub tool: Tool,
    /// The saved plan file, inside the run's private directory.
    pub plan_file: PathBuf,
    /// The unit's log file: `<run>/<wave>_<unit file stem>.log`.
    pub log: PathBuf,
    /// The unit's private working directory inside the run's directory: the
    /// running command's raw output, its exit status and its lock, until they
    /// are consumed.
    pub work: PathBuf,
    /// Plan a destroy (a unit the change deletes).
    pub destroy: bool,
    /// Extra `init` arguments (a deleted unit's local state, for instance).
    pub init_args: Vec<String>,
    /// The longest any single command but `init` may run.
    pub timeout: Duration,
    /// The longest `init` may run (a module host that never answers must not
    /// hold the repository's `init` turn for the whole unit timeout).
    pub init_timeout: Duration,
    /// Which job the commands belong to, which picks the unit's credentials
    /// (`--unit-env-file`): a plan's, or an apply's (its fresh plan included).
    pub phase: Phase,
    /// The unit's workflow (`.cascade.yaml` `workflows:`, the default branch's), whose
    /// extra arguments and variables its commands get; `None`: the built-in steps only.
    pub workflow: Option<std::sync::Arc<crate::config::workflows::Workflow>>,
    /// Stage one of a two-stage apply: `plan` plans only these addresses (`-target=`).
    pub plan_targets: Vec<String>,
    /// The hand-made state change `Step::StateChange` makes (`/import`, `/state rm`);
    /// `None` for every plan and apply.
    pub state_change: Option<crate::unit::StateChange>,
}

/// A plan job (a pull request's plan, `/plan`, drift) or an apply job (`/apply`:
/// the fresh plan of each unit and its apply). The apply's fresh plan is part
/// of the apply: it reads the state with the credentials that then write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Plan,
    Apply,
}

impl UnitJob {
    /// The longest `step` may run.
    pub fn limit(&self, step: Step) -> Duration {
        match step {
            Step::Init => self.init_timeout,
            _ => self.timeout,
        }
    }
}

/// Why a command did not succeed. No variant quotes the server's paths: the
/// text reaches the pull request.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("`{command}` failed (exit code {code}): {excerpt}")]
    Failed {
        /// The tool and its subcommand (`terraform plan`).
        command: String,
        code: i32,
        /// Terraform's error blocks, the cause on the first line (`Error: <summary>
        /// (<file> line <n>)`); without any, the last lines of output, the last one
        /// first. Redacted.
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
    #[error(
        "cannot write the unit's log or working files: {source}; check that the data directory is writable and has free space"
    )]
    Log { source: std::io::Error },
    #[error("the plan's JSON is larger than {limit_mib} MiB; split the unit into smaller ones")]
    PlanTooLarge { limit_mib: u64 },
    #[error(
        "reading this plan would take about {need_mib} MiB of memory, more than every plan \
         together may take ({budget_mib} MiB, --plan-memory); split the unit into smaller ones, \
         or raise --plan-memory"
    )]
    PlanOverBudget { need_mib: u64, budget_mib: u64 },
    #[error(
        "`{command}` wrote more than {limit_mib} MiB of output and was stopped (one unit's output must not fill the server's disk); make the configuration print less (outputs, provisioners, TF_LOG)"
    )]
    OutputTooLarge { command: String, limit_mib: u64 },
    /// Refused before anything ran (a provider committed with the change, a
    /// unit directory outside its checkout): the reason says what to change.
    #[error("{reason}")]
    Refused { reason: String },
    /// The command ran and the sandbox refused it an access: named by class,
    /// never by the server's path.
    #[error(
        "`{command}` failed: the sandbox refused {verb} {what}: terraform may read only the unit's checkout and write only the unit's own directory"
    )]
    SandboxRefused {
        command: String,
        verb: &'static str,
        what: String,
    },
    /// The server has no working sandbox and was not told to run without one.
    #[error(
        "this server has no working sandbox ({why}), so it runs no pull request's code; whoever runs cascade must start it on a kernel with Landlock, or choose `--sandbox off` to run terraform unconfined"
    )]
    NoSandbox { why: String },
    #[error("cannot set up the sandbox for `{command}`: {source}")]
    Sandbox {
        command: String,
        source: std::io::Error,
    },
}

/// What a `run` step of a workflow is given besides its unit's job.
#[derive(Clone, Copy, Debug)]
pub struct StepCall<'a> {
    pub step: &'a crate::config::workflows::RunStep,
    pub hook: crate::config::workflows::Hook,
    pub vars: &'a StepVars,
    /// The unit's plan JSON for a `stdin: plan_json` step (through a pipe, never a file).
    pub stdin: Option<&'a [u8]>,
}

/// The facts a step gets as `CASCADE_*` variables (besides `CASCADE_UNIT`, its job's
/// unit, and `CASCADE_PHASE`, its hook, and `CASCADE_PLANFILE`, the job's plan file).
#[derive(Clone, Debug, Default)]
pub struct StepVars {
    /// `owner/name` (GitHub), `group/project` (GitLab), the directory (CLI).
    pub repo: String,
    /// The pull request's number; none for drift and the CLI.
    pub pr: Option<u64>,
    pub head_sha: String,
    pub base_sha: String,
    /// The plan id: known to apply-phase steps only (a plan's id is made from every
    /// unit's plan).
    pub plan_id: Option<String>,
    /// JSON of every unit's result so far, for post steps: a file in the run's private
    /// directory the step may read.
    pub results_file: Option<PathBuf>,
}

/// How a `run` step ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOutput {
    /// Its exit code (0: success).
    pub code: i32,
    /// Its standard output and error, interleaved, redacted, without the server's
    /// paths: the last [`MAX_STEP_OUTPUT`] bytes (on a character boundary).
    pub output: String,
    /// True when more was written than `output` keeps.
    pub truncated: bool,
    pub took: Duration,
}

/// The most of a step's output cascade keeps (for the check run and the store); the
/// comment shows less.
pub const MAX_STEP_OUTPUT: usize = 64 << 10;

/// What a hand-made state change did, by `state list` before and after it: the
/// addresses it added and those it removed, each sorted. The addresses are terraform's
/// output about the unit's code: show them inert.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl StateDiff {
    /// The difference from `before` to `after`.
    pub fn between(before: &[String], after: &[String]) -> StateDiff {
        let before: std::collections::BTreeSet<&String> = before.iter().collect();
        let after: std::collections::BTreeSet<&String> = after.iter().collect();
        StateDiff {
            added: after.difference(&before).map(|a| a.to_string()).collect(),
            removed: before.difference(&after).map(|a| a.to_string()).collect(),
        }
    }
}

/// What became of an apply an earlier cascade process started.
#[derive(Debug)]
pub enum Resumed {
    /// No apply of this job was started, or its result was already consumed.
    Nothing,
    /// It is still running (the wait was stopped); it was left running.
    Running,
    /// It ran to the end, with this result (its output is now in the unit's log).
    Finished(Result<(), ExecError>),
    /// It started, but how it ended is unknown (it was killed before it could
    /// record an exit status): only a fresh plan can tell what it did.
    Unknown,
}

/// The process seam. The real implementation runs binaries; tests script outcomes.
pub trait Executor: Send + Sync + 'static {
    /// Initialises when needed, plans into `job.plan_file`, and returns the
    /// plan as `show -json` bytes, held in memory only, with their share of
    /// the process's plan memory (drop it once parsed). `cancel` stops it
    /// (SIGTERM, then SIGKILL after the grace period).
    fn plan(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<PlanJson, ExecError>> + Send;

    /// Applies exactly the saved plan file. Cancellation is not offered: a
    /// running apply is only stopped by `shutdown`, after the grace period.
    fn apply(
        &self,
        job: &UnitJob,
        shutdown: &CancellationToken,
    ) -> impl Future<Output = Result<(), ExecError>> + Send;

    /// Runs `terragrunt stack generate` in `job.dir` (a stack's directory in
    /// the checkout), writing the units it generates there. The engine calls
    /// it once per stack and run, before planning the first unit the stack
    /// generates. The default does nothing, for executors that plan no stacks.
    fn generate_stack(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<(), ExecError>> + Send {
        let _ = (job, cancel);
        async { Ok(()) }
    }

    /// Finds the apply of `job` that an earlier cascade process started and
    /// did not see finish: waits for it while it runs, then reads its exit
    /// status and output. When `stop` fires (or has fired) while it still
    /// runs, answers [`Resumed::Running`] and leaves it running.
    fn resume_apply(
        &self,
        job: &UnitJob,
        stop: &CancellationToken,
    ) -> impl Future<Output = Result<Resumed, ExecError>> + Send {
        let _ = (job, stop);
        async { Ok(Resumed::Nothing) }
    }

    /// Runs a workflow's `run` step for `job`'s unit, in the unit's directory, in the
    /// sandbox, within the step's timeout. `Err` when it could not be run or was stopped
    /// (a non-zero exit is `Ok` with its code). The default refuses: an executor that
    /// runs no steps must not pretend one passed.
    fn run_step(
        &self,
        job: &UnitJob,
        call: StepCall<'_>,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<StepOutput, ExecError>> + Send {
        let _ = (job, cancel);
        let reason = format!(
            "this executor runs no workflow steps (`{}` in {})",
            call.step.name,
            call.hook.name()
        );
        async move { Err(ExecError::Refused { reason }) }
    }

    /// Makes `job.state_change` in the unit (initialising it first when needed), in the
    /// sandbox, each command within the job's timeout, and answers what `state list`
    /// shows added and removed. The default refuses: an executor that changes no state
    /// must not pretend it did.
    fn change_state(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<StateDiff, ExecError>> + Send {
        let _ = (job, cancel);
        async {
            Err(ExecError::Refused {
                reason: "this executor changes no state".into(),
            })
        }
    }

    /// The redaction applied to the children's output: the registered secrets and, for a
    /// real executor, the secrets in the children's environment (`TF_VAR_*` values…).
    /// Whatever cascade shows of a plan goes through it too.
    fn redactor(&self) -> crate::redact::Redactor {
        crate::redact::Redactor::default()
    }

    /// Where policy evaluations run in a child process of their own, under a memory
    /// ceiling; `None` (the default): on this process's blocking pool.
    fn policy_worker(&self) -> Option<&policy_worker::PolicyWorker> {
        None
    }
}
