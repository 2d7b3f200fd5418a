//! The JSON shapes GitHub sends, as far as cascade reads them, and their
//! conversion into the owned domain types of `event`. Unknown fields are
//! ignored; a field cascade reads is required unless GitHub is known to omit it
//! or send `null`, and then it is an `Option` with the reason next to it.

use super::{
    Account, AuthorAssociation, Comment, CommentEvent, CommentId, Event, Installation,
    InstallationAction, InstallationEvent, InstallationId, InstallationRepositoriesAction,
    InstallationRepositoriesEvent, InstalledRepo, ParseError, PrState, PullRequest,
    PullRequestAction, PullRequestBase, PullRequestEvent, PullRequestHead, PullRequestRef, RepoId,
    RepoRef, RepositorySelection, Sha,
};
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct PullRequestPayload {
    pull_request: PullRequestJson,
    repository: RepositoryJson,
    /// Absent when the delivery comes from a repository hook rather than an App.
    installation: Option<InstallationRefJson>,
    sender: Account,
    /// Sent with `synchronize` only.
    before: Option<Sha>,
    after: Option<Sha>,
}

#[derive(Deserialize)]
struct PullRequestJson {
    number: u64,
    node_id: String,
    title: String,
    user: Account,
    author_association: Option<AuthorAssociation>,
    /// Payloads from before draft pull requests existed (2019) have no `draft`.
    #[serde(default)]
    draft: bool,
    state: PrState,
    /// Documented as nullable.
    merged: Option<bool>,
    head: HeadJson,
    base: BaseJson,
}

#[derive(Deserialize)]
struct HeadJson {
    #[serde(rename = "ref")]
    ref_name: String,
    sha: Sha,
    /// `null` once the fork the pull request came from has been deleted.
    repo: Option<RepoNameJson>,
}

#[derive(Deserialize)]
struct BaseJson {
    #[serde(rename = "ref")]
    ref_name: String,
    sha: Sha,
    repo: RepoNameJson,
}

#[derive(Deserialize)]
struct RepoNameJson {
    id: RepoId,
    full_name: String,
}

/// The repository as every GitHub payload describes it, for the events read elsewhere.
pub(super) type RepositoryJsonPublic = RepositoryJson;

#[derive(Deserialize)]
pub(super) struct RepositoryJson {
    id: RepoId,
    owner: LoginJson,
    name: String,
    full_name: String,
    default_branch: String,
    private: bool,
    /// Always sent by GitHub; optional so that a payload without it still parses.
    #[serde(default)]
    html_url: Option<String>,
}

#[derive(Deserialize)]
struct LoginJson {
    login: String,
}

#[derive(Deserialize)]
struct InstallationRefJson {
    id: InstallationId,
}

impl From<RepositoryJson> for RepoRef {
    fn from(r: RepositoryJson) -> RepoRef {
        RepoRef {
            id: r.id,
            owner: r.owner.login,
            name: r.name,
            full_name: r.full_name,
            default_branch: r.default_branch,
            private: r.private,
            html_url: r.html_url,
        }
    }
}

/// The `pull_request` actions cascade handles, before the payload is decoded;
/// every other action is ignored.
#[derive(Clone, Copy)]
pub(super) enum PullRequestActionName {
    Opened,
    Synchronize,
    Reopened,
    ReadyForReview,
    Closed,
    ConvertedToDraft,
    /// `edited`, and only when the base changed (the caller checks `changes.base`).
    Edited,
}

impl PullRequestActionName {
    pub(super) fn parse(action: &str) -> Option<PullRequestActionName> {
        Some(match action {
            "opened" => PullRequestActionName::Opened,
            "synchronize" => PullRequestActionName::Synchronize,
            "reopened" => PullRequestActionName::Reopened,
            "ready_for_review" => PullRequestActionName::ReadyForReview,
            "closed" => PullRequestActionName::Closed,
            "converted_to_draft" => PullRequestActionName::ConvertedToDraft,
            "edited" => PullRequestActionName::Edited,
            _ => return None,
        })
    }
}

