//! GitHub as cascade sees it: this module owns every call cascade makes to
//! GitHub (REST and GraphQL), as one GitHub App serving many installations.
//! It carries requests and answers and never decides anything: who may apply,
//! what to post and when are the engine's business.
//!
//! Every request goes through [`transport`], which authenticates, keeps
//! installation tokens fresh, spends the content-write budget, and waits out
//! rate limits. Answers are read into small serde shapes ([`types`]) rather
//! than octocrab's full models, so fields GitHub adds or omits never break a call.

mod commits;
mod issues;
pub mod manifest;
mod merge_gate;
mod neutral;
mod review;
mod transport;
mod types;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

pub use commits::PULL_REQUEST_COMMITS_CAP;
pub use issues::{ISSUE_BODY_LIMIT, ISSUE_TITLE_LIMIT};
pub use transport::{ApiError, RetryPolicy, TOKEN_REFRESH_MARGIN, WriteBudget};
// The check's states are the forge-neutral ones; re-exported for callers of this client.
pub use crate::forge::types::{CheckOutput, CheckStatus};
pub use types::{
    CHECK_SUMMARY_LIMIT, CHECK_TEXT_LIMIT, ChangedFile, IssueComment, Permission, PullRequestInfo,
    Review,
};

use crate::forge::newest_since;
use crate::forge::origin::GitOrigin;
use transport::{Actor, Call, Method, Transport};
use types::{
    WireComment, WireFile, WireGraphqlErrors, WireId, WireMembership, WirePermission, WirePull,
    WireReview, check_summary, check_text, check_wire,
};

/// GitHub's limit on a comment (and an issue) body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// GitHub answers at most this many files for a pull request.
pub const PULL_REQUEST_FILES_CAP: usize = 3000;

/// The name of cascade's check run.
pub const CHECK_RUN_NAME: &str = "cascade";

/// Pages followed before a listing is called runaway.
const MAX_PAGES: usize = 1000;

/// One per server: the API base URL (api.github.com, a GitHub Enterprise
/// Server's `/api/v3`, or a test's fake), the App id and its private key.
#[derive(Clone)]
pub struct GitHubApp {
    transport: Arc<Transport>,
    /// Where its git repositories are, and so where installation tokens may go.
    origin: GitOrigin,
}

/// Options for [`GitHubApp`]; the defaults follow GitHub's documented limits.
pub struct GitHubAppBuilder {
    api_url: String,
    app_id: u64,
    private_key_pem: Vec<u8>,
    policy: RetryPolicy,
    budget: WriteBudget,
}

impl GitHubAppBuilder {
    /// The longest single wait for a rate limit (default 60 s).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.policy.max_wait = wait;
        self
    }

    /// First backoff on a secondary rate limit that names no time (default 60 s).
    pub fn secondary_backoff(mut self, wait: Duration) -> Self {
        self.policy.secondary_backoff = wait;
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

    /// Content writes allowed per installation in any window of `per` (default 80 per minute).
    pub fn write_budget(mut self, writes: u32, per: Duration) -> Self {
        self.budget = WriteBudget { writes, per };
        self
    }

    pub fn build(self) -> anyhow::Result<GitHubApp> {
        let origin = GitOrigin::for_github_api(&self.api_url)?;
        let transport = Transport::new(
            &self.api_url,
            self.app_id,
            &self.private_key_pem,
            self.policy,
            self.budget,
        )
        .with_context(|| format!("could not set up GitHub App {}", self.app_id))?;
        Ok(GitHubApp {
            transport: Arc::new(transport),
            origin,
        })
    }
}

impl GitHubApp {
    /// The App with default limits. A key that is not an RSA PEM is an error here.
    pub fn new(api_url: &str, app_id: u64, private_key_pem: &[u8]) -> anyhow::Result<GitHubApp> {
        GitHubApp::builder(api_url, app_id, private_key_pem).build()
    }

    /// The App's id (the status page shows it).
    pub fn app_id(&self) -> u64 {
        self.transport.app_id()
    }

    pub fn builder(api_url: &str, app_id: u64, private_key_pem: &[u8]) -> GitHubAppBuilder {
        GitHubAppBuilder {
            api_url: api_url.to_string(),
            app_id,
            private_key_pem: private_key_pem.to_vec(),
            policy: RetryPolicy::default(),
            budget: WriteBudget::default(),
        }
    }

    /// A client acting as installation `id`; its token is minted on first use,
    /// cached, and refreshed 5 minutes before expiry.
    pub async fn installation(&self, id: u64) -> anyhow::Result<Installation> {
        Ok(Installation {
            id,
            transport: self.transport.clone(),
            origin: self.origin.clone(),
        })
    }

