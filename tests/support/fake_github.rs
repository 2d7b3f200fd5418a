//! A stateful fake GitHub, served over real HTTP on 127.0.0.1, for tests of
//! cascade's GitHub client and of whole flows. It holds an in-memory model
//! (installations, repositories, pull requests, comments, reactions, check
//! runs, reviews, permissions) and answers exactly the endpoints cascade
//! uses, with GitHub's JSON shapes, pagination and limits. It checks the
//! App's JWT and installation tokens like GitHub does, counts content writes,
//! logs every request, and can be told to fail the next call of a kind. It serves
//! each repository's git over smart HTTP at its `clone_url` (the fake's own address,
//! `fake_github/git.rs`), with the installation token as Basic credentials.
//!
//! Tests read like the behaviour: `fake.open_pull_request(..)`,
//! `fake.user_comment(..)`, `fake.bot_comments(..)`, `fake.check_runs(..)`,
//! `fake.issue(..)` (repositories, branches and plain issues: `fake_github/issues.rs`),
//! `fake.link_email(..)` (a pull request's commits, read from the origin:
//! `fake_github/commits.rs`).

mod apps;
mod commits;
mod git;
mod issues;
mod json;
pub mod merge_gate;
mod routes;
mod webhooks;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use apps::CreatedApp;
pub(crate) use issues::IssueModel;
pub use issues::IssueSnapshot;
pub use webhooks::{Delivery, queue_branch, signature};

/// The id of the App the fake serves at first (JWTs' `iss`); an App created
/// through the manifest flow takes over (`FakeGitHub::app_id`).
pub const APP_ID: u64 = 4242;
/// The login of the App's own comments.
pub const BOT_LOGIN: &str = "cascade[bot]";
/// GitHub's cap on a pull request's file listing.
pub const FILES_CAP: usize = 3000;
/// GitHub's cap on a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// The test-only App private key (tests/fixtures/github/test-app-key.pem).
pub fn app_key() -> Vec<u8> {
    std::fs::read(fixture("test-app-key.pem")).expect("tests/fixtures/github/test-app-key.pem")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github")
        .join(name)
}

/// One file a pull request touches, as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub status: String,
    pub previous_path: Option<String>,
}

impl FileChange {
    fn new(path: &str, status: &str) -> FileChange {
        FileChange {
            path: path.to_string(),
            status: status.to_string(),
            previous_path: None,
        }
    }
    pub fn modified(path: &str) -> FileChange {
        FileChange::new(path, "modified")
    }
    pub fn added(path: &str) -> FileChange {
        FileChange::new(path, "added")
    }
    pub fn renamed(from: &str, to: &str) -> FileChange {
        FileChange {
            previous_path: Some(from.to_string()),
            ..FileChange::new(to, "renamed")
        }
    }
}

/// What a new pull request looks like; `..PrSpec::default()` fills the rest.
#[derive(Debug, Clone)]
pub struct PrSpec {
    pub title: String,
    pub author: String,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub base_sha: String,
    pub draft: bool,
    /// The head lives in `{author}/{name}`.
    pub fork: bool,
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
    pub files: Vec<FileChange>,
    /// Where the head's commits are when they are not in the base repository (a fork's
    /// own repository, as a local git directory). Like GitHub, the fake pushes each head
    /// to the base repository's `refs/pull/<n>/head`, and only there.
    pub head_repo: Option<PathBuf>,
}

impl Default for PrSpec {
    fn default() -> Self {
        PrSpec {
            title: "Change infrastructure".to_string(),
            author: "alice".to_string(),
            head_ref: "feature".to_string(),
            head_sha: "a".repeat(40),
            base_ref: "main".to_string(),
            base_sha: "b".repeat(40),
            draft: false,
            fork: false,
            mergeable: Some(true),
            mergeable_state: "clean".to_string(),
            files: vec![FileChange::modified("live/dev/vpc/terragrunt.hcl")],
            head_repo: None,
        }
    }
}

/// A comment as the fake holds it; also what an `issue_comment` webhook needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentSnapshot {
    pub id: u64,
    pub node_id: String,
    pub repo: String,
    pub number: u64,
    pub author: String,
    pub body: String,
    pub minimized: bool,
    /// `OUTDATED`, `RESOLVED`, … as given to minimizeComment.
    pub minimized_reason: Option<String>,
    /// Bodies this comment had before each edit, oldest first.
    pub edits: Vec<String>,
}

