//! What cascade reads from GitHub, as plain owned values, and the small serde
//! shapes of GitHub's JSON they are read from. Only the fields cascade uses are
//! declared, so GitHub adding or dropping others never breaks a call.

use serde::Deserialize;

use crate::forge::types::CheckStatus;

/// A pull request as cascade needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestInfo {
    pub number: u64,
    pub head_sha: String,
    pub head_ref: String,
    pub base_sha: String,
    pub base_ref: String,
    pub draft: bool,
    /// `None` while GitHub is still computing mergeability; ask again later.
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
    pub author: String,
    /// The head lives in another repository (or in one that was deleted).
    pub fork: bool,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    /// The base repository's web page (GitHub Enterprise has its own root).
    pub base_web_url: Option<String>,
    /// The labels' names.
    pub labels: Vec<String>,
    /// `merge_commit_sha` once `merged`: the commit that merged it.
    pub merge_commit_sha: Option<String>,
}

/// One file a pull request touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    /// The old path of a renamed or copied file: both paths matter to the graph.
    pub previous_path: Option<String>,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed` or `unchanged`.
    pub status: String,
}

/// A comment on a pull request's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    /// The GraphQL id, which minimising needs.
    pub node_id: String,
    pub body: String,
    pub author: String,
    /// The App that posted it (`performed_via_github_app.id`), if one did: how cascade
    /// tells its own comments from a user's comment that copies their marker.
    pub via_app: Option<u64>,
    /// When GitHub stored it (GitHub's clock).
    pub created_at: Option<std::time::SystemTime>,
}

/// A user's role on a repository, most powerful first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    None,
}

impl Permission {
    /// May push to the repository (and so may apply).
    pub fn can_write(self) -> bool {
        matches!(
            self,
            Permission::Admin | Permission::Maintain | Permission::Write
        )
    }

    /// `role_name` holds the real role; custom roles fall back to the legacy
    /// `permission` field, which GitHub maps onto admin/write/read/none.
    pub(crate) fn from_wire(role_name: Option<&str>, permission: Option<&str>) -> Permission {
        let named = |name: &str| match name {
            "admin" => Some(Permission::Admin),
            "maintain" => Some(Permission::Maintain),
            "write" => Some(Permission::Write),
            "triage" => Some(Permission::Triage),
            "read" => Some(Permission::Read),
            _ => None,
        };
        role_name
            .and_then(named)
            .or_else(|| permission.and_then(named))
            .unwrap_or(Permission::None)
    }
}

/// One review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub author: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    /// The head the review was given on.
    pub commit_id: String,
}

/// GitHub's `status` and `conclusion` fields for cascade's check.
pub(crate) fn check_wire(status: CheckStatus) -> (&'static str, Option<&'static str>) {
    match status {
        CheckStatus::InProgress => ("in_progress", None),
        CheckStatus::Success => ("completed", Some("success")),
        CheckStatus::Failure => ("completed", Some("failure")),
        CheckStatus::ActionRequired => ("completed", Some("action_required")),
    }
}

/// GitHub's limit on a check run's `output.summary`, in characters.
pub const CHECK_SUMMARY_LIMIT: usize = 65_535;

/// `summary` cut to GitHub's limit, with a note saying so.
pub(crate) fn check_summary(summary: &str) -> String {
    if summary.chars().count() <= CHECK_SUMMARY_LIMIT {
        return summary.to_string();
    }
    const NOTE: &str = "\n\n… (truncated: the full plan is in the pull request comment)";
    let keep = CHECK_SUMMARY_LIMIT - NOTE.chars().count();
    let mut out: String = summary.chars().take(keep).collect();
    out.push_str(NOTE);
    out
}

/// GitHub's limit on a check run's `output.text`. Kept in bytes: GitHub documents
/// characters, and a byte count is never below the character count.
pub const CHECK_TEXT_LIMIT: usize = 65_535;

/// `text` cut to [`CHECK_TEXT_LIMIT`] bytes at a line break, with a note saying so. The
/// bot fits the text itself (`comment::check_text`); this only guards the limit.
pub(crate) fn check_text(text: &str) -> String {
    if text.len() <= CHECK_TEXT_LIMIT {
        return text.to_string();
    }
    const NOTE: &str = "\n\n… (cut at GitHub's limit)";
    let mut end = CHECK_TEXT_LIMIT - NOTE.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let kept = &text[..end];
    // An open code block is closed by the end of the output anyway; a cut line is dropped.
    let kept = kept.rfind('\n').map_or(kept, |at| &kept[..at]);
    format!("{kept}{NOTE}")
}

// ---- wire shapes ----

#[derive(Deserialize)]
pub(crate) struct WireUser {
    pub login: String,
}

/// A deleted account shows as `null`; GitHub's web UI calls it "ghost".
pub(crate) fn login(user: Option<WireUser>) -> String {
    user.map(|u| u.login).unwrap_or_else(|| "ghost".to_string())
}

#[derive(Deserialize)]
pub(crate) struct WireRepo {
    pub full_name: String,
    /// The repository's web page; always sent, read as optional all the same.
    #[serde(default)]
    pub html_url: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct WireBranch {
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub sha: String,
    pub repo: Option<WireRepo>,
}

#[derive(Deserialize)]
pub(crate) struct WirePull {
    pub number: u64,
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub merged: bool,
    pub mergeable: Option<bool>,
    #[serde(default)]
    pub mergeable_state: Option<String>,
    pub user: Option<WireUser>,
    pub head: WireBranch,
    pub base: WireBranch,
    #[serde(default)]
    pub labels: Vec<WireLabel>,
    /// Before the merge, a test merge commit GitHub may have made (or `null`); after, the
    /// merge, squash or rebase commit on the base
    /// (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request).
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
}

/// A label of a pull request (`labels[]` of "Get a pull request").
#[derive(Deserialize)]
pub(crate) struct WireLabel {
    pub name: String,
}

impl From<WirePull> for PullRequestInfo {
    fn from(pr: WirePull) -> Self {
        let base_repo = pr.base.repo.as_ref().map(|r| r.full_name.as_str());
        let head_repo = pr.head.repo.as_ref().map(|r| r.full_name.as_str());
        // A missing head repository is a deleted fork: never the base itself.
        let fork = head_repo.is_none() || head_repo != base_repo;
        let base_web_url = pr.base.repo.as_ref().and_then(|r| r.html_url.clone());
        PullRequestInfo {
            number: pr.number,
            head_sha: pr.head.sha,
            head_ref: pr.head.git_ref,
            base_sha: pr.base.sha,
            base_ref: pr.base.git_ref,
            draft: pr.draft,
            mergeable: pr.mergeable,
            mergeable_state: pr.mergeable_state.unwrap_or_else(|| "unknown".to_string()),
            author: login(pr.user),
            fork,
            state: pr.state,
            merged: pr.merged,
            base_web_url,
            labels: pr.labels.into_iter().map(|l| l.name).collect(),
            merge_commit_sha: pr.merge_commit_sha.filter(|_| pr.merged),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireFile {
    pub filename: String,
    pub status: String,
    pub previous_filename: Option<String>,
}

impl From<WireFile> for ChangedFile {
    fn from(f: WireFile) -> Self {
        ChangedFile {
            path: f.filename,
            previous_path: f.previous_filename,
            status: f.status,
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireComment {
    pub id: u64,
    pub node_id: String,
    #[serde(default)]
    pub body: Option<String>,
    pub user: Option<WireUser>,
    #[serde(default)]
    pub performed_via_github_app: Option<WireId>,
    #[serde(default)]
    pub created_at: Option<String>,
}

impl From<WireComment> for IssueComment {
    fn from(c: WireComment) -> Self {
        IssueComment {
            id: c.id,
            node_id: c.node_id,
            body: c.body.unwrap_or_default(),
            author: login(c.user),
            via_app: c.performed_via_github_app.map(|app| app.id),
            created_at: c
                .created_at
                .as_deref()
                .and_then(crate::forge::parse_timestamp),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireReview {
    pub user: Option<WireUser>,
    pub state: String,
    pub commit_id: Option<String>,
}

impl From<WireReview> for Review {
    fn from(r: WireReview) -> Self {
        Review {
            author: login(r.user),
            state: r.state,
            commit_id: r.commit_id.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WirePermission {
    pub permission: Option<String>,
    pub role_name: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct WireId {
    pub id: u64,
}

/// `GET /orgs/{org}/teams/{team_slug}/memberships/{username}`.
#[derive(Deserialize)]
pub(crate) struct WireMembership {
    /// `active`, or `pending` while an invitation is not accepted.
    pub state: String,
}

#[derive(Deserialize)]
pub(crate) struct WireToken {
    pub token: String,
    pub expires_at: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct WireGraphqlErrors {
    #[serde(default)]
    pub errors: Vec<WireGraphqlError>,
}

#[derive(Deserialize)]
pub(crate) struct WireGraphqlError {
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_prefers_the_role_name_and_falls_back_to_the_legacy_field() {
        assert_eq!(
            Permission::from_wire(Some("maintain"), Some("write")),
            Permission::Maintain
        );
        assert_eq!(
            Permission::from_wire(Some("deployer"), Some("write")),
            Permission::Write
        );
        assert_eq!(Permission::from_wire(None, None), Permission::None);
        assert!(!Permission::Triage.can_write());
        assert!(Permission::Maintain.can_write());
    }

    #[test]
    fn long_summaries_are_cut_to_the_limit_with_a_note() {
        let long = "é".repeat(70_000);
        let cut = check_summary(&long);
        assert_eq!(cut.chars().count(), CHECK_SUMMARY_LIMIT);
        assert!(cut.ends_with("pull request comment)"));
        assert_eq!(check_summary("short"), "short");
    }

    #[test]
    fn long_texts_are_cut_to_the_limit_in_bytes() {
        let long = "é\n".repeat(40_000);
        let cut = check_text(&long);
        assert!(cut.len() <= CHECK_TEXT_LIMIT, "{}", cut.len());
        assert!(cut.ends_with("(cut at GitHub's limit)"));
        assert_eq!(check_text("short"), "short");
    }
}