    /// The installation token, for `git fetch` (user `x-access-token`).
    pub async fn installation_token(&self, id: u64) -> anyhow::Result<String> {
        self.transport.token(id).await
    }

    /// GitHub's git origin (`https://github.com` for `https://api.github.com`, `https://HOST`
    /// for GitHub Enterprise's `https://HOST/api/v3`): installation tokens go nowhere else.
    pub fn git_origin(&self) -> &GitOrigin {
        &self.origin
    }

    /// Content writes made so far (comments, check runs, reactions, minimising).
    pub fn write_calls(&self) -> u64 {
        self.transport.write_calls()
    }

    /// Times cascade waited for a rate limit so far.
    pub fn rate_limit_waits(&self) -> u64 {
        self.transport.waits()
    }
}

/// The App acting as one installation.
#[derive(Clone)]
pub struct Installation {
    id: u64,
    transport: Arc<Transport>,
    origin: GitOrigin,
}

impl Installation {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The App this installation belongs to: its comments carry this id.
    pub fn app_id(&self) -> u64 {
        self.transport.app_id()
    }

    async fn send(&self, call: Call) -> anyhow::Result<transport::Reply> {
        self.transport
            .send(Actor::Installation(self.id), &call)
            .await
    }

    /// Every page of a listing, following `Link: rel="next"`; stops early
    /// once `cap` items are in.
    async fn get_all<T, W>(
        &self,
        kind: &'static str,
        first: String,
        cap: usize,
    ) -> anyhow::Result<Vec<T>>
    where
        W: serde::de::DeserializeOwned + Into<T>,
    {
        Ok(self.get_all_dated::<T, W>(kind, first, cap).await?.0)
    }

    /// [`Self::get_all`], with GitHub's clock when it answered the last page.
    async fn get_all_dated<T, W>(
        &self,
        kind: &'static str,
        first: String,
        cap: usize,
    ) -> anyhow::Result<(Vec<T>, Option<std::time::SystemTime>)>
    where
        W: serde::de::DeserializeOwned + Into<T>,
    {
        let mut items = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        let mut date = None;
        while let Some(path) = next {
            pages += 1;
            anyhow::ensure!(
                pages <= MAX_PAGES,
                "GitHub {kind} kept paginating past {MAX_PAGES} pages; stopped"
            );
            let reply = self.send(Call::get(kind, path)).await?;
            let page: Vec<W> = reply.json(kind)?;
            items.extend(page.into_iter().map(Into::into));
            date = reply.date;
            next = reply.next.filter(|_| items.len() < cap);
        }
        Ok((items, date))
    }

    pub async fn pull_request(&self, repo: &str, number: u64) -> anyhow::Result<PullRequestInfo> {
        let kind = "pulls.get";
        let path = format!("{}/pulls/{number}", repo_path(repo)?);
        let pull: WirePull = self.send(Call::get(kind, path)).await?.json(kind)?;
        Ok(pull.into())
    }

    /// Paginated (per_page=100, follow Link rel=next). None when GitHub's
    /// 3,000-file cap is reached (the caller then diffs with git).
    pub async fn pull_request_files(
        &self,
        repo: &str,
        number: u64,
    ) -> anyhow::Result<Option<Vec<ChangedFile>>> {
        let path = format!("{}/pulls/{number}/files?per_page=100", repo_path(repo)?);
        let files = self
            .get_all::<ChangedFile, WireFile>("pulls.files", path, PULL_REQUEST_FILES_CAP)
            .await?;
        // Exactly 3,000 is indistinguishable from "more": git decides then.
        Ok((files.len() < PULL_REQUEST_FILES_CAP).then_some(files))
    }

    /// Every comment on the pull request's conversation, oldest first.
    pub async fn comments(&self, repo: &str, number: u64) -> anyhow::Result<Vec<IssueComment>> {
        let path = format!("{}/issues/{number}/comments?per_page=100", repo_path(repo)?);
        self.get_all::<IssueComment, WireComment>("issues.comments.list", path, usize::MAX)
            .await
    }

    /// Posts a comment. A create that failed with a 5xx or no answer may have been
    /// stored all the same, so before sending it again the conversation is read: a
    /// comment of the App's with exactly `body`, stored since the first attempt was sent
    /// (by GitHub's clock, to the second), is the comment.
    pub async fn create_comment(
        &self,
        repo: &str,
        number: u64,
        body: &str,
    ) -> anyhow::Result<IssueComment> {
        let kind = "issues.comments.create";
        let path = format!("{}/issues/{number}/comments", repo_path(repo)?);
        self.create_once(
            kind,
            &path,
            json!({ "body": body }),
            |reply| Ok(reply.json::<WireComment>(kind)?.into()),
            move |since| self.stored_since(repo, number, body, since),
        )
        .await
    }

