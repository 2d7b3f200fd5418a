//! GitLab webhook deliveries: authenticating one (`X-Gitlab-Token`, and the
//! Standard-Webhooks signature where a signing token is configured), reading
//! its identity from the headers, and turning the `Merge Request Hook` and
//! `Note Hook` bodies (notes on merge requests and on issues) into owned, typed
//! events the bot routes on.
//!
//! Like the GitHub half of `event`, it never acts on an event: no store, no
//! forge, no HTTP framework; the clock is a number the caller passes. What
//! cascade does not act on becomes [`Event::Ignored`] here, so an update that
//! changes only a title or a label costs nothing downstream, not even a read.
//!
//! Order of use: [`WebhookSecrets::verify`] (or [`verify_token`] for secrets of every
//! project), then [`verify_signing`] when a signing token is configured, then
//! [`GitLabDelivery::from_headers`], then [`HookProject::read`] to hold the project to
//! the token ([`Speaks::covers`]) and to the instance, then [`parse_gitlab_event`] with
//! the `X-Gitlab-Event` header.

mod auth;
mod scope;
mod wire;

pub use auth::{
    GitLabDelivery, SIGNATURE_TOLERANCE_SECS, SigningError, SigningKey, TokenError, verify_signing,
    verify_token,
};
pub use scope::{HookProject, ProjectKey, Speaks, WebhookSecrets};

use super::{Event, ParseError, Sha, decode, shape};
use serde_json::Value;

/// The event header: `Merge Request Hook`, `Note Hook`, …
pub const EVENT_HEADER: &str = "X-Gitlab-Event";
/// The webhook's secret token, verbatim (not an HMAC).
pub const TOKEN_HEADER: &str = "X-Gitlab-Token";
/// The same on every retry of one delivery (GitLab 17.4+): the dedupe key.
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
/// Per event (GitLab 14.8+); the dedupe key where `Idempotency-Key` is absent.
pub const EVENT_UUID_HEADER: &str = "X-Gitlab-Event-UUID";
/// Standard-Webhooks headers, sent when the hook has a signing token.
pub const SIGNATURE_ID_HEADER: &str = "webhook-id";
pub const SIGNATURE_TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// GitLab deliveries are stored under `gitlab:<X-Gitlab-Event>`, so that a
/// stored delivery says which parser reads it back.
pub const STORED_EVENT_PREFIX: &str = "gitlab:";

pub const MERGE_REQUEST_HOOK: &str = "Merge Request Hook";
pub const NOTE_HOOK: &str = "Note Hook";
/// A note only project members may see: never answered, since replies are public.
pub const CONFIDENTIAL_NOTE_HOOK: &str = "Confidential Note Hook";

/// The stored event name of a delivery whose `X-Gitlab-Event` is `hook`.
pub fn stored_event_name(hook: &str) -> String {
    format!("{STORED_EVENT_PREFIX}{hook}")
}

/// Bounds on what a payload may carry in a field that becomes a store key, a
/// file name, a git ref or a message (GitLab's own limits are lower).
const MAX_PATH_BYTES: usize = 1024;
const MAX_NAME_BYTES: usize = 1024;
const MAX_URL_BYTES: usize = 2048;
/// GitLab refuses notes longer than this; a payload claiming one is not GitLab's.
pub const MAX_NOTE_CHARS: usize = 1_000_000;

// ---------------------------------------------------------------- events

/// A `Merge Request Hook` cascade acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabMergeRequestEvent {
    pub action: MergeRequestAction,
    /// The target project, where the merge request lives.
    pub project: GitLabProject,
    pub merge_request: GitLabMergeRequest,
    /// Who did it (`user.id` is missing from some GitLab versions' payloads).
    pub user: GitLabUser,
}

