//! The real executor: each command a detached process (see `step_process`)
//! with its output redacted into the unit's log once it ends, timeouts, and
//! SIGTERM-then-SIGKILL stopping of the whole process group. A workflow's `run`
//! steps go the same way (`process/run_step.rs`).

use super::command::{Step, command_line, command_name, job_command_name};
use super::env::{ChildEnv, FIXED, default_pass_env};
use super::job_env::{JobVar, job_vars};
use super::log::LogSink;
use super::plan_json::{self, PlanBudget, PlanJson, PlanLimits};
use super::preflight::{self, InitRecords, TrackedTools};
use super::sandbox::{Reach, Sandbox, SandboxMode, SandboxState, SandboxUser};
use super::step_process::{self, Launch, StepFiles, StopOnDrop, private_dir};
use super::unit_env::UnitEnv;
use super::{ExecError, Executor, Resumed, StateDiff, StepCall, StepOutput, UnitJob};
use crate::redact::Redactor;
use crate::unit::Tool;
use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod run_step;
mod state;

/// What `show -json` says of a plan that changes nothing, returned when
/// `plan -detailed-exitcode` already said so.
const EMPTY_PLAN_JSON: &[u8] =
    br#"{"format_version":"1.2","planned_values":{"root_module":{}},"resource_changes":[],"output_changes":{}}"#;

/// The most raw output (standard output and error, before redaction) a
/// command of unreviewed code may write while it runs. Its log keeps 64 MiB
/// of it at most; past this, the command is stopped.
const MAX_RAW_OUTPUT_BYTES: u64 = 256 << 20;

/// How often the size of a running command's output is looked at.
const OUTPUT_CHECK: Duration = Duration::from_millis(250);

/// The exit code of a shell that could not find or run the command.
const NOT_FOUND: i32 = 127;
const NOT_EXECUTABLE: i32 = 126;

/// Runs terraform, tofu and terragrunt binaries, each command in the sandbox.
pub struct ProcessExecutor {
    terraform: String,
    tofu: String,
    terragrunt: String,
    /// The executor's own directory, which no command can write (nor read,
    /// but for its repository's provider cache): one provider cache per
    /// repository (`plugin-cache/<repo>`), the record of initialised units
    /// (`init/`), and each command's temporary directory (`tmp/`).
    dir: PathBuf,
    sandbox: Sandbox,
    grace: Duration,
    /// See [`MAX_RAW_OUTPUT_BYTES`].
    max_output: u64,
    /// What children get of this process's environment, and the redaction of their output.
    env: ChildEnv,
    redactor: Redactor,
    /// Terraform's plugin cache is not safe under concurrent writes, so the
    /// `init`s of one repository's cache take turns (by cache directory).
    init_locks: std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    tracked: TrackedTools,
    records: InitRecords,
    /// Bounds the units running at once over every run of this process (the server's
    /// pull requests share it); `None` leaves the bound to each run's walk.
    limit: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    /// The largest plan JSON one unit may produce, in bytes.
    max_plan_json: u64,
    /// Where policies are evaluated; `None`: in this process.
    policy_worker: Option<super::policy_worker::PolicyWorker>,
    /// The operator's per-unit variables (`--unit-env-file`).
    unit_env: Arc<UnitEnv>,
    /// What every plan being read or parsed at once may take.
    plan_memory: PlanBudget,
}

impl ProcessExecutor {
    /// An executor keeping its provider caches, records and temporary
    /// directories in `dir` (cascade's, never a command's), passing children
    /// the allowed part of this process's environment (and the names given to
    /// [`super::set_default_pass_env`]). Commands run in the sandbox `auto`
    /// gives the CLI (see [`ProcessExecutor::with_sandbox`] for the server's).
    pub fn new(dir: PathBuf) -> ProcessExecutor {
        let env = ChildEnv::from_parent(std::env::vars_os(), &default_pass_env());
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        ProcessExecutor {
            terraform: "terraform".into(),
            tofu: "tofu".into(),
            terragrunt: "terragrunt".into(),
            records: InitRecords::new(dir.join("init")),
            sandbox: default_sandbox().with_private(&dir, "cascade's data directory"),
            dir,
            grace: Duration::from_secs(30),
            max_output: MAX_RAW_OUTPUT_BYTES,
            redactor: env.redactor(),
            env,
            init_locks: Default::default(),
            tracked: TrackedTools::default(),
            limit: None,
            max_plan_json: PlanLimits::default().max_json_mib << 20,
            unit_env: Arc::default(),
            plan_memory: PlanBudget::new(PlanLimits::default().memory_mib),
            policy_worker: None,
        }
    }

