//! GitLab as cascade sees it (gitlab.com or a self-managed instance): this module owns
//! every call cascade makes to GitLab's REST API, as one token's user acting on many
//! projects. It carries requests and answers and never decides anything: who may apply,
//! what to post and when are the bot's business.
//!
//! Requests are the `gitlab` crate's typed endpoints (two small ones of our own in
//! [`wire`] where the crate has none), sent through [`transport`], which authenticates,
//! waits out rate limits and server errors, and counts writes. Answers are read into
//! small serde shapes, so fields GitLab adds or omits never break a call. How cascade's
//! check becomes a commit status, and "mergeable" without it, is in [`status`]; notes on
//! merge requests and issues in [`notes`]; a merge request's commits in [`commits`]; the
//! default branch and issues (drift) in [`issues`].

mod commits;
mod issues;
mod notes;
mod status;
mod transport;
mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use gitlab::api::common::NameOrId;
use gitlab::api::projects::merge_requests::{MergeRequest, approvals::MergeRequestApprovals};
use gitlab::api::projects::repository::commits::{
    CommitStatusState, CommitStatuses, CreateCommitStatus,
};
use gitlab::api::{AsyncQuery, Endpoint, Pageable, Pagination};

pub use issues::{ISSUE_BODY_LIMIT, ISSUE_TITLE_LIMIT};
pub use status::{DESCRIPTION_LIMIT, STATUS_NAME};
pub use transport::{ApiError, NoAnswer, RetryPolicy};

use crate::forge::origin::{GitCredential, GitOrigin};
use crate::forge::types::{
    Actor, Approvals, Approver, CheckOutput, ForgeKind, ForgeRef, Membership, Spelling,
};
use crate::forge::{PrNumber, PullRequest, answered_sha};
use transport::{Call, Transport};
use wire::{
    AllGroupMember, WireApprovals, WireId, WireMember, WireMergeRequest, WireProject,
    WireProjectApprovals, WireStatus, WireUser,
};

/// GitLab's limit on a note, in characters.
pub const NOTE_LIMIT: usize = 1_000_000;

/// The lowest access level that may apply by default: Developer.
pub const DEVELOPER_ACCESS: u64 = 30;

/// Items read from one listing before it is called runaway.
const MAX_LISTED: usize = 100_000;

/// One per server: the instance root URL and the token of the user cascade acts as.
#[derive(Clone)]
pub struct GitLab {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    url: String,
    /// The instance's origin: its repositories are there, and the token goes nowhere else.
    origin: GitOrigin,
    me: tokio::sync::OnceCell<Actor>,
    /// Project facts that do not change while cascade runs (its web page), by id.
    projects: Mutex<HashMap<u64, Arc<WireProject>>>,
}

impl std::fmt::Debug for GitLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLab")
            .field("url", &self.inner.url)
            .finish_non_exhaustive()
    }
}

/// Options for [`GitLab`]; the defaults follow GitLab's documented limits.
pub struct GitLabBuilder {
    url: String,
    token: String,
    policy: RetryPolicy,
}

impl std::fmt::Debug for GitLabBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabBuilder")
            .field("url", &self.url)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl GitLabBuilder {
    /// The longest single wait for a rate limit (default 60 s).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.policy.max_wait = wait;
        self
    }

    /// First backoff on a 429 that names no time (default 10 s).
    pub fn rate_limit_backoff(mut self, wait: Duration) -> Self {
        self.policy.rate_limit_backoff = wait;
        self
    }

    /// First backoff after a 5xx (default 1 s).
    pub fn server_error_backoff(mut self, wait: Duration) -> Self {
        self.policy.server_error_backoff = wait;
        self
    }

    /// Attempts per call, the first included (default 4).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.policy.max_attempts = attempts;
        self
    }

    pub fn build(self) -> anyhow::Result<GitLab> {
        let transport = Transport::new(&self.url, &self.token, self.policy)
            .context("could not set up the GitLab client")?;
        Ok(GitLab {
            inner: Arc::new(Inner {
                transport,
                origin: GitOrigin::for_gitlab(&self.url)?,
                url: self.url.trim().trim_end_matches('/').to_string(),
                me: tokio::sync::OnceCell::new(),
                projects: Mutex::default(),
            }),
        })
    }
}

