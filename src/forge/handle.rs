//! The forge seam: [`Forge`], one change request's repository on whichever forge it lives
//! on, and [`Forges`], the clients this server was started with. Every method answers in
//! `forge::types` and forwards to that forge's client with a `match`; it carries requests
//! and never decides (who may apply, what to post and when are the bot's). An enum, not a
//! trait: no fourth seam to mock, no boxing of async calls (STYLE.md, like `AnyStore`).

use std::sync::Arc;

use arc_swap::ArcSwapOption;

use super::PullRequest;
use super::github::{self, GitHubApp};
use super::gitlab::{self, GitLab};
use super::origin::GitCredential;
use super::types::{
    Actor, Approvals, CheckOutput, Commit, DefaultBranch, ForgeKind, ForgeRef, Membership,
    OwnComment, Spelling, TooLong,
};
use crate::forge::github::COMMENT_LIMIT;

/// The forge clients a server runs with; each is optional. The GitHub App can
/// arrive while the server runs (the setup page creates it), so it is swapped
/// in, never rebuilt: handles opened before keep the client they were given.
#[derive(Default)]
pub struct Forges {
    github: ArcSwapOption<GitHubApp>,
    pub gitlab: Option<Arc<GitLab>>,
}

impl Forges {
    pub fn new(github: Option<Arc<GitHubApp>>, gitlab: Option<Arc<GitLab>>) -> Forges {
        Forges {
            github: ArcSwapOption::new(github),
            gitlab,
        }
    }

    /// Serves `app` from now on (the setup page created it).
    pub fn set_github(&self, app: Arc<GitHubApp>) {
        self.github.store(Some(app));
    }

    /// The GitHub App served now, if any.
    pub fn github(&self) -> Option<Arc<GitHubApp>> {
        self.github.load_full()
    }

    /// The handle answering for `at`. No request is made.
    pub async fn open(&self, at: ForgeRef) -> anyhow::Result<Forge> {
        match at {
            ForgeRef::GitHub { installation } => {
                let app = self.github().ok_or_else(|| {
                    anyhow::anyhow!(
                        "this server has no GitHub App configured; create one at /setup (a server started \
                         without forges), or start it with --github-app-id, \
                         --github-private-key-file and --github-webhook-secret-file to serve GitHub"
                    )
                })?;
                Ok(Forge::GitHub(app.installation(installation).await?))
            }
            ForgeRef::GitLab { project_id } => {
                let client = self.gitlab.as_ref().ok_or_else(|| {
                    anyhow::anyhow!(
                        "this server has no GitLab configured; start it with --gitlab-url, \
                         --gitlab-token-file and --gitlab-webhook-secret-file to serve GitLab"
                    )
                })?;
                Ok(Forge::GitLab(client.project(project_id)))
            }
        }
    }
}

/// One repository's forge, as the flows talk to it. `repo` is the store's key for the
/// repository (`owner/name` on GitHub); `number` is the pull request's number.
#[derive(Clone)]
pub enum Forge {
    GitHub(github::Installation),
    GitLab(gitlab::Project),
}

impl Forge {
    pub fn kind(&self) -> ForgeKind {
        match self {
            Forge::GitHub(_) => ForgeKind::GitHub,
            Forge::GitLab(_) => ForgeKind::GitLab,
        }
    }

    /// Where this handle's answers come from, to keep with jobs and in the store.
    pub fn at(&self) -> ForgeRef {
        match self {
            Forge::GitHub(inst) => ForgeRef::GitHub {
                installation: inst.id(),
            },
            Forge::GitLab(project) => ForgeRef::GitLab {
                project_id: project.id(),
            },
        }
    }

