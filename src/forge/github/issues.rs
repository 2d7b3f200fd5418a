//! What a drift run needs from GitHub beyond pull requests: the default branch and its
//! head, and the one issue cascade keeps per repository (created, edited, closed and
//! reopened, its state read back, comments on it and their 👀). An issue's comments are
//! GitHub's issue comments, the same endpoints as a pull request's conversation, so
//! posting one is [`Installation::create_comment`] and acknowledging one
//! [`Installation::react`]. Nothing here decides what an issue says or when.

use std::time::SystemTime;

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::json;

use super::transport::{Call, Method};
use super::types::WireId;
use super::{ApiError, Installation, repo_path, segment};
use crate::forge::newest_since;
use crate::forge::types::{DefaultBranch, TooLong};

/// GitHub's limit on an issue title, in characters ("title is too long (maximum is 256
/// characters)").
pub const ISSUE_TITLE_LIMIT: usize = 256;

/// GitHub's limit on an issue body or comment, in characters.
pub const ISSUE_BODY_LIMIT: usize = super::COMMENT_LIMIT;

#[derive(Deserialize)]
struct WireRepository {
    default_branch: String,
    clone_url: String,
}

#[derive(Deserialize)]
struct WireBranchHead {
    commit: WireCommit,
}

#[derive(Deserialize)]
struct WireCommit {
    sha: String,
}

#[derive(Deserialize)]
struct WireIssue {
    number: u64,
    state: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    /// Set when the number is a pull request's (GitHub numbers both alike).
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
    /// `…/repos/{owner}/{name}`: another repository's when the issue was transferred
    /// (GitHub answers the old address with a redirect, which is followed).
    #[serde(default)]
    repository_url: Option<String>,
    #[serde(default)]
    performed_via_github_app: Option<WireId>,
    #[serde(default)]
    created_at: Option<String>,
}

impl WireIssue {
    fn created(&self) -> Option<SystemTime> {
        self.created_at
            .as_deref()
            .and_then(crate::forge::parse_timestamp)
    }

    /// An issue of `repo` itself, not a pull request and not one moved elsewhere.
    fn is_issue_of(&self, repo: &str) -> bool {
        let here = self.repository_url.as_deref().is_none_or(|url| {
            url.to_ascii_lowercase()
                .ends_with(&format!("/repos/{}", repo.to_ascii_lowercase()))
        });
        self.pull_request.is_none() && here
    }
}

fn is_status(error: &anyhow::Error, statuses: &[u16]) -> bool {
    error
        .downcast_ref::<ApiError>()
        .is_some_and(|e| statuses.contains(&e.status))
}

/// `/branches/{branch}` with each `/`-separated part of the name encoded.
pub(super) fn branch_path(branch: &str) -> anyhow::Result<String> {
    let parts: anyhow::Result<Vec<String>> = branch.split('/').map(segment).collect();
    Ok(parts
        .map_err(|_| anyhow::anyhow!("{branch:?} is not a branch name GitHub can have"))?
        .join("/"))
}

impl Installation {
    /// The repository's default branch, its head commit and clone URL, as GitHub has
    /// them now (`GET /repos/{o}/{r}`, then `GET /repos/{o}/{r}/branches/{branch}`). The
    /// clone URL is accepted only at GitHub's git origin (derived from the API URL).
    pub async fn default_branch(&self, repo: &str) -> anyhow::Result<DefaultBranch> {
        let base = repo_path(repo)?;
        let kind = "repos.get";
        let facts: WireRepository = self.send(Call::get(kind, base.clone())).await?.json(kind)?;
        let kind = "repos.branches.get";
        let path = format!("{base}/branches/{}", branch_path(&facts.default_branch)?);
        let head: WireBranchHead = match self.send(Call::get(kind, path)).await {
            Ok(reply) => reply.json(kind)?,
            Err(error) if is_status(&error, &[404]) => {
                return Err(error.context(format!(
                    "{repo} has no branch {:?} yet (an empty repository?): push to it, or \
                     set another default branch on GitHub",
                    facts.default_branch
                )));
            }
            Err(error) => return Err(error),
        };
        let clone_url = self
            .origin
            .clone_url(&facts.clone_url)
            .with_context(|| format!("cannot fetch {repo}"))?;
        Ok(DefaultBranch {
            name: facts.default_branch,
            sha: head.commit.sha,
            clone_url,
        })
    }

