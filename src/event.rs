//! GitHub webhook deliveries. This module owns authenticating a delivery
//! (HMAC-SHA256 of the raw body under any configured secret, so secrets can be
//! rotated), reading its identity from the headers, and turning its body into an
//! owned, typed [`Event`], so that handlers never see JSON.
//!
//! It never acts on an event: no store, no forge, no clock, no HTTP framework.
//! Events and actions cascade does not handle become [`Event::Ignored`] (the
//! HTTP layer answers 200); a body that is not JSON, or a handled event whose
//! shape is not the one GitHub sends, is a [`ParseError`] naming the JSON path
//! (the HTTP layer answers 400).
//!
//! Order of use: [`verify_signature`] over the bytes exactly as received, then
//! [`Delivery::from_headers`], then [`parse_event`].
//!
//! GitLab's deliveries (`Merge Request Hook`, `Note Hook`) are read by
//! [`gitlab`] into the same [`Event`], under the same rules.

pub mod gitlab;
mod merge_group;
mod review;
mod wire;

pub use gitlab::parse_gitlab_event;
pub use merge_group::MergeGroupEvent;
pub use review::ReviewEvent;

#[cfg(test)]
mod tests;

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use serde::Deserialize;
use serde_json::Value;
use sha2::Sha256;
use std::fmt;

/// The event name header; the action is only in the body.
pub const EVENT_HEADER: &str = "X-GitHub-Event";
/// A GUID unique per event and kept by redeliveries: the idempotency key.
pub const DELIVERY_HEADER: &str = "X-GitHub-Delivery";
/// `sha256=` and the lowercase hex HMAC-SHA256 of the body.
pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";

// ---------------------------------------------------------------- signature

/// Why a delivery was not authenticated. The messages are for the log; none
/// contains a secret or echoes the header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no {SIGNATURE_HEADER} header: the App must have a webhook secret")]
    Missing,
    #[error("{SIGNATURE_HEADER} is malformed: {0}")]
    Malformed(&'static str),
    #[error("no webhook secret is configured, so no delivery can be authenticated")]
    NoSecret,
    #[error("{SIGNATURE_HEADER} does not match the body under any configured secret")]
    Mismatch,
}

/// Checks `X-Hub-Signature-256` (`sha256=<64 lowercase hex>`) over the raw body
/// against every configured secret (rotation: old and new are both accepted
/// while the App's secret changes), comparing in constant time.
///
/// Empty secrets are skipped: HMAC accepts an empty key, and a body signed with
/// one proves nothing. A missing, malformed or wrong signature is an error.
pub fn verify_signature(
    secrets: &[SecretSlice<u8>],
    header: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let digest = header
        .strip_prefix("sha256=")
        .ok_or(SignatureError::Malformed(
            "it does not start with `sha256=`",
        ))?;
    if digest.len() != 64
        || !digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(SignatureError::Malformed(
            "`sha256=` is not followed by 64 lowercase hex digits",
        ));
    }
    let expected =
        hex::decode(digest).map_err(|_| SignatureError::Malformed("the digest is not hex"))?;
    let mut any_secret = false;
    let mut matched = false;
    for secret in secrets
        .iter()
        .map(ExposeSecret::expose_secret)
        .filter(|s| !s.is_empty())
    {
        any_secret = true;
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
            continue; // HMAC takes keys of any length; never reached.
        };
        mac.update(body);
        // Every secret is tried, so the time taken does not say which matched.
        matched |= mac.verify_slice(&expected).is_ok();
    }
    match (any_secret, matched) {
        (false, _) => Err(SignatureError::NoSecret),
        (true, true) => Ok(()),
        (true, false) => Err(SignatureError::Mismatch),
    }
}

// ---------------------------------------------------------------- headers

/// `X-GitHub-Delivery`: the same for every attempt to deliver one event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeliveryId(String);

impl DeliveryId {
    /// Accepts 1 to 64 ASCII letters, digits and `-` (GitHub sends a GUID),
    /// so the id is safe in a log line, a metric-free store key and a file name.
    pub fn new(id: &str) -> Option<DeliveryId> {
        let ok = !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        ok.then(|| DeliveryId(id.to_owned()))
    }

