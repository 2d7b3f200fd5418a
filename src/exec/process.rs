//! The real executor: each command a detached process (see `step_process`)
//! with its output redacted into the unit's log once it ends, timeouts, and
//! SIGTERM-then-SIGKILL stopping of the whole process group.

use super::command::{Step, command_line, command_name};
use super::env::{ChildEnv, FIXED, default_pass_env};
use super::log::LogSink;
use super::step_process::{self, Launch, StepFiles, StopOnDrop, private_dir};
use super::{ExecError, Executor, Resumed, UnitJob};
use crate::config::Executor as Tool;
use crate::redact::Redactor;
use nix::sys::signal::Signal;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// What `show -json` says of a plan that changes nothing, returned when
/// `plan -detailed-exitcode` already said so.
const EMPTY_PLAN_JSON: &[u8] =
    br#"{"format_version":"1.2","planned_values":{"root_module":{}},"resource_changes":[],"output_changes":{}}"#;

/// The largest plan JSON read into memory.
const MAX_PLAN_JSON_MIB: u64 = 512;

/// The most raw output (standard output and error, before redaction) a
/// command of unreviewed code may write while it runs. Its log keeps 64 MiB
/// of it at most; past this, the command is stopped.
const MAX_RAW_OUTPUT_BYTES: u64 = 256 << 20;

/// How often the size of a running command's output is looked at.
const OUTPUT_CHECK: Duration = Duration::from_millis(250);

/// The exit code of a shell that could not find or run the command.
const NOT_FOUND: i32 = 127;
const NOT_EXECUTABLE: i32 = 126;

/// Runs terraform, tofu and terragrunt binaries.
pub struct ProcessExecutor {
    terraform: String,
    tofu: String,
    terragrunt: String,
    plugin_cache: PathBuf,
    grace: Duration,
    /// See [`MAX_RAW_OUTPUT_BYTES`].
    max_output: u64,
    /// What children get of this process's environment, and the redaction of their output.
    env: ChildEnv,
    redactor: Redactor,
    /// Terraform's plugin cache is not safe under concurrent writes, so
    /// `init`s of one cascade process take turns.
    init_lock: tokio::sync::Mutex<()>,
    /// Bounds the units running at once over every run of this process (the server's
    /// pull requests share it); `None` leaves the bound to each run's walk.
    limit: Option<std::sync::Arc<tokio::sync::Semaphore>>,
}

