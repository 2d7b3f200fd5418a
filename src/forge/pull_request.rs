//! One pull request (GitHub) or merge request (GitLab), whether a webhook told it or the
//! forge's API answered it: the one value the bot's flows read. Owns which facts a source
//! may lack (`Option`, never an empty string); never how a forge's wire format says them
//! (the forge clients and `bot::adapt` build it).

use super::ids::{PrNumber, Sha};
use super::types::{Actor, ForgeRef, Mergeable};

/// A pull request or merge request as the flows need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// The forge answering for it (the GitHub installation, the GitLab project).
    pub forge: ForgeRef,
    /// GitHub's number, GitLab's iid.
    pub number: PrNumber,
    pub head_sha: Sha,
    /// The head branch, without `refs/heads/`.
    pub head_ref: String,
    /// `None` where the source does not say (GitLab's hooks carry no base commit).
    pub base_sha: Option<Sha>,
    pub base_ref: String,
    pub draft: bool,
    /// The head lives in another repository or project (or one that was deleted).
    pub fork: bool,
    /// The author's login (GitHub) or username (GitLab); `None` where the source does
    /// not say (GitLab's hooks).
    pub author: Option<String>,
    /// Still open: not closed and not merged.
    pub open: bool,
    /// Whether the forge would merge it; `None` unless read from the forge's API (no hook
    /// says it).
    pub mergeable: Option<Mergeable>,
    /// The base repository's web page (`https://github.com/acme/infra`, a GitLab
    /// project's `web_url`), for links to its files; `None` when the source did not say.
    pub web_url: Option<String>,
    /// Who pushed the head, when a hook told of a push (GitHub: the sender of `opened`,
    /// `synchronize`, `reopened`; GitLab: the user of an update with `oldrev`). Recorded
    /// before anything else, since their approval of it must not count. `None` when read
    /// from the API.
    pub pusher: Option<Actor>,
    /// Its labels' names, as the forge's API answered; `None` when read from a hook
    /// (cascade reads labels only from the API, when a policy is told of them).
    pub labels: Option<Vec<String>>,
    /// The commit that merged it into its base (GitHub's `merge_commit_sha` once `merged`,
    /// GitLab's `merge_commit_sha` or `squash_commit_sha`); `None` while it is not merged.
    pub merge_commit: Option<Sha>,
}

impl PullRequest {
    /// Read from an event that does not say everything a plan needs (GitLab's hooks
    /// carry no base commit and no author): the pull request is read before planning.
    pub fn is_partial(&self) -> bool {
        self.base_sha.is_none() || self.author.is_none()
    }

    /// The author's login, empty where the source did not say (see [`Self::is_partial`]).
    pub fn author_login(&self) -> &str {
        self.author.as_deref().unwrap_or_default()
    }

    /// The base commit's id, empty where the source did not say: the text the store
    /// holds.
    pub fn base_sha_text(&self) -> &str {
        self.base_sha.as_ref().map(Sha::as_str).unwrap_or_default()
    }
}

/// A commit id a forge's API answered, or why it is not one.
pub(crate) fn answered_sha(what: &str, text: &str) -> anyhow::Result<Sha> {
    Sha::new(text).map_err(|_| {
        anyhow::anyhow!("the forge answered a {what} that is not a commit id: {text:?}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooked() -> PullRequest {
        PullRequest {
            forge: ForgeRef::GitLab { project_id: 1 },
            number: PrNumber::new(7),
            head_sha: Sha::new(&"a".repeat(40)).unwrap(),
            head_ref: "feature".into(),
            base_sha: None,
            base_ref: "main".into(),
            draft: false,
            fork: false,
            author: None,
            open: true,
            mergeable: None,
            web_url: None,
            pusher: None,
            labels: None,
            merge_commit: None,
        }
    }

    #[test]
    fn a_hook_without_a_base_commit_is_partial() {
        let mut pr = hooked();
        assert!(pr.is_partial());
        assert_eq!(pr.base_sha_text(), "");
        assert_eq!(pr.author_login(), "");
        pr.base_sha = Some(Sha::new(&"b".repeat(40)).unwrap());
        pr.author = Some("alice".into());
        assert!(!pr.is_partial());
        assert_eq!(pr.author_login(), "alice");
    }
}
