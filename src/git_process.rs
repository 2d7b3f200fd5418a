//! git run as a child process, isolated from the environment it runs in: the server's
//! mirrors of pull requests' repositories (`workspace`) and the remote sources stacks
//! name (`catalog`) are fetched this way.
//!
//! Owns: the isolation (no system, global or user configuration, `HOME` under our own
//! root, no prompts, no credential helpers, no hooks, only the transports allowed, the
//! whole process group killed at the timeout) and redacting what git says.
//! Never: decides what to fetch or from where (its callers do), or puts a secret into an
//! argument (configuration travels through git's environment).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Environment variables passed through to git although they start with `GIT_`:
/// a private CA for GitHub Enterprise.
const PASS_GIT_ENV: &[&str] = &["GIT_SSL_CAINFO", "GIT_SSL_CAPATH"];

/// How a git invocation went wrong, before the caller says what it was doing.
pub enum GitFailure {
    /// git could not be started at all.
    Spawn(std::io::Error),
    /// Killed after the timeout.
    TimedOut(Duration),
    /// Non-zero exit; git's message, redacted.
    Exit(String),
}

impl GitFailure {
    /// `"<doing>: <what happened>"`, for an error message.
    pub fn describe(&self, doing: &str) -> String {
        match self {
            GitFailure::Spawn(e) => format!(
                "{doing}: cannot run git ({e}); install git 2.32 or newer on the server's PATH"
            ),
            GitFailure::TimedOut(d) => {
                format!("{doing}: git did not finish within {} s", d.as_secs())
            }
            GitFailure::Exit(message) => format!("{doing}: {message}"),
        }
    }
}

/// One git invocation: arguments, configuration (set through the
/// environment, never the command line), and the strings to redact.
pub struct Git {
    args: Vec<OsString>,
    config: Vec<(String, String)>,
    secrets: Vec<String>,
    timeout: Duration,
    /// Where git runs; the isolation root when unset.
    cwd: Option<PathBuf>,
    /// The largest file git may write (`RLIMIT_FSIZE`): a fetch's pack is one file, so
    /// this bounds what a remote can make cascade store.
    max_file_bytes: Option<u64>,
}

