//! One command of a unit as an operating-system process that outlives
//! cascade: started through a tiny `/bin/sh` wrapper in its own process
//! group, its output going to a file in the unit's private working directory,
//! its exit status written to a file by the wrapper, and an exclusive `flock`
//! on a lock file held by the wrapper for exactly as long as it lives.
//!
//! The lock is how a restarted cascade tells a live command from a dead one
//! without trusting process ids: it is taken before the wrapper starts, handed
//! to the wrapper as its standard input (the command itself gets
//! `/dev/null`), and released by the kernel when the wrapper exits, whichever
//! way. While the lock is held, the process id the wrapper wrote is its own,
//! so signalling its group is safe.
//!
//! Never runs two commands of one unit's job at once (a command left by an
//! earlier cascade is waited for first), and never kills a command it did not
//! time out, cancel or shut down.

use super::ExecError;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::fs::{File, TryLockError};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a wait for a process cascade did not start looks again.
const POLL: Duration = Duration::from_millis(200);

/// The wrapper: `$1` is where it writes its process id, `$2` where it writes
/// the exit status, the rest is the command, whose standard input `$stdin`
/// redirects. Its no-op traps keep it alive while the command handles
/// SIGTERM/SIGINT (a shell runs a trap only once its foreground command has
/// finished), so the status is written even when the command is stopped.
macro_rules! wrapper {
    ($stdin:literal) => {
        concat!(
            "trap : TERM INT HUP\n",
            "printf '%s\\n' \"$$\" > \"$1\" || exit 125\n",
            "status=$2\n",
            "shift 2\n",
            "\"$@\" ",
            $stdin,
            "\n",
            "code=$?\n",
            "printf '%s\\n' \"$code\" > \"$status\"\n",
            "exit \"$code\"\n",
        )
    };
}

/// The lock is the wrapper's standard input; the command reads nothing.
const WRAPPER: &str = wrapper!("</dev/null");

/// The wrapper's standard input is a pipe the command reads (a step's plan JSON),
/// and the lock is its descriptor 3, which the command does not inherit.
const WRAPPER_PIPED: &str = wrapper!("3<&-");

/// The descriptor the lock has in a wrapper whose standard input is a pipe.
const LOCK_FD: i32 = 3;

/// Creates `dir` (and its missing parents) readable by cascade's user only.
pub(super) fn private_dir(dir: &Path) -> Result<(), ExecError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| ExecError::Log { source })
}