impl GitLab {
    /// The client with default limits. `url` is the instance root (`https://gitlab.com`);
    /// the API is under `url/api/v4`. No request is made until one is needed.
    pub fn new(url: &str, token: &str) -> anyhow::Result<GitLab> {
        GitLab::builder(url, token).build()
    }

    pub fn builder(url: &str, token: &str) -> GitLabBuilder {
        GitLabBuilder {
            url: url.to_string(),
            token: token.to_string(),
            policy: RetryPolicy::default(),
        }
    }

    /// The instance root URL.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The instance's origin (scheme, host, port of `--gitlab-url`): where its projects'
    /// repositories and web pages are, and the only place the token is sent.
    pub fn origin(&self) -> &GitOrigin {
        &self.inner.origin
    }

    /// The token's user (`GET /user`), read once and kept: its notes are cascade's own.
    pub async fn current_user(&self) -> anyhow::Result<Actor> {
        self.inner
            .me
            .get_or_try_init(|| self.inner.read_current_user())
            .await
            .cloned()
    }

    /// The project with GitLab id `project_id`. No request is made.
    pub fn project(&self, project_id: u64) -> Project {
        Project {
            id: project_id,
            inner: self.inner.clone(),
        }
    }

    /// Writes made so far (notes, statuses, award emoji), refused ones (4xx) left out.
    pub fn write_calls(&self) -> u64 {
        self.inner.transport.write_calls()
    }

    /// Times cascade waited for a rate limit so far.
    pub fn rate_limit_waits(&self) -> u64 {
        self.inner.transport.waits()
    }
}

impl Inner {
    async fn query<T, E>(&self, kind: &'static str, endpoint: E) -> anyhow::Result<T>
    where
        E: Endpoint + Sync,
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let call = self.transport.call(kind);
        endpoint.query_async(&call).await.map_err(|e| call.error(e))
    }

    /// Every page of a listing (GitLab's `page`/`per_page`, 100 a page).
    async fn list<T, E>(&self, call: &Call<'_>, endpoint: E) -> anyhow::Result<Vec<T>>
    where
        E: Endpoint + Pageable + Sync,
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        gitlab::api::paged(endpoint, Pagination::Limit(MAX_LISTED))
            .query_async(call)
            .await
            .map_err(|e| call.error(e))
    }

    /// A write whose answer cascade does not read (`DELETE`).
    async fn ignore<E: Endpoint + Sync>(
        &self,
        kind: &'static str,
        endpoint: E,
    ) -> anyhow::Result<()> {
        let call = self.transport.call(kind);
        gitlab::api::ignore(endpoint)
            .query_async(&call)
            .await
            .map_err(|e| call.error(e))
    }

    async fn read_current_user(&self) -> anyhow::Result<Actor> {
        let endpoint = gitlab::api::users::CurrentUser::builder()
            .build()
            .map_err(built)?;
        let user: WireUser = self.query("users.current", endpoint).await.with_context(|| {
            format!(
                "could not read the GitLab token's own user at {}; the token needs the `api` scope",
                self.url
            )
        })?;
        Ok(Actor {
            id: Some(user.id),
            login: user.username,
        })
    }

    /// A user's id from their username (`GET /users?username=`); None when nobody has it.
    async fn user_id(&self, username: &str) -> anyhow::Result<Option<u64>> {
        let endpoint = gitlab::api::users::Users::builder()
            .username(username)
            .build()
            .map_err(built)?;
        let users: Vec<WireUser> = self.query("users.by_username", endpoint).await?;
        Ok(users
            .into_iter()
            .find(|u| u.username.eq_ignore_ascii_case(username))
            .map(|u| u.id))
    }
}

fn built(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("cascade built an invalid GitLab request: {error}")
}

