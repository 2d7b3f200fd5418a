//! Several `cascade serve` replicas on one PostgreSQL database, for
//! `tests/it/bot_replicas.rs`: in process (`cascade::server::start` once per
//! replica, each with its own data directory) or as real processes (to be
//! SIGKILLed), a stand-in `terraform` that logs every `plan` and `apply` with
//! the directory it ran in (so a test can tell which replica planned which
//! unit of which pull request, and how often) and can be made slow, and waits
//! with room for a 2-core machine. Needs `mod bot_world` and `mod fake_github`
//! at the test's root.

use crate::support::bot_world::{
    REPO, World, git_out, push_change, serve_config, serve_process_in,
};
use crate::support::fake_github::{Delivery, FileChange, PrSpec};
use cascade::server::{RunningServer, ServeConfig, start};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The lease the replicas run with: short, so a takeover happens within seconds.
pub const LEASE: Duration = Duration::from_secs(3);

/// Replicas started with `cascade::server::start` in this process.
pub struct InProcess {
    pub servers: Vec<RunningServer>,
    data: Vec<tempfile::TempDir>,
}

/// `count` in-process replicas on `database`, each with its own data directory, the
/// test lease and `tweak` applied to its configuration.
pub async fn in_process(
    w: &World,
    database: &str,
    count: usize,
    tweak: impl Fn(&mut ServeConfig),
) -> InProcess {
    let mut servers = Vec::new();
    let mut data = Vec::new();
    for _ in 0..count {
        let dir = tempfile::tempdir().unwrap();
        let mut config = serve_config(&w.fake, dir.path());
        config.database_url = Some(database.to_string().into());
        config.replica_lease = LEASE;
        tweak(&mut config);
        servers.push(start(config).await.unwrap());
        data.push(dir);
    }
    InProcess { servers, data }
}

impl InProcess {
    /// The webhook URL of replica `i`.
    pub fn hook(&self, i: usize) -> String {
        format!("http://{}/webhooks/github", self.servers[i].addr)
    }

    /// Replica `i`'s data directory.
    pub fn data(&self, i: usize) -> PathBuf {
        self.data[i].path().canonicalize().unwrap()
    }

    /// The replicas' job watches, for [`crate::support::wait::until`].
    pub fn jobs(&self) -> Vec<tokio::sync::watch::Receiver<cascade::bot::JobCounts>> {
        self.servers.iter().map(|s| s.bot.jobs()).collect()
    }

    pub async fn shutdown(self) {
        for server in self.servers {
            server.shutdown().await.unwrap();
        }
    }
}

/// A replica running as a real `cascade serve` process.
pub struct Process {
    pub child: std::process::Child,
    pub port: u16,
    data: tempfile::TempDir,
}

/// `count` replica processes on `database` with `lease`, `--parallelism 1` and `extra`
/// arguments, each listening; each logs to `serve.log` in its data directory.
pub async fn processes(
    w: &World,
    database: &str,
    count: usize,
    lease: Duration,
    extra: &[&OsStr],
) -> Vec<Process> {
    let lease = lease.as_secs().to_string();
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("--database-url"),
        OsStr::new(database),
        OsStr::new("--replica-lease"),
        OsStr::new(&lease),
    ];
    args.extend_from_slice(extra);
    let mut started = Vec::new();
    for _ in 0..count {
        let data = tempfile::tempdir().unwrap();
        let port = crate::support::free_port();
        let log = std::fs::File::create(data.path().join("serve.log")).unwrap();
        let child = serve_process_in(w, data.path(), port, &args, log.into());
        started.push(Process { child, port, data });
    }
    for p in &started {
        crate::support::bot_world::wait_listening(p.port).await;
    }
    started
}

impl Process {
    pub fn hook(&self) -> String {
        format!("http://127.0.0.1:{}/webhooks/github", self.port)
    }

    /// Its data directory.
    pub fn data(&self) -> PathBuf {
        self.data.path().canonicalize().unwrap()
    }