/// What a merge request event means to cascade. Every other action (an update
/// of the title, labels or reviewers; approvals; ready → draft) is
/// [`Event::Ignored`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeRequestAction {
    /// `open`.
    Opened,
    /// `reopen`.
    Reopened,
    /// `update` with new commits on the source branch: `oldrev` was the head before.
    Pushed { oldrev: Sha },
    /// `update` from draft to ready: `changes.draft` true → false, or (older
    /// GitLab) the title losing its `Draft:` / `[Draft]` / `(Draft)` / `WIP:` prefix.
    Ready,
    /// `update` of the target branch (`changes.target_branch`): planned again, since the
    /// diff and whether the base is planned at all change.
    Retargeted,
    /// `close` without merging.
    Closed,
    /// `merge`.
    Merged,
    /// `approved`, `unapproved`, `approval`, `unapproval`: whether the plan is approved
    /// may have changed, which an apply after merge's status shows.
    Reviewed,
}

impl MergeRequestAction {
    /// A head to plan (when the merge request is not a waiting draft).
    pub fn is_new_head(&self) -> bool {
        matches!(
            self,
            MergeRequestAction::Opened
                | MergeRequestAction::Reopened
                | MergeRequestAction::Pushed { .. }
                | MergeRequestAction::Ready
                | MergeRequestAction::Retargeted
        )
    }

    /// The merge request is over: its locks are released.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            MergeRequestAction::Closed | MergeRequestAction::Merged
        )
    }
}

/// A project as a hook describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabProject {
    pub id: u64,
    /// `group/sub/project`: letters, digits, `_`, `-` and `.` between slashes.
    pub path_with_namespace: String,
    /// The HTTP(S) clone URL.
    pub git_http_url: String,
}

impl GitLabProject {
    /// The store's repository key: `gitlab:group/sub/project`.
    pub fn repo_key(&self) -> String {
        format!("{STORED_EVENT_PREFIX}{}", self.path_with_namespace)
    }
}

/// The user who acted, as hooks name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabUser {
    pub id: Option<u64>,
    pub username: String,
}

/// A merge request as of a `Merge Request Hook`. There is no base sha in the
/// payload: whoever plans reads the merge request from the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabMergeRequest {
    pub iid: u64,
    /// `last_commit.id`: the source branch's head.
    pub head_sha: Sha,
    pub source_branch: String,
    pub target_branch: String,
    pub source_project_id: u64,
    pub target_project_id: u64,
    /// `draft`, or `work_in_progress` in payloads from before drafts were named so.
    pub draft: bool,
    pub author_id: u64,
}

impl GitLabMergeRequest {
    /// The source branch lives in another project: its code is untrusted by default.
    pub fn fork(&self) -> bool {
        self.source_project_id != self.target_project_id
    }
}

/// A new, public, non-system note on a merge request: a possible command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabNoteEvent {
    pub project: GitLabProject,
    pub note: GitLabNote,
    pub merge_request: NotedMergeRequest,
    /// The note's author (`user.id` may be missing; `note.author_id` is not).
    pub user: GitLabUser,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabNote {
    /// The note id: what the `eyes` award goes on.
    pub id: u64,
    /// The text, at most [`MAX_NOTE_CHARS`] characters.
    pub body: String,
    pub author_id: u64,
}

/// The merge request a note is on, as the note hook describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotedMergeRequest {
    pub iid: u64,
    pub head_sha: Sha,
    pub source_project_id: u64,
    pub target_project_id: u64,
    pub author_id: u64,
}

impl NotedMergeRequest {
    pub fn fork(&self) -> bool {
        self.source_project_id != self.target_project_id
    }
}

/// A new, public, non-system note on an issue (one that is not confidential): a
/// possible command on the drift issue cascade keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitLabIssueNoteEvent {
    pub project: GitLabProject,
    pub note: GitLabNote,
    pub issue: NotedIssue,
    /// The note's author (`user.id` may be missing; `note.author_id` is not).
    pub user: GitLabUser,
}

/// The issue a note is on, as the note hook describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotedIssue {
    /// The issue's number in its project (issues and merge requests are counted apart).
    pub iid: u64,
}

// ---------------------------------------------------------------- parsing

