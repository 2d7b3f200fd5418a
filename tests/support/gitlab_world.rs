//! The world the GitLab end-to-end tests run in: a stateful fake GitLab over HTTP with
//! one project at a nested path (`acme/platform/infra`) whose repository, a copy of the
//! bundled example, the fake serves over smart HTTP (so cascade fetches it for real, with
//! the token as HTTP Basic credentials), a `feature` branch with one change, the people
//! of a merge request (an author, a Developer who reviews, a Reporter), and a server
//! that serves GitLab alone: in process, or the real binary with the `--gitlab-*` flags.
//!
//! A test reads cascade's notes through the world (`bot_texts`, `nth_note`, `plan_id`,
//! …), which keeps track (`support::reads`): when the world is dropped (or
//! [`World::finish`]ed), after the in-process server's jobs are done, every note of
//! cascade's the test did not read fails it.

use crate::support::fake_gitlab::{
    DEVELOPER, DiffFile, FakeGitLab, MrSpec, NoteSnapshot, REPORTER, StatusSnapshot,
};
use crate::support::reads::{Posted, Reads};
use crate::support::wait::{self, PATIENCE};
use cascade::server::{GitLabServeConfig, HttpLimits, RunningServer, ServeConfig, start};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The project's path on the fake GitLab: nested groups.
pub const PROJECT: &str = "acme/platform/infra";
/// The key cascade stores the project under.
pub const REPO_KEY: &str = "gitlab:acme/platform/infra";
/// The merge request's author (a Developer).
pub const AUTHOR: &str = "alice";
/// A Developer who reviews and applies.
pub const REVIEWER: &str = "bob";
/// A Reporter: may read, may not apply.
pub const REPORTER_USER: &str = "rita";

/// A fake GitLab, the project's origin and a server serving GitLab only.
pub struct World {
    pub fake: FakeGitLab,
    pub server: Option<RunningServer>,
    pub data: tempfile::TempDir,
    pub work: tempfile::TempDir,
    _origin: tempfile::TempDir,
    /// The project's bare repository, which the fake serves at `<url>/acme/platform/infra.git`.
    pub origin: PathBuf,
    /// The project's id on the fake.
    pub project: u64,
    pub base_sha: String,
    pub head_sha: String,
    /// cascade's notes this test read.
    reads: Reads,
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    crate::support::git(dir, args)
}

/// Commits a change to `file` on `branch` (created from the current branch when new) and
/// pushes it to the origin; returns the new head.
pub fn push_change(w: &World, branch: &str, file: &str, line: &str) -> String {
    push_change_as(w, branch, file, line, "t <t@example.com>")
}

/// [`push_change`] with the commit's author `Name <email>` (the committer stays `t`).
pub fn push_change_as(w: &World, branch: &str, file: &str, line: &str, author: &str) -> String {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", branch]);
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n# {line}\n")).unwrap();
    git_out(dir, &["commit", "-qam", line, "--author", author]);
    git_out(
        dir,
        &[
            "push",
            "-q",
            "--force",
            w.origin.to_str().unwrap(),
            &format!("{branch}:{branch}"),
        ],
    );
    git_out(dir, &["rev-parse", "HEAD"])
}

/// The GitLab half of the server's configuration, against `fake`.
pub fn gitlab_config(fake: &FakeGitLab) -> GitLabServeConfig {
    GitLabServeConfig {
        url: fake.url(),
        token: fake.token().to_string().into(),
        webhook_secrets: vec![fake.webhook_secret().into_bytes()].into(),
        signing_key: None,
    }
}

/// The server configuration the tests use: GitLab only, the real terraform.
pub fn config(w: &World) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: w.data.path().to_path_buf(),
        database_url: None,
        github: None,
        gitlab: Some(gitlab_config(&w.fake)),
        setup: None,
        parallelism: 4,
        allow_forks: false,
        terraform_bin: "terraform".into(),
        policy_worker: Some(env!("CARGO_BIN_EXE_cascade").into()),
        tofu_bin: "tofu".into(),
        terragrunt_bin: "terragrunt".into(),
        shutdown_grace: Duration::from_secs(30),
        unit_timeout: Duration::from_secs(300),
        init_timeout: Duration::from_secs(300),
        sandbox: Default::default(),
        plan_limits: Default::default(),
        unit_env: Default::default(),
        discovery_timeout: Duration::from_secs(60),
        replica_lease: Duration::from_secs(15),
        drift_tick: Duration::from_secs(60),
        allowed_owners: Default::default(),
        sources: Default::default(),
        metrics_repo_labels: false,
        http: HttpLimits::default(),
    }
}