    /// SIGKILL, and reaped (a zombie would still count as a live apply owner).
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Its log, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("serve.log")).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stand-in `terraform`: logs `plan` and `apply` (verb, milliseconds since the
/// epoch, directory), sleeps as long as its `<verb>.sleep` file says, then runs the
/// real terraform. The sleeps can change while replicas run.
pub struct Terraform {
    dir: tempfile::TempDir,
    /// The collector of the calls: it serves while the stand-in lives.
    _log: crate::support::call_log::CallLog,
}

/// One logged `plan` or `apply`.
#[derive(Debug, Clone)]
pub struct Call {
    pub verb: String,
    /// Milliseconds since the epoch, when it started.
    pub at_ms: u128,
    /// The unit's directory in some replica's checkout.
    pub dir: String,
}

impl Terraform {
    pub fn new() -> Terraform {
        let dir = tempfile::tempdir().unwrap();
        let log = Terraform::log(dir.path());
        let script = format!(
            "#!/bin/bash\n{}case \"$1\" in plan|apply)\n  log_call \"$1 $(date +%s%3N) $(pwd -P)\"\n  \
             sleep \"$CALL_REPLY\";;\nesac\nexec {} \"$@\"\n",
            log.bash_function(),
            crate::support::real_terraform()
        );
        let bin = dir.path().join("terraform");
        std::fs::write(&bin, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Terraform { dir, _log: log }
    }

    /// The calls' log in `dir`, each call answered with how long its verb sleeps
    /// (`<verb>.sleep` there): the tool runs in the sandbox, which keeps it from
    /// writing or reading the test's files.
    fn log(dir: &Path) -> crate::support::call_log::CallLog {
        let sleeps = dir.to_path_buf();
        crate::support::call_log::CallLog::answering(&dir.join("calls.log"), move |line| {
            let verb = line.split(' ').next().unwrap_or_default();
            std::fs::read_to_string(sleeps.join(format!("{verb}.sleep")))
                .unwrap_or_else(|_| "0".into())
        })
    }

    /// A scripted `terraform` that runs no real one: `init` succeeds, `plan` logs,
    /// sleeps as set, writes its `-out` file and reports one resource to create,
    /// `show -json` prints that plan, `apply` logs, sleeps and succeeds. A unit then
    /// takes a fixed time and no CPU, so a bench measures cascade, not terraform.
    #[allow(dead_code, reason = "benches/replicas.rs")]
    pub fn scripted() -> Terraform {
        let dir = tempfile::tempdir().unwrap();
        let log = Terraform::log(dir.path());
        let show = serde_json::json!({
            "format_version": "1.2",
            "terraform_version": "1.11.4",
            "planned_values": {"root_module": {}},
            "resource_changes": [{
                "address": "terraform_data.unit", "mode": "managed", "type": "terraform_data",
                "name": "unit", "provider_name": "terraform.io/builtin/terraform",
                "change": {"actions": ["create"], "before": null, "after": {"input": "x"},
                           "after_unknown": {"id": true}, "before_sensitive": false,
                           "after_sensitive": {}}
            }]
        });
        let script = format!(
            r#"#!/bin/bash
{log_call}case "$1" in
plan|apply)
  log_call "$1 $(date +%s%3N) $(pwd -P)"
  sleep "$CALL_REPLY";;
esac
case "$1" in
plan)
  for a in "$@"; do case "$a" in -out=*) printf plan > "${{a#-out=}}";; esac; done
  exit 2;;
show) printf '%s' '{show}';;
esac
exit 0
"#,
            log_call = log.bash_function(),
        );
        let bin = dir.path().join("terraform");
        std::fs::write(&bin, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Terraform { dir, _log: log }
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("terraform")
    }

    /// From now on each `verb` (`plan`, `apply`) sleeps `seconds` first.
    pub fn set_sleep(&self, verb: &str, seconds: f64) {
        std::fs::write(
            self.dir.path().join(format!("{verb}.sleep")),
            seconds.to_string(),
        )
        .unwrap();
    }

    /// Every call logged so far, oldest first.
    pub fn calls(&self) -> Vec<Call> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ' ');
                Some(Call {
                    verb: parts.next()?.to_string(),
                    at_ms: parts.next()?.parse().ok()?,
                    dir: parts.next()?.to_string(),
                })
            })
            .collect()
    }

    /// The calls of `verb` on pull request `number`.
    pub fn calls_of(&self, verb: &str, number: u64) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.verb == verb && c.pr() == Some(number))
            .collect()
    }
}

impl Call {
    /// `(pull request, unit)` of the checkout it ran in
    /// (`…/checkouts/acme/infra/pr-<n>/<unit>`).
    fn place(&self) -> Option<(u64, &str)> {
        let at = self.dir.find("/checkouts/acme/infra/pr-")?;
        let rest = &self.dir[at + "/checkouts/acme/infra/pr-".len()..];
        let (number, unit) = rest.split_once('/')?;
        Some((number.parse().ok()?, unit))
    }

    pub fn pr(&self) -> Option<u64> {
        self.place().map(|(n, _)| n)
    }

    pub fn unit(&self) -> &str {
        self.place().map_or("", |(_, u)| u)
    }

    /// Whether the replica keeping its data in `data` ran it.
    pub fn by(&self, data: &Path) -> bool {
        Path::new(&self.dir).starts_with(data)
    }
}

/// How many calls each unit got.
pub fn per_unit(calls: &[Call]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for c in calls {
        *counts.entry(c.unit().to_string()).or_default() += 1;
    }
    counts
}

/// Posts `delivery` to `hook`: the status.
pub async fn post(delivery: &Delivery, hook: &str) -> u16 {
    delivery.post(hook).await.status().as_u16()
}

/// A branch from `main` changing `file`, pushed, and a pull request for it touching
/// `files`: its number and head.
pub fn pull_request(w: &World, branch: &str, file: &str, files: &[&str]) -> (u64, String) {
    git_out(w.work.path(), &["checkout", "-q", "main"]);
    let head = push_change(w, branch, file, &format!("change on {branch}"));
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            head_ref: branch.into(),
            head_sha: head.clone(),
            base_sha: w.base_sha.clone(),
            files: files.iter().map(|f| FileChange::modified(f)).collect(),
            ..PrSpec::default()
        },
    );
    (n, head)
}

/// The App's comments on `number` whose body starts with `<!-- cascade:<kind>`.
pub fn bot_comments_of(w: &World, number: u64, kind: &str) -> Vec<String> {
    let marker = format!("<!-- cascade:{kind}");
    w.bot_texts(number)
        .into_iter()
        .filter(|t| t.starts_with(&marker))
        .collect()
}