/// The token's user acting on one project: every method of the forge contract.
#[derive(Clone)]
pub struct Project {
    id: u64,
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Project {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether `actor` is the token's own user (read at start): its notes are cascade's
    /// and never commands.
    pub async fn is_self(&self, actor: &Actor) -> bool {
        let me = self
            .inner
            .me
            .get_or_try_init(|| self.inner.read_current_user());
        matches!(me.await, Ok(me) if me.id.is_some() && me.id == actor.id)
    }

    pub fn kind(&self) -> ForgeKind {
        ForgeKind::GitLab
    }

    pub fn spelling(&self) -> &'static Spelling {
        &Spelling::GITLAB
    }

    /// GitLab's note limit: 1,000,000 characters.
    pub fn comment_limit(&self) -> usize {
        NOTE_LIMIT
    }

    /// Where GitLab keeps a merge request's head in the target project, fork or not.
    pub fn fork_head_ref(&self, number: u64) -> String {
        format!("refs/merge-requests/{number}/head")
    }

    /// The configured token for `git fetch` (HTTP Basic credentials, never in a URL),
    /// bound to the instance's origin.
    pub async fn git_credential(&self) -> anyhow::Result<GitCredential> {
        Ok(GitCredential::new(
            self.inner.origin.clone(),
            self.inner.transport.token(),
        ))
    }

    async fn me(&self) -> anyhow::Result<Actor> {
        GitLab {
            inner: self.inner.clone(),
        }
        .current_user()
        .await
    }

    /// The project's facts, read once (`GET /projects/:id`).
    async fn facts(&self) -> anyhow::Result<Arc<WireProject>> {
        if let Some(known) = self.inner.projects.lock().unwrap().get(&self.id) {
            return Ok(known.clone());
        }
        let endpoint = gitlab::api::projects::Project::builder()
            .project(self.id)
            .build()
            .map_err(built)?;
        let facts: Arc<WireProject> = Arc::new(self.inner.query("projects.get", endpoint).await?);
        self.inner
            .projects
            .lock()
            .unwrap()
            .insert(self.id, facts.clone());
        Ok(facts)
    }

    /// The merge request `number` (its iid), with "mergeable" leaving cascade's own
    /// status out (see [`status::mergeable`]).
    pub async fn change_request(&self, repo: &str, number: u64) -> anyhow::Result<PullRequest> {
        let endpoint = MergeRequest::builder()
            .project(self.id)
            .merge_request(number)
            .build()
            .map_err(built)?;
        let mr: WireMergeRequest = self
            .inner
            .query("merge_requests.get", endpoint)
            .await
            .with_context(|| format!("could not read {repo}!{number}"))?;
        let facts = self.facts().await?;
        let refs = mr.diff_refs.as_ref();
        let head_sha = refs
            .and_then(|r| r.head_sha.clone())
            .or(mr.sha.clone())
            .filter(|s| !s.is_empty());
        let base_sha = refs
            .and_then(|r| r.base_sha.clone())
            .filter(|s| !s.is_empty());
        let (Some(head_sha), Some(base_sha)) = (head_sha, base_sha) else {
            anyhow::bail!(
                "GitLab has not worked out {repo}!{number}'s diff yet (no diff_refs); \
                 cascade tries again on the next event, or push again"
            );
        };
        let detailed = mr.detailed_status();
        let others = if status::waits_on_pipeline(&detailed) {
            self.statuses(&head_sha, None, None).await?
        } else {
            Vec::new()
        };
        let merge_commit = mr
            .merged_commit()
            .map(|sha| answered_sha("merge commit", &sha))
            .transpose()?;
        Ok(PullRequest {
            merge_commit,
            forge: ForgeRef::GitLab {
                project_id: self.id,
            },
            number: PrNumber::new(mr.iid),
            head_ref: mr.source_branch,
            base_ref: mr.target_branch,
            draft: mr.draft || mr.work_in_progress,
            fork: mr.source_project_id != Some(mr.target_project_id),
            author: Some(mr.author.username),
            open: mr.state == "opened",
            mergeable: Some(status::mergeable(&detailed, others)),
            head_sha: answered_sha("head", &head_sha)?,
            base_sha: Some(answered_sha("base", &base_sha)?),
            web_url: facts.web_url.clone(),
            pusher: None,
            labels: Some(mr.labels),
        })
    }

