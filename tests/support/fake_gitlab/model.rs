//! The fake GitLab's state: users and tokens, projects, merge requests, notes, award
//! emoji, commit statuses, group members, injected failures, the request log and the
//! write counter. Plain data; the routes and verbs change it under one lock.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::SystemTime;

use super::{DiffFile, Failure, IssueModel, RequestRecord};

pub(crate) struct UserModel {
    pub id: u64,
    pub username: String,
}

pub(crate) struct ProjectModel {
    pub id: u64,
    pub path: String,
    /// The bare repository served over HTTP at `<url>/<path>.git`.
    pub origin: Option<PathBuf>,
    /// Empty for an empty repository (GitLab answers `null`).
    pub default_branch: String,
    pub next_iid: u64,
    pub mrs: BTreeMap<u64, MrModel>,
    /// Issues count their iids apart from merge requests.
    pub next_issue_iid: u64,
    pub issues: BTreeMap<u64, IssueModel>,
    /// Direct members: user id → access level.
    pub members: BTreeMap<u64, u64>,
    /// "Remove all approvals when commits are added to the source branch" (GitLab's
    /// default: on).
    pub reset_approvals_on_push: bool,
    /// "Pipelines must succeed".
    pub pipeline_must_succeed: bool,
    /// Approvals a merge request needs (0 on GitLab Free).
    pub approvals_required: u64,
}

pub(crate) struct MrModel {
    pub id: u64,
    pub iid: u64,
    pub title: String,
    pub author: u64,
    pub source_branch: String,
    pub target_branch: String,
    pub head_sha: String,
    pub previous_head_sha: Option<String>,
    pub base_sha: String,
    pub draft: bool,
    pub fork: bool,
    /// `opened`, `closed`, `merged`.
    pub state: String,
    /// Set by a test; otherwise worked out like GitLab (see `statuses::detailed_merge_status`).
    pub detailed_merge_status: Option<String>,
    /// The merge commit once merged by [`crate::support::fake_gitlab::FakeGitLab::merge_with`].
    pub merge_commit_sha: Option<String>,
    pub files: Vec<DiffFile>,
    pub approved_by: Vec<u64>,
    pub head_repo: Option<PathBuf>,
}

pub(crate) struct NoteModel {
    pub id: u64,
    pub project: u64,
    pub iid: u64,
    pub author: u64,
    pub body: String,
    pub system: bool,
    pub created_at: SystemTime,
    pub updated_at: SystemTime,
    pub edits: Vec<String>,
    pub awards: Vec<AwardModel>,
}

pub(crate) struct AwardModel {
    pub user: u64,
    pub name: String,
}

pub(crate) struct StatusModel {
    pub id: u64,
    pub project: u64,
    pub sha: String,
    pub name: String,
    pub git_ref: Option<String>,
    pub description: Option<String>,
    pub target_url: Option<String>,
    pub author: u64,
    pub history: Vec<String>,
    pub created_at: SystemTime,
}

impl StatusModel {
    pub fn current(&self) -> &str {
        self.history.last().map(String::as_str).unwrap_or("created")
    }
}

pub(crate) struct Model {
    pub users: BTreeMap<u64, UserModel>,
    /// Token → user id.
    pub tokens: HashMap<String, u64>,
    pub projects: BTreeMap<u64, ProjectModel>,
    /// Group path → (group id, direct members: user id → access level).
    pub groups: BTreeMap<String, (u64, BTreeMap<u64, u64>)>,
    pub notes: BTreeMap<u64, NoteModel>,
    pub statuses: BTreeMap<u64, StatusModel>,
    next_id: u64,
    failures: HashMap<String, VecDeque<Failure>>,
    /// Failures answered after the request was carried out (a note stored, then a 502).
    failures_after: HashMap<String, VecDeque<Failure>>,
    pub requests: Vec<RequestRecord>,
    pub writes: u64,
    pub webhook_secret: String,
    pub signing_token: Option<String>,
}

impl Model {
    pub fn new() -> Model {
        Model {
            users: BTreeMap::new(),
            tokens: HashMap::new(),
            projects: BTreeMap::new(),
            groups: BTreeMap::new(),
            notes: BTreeMap::new(),
            statuses: BTreeMap::new(),
            next_id: 1000,
            failures: HashMap::new(),
            failures_after: HashMap::new(),
            requests: Vec::new(),
            writes: 0,
            webhook_secret: "fake-gitlab-webhook-secret".to_string(),
            signing_token: None,
        }
    }

    /// Queues `failure` for the next request of `kind` (`after`: once it was carried out).
    pub fn queue_failure(&mut self, kind: &str, failure: Failure, after: bool) {
        let queues = if after {
            &mut self.failures_after
        } else {
            &mut self.failures
        };
        queues
            .entry(kind.to_string())
            .or_default()
            .push_back(failure);
    }

    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The user called `username`, created when unknown.
    pub fn user(&mut self, username: &str) -> u64 {
        if let Some(user) = self.users.values().find(|u| u.username == username) {
            return user.id;
        }
        let id = self.next_id();
        self.users.insert(
            id,
            UserModel {
                id,
                username: username.to_string(),
            },
        );
        id
    }

    pub fn username(&self, id: u64) -> String {
        self.users
            .get(&id)
            .map_or_else(|| format!("user{id}"), |u| u.username.clone())
    }

    /// A project by id (`42`) or by path (`acme/platform/infra`, already decoded).
    pub fn find_project(&self, id_or_path: &str) -> Option<u64> {
        match id_or_path.parse::<u64>() {
            Ok(id) => self.projects.contains_key(&id).then_some(id),
            Err(_) => self
                .projects
                .values()
                .find(|p| p.path.eq_ignore_ascii_case(id_or_path))
                .map(|p| p.id),
        }
    }

    pub fn project(&mut self, project: u64) -> &mut ProjectModel {
        self.projects
            .get_mut(&project)
            .unwrap_or_else(|| panic!("fake GitLab has no project {project}: add_project first"))
    }

    pub fn mr(&mut self, project: u64, iid: u64) -> &mut MrModel {
        self.project(project)
            .mrs
            .get_mut(&iid)
            .unwrap_or_else(|| panic!("fake GitLab has no merge request {project}!{iid}"))
    }

    pub fn take_failure(&mut self, kind: &str, after: bool) -> Option<Failure> {
        let queues = if after {
            &mut self.failures_after
        } else {
            &mut self.failures
        };
        queues.get_mut(kind).and_then(VecDeque::pop_front)
    }
}
