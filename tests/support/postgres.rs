//! A throwaway PostgreSQL cluster for a test binary, with the machine's own
//! binaries (`initdb` on PATH, else the newest `/usr/lib/postgresql/*/bin`):
//! started on first use, one fresh database per test, stopped and deleted when
//! the test binary exits, however it exits.
//!
//! The cluster lives in a temporary directory and listens only on a unix
//! socket there (no port to collide with other runs, nothing on the network).
//! `initdb` and `postgres` refuse to run as root, so under root (CI) every
//! command of the cluster runs as the `postgres` system user (else `nobody`),
//! which owns the directory. A machine without PostgreSQL fails the test that
//! asks for a database; it never skips it.
//!
//! Stopping: a watchdog shell, started before the cluster, waits for the end
//! of a pipe only this process writes to, then runs `pg_ctl stop` and deletes
//! the directory. When the test binary exits normally (passed or failed), an
//! exit hook closes the pipe and waits for the watchdog, so no PostgreSQL
//! process outlives the run; when it is killed, the kernel closes the pipe and
//! the watchdog cleans up on its own.

use sqlx::{Connection, Executor};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The cluster of this test binary.
pub struct Cluster {
    /// Holds the data directory (`data/`), the server's log and its socket.
    dir: PathBuf,
    /// Its stdin is never written: the closing of that pipe, at exit, is
    /// what tells the watchdog to stop the cluster.
    watchdog: Mutex<Child>,
    next_database: AtomicU64,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(Cluster::start)
}

/// A new empty database on this binary's cluster: its URL (`postgres://…`).
pub async fn database() -> String {
    cluster().create_database().await
}

impl Cluster {
    /// The URL of `database` on this cluster.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost/{database}?host={}",
            self.dir.display()
        )
    }

    /// The cluster's unix socket (what a test puts a proxy in front of).
    pub fn socket(&self) -> PathBuf {
        self.dir.join(".s.PGSQL.5432")
    }

    /// Creates a database with a name no other test of this binary uses.
    pub async fn create_database(&self) -> String {
        let name = format!(
            "cascade_test_{}",
            self.next_database.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .expect("connect to the test cluster");
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create a test database");
        let _ = admin.close().await;
        self.url(&name)
    }

    fn start() -> Cluster {
        let bin = bin_dir();
        let owner = cluster_user();
        // Under root, in /tmp rather than $TMPDIR: the cluster's user must be
        // able to reach its directory, and root's own temporary directory may
        // be closed to others.
        let parent = match owner {
            Some(_) => PathBuf::from("/tmp"),
            None => std::env::temp_dir(),
        };
        let dir = tempfile::Builder::new()
            .prefix("cascade-pg-")
            .tempdir_in(&parent)
            .expect("a temporary directory for PostgreSQL")
            .keep();
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .expect("give the cluster's directory to its user");
        }
        let command = |program: &Path| {
            let mut command = Command::new(program);
            command.current_dir(&dir).env_remove("PGDATA");
            if let Some((uid, gid)) = owner {
                command.uid(uid).gid(gid);
            }
            // Out of the test's process group: Ctrl-C on a test run reaches
            // the watchdog through the closed pipe, not as a signal that
            // would kill it before it cleans up.
            command.process_group(0);
            command
        };
        let data = dir.join("data");
        let pg_ctl = bin.join("pg_ctl");
        // First, so that a cluster that fails half-way is cleaned up too.
        let watchdog = command(Path::new("/bin/sh"))
            .arg("-c")
            .arg(r#"cat >/dev/null; "$0" -D "$1/data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$1""#)
            .arg(&pg_ctl)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the cluster's watchdog");
        run(command(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8"])
            .args(["--no-locale", "--no-sync"]));
        // Throwaway data: no durability, a socket in the cluster's own directory only.
        let settings = format!(
            "\nlisten_addresses = ''\nunix_socket_directories = '{}'\nport = 5432\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n\
             max_connections = 200\nshared_buffers = 32MB\n",
            dir.display()
        );
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("read postgresql.conf");
        text.push_str(&settings);
        std::fs::write(&conf, text).expect("write postgresql.conf");
        run(command(&pg_ctl)
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("server.log"))
            .args(["-w", "-t", "60", "start"]));
        // SAFETY: `stop_at_exit` is a plain `extern "C" fn` that touches only
        // this module's static; registering it has no other precondition.
        let registered = unsafe { libc::atexit(stop_at_exit) };
        assert_eq!(registered, 0, "register the cluster's exit hook");
        Cluster {
            dir,
            watchdog: Mutex::new(watchdog),
            next_database: AtomicU64::new(0),
        }
    }

    /// Has the watchdog stop the cluster and delete its directory now, and
    /// waits until it has: the test run ends with no PostgreSQL left running.
    fn stop(&self) {
        let Ok(mut watchdog) = self.watchdog.lock() else {
            return;
        };
        drop(watchdog.stdin.take());
        let _ = watchdog.wait();
    }
}

/// Runs when the test binary exits normally (`exit` or the end of `main`).
extern "C" fn stop_at_exit() {
    if let Some(cluster) = CLUSTER.get() {
        cluster.stop();
    }
}

/// Runs one cluster command; its output says why when it fails.
fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where `initdb`, `pg_ctl` and `postgres` are.
fn bin_dir() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("initdb"))
            .find(|initdb| initdb.is_file())
    });
    if let Some(initdb) = on_path {
        // Through a link to the version's directory, where pg_ctl and postgres are too.
        let initdb = initdb.canonicalize().expect("resolve initdb");
        return initdb.parent().expect("initdb's directory").to_path_buf();
    }
    // Debian keeps them per major version, off PATH: the newest.
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).expect(
        "PostgreSQL is required for the store tests: no initdb on PATH nor in \
         /usr/lib/postgresql/*/bin; install Debian's `postgresql` package (./scripts/test does as root)",
    )
}

/// The user the cluster runs as: this one, or under root an unprivileged one.
fn cluster_user() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    ["postgres", "nobody"]
        .into_iter()
        .find_map(|name| nix::unistd::User::from_name(name).ok().flatten())
        .map(|user| (user.uid.as_raw(), user.gid.as_raw()))
        .or_else(|| {
            panic!(
                "running as root, and neither a `postgres` nor a `nobody` user exists to run \
                 PostgreSQL as (initdb and postgres refuse root); install Debian's `postgresql` package"
            )
        })
}