/// One state of a check run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunState {
    pub status: String,
    pub conclusion: Option<String>,
    pub title: String,
    pub summary: String,
    /// `output.text` (Markdown below the summary); empty when never sent.
    pub text: String,
    /// `details_url` as the App last set it; `None` when it never did.
    pub details_url: Option<String>,
}

/// A check run and every state it went through (creation first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunSnapshot {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub history: Vec<CheckRunState>,
}

impl CheckRunSnapshot {
    pub fn current(&self) -> &CheckRunState {
        self.history.last().expect("a check run has a state")
    }
}

/// A request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
}

/// An answer the fake gives instead of the real one, once.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub message: String,
}

impl Failure {
    pub fn status(status: u16) -> Failure {
        let message = match status {
            500 => "Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            404 => "Not Found",
            _ => "Error",
        };
        Failure {
            status,
            headers: Vec::new(),
            message: message.to_string(),
        }
    }

    /// 429 with `retry-after`.
    pub fn retry_after(secs: u64) -> Failure {
        Failure {
            status: 429,
            headers: vec![("retry-after".into(), secs.to_string())],
            message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.".into(),
        }
    }

    /// 403 with `x-ratelimit-remaining: 0`, resetting `secs` from now.
    pub fn primary_rate_limit(secs: u64) -> Failure {
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + secs;
        Failure {
            status: 403,
            headers: vec![
                ("x-ratelimit-limit".into(), "5000".into()),
                ("x-ratelimit-remaining".into(), "0".into()),
                ("x-ratelimit-used".into(), "5000".into()),
                ("x-ratelimit-reset".into(), reset.to_string()),
                ("x-ratelimit-resource".into(), "core".into()),
            ],
            message: "API rate limit exceeded for installation ID 1.".into(),
        }
    }

    /// 403 naming a secondary rate limit, with no time to wait.
    pub fn secondary_rate_limit() -> Failure {
        Failure {
            status: 403,
            headers: Vec::new(),
            message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.".into(),
        }
    }
}

// ---- the model ----

pub(crate) struct InstallationModel {
    account: String,
    /// What the App was granted on this installation (`checks: write`, `members: read`, …).
    pub permissions: BTreeMap<String, String>,
}