    /// The statuses on `sha` (the latest of each name unless GitLab is asked for all),
    /// optionally only `name`'s on `ref`.
    async fn statuses(
        &self,
        sha: &str,
        name: Option<&str>,
        git_ref: Option<&str>,
    ) -> anyhow::Result<Vec<WireStatus>> {
        let mut endpoint = CommitStatuses::builder();
        endpoint.project(self.id).commit(sha);
        if let Some(name) = name {
            endpoint.name(name);
        }
        if let Some(git_ref) = git_ref {
            endpoint.ref_(git_ref);
        }
        let call = self.inner.transport.call("statuses.list");
        self.inner
            .list(&call, endpoint.build().map_err(built)?)
            .await
    }

    /// Sets the `cascade` commit status on `head_sha` (for `head_ref`, so it joins the
    /// merge request's pipeline) and returns its id. The title is the description (cut to
    /// GitLab's 255 bytes); GitLab statuses have no summary or text (the failure logs stay
    /// in the note), and the id of an earlier status (`existing`) is not needed: GitLab
    /// finds it by name, sha and ref.
    ///
    /// Planning is `pending`, waiting for a person `running`, within GitLab's transitions
    /// ([`status::steps`]: ours is read first for those two). A transition GitLab refuses
    /// (400) while ours is already in the requested state is success with no write (a
    /// restart mid-plan, a stale id).
    pub async fn set_check(
        &self,
        repo: &str,
        number: u64,
        head_sha: &str,
        head_ref: &str,
        existing: Option<u64>,
        output: &CheckOutput,
    ) -> anyhow::Result<u64> {
        let _ = existing;
        let wanted = status::wire_state(output.status);
        let description = status::description(&output.title);
        let ours = || async {
            let listed = self
                .statuses(head_sha, Some(STATUS_NAME), Some(head_ref))
                .await?;
            anyhow::Ok(status::latest_per_name(listed).remove(STATUS_NAME))
        };
        let current = match status::state_word(wanted) {
            "pending" | "running" => ours().await?,
            _ => None,
        };
        let steps = status::steps(
            wanted,
            description,
            current
                .as_ref()
                .map(|c| (c.status.as_str(), c.description.as_deref())),
        );
        let mut id = current.as_ref().map(|c| c.id);
        for state in steps {
            let word = status::state_word(state);
            let mut endpoint = CreateCommitStatus::builder();
            endpoint
                .project(self.id)
                .commit(head_sha)
                .state(state)
                .name(STATUS_NAME)
                .ref_(head_ref);
            // A status canceled to be replaced keeps what it said.
            if state != CommitStatusState::Canceled {
                endpoint.description(description);
            }
            let endpoint = endpoint.build().map_err(built)?;
            let error = match self
                .inner
                .query::<WireId, _>("statuses.create", endpoint)
                .await
            {
                Ok(created) => {
                    id = Some(created.id);
                    continue;
                }
                Err(error) => error,
            };
            let refused_transition = error
                .downcast_ref::<ApiError>()
                .is_some_and(|e| e.status == 400 && e.message.contains(status::TRANSITION_REFUSED));
            if refused_transition
                && let Some(current) = ours().await?
                && current.status == word
            {
                id = Some(current.id);
                continue;
            }
            return Err(error.context(format!(
                "could not set the {STATUS_NAME} status to {word} on {repo}!{number}"
            )));
        }
        id.ok_or_else(|| anyhow::anyhow!("GitLab named no {STATUS_NAME} status on {repo}!{number}"))
    }

    /// Whether `actor` may apply: access level ≥ Developer on the project, directly or
    /// through a group. Fails closed: any error is `false`.
    pub async fn may_write(&self, repo: &str, actor: &Actor) -> bool {
        match self.access_level(actor).await {
            Ok(level) => level.is_some_and(|l| l >= DEVELOPER_ACCESS),
            Err(error) => {
                tracing::warn!(
                    repo,
                    user = actor.login,
                    error = format!("{error:#}"),
                    "member lookup failed; treating as no access"
                );
                false
            }
        }
    }

    async fn actor_id(&self, actor: &Actor) -> anyhow::Result<Option<u64>> {
        match actor.id {
            Some(id) => Ok(Some(id)),
            None => self.inner.user_id(&actor.login).await,
        }
    }

