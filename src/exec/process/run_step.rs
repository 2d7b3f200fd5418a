//! A workflow's `run` step in the process executor: the team's own program, run as
//! terraform's `plan` is (detached in its own process group, in the sandbox with the
//! plan's reach but the saved plan only readable, with the job's environment, within
//! the step's timeout, its output redacted into the unit's log), given its unit's
//! facts as `CASCADE_*` variables and, when it asks, the plan JSON on its standard
//! input through a pipe.
//!
//! Owns the step's variables and what is handed back of its output (its end, redacted,
//! the server's paths replaced). Never writes the plan JSON to a file, never gives a
//! step any other `CASCADE_*` variable, and never runs one unconfined unless the
//! sandbox is off by choice.

use super::{ProcessExecutor, Stop};
use crate::exec::command::Step;
use crate::exec::log::LogSink;
use crate::exec::preflight;
use crate::exec::step_process::{self, Launch, StepFiles, StopOnDrop, private_dir};
use crate::exec::{ExecError, MAX_STEP_OUTPUT, StepCall, StepOutput, UnitJob};
use crate::redact::ServerPaths;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// Kept of the output beyond [`MAX_STEP_OUTPUT`] until the server's paths are
/// replaced, so a path the cut would split is replaced whole first.
const SCRUB_SLACK: usize = 4 << 10;

impl ProcessExecutor {
    /// Runs `call`'s step for `job` (see [`crate::exec::Executor::run_step`]).
    pub(super) async fn step(
        &self,
        job: &UnitJob,
        call: StepCall<'_>,
        cancel: &CancellationToken,
    ) -> Result<StepOutput, ExecError> {
        self.ready(job)?;
        preflight::check(job, &self.tracked, &self.records)?;
        let vars = self.job_vars(job)?;
        let argv = &call.step.command;
        let program = self.step_program(job, call)?;
        if cancel.is_cancelled() {
            return Err(ExecError::Cancelled);
        }
        let _slot = self.slot().await;
        let name = call.step.name.clone();
        let files = StepFiles::new(&job.work, &files_name(job, call));
        private_dir(&job.work)?;
        let tmp = self.tmp(job);
        private_dir(&tmp)?;
        // The plan's reach, but its saved plan only to read (`show`'s).
        let mut reach = self.reach(job, Step::Show, &tmp, &vars);
        reach.read_files.extend(program);
        reach
            .read_files
            .extend(results_file(call).map(Path::to_path_buf));
        let confined = self
            .sandbox
            .confine(&reach)
            .map_err(|source| ExecError::Sandbox {
                command: name.clone(),
                source,
            })?;
        let mut log = LogSink::open(&job.log)?;
        log.note(&format!("$ [{}] {}", call.hook.name(), argv.join(" ")));
        log.keep(MAX_STEP_OUTPUT + SCRUB_SLACK);
        let limit = call.step.timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let lock =
            step_process::lock_after_earlier(&files, Some(cancel), Some(deadline), self.grace)
                .await?;
        let mut env = self.child_env(job, &vars, confined.as_ref().map(|_| tmp.as_path()));
        env.extend(step_vars(job, call));
        let launch = Launch {
            program: &argv[0],
            args: &argv[1..],
            dir: &job.dir,
            env,
            capture_stdout: false,
            pipe_stdin: call.stdin.is_some(),
            confined: confined.as_ref(),
        };
        let began = std::time::Instant::now();
        let mut started =
            step_process::start(launch, &files, lock).map_err(|source| ExecError::Spawn {
                command: argv[0].clone(),
                source,
            })?;
        drop(confined);
        let mut stop_on_drop = StopOnDrop::new(&started, &files, self.grace, true);
        let stdin = started.child.stdin.take();
        let wait = self.wait(&mut started, limit, &name, &files.out, Stop::Cancel(cancel));
        let status = feeding(wait, stdin, call.stdin.unwrap_or_default()).await;
        stop_on_drop.disarm();
        let took = began.elapsed();
        log.output(&files.out, &self.redactor)?;
        files.remove();
        let _ = std::fs::remove_dir_all(&tmp);
        let code = status?.code().unwrap_or(-1);
        if code != 0
            && let Some(refused) = self.refusal(job, &name, &log)
        {
            return Err(refused);
        }
        let (text, dropped) = log.kept().unwrap_or_default();
        let text = self.step_paths(job, call, &tmp).scrub(&text);
        let (output, cut) = last_bytes(&text, MAX_STEP_OUTPUT);
        Ok(StepOutput {
            code,
            output: output.to_string(),
            truncated: dropped || cut,
            took,
        })
    }