/// What every test installation grants unless a test changes it: the permissions
/// README asks for, without the optional Organization → Members.
fn default_permissions() -> BTreeMap<String, String> {
    [
        ("checks", "write"),
        ("contents", "read"),
        ("issues", "write"),
        ("metadata", "read"),
        ("pull_requests", "write"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

pub(crate) struct TokenModel {
    installation: u64,
    expires_at: SystemTime,
}

pub(crate) struct RepoModel {
    pub id: u64,
    pub full_name: String,
    /// The bare repository the fake serves at `<url>/<full_name>.git` (the API's
    /// `clone_url`), if any.
    pub origin: Option<PathBuf>,
    /// A `clone_url` the API answers instead of the fake's own (a test's stranger).
    pub clone_url: Option<String>,
    pub default_branch: String,
    pub installation: u64,
    /// The next number for a pull request or an issue (one sequence, as on GitHub).
    pub next_number: u64,
    pub pulls: BTreeMap<u64, PullModel>,
    pub issues: BTreeMap<u64, IssueModel>,
    pub comments: BTreeMap<u64, CommentModel>,
    pub check_runs: BTreeMap<u64, CheckRunModel>,
    pub permissions: HashMap<String, String>,
    /// Branch protection and rulesets by branch (`fake_github/merge_gate.rs`).
    pub protection: BTreeMap<String, merge_gate::Protection>,
    /// Other apps' check runs: (head sha, name, conclusion), latest last.
    pub foreign_checks: Vec<(String, String, String)>,
}

pub(crate) struct PullModel {
    pub number: u64,
    pub title: String,
    pub author: String,
    pub head_ref: String,
    pub head_sha: String,
    pub previous_head_sha: Option<String>,
    pub base_ref: String,
    pub base_sha: String,
    pub draft: bool,
    pub fork: bool,
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
    pub state: String,
    pub merged: bool,
    /// The commit that merged it, once `merged` by [`FakeGitHub::merge_pull_request`].
    pub merge_commit_sha: Option<String>,
    pub files: Vec<FileChange>,
    pub reviews: Vec<ReviewModel>,
    pub head_repo: Option<PathBuf>,
    /// The base before the last `change_base` (ref, sha): `edited`'s `changes.base`.
    pub previous_base: Option<(String, String)>,
    /// Its labels' names.
    pub labels: Vec<String>,
}

pub(crate) struct CommentModel {
    pub id: u64,
    pub node_id: String,
    pub number: u64,
    pub author: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    pub minimized_reason: Option<String>,
    pub edits: Vec<String>,
    pub reactions: Vec<(String, String)>,
}

pub(crate) struct ReviewModel {
    pub id: u64,
    pub author: String,
    pub state: String,
    pub commit_id: String,
}

pub(crate) struct CheckRunModel {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub history: Vec<CheckRunState>,
}

pub(crate) struct Model {
    pub installations: BTreeMap<u64, InstallationModel>,
    tokens: HashMap<String, TokenModel>,
    token_lifetime: Duration,
    pub repos: BTreeMap<String, RepoModel>,
    next_id: u64,
    failures: HashMap<String, VecDeque<Failure>>,
    /// Failures answered after the request was carried out (a write stored, then a 502).
    failures_after: HashMap<String, VecDeque<Failure>>,
    /// Emails GitHub links commits to accounts by (lowercase email → login).
    pub linked_emails: BTreeMap<String, String>,
    /// Teams by (organization, slug): member login → membership state (`active`, `pending`).
    pub teams: BTreeMap<(String, String), BTreeMap<String, String>>,
    requests: Vec<RequestRecord>,
    writes: BTreeMap<u64, u64>,
    mints: BTreeMap<u64, u64>,
    webhook_secret: String,
    /// The App this GitHub serves: its comments and check runs carry this id.
    app_id: u64,
    /// Apps registered through the manifest flow, oldest first.
    created_apps: Vec<apps::CreatedApp>,
}

impl Model {
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn repo(&mut self, full_name: &str) -> &mut RepoModel {
        self.repos
            .get_mut(full_name)
            .unwrap_or_else(|| panic!("fake GitHub has no repository {full_name}: add_repo first"))
    }

    fn pull(&mut self, full_name: &str, number: u64) -> &mut PullModel {
        self.repo(full_name)
            .pulls
            .get_mut(&number)
            .unwrap_or_else(|| panic!("fake GitHub has no pull request {full_name}#{number}"))
    }
}

pub(crate) struct Shared {
    pub model: Mutex<Model>,
    pub url: String,
    pub public_key: Vec<u8>,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fake server; dropping it stops serving.
pub struct FakeGitHub {
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeGitHub {
    /// Serves an empty GitHub on a random port of 127.0.0.1.
    pub async fn start() -> FakeGitHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            model: Mutex::new(Model {
                installations: BTreeMap::new(),
                tokens: HashMap::new(),
                token_lifetime: Duration::from_secs(3600),
                repos: BTreeMap::new(),
                next_id: 1000,
                failures: HashMap::new(),
                failures_after: HashMap::new(),
                linked_emails: BTreeMap::from([(
                    commits::WEB_FLOW_EMAIL.to_string(),
                    "web-flow".to_string(),
                )]),
                teams: BTreeMap::new(),
                requests: Vec::new(),
                writes: BTreeMap::new(),
                mints: BTreeMap::new(),
                webhook_secret: "fake-webhook-secret".to_string(),
                app_id: APP_ID,
                created_apps: Vec::new(),
            }),
            url,
            public_key: std::fs::read(fixture("test-app-key.pub.pem")).unwrap(),
        });
        let app = routes::router(shared.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeGitHub { shared, server }
    }

    /// The API base URL to give cascade.
    pub fn url(&self) -> String {
        self.shared.url.clone()
    }

    /// Where `repo` is fetched from: `<url>/<owner>/<name>.git`, the API's `clone_url`
    /// (the fake serves GitHub's API, web and git at one address).
    pub fn clone_url(&self, repo: &str) -> String {
        format!("{}/{repo}.git", self.shared.url)
    }

    fn model(&self) -> MutexGuard<'_, Model> {
        self.shared.lock()
    }

    pub fn add_installation(&self, id: u64, account: &str) {
        self.model().installations.insert(
            id,
            InstallationModel {
                account: account.to_string(),
                permissions: default_permissions(),
            },
        );
    }

    /// Grants (or with `None` withdraws) one of the App's permissions on an installation,
    /// e.g. `("members", Some("read"))` for Organization → Members.
    pub fn set_app_permission(&self, installation: u64, name: &str, level: Option<&str>) {
        let mut model = self.model();
        let permissions = &mut model
            .installations
            .get_mut(&installation)
            .expect("add_installation first")
            .permissions;
        match level {
            Some(level) => permissions.insert(name.to_string(), level.to_string()),
            None => permissions.remove(name),
        };
    }

    /// Makes `user` an active member of team `org/slug` (creating the team).
    pub fn add_team_member(&self, org: &str, slug: &str, user: &str) {
        self.set_team_membership(org, slug, user, "active");
    }

    /// Invites `user` to team `org/slug`: the membership stays `pending` until accepted.
    pub fn invite_team_member(&self, org: &str, slug: &str, user: &str) {
        self.set_team_membership(org, slug, user, "pending");
    }

    fn set_team_membership(&self, org: &str, slug: &str, user: &str, state: &str) {
        self.model()
            .teams
            .entry((org.to_string(), slug.to_string()))
            .or_default()
            .insert(user.to_string(), state.to_string());
    }

    /// Adds `owner/name` to the installation whose account is `owner`, its repository
    /// served from `origin` (a bare git directory) when given, at [`FakeGitHub::clone_url`].
    pub fn add_repo(&self, full_name: &str, origin: Option<&std::path::Path>) {
        let mut model = self.model();
        let owner = full_name.split_once('/').expect("owner/name").0;
        let installation = model
            .installations
            .iter()
            .find(|(_, i)| i.account == owner)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("add_installation for {owner} before add_repo"));
        model.repos.insert(
            full_name.to_string(),
            RepoModel {
                id: json::id_of(full_name),
                full_name: full_name.to_string(),
                origin: origin.map(std::path::Path::to_path_buf),
                clone_url: None,
                default_branch: "main".to_string(),
                installation,
                next_number: 1,
                pulls: BTreeMap::new(),
                issues: BTreeMap::new(),
                comments: BTreeMap::new(),
                check_runs: BTreeMap::new(),
                permissions: HashMap::new(),
                protection: BTreeMap::new(),
                foreign_checks: Vec::new(),
            },
        );
    }

    pub fn open_pull_request(&self, repo: &str, spec: PrSpec) -> u64 {
        let mut model = self.model();
        let repo = model.repo(repo);
        let number = repo.next_number;
        repo.next_number += 1;
        if let Some(origin) = &repo.origin {
            sync_pull_ref(origin, number, &spec.head_sha, spec.head_repo.as_deref());
        }
        repo.pulls.insert(
            number,
            PullModel {
                number,
                title: spec.title,
                author: spec.author,
                head_ref: spec.head_ref,
                head_sha: spec.head_sha,
                previous_head_sha: None,
                base_ref: spec.base_ref,
                base_sha: spec.base_sha,
                draft: spec.draft,
                fork: spec.fork,
                mergeable: spec.mergeable,
                mergeable_state: spec.mergeable_state,
                state: "open".to_string(),
                merged: false,
                merge_commit_sha: None,
                files: spec.files,
                reviews: Vec::new(),
                head_repo: spec.head_repo,
                previous_base: None,
                labels: Vec::new(),
            },
        );
        number
    }

    /// A new head commit on the pull request's branch, touching `files`.
    pub fn push(&self, repo: &str, number: u64, new_head_sha: &str, files: Vec<FileChange>) {
        let mut model = self.model();
        let origin = model.repo(repo).origin.clone();
        let pr = model.pull(repo, number);
        pr.previous_head_sha = Some(std::mem::replace(
            &mut pr.head_sha,
            new_head_sha.to_string(),
        ));
        pr.files = files;
        if let Some(origin) = origin {
            sync_pull_ref(&origin, number, new_head_sha, pr.head_repo.as_deref());
        }
    }

    /// Changes the pull request's base branch, as "Edit" on GitHub does; announce it with
    /// `pull_request_event(.., "edited")`.
    pub fn change_base(&self, repo: &str, number: u64, base_ref: &str, base_sha: &str) {
        let mut model = self.model();
        let pr = model.pull(repo, number);
        let old_ref = std::mem::replace(&mut pr.base_ref, base_ref.to_string());
        let old_sha = std::mem::replace(&mut pr.base_sha, base_sha.to_string());
        pr.previous_base = Some((old_ref, old_sha));
    }

    pub fn close_pull_request(&self, repo: &str, number: u64, merged: bool) {
        let mut model = self.model();
        let pr = model.pull(repo, number);
        pr.state = "closed".to_string();
        pr.merged = merged;
    }

    /// Marks the pull request merged by `merge_commit` (which the test put on the base
    /// branch of the origin), as GitHub's merge button does; announce it with `closed`.
    pub fn merge_pull_request(&self, repo: &str, number: u64, merge_commit: &str) {
        let mut model = self.model();
        let pr = model.pull(repo, number);
        pr.state = "closed".to_string();
        pr.merged = true;
        pr.merge_commit_sha = Some(merge_commit.to_string());
    }

    pub fn set_draft(&self, repo: &str, number: u64, draft: bool) {
        self.model().pull(repo, number).draft = draft;
    }

    /// `read` (the default), `triage`, `write`, `maintain` or `admin`.
    pub fn set_permission(&self, repo: &str, user: &str, role: &str) {
        self.model()
            .repo(repo)
            .permissions
            .insert(user.to_string(), role.to_string());
    }

    /// Sets the pull request's labels (by name).
    pub fn set_labels(&self, repo: &str, number: u64, labels: &[&str]) {
        self.model()
            .repo(repo)
            .pulls
            .get_mut(&number)
            .expect("an open pull request")
            .labels = labels.iter().map(|l| l.to_string()).collect();
    }

    pub fn approve(&self, repo: &str, number: u64, user: &str) {
        self.review(repo, number, user, "APPROVED");
    }

    /// A review in `state` on the current head.
    /// Protects `branch`: GitHub then answers `blocked` itself, which the test sets with
    /// the pull request's `mergeable_state`.
    pub fn protect(&self, repo: &str, branch: &str, protection: merge_gate::Protection) {
        self.model()
            .repo(repo)
            .protection
            .insert(branch.to_string(), protection);
    }

    /// Another app's check run `name` on `sha`, completed with `conclusion`.
    pub fn foreign_check(&self, repo: &str, sha: &str, name: &str, conclusion: &str) {
        self.model().repo(repo).foreign_checks.push((
            sha.to_string(),
            name.to_string(),
            conclusion.to_string(),
        ));
    }

    pub fn review(&self, repo: &str, number: u64, user: &str, state: &str) {
        let mut model = self.model();
        let id = model.next_id();
        let pr = model.pull(repo, number);
        let commit_id = pr.head_sha.clone();
        pr.reviews.push(ReviewModel {
            id,
            author: user.to_string(),
            state: state.to_string(),
            commit_id,
        });
    }

    /// `user` comments on the pull request or issue; the snapshot feeds
    /// `issue_comment_event`.
    pub fn user_comment(&self, repo: &str, number: u64, user: &str, body: &str) -> CommentSnapshot {
        let mut model = self.model();
        let id = routes::add_comment(&mut model, repo, number, user, body);
        snapshot(model.repo(repo), id)
    }

    /// Every comment on the pull request, oldest first.
    pub fn comments(&self, repo: &str, number: u64) -> Vec<CommentSnapshot> {
        let mut model = self.model();
        let repo_model = model.repo(repo);
        let ids: Vec<u64> = repo_model
            .comments
            .values()
            .filter(|c| c.number == number)
            .map(|c| c.id)
            .collect();
        ids.into_iter().map(|id| snapshot(repo_model, id)).collect()
    }

    /// The App's own comments on the pull request, oldest first.
    pub fn bot_comments(&self, repo: &str, number: u64) -> Vec<CommentSnapshot> {
        self.comments(repo, number)
            .into_iter()
            .filter(|c| c.author == BOT_LOGIN)
            .collect()
    }

    /// The App's own comments on every issue and pull request of every repository,
    /// oldest first within each repository.
    pub fn all_bot_comments(&self) -> Vec<CommentSnapshot> {
        let model = self.model();
        model
            .repos
            .values()
            .flat_map(|repo| {
                repo.comments
                    .values()
                    .filter(|c| c.author == BOT_LOGIN)
                    .map(|c| snapshot(repo, c.id))
            })
            .collect()
    }

    /// Check runs on `sha`, oldest first.
    pub fn check_runs(&self, repo: &str, sha: &str) -> Vec<CheckRunSnapshot> {
        self.model()
            .repo(repo)
            .check_runs
            .values()
            .filter(|r| r.head_sha == sha)
            .map(|r| CheckRunSnapshot {
                id: r.id,
                name: r.name.clone(),
                head_sha: r.head_sha.clone(),
                history: r.history.clone(),
            })
            .collect()
    }

    /// `(user, content)` reactions on a comment.
    pub fn reactions(&self, comment_id: u64) -> Vec<(String, String)> {
        self.model()
            .repos
            .values()
            .find_map(|r| r.comments.get(&comment_id))
            .map(|c| c.reactions.clone())
            .unwrap_or_default()
    }

    /// Content writes served (comments, check runs, reactions, minimising), all installations.
    pub fn write_calls(&self) -> u64 {
        self.model().writes.values().sum()
    }

    pub fn write_calls_for(&self, installation: u64) -> u64 {
        self.model().writes.get(&installation).copied().unwrap_or(0)
    }

    /// Installation tokens minted for `installation`.
    pub fn tokens_minted(&self, installation: u64) -> u64 {
        self.model().mints.get(&installation).copied().unwrap_or(0)
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.model().requests.clone()
    }

    /// The next request of `kind` (e.g. `pulls.get`, `issues.comments.create`,
    /// `checks.update`, `graphql`, `apps.access_tokens`) gets `failure`.
    /// Several calls queue up.
    pub fn fail_next(&self, kind: &str, failure: Failure) {
        self.model()
            .failures
            .entry(kind.to_string())
            .or_default()
            .push_back(failure);
    }

    /// The next request of `kind` is carried out (a comment stored, say) and then
    /// answered with `failure`, as GitHub does when it fails after the write.
    pub fn fail_next_after_storing(&self, kind: &str, failure: Failure) {
        self.model()
            .failures_after
            .entry(kind.to_string())
            .or_default()
            .push_back(failure);
    }

    /// How long newly minted tokens live (GitHub: one hour).
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.model().token_lifetime = lifetime;
    }

    /// Every token issued so far stops working (GitHub answers 401).
    pub fn expire_tokens(&self) {
        self.model().tokens.clear();
    }

    pub fn webhook_secret(&self) -> String {
        self.model().webhook_secret.clone()
    }

    /// The App this GitHub serves now: [`APP_ID`], or the last one created from a manifest.
    pub fn app_id(&self) -> u64 {
        self.model().app_id
    }

    /// Apps registered through the manifest flow, oldest first.
    pub fn created_apps(&self) -> Vec<CreatedApp> {
        self.model().created_apps.clone()
    }
}

/// GitHub keeps every pull request's head at `refs/pull/<n>/head` in the base
/// repository; a fork's commits reach the base repository only that way.
fn sync_pull_ref(
    origin: &std::path::Path,
    number: u64,
    sha: &str,
    head_repo: Option<&std::path::Path>,
) {
    crate::support::git_http::sync_head_ref(origin, "pull", number, sha, head_repo);
}

fn snapshot(repo: &RepoModel, id: u64) -> CommentSnapshot {
    let c = &repo.comments[&id];
    CommentSnapshot {
        id,
        node_id: c.node_id.clone(),
        repo: repo.full_name.clone(),
        number: c.number,
        author: c.author.clone(),
        body: c.body.clone(),
        minimized: c.minimized_reason.is_some(),
        minimized_reason: c.minimized_reason.clone(),
        edits: c.edits.clone(),
    }
}