    /// The actor's access level on the project (`GET /projects/:id/members/all/:user_id`);
    /// None for a non-member.
    async fn access_level(&self, actor: &Actor) -> anyhow::Result<Option<u64>> {
        let Some(user) = self.actor_id(actor).await? else {
            return Ok(None);
        };
        let endpoint = gitlab::api::projects::members::AllProjectMember::builder()
            .project(self.id)
            .user(user)
            .build()
            .map_err(built)?;
        match self
            .inner
            .query::<WireMember, _>("members.project", endpoint)
            .await
        {
            Ok(member) => Ok(member.active().then_some(member.access_level)),
            Err(error) if transport::status_of(&error) == Some(404) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Whether `actor` belongs to group `team` (its full path, `acme/platform`), directly
    /// or through an ancestor group. 404 is "not a member"; 403 "cannot tell".
    pub async fn membership(&self, team: &str, actor: &Actor) -> anyhow::Result<Membership> {
        let Some(user) = self.actor_id(actor).await? else {
            return Ok(Membership::NotMember);
        };
        let endpoint = AllGroupMember {
            group: NameOrId::from(team),
            user,
        };
        match self
            .inner
            .query::<WireMember, _>("members.group", endpoint)
            .await
        {
            Ok(member) if member.active() => Ok(Membership::Member),
            Ok(_) => Ok(Membership::NotMember),
            Err(error) => match transport::status_of(&error) {
                Some(404) => Ok(Membership::NotMember),
                Some(403) => Ok(Membership::Unreadable),
                _ => Err(error.context(format!("could not read group {team}'s members"))),
            },
        }
    }

    /// The users whose approval is in force on the merge request. GitLab records no
    /// commit with an approval: `commit` is the head only when the project drops
    /// approvals on push (`reset_approvals_on_push`), else None.
    pub async fn approvers(
        &self,
        repo: &str,
        number: u64,
        cr: &PullRequest,
    ) -> anyhow::Result<Vec<Approver>> {
        Ok(self.approvals(repo, number, cr).await?.approvers)
    }

    /// [`Project::approvers`], and the approvals GitLab's own rules still want while it
    /// says the merge request is not `approved` (its `approvals_left`, at least one).
    pub async fn approvals(
        &self,
        repo: &str,
        number: u64,
        cr: &PullRequest,
    ) -> anyhow::Result<Approvals> {
        let endpoint = MergeRequestApprovals::builder()
            .project(self.id)
            .merge_request(number)
            .build()
            .map_err(built)?;
        let approvals: WireApprovals = self
            .inner
            .query("merge_requests.approvals", endpoint)
            .await
            .with_context(|| format!("could not read the approvals of {repo}!{number}"))?;
        let still_required = match approvals.approved {
            Some(false) => approvals.approvals_left.unwrap_or(1).max(1),
            _ => 0,
        };
        if approvals.approved_by.is_empty() {
            return Ok(Approvals {
                approvers: Vec::new(),
                still_required,
            });
        }
        let resets = self.resets_approvals_on_push(repo).await;
        let approvers = approvals
            .approved_by
            .into_iter()
            .map(|a| Approver {
                actor: Actor {
                    id: Some(a.user.id),
                    login: a.user.username,
                },
                name: a.user.name,
                commit: resets.then(|| cr.head_sha.to_string()),
            })
            .collect();
        Ok(Approvals {
            approvers,
            still_required,
        })
    }

    /// The project's "Remove all approvals when commits are added to the source branch".
    /// Unreadable counts as off: approvals then carry no commit, which is the safe side.
    async fn resets_approvals_on_push(&self, repo: &str) -> bool {
        let read = async {
            let endpoint = gitlab::api::projects::approvals::ProjectApprovals::builder()
                .project(self.id)
                .build()
                .map_err(built)?;
            self.inner
                .query::<WireProjectApprovals, _>("projects.approvals", endpoint)
                .await
        };
        match read.await {
            Ok(settings) => settings.reset_approvals_on_push,
            Err(error) => {
                tracing::warn!(
                    repo,
                    error = format!("{error:#}"),
                    "could not read the project's approval settings; approvals carry no commit"
                );
                false
            }
        }
    }
}