    /// The step's program as the sandbox must let it run: one named by a bare name is
    /// found on the children's `PATH` (and may be read there); one named by a path is run
    /// as written, from the unit's directory, if the sandbox lets it. Refused when there
    /// is none, naming it as the workflow wrote it.
    fn step_program(
        &self,
        job: &UnitJob,
        call: StepCall<'_>,
    ) -> Result<Option<PathBuf>, ExecError> {
        let Some(program) = call.step.command.first() else {
            return Err(ExecError::Refused {
                reason: format!(
                    "the step `{}` ({}) has no command",
                    call.step.name,
                    call.hook.name()
                ),
            });
        };
        let missing = |why: &str| ExecError::Spawn {
            command: program.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, why.to_string()),
        };
        if program.contains('/') {
            return match std::fs::metadata(job.dir.join(program)) {
                Ok(_) => Ok(None),
                Err(_) => Err(missing("no such file")),
            };
        }
        match self.resolve(program) {
            Some(found) => Ok(Some(found)),
            None => Err(missing("not found on the server's PATH")),
        }
    }

    /// The server's paths a step's output may name, shown as what the step knows them by.
    fn step_paths(&self, job: &UnitJob, call: StepCall<'_>, tmp: &Path) -> ServerPaths {
        let mut paths = ServerPaths::new()
            .with_home()
            .with_registered()
            .with(&job.plan_file, "$CASCADE_PLANFILE")
            .with(tmp, "$TMPDIR")
            .with(&job.root, ".");
        if let Some(results) = results_file(call) {
            paths = paths.with(results, "$CASCADE_RESULTS_FILE");
        }
        if let Some(run) = job.log.parent() {
            paths = paths.with(run, "<run>");
        }
        if let Some(data) = self.dir.parent() {
            paths = paths.with(data, "<data-dir>");
        }
        paths
    }
}

/// Waits for `wait` while writing `bytes` to the step's standard input (when it has a
/// pipe), then closes it. A step that does not read holds nothing up: the write waits
/// only as long as the step runs (the timeout bounds it), and a step that exits
/// without reading all of it is not an error of cascade's (`EPIPE`).
async fn feeding<T>(
    wait: impl Future<Output = T>,
    stdin: Option<tokio::process::ChildStdin>,
    bytes: &[u8],
) -> T {
    let feed = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(bytes).await;
            // Dropped here: the step reads the end of its input.
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        out = wait => out,
        () = feed => unreachable!("feeding never ends on its own"),
    }
}

/// The results file a step may read: a post step's only.
fn results_file<'a>(call: StepCall<'a>) -> Option<&'a Path> {
    call.vars
        .results_file
        .as_deref()
        .filter(|_| call.hook.is_post())
}

/// The `CASCADE_*` variables a step gets: exactly these (the server's own never pass).
fn step_vars(job: &UnitJob, call: StepCall<'_>) -> Vec<(OsString, OsString)> {
    let facts = call.vars;
    let mut vars: Vec<(&str, OsString)> = vec![
        ("CASCADE_UNIT", job.unit.as_str().into()),
        ("CASCADE_REPO", facts.repo.as_str().into()),
        ("CASCADE_HEAD_SHA", facts.head_sha.as_str().into()),
        ("CASCADE_BASE_SHA", facts.base_sha.as_str().into()),
        ("CASCADE_PHASE", call.hook.name().into()),
        ("CASCADE_PLANFILE", job.plan_file.as_os_str().into()),
    ];
    if let Some(pr) = facts.pr {
        vars.push(("CASCADE_PR", pr.to_string().into()));
    }
    if let Some(id) = &facts.plan_id {
        vars.push(("CASCADE_PLAN_ID", id.as_str().into()));
    }
    if let Some(results) = results_file(call) {
        vars.push(("CASCADE_RESULTS_FILE", results.as_os_str().into()));
    }
    vars.into_iter().map(|(k, v)| (k.into(), v)).collect()
}

/// The name of the step's working files: `step-<hook>-<n>`, `n` its place in the hook,
/// apart from every built-in command's.
fn files_name(job: &UnitJob, call: StepCall<'_>) -> String {
    let place = job
        .workflow
        .as_deref()
        .map(|w| w.steps(call.hook))
        .and_then(|steps| {
            let same = steps.iter().position(|s| std::ptr::eq(s, call.step));
            same.or_else(|| steps.iter().position(|s| s == call.step))
        })
        .unwrap_or(0);
    format!("step-{}-{place}", call.hook.name())
}

/// The last `max` bytes of `text`, starting on a character boundary, and whether any
/// was cut.
fn last_bytes(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_bytes_start_on_a_character() {
        assert_eq!(last_bytes("abc", 3), ("abc", false));
        assert_eq!(last_bytes("abcd", 3), ("bcd", true));
        // `é` is two bytes: the cut moves past it rather than split it.
        assert_eq!(last_bytes("aébc", 3), ("bc", true));
        assert_eq!(last_bytes("aébc", 4), ("ébc", true));
    }
}
