//! A stateful fake GitLab, served over real HTTP on 127.0.0.1, for tests of cascade's
//! GitLab client and of whole flows. It holds an in-memory model (users and tokens,
//! projects with nested paths, merge requests, notes with edit history and award emoji,
//! commit statuses with GitLab's transition rules, project and group members,
//! approvals, diffs) and answers exactly the REST endpoints cascade uses under
//! `/api/v4`, by project id or URL-encoded path, with GitLab's JSON shapes, pagination
//! and error bodies. It serves the projects' git repositories over smart HTTP
//! (`git-http-backend`), refusing requests without the token. It counts writes, logs
//! every request, and can be told to fail the next call of a kind.
//!
//! Tests read like the behaviour: `fake.open_merge_request(..)`, `fake.user_note(..)`,
//! `fake.bot_notes(..)`, `fake.statuses(..)`, `fake.issue(..)` (branches and issues with
//! their notes: `fake_gitlab/issues.rs`); a merge request's commits are read from the
//! origin (`fake_gitlab/commits.rs`).

mod commits;
mod git;
mod issues;
mod json;
mod model;
mod routes;
mod statuses;
mod webhooks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use issues::IssueModel;
pub(crate) use model::{AwardModel, Model, MrModel, NoteModel, ProjectModel, StatusModel};
pub use webhooks::{signing_token, standard_webhooks_signature};

/// The token of cascade's bot user.
pub const TOKEN: &str = "glpat-fake-cascade-0123456789abcdef";
/// The username of the token's user (a project bot in real GitLab).
pub const BOT_USERNAME: &str = "project_7_bot_cascade";
/// GitLab's limit on a note, in characters.
pub const NOTE_LIMIT: usize = 1_000_000;

/// GitLab's access levels.
pub const REPORTER: u64 = 20;
pub const DEVELOPER: u64 = 30;

/// One file a merge request changes, as `…/diffs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffFile {
    pub old_path: String,
    pub new_path: String,
    pub new_file: bool,
    pub renamed_file: bool,
    pub deleted_file: bool,
}

impl DiffFile {
    pub fn modified(path: &str) -> DiffFile {
        DiffFile {
            old_path: path.to_string(),
            new_path: path.to_string(),
            new_file: false,
            renamed_file: false,
            deleted_file: false,
        }
    }
    pub fn added(path: &str) -> DiffFile {
        DiffFile {
            new_file: true,
            ..DiffFile::modified(path)
        }
    }
}

/// What a new merge request looks like; `..MrSpec::default()` fills the rest.
#[derive(Debug, Clone)]
pub struct MrSpec {
    pub title: String,
    /// A username; the user is created when unknown.
    pub author: String,
    pub source_branch: String,
    pub target_branch: String,
    pub head_sha: String,
    pub base_sha: String,
    pub draft: bool,
    /// The source branch lives in another project (a fork).
    pub fork: bool,
    pub files: Vec<DiffFile>,
    /// Where the head's commits are when not in the project's repository (a fork's
    /// repository, as a local git directory). The fake pushes every head to the
    /// project's `refs/merge-requests/<iid>/head`, as GitLab does.
    pub head_repo: Option<PathBuf>,
}

impl Default for MrSpec {
    fn default() -> Self {
        MrSpec {
            title: "Change infrastructure".to_string(),
            author: "alice".to_string(),
            source_branch: "feature".to_string(),
            target_branch: "main".to_string(),
            head_sha: "a".repeat(40),
            base_sha: "b".repeat(40),
            draft: false,
            fork: false,
            files: vec![DiffFile::modified("live/dev/vpc/terragrunt.hcl")],
            head_repo: None,
        }
    }
}

/// A note as the fake holds it; also what a `Note Hook` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSnapshot {
    pub id: u64,
    pub project_id: u64,
    pub iid: u64,
    pub author: String,
    pub body: String,
    pub system: bool,
    /// Bodies this note had before each edit, oldest first.
    pub edits: Vec<String>,
    /// `(username, emoji name)` awards.
    pub awards: Vec<(String, String)>,
}

/// One commit status record: GitLab moves a pending or running one through its
/// states, and makes a new one after it finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSnapshot {
    pub id: u64,
    pub name: String,
    pub sha: String,
    pub git_ref: Option<String>,
    pub description: Option<String>,
    /// Every state it was in, oldest first; the last is current.
    pub history: Vec<String>,
}

impl StatusSnapshot {
    pub fn current(&self) -> &str {
        self.history.last().expect("a status has a state")
    }
}

/// A request the fake received (never its credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// It carried a valid token (header or HTTP Basic password).
    pub authorized: bool,
}

/// An answer the fake gives instead of the real one, once.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The JSON body's `message` (None: GitLab's plain-text `Retry later`).
    pub message: Option<String>,
}

