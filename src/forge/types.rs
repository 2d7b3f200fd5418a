//! What the bot reads from and hands to any forge, in plain values: a forge's own wire
//! strings (GitHub's review states, GitLab's merge statuses) never cross this line, so
//! `bot` decides the same way on every forge and only the words differ.

use std::time::SystemTime;

/// Which forge a pull request (GitHub) or merge request (GitLab) lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForgeKind {
    GitHub,
    GitLab,
}

/// What starts a GitLab repository's key in the store (`gitlab:group/sub/project`);
/// GitHub's keys are `owner/name`, which never hold a `:`, so the two cannot collide.
pub const GITLAB_REPO_PREFIX: &str = "gitlab:";

/// Where a change request's answers come from: the GitHub App installation whose token
/// answers on the repository, or the GitLab project. Kept with every job and in the
/// store (`installation_id` holds either number; the repository key's `gitlab:` prefix
/// says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForgeRef {
    GitHub { installation: u64 },
    GitLab { project_id: u64 },
}

impl ForgeRef {
    pub fn kind(self) -> ForgeKind {
        match self {
            ForgeRef::GitHub { .. } => ForgeKind::GitHub,
            ForgeRef::GitLab { .. } => ForgeKind::GitLab,
        }
    }

    /// The forge of a stored pull request: `installation_id` holds [`ForgeRef::id`], and
    /// the repository key says which forge (`gitlab:group/project` is GitLab's).
    pub fn stored(repo: &str, id: u64) -> ForgeRef {
        match super::RepoKey::from_stored(repo).forge() {
            ForgeKind::GitLab => ForgeRef::GitLab { project_id: id },
            ForgeKind::GitHub => ForgeRef::GitHub { installation: id },
        }
    }

    /// The number stored as `installation_id`.
    pub fn id(self) -> u64 {
        match self {
            ForgeRef::GitHub { installation } => installation,
            ForgeRef::GitLab { project_id } => project_id,
        }
    }
}

/// Whether the forge would merge the change request, leaving cascade's own check or
/// status out of it: cascade waiting for `/apply` must never be what blocks `/apply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mergeable {
    Yes,
    /// Blocked; `state` is the forge's word for why (`blocked`, `conflict`, …), shown
    /// to the user as is.
    No {
        state: String,
    },
    /// Blocked by a requirement other than cascade's own check, said as a clause
    /// ("the required check `ci` is `failure`").
    Blocked {
        why: String,
    },
    /// The forge is still working it out: ask again later.
    Unknown {
        state: String,
    },
}

/// What cascade's check run (GitHub) or commit status (GitLab) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    InProgress,
    Success,
    Failure,
    /// Waiting for a person (an `/apply`, a lock): blocks merging like a failure.
    ActionRequired,
}

/// What cascade's check says. GitHub shows all of it (a check run's title, summary and
/// text); a GitLab commit status keeps only the title, as its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutput {
    pub status: CheckStatus,
    pub title: String,
    pub summary: String,
    /// Markdown shown below the summary (GitHub's `output.text`: the failed units' logs);
    /// empty for none.
    pub text: String,
}

impl CheckOutput {
    /// A check with a title and summary and no text.
    pub fn new(status: CheckStatus, title: impl Into<String>, summary: impl Into<String>) -> Self {
        CheckOutput {
            status,
            title: title.into(),
            summary: summary.into(),
            text: String::new(),
        }
    }
}

/// Someone acting on a change request: a commenter or an approver. GitLab's member
/// lookups need the numeric id; GitHub's need the login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub id: Option<u64>,
    pub login: String,
}

/// One comment (GitHub) or note (GitLab) cascade posted on a change request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnComment {
    pub id: u64,
    pub body: String,
    /// When the forge stored it (the forge's clock).
    pub created_at: Option<SystemTime>,
}