    /// Evaluates policies in children of `worker` (see [`super::policy_worker`]).
    pub fn with_policy_worker(
        mut self,
        worker: super::policy_worker::PolicyWorker,
    ) -> ProcessExecutor {
        self.policy_worker = Some(worker);
        self
    }

    /// Caps each unit's plan JSON and the memory all plans take at once
    /// (`--max-plan-json`, `--plan-memory`; see [`PlanLimits::check`]).
    pub fn with_plan_limits(mut self, limits: PlanLimits) -> ProcessExecutor {
        self.max_plan_json = limits.max_json_mib << 20;
        self.plan_memory = PlanBudget::new(limits.memory_mib);
        self
    }

    /// Runs every command in `sandbox` (the executor's own directory stays
    /// private to cascade whatever it says).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> ProcessExecutor {
        self.sandbox = sandbox.with_private(&self.dir, "cascade's data directory");
        self
    }

    /// The sandbox commands run in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Children get the allowed part of `parent` plus the variables named in `pass`
    /// (`--pass-env`), instead of this process's environment.
    pub fn with_environment(
        mut self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        pass: &[String],
    ) -> ProcessExecutor {
        self.env = ChildEnv::from_parent(parent, pass);
        self.redactor = self.env.redactor();
        self
    }

    /// Gives each unit's commands the variables the operator's file gives it
    /// for the job's phase (`--unit-env-file`), over what the parent passes.
    pub fn with_unit_env(mut self, unit_env: Arc<UnitEnv>) -> ProcessExecutor {
        self.unit_env = unit_env;
        self
    }

    /// At most `units` units plan or apply at once through this executor, whichever run they belong to.
    pub fn with_limit(mut self, units: usize) -> ProcessExecutor {
        self.limit = Some(std::sync::Arc::new(tokio::sync::Semaphore::new(
            units.max(1),
        )));
        self
    }

    async fn slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match &self.limit {
            Some(limit) => limit.clone().acquire_owned().await.ok(),
            None => None,
        }
    }

    /// Uses `path` for `tool` instead of the name on PATH.
    pub fn with_binary(mut self, tool: Tool, path: impl Into<String>) -> ProcessExecutor {
        let path = path.into();
        match tool {
            Tool::Terraform => self.terraform = path,
            Tool::Tofu => self.tofu = path,
            Tool::Terragrunt => self.terragrunt = path,
        }
        self
    }

    /// How long a stopped command gets between SIGTERM and SIGKILL (and an
    /// apply gets after a shutdown before it is stopped).
    pub fn with_grace(mut self, grace: Duration) -> ProcessExecutor {
        self.grace = grace;
        self
    }

    /// Stops a plan, `init` or `show` whose raw output passes `bytes`
    /// (default [`MAX_RAW_OUTPUT_BYTES`]).
    pub fn with_max_output(mut self, bytes: u64) -> ProcessExecutor {
        self.max_output = bytes;
        self
    }

    fn binary(&self, tool: Tool) -> &str {
        match tool {
            Tool::Terraform => &self.terraform,
            Tool::Tofu => &self.tofu,
            Tool::Terragrunt => &self.terragrunt,
        }
    }

    /// What a command gets of the environment: the job's own variables (`unit`)
    /// over the parent's. Confined, its home and temporary directory are its own
    /// (`tmp`): the server's home is out of its reach, and `/tmp` is shared with
    /// everything else on the machine.
    fn child_env(
        &self,
        job: &UnitJob,
        unit: &[JobVar<'_>],
        tmp: Option<&Path>,
    ) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = self
            .env
            .vars()
            .filter(|(k, _)| tmp.is_none() || !matches!(k.to_str(), Some("HOME" | "TMPDIR")))
            .filter(|(k, _)| !unit.iter().any(|v| k.to_str() == Some(v.name)))
            .map(|(k, v)| (k.to_os_string(), v.to_os_string()))
            .collect();
        vars.extend(unit.iter().map(|v| (v.name.into(), v.value.into())));
        vars.extend(FIXED.iter().map(|(k, v)| (k.into(), v.into())));
        vars.push(("TF_PLUGIN_CACHE_DIR".into(), self.cache(job).into()));
        if let Some(tmp) = tmp {
            vars.push(("HOME".into(), tmp.into()));
            vars.push(("TMPDIR".into(), tmp.into()));
        }
        vars
    }

    /// The job's own variables (the operator's for its unit and phase, those its
    /// workflow selects or sets), or why it may not run.
    fn job_vars<'a>(&'a self, job: &'a UnitJob) -> Result<Vec<JobVar<'a>>, ExecError> {
        job_vars(&self.unit_env, &self.env, job)
    }

    /// The provider cache of the job's repository.
    fn cache(&self, job: &UnitJob) -> PathBuf {
        self.dir
            .join("plugin-cache")
            .join(crate::unit::UnitPath::new(job.repo.as_str()).file_stem())
    }

    /// A command's temporary directory. Short (go-plugin's unix sockets live
    /// in it, and a socket's path has at most 107 bytes): one per working
    /// directory, named by a digest of it.
    fn tmp(&self, job: &UnitJob) -> PathBuf {
        use sha2::{Digest, Sha256};
        let digest = hex::encode(Sha256::digest(job.work.as_os_str().as_encoded_bytes()));
        self.dir.join("tmp").join(&digest[..16])
    }

    /// Initialises `job`: in turn with the other `init`s of its repository's
    /// provider cache (waiting for the turn holds no executor slot), within
    /// the job's `init` timeout, and recorded as cascade's own once it ends
    /// well.
    async fn init(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<(), ExecError> {
        let cache = self.cache(job);
        let lock = self
            .init_locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(cache.clone())
            .or_default()
            .clone();
        let _turn = tokio::select! {
            turn = lock.lock_owned() => turn,
            () = cancel.cancelled() => return Err(ExecError::Cancelled),
        };
        let _slot = self.slot().await;
        private_dir(&cache)?;
        self.records.forget(job);
        self.run(job, Step::Init, Stop::Cancel(cancel)).await?;
        self.records.record(job);
        Ok(())
    }

    /// What `step` of `job` may reach besides what every command may: its
    /// tree, its provider cache (writable only during `init`), its unit's
    /// directory and private directories, its saved plan, the tools, and what
    /// the server's variables (`unit`: the job's own) name.
    fn reach(&self, job: &UnitJob, step: Step, tmp: &Path, unit: &[JobVar<'_>]) -> Reach {
        let cache = self.cache(job);
        let mut reach = Reach {
            read: vec![real(&job.root)],
            write: vec![real(&job.dir), real(&job.work), real(tmp)],
            ..Reach::default()
        };
        // A destroy's local state lives in the head's checkout, not the base tree.
        reach.write.extend(
            job.init_args
                .iter()
                .filter_map(|a| a.strip_prefix("-backend-config=path="))
                .filter_map(|state| Path::new(state).parent())
                .map(real),
        );
        match step {
            Step::Init => reach.write.push(real(&cache)),
            _ => reach.read.push(real(&cache)),
        }
        match step {
            Step::Plan => reach.files.push(job.plan_file.clone()),
            Step::Show | Step::Apply => reach.read_files.push(job.plan_file.clone()),
            Step::Init | Step::StackGenerate | Step::StateList | Step::StateChange => {}
        }
        reach.read_files.extend(
            [&self.terraform, &self.tofu, &self.terragrunt]
                .into_iter()
                .filter_map(|program| self.resolve(program)),
        );
        // What the credentials and configuration variables the tools get name.
        // The job's own variables replace the parent's of the same name; a
        // workflow's plain value is the repository's, so it opens nothing.
        let parent = self
            .env
            .vars()
            .filter(|(k, _)| !unit.iter().any(|v| k.to_str() == Some(v.name)));
        let server = unit
            .iter()
            .filter(|v| v.from_server)
            .map(|v| (std::ffi::OsStr::new(v.name), std::ffi::OsStr::new(v.value)));
        for (name, value) in parent.chain(server) {
            if name
                .to_str()
                .is_some_and(|n| super::sandbox::PATH_VARIABLES.contains(&n))
            {
                reach.read.extend(
                    std::env::split_paths(value)
                        .filter(|p| p.is_absolute())
                        .map(|p| real(&p)),
                );
            }
        }
        reach
    }

    /// Where the children's `PATH` finds `program` (a path is itself).
    fn resolve(&self, program: &str) -> Option<PathBuf> {
        if program.contains('/') {
            return std::fs::canonicalize(program).ok();
        }
        let path = self
            .env
            .vars()
            .find(|(k, _)| *k == "PATH")?
            .1
            .to_os_string();
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    }

    /// Whether commands may run at all: not when the sandbox is refusing.
    /// Running unconfined by choice is logged for every plan.
    fn ready(&self, job: &UnitJob) -> Result<(), ExecError> {
        match self.sandbox.state() {
            SandboxState::Enforced { .. } => Ok(()),
            SandboxState::Refusing { why } => Err(ExecError::NoSandbox { why: why.clone() }),
            SandboxState::Unconfined { why } => {
                tracing::warn!(unit = %job.unit, why = %why,
                    "running terraform without the sandbox: it can read and write everything cascade can");
                Ok(())
            }
        }
    }

    /// Runs one step. Its output goes to the unit's log, redacted, once it
    /// ends; for `show` the standard output is captured into memory instead
    /// and returned, read within the plan limits. Returns the captured output
    /// and the exit code (0, or 2 for a plan with changes).
    async fn run(
        &self,
        job: &UnitJob,
        step: Step,
        stop: Stop<'_>,
    ) -> Result<(PlanJson, i32), ExecError> {
        if let Stop::Cancel(cancel) = stop
            && cancel.is_cancelled()
        {
            return Err(ExecError::Cancelled);
        }
        let vars = self.job_vars(job)?;
        let (_, args) = command_line(job.tool, step, job);
        let program = self.binary(job.tool);
        let name = job_command_name(job, step);
        let files = StepFiles::new(&job.work, step.name());
        private_dir(&job.work)?;
        let tmp = self.tmp(job);
        private_dir(&tmp)?;
        if step == Step::Plan {
            // Made here, so the sandbox can give the command this one file.
            step_process::private_file(&job.plan_file)?;
        }
        let confined = self
            .sandbox
            .confine(&self.reach(job, step, &tmp, &vars))
            .map_err(|source| ExecError::Sandbox {
                command: name.clone(),
                source,
            })?;
        let mut log = LogSink::open(&job.log)?;
        log.note(&format!("$ {program} {}", args.join(" ")));
        let limit = job.limit(step);
        // A `show` whose JSON passes the limits is stopped through this one.
        let child_stop;
        let stop = match stop {
            Stop::Cancel(cancel) => {
                child_stop = cancel.child_token();
                Stop::Cancel(&child_stop)
            }
            other => other,
        };
        let (cancel, deadline) = match stop {
            Stop::Cancel(cancel) => (Some(cancel), Some(tokio::time::Instant::now() + limit)),
            Stop::Shutdown(shutdown) => (Some(shutdown), None),
        };
        let lock = step_process::lock_after_earlier(&files, cancel, deadline, self.grace).await?;
        let launch = Launch {
            program,
            args: &args,
            dir: &job.dir,
            env: self.child_env(job, &vars, confined.as_ref().map(|_| tmp.as_path())),
            capture_stdout: matches!(step, Step::Show | Step::StateList),
            pipe_stdin: false,
            confined: confined.as_ref(),
        };
        let mut started =
            step_process::start(launch, &files, lock).map_err(|source| ExecError::Spawn {
                command: name.clone(),
                source,
            })?;
        drop(confined);
        let mut stop_on_drop = StopOnDrop::new(&started, &files, self.grace, step != Step::Apply);
        let capture = started.child.stdout.take().map(|out| {
            let (max, budget) = (self.max_plan_json, self.plan_memory.clone());
            let stop = match stop {
                Stop::Cancel(cancel) => cancel.clone(),
                Stop::Shutdown(_) => CancellationToken::new(),
            };
            tokio::spawn(async move { plan_json::read(out, max, &budget, &stop).await })
        });
        let status = self
            .wait(&mut started, limit, &name, &files.out, stop)
            .await;
        stop_on_drop.disarm();
        let captured = match capture {
            Some(task) => task.await.unwrap_or_else(|_| Ok(Vec::new().into())),
            None => Ok(Vec::new().into()),
        };
        log.output(&files.out, &self.redactor)?;
        files.remove();
        if step != Step::Apply {
            // An apply's is kept: a restarted cascade may find it still running.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        // A plan past the limits was stopped for it: say so, not "cancelled".
        let captured = captured?;
        let code = status?.code().unwrap_or(-1);
        if code == 0 || (step == Step::Plan && code == 2) {
            return Ok((captured, code));
        }
        if let Some(refused) = self.refusal(job, &name, &log) {
            return Err(refused);
        }
        Err(failure(name, code, log.excerpt()))
    }

    /// The access the sandbox refused a failed `command`, as its output reported
    /// it, named by class.
    fn refusal(&self, job: &UnitJob, command: &str, log: &LogSink) -> Option<ExecError> {
        if !matches!(self.sandbox.state(), SandboxState::Enforced { .. }) {
            return None;
        }
        let (verb, path) = log.refused()?;
        let mut known = self.sandbox.known();
        known.push((real(&job.root), "the checkout outside the unit's directory"));
        Some(ExecError::SandboxRefused {
            command: command.to_string(),
            verb,
            what: super::denied::class_of(path, &job.dir, &known),
        })
    }

    async fn wait(
        &self,
        started: &mut step_process::Started,
        limit: Duration,
        name: &str,
        out: &std::path::Path,
        stop: Stop<'_>,
    ) -> Result<std::process::ExitStatus, ExecError> {
        let child = &mut started.child;
        let group = started.group;
        let gone = |e| ExecError::Spawn {
            command: name.into(),
            source: e,
        };
        match stop {
            Stop::Cancel(cancel) => {
                tokio::select! {
                    status = child.wait() => status.map_err(gone),
                    _ = tokio::time::sleep(limit) => {
                        self.terminate(child, group).await;
                        Err(ExecError::TimedOut { command: name.to_string(), seconds: limit.as_secs() })
                    }
                    _ = cancel.cancelled() => { self.terminate(child, group).await; Err(ExecError::Cancelled) }
                    _ = output_passes(out, self.max_output) => {
                        // One that ignores SIGTERM and goes on writing must not
                        // have the whole grace period to fill the disk.
                        let twice = output_passes(out, self.max_output.saturating_mul(2));
                        self.terminate_or_kill_on(child, group, twice).await;
                        Err(ExecError::OutputTooLarge { command: name.to_string(), limit_mib: self.max_output >> 20 })
                    }
                }
            }
            Stop::Shutdown(shutdown) => {
                // An apply runs to the end: only a shutdown, after its grace, stops it.
                // Nor is its output capped: it runs reviewed code, and stopping
                // it halfway would leave state half applied (its log is capped).
                tokio::select! {
                    status = child.wait() => return status.map_err(gone),
                    _ = shutdown.cancelled() => {}
                }
                tokio::select! {
                    status = child.wait() => status.map_err(gone),
                    _ = tokio::time::sleep(self.grace) => { self.terminate(child, group).await; Err(ExecError::Cancelled) }
                }
            }
        }
    }

    /// SIGTERM to the process group, then SIGKILL if the wrapper is still
    /// there after the grace period.
    async fn terminate(&self, child: &mut tokio::process::Child, group: Option<nix::unistd::Pid>) {
        self.terminate_or_kill_on(child, group, std::future::pending())
            .await;
    }

    /// [`Self::terminate`], whose grace ends early when `kill_now` resolves.
    async fn terminate_or_kill_on(
        &self,
        child: &mut tokio::process::Child,
        group: Option<nix::unistd::Pid>,
        kill_now: impl std::future::Future<Output = ()>,
    ) {
        step_process::signal(group, Signal::SIGTERM);
        tokio::select! {
            _ = child.wait() => return,
            _ = tokio::time::sleep(self.grace) => {}
            _ = kill_now => {}
        }
        step_process::signal(group, Signal::SIGKILL);
        let _ = child.wait().await;
    }
}

/// The error for a command that exited with `code`.
fn failure(command: String, code: i32, excerpt: String) -> ExecError {
    match code {
        NOT_FOUND | NOT_EXECUTABLE => ExecError::Spawn {
            command,
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the shell could not find or execute it",
            ),
        },
        _ => ExecError::Failed {
            command,
            code,
            excerpt,
        },
    }
}

#[derive(Clone, Copy)]
enum Stop<'a> {
    Cancel(&'a CancellationToken),
    Shutdown(&'a CancellationToken),
}

/// Messages terraform prints when the working directory needs `init` again.
fn needs_init(err: &ExecError) -> bool {
    match err {
        ExecError::Failed { excerpt, .. } => [
            "terraform init",
            "tofu init",
            "Module not installed",
            "Backend initialization required",
            "Inconsistent dependency lock file",
        ]
        .iter()
        .any(|m| excerpt.contains(m)),
        _ => false,
    }
}

impl Executor for ProcessExecutor {
    fn redactor(&self) -> Redactor {
        self.redactor.clone()
    }

    fn policy_worker(&self) -> Option<&super::policy_worker::PolicyWorker> {
        self.policy_worker.as_ref()
    }

    async fn plan(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<PlanJson, ExecError> {
        let started = std::time::Instant::now();
        let result = self.plan_unit(job, cancel).await;
        metrics::histogram!("cascade_unit_seconds", "step" => "plan")
            .record(started.elapsed().as_secs_f64());
        result
    }

    async fn apply(&self, job: &UnitJob, shutdown: &CancellationToken) -> Result<(), ExecError> {
        self.ready(job)?;
        preflight::check(job, &self.tracked, &self.records)?;
        self.job_vars(job)?;
        let _slot = self.slot().await;
        let started = std::time::Instant::now();
        let result = self
            .run(job, Step::Apply, Stop::Shutdown(shutdown))
            .await
            .map(|_| ());
        metrics::histogram!("cascade_unit_seconds", "step" => "apply")
            .record(started.elapsed().as_secs_f64());
        result
    }

    async fn generate_stack(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<(), ExecError> {
        self.ready(job)?;
        // The stack's directory, like a unit's, must be inside its tree.
        preflight::inside_tree(job)?;
        self.run(job, Step::StackGenerate, Stop::Cancel(cancel))
            .await
            .map(|_| ())
    }

    async fn run_step(
        &self,
        job: &UnitJob,
        call: StepCall<'_>,
        cancel: &CancellationToken,
    ) -> Result<StepOutput, ExecError> {
        self.step(job, call, cancel).await
    }

    async fn change_state(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<StateDiff, ExecError> {
        self.change_unit_state(job, cancel).await
    }

    async fn resume_apply(
        &self,
        job: &UnitJob,
        stop: &CancellationToken,
    ) -> Result<Resumed, ExecError> {
        let files = StepFiles::new(&job.work, Step::Apply.name());
        if !files.started() {
            return Ok(Resumed::Nothing);
        }
        if !step_process::wait_unlocked(&files, stop).await? {
            return Ok(Resumed::Running);
        }
        let mut log = LogSink::open(&job.log)?;
        log.note("(the output of the apply started by an earlier cascade process, which it did not see end)");
        log.output(&files.out, &self.redactor)?;
        let code = files.exit_status();
        files.remove();
        let name = command_name(job.tool, Step::Apply);
        Ok(match code {
            None => Resumed::Unknown,
            Some(0) => Resumed::Finished(Ok(())),
            Some(code) => Resumed::Finished(Err(failure(name, code, log.excerpt()))),
        })
    }
}

impl ProcessExecutor {
    /// Checks the unit, initialises it unless cascade's record says its
    /// `.terraform/` is cascade's own, then plans and shows it. An `init` the
    /// plan asks for is done once more. Each step takes an executor slot of
    /// its own, so a unit waiting for its cache's `init` turn holds none.
    async fn plan_unit(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<PlanJson, ExecError> {
        self.ready(job)?;
        preflight::check(job, &self.tracked, &self.records)?;
        self.job_vars(job)?;
        if let Some(dir) = job.plan_file.parent() {
            private_dir(dir)?;
        }
        let initialised = self.records.initialised(job);
        if !initialised {
            self.init(job, cancel).await?;
        }
        let code = match self.plan_step(job, cancel).await {
            Err(e) if initialised && needs_init(&e) => {
                self.init(job, cancel).await?;
                self.plan_step(job, cancel).await?
            }
            other => other?,
        };
        if code == 0 {
            // An empty plan needs no `show -json`: that is one process less per unchanged unit.
            return Ok(EMPTY_PLAN_JSON.to_vec().into());
        }
        let _slot = self.slot().await;
        self.run(job, Step::Show, Stop::Cancel(cancel))
            .await
            .map(|(json, _)| json)
    }

    /// `plan`, in a slot of its own: its exit code (0 empty, 2 changes).
    async fn plan_step(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<i32, ExecError> {
        let _slot = self.slot().await;
        let (_, code) = self.run(job, Step::Plan, Stop::Cancel(cancel)).await?;
        Ok(code)
    }
}

/// `path` made canonical where it exists (a rule is made from the real path).
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The sandbox of executors built without one: what `--sandbox auto` gives
/// the CLI, probed once per process.
fn default_sandbox() -> Sandbox {
    static PROBED: OnceLock<Sandbox> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            Sandbox::new(SandboxMode::Auto, SandboxUser::Cli, None)
                .expect("auto never refuses to be made")
        })
        .clone()
}

/// Resolves once the file at `out` is larger than `limit` bytes.
async fn output_passes(out: &std::path::Path, limit: u64) {
    loop {
        if std::fs::metadata(out).is_ok_and(|m| m.len() > limit) {
            return;
        }
        tokio::time::sleep(OUTPUT_CHECK).await;
    }
}
