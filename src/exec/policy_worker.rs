//! A policy evaluation in a child process of its own (`cascade policy-worker`), so that
//! it has a memory ceiling: regorus has no per-evaluation one cascade can use (its
//! `allocator-memory-limits` replaces the process's allocator and counts the whole
//! process), so the child runs under `RLIMIT_DATA` and dies alone when a rule builds a
//! value without bound. The time limit stays regorus's own, in the child; the parent
//! kills a child that outlives it by [`GRACE`].
//!
//! Owns the request and the reply (JSON over the child's standard input and output), the
//! child's limits and environment (none of the parent's), and reading how it ended.
//! Never: let the child see a credential, a path or anything but the set and the input
//! (the default branch's policy files and the sanitised document).

use crate::policy::engine::limits::{
    EVALUATION_MEMORY, EVALUATION_MEMORY_PER_INPUT_BYTE, EVALUATION_TIME,
};
use crate::policy::engine::{Evaluator, Findings, LimitKind, PolicyError, PolicyFile};
use serde::{Deserialize, Serialize};
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How long past the evaluation time limit a child may take (start-up and compiling)
/// before it is killed.
const GRACE: Duration = Duration::from_secs(5);
/// The most a child may write as its reply.
const MAX_REPLY_BYTES: u64 = 16 << 20;
/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "policy-worker";

/// Children alive at once: each may reach its ceiling.
static CHILDREN: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(crate::policy::engine::limits::CONCURRENT_EVALUATIONS);

/// Where evaluations run: the cascade binary to start as the child, and its ceiling.
#[derive(Clone, Debug)]
pub struct PolicyWorker {
    exe: PathBuf,
    memory: u64,
}

/// What the child is asked: one set, compiled in the child, and one input.
#[derive(Serialize, Deserialize)]
struct Request {
    name: String,
    files: Vec<(String, String)>,
    namespaces: Vec<String>,
    input: serde_json::Value,
}

/// What the child answers.
#[derive(Serialize, Deserialize)]
enum Reply {
    Findings(Findings),
    Time,
    Range,
    Failed(String),
}

impl PolicyWorker {
    /// Evaluations in children of `exe` (the `cascade` binary), each under
    /// [`EVALUATION_MEMORY`] of data and [`EVALUATION_MEMORY_PER_INPUT_BYTE`] more for each
    /// byte of its input.
    pub fn new(exe: PathBuf) -> PolicyWorker {
        PolicyWorker {
            exe,
            memory: EVALUATION_MEMORY,
        }
    }

    /// With another memory ceiling, in bytes.
    pub fn with_memory(mut self, memory: u64) -> PolicyWorker {
        self.memory = memory;
        self
    }

    /// `evaluator`'s findings for `input`, evaluated in a child process.
    pub async fn evaluate(
        &self,
        evaluator: &Evaluator,
        input: &serde_json::Value,
    ) -> Result<Findings, PolicyError> {
        let set = evaluator.name().to_string();
        let failed = |message: String| PolicyError::Eval {
            set: set.clone(),
            message,
        };
        let (files, namespaces) = evaluator.sources();
        let request = Request {
            name: set.clone(),
            files: files
                .iter()
                .map(|f| (f.path.clone(), f.text.clone()))
                .collect(),
            namespaces: namespaces.to_vec(),
            input: input.clone(),
        };
        let body = serde_json::to_vec(&request).map_err(|e| failed(e.to_string()))?;
        let mut command = tokio::process::Command::new(&self.exe);
        command
            .arg(SUBCOMMAND)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let memory = self
            .memory
            .saturating_add(EVALUATION_MEMORY_PER_INPUT_BYTE.saturating_mul(body.len() as u64));
        // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: memory as libc::rlim_t,
                    rlim_max: memory as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let _turn = CHILDREN.acquire().await;
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("cannot start the policy worker: {e}")))?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = child.stdout.take().expect("piped");
        let talk = async {
            // A child that dies early closes its input: its exit says why, not the write.
            let _ = stdin.write_all(&body).await;
            drop(stdin);
            let mut reply = Vec::new();
            let _ = (&mut stdout)
                .take(MAX_REPLY_BYTES)
                .read_to_end(&mut reply)
                .await;
            let status = child.wait().await;
            (reply, status)
        };
        let (reply, status) = match tokio::time::timeout(EVALUATION_TIME + GRACE, talk).await {
            Ok(done) => done,
            Err(_) => {
                return Err(PolicyError::Limit {
                    set,
                    what: LimitKind::Time(EVALUATION_TIME),
                });
            }
        };
        let status = status.map_err(|e| failed(format!("the policy worker was lost: {e}")))?;
        match serde_json::from_slice::<Reply>(&reply) {
            Ok(Reply::Findings(findings)) if status.success() => Ok(findings),
            Ok(Reply::Time) => Err(PolicyError::Limit {
                set,
                what: LimitKind::Time(EVALUATION_TIME),
            }),
            Ok(Reply::Range) => Err(PolicyError::Limit {
                set,
                what: LimitKind::Range,
            }),
            Ok(Reply::Failed(message)) => Err(failed(message)),
            // No reply: the allocator aborts the child when its data would pass the
            // ceiling, which is the one way it dies without answering.
            _ => Err(PolicyError::Limit {
                set,
                what: LimitKind::Memory(memory),
            }),
        }
    }
}

/// The child's side: reads one request from standard input, evaluates it, writes the
/// reply to standard output. Returns the process's exit code.
pub fn serve() -> i32 {
    let mut body = Vec::new();
    if std::io::stdin().read_to_end(&mut body).is_err() {
        return 2;
    }
    let reply = match serde_json::from_slice::<Request>(&body) {
        Err(e) => Reply::Failed(format!("the policy worker could not read its request: {e}")),
        Ok(request) => {
            drop(body);
            let files: Vec<PolicyFile> = request
                .files
                .into_iter()
                .map(|(path, text)| PolicyFile { path, text })
                .collect();
            match Evaluator::new(&request.name, &files, &request.namespaces)
                .and_then(|evaluator| evaluator.evaluate_blocking(&request.input))
            {
                Ok(findings) => Reply::Findings(findings),
                Err(PolicyError::Limit {
                    what: LimitKind::Time(_),
                    ..
                }) => Reply::Time,
                Err(PolicyError::Limit {
                    what: LimitKind::Range,
                    ..
                }) => Reply::Range,
                Err(PolicyError::Eval { message, .. }) => Reply::Failed(message),
                Err(other) => Reply::Failed(other.to_string()),
            }
        }
    };
    let Ok(text) = serde_json::to_vec(&reply) else {
        return 2;
    };
    let mut out = std::io::stdout().lock();
    if out.write_all(&text).and_then(|()| out.flush()).is_err() {
        return 2;
    }
    0
}