impl ProcessExecutor {
    /// An executor whose `init`s share the provider cache in `plugin_cache`,
    /// passing children the allowed part of this process's environment (and
    /// the names given to [`super::set_default_pass_env`]).
    pub fn new(plugin_cache: PathBuf) -> ProcessExecutor {
        let env = ChildEnv::from_parent(std::env::vars_os(), &default_pass_env());
        ProcessExecutor {
            terraform: "terraform".into(),
            tofu: "tofu".into(),
            terragrunt: "terragrunt".into(),
            plugin_cache,
            grace: Duration::from_secs(30),
            max_output: MAX_RAW_OUTPUT_BYTES,
            redactor: env.redactor(),
            env,
            init_lock: tokio::sync::Mutex::new(()),
            limit: None,
        }
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

    fn child_env(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = self
            .env
            .vars()
            .map(|(k, v)| (k.to_os_string(), v.to_os_string()))
            .collect();
        vars.extend(FIXED.iter().map(|(k, v)| (k.into(), v.into())));
        vars.push((
            "TF_PLUGIN_CACHE_DIR".into(),
            self.plugin_cache.clone().into(),
        ));
        vars
    }

    async fn init(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<(), ExecError> {
        let _turn = self.init_lock.lock().await;
        std::fs::create_dir_all(&self.plugin_cache).ok();
        self.run(job, Step::Init, Stop::Cancel(cancel))
            .await
            .map(|_| ())
    }

    /// Runs one step. Its output goes to the unit's log, redacted, once it
    /// ends; for `show` the standard output is captured into memory instead
    /// and returned. Returns the captured output and the exit code (0, or 2
    /// for a plan with changes).
    async fn run(
        &self,
        job: &UnitJob,
        step: Step,
        stop: Stop<'_>,
    ) -> Result<(Vec<u8>, i32), ExecError> {
        if let Stop::Cancel(cancel) = stop
            && cancel.is_cancelled()
        {
            return Err(ExecError::Cancelled);
        }
        let (_, args) = command_line(job.tool, step, job);
        let program = self.binary(job.tool);
        let name = command_name(job.tool, step);
        let files = StepFiles::new(&job.work, step.name());
        private_dir(&job.work)?;
        let mut log = LogSink::open(&job.log)?;
        log.note(&format!("$ {program} {}", args.join(" ")));
        let (cancel, deadline) = match stop {
            Stop::Cancel(cancel) => (
                Some(cancel),
                Some(tokio::time::Instant::now() + job.timeout),
            ),
            Stop::Shutdown(shutdown) => (Some(shutdown), None),
        };
        let lock = step_process::lock_after_earlier(&files, cancel, deadline, self.grace).await?;
        let launch = Launch {
            program,
            args: &args,
            dir: &job.dir,
            env: self.child_env(),
            capture_stdout: step == Step::Show,
        };
        let mut started =
            step_process::start(launch, &files, lock).map_err(|source| ExecError::Spawn {
                command: name.clone(),
                source,
            })?;
        let mut stop_on_drop = StopOnDrop::new(&started, &files, self.grace, step != Step::Apply);
        let capture = started
            .child
            .stdout
            .take()
            .map(|out| tokio::spawn(read_capped(out, MAX_PLAN_JSON_MIB << 20)));
        let status = self.wait(&mut started, job, &name, &files.out, stop).await;
        stop_on_drop.disarm();
        let captured = match capture {
            Some(task) => task.await.unwrap_or(Ok(Vec::new())),
            None => Ok(Vec::new()),
        };
        log.output(&files.out, &self.redactor)?;
        files.remove();
        let code = status?.code().unwrap_or(-1);
        let captured = captured?;
        if code == 0 || (step == Step::Plan && code == 2) {
            return Ok((captured, code));
        }
        Err(failure(name, code, log.excerpt()))
    }

    async fn wait(
        &self,
        started: &mut step_process::Started,
        job: &UnitJob,
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
                    _ = tokio::time::sleep(job.timeout) => {
                        self.terminate(child, group).await;
                        Err(ExecError::TimedOut { command: name.to_string(), seconds: job.timeout.as_secs() })
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

    async fn plan(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<Vec<u8>, ExecError> {
        let _slot = self.slot().await;
        let started = std::time::Instant::now();
        let result = self.plan_unit(job, cancel).await;
        metrics::histogram!("cascade_unit_seconds", "step" => "plan")
            .record(started.elapsed().as_secs_f64());
        result
    }

    async fn apply(&self, job: &UnitJob, shutdown: &CancellationToken) -> Result<(), ExecError> {
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
        self.run(job, Step::StackGenerate, Stop::Cancel(cancel))
            .await
            .map(|_| ())
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
    async fn plan_unit(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ExecError> {
        if let Some(dir) = job.plan_file.parent() {
            private_dir(dir)?;
        }
        let initialised = job.dir.join(".terraform").is_dir();
        if job.tool != Tool::Terragrunt && !initialised {
            self.init(job, cancel).await?;
        }
        let (_, code) = match self.run(job, Step::Plan, Stop::Cancel(cancel)).await {
            Err(e) if job.tool != Tool::Terragrunt && initialised && needs_init(&e) => {
                self.init(job, cancel).await?;
                self.run(job, Step::Plan, Stop::Cancel(cancel)).await?
            }
            other => other?,
        };
        if code == 0 {
            // An empty plan needs no `show -json`: that is one process less per unchanged unit.
            return Ok(EMPTY_PLAN_JSON.to_vec());
        }
        self.run(job, Step::Show, Stop::Cancel(cancel))
            .await
            .map(|(json, _)| json)
    }
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

/// Reads a stream to its end into memory, refusing more than `limit` bytes.
async fn read_capped(stream: impl AsyncRead + Unpin, limit: u64) -> Result<Vec<u8>, ExecError> {
    let mut buf = Vec::new();
    let mut limited = stream.take(limit + 1);
    let _ = limited.read_to_end(&mut buf).await;
    if buf.len() as u64 > limit {
        return Err(ExecError::PlanTooLarge {
            limit_mib: limit >> 20,
        });
    }
    Ok(buf)
}
