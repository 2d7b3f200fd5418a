//! What cascade keeps is kept from the machine's other users: after a real
//! plan and apply (`cascade plan`/`apply`/`drift`, and `cascade serve` over the
//! fake GitHub) nothing under the data directory, nor the state terraform
//! wrote next to a unit, has a group or other permission bit; a data directory
//! left looser is made private at start without following a link out of it;
//! and `cascade serve` runs with umask 077 and is not dumpable, seen from
//! outside the process. The walk itself (`private_dir::tighten`) on trees
//! made by hand: what it changes, what it keeps, what it never follows.
//!
//! The served plan runs the real `cascade serve`: the umask it sets
//! (`private_dir::protect_process`) is the whole process's, so it must not be this
//! test process's, which runs every other test too.

use crate::support;
use crate::support::bot_world;

use cascade::private_dir::{Tightened, make_private, tighten};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every file and directory under `dir` (links not followed) that a group or
/// other user may read, write or enter, with its mode.
fn shared_entries(dir: &Path) -> Vec<(PathBuf, u32)> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| !e.path_is_symlink())
        .map(|e| (e.path().to_path_buf(), mode(e.path())))
        .filter(|(_, mode)| mode & 0o077 != 0)
        .collect()
}

/// Whether a directory named `name` is anywhere under `dir` (the plugin cache
/// moves with the executor's layout; that it is under the data directory is what counts).
fn holds_dir(dir: &Path, name: &str) -> bool {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .any(|e| e.file_type().is_dir() && e.file_name() == name)
}

/// A world-readable file and directory outside the data directory, that links in it point at.
struct Outside {
    _dir: tempfile::TempDir,
    file: PathBuf,
    dir: PathBuf,
    inner: PathBuf,
}

impl Outside {
    fn untouched(&self) {
        assert_eq!(mode(&self.file), 0o644, "a link's target is never changed");
        assert_eq!(
            mode(&self.dir),
            0o755,
            "a linked directory is never changed"
        );
        assert_eq!(mode(&self.inner), 0o644, "nor entered");
    }
}

/// A world-readable file, and a directory holding another, in a directory of their own.
fn outside() -> Outside {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("target.txt");
    std::fs::write(&file, "elsewhere").unwrap();
    chmod(&file, 0o644);
    let dir = tmp.path().join("target-dir");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o755);
    let inner = dir.join("inner.txt");
    std::fs::write(&inner, "elsewhere too").unwrap();
    chmod(&inner, 0o644);
    Outside {
        _dir: tmp,
        file,
        dir,
        inner,
    }
}

/// Makes `data` what an older cascade under umask 022 left: 0755, a 0644 file in
/// a 0755 directory, and links to a file and a directory outside it.
fn loosen(data: &Path) -> Outside {
    let outside = outside();
    chmod(data, 0o755);
    let old = data.join("old");
    std::fs::create_dir_all(&old).unwrap();
    chmod(&old, 0o755);
    std::fs::write(old.join("notes.txt"), "left by an older cascade").unwrap();
    chmod(&old.join("notes.txt"), 0o644);
    std::os::unix::fs::symlink(&outside.file, data.join("link-to-file")).unwrap();
    std::os::unix::fs::symlink(&outside.dir, old.join("link-to-dir")).unwrap();
    assert_eq!(shared_entries(data).len(), 3);
    outside
}

#[test]
fn the_walk_removes_group_and_other_bits_keeps_the_owners_and_follows_no_link() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path();
    let out = loosen(root);
    let old = root.join("old");
    let tool = old.join("provider");
    std::fs::write(&tool, "#!/bin/sh").unwrap();
    chmod(&tool, 0o775);
    let read_only = old.join("read-only");
    std::fs::write(&read_only, "x").unwrap();
    chmod(&read_only, 0o444);
    let already = root.join("cascade.db");
    std::fs::write(&already, "").unwrap();
    chmod(&already, 0o600);
    let fifo = root.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    chmod(&fifo, 0o666);

    let done = tighten(root).unwrap();
    assert_eq!(
        done,
        Tightened {
            fixed: 6,
            failed: 0,
            first_error: None
        }
    );
    assert_eq!(shared_entries(root), []);
    assert_eq!(mode(root), 0o700);
    assert_eq!(mode(&old), 0o700);
    assert_eq!(mode(&old.join("notes.txt")), 0o600);
    assert_eq!(mode(&tool), 0o700, "the owner keeps what it had");
    assert_eq!(mode(&read_only), 0o400, "no bit is added");
    assert_eq!(mode(&fifo), 0o600);
    out.untouched();
    // A second walk finds nothing to do.
    assert_eq!(tighten(root).unwrap(), Tightened::default());
}

#[test]
fn make_private_creates_a_missing_data_directory_and_refuses_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("a/b");
    make_private(&data).unwrap();
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&tmp.path().join("a")), 0o700);
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let err = format!("{:#}", make_private(&file).unwrap_err());
    assert!(err.contains("cannot create the data directory"), "{err}");
}