impl Failure {
    pub fn status(status: u16) -> Failure {
        let message = match status {
            500 => "500 Internal Server Error",
            502 => "502 Bad Gateway",
            503 => "503 Service Unavailable",
            404 => "404 Not Found",
            403 => "403 Forbidden",
            _ => "Error",
        };
        Failure {
            status,
            headers: Vec::new(),
            message: Some(message.to_string()),
        }
    }

    /// A 400 with `message` (e.g. GitLab's "Cannot transition status via …").
    pub fn bad_request(message: &str) -> Failure {
        Failure {
            status: 400,
            headers: Vec::new(),
            message: Some(message.to_string()),
        }
    }

    /// 429 with `Retry-After: secs`, as GitLab's application rate limiter answers.
    pub fn retry_after(secs: u64) -> Failure {
        Failure {
            status: 429,
            headers: vec![("Retry-After".into(), secs.to_string())],
            message: None,
        }
    }

    /// 429 with only the `RateLimit-*` headers, resetting `secs` from now (older
    /// GitLab, or its HAProxy throttle).
    pub fn ratelimit_reset(secs: u64) -> Failure {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let reset = now + secs;
        Failure {
            status: 429,
            headers: vec![
                ("RateLimit-Limit".into(), "600".into()),
                ("RateLimit-Observed".into(), "601".into()),
                ("RateLimit-Remaining".into(), "0".into()),
                ("RateLimit-Reset".into(), reset.to_string()),
                (
                    "RateLimit-ResetTime".into(),
                    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(reset)),
                ),
            ],
            message: None,
        }
    }
}