    /// An id as the store kept it: it passed [`DeliveryId::new`] before it was stored.
    pub fn from_stored(id: String) -> DeliveryId {
        DeliveryId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeliveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A delivery's identity and kind, from its headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    /// `X-GitHub-Event`: `pull_request`, `issue_comment`, `ping`, …
    pub event: String,
}

/// A header cascade needs is absent, repeated or not what GitHub sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("missing header {0}")]
    Missing(&'static str),
    #[error("header {0} is given more than once")]
    Repeated(&'static str),
    #[error("header {header} is not {expected}")]
    Invalid {
        header: &'static str,
        expected: &'static str,
    },
}

impl Delivery {
    /// Reads `X-GitHub-Event` and `X-GitHub-Delivery` from `(name, value)`
    /// pairs, matching names case-insensitively (proxies lower-case them).
    /// The HTTP layer adapts its header map, e.g. with
    /// `headers.iter().filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))`.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Delivery, HeaderError> {
        let mut event = None;
        let mut id = None;
        for (name, value) in headers {
            let slot = if name.eq_ignore_ascii_case(EVENT_HEADER) {
                (&mut event, EVENT_HEADER)
            } else if name.eq_ignore_ascii_case(DELIVERY_HEADER) {
                (&mut id, DELIVERY_HEADER)
            } else {
                continue;
            };
            if slot.0.replace(value).is_some() {
                return Err(HeaderError::Repeated(slot.1));
            }
        }
        let event = event.ok_or(HeaderError::Missing(EVENT_HEADER))?;
        let id = id.ok_or(HeaderError::Missing(DELIVERY_HEADER))?;
        let event_ok = !event.is_empty()
            && event.len() <= 64
            && event
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'));
        if !event_ok {
            return Err(HeaderError::Invalid {
                header: EVENT_HEADER,
                expected: "an event name (lowercase letters, digits and `_`)",
            });
        }
        let id = DeliveryId::new(id).ok_or(HeaderError::Invalid {
            header: DELIVERY_HEADER,
            expected: "a GUID (1 to 64 letters, digits and `-`)",
        })?;
        Ok(Delivery {
            id,
            event: event.to_owned(),
        })
    }
}

/// The `X-GitHub-Event` names cascade parses (every other event is
/// [`Event::Ignored`]): a fixed set, so that counting deliveries per event can
/// never grow with what a sender writes in the header.
pub const KNOWN_EVENTS: [&str; 5] = [
    "pull_request",
    "issue_comment",
    "installation",
    "installation_repositories",
    "ping",
];

/// `name` as one of [`KNOWN_EVENTS`] (a `'static` string), or `None`.
pub fn known_event(name: &str) -> Option<&'static str> {
    KNOWN_EVENTS.into_iter().find(|known| *known == name)
}

/// The first value of header `name` (case-insensitive) among `(name, value)` pairs.
pub fn header<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    name: &str,
) -> Option<&'a str> {
    headers
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

// ---------------------------------------------------------------- ids

/// A GitHub App installation: what API tokens are minted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(transparent)]
pub struct InstallationId(pub u64);

/// A repository's numeric id, stable across renames and transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(transparent)]
pub struct RepoId(pub u64);

/// An issue or pull request comment's numeric id (REST).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(transparent)]
pub struct CommentId(pub u64);

macro_rules! display_inner {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    )*};
}
display_inner!(InstallationId, RepoId, CommentId);

/// A commit id: 40 (SHA-1) or 64 (SHA-256 repositories) lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Sha(String);

/// A string that is not a commit id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a commit SHA (40 or 64 lowercase hex digits)")]
pub struct InvalidSha;