pub async fn world() -> World {
    world_with("").await
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended.
pub async fn world_with(extra: &str) -> World {
    world_configured(extra, |_| {}).await
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended and whose server
/// configuration `tweak` changes. The server runs in process.
pub async fn world_configured(extra: &str, tweak: impl FnOnce(&mut ServeConfig)) -> World {
    let mut w = world_without_server(extra).await;
    let mut config = config(&w);
    tweak(&mut config);
    w.server = Some(start(config).await.unwrap());
    w
}

/// The fake GitLab, the project and its `feature` branch; no server yet.
pub async fn world_without_server(extra: &str) -> World {
    world_without_server_with(extra, &[]).await
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended and which holds
/// `files` (path, text) too, on the base branch; the server runs in process.
pub async fn world_with_files(extra: &str, files: &[(&str, &str)]) -> World {
    let mut w = world_without_server_with(extra, files).await;
    w.server = Some(start(config(&w)).await.unwrap());
    w
}

async fn world_without_server_with(extra: &str, files: &[(&str, &str)]) -> World {
    assert!(
        std::process::Command::new("terraform")
            .arg("version")
            .output()
            .is_ok(),
        "terraform must be on PATH"
    );
    let fake = FakeGitLab::start().await;
    let work = tempfile::tempdir().unwrap();
    crate::support::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live"),
        work.path(),
    );
    let config_file = work.path().join(".cascade.yaml");
    let text = std::fs::read_to_string(&config_file).unwrap();
    std::fs::write(&config_file, text + extra).unwrap();
    for (file, text) in files {
        let path = work.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    git_out(work.path(), &["init", "-q"]);
    git_out(work.path(), &["add", "-A"]);
    git_out(work.path(), &["commit", "-qm", "example"]);
    let base_sha = git_out(work.path(), &["rev-parse", "HEAD"]);
    let origin_dir = tempfile::tempdir().unwrap();
    let origin = origin_dir.path().join("infra.git");
    git_out(
        work.path(),
        &["clone", "-q", "--bare", ".", origin.to_str().unwrap()],
    );
    let project = fake.add_project(PROJECT, Some(&origin));
    fake.set_member(project, AUTHOR, Some(DEVELOPER));
    fake.set_member(project, REVIEWER, Some(DEVELOPER));
    fake.set_member(project, REPORTER_USER, Some(REPORTER));
    let mut w = World {
        fake,
        server: None,
        data: tempfile::tempdir().unwrap(),
        work,
        _origin: origin_dir,
        origin,
        project,
        base_sha,
        head_sha: String::new(),
        reads: Reads::default(),
    };
    w.head_sha = push_change(&w, "feature", "global/dns/main.tf", "a change under review");
    w
}

impl World {
    /// `/webhooks/gitlab` of the in-process server.
    pub fn hook(&self) -> String {
        format!(
            "http://{}/webhooks/gitlab",
            self.server.as_ref().unwrap().addr
        )
    }

    /// A merge request from `source_branch` at `head_sha` into `main`, changing
    /// `global/dns/main.tf`.
    pub fn open_mr(&self, author: &str, source_branch: &str, head_sha: &str, fork: bool) -> u64 {
        self.open_mr_changing(author, source_branch, head_sha, fork, "global/dns/main.tf")
    }

    pub fn open_mr_changing(
        &self,
        author: &str,
        source_branch: &str,
        head_sha: &str,
        fork: bool,
        file: &str,
    ) -> u64 {
        self.fake.open_merge_request(
            self.project,
            MrSpec {
                author: author.into(),
                source_branch: source_branch.into(),
                head_sha: head_sha.into(),
                base_sha: self.base_sha.clone(),
                fork,
                files: vec![DiffFile::modified(file)],
                ..MrSpec::default()
            },
        )
    }

    /// A merge request by `author` from `branch`, made off the base, adding `files` (path,
    /// text): its iid and head.
    pub fn open_adding(&self, author: &str, branch: &str, files: &[(&str, &str)]) -> (u64, String) {
        let dir = self.work.path();
        crate::support::commit_adding(dir, &self.base_sha, branch, files);
        let origin = self.origin.to_str().unwrap();
        git_out(
            dir,
            &[
                "push",
                "-q",
                "--force",
                origin,
                &format!("{branch}:{branch}"),
            ],
        );
        let head = git_out(dir, &["rev-parse", "HEAD"]);
        let iid = self.fake.open_merge_request(
            self.project,
            MrSpec {
                author: author.into(),
                source_branch: branch.into(),
                head_sha: head.clone(),
                base_sha: self.base_sha.clone(),
                files: files.iter().map(|(f, _)| DiffFile::added(f)).collect(),
                ..MrSpec::default()
            },
        );
        (iid, head)
    }

    /// Merges merge request `iid` (head `head`) into `main` with a merge commit, pushes
    /// `main`, marks it merged and sends the `merge` hook; the merge commit.
    pub async fn merge_mr(&self, iid: u64, head: &str) -> String {
        let dir = self.work.path();
        git_out(dir, &["checkout", "-q", "main"]);
        let message = format!("Merge branch into 'main'\n\nSee merge request !{iid}");
        git_out(dir, &["merge", "-q", "--no-ff", "-m", &message, head]);
        let origin = self.origin.to_str().unwrap();
        git_out(dir, &["push", "-q", "--force", origin, "main:main"]);
        let merge = git_out(dir, &["rev-parse", "HEAD"]);
        self.fake.merge_with(self.project, iid, &merge);
        assert_eq!(self.send_mr(iid, "merge").await, 202);
        merge
    }

    /// Sends a Merge Request Hook with `action` (`open`, `close`, `merge`, …); the status.
    pub async fn send_mr(&self, iid: u64, action: &str) -> u16 {
        self.fake
            .merge_request_event(self.project, iid, action)
            .post(&self.hook())
            .await
            .status()
            .as_u16()
    }

    /// A new head on the merge request, touching `file`, announced with `update` and `oldrev`
    /// (pushed by the author).
    pub async fn pushed(&self, iid: u64, head: &str, file: &str) {
        self.pushed_by(iid, head, file, None).await;
    }

    /// [`World::pushed`] by `pusher`: the hook's `user` (the author when `None`).
    pub async fn pushed_by(&self, iid: u64, head: &str, file: &str, pusher: Option<&str>) {
        self.fake
            .push(self.project, iid, head, vec![DiffFile::modified(file)]);
        let status = self
            .fake
            .merge_request_pushed_event_by(self.project, iid, pusher)
            .post(&self.hook())
            .await
            .status()
            .as_u16();
        assert_eq!(status, 202);
    }

    /// `user` writes a note on the merge request and GitLab sends its Note Hook.
    pub async fn note(&self, iid: u64, user: &str, body: &str) -> u16 {
        let note = self.user_note(iid, user, body);
        self.fake
            .note_event(&note)
            .post(&self.hook())
            .await
            .status()
            .as_u16()
    }

    pub fn user_note(&self, iid: u64, user: &str, body: &str) -> NoteSnapshot {
        self.fake.user_note(self.project, iid, user, body)
    }

    /// cascade's notes on the merge request, oldest first: read.
    pub fn bot_notes(&self, iid: u64) -> Vec<NoteSnapshot> {
        let notes = self.fake.bot_notes(self.project, iid);
        self.reads.saw(notes.iter().map(|n| n.id));
        notes
    }

    /// The bodies of cascade's notes, oldest first: read.
    pub fn bot_texts(&self, iid: u64) -> Vec<String> {
        self.bot_notes(iid).into_iter().map(|n| n.body).collect()
    }

    /// cascade's newest apply result note on the merge request, if any: read.
    pub fn apply_result(&self, iid: u64) -> Option<String> {
        let note = self
            .fake
            .bot_notes(self.project, iid)
            .into_iter()
            .rfind(|n| n.body.starts_with("<!-- cascade:apply"))?;
        self.reads.saw([note.id]);
        Some(note.body)
    }

    /// The `count`-th note of cascade's on the merge request (waits for it): read.
    pub async fn nth_note(&self, iid: u64, count: usize) -> String {
        self.until("a note", |w| w.bot_texts(iid).len() >= count)
            .await;
        let note = self.fake.bot_notes(self.project, iid).remove(count - 1);
        self.reads.saw([note.id]);
        note.body
    }

    /// cascade's `cascade` status records on `sha`.
    pub fn cascade_statuses(&self, sha: &str) -> Vec<StatusSnapshot> {
        self.fake
            .statuses(self.project, sha)
            .into_iter()
            .filter(|s| s.name == "cascade")
            .collect()
    }

    /// The current state of cascade's newest status on `sha`.
    pub fn status_now(&self, sha: &str) -> Option<String> {
        self.cascade_statuses(sha)
            .last()
            .map(|s| s.current().to_string())
    }

    /// cascade's status on `sha` says how its plan or apply ended: `success`, `failed`, or
    /// `running` (waiting for `cascade apply` or a lock). `pending` is planning; `canceled`
    /// is a running status being replaced by one with new words.
    pub fn status_done(&self, sha: &str) -> bool {
        self.status_now(sha)
            .is_some_and(|s| matches!(s.as_str(), "success" | "failed" | "running"))
    }

    /// Every state of every `cascade` status on `sha`, oldest first: it changes with each
    /// status cascade sets.
    pub fn status_histories(&self, sha: &str) -> Vec<Vec<String>> {
        self.cascade_statuses(sha)
            .into_iter()
            .map(|s| s.history)
            .collect()
    }

    /// Waits until `cond` holds (the bot works after answering the webhook): looked at
    /// each time a job of the in-process server finishes, or every 100 ms when the
    /// server is a `cascade serve` process. What holds only while a job runs is not
    /// seen so: poll for that (`wait::until` with no watches).
    /// Notes `cond` looks at are not read by it.
    pub async fn until(&self, what: &str, cond: impl Fn(&World) -> bool) {
        let holds = || self.reads.looking(|| cond(self));
        wait::until(what, PATIENCE, self.jobs(), holds, || self.context()).await;
    }

    /// Waits until the in-process server has finished every job it took: what the
    /// deliveries sent so far asked for is done (and nothing more will come of them).
    pub async fn settled(&self) {
        wait::settled(self.jobs(), || self.context()).await;
    }

    /// The job watches of the server in this process (none for a `cascade serve` process).
    fn jobs(&self) -> Vec<tokio::sync::watch::Receiver<cascade::bot::JobCounts>> {
        self.server.iter().map(|s| s.bot.jobs()).collect()
    }

    /// What a wait that timed out shows.
    fn context(&self) -> String {
        format!(
            "cascade's notes: {:#?}",
            self.fake.bot_notes(self.project, 1)
        )
    }

    /// The plan id the newest note offering `cascade apply <id>` offers (that note is read).
    pub fn plan_id(&self, iid: u64) -> String {
        let notes = self.fake.bot_notes(self.project, iid);
        let note = notes
            .iter()
            .rev()
            .find(|n| n.body.contains("\ncascade apply "))
            .expect("a note offering `cascade apply <id>`");
        self.reads.saw([note.id]);
        let text = &note.body;
        let at = text.rfind("\ncascade apply ").unwrap() + "\ncascade apply ".len();
        text[at..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect()
    }

    /// Waits until the in-process server's jobs are done, then fails on every note of
    /// cascade's this test did not read. Dropping the world does the same, waiting at most
    /// ten seconds; this waits as long as any wait.
    pub async fn finish(self) {
        if self.server.is_some() {
            self.settled().await;
        }
        self.check_read();
    }

    fn check_read(&self) {
        let posted = || {
            self.fake
                .all_bot_notes(self.project)
                .into_iter()
                .map(Posted::from)
                .collect()
        };
        self.reads.check_once("note", posted);
    }

    /// The merge request's checkout in the server's data directory.
    pub fn checkout(&self, iid: u64) -> PathBuf {
        self.data.path().join(format!(
            "workspaces/checkouts/@gitlab/acme/platform/infra.git/pr-{iid}"
        ))
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if !std::thread::panicking() && !self.reads.finished() {
            wait::settle_blocking(self.jobs(), Duration::from_secs(10));
            self.check_read();
        }
    }
}

/// The real `cascade serve` binary for this world on `port`, serving GitLab alone, with
/// `extra` arguments; its stderr (the log, at `debug`) goes to `log`.
pub fn serve_process(
    w: &World,
    port: u16,
    extra: &[&std::ffi::OsStr],
    log: &Path,
) -> std::process::Child {
    let token = w.data.path().join("gitlab-token");
    std::fs::write(&token, format!("{}\n", w.fake.token())).unwrap();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--parallelism",
            "1",
            "--gitlab-url",
            &w.fake.url(),
        ])
        .arg("--data-dir")
        .arg(w.data.path().join("served"))
        .arg("--gitlab-token-file")
        .arg(&token)
        .args(extra)
        .env("CASCADE_GITLAB_WEBHOOK_SECRET", w.fake.webhook_secret())
        .env("CASCADE_LOG", "debug")
        .env_remove("CASCADE_GITHUB_WEBHOOK_SECRET")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// The real binary on a free port, listening: the process and its port.
pub async fn serve_binary(
    w: &World,
    extra: &[&std::ffi::OsStr],
    log: &Path,
) -> (std::process::Child, u16) {
    let port = crate::support::free_port();
    let mut child = serve_process(w, port, extra, log);
    if !listening(port).await {
        let _ = child.kill();
        let _ = child.wait();
        panic!("cascade serve did not listen on {port}");
    }
    (child, port)
}

/// Whether something listens on `port` of 127.0.0.1 within ten seconds.
async fn listening(port: u16) -> bool {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