pub(crate) struct Shared {
    pub model: Mutex<Model>,
    pub url: String,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fake server; dropping it stops serving.
pub struct FakeGitLab {
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGitLab {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeGitLab {
    /// Serves an empty GitLab (only the bot user and its token) on a random port.
    pub async fn start() -> FakeGitLab {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut model = Model::new();
        let bot = model.user(BOT_USERNAME);
        model.tokens.insert(TOKEN.to_string(), bot);
        let shared = Arc::new(Shared {
            model: Mutex::new(model),
            url,
        });
        let app = routes::router(shared.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeGitLab { shared, server }
    }

    /// The instance root URL to give cascade (the API is under `/api/v4`).
    pub fn url(&self) -> String {
        self.shared.url.clone()
    }

    pub fn token(&self) -> &'static str {
        TOKEN
    }

    fn model(&self) -> MutexGuard<'_, Model> {
        self.shared.lock()
    }

    /// The id of user `username`, created when unknown.
    pub fn user(&self, username: &str) -> u64 {
        self.model().user(username)
    }

    pub fn bot_id(&self) -> u64 {
        self.user(BOT_USERNAME)
    }

    /// Every token stops working (GitLab answers 401).
    pub fn revoke_tokens(&self) {
        self.model().tokens.clear();
    }

    /// A project at `path` (`acme/platform/infra`), its repository served from `origin`
    /// (a bare git directory) when given. Returns its id.
    pub fn add_project(&self, path: &str, origin: Option<&Path>) -> u64 {
        let mut model = self.model();
        let id = model.next_id();
        model.projects.insert(
            id,
            ProjectModel {
                id,
                path: path.to_string(),
                origin: origin.map(Path::to_path_buf),
                default_branch: "main".to_string(),
                next_iid: 1,
                mrs: BTreeMap::new(),
                next_issue_iid: 1,
                issues: BTreeMap::new(),
                members: BTreeMap::new(),
                reset_approvals_on_push: true,
                pipeline_must_succeed: true,
                approvals_required: 0,
            },
        );
        id
    }

    /// `http://127.0.0.1:PORT/<path>.git`, the project's `http_url_to_repo`.
    pub fn git_http_url(&self, project: u64) -> String {
        format!(
            "{}/{}.git",
            self.shared.url,
            self.model().project(project).path
        )
    }

    pub fn set_reset_approvals_on_push(&self, project: u64, on: bool) {
        self.model().project(project).reset_approvals_on_push = on;
    }

    pub fn set_approvals_required(&self, project: u64, count: u64) {
        self.model().project(project).approvals_required = count;
    }

    /// Makes `username` a direct project member at `level` (`DEVELOPER`, `REPORTER`, …);
    /// `None` removes them.
    pub fn set_member(&self, project: u64, username: &str, level: Option<u64>) {
        let mut model = self.model();
        let user = model.user(username);
        let members = &mut model.project(project).members;
        match level {
            Some(level) => members.insert(user, level),
            None => members.remove(&user),
        };
    }

    /// Makes `username` a direct member of group `path` at `level` (creating the group).
    /// Members of a group are members of its subgroups and projects.
    pub fn set_group_member(&self, group: &str, username: &str, level: Option<u64>) {
        let mut model = self.model();
        let user = model.user(username);
        let id = match model.groups.get(group) {
            Some((id, _)) => *id,
            None => model.next_id(),
        };
        let members = &mut model
            .groups
            .entry(group.to_string())
            .or_insert((id, BTreeMap::new()))
            .1;
        match level {
            Some(level) => members.insert(user, level),
            None => members.remove(&user),
        };
    }

    pub fn open_merge_request(&self, project: u64, spec: MrSpec) -> u64 {
        let mut model = self.model();
        let author = model.user(&spec.author);
        let id = model.next_id();
        let project_model = model.project(project);
        let iid = project_model.next_iid;
        project_model.next_iid += 1;
        if let Some(origin) = &project_model.origin {
            git::sync_mr_ref(origin, iid, &spec.head_sha, spec.head_repo.as_deref());
        }
        project_model.mrs.insert(
            iid,
            MrModel {
                id,
                iid,
                title: spec.title,
                author,
                source_branch: spec.source_branch,
                target_branch: spec.target_branch,
                head_sha: spec.head_sha,
                previous_head_sha: None,
                base_sha: spec.base_sha,
                draft: spec.draft,
                fork: spec.fork,
                state: "opened".to_string(),
                detailed_merge_status: None,
                merge_commit_sha: None,
                files: spec.files,
                approved_by: Vec::new(),
                head_repo: spec.head_repo,
            },
        );
        iid
    }

    /// A new head commit on the source branch, changing `files`. Approvals go when the
    /// project resets them on push.
    pub fn push(&self, project: u64, iid: u64, new_head_sha: &str, files: Vec<DiffFile>) {
        let mut model = self.model();
        let project_model = model.project(project);
        let origin = project_model.origin.clone();
        let reset = project_model.reset_approvals_on_push;
        let mr = model.mr(project, iid);
        mr.previous_head_sha = Some(std::mem::replace(
            &mut mr.head_sha,
            new_head_sha.to_string(),
        ));
        mr.files = files;
        if reset {
            mr.approved_by.clear();
        }
        if let Some(origin) = origin {
            git::sync_mr_ref(&origin, iid, new_head_sha, mr.head_repo.as_deref());
        }
    }

    pub fn set_draft(&self, project: u64, iid: u64, draft: bool) {
        self.model().mr(project, iid).draft = draft;
    }

    pub fn close(&self, project: u64, iid: u64) {
        self.model().mr(project, iid).state = "closed".to_string();
    }

    pub fn reopen(&self, project: u64, iid: u64) {
        self.model().mr(project, iid).state = "opened".to_string();
    }

    pub fn merge(&self, project: u64, iid: u64) {
        self.model().mr(project, iid).state = "merged".to_string();
    }

    /// Merged by `merge_commit` (which the test put on the target branch of the origin):
    /// the API and the hook then name it as `merge_commit_sha`.
    pub fn merge_with(&self, project: u64, iid: u64, merge_commit: &str) {
        let mut model = self.model();
        let mr = model.mr(project, iid);
        mr.state = "merged".to_string();
        mr.merge_commit_sha = Some(merge_commit.to_string());
    }

    /// Overrides what GitLab would work out (`checking`, `conflict`, …); `None` goes back
    /// to working it out from draft, statuses and approvals.
    pub fn set_detailed_merge_status(&self, project: u64, iid: u64, status: Option<&str>) {
        self.model().mr(project, iid).detailed_merge_status = status.map(str::to_string);
    }

    /// What `GET …/merge_requests/:iid` says now.
    pub fn detailed_merge_status(&self, project: u64, iid: u64) -> String {
        let model = self.model();
        statuses::detailed_merge_status(
            &model,
            &model.projects[&project],
            &model.projects[&project].mrs[&iid],
        )
    }

    pub fn approve(&self, project: u64, iid: u64, username: &str) {
        let mut model = self.model();
        let user = model.user(username);
        let mr = model.mr(project, iid);
        if !mr.approved_by.contains(&user) {
            mr.approved_by.push(user);
        }
    }

    /// `username` comments on the merge request; the snapshot feeds `note_event`.
    pub fn user_note(&self, project: u64, iid: u64, username: &str, body: &str) -> NoteSnapshot {
        let mut model = self.model();
        let user = model.user(username);
        let id = routes::add_note(&mut model, project, iid, user, body, false);
        snapshot(&model, id)
    }

    /// A system note ("added 1 commit", "approved this merge request").
    pub fn system_note(&self, project: u64, iid: u64, username: &str, body: &str) -> NoteSnapshot {
        let mut model = self.model();
        let user = model.user(username);
        let id = routes::add_note(&mut model, project, iid, user, body, true);
        snapshot(&model, id)
    }

    /// Every note on the merge request, oldest first.
    pub fn notes(&self, project: u64, iid: u64) -> Vec<NoteSnapshot> {
        let model = self.model();
        model
            .notes
            .values()
            .filter(|n| n.project == project && n.iid == iid)
            .map(|n| snapshot(&model, n.id))
            .collect()
    }

    /// The bot's own notes, oldest first.
    pub fn bot_notes(&self, project: u64, iid: u64) -> Vec<NoteSnapshot> {
        self.notes(project, iid)
            .into_iter()
            .filter(|n| n.author == BOT_USERNAME && !n.system)
            .collect()
    }

    /// The bot's own notes on every merge request and issue of `project`, oldest first
    /// within each.
    pub fn all_bot_notes(&self, project: u64) -> Vec<NoteSnapshot> {
        let on_mrs: Vec<u64> = self.model().projects[&project]
            .mrs
            .keys()
            .copied()
            .collect();
        let on_issues = self.issues(project).into_iter().flat_map(|i| i.notes);
        on_mrs
            .into_iter()
            .flat_map(|iid| self.bot_notes(project, iid))
            .chain(on_issues.filter(|n| n.author == BOT_USERNAME && !n.system))
            .collect()
    }

    /// `(username, emoji)` awards on a note (on a merge request or an issue).
    pub fn awards(&self, note_id: u64) -> Vec<(String, String)> {
        let model = self.model();
        let on_issue = || {
            model
                .projects
                .values()
                .flat_map(|p| p.issues.values())
                .find_map(|i| i.notes.get(&note_id))
        };
        model
            .notes
            .get(&note_id)
            .or_else(on_issue)
            .map_or_else(Vec::new, |n| {
                n.awards
                    .iter()
                    .map(|a| (model.username(a.user), a.name.clone()))
                    .collect()
            })
    }

    /// Another system's status on `sha` (a CI job, a scanner): `state` is any of
    /// GitLab's (`pending`, `running`, `success`, `failed`, `canceled`, `skipped`, `manual`).
    pub fn add_status(&self, project: u64, sha: &str, name: &str, state: &str) -> u64 {
        let mut model = self.model();
        let author = model.user("ci-runner");
        let id = model.next_id();
        model.statuses.insert(
            id,
            StatusModel {
                id,
                project,
                sha: sha.to_string(),
                name: name.to_string(),
                git_ref: None,
                description: None,
                target_url: None,
                author,
                history: vec![state.to_string()],
                created_at: SystemTime::now(),
            },
        );
        id
    }

    /// Every status record on `sha`, oldest first.
    pub fn statuses(&self, project: u64, sha: &str) -> Vec<StatusSnapshot> {
        self.model()
            .statuses
            .values()
            .filter(|s| s.project == project && s.sha == sha)
            .map(|s| StatusSnapshot {
                id: s.id,
                name: s.name.clone(),
                sha: s.sha.clone(),
                git_ref: s.git_ref.clone(),
                description: s.description.clone(),
                history: s.history.clone(),
            })
            .collect()
    }

    /// Writes served (notes, statuses, award emoji) that GitLab stored.
    pub fn write_calls(&self) -> u64 {
        self.model().writes
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.model().requests.clone()
    }

    /// The next request of `kind` gets `failure`. Kinds: `user`, `users`, `projects.get`,
    /// `merge_requests.get`, `notes.list`, `notes.create`, `notes.edit`, `notes.delete`,
    /// `notes.award`, `approvals`, `project_approvals`, `diffs`, `statuses.create`,
    /// `statuses.list`, `members.project`, `members.group`, `git`, `branches.get`,
    /// `issues.create`, `issues.list`, `issues.get`, `issues.edit`, `issues.notes.create`,
    /// `issues.notes.list`, `issues.notes.award`. Several calls queue up.
    pub fn fail_next(&self, kind: &str, failure: Failure) {
        self.model().queue_failure(kind, failure, false);
    }

    /// The next request of `kind` is carried out (a note stored, say) and then answered
    /// with `failure`, as GitLab does when it fails after the write.
    pub fn fail_next_after_storing(&self, kind: &str, failure: Failure) {
        self.model().queue_failure(kind, failure, true);
    }

    pub fn webhook_secret(&self) -> String {
        self.model().webhook_secret.clone()
    }

    /// Signs deliveries the Standard-Webhooks way with `token` (`whsec_…`), or stops.
    pub fn set_signing_token(&self, token: Option<&str>) {
        self.model().signing_token = token.map(str::to_string);
    }
}

fn snapshot(model: &Model, id: u64) -> NoteSnapshot {
    let n = &model.notes[&id];
    NoteSnapshot {
        id,
        project_id: n.project,
        iid: n.iid,
        author: model.username(n.author),
        body: n.body.clone(),
        system: n.system,
        edits: n.edits.clone(),
        awards: n
            .awards
            .iter()
            .map(|a| (model.username(a.user), a.name.clone()))
            .collect(),
    }
}