impl Sha {
    pub fn new(sha: &str) -> Result<Sha, InvalidSha> {
        let ok = matches!(sha.len(), 40 | 64)
            && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if ok {
            Ok(Sha(sha.to_owned()))
        } else {
            Err(InvalidSha)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Sha {
    type Error = InvalidSha;
    fn try_from(sha: String) -> Result<Sha, InvalidSha> {
        Sha::new(&sha)
    }
}

impl fmt::Display for Sha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------- events

/// A delivery's body, typed. Each variant owns everything a handler reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    PullRequest(PullRequestEvent),
    /// A newly created comment on a pull request (never an edit or a deletion:
    /// those are `Ignored`).
    PullRequestComment(CommentEvent),
    /// A newly created comment on a plain issue (not a pull request), such as the
    /// drift issue cascade keeps; `pull_request` holds the issue (GitHub describes
    /// both alike and numbers them together). Edits and deletions are `Ignored`.
    IssueComment(CommentEvent),
    Installation(InstallationEvent),
    InstallationRepositories(InstallationRepositoriesEvent),
    /// Sent when a hook is created; `app_id` only when an App is registered.
    Ping {
        zen: String,
        hook_id: Option<u64>,
        app_id: Option<u64>,
    },
    /// A review was submitted or dismissed on a pull request (`pull_request_review`).
    PullRequestReview(ReviewEvent),
    /// A merge queue's group wants its checks (`merge_group` `checks_requested`).
    MergeGroup(MergeGroupEvent),
    /// A GitLab merge request opened, pushed to, marked ready, closed or merged.
    GitLabMergeRequest(gitlab::GitLabMergeRequestEvent),
    /// A new public note on a GitLab merge request, written by a person.
    GitLabNote(gitlab::GitLabNoteEvent),
    /// A new public note on a GitLab issue (not confidential), written by a person.
    GitLabIssueNote(gitlab::GitLabIssueNoteEvent),
    /// An event or action cascade does not act on; answered 200 all the same.
    /// GitLab's are named `gitlab:<X-Gitlab-Event>`.
    Ignored {
        event: String,
        action: Option<String>,
    },
}

/// A `pull_request` event with an action cascade acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestEvent {
    pub action: PullRequestAction,
    /// `None` for a repository hook; an App's deliveries always carry one.
    pub installation: Option<InstallationId>,
    /// The base repository, where the pull request lives.
    pub repository: RepoRef,
    pub pull_request: PullRequest,
    pub sender: Account,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullRequestAction {
    Opened,
    /// New commits on the head branch (push or force-push): `after` is the new head.
    Synchronize {
        before: Sha,
        after: Sha,
    },
    Reopened,
    ReadyForReview,
    /// Closed, by merging when `merged`.
    Closed {
        merged: bool,
    },
    ConvertedToDraft,
    /// The base branch was changed (`edited` with `changes.base`): planned again, since
    /// both the diff and the branch's allowance change.
    BaseChanged,
}

/// A repository as events describe it (the base repository of a pull request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoRef {
    pub id: RepoId,
    /// The owner's login (user or organisation).
    pub owner: String,
    pub name: String,
    /// `owner/name`.
    pub full_name: String,
    pub default_branch: String,
    pub private: bool,
    // No clone URL: cascade fetches from the URL GitHub's API answers, at the configured
    // origin, never from one a payload names.
    /// The repository's web page (`https://github.com/owner/name`, or under a GitHub
    /// Enterprise root); `None` in payloads that leave it out.
    pub html_url: Option<String>,
}

/// A pull request as of the event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    /// GraphQL id.
    pub node_id: String,
    pub title: String,
    pub author: Account,
    pub author_association: Option<AuthorAssociation>,
    pub draft: bool,
    pub state: PrState,
    pub merged: bool,
    pub head: PullRequestHead,
    pub base: PullRequestBase,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestHead {
    pub sha: Sha,
    /// The branch name, without `refs/heads/`.
    pub ref_name: String,
    /// `None` when the fork the pull request came from was deleted.
    pub repo_full_name: Option<String>,
    /// The head lives in another repository than the base (or in a deleted
    /// one): its code is untrusted by default.
    pub fork: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestBase {
    pub sha: Sha,
    /// The branch name, without `refs/heads/`.
    pub ref_name: String,
    pub repo_full_name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrState {
    Open,
    Closed,
}

/// A user, bot or organisation, as `sender`, author or installation account.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Deserialize)]
pub struct Account {
    pub login: String,
    #[serde(rename = "type")]
    pub kind: AccountKind,
}

impl Account {
    /// An App (cascade included) rather than a person: GitHub's `Bot` type, or a
    /// `name[bot]` login where the type is missing or new.
    pub fn is_bot(&self) -> bool {
        self.kind == AccountKind::Bot || self.login.ends_with("[bot]")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
pub enum AccountKind {
    User,
    /// An App acting as itself (`name[bot]`), cascade included.
    Bot,
    Organization,
    /// A kind GitHub added after this was written (e.g. `Mannequin`).
    #[serde(other)]
    Other,
}

/// How an author is associated with the repository, as GitHub reports it.
/// Informational: permission to apply is checked against the API, not this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthorAssociation {
    Collaborator,
    Contributor,
    FirstTimer,
    FirstTimeContributor,
    Mannequin,
    Member,
    #[serde(rename = "NONE")]
    NoAssociation,
    Owner,
    /// A value GitHub added after this was written.
    #[serde(other)]
    Other,
}

/// A comment newly created on a pull request, or on a plain issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentEvent {
    pub installation: Option<InstallationId>,
    pub repository: RepoRef,
    /// The pull request (or, for [`Event::IssueComment`], the issue) commented on.
    pub pull_request: PullRequestRef,
    pub comment: Comment,
    pub sender: Account,
}

/// The pull request a comment is on, as the issue half of it describes it
/// (no head or base: those come from the API); for a comment on a plain issue,
/// the issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestRef {
    pub number: u64,
    pub title: String,
    pub state: PrState,
    pub author: Account,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub id: CommentId,
    /// GraphQL id (to minimise a comment).
    pub node_id: String,
    pub body: String,
    pub author: Account,
    pub author_association: AuthorAssociation,
    pub html_url: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallationEvent {
    pub action: InstallationAction,
    pub installation: Installation,
    /// The repositories the installation covers, when GitHub lists them.
    pub repositories: Option<Vec<InstalledRepo>>,
    pub sender: Account,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallationAction {
    Created,
    Deleted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallationRepositoriesEvent {
    pub action: InstallationRepositoriesAction,
    pub installation: Installation,
    pub repository_selection: RepositorySelection,
    pub added: Vec<InstalledRepo>,
    pub removed: Vec<InstalledRepo>,
    pub sender: Account,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallationRepositoriesAction {
    Added,
    Removed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installation {
    pub id: InstallationId,
    /// The user or organisation the App is installed on.
    pub account: Account,
    pub app_id: u64,
    pub repository_selection: RepositorySelection,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepositorySelection {
    All,
    Selected,
}

/// A repository as installation events list it (no branch, no clone URL).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct InstalledRepo {
    pub id: RepoId,
    pub name: String,
    pub full_name: String,
    pub private: bool,
}

// ---------------------------------------------------------------- parsing

/// A body cascade cannot read. Both are answered 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the body is not JSON: {0}")]
    Malformed(String),
    /// A handled event whose body lacks a field cascade reads, or has one of
    /// the wrong type. `path` is e.g. `pull_request.head.sha`.
    #[error("`{event}` payload: {path}: {reason}")]
    Shape {
        event: String,
        path: String,
        reason: String,
    },
}

/// Parses an authenticated body into an owned, typed event. `event` is the
/// `X-GitHub-Event` header. Events and actions cascade does not handle are
/// `Ok(Event::Ignored)`; malformed JSON, or a handled event with a shape GitHub
/// does not send, is an error.
pub fn parse_event(event: &str, body: &[u8]) -> Result<Event, ParseError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| ParseError::Malformed(e.to_string()))?;
    let Some(root) = value.as_object() else {
        return Err(shape(event, "(root)", "expected a JSON object"));
    };
    let ignored = |action: Option<&str>| {
        Ok(Event::Ignored {
            event: event.to_owned(),
            action: action.map(str::to_owned),
        })
    };
    match event {
        "ping" => Ok(decode::<wire::PingPayload>(event, body)?.into()),
        "pull_request" => {
            let action = action(event, root)?;
            // Of all edits, only a new base changes what is planned (and under which
            // rules): a title or body edit costs nothing.
            if action == "edited" && !base_changed(root) {
                return ignored(Some(action));
            }
            match wire::PullRequestActionName::parse(action) {
                Some(name) => decode::<wire::PullRequestPayload>(event, body)?.into_event(name),
                None => ignored(Some(action)),
            }
        }
        // https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request_review:
        // its `pull_request` is shaped as `pull_request`'s own.
        "pull_request_review" => {
            let action = action(event, root)?;
            if !matches!(action, "submitted" | "dismissed") {
                return ignored(Some(action));
            }
            Ok(decode::<review::ReviewPayload>(event, body)?.into_event())
        }
        "merge_group" => {
            let action = action(event, root)?;
            if action != "checks_requested" {
                return ignored(Some(action));
            }
            Ok(decode::<merge_group::MergeGroupPayload>(event, body)?.into_event())
        }
        "issue_comment" => {
            let action = action(event, root)?;
            if action != "created" {
                return ignored(Some(action));
            }
            let on_pull_request = on_pull_request(event, root)?;
            let comment = decode::<wire::CommentPayload>(event, body)?.into_event();
            Ok(if on_pull_request {
                Event::PullRequestComment(comment)
            } else {
                Event::IssueComment(comment)
            })
        }
        "installation" => {
            let action = match action(event, root)? {
                "created" => InstallationAction::Created,
                "deleted" => InstallationAction::Deleted,
                other => return ignored(Some(other)),
            };
            Ok(decode::<wire::InstallationPayload>(event, body)?.into_event(action))
        }
        "installation_repositories" => {
            let action = match action(event, root)? {
                "added" => InstallationRepositoriesAction::Added,
                "removed" => InstallationRepositoriesAction::Removed,
                other => return ignored(Some(other)),
            };
            Ok(decode::<wire::InstallationRepositoriesPayload>(event, body)?.into_event(action))
        }
        _ => ignored(root.get("action").and_then(Value::as_str)),
    }
}

/// The `action` of an event that has one.
fn action<'v>(
    event: &str,
    root: &'v serde_json::Map<String, Value>,
) -> Result<&'v str, ParseError> {
    match root.get("action") {
        Some(Value::String(action)) => Ok(action),
        Some(_) => Err(shape(event, "action", "expected a string")),
        None => Err(shape(event, "action", "missing field `action`")),
    }
}

/// Whether an `issue_comment` is on a pull request: GitHub models a pull
/// request as an issue with a `pull_request` member.
/// Whether an `edited` pull request event's `changes` name the base (`changes.base.ref`
/// and `changes.base.sha`, the old values, per GitHub's webhook reference).
fn base_changed(root: &serde_json::Map<String, Value>) -> bool {
    root.get("changes")
        .and_then(|c| c.get("base"))
        .is_some_and(|b| !b.is_null())
}

fn on_pull_request(event: &str, root: &serde_json::Map<String, Value>) -> Result<bool, ParseError> {
    match root.get("issue") {
        Some(Value::Object(issue)) => Ok(issue.get("pull_request").is_some_and(|p| !p.is_null())),
        Some(_) => Err(shape(event, "issue", "expected an object")),
        None => Err(shape(event, "issue", "missing field `issue`")),
    }
}

/// Decodes `body` through `serde_path_to_error`, so an error names the JSON path
/// of the value it is about (`pull_request.head.sha`, `repositories_added[1].id`,
/// `(root)`) instead of serde_json's `line 1 column 9731`.
fn decode<T: serde::de::DeserializeOwned>(event: &str, body: &[u8]) -> Result<T, ParseError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let decoded = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        (path, error.into_inner())
    });
    let decoded = decoded.and_then(|value| match json.end() {
        Ok(()) => Ok(value),
        Err(error) => Err((String::new(), error)),
    });
    decoded.map_err(|(path, error)| {
        let (path, reason) = shape_error(path, &error);
        // serde quotes the value it rejected (`invalid type: string "…"`): a
        // long one must not make a long log line or answer.
        ParseError::Shape {
            event: event.to_owned(),
            path: clip(path, MAX_ERROR_PART_CHARS),
            reason: clip(reason, MAX_ERROR_PART_CHARS),
        }
    })
}

/// The path and reason a decode error is shown with. `serde_path_to_error` names the
/// object that lacks a field, so the field is added to the path; its root (`.`) is shown
/// as `(root)`; serde_json's ` at line L column C` is dropped from the reason.
fn shape_error(path: String, error: &serde_json::Error) -> (String, String) {
    let message = error.to_string();
    let reason = match message.rfind(" at line ") {
        Some(at) if error.line() > 0 => message[..at].to_owned(),
        _ => message,
    };
    let path = if path == "." { String::new() } else { path };
    let missing = reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'));
    let path = match missing {
        Some(field) if path.is_empty() => field.to_owned(),
        Some(field) => format!("{path}.{field}"),
        None if path.is_empty() => "(root)".to_owned(),
        None => path,
    };
    (path, reason)
}

/// The longest path or reason a [`ParseError::Shape`] carries.
const MAX_ERROR_PART_CHARS: usize = 300;

/// `text` cut to `max` characters, with `…` where it was cut.
fn clip(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn shape(event: &str, path: &str, reason: &str) -> ParseError {
    ParseError::Shape {
        event: event.to_owned(),
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}