    /// Opens an issue and returns its number. Refused before any request when the title
    /// or body is longer than GitHub stores ([`TooLong`]). A create GitHub answered with
    /// a 5xx is not sent again blindly: an issue of the App's with this title and body,
    /// opened since the first attempt, is the issue.
    pub async fn create_issue(&self, repo: &str, title: &str, body: &str) -> anyhow::Result<u64> {
        TooLong::check("title", title, ISSUE_TITLE_LIMIT)?;
        TooLong::check("body", body, ISSUE_BODY_LIMIT)?;
        let kind = "issues.create";
        let path = format!("{}/issues", repo_path(repo)?);
        self.create_once(
            kind,
            &path,
            json!({ "title": title, "body": body }),
            |reply| Ok(reply.json::<WireIssue>(kind)?.number),
            move |since| self.issue_stored_since(repo, title, body, since),
        )
        .await
    }

    /// The newest issue of the App's in `repo` with exactly `title` and `body` opened
    /// after `since`: GitHub lists issues newest first, and one page of 100 reaches back
    /// further than any retry waits.
    async fn issue_stored_since(
        &self,
        repo: &str,
        title: &str,
        body: &str,
        since: tokio::time::Instant,
    ) -> anyhow::Result<Option<u64>> {
        let kind = "issues.list";
        let path = format!(
            "{}/issues?state=all&sort=created&direction=desc&per_page=100",
            repo_path(repo)?
        );
        let reply = self.send(Call::get(kind, path)).await?;
        let mut issues: Vec<WireIssue> = reply.json(kind)?;
        issues.reverse();
        let app = self.app_id();
        let ours = issues.into_iter().filter(|i| {
            i.is_issue_of(repo) && i.performed_via_github_app.as_ref().map(|a| a.id) == Some(app)
        });
        Ok(
            newest_since(ours, reply.date, since, WireIssue::created, |i| {
                i.title == title && i.body.as_deref().unwrap_or_default() == body
            })
            .map(|i| i.number),
        )
    }

    /// Replaces an issue's title and body (`PATCH …/issues/{number}`). Refused before
    /// any request when either is longer than GitHub stores ([`TooLong`]).
    pub async fn edit_issue(
        &self,
        repo: &str,
        number: u64,
        title: &str,
        body: &str,
    ) -> anyhow::Result<()> {
        TooLong::check("title", title, ISSUE_TITLE_LIMIT)?;
        TooLong::check("body", body, ISSUE_BODY_LIMIT)?;
        self.patch_issue(repo, number, json!({ "title": title, "body": body }))
            .await
    }

    /// Reopens (`state: open`) or closes (`state: closed`, `state_reason: completed`) an
    /// issue; asking for the state it is in changes nothing.
    pub async fn set_issue_open(&self, repo: &str, number: u64, open: bool) -> anyhow::Result<()> {
        let body = if open {
            json!({ "state": "open" })
        } else {
            json!({ "state": "closed", "state_reason": "completed" })
        };
        self.patch_issue(repo, number, body).await
    }

    async fn patch_issue(
        &self,
        repo: &str,
        number: u64,
        body: serde_json::Value,
    ) -> anyhow::Result<()> {
        let path = format!("{}/issues/{number}", repo_path(repo)?);
        self.send(Call::write("issues.update", Method::Patch, path, body))
            .await
            .map(drop)
    }

    /// Whether issue `number` is open; `None` when there is no such issue here: never
    /// was (404), deleted or issues turned off (410), transferred to another repository,
    /// or the number is a pull request's.
    pub async fn issue_open(&self, repo: &str, number: u64) -> anyhow::Result<Option<bool>> {
        let kind = "issues.get";
        let path = format!("{}/issues/{number}", repo_path(repo)?);
        let issue: WireIssue = match self.send(Call::get(kind, path)).await {
            Ok(reply) => reply.json(kind)?,
            Err(error) if is_status(&error, &[404, 410]) => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(issue.is_issue_of(repo).then(|| issue.state == "open"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_keep_their_slashes_and_nothing_else() {
        assert_eq!(branch_path("main").unwrap(), "main");
        assert_eq!(branch_path("release/2026 q1").unwrap(), "release/2026%20q1");
        assert!(branch_path("a/../b").is_err());
        assert!(branch_path("a//b").is_err());
    }

    #[test]
    fn a_pull_request_or_a_transferred_issue_is_not_this_repository_s_issue() {
        let issue = |extra: serde_json::Value| {
            let mut value = json!({ "number": 3, "state": "open",
                "repository_url": "https://api.github.com/repos/Acme/Infra" });
            value
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value::<WireIssue>(value).unwrap()
        };
        assert!(issue(json!({})).is_issue_of("acme/infra"));
        assert!(!issue(json!({ "pull_request": { "url": "x" } })).is_issue_of("acme/infra"));
        assert!(!issue(json!({})).is_issue_of("acme/other"));
    }
}