    /// Sends a create that GitHub may have stored although it answered with a 5xx or
    /// not at all: before each new attempt, `stored` looks for what an earlier one made
    /// (given when the first was sent), so nothing is created twice.
    async fn create_once<T, Stored>(
        &self,
        kind: &'static str,
        path: &str,
        body: serde_json::Value,
        read: impl Fn(&transport::Reply) -> anyhow::Result<T>,
        stored: impl Fn(tokio::time::Instant) -> Stored,
    ) -> anyhow::Result<T>
    where
        Stored: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        let policy = self.transport.policy().clone();
        let started = tokio::time::Instant::now();
        let mut attempt = 1;
        loop {
            let mut call = Call::write(kind, Method::Post, path.to_string(), body.clone());
            call.retry_server_errors = false;
            let error = match self.send(call).await {
                Ok(reply) => return read(&reply),
                Err(error) if transport::is_server_failure(&error) => error,
                Err(error) => return Err(error),
            };
            if let Some(made) = stored(started).await? {
                tracing::info!(kind, "a create failed but GitHub had stored it");
                return Ok(made);
            }
            if attempt >= policy.max_attempts {
                return Err(error.context(format!(
                    "cascade gave up on {kind} after {attempt} attempts"
                )));
            }
            let wait = policy.server_errors().wait_before(attempt);
            tracing::warn!(
                kind,
                wait_ms = wait.as_millis() as u64,
                "GitHub failed to create: retrying"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The newest comment of the App's with exactly `body` that GitHub stored after
    /// `since` (a local instant, moved onto GitHub's clock with the listing's `Date`).
    async fn stored_since(
        &self,
        repo: &str,
        number: u64,
        body: &str,
        since: tokio::time::Instant,
    ) -> anyhow::Result<Option<IssueComment>> {
        let path = format!("{}/issues/{number}/comments?per_page=100", repo_path(repo)?);
        let (comments, date) = self
            .get_all_dated::<IssueComment, WireComment>("issues.comments.list", path, usize::MAX)
            .await?;
        let ours = comments
            .into_iter()
            .filter(|c| c.via_app == Some(self.app_id()));
        Ok(newest_since(
            ours,
            date,
            since,
            |c| c.created_at,
            |c| c.body == body,
        ))
    }

    /// Deletes one of the App's comments. One already gone counts as deleted.
    pub async fn delete_comment(&self, repo: &str, comment_id: u64) -> anyhow::Result<()> {
        let path = format!("{}/issues/comments/{comment_id}", repo_path(repo)?);
        match self
            .send(Call::delete("issues.comments.delete", path))
            .await
        {
            Ok(_) => Ok(()),
            Err(error)
                if error
                    .downcast_ref::<ApiError>()
                    .is_some_and(|e| e.status == 404) =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    pub async fn update_comment(
        &self,
        repo: &str,
        comment_id: u64,
        body: &str,
    ) -> anyhow::Result<()> {
        let path = format!("{}/issues/comments/{comment_id}", repo_path(repo)?);
        let call = Call::write(
            "issues.comments.update",
            Method::Patch,
            path,
            json!({ "body": body }),
        );
        self.send(call).await.map(drop)
    }

    /// GraphQL minimizeComment(classifier: OUTDATED) on the comment's node id.
    pub async fn minimize_comment(&self, node_id: &str) -> anyhow::Result<()> {
        const MUTATION: &str = "mutation($id: ID!) { minimizeComment(input: {subjectId: $id, classifier: OUTDATED}) { minimizedComment { isMinimized minimizedReason } } }";
        let kind = "graphql.minimize_comment";
        let body = json!({ "query": MUTATION, "variables": { "id": node_id } });
        let mut call = Call::write(kind, Method::Post, "/graphql".to_string(), body);
        call.graphql = true;
        let answer: WireGraphqlErrors = self.send(call).await?.json(kind)?;
        if !answer.errors.is_empty() {
            let messages: Vec<_> = answer.errors.into_iter().map(|e| e.message).collect();
            anyhow::bail!(
                "GitHub GraphQL minimizeComment on {node_id} failed: {}. Check that the comment \
                 still exists and that the App may write issues and pull requests",
                messages.join("; ")
            );
        }
        Ok(())
    }

    /// Creates the `cascade` check run on `head_sha`; returns its id.
    /// The summary and the text are each cut to GitHub's 65,535 characters.
    pub async fn create_check_run(
        &self,
        repo: &str,
        head_sha: &str,
        output: &CheckOutput,
    ) -> anyhow::Result<u64> {
        let kind = "checks.create";
        let path = format!("{}/check-runs", repo_path(repo)?);
        let mut body = check_body(output);
        body["name"] = json!(CHECK_RUN_NAME);
        body["head_sha"] = json!(head_sha);
        let created: WireId = self
            .send(Call::write(kind, Method::Post, path, body))
            .await?
            .json(kind)?;
        Ok(created.id)
    }

    pub async fn update_check_run(
        &self,
        repo: &str,
        id: u64,
        output: &CheckOutput,
    ) -> anyhow::Result<()> {
        let path = format!("{}/check-runs/{id}", repo_path(repo)?);
        let call = Call::write("checks.update", Method::Patch, path, check_body(output));
        self.send(call).await.map(drop)
    }

    /// The user's role on the repository. Fails closed: any error is `None`.
    pub async fn permission(&self, repo: &str, user: &str) -> Permission {
        match self.try_permission(repo, user).await {
            Ok(permission) => permission,
            Err(error) => {
                tracing::warn!(
                    repo,
                    user,
                    error = format!("{error:#}"),
                    "permission lookup failed; treating as none"
                );
                Permission::None
            }
        }
    }

    async fn try_permission(&self, repo: &str, user: &str) -> anyhow::Result<Permission> {
        let kind = "collaborators.permission";
        let path = format!(
            "{}/collaborators/{}/permission",
            repo_path(repo)?,
            segment(user)?
        );
        let wire: WirePermission = self.send(Call::get(kind, path)).await?.json(kind)?;
        Ok(Permission::from_wire(
            wire.role_name.as_deref(),
            wire.permission.as_deref(),
        ))
    }

    /// Whether `user` is an active member of team `org/team_slug` (an invitation not yet
    /// accepted is not). GitHub answers 404 for a non-member and for a team the App cannot
    /// see; it answers 403 when the App lacks the Organization → Members read permission,
    /// which is an error here (the caller says what to grant).
    pub async fn is_team_member(
        &self,
        org: &str,
        team_slug: &str,
        user: &str,
    ) -> anyhow::Result<bool> {
        let kind = "teams.membership";
        let path = format!(
            "/orgs/{}/teams/{}/memberships/{}",
            segment(org)?,
            segment(team_slug)?,
            segment(user)?
        );
        match self.send(Call::get(kind, path)).await {
            Ok(reply) => Ok(reply.json::<WireMembership>(kind)?.state == "active"),
            Err(error)
                if error
                    .downcast_ref::<ApiError>()
                    .is_some_and(|e| e.status == 404) =>
            {
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    /// Every review, oldest first.
    pub async fn reviews(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Review>> {
        let path = format!("{}/pulls/{number}/reviews?per_page=100", repo_path(repo)?);
        self.get_all::<Review, WireReview>("pulls.reviews", path, usize::MAX)
            .await
    }

    /// Reacts to an issue comment (`eyes` says "seen, working on it").
    pub async fn react(&self, repo: &str, comment_id: u64, content: &str) -> anyhow::Result<()> {
        let path = format!(
            "{}/issues/comments/{comment_id}/reactions",
            repo_path(repo)?
        );
        let call = Call::write(
            "reactions.create",
            Method::Post,
            path,
            json!({ "content": content }),
        );
        self.send(call).await.map(drop)
    }
}

/// A check run's `status`, `conclusion` and `output`. No `details_url`: GitHub then links
/// the run's own page, and cascade serves no log page (the logs are in `output.text`).
fn check_body(output: &CheckOutput) -> serde_json::Value {
    let (status, conclusion) = check_wire(output.status);
    let mut body = json!({
        "status": status,
        "output": { "title": output.title, "summary": check_summary(&output.summary) },
    });
    if !output.text.is_empty() {
        body["output"]["text"] = json!(check_text(&output.text));
    }
    if let Some(conclusion) = conclusion {
        body["conclusion"] = json!(conclusion);
    }
    body
}

/// `/repos/{owner}/{name}` for `owner/name`.
fn repo_path(repo: &str) -> anyhow::Result<String> {
    let (owner, name) = repo
        .split_once('/')
        .with_context(|| format!("{repo:?} is not a repository name of the form owner/name"))?;
    Ok(format!("/repos/{}/{}", segment(owner)?, segment(name)?))
}

/// One path segment, percent-encoded; never empty, never a traversal.
fn segment(text: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !text.is_empty() && text != "." && text != ".." && !text.contains('/'),
        "{text:?} is not a valid GitHub name"
    );
    Ok(text
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_become_safe_paths() {
        assert_eq!(repo_path("acme/infra").unwrap(), "/repos/acme/infra");
        assert!(repo_path("acme").is_err());
        assert!(repo_path("acme/../x").is_err());
        assert_eq!(segment("dependabot[bot]").unwrap(), "dependabot%5Bbot%5D");
    }
}