impl Git {
    pub fn arg(mut self, arg: impl Into<OsString>) -> Git {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Git {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// `--git-dir=<dir>`: never let git discover a repository on its own.
    pub fn git_dir(self, dir: &Path) -> Git {
        let mut flag = OsString::from("--git-dir=");
        flag.push(dir);
        self.arg(flag)
    }
}

impl Git {
    /// An invocation with no arguments yet.
    pub fn new(timeout: Duration) -> Git {
        Git {
            args: Vec::new(),
            config: Vec::new(),
            secrets: Vec::new(),
            timeout,
            cwd: None,
            max_file_bytes: None,
        }
    }

    /// No file git writes may grow past `bytes`: git is killed (`SIGXFSZ`) at the limit.
    pub fn max_file_bytes(mut self, bytes: u64) -> Git {
        self.max_file_bytes = Some(bytes);
        self
    }

    /// `key=value` set through git's environment (`GIT_CONFIG_KEY_n`), after the
    /// isolation's own: the later one wins.
    pub fn config(mut self, key: &str, value: &str) -> Git {
        self.config.push((key.to_string(), value.to_string()));
        self
    }

    /// A string git's messages must never show (a token it was given).
    pub fn secret(mut self, secret: &str) -> Git {
        self.secrets.push(secret.to_string());
        self
    }

    /// Where git runs (the isolation root when unset).
    pub fn cwd(mut self, dir: &Path) -> Git {
        self.cwd = Some(dir.to_path_buf());
        self
    }
}

/// Where isolated git runs: `HOME` and the ceiling for repository discovery.
#[derive(Clone, Debug)]
pub struct Isolation {
    root: PathBuf,
    /// The operator's own git configuration (`--git-config`), read as git's global
    /// file: `url.<base>.insteadOf` rewrites, credentials for private mirrors.
    global_config: Option<PathBuf>,
    /// The CLI's mode: git as the user runs it (their configuration, credential
    /// helpers, ssh agent), only the timeout, the size cap and prompts off.
    users_own: bool,
}

impl Isolation {
    pub fn new(root: &Path) -> Isolation {
        Isolation {
            root: root.to_path_buf(),
            global_config: None,
            users_own: false,
        }
    }

    /// git as the user at the terminal runs it, in `root`: what `cascade` on a laptop
    /// fetches, the user's own git would. Prompts stay off (discovery cannot answer one).
    pub fn users_own(root: &Path) -> Isolation {
        Isolation {
            root: root.to_path_buf(),
            global_config: None,
            users_own: true,
        }
    }

    /// git reads `file` as its global configuration (the operator's, never a pull request's).
    pub fn with_global_config(mut self, file: Option<PathBuf>) -> Isolation {
        self.global_config = file;
        self
    }

    /// Runs git isolated from the environment's configuration: no system or
    /// global config, `HOME` under the root, no prompts, no credential
    /// helpers, no hooks, only the file and http(s) transports, and a timeout
    /// after which the whole process group is killed. Returns stdout.
    pub async fn run(&self, git: Git) -> Result<String, GitFailure> {
        let mut cmd = Command::new("git");
        cmd.args(&git.args)
            .current_dir(git.cwd.as_deref().unwrap_or(&self.root))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if self.users_own {
            tokio::fs::create_dir_all(&self.root)
                .await
                .map_err(GitFailure::Spawn)?;
            cmd.env("GIT_TERMINAL_PROMPT", "0")
                .env("GIT_CONFIG_COUNT", git.config.len().to_string());
            for (i, (key, value)) in git.config.iter().enumerate() {
                cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                    .env(format!("GIT_CONFIG_VALUE_{i}"), value);
            }
        } else {
            self.isolate(&mut cmd, &git.config).await?;
        }
        self.wait(cmd, &git).await
    }

    /// The environment of an isolated git: see [`Isolation::run`].
    async fn isolate(
        &self,
        cmd: &mut Command,
        extra: &[(String, String)],
    ) -> Result<(), GitFailure> {
        let home = self.root.join("home");
        tokio::fs::create_dir_all(&home)
            .await
            .map_err(GitFailure::Spawn)?;
        let mut config: Vec<(String, String)> = [
            ("protocol.allow", "never"),
            ("protocol.file.allow", "always"),
            ("protocol.http.allow", "always"),
            ("protocol.https.allow", "always"),
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
            ("gc.autoDetach", "false"),
            ("maintenance.autoDetach", "false"),
            ("advice.detachedHead", "false"),
            ("init.defaultBranch", "main"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        // The operator's file may name credential helpers for a private mirror; without
        // one, none runs (an empty value clears the list).
        if self.global_config.is_none() {
            config.push(("credential.helper".into(), String::new()));
        }
        config.extend(extra.iter().cloned());
        for (key, _) in std::env::vars_os() {
            let key_str = key.to_string_lossy();
            if (key_str.starts_with("GIT_") && !PASS_GIT_ENV.contains(&key_str.as_ref()))
                || key_str == "SSH_ASKPASS"
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env(
                "GIT_CONFIG_GLOBAL",
                self.global_config
                    .as_deref()
                    .unwrap_or(Path::new("/dev/null")),
            )
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "")
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_COUNT", config.len().to_string());
        for (i, (key, value)) in config.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        Ok(())
    }

    /// Starts `cmd` and waits for it within `git`'s timeout; stdout, or why not.
    async fn wait(&self, mut cmd: Command, git: &Git) -> Result<String, GitFailure> {
        if let Some(bytes) = git.max_file_bytes {
            // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: bytes,
                        rlim_max: bytes,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().map_err(GitFailure::Spawn)?;
        let pid = child.id();
        let output = match tokio::time::timeout(git.timeout, child.wait_with_output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => return Err(GitFailure::Spawn(e)),
            Err(_) => {
                // git's helpers (remote-https, index-pack) share its group.
                if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(GitFailure::TimedOut(git.timeout));
            }
        };
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let message = if message.is_empty() {
            format!("git exited with {}", output.status)
        } else {
            message
        };
        Err(GitFailure::Exit(redact(&message, &git.secrets)))
    }
}

/// `text` with every secret and every URL's user-info replaced by `***`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), "***");
    }
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        result.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(userinfo) => {
                result.push_str("***");
                result.push_str(&tail[userinfo..end]);
            }
            None => result.push_str(&tail[..end]),
        }
        rest = &tail[end..];
    }
    result.push_str(rest);
    // Authorization headers echoed by a verbose git, whatever the token.
    redact_auth_headers(&result)
}

/// Replaces the credentials after `Authorization: Basic|Bearer|token`.
fn redact_auth_headers(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let marker = "authorization:";
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut search = 0;
    while let Some(pos) = lower[search..].find(marker) {
        let start = search + pos + marker.len();
        // Skip the scheme word, then blank the credential up to whitespace or `;`.
        let after = &text[start..];
        let trimmed = after.trim_start();
        let scheme_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let cred_start = start + (after.len() - trimmed.len()) + scheme_end;
        let cred = &text[cred_start..];
        let cred_trim = cred.trim_start();
        let cred_begin = cred_start + (cred.len() - cred_trim.len());
        let cred_len = cred_trim
            .find(|c: char| c.is_whitespace() || c == ';')
            .unwrap_or(cred_trim.len());
        out.push_str(&text[last..cred_begin]);
        if cred_len > 0 {
            out.push_str("***");
        }
        last = cred_begin + cred_len;
        search = last.max(start);
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
#[path = "git_process/tests.rs"]
mod tests;
