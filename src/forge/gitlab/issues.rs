//! What a drift run needs from GitLab beyond merge requests: the default branch and its
//! head, and the one issue cascade keeps per project (created, edited, closed and
//! reopened, its state read back, notes on it and their 👀). Issue notes are the
//! issue's own endpoints (`/issues/:iid/notes`), never a merge request's; iids of issues
//! and merge requests are counted apart. Nothing here decides what an issue says or when.

use anyhow::Context as _;
use gitlab::api::common::SortOrder;
use gitlab::api::projects::issues::notes::CreateIssueNote;
use gitlab::api::projects::issues::notes::awards::CreateIssueNoteAward;
use gitlab::api::projects::issues::{
    CreateIssue, EditIssue, Issue, IssueOrderBy, IssueStateEvent, Issues,
};
use gitlab::api::projects::repository::branches::Branch;
use gitlab::api::{AsyncQuery, Pagination};
use serde::Deserialize;

use super::notes::{Noteable, already_awarded};
use super::wire::{WireId, WireProject};
use super::{Project, built, transport};
use crate::forge::newest_since;
use crate::forge::types::{DefaultBranch, TooLong};

/// GitLab's limit on an issue title, in characters ("is too long (maximum is 255
/// characters)").
pub const ISSUE_TITLE_LIMIT: usize = 255;

/// The longest issue description or note cascade sends: GitLab's note limit (its
/// description limit is higher), so one bound serves both.
pub const ISSUE_BODY_LIMIT: usize = super::NOTE_LIMIT;

#[derive(Deserialize)]
struct WireIssue {
    iid: u64,
    state: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
    /// Set on an issue moved to another project; it stays behind, closed.
    #[serde(default)]
    moved_to_id: Option<u64>,
}

#[derive(Deserialize)]
struct WireBranch {
    commit: WireBranchCommit,
}

#[derive(Deserialize)]
struct WireBranchCommit {
    id: String,
}

impl Project {
    /// The project's default branch, its head commit and clone URL, as GitLab has them
    /// now (`GET /projects/:id`, then `GET /projects/:id/repository/branches/:branch`).
    pub async fn default_branch(&self, repo: &str) -> anyhow::Result<DefaultBranch> {
        let endpoint = gitlab::api::projects::Project::builder()
            .project(self.id)
            .build()
            .map_err(built)?;
        let facts: WireProject = self.inner.query("projects.get", endpoint).await?;
        let Some(name) = facts.default_branch.filter(|b| !b.is_empty()) else {
            anyhow::bail!(
                "{repo} has no default branch (its repository is empty): push to it, or set \
                 a default branch in the project's settings"
            );
        };
        let endpoint = Branch::builder()
            .project(self.id)
            .branch(name.as_str())
            .build()
            .map_err(built)?;
        let head: WireBranch = self
            .inner
            .query("branches.get", endpoint)
            .await
            .with_context(|| format!("could not read {repo}'s default branch {name:?}"))?;
        let clone_url = self
            .inner
            .origin
            .clone_url(&facts.http_url_to_repo)
            .with_context(|| format!("cannot fetch {repo}"))?;
        Ok(DefaultBranch {
            name,
            sha: head.commit.id,
            clone_url,
        })
    }

    /// Opens an issue and returns its iid. Refused before any request when the title or
    /// description is longer than GitLab stores ([`TooLong`]). A create GitLab answered
    /// with a 5xx is not sent again blindly: an issue of ours with this title and
    /// description, opened since the first attempt, is the issue.
    pub async fn create_issue(&self, repo: &str, title: &str, body: &str) -> anyhow::Result<u64> {
        TooLong::check("title", title, ISSUE_TITLE_LIMIT)?;
        TooLong::check("body", body, ISSUE_BODY_LIMIT)?;
        let endpoint = CreateIssue::builder()
            .project(self.id)
            .title(title)
            .description(body)
            .build()
            .map_err(built)?;
        self.create_once(
            "issues.create",
            endpoint,
            |made: WireIssue| made.iid,
            move |since| self.issue_stored_since(title, body, since),
        )
        .await
        .with_context(|| format!("could not open an issue on {repo}"))
    }

