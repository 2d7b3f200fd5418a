//! The real executor: child processes with piped output, timeouts, and
//! SIGTERM-then-SIGKILL stopping.

use super::command::{Step, command_line, environment};
use super::{ExecError, Executor, UnitJob, redact};
use crate::config::Executor as Tool;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// What `show -json` says of a plan that changes nothing, returned when
/// `plan -detailed-exitcode` already said so.
const EMPTY_PLAN_JSON: &[u8] =
    br#"{"format_version":"1.2","planned_values":{"root_module":{}},"resource_changes":[],"output_changes":{}}"#;

/// How many output lines a failure message quotes.
const EXCERPT_LINES: usize = 12;

/// Runs terraform, tofu and terragrunt binaries.
pub struct ProcessExecutor {
    terraform: String,
    tofu: String,
    terragrunt: String,
    plugin_cache: PathBuf,
    grace: Duration,
    /// Terraform's plugin cache is not safe under concurrent writes, so
    /// `init`s of one cascade process take turns.
    init_lock: tokio::sync::Mutex<()>,
    /// Bounds the units running at once over every run of this process (the server's
    /// pull requests share it); `None` leaves the bound to each run's walk.
    limit: Option<std::sync::Arc<tokio::sync::Semaphore>>,
}

impl ProcessExecutor {
    /// An executor whose `init`s share the provider cache in `plugin_cache`.
    pub fn new(plugin_cache: PathBuf) -> ProcessExecutor {
        ProcessExecutor {
            terraform: "terraform".into(),
            tofu: "tofu".into(),
            terragrunt: "terragrunt".into(),
            plugin_cache,
            grace: Duration::from_secs(30),
            init_lock: tokio::sync::Mutex::new(()),
            limit: None,
        }
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

    fn binary(&self, tool: Tool) -> &str {
        match tool {
            Tool::Terraform => &self.terraform,
            Tool::Tofu => &self.tofu,
            Tool::Terragrunt => &self.terragrunt,
        }
    }

    async fn init(&self, job: &UnitJob, cancel: &CancellationToken) -> Result<(), ExecError> {
        let _turn = self.init_lock.lock().await;
        std::fs::create_dir_all(&self.plugin_cache).ok();
        self.run(job, Step::Init, Stop::Cancel(cancel))
            .await
            .map(|_| ())
    }

    /// Runs one step. Output goes to the unit's log, redacted; for `show` the
    /// standard output is captured into memory instead and returned.
    /// Returns the captured output and the exit code (0, or 2 for a plan with changes).
    async fn run(
        &self,
        job: &UnitJob,
        step: Step,
        stop: Stop<'_>,
    ) -> Result<(Vec<u8>, i32), ExecError> {
        let (_, args) = command_line(job.tool, step, job);
        let program = self.binary(job.tool);
        let shown = format!("{program} {}", args.join(" "));
        let log = Arc::new(Mutex::new(LogSink::open(job)?));
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .line(&format!("$ {shown}"));
        let mut child = Command::new(program)
            .args(&args)
            .current_dir(&job.dir)
            .envs(environment())
            .env("TF_PLUGIN_CACHE_DIR", &self.plugin_cache)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ExecError::Spawn {
                command: shown.clone(),
                source,
            })?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let capture = step == Step::Show;
        let out_task = if capture {
            tokio::spawn(read_all(stdout))
        } else {
            let log = log.clone();
            tokio::spawn(async move {
                copy_lines(stdout, &log).await;
                Vec::new()
            })
        };
        let err_log = log.clone();
        let err_task = tokio::spawn(async move { copy_lines(stderr, &err_log).await });

        let status = self.wait(&mut child, job, &shown, stop).await;
        let captured = out_task.await.unwrap_or_default();
        let _ = err_task.await;
        let status = status?;
        let sink = log.lock().unwrap_or_else(|p| p.into_inner());
        let code = status.code().unwrap_or(-1);
        if code == 0 || (step == Step::Plan && code == 2) {
            return Ok((captured, code));
        }
        Err(ExecError::Failed {
            command: shown,
            code: status.code().unwrap_or(-1),
            excerpt: sink.excerpt(),
        })
    }

    async fn wait(
        &self,
        child: &mut Child,
        job: &UnitJob,
        shown: &str,
        stop: Stop<'_>,
    ) -> Result<std::process::ExitStatus, ExecError> {
        let timed_out = || ExecError::TimedOut {
            command: shown.to_string(),
            seconds: job.timeout.as_secs(),
        };
        match stop {
            Stop::Cancel(cancel) => {
                tokio::select! {
                    status = child.wait() => status.map_err(|e| ExecError::Spawn { command: shown.into(), source: e }),
                    _ = tokio::time::sleep(job.timeout) => { self.terminate(child).await; Err(timed_out()) }
                    _ = cancel.cancelled() => { self.terminate(child).await; Err(ExecError::Cancelled) }
                }
            }
            Stop::Shutdown(shutdown) => {
                // An apply runs to the end: only a shutdown, after its grace, stops it.
                tokio::select! {
                    status = child.wait() => return status.map_err(|e| ExecError::Spawn { command: shown.into(), source: e }),
                    _ = shutdown.cancelled() => {}
                }
                tokio::select! {
                    status = child.wait() => status.map_err(|e| ExecError::Spawn { command: shown.into(), source: e }),
                    _ = tokio::time::sleep(self.grace) => { self.terminate(child).await; Err(ExecError::Cancelled) }
                }
            }
        }
    }

    /// SIGTERM, then SIGKILL if the process is still there after the grace period.
    async fn terminate(&self, child: &mut Child) {
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            if tokio::time::timeout(self.grace, child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = child.kill().await;
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
}

impl ProcessExecutor {
    async fn plan_unit(
        &self,
        job: &UnitJob,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ExecError> {
        if let Some(dir) = job.plan_file.parent() {
            std::fs::create_dir_all(dir).map_err(|source| ExecError::Log {
                path: dir.display().to_string(),
                source,
            })?;
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

/// A unit's log: every line redacted, the last few kept for error messages.
struct LogSink {
    file: std::fs::File,
    tail: VecDeque<String>,
}

impl LogSink {
    fn open(job: &UnitJob) -> Result<LogSink, ExecError> {
        let err = |source| ExecError::Log {
            path: job.log.display().to_string(),
            source,
        };
        if let Some(dir) = job.log.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&job.log)
            .map_err(err)?;
        Ok(LogSink {
            file,
            tail: VecDeque::new(),
        })
    }

    fn line(&mut self, line: &str) {
        let clean = redact(line);
        let _ = writeln!(self.file, "{clean}");
        if !clean.trim().is_empty() {
            if self.tail.len() == EXCERPT_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(clean);
        }
    }

    fn excerpt(&self) -> String {
        self.tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

async fn copy_lines(stream: impl AsyncRead + Unpin, log: &Mutex<LogSink>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        log.lock().unwrap_or_else(|p| p.into_inner()).line(&line);
    }
}

async fn read_all(mut stream: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    buf
}
