//! The JSON shapes GitLab sends in `Merge Request Hook` and `Note Hook`, as far
//! as cascade reads them. Each hook is read twice: a probe with only what
//! decides whether cascade acts (so an ignored update is never held to the
//! full shape), then the whole payload for the events it acts on.

use super::{
    GitLabIssueNoteEvent, GitLabMergeRequest, GitLabMergeRequestEvent, GitLabNote, GitLabNoteEvent,
    GitLabProject, GitLabUser, MAX_NAME_BYTES, MAX_NOTE_CHARS, MergeRequestAction, NotedIssue,
    NotedMergeRequest, bounded, check_project_path, check_url, has_draft_prefix,
};
use crate::event::{Event, ParseError, Sha, shape};
use serde::Deserialize;

// ---------------------------------------------------------------- merge requests

#[derive(Deserialize)]
pub(super) struct MergeRequestProbe {
    object_attributes: ProbeAttributes,
    #[serde(default)]
    changes: Option<ChangesJson>,
}

#[derive(Deserialize)]
struct ProbeAttributes {
    action: Option<String>,
    /// Present only when the update brought new commits; some versions send `""`.
    #[serde(default)]
    oldrev: Option<String>,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    work_in_progress: Option<bool>,
}

#[derive(Deserialize)]
struct ChangesJson {
    #[serde(default)]
    draft: Option<Change<Option<bool>>>,
    #[serde(default)]
    title: Option<Change<Option<String>>>,
    /// Sent when the merge request's target branch changed (GitLab's webhook reference,
    /// "Merge request events": `changes` lists each updated attribute).
    #[serde(default)]
    target_branch: Option<Change<Option<String>>>,
}

#[derive(Deserialize)]
struct Change<T> {
    previous: T,
    current: T,
}

/// What the probe decided, before the payload is decoded whole.
pub(super) enum MergeRequestActionName {
    Opened,
    Reopened,
    Pushed(String),
    Ready,
    Retargeted,
    Closed,
    Merged,
    Reviewed,
}

impl MergeRequestProbe {
    pub(super) fn action_name(&self) -> Option<&str> {
        self.object_attributes.action.as_deref()
    }