    /// The newest issue of ours with exactly `title` and `body` opened after `since`:
    /// GitLab lists newest first, and one page of 100 reaches back further than any
    /// retry waits.
    async fn issue_stored_since(
        &self,
        title: &str,
        body: &str,
        since: tokio::time::Instant,
    ) -> anyhow::Result<Option<u64>> {
        let Some(me) = self.me().await?.id else {
            return Ok(None);
        };
        let endpoint = Issues::builder()
            .project(self.id)
            .author(me)
            .order_by(IssueOrderBy::CreatedAt)
            .sort(SortOrder::Descending)
            .build()
            .map_err(built)?;
        let call = self.inner.transport.call("issues.list");
        let mut issues: Vec<WireIssue> = gitlab::api::paged(endpoint, Pagination::Limit(100))
            .query_async(&call)
            .await
            .map_err(|e| call.error(e))?;
        issues.reverse();
        let created = |i: &WireIssue| {
            i.created_at
                .as_deref()
                .and_then(crate::forge::parse_timestamp)
        };
        Ok(
            newest_since(issues.into_iter(), call.date(), since, created, |i| {
                i.title == title && i.description.as_deref().unwrap_or_default() == body
            })
            .map(|i| i.iid),
        )
    }

    /// Replaces an issue's title and description (`PUT /projects/:id/issues/:iid`).
    /// Refused before any request when either is longer than GitLab stores ([`TooLong`]).
    pub async fn edit_issue(
        &self,
        repo: &str,
        number: u64,
        title: &str,
        body: &str,
    ) -> anyhow::Result<()> {
        TooLong::check("title", title, ISSUE_TITLE_LIMIT)?;
        TooLong::check("body", body, ISSUE_BODY_LIMIT)?;
        let endpoint = EditIssue::builder()
            .project(self.id)
            .issue(number)
            .title(title)
            .description(body)
            .build()
            .map_err(built)?;
        let _: WireIssue = self
            .inner
            .query("issues.edit", endpoint)
            .await
            .with_context(|| format!("could not edit issue {repo}#{number}"))?;
        Ok(())
    }

    /// Reopens (`state_event=reopen`) or closes (`state_event=close`) an issue; GitLab
    /// takes either in any state, so asking for the state it is in changes nothing.
    pub async fn set_issue_open(&self, repo: &str, number: u64, open: bool) -> anyhow::Result<()> {
        let event = if open {
            IssueStateEvent::Reopen
        } else {
            IssueStateEvent::Close
        };
        let endpoint = EditIssue::builder()
            .project(self.id)
            .issue(number)
            .state_event(event)
            .build()
            .map_err(built)?;
        let _: WireIssue = self
            .inner
            .query("issues.edit", endpoint)
            .await
            .with_context(|| format!("could not change the state of issue {repo}#{number}"))?;
        Ok(())
    }

    /// Whether issue `number` is open (`opened`); `None` when there is no such issue
    /// here: never was or deleted (404), or moved to another project.
    pub async fn issue_open(&self, repo: &str, number: u64) -> anyhow::Result<Option<bool>> {
        let endpoint = Issue::builder()
            .project(self.id)
            .issue(number)
            .build()
            .map_err(built)?;
        match self
            .inner
            .query::<WireIssue, _>("issues.get", endpoint)
            .await
        {
            Ok(issue) => Ok(issue.moved_to_id.is_none().then(|| issue.state == "opened")),
            Err(error) if transport::status_of(&error) == Some(404) => Ok(None),
            Err(error) => Err(error.context(format!("could not read issue {repo}#{number}"))),
        }
    }

    /// Posts a note on an issue and returns its id; a create GitLab answered with a 5xx
    /// is found among the issue's notes before it is sent again.
    pub async fn comment_on_issue(
        &self,
        repo: &str,
        number: u64,
        body: &str,
    ) -> anyhow::Result<u64> {
        TooLong::check("comment", body, ISSUE_BODY_LIMIT)?;
        let endpoint = CreateIssueNote::builder()
            .project(self.id)
            .issue(number)
            .body(body)
            .build()
            .map_err(built)?;
        self.create_once(
            "issues.notes.create",
            endpoint,
            |made: WireId| made.id,
            move |since| self.stored_since(Noteable::Issue, number, body, since),
        )
        .await
        .with_context(|| format!("could not post a note on issue {repo}#{number}"))
    }

    /// Awards `eyes` on a note on an issue ("seen, working on it"); awarding it twice is
    /// no error.
    pub async fn acknowledge_issue_comment(
        &self,
        repo: &str,
        number: u64,
        comment_id: u64,
    ) -> anyhow::Result<()> {
        let endpoint = CreateIssueNoteAward::builder()
            .project(self.id)
            .issue(number)
            .note(comment_id)
            .name("eyes")
            .build()
            .map_err(built)?;
        match self
            .inner
            .query::<WireId, _>("issues.notes.award", endpoint)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if already_awarded(&error) => Ok(()),
            Err(error) => Err(error.context(format!(
                "could not award eyes on note {comment_id} on issue {repo}#{number}"
            ))),
        }
    }
}
