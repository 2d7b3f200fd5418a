//! The world the GitHub App's end-to-end tests run in: a stateful fake GitHub
//! over HTTP, a copy of the bundled example in a local git origin, and the
//! real server (in process, or the real binary).
//!
//! A test reads the App's comments through the world (`bot_texts`, `nth_reply`,
//! `plan_comment`, …), which keeps track (`support::reads`): when the world is dropped
//! (or [`World::finish`]ed), after the in-process server's jobs are done, every comment
//! of the App's the test did not read fails it.

use crate::support::fake_github::{
    APP_ID, CommentSnapshot, FakeGitHub, FileChange, PrSpec, app_key,
};
use crate::support::reads::{Posted, Reads};
use crate::support::wait::{self, PATIENCE};
use cascade::server::{
    GitHubServeConfig, HttpLimits, RunningServer, ServeConfig, SetupConfig, start,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const REPO: &str = "acme/infra";
pub use crate::support::DNS_APPLIED;

/// A fake GitHub with one installation (77, `acme`) and one repository
/// (`acme/infra`, a copy of the bundled example with a local bare origin),
/// a `feature` branch with one change, and a running server.
pub struct World {
    pub fake: FakeGitHub,
    pub server: Option<RunningServer>,
    pub data: tempfile::TempDir,
    pub work: tempfile::TempDir,
    _origin: tempfile::TempDir,
    pub origin: PathBuf,
    pub base_sha: String,
    pub head_sha: String,
    /// The App's comments this test read.
    reads: Reads,
}

pub fn git_out(dir: &Path, args: &[&str]) -> String {
    crate::support::git(dir, args)
}

/// Commits a change on a new branch of the work repo and pushes it to the origin.
pub fn push_change(w: &World, branch: &str, file: &str, line: &str) -> String {
    push_change_as(w, branch, file, line, "t <t@example.com>")
}

/// [`push_change`] with the commit's author `Name <email>` (the committer stays `t`).
pub fn push_change_as(w: &World, branch: &str, file: &str, line: &str, author: &str) -> String {
    let dir = w.work.path();
    let _ = git_out(dir, &["checkout", "-q", "-B", branch]);
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n# {line}\n")).unwrap();
    git_out(dir, &["commit", "-qam", line, "--author", author]);
    push(w, branch)
}

/// Force-pushes `branch` of the work repo to the origin; returns its head.
pub fn push(w: &World, branch: &str) -> String {
    let dir = w.work.path();
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

/// The server configuration the tests use (the real terraform, four units at once).
pub fn config(w: &World) -> ServeConfig {
    serve_config(&w.fake, w.data.path())
}

/// The server configuration the tests use, against `fake`, keeping its data in `data`.
pub fn serve_config(fake: &FakeGitHub, data: &Path) -> ServeConfig {
    ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: data.to_path_buf(),
        database_url: None,
        github: Some(GitHubServeConfig {
            app_id: APP_ID,
            private_key: app_key().into(),
            webhook_secrets: vec![fake.webhook_secret().into_bytes().into()],
            api_url: fake.url(),
        }),
        gitlab: None,
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

/// The configuration of a server started with no forge: it serves the setup page,
/// which creates the App on `fake` (GitHub's web pages and API on one address).
pub fn setup_config(fake: &FakeGitHub, data: &Path) -> ServeConfig {
    let mut config = serve_config(fake, data);
    config.github = None;
    config.setup = Some(SetupConfig {
        github_url: fake.url(),
        api_url: fake.url(),
    });
    config
}

pub async fn world() -> World {
    world_with("").await
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended.
pub async fn world_with(extra: &str) -> World {
    world_configured(extra, |_| {}).await
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended, and whose
/// server configuration `tweak` changes.
pub async fn world_configured(extra: &str, tweak: impl FnOnce(&mut ServeConfig)) -> World {
    let mut w = world_unserved(extra).await;
    let mut config = config(&w);
    tweak(&mut config);
    w.server = Some(start(config).await.unwrap());
    w
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended and which holds
/// `files` (path, text) too, on the base branch.
pub async fn world_with_files(extra: &str, files: &[(&str, &str)]) -> World {
    let mut w = world_unserved_with(extra, files).await;
    w.server = Some(start(config(&w)).await.unwrap());
    w
}

/// A world whose base branch's `.cascade.yaml` has `extra` appended, with no server yet
/// (the replica tests start their own).
pub async fn world_unserved(extra: &str) -> World {
    world_unserved_with(extra, &[]).await
}

pub async fn world_unserved_with(extra: &str, files: &[(&str, &str)]) -> World {
    assert!(
        std::process::Command::new("terraform")
            .arg("version")
            .output()
            .is_ok(),
        "terraform must be on PATH"
    );
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
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
    fake.add_repo(REPO, Some(&origin));
    let mut w = World {
        fake,
        server: None,
        data: tempfile::tempdir().unwrap(),
        work,
        _origin: origin_dir,
        origin,
        base_sha,
        head_sha: String::new(),
        reads: Reads::default(),
    };
    w.head_sha = push_change(&w, "feature", "global/dns/main.tf", "a change under review");
    w
}

impl World {
    pub fn hook(&self) -> String {
        format!(
            "http://{}/webhooks/github",
            self.server.as_ref().unwrap().addr
        )
    }

    pub fn open_pr(&self, author: &str, head_ref: &str, head_sha: &str, fork: bool) -> u64 {
        self.fake.open_pull_request(
            REPO,
            PrSpec {
                author: author.into(),
                head_ref: head_ref.into(),
                head_sha: head_sha.into(),
                base_ref: "main".into(),
                base_sha: self.base_sha.clone(),
                fork,
                files: vec![FileChange::modified("global/dns/main.tf")],
                ..PrSpec::default()
            },
        )
    }

    /// A pull request by `author` from `branch`, made off the base, adding `files` (path,
    /// text): its number and head.
    pub fn open_adding(&self, author: &str, branch: &str, files: &[(&str, &str)]) -> (u64, String) {
        let dir = self.work.path();
        crate::support::commit_adding(dir, &self.base_sha, branch, files);
        let head = push(self, branch);
        let n = self.fake.open_pull_request(
            REPO,
            PrSpec {
                author: author.into(),
                head_ref: branch.into(),
                head_sha: head.clone(),
                base_ref: "main".into(),
                base_sha: self.base_sha.clone(),
                files: files.iter().map(|(f, _)| FileChange::added(f)).collect(),
                ..PrSpec::default()
            },
        );
        (n, head)
    }

    pub async fn send_pr(&self, number: u64, action: &str) -> u16 {
        self.fake
            .pull_request_event(REPO, number, action)
            .post(&self.hook())
            .await
            .status()
            .as_u16()
    }

    /// A new head on pull request `number`, touching `file`, announced with `synchronize`
    /// (sent by the pull request's author).
    pub async fn synchronize(&self, number: u64, head: &str, file: &str) {
        self.fake
            .push(REPO, number, head, vec![FileChange::modified(file)]);
        assert_eq!(self.send_pr(number, "synchronize").await, 202);
    }

    /// [`World::synchronize`] pushed by `pusher`: the event's sender.
    pub async fn synchronize_by(&self, number: u64, head: &str, file: &str, pusher: &str) {
        self.fake
            .push(REPO, number, head, vec![FileChange::modified(file)]);
        let status = self
            .fake
            .pull_request_event_by(REPO, number, "synchronize", pusher)
            .post(&self.hook())
            .await
            .status();
        assert_eq!(status, 202);
    }

    pub async fn comment(&self, number: u64, user: &str, body: &str) -> u16 {
        let c = self.fake.user_comment(REPO, number, user, body);
        self.fake
            .issue_comment_event(&c)
            .post(&self.hook())
            .await
            .status()
            .as_u16()
    }

    /// The App's comments on `number`, oldest first: read.
    pub fn bot_comments(&self, number: u64) -> Vec<CommentSnapshot> {
        let comments = self.fake.bot_comments(REPO, number);
        self.reads.saw(comments.iter().map(|c| c.id));
        comments
    }

    /// The bodies of the App's comments on `number`, oldest first: read.
    pub fn bot_texts(&self, number: u64) -> Vec<String> {
        self.bot_comments(number)
            .into_iter()
            .map(|c| c.body)
            .collect()
    }

    /// The App's comment on `number` whose body starts with `<!-- cascade:<kind>` (`plan`,
    /// `apply`, `help`, …; the first one): read.
    pub fn comment_of(&self, number: u64, kind: &str) -> String {
        let marker = format!("<!-- cascade:{kind}");
        let comment = self
            .fake
            .bot_comments(REPO, number)
            .into_iter()
            .find(|c| c.body.starts_with(&marker))
            .unwrap_or_else(|| panic!("no {marker} comment on #{number}"));
        self.reads.saw([comment.id]);
        comment.body
    }

    /// The plan comment on `number`: read.
    pub fn plan_comment(&self, number: u64) -> String {
        self.comment_of(number, "plan")
    }

    /// The newest apply result on `number`: read.
    pub fn apply_comment(&self, number: u64) -> String {
        let comment = self
            .fake
            .bot_comments(REPO, number)
            .into_iter()
            .rfind(|c| c.body.starts_with("<!-- cascade:apply"))
            .unwrap_or_else(|| panic!("no apply result on #{number}"));
        self.reads.saw([comment.id]);
        comment.body
    }

    /// bob, a writer, approves pull request `number` and comments `/apply <its plan id>`;
    /// answers once the apply result is posted (not yet read).
    pub async fn approve_and_apply(&self, number: u64) {
        let id = self.plan_id(number);
        self.fake.set_permission(REPO, "bob", "write");
        self.fake.approve(REPO, number, "bob");
        self.comment(number, "bob", &format!("/apply {id}")).await;
        self.until("the apply result", |w| {
            w.fake
                .bot_comments(REPO, number)
                .iter()
                .any(|c| c.body.starts_with("<!-- cascade:apply"))
        })
        .await;
    }

    /// The units the newest apply result on `number` lists as applied (it is read).
    pub fn applied_units(&self, number: u64) -> Vec<String> {
        crate::support::applied_units(&self.apply_comment(number))
    }

    /// Waits until `cond` holds (the bot works after answering the webhook): looked at
    /// each time a job of the in-process server finishes, or every 100 ms when the
    /// server is a `cascade serve` process. What holds only while a job runs is not
    /// seen so: poll for that (`wait::until` with no watches).
    /// Comments `cond` looks at are not read by it.
    pub async fn until(&self, what: &str, cond: impl Fn(&World) -> bool) {
        self.until_within(what, PATIENCE, cond, || self.context())
            .await;
    }

    /// [`World::until`] at most `limit`, showing `context()` if it times out.
    pub async fn until_within(
        &self,
        what: &str,
        limit: Duration,
        cond: impl Fn(&World) -> bool,
        context: impl Fn() -> String,
    ) {
        let holds = || self.looking(|| cond(self));
        wait::until(what, limit, self.jobs(), holds, context).await;
    }

    /// Waits until the in-process server has finished every job it took: what the
    /// deliveries sent so far asked for is done (and nothing more will come of them).
    pub async fn settled(&self) {
        wait::settled(self.jobs(), || self.context()).await;
    }

    /// Runs `look` as a wait's condition (for waits not through [`World::until`]): the
    /// comments it looks at are not read.
    pub fn looking<T>(&self, look: impl FnOnce() -> T) -> T {
        self.reads.looking(look)
    }

    /// The job watches of the server in this process (none for a `cascade serve` process).
    pub fn jobs(&self) -> Vec<tokio::sync::watch::Receiver<cascade::bot::JobCounts>> {
        self.server.iter().map(|s| s.bot.jobs()).collect()
    }

    /// What a wait that timed out shows.
    fn context(&self) -> String {
        format!("bot comments: {:#?}", self.fake.bot_comments(REPO, 1))
    }

    /// The id the plan comment on `number` offers to apply (the comment is read).
    pub fn plan_id(&self, number: u64) -> String {
        let plan = self.plan_comment(number);
        let at = plan.find("/apply ").expect("an /apply line");
        plan[at + 7..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect()
    }

    /// Whether cascade has posted an apply result on `number` (which this does not read).
    pub fn applied(&self, number: u64) -> bool {
        self.fake
            .bot_comments(REPO, number)
            .iter()
            .any(|c| c.body.starts_with("<!-- cascade:apply"))
    }

    /// The `count`-th bot comment on `number` (waits for it): read.
    pub async fn nth_reply(&self, number: u64, count: usize) -> String {
        self.until("a reply", |w| w.bot_texts(number).len() >= count)
            .await;
        let reply = self.fake.bot_comments(REPO, number).remove(count - 1);
        self.reads.saw([reply.id]);
        reply.body
    }

    /// Waits until the in-process server's jobs are done, then fails on every comment of
    /// the App's this test did not read. Dropping the world does the same, waiting at most
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
                .all_bot_comments()
                .into_iter()
                .map(Posted::from)
                .collect()
        };
        self.reads.check_once("comment", posted);
    }

    /// The newest check run on `sha`, as it stands now.
    pub fn check_now(&self, sha: &str) -> crate::support::fake_github::CheckRunState {
        let runs = self.fake.check_runs(REPO, sha);
        runs.last().expect("a check run").current().clone()
    }

    pub fn checks_done(&self, sha: &str) -> bool {
        self.fake
            .check_runs(REPO, sha)
            .iter()
            .any(|c| c.current().status == "completed")
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

/// The real `cascade serve` binary for this world, on `port`, with `extra` arguments.
pub fn serve_process(w: &World, port: u16, extra: &[&std::ffi::OsStr]) -> std::process::Child {
    serve_process_in(w, w.data.path(), port, extra, std::process::Stdio::null())
}

/// The real `cascade serve` binary keeping its key and data under `data`, on `port`, with
/// `extra` arguments; its log goes to `stderr`.
pub fn serve_process_in(
    w: &World,
    data: &Path,
    port: u16,
    extra: &[&std::ffi::OsStr],
    stderr: std::process::Stdio,
) -> std::process::Child {
    let key = data.join("app-key.pem");
    std::fs::write(&key, app_key()).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--parallelism",
            "1",
        ])
        .arg("--data-dir")
        .arg(data.join("served"))
        .args([
            "--github-app-id",
            &APP_ID.to_string(),
            "--github-api-url",
            &w.fake.url(),
        ])
        .arg("--github-private-key-file")
        .arg(&key)
        .args(extra)
        .env("CASCADE_GITHUB_WEBHOOK_SECRET", w.fake.webhook_secret())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// The real `cascade serve` binary on a free port, listening: the process and its port.
pub async fn serve_binary(w: &World, extra: &[&std::ffi::OsStr]) -> (std::process::Child, u16) {
    let port = crate::support::free_port();
    let child = serve_process(w, port, extra);
    wait_listening(port).await;
    (child, port)
}

/// Waits until something listens on `port` of 127.0.0.1.
pub async fn wait_listening(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cascade serve did not listen on {port}");
}