impl PullRequestPayload {
    pub(super) fn into_event(self, action: PullRequestActionName) -> Result<Event, ParseError> {
        let pr = self.pull_request;
        let merged = pr.merged.unwrap_or(false);
        let action = match action {
            PullRequestActionName::Opened => PullRequestAction::Opened,
            PullRequestActionName::Synchronize => PullRequestAction::Synchronize {
                before: self
                    .before
                    .ok_or_else(|| missing("pull_request", "before"))?,
                after: self.after.ok_or_else(|| missing("pull_request", "after"))?,
            },
            PullRequestActionName::Reopened => PullRequestAction::Reopened,
            PullRequestActionName::ReadyForReview => PullRequestAction::ReadyForReview,
            PullRequestActionName::Closed => PullRequestAction::Closed { merged },
            PullRequestActionName::ConvertedToDraft => PullRequestAction::ConvertedToDraft,
            PullRequestActionName::Edited => PullRequestAction::BaseChanged,
        };
        // Compare ids, not the `fork` flag (which says whether the head
        // repository is itself a fork of something) nor names (which change
        // on a rename).
        let fork = match &pr.head.repo {
            Some(head) => head.id != pr.base.repo.id,
            None => true,
        };
        Ok(Event::PullRequest(PullRequestEvent {
            action,
            installation: self.installation.map(|i| i.id),
            repository: self.repository.into(),
            pull_request: PullRequest {
                number: pr.number,
                node_id: pr.node_id,
                title: pr.title,
                author: pr.user,
                author_association: pr.author_association,
                draft: pr.draft,
                state: pr.state,
                merged,
                head: PullRequestHead {
                    sha: pr.head.sha,
                    ref_name: pr.head.ref_name,
                    repo_full_name: pr.head.repo.map(|r| r.full_name),
                    fork,
                },
                base: PullRequestBase {
                    sha: pr.base.sha,
                    ref_name: pr.base.ref_name,
                    repo_full_name: pr.base.repo.full_name,
                },
            },
            sender: self.sender,
        }))
    }
}

#[derive(Deserialize)]
pub(super) struct CommentPayload {
    issue: IssueJson,
    comment: CommentJson,
    repository: RepositoryJson,
    installation: Option<InstallationRefJson>,
    sender: Account,
}

#[derive(Deserialize)]
struct IssueJson {
    number: u64,
    title: String,
    state: PrState,
    user: Account,
}

#[derive(Deserialize)]
struct CommentJson {
    id: CommentId,
    node_id: String,
    body: String,
    user: Account,
    author_association: AuthorAssociation,
    html_url: String,
}

impl CommentPayload {
    pub(super) fn into_event(self) -> CommentEvent {
        let p = self;
        CommentEvent {
            installation: p.installation.map(|i| i.id),
            repository: p.repository.into(),
            pull_request: PullRequestRef {
                number: p.issue.number,
                title: p.issue.title,
                state: p.issue.state,
                author: p.issue.user,
            },
            comment: Comment {
                id: p.comment.id,
                node_id: p.comment.node_id,
                body: p.comment.body,
                author: p.comment.user,
                author_association: p.comment.author_association,
                html_url: p.comment.html_url,
            },
            sender: p.sender,
        }
    }
}

#[derive(Deserialize)]
struct InstallationJson {
    id: InstallationId,
    account: Account,
    app_id: u64,
    repository_selection: RepositorySelection,
}

impl From<InstallationJson> for Installation {
    fn from(i: InstallationJson) -> Installation {
        Installation {
            id: i.id,
            account: i.account,
            app_id: i.app_id,
            repository_selection: i.repository_selection,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct InstallationPayload {
    installation: InstallationJson,
    /// Sent with `created` and `deleted` (all repositories the installation
    /// covers), not with the other actions.
    repositories: Option<Vec<InstalledRepo>>,
    sender: Account,
}

impl InstallationPayload {
    pub(super) fn into_event(self, action: InstallationAction) -> Event {
        Event::Installation(InstallationEvent {
            action,
            installation: self.installation.into(),
            repositories: self.repositories,
            sender: self.sender,
        })
    }
}

#[derive(Deserialize)]
pub(super) struct InstallationRepositoriesPayload {
    installation: InstallationJson,
    repository_selection: RepositorySelection,
    repositories_added: Vec<InstalledRepo>,
    repositories_removed: Vec<InstalledRepo>,
    sender: Account,
}

impl InstallationRepositoriesPayload {
    pub(super) fn into_event(self, action: InstallationRepositoriesAction) -> Event {
        Event::InstallationRepositories(InstallationRepositoriesEvent {
            action,
            installation: self.installation.into(),
            repository_selection: self.repository_selection,
            added: self.repositories_added,
            removed: self.repositories_removed,
            sender: self.sender,
        })
    }
}

#[derive(Deserialize)]
pub(super) struct PingPayload {
    zen: String,
    hook_id: Option<u64>,
    hook: Option<HookJson>,
}

#[derive(Deserialize)]
struct HookJson {
    /// Only in the ping GitHub sends when an App is registered.
    app_id: Option<u64>,
}

impl From<PingPayload> for Event {
    fn from(p: PingPayload) -> Event {
        Event::Ping {
            zen: p.zen,
            hook_id: p.hook_id,
            app_id: p.hook.and_then(|h| h.app_id),
        }
    }
}

fn missing(event: &str, field: &str) -> ParseError {
    ParseError::Shape {
        event: event.to_owned(),
        path: field.to_owned(),
        reason: format!("missing field `{field}`"),
    }
}