/// Makes `file` (and its directory) readable by cascade's user only, empty,
/// unless it is there already.
pub(super) fn private_file(file: &Path) -> Result<(), ExecError> {
    if let Some(dir) = file.parent() {
        private_dir(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(file)
        .map(drop)
        .map_err(|source| ExecError::Log { source })
}

/// The working files of one step of one unit's job.
#[derive(Clone, Debug)]
pub(super) struct StepFiles {
    /// Standard output and error, raw, until redacted into the log.
    pub out: PathBuf,
    /// The exit status the wrapper writes.
    pub status: PathBuf,
    /// The wrapper's process id (= its process group).
    pub pid: PathBuf,
    /// Locked while the wrapper lives. One per job: its steps never overlap.
    pub lock: PathBuf,
}

impl StepFiles {
    pub fn new(work: &Path, step: &str) -> StepFiles {
        StepFiles {
            out: work.join(format!("{step}.out")),
            status: work.join(format!("{step}.status")),
            pid: work.join("running.pid"),
            lock: work.join("running.lock"),
        }
    }

    /// True when a process of this step was started and its result not yet consumed.
    pub fn started(&self) -> bool {
        self.status.exists() || self.out.exists()
    }

    /// The exit status the wrapper wrote, if it got that far.
    pub fn exit_status(&self) -> Option<i32> {
        std::fs::read_to_string(&self.status)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    /// Removes everything the step left; its output must have been consumed.
    pub fn remove(&self) {
        for f in [&self.out, &self.status, &self.pid, &self.lock] {
            let _ = std::fs::remove_file(f);
        }
    }

    fn open_lock(&self) -> Result<File, ExecError> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(&self.lock)
            .map_err(|source| ExecError::Log { source })
    }

    fn process_group(&self) -> Option<Pid> {
        std::fs::read_to_string(&self.pid)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .filter(|pid| *pid > 1)
            .map(Pid::from_raw)
    }
}

/// Whether the process of a job is alive, found through its lock.
pub(super) enum Liveness {
    /// Nobody holds the lock: cascade holds it now.
    Free(File),
    /// The wrapper of an earlier cascade still runs.
    Held,
}

/// Tries the job's lock once.
pub(super) fn try_lock(files: &StepFiles) -> Result<Liveness, ExecError> {
    let file = files.open_lock()?;
    match file.try_lock() {
        Ok(()) => Ok(Liveness::Free(file)),
        Err(TryLockError::WouldBlock) => Ok(Liveness::Held),
        Err(TryLockError::Error(source)) => Err(ExecError::Log { source }),
    }
}

/// Takes the job's lock, first waiting for a command an earlier cascade left
/// running in this job. `cancel` (or the deadline) stops that command's group
/// too: SIGTERM, then SIGKILL after `grace`.
pub(super) async fn lock_after_earlier(
    files: &StepFiles,
    cancel: Option<&CancellationToken>,
    deadline: Option<tokio::time::Instant>,
    grace: Duration,
) -> Result<File, ExecError> {
    let mut stopping: Option<tokio::time::Instant> = None;
    loop {
        if let Liveness::Free(lock) = try_lock(files)? {
            return Ok(lock);
        }
        let now = tokio::time::Instant::now();
        let asked = cancel.is_some_and(|c| c.is_cancelled()) || deadline.is_some_and(|d| now >= d);
        match stopping {
            None if asked => {
                signal(files.process_group(), Signal::SIGTERM);
                stopping = Some(now + grace);
            }
            Some(kill_at) if now >= kill_at => {
                signal(files.process_group(), Signal::SIGKILL);
                return Err(ExecError::Cancelled);
            }
            _ => {}
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until the job's lock is free (the wrapper has exited) or `stop` fires.
/// True when it is free.
pub(super) async fn wait_unlocked(
    files: &StepFiles,
    stop: &CancellationToken,
) -> Result<bool, ExecError> {
    loop {
        if let Liveness::Free(_) = try_lock(files)? {
            return Ok(true);
        }
        if stop.is_cancelled() {
            return Ok(false);
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.cancelled() => {}
        }
    }
}

/// Sends `signal` to a process group (nothing when unknown or already gone).
pub(super) fn signal(group: Option<Pid>, signal: Signal) {
    if let Some(group) = group {
        let _ = killpg(group, signal);
    }
}

/// A started wrapper.
pub(super) struct Started {
    pub child: tokio::process::Child,
    pub group: Option<Pid>,
}

/// Stops a step's process group when the future waiting for it is dropped
/// (a server killing its workers): a plan must not run on unobserved. An
/// apply is never armed: it outlives cascade on purpose.
pub(super) struct StopOnDrop {
    group: Option<Pid>,
    lock: PathBuf,
    grace: Duration,
    armed: bool,
}

impl StopOnDrop {
    pub fn new(started: &Started, files: &StepFiles, grace: Duration, armed: bool) -> StopOnDrop {
        StopOnDrop {
            group: started.group,
            lock: files.lock.clone(),
            grace,
            armed,
        }
    }

    /// The step ended (or was stopped) while observed.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        signal(self.group, Signal::SIGTERM);
        let (group, grace) = (self.group, self.grace);
        let files = StepFiles {
            lock: self.lock.clone(),
            ..StepFiles::new(Path::new(""), "")
        };
        // No runtime may be left to wait on: a plain thread escalates.
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            if matches!(try_lock(&files), Ok(Liveness::Held)) {
                signal(group, Signal::SIGKILL);
            }
        });
    }
}

/// Everything a step is started with.
pub(super) struct Launch<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub dir: &'a Path,
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Standard output through a pipe (the plan JSON), not to the output file.
    pub capture_stdout: bool,
    /// Standard input through a pipe (a step's plan JSON), not `/dev/null`: the
    /// started child's `stdin` is its write end.
    pub pipe_stdin: bool,
    /// The sandbox's ruleset, entered by the wrapper before it runs anything
    /// (`None`: unconfined).
    pub confined: Option<&'a super::sandbox::Confined>,
}

/// Starts `launch` under the wrapper, holding `lock` (which it takes over).
pub(super) fn start(
    launch: Launch<'_>,
    files: &StepFiles,
    lock: File,
) -> Result<Started, std::io::Error> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&files.out)?;
    let stdout = if launch.capture_stdout {
        std::process::Stdio::piped()
    } else {
        std::process::Stdio::from(out.try_clone()?)
    };
    let _ = std::fs::remove_file(&files.status);
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(if launch.pipe_stdin {
            WRAPPER_PIPED
        } else {
            WRAPPER
        })
        .arg("cascade-step")
        .arg(&files.pid)
        .arg(&files.status)
        .arg(launch.program)
        .args(launch.args)
        .current_dir(launch.dir)
        .env_clear()
        .envs(launch.env)
        .stdout(stdout)
        .stderr(std::process::Stdio::from(out))
        // Its own group: the terminal's Ctrl-C and cascade's death do not reach it;
        // stopping it reaches every process it started.
        .process_group(0)
        .kill_on_drop(false);
    if let Some(confined) = launch.confined {
        let fd = confined.raw();
        // SAFETY: `enter` makes only system calls, as the child of a fork must.
        unsafe {
            command.pre_exec(move || super::sandbox::enter(fd));
        }
    }
    // Kept open until the child has it: its descriptor is the child's to inherit.
    let mut lock_held = None;
    if launch.pipe_stdin {
        use std::os::fd::AsRawFd;
        let fd = lock.as_raw_fd();
        command.stdin(std::process::Stdio::piped());
        // After `enter`, whose ruleset may be the descriptor this replaces.
        // SAFETY: `dup2` and `fcntl` are system calls, as the child of a fork must make.
        unsafe {
            command.pre_exec(move || lock_as_fd3(fd));
        }
        lock_held = Some(lock);
    } else {
        command.stdin(std::process::Stdio::from(lock));
    }
    let child = command.spawn()?;
    // The command holds cascade's copy of the lock (as the child's stdin):
    // dropping it leaves the lock to the wrapper alone.
    drop(command);
    drop(lock_held);
    let group = child.id().map(|id| Pid::from_raw(id as i32));
    Ok(Started { child, group })
}

/// In the child, between `fork` and `exec`: the lock at `fd` becomes descriptor
/// [`LOCK_FD`], inherited across `exec` (every descriptor cascade opens is
/// close-on-exec).
fn lock_as_fd3(fd: i32) -> std::io::Result<()> {
    // SAFETY: plain system calls with integer arguments.
    let done = unsafe {
        if fd == LOCK_FD {
            libc::fcntl(fd, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, LOCK_FD)
        }
    };
    if done < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrapper of terraform's commands is the one an earlier cascade may have left
    /// running: byte for byte what it was before steps could be given a pipe.
    #[test]
    fn the_wrappers_differ_only_in_the_commands_standard_input() {
        assert_eq!(
            WRAPPER,
            "trap : TERM INT HUP\nprintf '%s\\n' \"$$\" > \"$1\" || exit 125\nstatus=$2\nshift 2\n\"$@\" </dev/null\ncode=$?\nprintf '%s\\n' \"$code\" > \"$status\"\nexit \"$code\"\n"
        );
        assert_eq!(WRAPPER_PIPED, WRAPPER.replace("</dev/null", "3<&-"));
    }
}