/// An approval in force on a change request: the reviewer's latest word is "approve".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approver {
    pub actor: Actor,
    /// The approver's display name where the forge reports it (GitLab), to match against
    /// the names written in commits.
    pub name: Option<String>,
    /// The head the approval was given on, where the forge records it. GitLab records
    /// none; it reports `Some(head)` only when the project drops approvals on push.
    pub commit: Option<String>,
}

/// The approvals in force on a change request, and what the forge's own approval rules
/// still want: cascade's rule (an approval that counts) and the forge's must both hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Approvals {
    pub approvers: Vec<Approver>,
    /// Approvals the forge's own rules still require (GitLab's `approvals_left` while it
    /// says `approved: false`); 0 when the forge has no such rule or it is met. GitHub's
    /// required reviews show in its mergeable state instead.
    pub still_required: u64,
}

/// One commit of a change request (since its base), with the people the forge says
/// wrote and committed it: who must not approve it, unless the repository allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    /// Its author and committer, as far as the forge knows them (none: linked to nobody).
    pub people: Vec<CommitPerson>,
}

/// Someone a commit names as its author or committer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitPerson {
    /// An account the forge linked the commit to (GitHub's `author.login` and
    /// `committer.login`, from the commit's verified email addresses).
    Account(String),
    /// A name and email as written in the commit, linked to no account (GitLab's
    /// `author_name`, `author_email`, `committer_name`, `committer_email`). Whoever made
    /// the commit wrote them: they may name anybody.
    Written { name: String, email: String },
}

/// Whether an actor belongs to a team (GitHub `org/slug`) or group (GitLab path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    Member,
    NotMember,
    /// The forge refused to say (GitHub: the App lacks Organization → Members read).
    Unreadable,
}

/// How commands and change requests are written on a forge, so every reply, template
/// and help text reads right where it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    /// What starts a command in help and replies: `/` on GitHub, `cascade ` on GitLab
    /// (where GitLab's own quick actions take `/unlock` first). Both are read on both.
    pub command_prefix: &'static str,
    /// `pull request` or `merge request`.
    pub change_request: &'static str,
    /// `#` or `!` before a number.
    pub ref_sigil: char,
    /// The forge itself, for what only one of them has (a GitHub App, a project's webhook).
    pub forge: ForgeKind,
}

impl Spelling {
    pub const GITHUB: Spelling = Spelling {
        command_prefix: "/",
        change_request: "pull request",
        ref_sigil: '#',
        forge: ForgeKind::GitHub,
    };
    pub const GITLAB: Spelling = Spelling {
        command_prefix: "cascade ",
        change_request: "merge request",
        ref_sigil: '!',
        forge: ForgeKind::GitLab,
    };

    /// The change request's short name: `PR` or `MR`.
    pub fn abbreviation(&self) -> String {
        self.change_request
            .split(' ')
            .filter_map(|word| word.chars().next())
            .map(|c| c.to_ascii_uppercase())
            .collect()
    }

    /// `command` (`apply 3f9a…`) as a user types it here.
    pub fn command(&self, command: &str) -> String {
        format!("{}{command}", self.command_prefix)
    }
}