/// Parses an authenticated GitLab body into an owned, typed event. `hook` is
/// the `X-Gitlab-Event` header. Hooks and actions cascade does not act on are
/// `Ok(Event::Ignored)` with the event named `gitlab:<hook>`; a body that is
/// not JSON, or a handled hook with a shape GitLab does not send or a field
/// past its bound, is an error.
pub fn parse_gitlab_event(hook: &str, body: &[u8]) -> Result<Event, ParseError> {
    let event = stored_event_name(hook);
    let value: Value =
        serde_json::from_slice(body).map_err(|e| ParseError::Malformed(e.to_string()))?;
    let Some(root) = value.as_object() else {
        return Err(shape(&event, "(root)", "expected a JSON object"));
    };
    let ignored = |action: Option<&str>| {
        Ok(Event::Ignored {
            event: event.clone(),
            action: action.map(str::to_owned),
        })
    };
    match hook {
        MERGE_REQUEST_HOOK => {
            let probe = decode::<wire::MergeRequestProbe>(&event, body)?;
            match probe.action() {
                Some(action) => {
                    decode::<wire::MergeRequestPayload>(&event, body)?.into_event(&event, action)
                }
                None => ignored(probe.action_name()),
            }
        }
        NOTE_HOOK => {
            let probe = decode::<wire::NoteProbe>(&event, body)?;
            match probe.command_candidate() {
                Some(wire::NotedOn::MergeRequest) => {
                    decode::<wire::NotePayload>(&event, body)?.into_event(&event)
                }
                Some(wire::NotedOn::Issue) => {
                    decode::<wire::IssueNotePayload>(&event, body)?.into_event(&event)
                }
                None => ignored(Some(probe.action_name())),
            }
        }
        // Confidential and internal notes are visible to members only, and
        // every reply cascade makes is public: it does not read them.
        _ => ignored(
            root.get("object_attributes")
                .and_then(|a| a.get("action"))
                .and_then(Value::as_str),
        ),
    }
}

/// Whether `title` starts with one of the prefixes GitLab reads as "draft".
pub fn has_draft_prefix(title: &str) -> bool {
    const PREFIXES: [&str; 6] = ["draft:", "[draft]", "(draft)", "wip:", "[wip]", "(wip)"];
    let title = title.trim_start();
    PREFIXES.iter().any(|prefix| {
        title
            .get(..prefix.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
    })
}

/// Checks a field that becomes a key, a ref or a message: at most `max` bytes
/// and no control characters.
fn bounded(event: &str, path: &str, value: &str, max: usize) -> Result<(), ParseError> {
    if value.is_empty() {
        return Err(shape(event, path, "must not be empty"));
    }
    if value.len() > max {
        return Err(shape(
            event,
            path,
            &format!("longer than {max} bytes: not something GitLab sends"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(shape(event, path, "contains a control character"));
    }
    Ok(())
}

/// Whether `value` is a project path: slash-separated segments of letters, digits, `_`,
/// `-` and `.`, none empty and none `.` or `..` (it names a mirror on disk).
pub(crate) fn is_project_path(value: &str) -> bool {
    value.split('/').all(|segment| {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    })
}

/// A project path ([`is_project_path`]) of a bounded length.
fn check_project_path(event: &str, path: &str, value: &str) -> Result<(), ParseError> {
    bounded(event, path, value, MAX_PATH_BYTES)?;
    if is_project_path(value) {
        Ok(())
    } else {
        Err(shape(
            event,
            path,
            "not a GitLab project path (letters, digits, `_`, `-`, `.` between slashes)",
        ))
    }
}

fn check_url(event: &str, path: &str, value: &str) -> Result<(), ParseError> {
    bounded(event, path, value, MAX_URL_BYTES)?;
    if value.starts_with("https://") || value.starts_with("http://") {
        Ok(())
    } else {
        Err(shape(event, path, "not an http(s) URL"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_prefixes_are_read_like_gitlab_reads_them() {
        for title in [
            "Draft: x",
            "draft:x",
            "  [Draft] x",
            "(draft) x",
            "WIP: x",
            "[wip] x",
        ] {
            assert!(has_draft_prefix(title), "{title:?}");
        }
        for title in ["Drafting x", "x Draft:", "", "WIPE", "é"] {
            assert!(!has_draft_prefix(title), "{title:?}");
        }
    }
}