    /// The action cascade acts on, or `None` (ignored).
    pub(super) fn action(&self) -> Option<MergeRequestActionName> {
        let attributes = &self.object_attributes;
        Some(match attributes.action.as_deref()? {
            "open" => MergeRequestActionName::Opened,
            "reopen" => MergeRequestActionName::Reopened,
            "close" => MergeRequestActionName::Closed,
            "merge" => MergeRequestActionName::Merged,
            // https://docs.gitlab.com/user/project/integrations/webhook_events/#merge-request-events
            "approved" | "unapproved" | "approval" | "unapproval" => {
                MergeRequestActionName::Reviewed
            }
            "update" => match attributes.oldrev.as_deref() {
                Some(oldrev) if !oldrev.is_empty() => {
                    MergeRequestActionName::Pushed(oldrev.to_owned())
                }
                _ if self.became_ready() => MergeRequestActionName::Ready,
                _ if self.retargeted() => MergeRequestActionName::Retargeted,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The target branch changed: planned again, under the new base's allowance.
    fn retargeted(&self) -> bool {
        self.changes
            .as_ref()
            .and_then(|c| c.target_branch.as_ref())
            .is_some_and(|t| t.previous != t.current)
    }

    /// Draft → ready: `changes.draft` where GitLab sends it (ready → draft is
    /// not this), else the title losing its draft prefix while the merge
    /// request is not a draft.
    fn became_ready(&self) -> bool {
        let Some(changes) = &self.changes else {
            return false;
        };
        if let Some(draft) = &changes.draft {
            return draft.previous == Some(true) && draft.current == Some(false);
        }
        let still_draft = self
            .object_attributes
            .draft
            .or(self.object_attributes.work_in_progress)
            .unwrap_or(false);
        match &changes.title {
            Some(Change {
                previous: Some(previous),
                current: Some(current),
            }) => !still_draft && has_draft_prefix(previous) && !has_draft_prefix(current),
            _ => false,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct MergeRequestPayload {
    project: ProjectJson,
    user: UserJson,
    object_attributes: MergeRequestJson,
}

#[derive(Deserialize)]
struct ProjectJson {
    id: u64,
    path_with_namespace: String,
    git_http_url: String,
}

#[derive(Deserialize)]
struct UserJson {
    #[serde(default)]
    id: Option<u64>,
    username: String,
}

#[derive(Deserialize)]
struct MergeRequestJson {
    iid: u64,
    last_commit: CommitJson,
    source_branch: String,
    target_branch: String,
    source_project_id: u64,
    target_project_id: u64,
    /// `null` in payloads from before GitLab 13.2 renamed WIP to draft.
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    work_in_progress: Option<bool>,
    author_id: u64,
}

#[derive(Deserialize)]
struct CommitJson {
    id: Sha,
}

impl MergeRequestPayload {
    pub(super) fn into_event(
        self,
        event: &str,
        action: MergeRequestActionName,
    ) -> Result<Event, ParseError> {
        let action = match action {
            MergeRequestActionName::Opened => MergeRequestAction::Opened,
            MergeRequestActionName::Reopened => MergeRequestAction::Reopened,
            MergeRequestActionName::Pushed(oldrev) => MergeRequestAction::Pushed {
                oldrev: Sha::new(&oldrev)
                    .map_err(|e| shape(event, "object_attributes.oldrev", &e.to_string()))?,
            },
            MergeRequestActionName::Ready => MergeRequestAction::Ready,
            MergeRequestActionName::Retargeted => MergeRequestAction::Retargeted,
            MergeRequestActionName::Closed => MergeRequestAction::Closed,
            MergeRequestActionName::Merged => MergeRequestAction::Merged,
            MergeRequestActionName::Reviewed => MergeRequestAction::Reviewed,
        };
        let mr = self.object_attributes;
        bounded(
            event,
            "object_attributes.source_branch",
            &mr.source_branch,
            MAX_NAME_BYTES,
        )?;
        bounded(
            event,
            "object_attributes.target_branch",
            &mr.target_branch,
            MAX_NAME_BYTES,
        )?;
        Ok(Event::GitLabMergeRequest(GitLabMergeRequestEvent {
            action,
            project: self.project.checked(event)?,
            merge_request: GitLabMergeRequest {
                iid: mr.iid,
                head_sha: mr.last_commit.id,
                source_branch: mr.source_branch,
                target_branch: mr.target_branch,
                source_project_id: mr.source_project_id,
                target_project_id: mr.target_project_id,
                draft: mr.draft.or(mr.work_in_progress).unwrap_or(false),
                author_id: mr.author_id,
            },
            user: self.user.checked(event)?,
        }))
    }
}

impl ProjectJson {
    fn checked(self, event: &str) -> Result<GitLabProject, ParseError> {
        check_project_path(
            event,
            "project.path_with_namespace",
            &self.path_with_namespace,
        )?;
        check_url(event, "project.git_http_url", &self.git_http_url)?;
        Ok(GitLabProject {
            id: self.id,
            path_with_namespace: self.path_with_namespace,
            git_http_url: self.git_http_url,
        })
    }
}

impl UserJson {
    fn checked(self, event: &str) -> Result<GitLabUser, ParseError> {
        bounded(event, "user.username", &self.username, MAX_NAME_BYTES)?;
        Ok(GitLabUser {
            id: self.id,
            username: self.username,
        })
    }
}

// ---------------------------------------------------------------- notes

#[derive(Deserialize)]
pub(super) struct NoteProbe {
    object_attributes: NoteProbeAttributes,
    /// Present on a note on an issue.
    #[serde(default)]
    issue: Option<IssueProbe>,
}

#[derive(Deserialize)]
struct IssueProbe {
    #[serde(default)]
    confidential: Option<bool>,
}

/// What a note cascade reads is on.
pub(super) enum NotedOn {
    MergeRequest,
    Issue,
}

#[derive(Deserialize)]
struct NoteProbeAttributes {
    noteable_type: String,
    /// `create` or `update`; absent (older GitLab) means `create`.
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    system: Option<bool>,
    #[serde(default)]
    confidential: Option<bool>,
    /// Internal notes (GitLab 15.0+) are the renamed confidential ones.
    #[serde(default)]
    internal: Option<bool>,
}

impl NoteProbe {
    pub(super) fn action_name(&self) -> &str {
        self.object_attributes.action.as_deref().unwrap_or("create")
    }

    /// A new note on a merge request or an issue, written by a person, that everyone
    /// can read (on an issue that is not confidential): the only notes cascade reads
    /// commands from.
    pub(super) fn command_candidate(&self) -> Option<NotedOn> {
        let a = &self.object_attributes;
        let public = self.action_name() == "create"
            && a.system != Some(true)
            && a.confidential != Some(true)
            && a.internal != Some(true);
        match a.noteable_type.as_str() {
            "MergeRequest" if public => Some(NotedOn::MergeRequest),
            "Issue"
                if public
                    && self
                        .issue
                        .as_ref()
                        .is_none_or(|i| i.confidential != Some(true)) =>
            {
                Some(NotedOn::Issue)
            }
            _ => None,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct NotePayload {
    project: ProjectJson,
    user: UserJson,
    object_attributes: NoteJson,
    merge_request: NotedMergeRequestJson,
}

#[derive(Deserialize)]
struct NoteJson {
    id: u64,
    note: String,
    author_id: u64,
}

#[derive(Deserialize)]
struct NotedMergeRequestJson {
    iid: u64,
    last_commit: CommitJson,
    source_project_id: u64,
    target_project_id: u64,
    author_id: u64,
}

impl NoteJson {
    /// The note, its text bounded, and its author: the hook's user, with the note's
    /// author id when GitLab leaves the user's out.
    fn checked(self, event: &str, user: UserJson) -> Result<(GitLabNote, GitLabUser), ParseError> {
        if self.note.chars().count() > MAX_NOTE_CHARS {
            return Err(shape(
                event,
                "object_attributes.note",
                &format!("longer than GitLab's {MAX_NOTE_CHARS} characters"),
            ));
        }
        let user = user.checked(event)?;
        let user = GitLabUser {
            id: user.id.or(Some(self.author_id)),
            ..user
        };
        let note = GitLabNote {
            id: self.id,
            body: self.note,
            author_id: self.author_id,
        };
        Ok((note, user))
    }
}

impl NotePayload {
    pub(super) fn into_event(self, event: &str) -> Result<Event, ParseError> {
        let (note, user) = self.object_attributes.checked(event, self.user)?;
        let mr = self.merge_request;
        Ok(Event::GitLabNote(GitLabNoteEvent {
            project: self.project.checked(event)?,
            note,
            merge_request: NotedMergeRequest {
                iid: mr.iid,
                head_sha: mr.last_commit.id,
                source_project_id: mr.source_project_id,
                target_project_id: mr.target_project_id,
                author_id: mr.author_id,
            },
            user,
        }))
    }
}

#[derive(Deserialize)]
pub(super) struct IssueNotePayload {
    project: ProjectJson,
    user: UserJson,
    object_attributes: NoteJson,
    issue: NotedIssueJson,
}

#[derive(Deserialize)]
struct NotedIssueJson {
    iid: u64,
}

impl IssueNotePayload {
    pub(super) fn into_event(self, event: &str) -> Result<Event, ParseError> {
        let (note, user) = self.object_attributes.checked(event, self.user)?;
        Ok(Event::GitLabIssueNote(GitLabIssueNoteEvent {
            project: self.project.checked(event)?,
            note,
            issue: NotedIssue {
                iid: self.issue.iid,
            },
            user,
        }))
    }
}