impl ForgeKind {
    pub fn spelling(self) -> &'static Spelling {
        match self {
            ForgeKind::GitHub => &Spelling::GITHUB,
            ForgeKind::GitLab => &Spelling::GITLAB,
        }
    }

    /// Whether this forge's check shows [`CheckOutput::text`] (GitHub's check runs do;
    /// a GitLab commit status has a one-line description only).
    pub fn check_shows_text(self) -> bool {
        self == ForgeKind::GitHub
    }

    /// The web page of `path` (repo-relative) at commit `sha`, at `line` when given, in
    /// the repository whose web page is `web_url`: `<web_url>/blob/<sha>/<path>#L<line>`
    /// on GitHub, `<web_url>/-/blob/…` on GitLab. `None` unless `web_url` is an http(s)
    /// URL without query or fragment and `sha` a commit id: what comes back is safe as a
    /// Markdown link destination written `<…>` (no space, `<`, `>` or line break).
    pub fn file_url(
        self,
        web_url: &str,
        sha: &str,
        path: &str,
        line: Option<u32>,
    ) -> Option<String> {
        let base = url::Url::parse(web_url).ok()?;
        let plain = matches!(base.scheme(), "https" | "http")
            && base.host_str().is_some()
            && base.query().is_none()
            && base.fragment().is_none();
        let commit = matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit());
        if !plain || !commit {
            return None;
        }
        let blob = match self {
            ForgeKind::GitHub => "blob",
            ForgeKind::GitLab => "-/blob",
        };
        let mut url = base;
        url.path_segments_mut()
            .ok()?
            .pop_if_empty()
            .extend(blob.split('/'))
            .push(sha)
            .extend(path.split('/'));
        if let Some(line) = line {
            url.set_fragment(Some(&format!("L{line}")));
        }
        let text = url.to_string();
        (!text.contains(['<', '>', ' ', '\n', '\r'])).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_point_at_a_line_of_a_commit() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            ForgeKind::GitHub.file_url(
                "https://github.com/acme/infra",
                sha,
                ".cascade.yaml",
                Some(3)
            ),
            Some(format!(
                "https://github.com/acme/infra/blob/{sha}/.cascade.yaml#L3"
            ))
        );
        assert_eq!(
            ForgeKind::GitLab.file_url(
                "https://gitlab.example.com/g/sub/p/",
                sha,
                ".cascade.yaml",
                None
            ),
            Some(format!(
                "https://gitlab.example.com/g/sub/p/-/blob/{sha}/.cascade.yaml"
            ))
        );
        // Enterprise roots keep their path.
        assert_eq!(
            ForgeKind::GitHub.file_url(
                "https://ghe.example/acme/infra",
                sha,
                "a b/<c>.yaml",
                Some(1)
            ),
            Some(format!(
                "https://ghe.example/acme/infra/blob/{sha}/a%20b/%3Cc%3E.yaml#L1"
            ))
        );
    }

    #[test]
    fn odd_roots_and_shas_give_no_link() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        for root in [
            "javascript:alert(1)",
            "https://x/y?a=b",
            "https://x/y#z",
            "not a url",
            "file:///etc",
        ] {
            assert_eq!(
                ForgeKind::GitHub.file_url(root, sha, "f", None),
                None,
                "{root}"
            );
        }
        assert_eq!(
            ForgeKind::GitHub.file_url("https://github.com/a/b", "main", "f", None),
            None
        );
        assert_eq!(
            ForgeKind::GitHub.file_url("https://github.com/a/b", "", "f", None),
            None
        );
    }
}

/// The default branch of a repository and its head, as the forge reports them now: what a
/// drift run checks out and plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultBranch {
    /// The branch name, without `refs/heads/`.
    pub name: String,
    /// The commit the branch points at.
    pub sha: String,
    /// Where the repository is fetched from: the API's answer, at the forge's origin.
    pub clone_url: super::CloneUrl,
}

/// A title or body longer than the forge stores, refused before any request is made
/// (a write the forge would refuse is never spent). Callers may downcast an
/// `anyhow::Error` to this to shorten what they send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the issue {field} is {chars} characters long and the forge stores at most {limit}; \
     shorten it (for a body, split it under `Forge::comment_limit()`)"
)]
pub struct TooLong {
    /// `title`, `body` or `comment`.
    pub field: &'static str,
    pub chars: usize,
    pub limit: usize,
}

impl TooLong {
    /// `Err(TooLong)` when `text` has more than `limit` characters.
    pub fn check(field: &'static str, text: &str, limit: usize) -> Result<(), TooLong> {
        let chars = text.chars().count();
        if chars > limit {
            Err(TooLong {
                field,
                chars,
                limit,
            })
        } else {
            Ok(())
        }
    }
}