fn cascade(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = support::run_in(env!("CARGO_BIN_EXE_cascade"), dir, args);
    assert!(
        out.status.success() || out.status.code() == Some(2) && args[0] == "drift",
        "cascade {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn plan_apply_and_drift_keep_the_data_directory_and_the_state_private() {
    let repo = support::example_repo();
    let dir = repo.path();
    let plan = cascade(
        dir,
        &[
            "plan",
            "--changed",
            "prod/monitoring/main.tf",
            "--format",
            "json",
        ],
    );
    let id = support::stdout_json(&plan)["plan_id"]
        .as_str()
        .unwrap()
        .to_owned();
    cascade(dir, &["apply", &id, "--format", "json"]);
    cascade(dir, &["drift", "--units", "prod/monitoring"]);
    let data = dir.join(".cascade");
    for made in [
        "cascade.db",
        "runs",
        "drift/logs",
        "../prod/monitoring/terraform.tfstate",
        "../prod/monitoring/.terraform",
    ] {
        assert!(data.join(made).exists(), "{made} was made");
    }
    assert!(
        holds_dir(&data, "plugin-cache"),
        "the plugin cache was made"
    );
    let logs = walkdir::WalkDir::new(&data)
        .into_iter()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("log".as_ref()))
        .count();
    assert!(logs >= 3, "a log of the plan, the apply and the drift run");
    assert_eq!(shared_entries(&data), []);
    let unit = dir.join("prod/monitoring");
    assert_eq!(mode(&unit.join("terraform.tfstate")), 0o600);
    assert_eq!(shared_entries(&unit.join(".terraform")), []);
}

#[test]
fn plan_makes_a_looser_data_directory_private_through_its_link_but_no_other() {
    let repo = support::example_repo();
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real-data");
    std::fs::create_dir(&real).unwrap();
    let outside = loosen(&real);
    let link = tmp.path().join("data");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = cascade(
        repo.path(),
        &[
            "plan",
            "--changed",
            "README.md",
            "--data-dir",
            link.to_str().unwrap(),
        ],
    );
    assert_eq!(shared_entries(&real), []);
    assert_eq!(
        mode(&real),
        0o700,
        "the data directory a link names is fixed"
    );
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    outside.untouched();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains(
            "3 files and directories in the data directory were readable by other local users"
        ),
        "{log}"
    );
    assert!(!log.contains("left by an older cascade"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_plan_leaves_the_data_directory_private() {
    let w = bot_world::world_unserved("").await;
    // The real `cascade serve` (its umask is process-wide: not this test process's to
    // change), keeping its data in `<data>/served`.
    let data = w.data.path().join("served");
    std::fs::create_dir(&data).unwrap();
    let outside = loosen(&data);
    let (mut server, port) = bot_world::serve_binary(&w, &[]).await;
    assert_eq!(shared_entries(&data), [], "made private at start");
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let hook = format!("http://127.0.0.1:{port}/webhooks/github");
    let opened = w.fake.pull_request_event(bot_world::REPO, n, "opened");
    assert_eq!(opened.post(&hook).await.status(), 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("/apply "), "{plan}");
    for made in ["cascade.db", "workspaces", "runs"] {
        assert!(data.join(made).exists(), "{made} was made");
    }
    assert!(
        holds_dir(&data, "plugin-cache"),
        "the plugin cache was made"
    );
    let made = walkdir::WalkDir::new(&data).into_iter().count();
    assert!(
        made > 50,
        "a mirror, a checkout, runs and logs: {made} entries"
    );
    assert_eq!(shared_entries(&data), []);
    outside.untouched();
    server.kill().unwrap();
    server.wait().unwrap();
}

/// The uid `cascade serve` runs as in the next test: this user's, or when that is
/// root (who may read any process anyway) nobody's, so that what root owns tells.
const NOBODY: u32 = 65534;

#[test]
fn cascade_serve_runs_with_umask_077_and_is_not_dumpable() {
    let data = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let mut command = support::setup_serve_command(data.path(), port);
    command.stderr(std::process::Stdio::null());
    let root = nix::unistd::getuid().is_root();
    if root {
        std::os::unix::fs::chown(data.path(), Some(NOBODY), Some(NOBODY)).unwrap();
        std::os::unix::process::CommandExt::uid(&mut command, NOBODY);
        std::os::unix::process::CommandExt::gid(&mut command, NOBODY);
    }
    let mut child = command.spawn().unwrap();
    let listening = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let proc = PathBuf::from(format!("/proc/{}", child.id()));
    let status = std::fs::read_to_string(proc.join("status")).unwrap_or_default();
    let environ_owner = std::fs::metadata(proc.join("environ")).map(|m| m.uid());
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening, "cascade serve (the setup page) did not listen");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .to_owned()
    };
    assert_eq!(field("Umask:"), "0077");
    let uid: u32 = field("Uid:")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_ne!(uid, 0, "the check needs a server that is not root's");
    // A dumpable process's /proc files belong to its user; a non-dumpable one's to root.
    assert_eq!(
        environ_owner.unwrap(),
        0,
        "/proc/<pid>/environ is root's alone"
    );
}