    /// How commands and change requests are written here.
    pub fn spelling(&self) -> &'static Spelling {
        self.kind().spelling()
    }

    /// The longest comment the forge stores, in characters.
    pub fn comment_limit(&self) -> usize {
        match self {
            Forge::GitHub(_) => COMMENT_LIMIT,
            Forge::GitLab(project) => project.comment_limit(),
        }
    }

    /// The longest issue title the forge stores, in characters (GitHub 256, GitLab 255);
    /// an issue body is bounded by [`Forge::comment_limit`].
    pub fn issue_title_limit(&self) -> usize {
        match self {
            Forge::GitHub(_) => github::ISSUE_TITLE_LIMIT,
            Forge::GitLab(_) => gitlab::ISSUE_TITLE_LIMIT,
        }
    }

    /// Where a fork's head can be fetched from in the base repository.
    pub fn fork_head_ref(&self, number: u64) -> String {
        match self {
            Forge::GitHub(_) => format!("refs/pull/{number}/head"),
            Forge::GitLab(project) => project.fork_head_ref(number),
        }
    }

    pub async fn change_request(&self, repo: &str, number: u64) -> anyhow::Result<PullRequest> {
        match self {
            Forge::GitHub(inst) => inst.change_request(repo, number).await,
            Forge::GitLab(p) => p.change_request(repo, number).await,
        }
    }

    /// cascade's own comments on the change request, oldest first.
    pub async fn own_comments(&self, repo: &str, number: u64) -> anyhow::Result<Vec<OwnComment>> {
        match self {
            Forge::GitHub(inst) => inst.own_comments(repo, number).await,
            Forge::GitLab(p) => p.own_comments(repo, number).await,
        }
    }

    /// Posts a comment and returns its id; safe to retry after a server error (the
    /// client looks for the comment before posting it again).
    pub async fn create_comment(&self, repo: &str, number: u64, body: &str) -> anyhow::Result<u64> {
        match self {
            Forge::GitHub(inst) => Ok(inst.create_comment(repo, number, body).await?.id),
            Forge::GitLab(p) => p.create_comment(repo, number, body).await,
        }
    }

    pub async fn edit_comment(
        &self,
        repo: &str,
        number: u64,
        id: u64,
        body: &str,
    ) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.update_comment(repo, id, body).await,
            Forge::GitLab(p) => p.edit_comment(repo, number, id, body).await,
        }
    }

    /// Deletes one of cascade's comments; one already gone counts as deleted.
    pub async fn delete_comment(&self, repo: &str, number: u64, id: u64) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.delete_comment(repo, id).await,
            Forge::GitLab(p) => p.delete_comment(repo, number, id).await,
        }
    }

    /// Says "seen, working on it" on a command's comment (an `eyes` reaction).
    pub async fn acknowledge(
        &self,
        repo: &str,
        number: u64,
        comment_id: u64,
    ) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.react(repo, comment_id, "eyes").await,
            Forge::GitLab(p) => p.acknowledge(repo, number, comment_id).await,
        }
    }

    /// Sets cascade's check on `head_sha`: updates `existing` (the id this returned
    /// before, for the same head) or starts a new one. Returns the id to keep.
    pub async fn set_check(
        &self,
        repo: &str,
        number: u64,
        head_sha: &str,
        head_ref: &str,
        existing: Option<u64>,
        output: &CheckOutput,
    ) -> anyhow::Result<u64> {
        match self {
            Forge::GitHub(inst) => inst.set_check(repo, head_sha, existing, output).await,
            Forge::GitLab(p) => {
                p.set_check(repo, number, head_sha, head_ref, existing, output)
                    .await
            }
        }
    }

    /// May `actor` write to the repository (the default right to apply). Fails closed:
    /// an answer the forge did not give is `false`.
    pub async fn may_write(&self, repo: &str, actor: &Actor) -> bool {
        match self {
            Forge::GitHub(inst) => inst.may_write(repo, actor).await,
            Forge::GitLab(p) => p.may_write(repo, actor).await,
        }
    }

    /// Whether `actor` belongs to `team` (GitHub `org/slug`).
    pub async fn membership(&self, team: &str, actor: &Actor) -> anyhow::Result<Membership> {
        match self {
            Forge::GitHub(inst) => inst.membership(team, actor).await,
            Forge::GitLab(p) => p.membership(team, actor).await,
        }
    }

    /// The approvals in force on the change request `cr`, the author's included (the
    /// bot applies its rules to them), and what the forge's own rules still want.
    pub async fn approvals(
        &self,
        repo: &str,
        number: u64,
        cr: &PullRequest,
    ) -> anyhow::Result<Approvals> {
        match self {
            Forge::GitHub(inst) => Ok(Approvals {
                approvers: inst.approvers(repo, number).await?,
                still_required: 0,
            }),
            Forge::GitLab(p) => p.approvals(repo, number, cr).await,
        }
    }

    /// The change request's commits since its base, in the forge's order, with who wrote and
    /// committed each as the forge knows them. A listing the forge cuts short (GitHub
    /// lists at most 250) is an error, never a shorter list.
    pub async fn commits(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Commit>> {
        match self {
            Forge::GitHub(inst) => inst.commits(repo, number).await,
            Forge::GitLab(p) => p.commits(repo, number).await,
        }
    }

    /// Whether `actor` is cascade itself (GitLab: the token's own user, by id). GitHub's
    /// App comments are told apart on the event already (a bot account).
    pub async fn is_self(&self, actor: &Actor) -> bool {
        match self {
            Forge::GitHub(_) => false,
            Forge::GitLab(p) => p.is_self(actor).await,
        }
    }

    /// The credential `git fetch` sends (as HTTP Basic password, in a header), bound to
    /// the forge's git origin: `workspace` sends it nowhere else.
    pub async fn git_credential(&self) -> anyhow::Result<GitCredential> {
        match self {
            Forge::GitHub(inst) => inst.git_credential().await,
            Forge::GitLab(p) => p.git_credential().await,
        }
    }

    // ---- the default branch and the one issue a drift run keeps per repository ----

    /// The default branch, its head commit and clone URL, as the forge has them now (the
    /// clone URL only at the forge's configured origin: anything else is an error).
    pub async fn default_branch(&self, repo: &str) -> anyhow::Result<DefaultBranch> {
        match self {
            Forge::GitHub(inst) => inst.default_branch(repo).await,
            Forge::GitLab(p) => p.default_branch(repo).await,
        }
    }

    /// Opens an issue; returns its number (GitLab: its iid). A title or body longer than
    /// the forge stores (GitHub 256 / 65,536 characters, GitLab 255 / 1,000,000) is
    /// refused with [`TooLong`] before any request. Safe to retry after a server error
    /// (the client looks for the issue before opening it again).
    pub async fn create_issue(&self, repo: &str, title: &str, body: &str) -> anyhow::Result<u64> {
        match self {
            Forge::GitHub(inst) => inst.create_issue(repo, title, body).await,
            Forge::GitLab(p) => p.create_issue(repo, title, body).await,
        }
    }

    /// Replaces an issue's title and body; too long is [`TooLong`], as for
    /// [`Forge::create_issue`].
    pub async fn edit_issue(
        &self,
        repo: &str,
        number: u64,
        title: &str,
        body: &str,
    ) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.edit_issue(repo, number, title, body).await,
            Forge::GitLab(p) => p.edit_issue(repo, number, title, body).await,
        }
    }

    /// Closes (`open: false`, as completed) or reopens an issue. Asking for the state
    /// it is in already changes nothing and is no error.
    pub async fn set_issue_open(&self, repo: &str, number: u64, open: bool) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.set_issue_open(repo, number, open).await,
            Forge::GitLab(p) => p.set_issue_open(repo, number, open).await,
        }
    }

    /// Whether issue `number` is open; `None` when it is not an issue of this
    /// repository any more: never was, deleted, moved or transferred elsewhere, or (on
    /// GitHub) the number is a pull request's. The caller opens a new one then.
    pub async fn issue_open(&self, repo: &str, number: u64) -> anyhow::Result<Option<bool>> {
        match self {
            Forge::GitHub(inst) => inst.issue_open(repo, number).await,
            Forge::GitLab(p) => p.issue_open(repo, number).await,
        }
    }

    /// Posts a comment (GitLab: a note) on an issue and returns its id. Longer than
    /// [`Forge::comment_limit`] is [`TooLong`] before any request; safe to retry after a
    /// server error, like [`Forge::create_comment`].
    pub async fn comment_on_issue(
        &self,
        repo: &str,
        number: u64,
        body: &str,
    ) -> anyhow::Result<u64> {
        match self {
            Forge::GitHub(inst) => {
                TooLong::check("comment", body, COMMENT_LIMIT)?;
                Ok(inst.create_comment(repo, number, body).await?.id)
            }
            Forge::GitLab(p) => p.comment_on_issue(repo, number, body).await,
        }
    }

    /// Says "seen, working on it" on a command's comment on an issue (an `eyes`
    /// reaction, or award emoji on GitLab); twice is no error.
    pub async fn acknowledge_issue_comment(
        &self,
        repo: &str,
        number: u64,
        comment_id: u64,
    ) -> anyhow::Result<()> {
        match self {
            Forge::GitHub(inst) => inst.react(repo, comment_id, "eyes").await,
            Forge::GitLab(p) => p.acknowledge_issue_comment(repo, number, comment_id).await,
        }
    }
}
