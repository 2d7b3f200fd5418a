//! GitHub's answers in the forge-neutral types the bot decides on (`forge::types`): a
//! pull request as a `PullRequest` (with GitHub's mergeability read here), the App's
//! own comments, the check run, a user's right to write and a team membership. Nothing
//! here decides what to do with an answer.

use super::{ApiError, CheckOutput, Installation, PullRequestInfo};
use crate::forge::origin::GitCredential;
use crate::forge::types::{Actor, ForgeRef, Membership, Mergeable, OwnComment};
use crate::forge::{PrNumber, PullRequest, answered_sha};

impl Installation {
    /// The pull request as the flows need it.
    pub async fn change_request(&self, repo: &str, number: u64) -> anyhow::Result<PullRequest> {
        let pr = self.pull_request(repo, number).await?;
        // `blocked` with no conflict: cascade's own check may be all that blocks.
        let gate = if pr.mergeable_state == "blocked" && pr.mergeable != Some(false) {
            Some(self.merge_gate(repo, number, &pr.base_ref).await?)
        } else {
            None
        };
        let mut cr = change_request(pr, self.id())?;
        if let Some(gate) = gate {
            cr.mergeable = Some(gate);
        }
        Ok(cr)
    }

    /// The App's own comments on the pull request, oldest first: those GitHub says it
    /// posted (`performed_via_github_app`), never a user's copy of one.
    pub async fn own_comments(&self, repo: &str, number: u64) -> anyhow::Result<Vec<OwnComment>> {
        let app_id = self.app_id();
        Ok(self
            .comments(repo, number)
            .await?
            .into_iter()
            .filter(|c| c.via_app == Some(app_id))
            .map(|c| OwnComment {
                id: c.id,
                body: c.body,
                created_at: c.created_at,
            })
            .collect())
    }

    /// Updates check run `existing`, or creates the `cascade` check run on `head_sha`;
    /// returns the run's id.
    pub async fn set_check(
        &self,
        repo: &str,
        head_sha: &str,
        existing: Option<u64>,
        output: &CheckOutput,
    ) -> anyhow::Result<u64> {
        match existing {
            Some(id) => {
                self.update_check_run(repo, id, output).await?;
                Ok(id)
            }
            None => self.create_check_run(repo, head_sha, output).await,
        }
    }

    /// May push to `repo` (and so may apply). Fails closed.
    pub async fn may_write(&self, repo: &str, actor: &Actor) -> bool {
        self.permission(repo, &actor.login).await.can_write()
    }

    /// Whether `actor` is an active member of `team` (`org/slug`). A 403 means the App
    /// lacks the Organization → Members read permission: `Unreadable`.
    pub async fn membership(&self, team: &str, actor: &Actor) -> anyhow::Result<Membership> {
        let (org, slug) = team
            .split_once('/')
            .ok_or_else(|| anyhow::anyhow!("{team:?} is not a team of the form org/slug"))?;
        if slug.contains('/') {
            // A GitLab group's path (with subgroups) names no GitHub team: nobody is in it.
            return Ok(Membership::NotMember);
        }
        match self.is_team_member(org, slug, &actor.login).await {
            Ok(true) => Ok(Membership::Member),
            Ok(false) => Ok(Membership::NotMember),
            Err(error)
                if error
                    .downcast_ref::<ApiError>()
                    .is_some_and(|e| e.status == 403) =>
            {
                tracing::warn!(
                    team,
                    user = actor.login,
                    error = format!("{error:#}"),
                    "cannot read a team membership"
                );
                Ok(Membership::Unreadable)
            }
            Err(error) => Err(error),
        }
    }

    /// The installation token for `git fetch` (user `x-access-token`), bound to GitHub's
    /// git origin.
    pub async fn git_credential(&self) -> anyhow::Result<GitCredential> {
        let token = self.transport.token(self.id).await?;
        Ok(GitCredential::new(self.origin.clone(), token))
    }
}

/// GitHub merges when the state is `clean`, or says only non-required checks fail
/// (`unstable`) or hooks run (`has_hooks`); `mergeable: true` alone says only that there
/// is no conflict. `blocked` is judged by [`super::merge_gate`], which replaces the
/// answer here.
fn change_request(pr: PullRequestInfo, installation: u64) -> anyhow::Result<PullRequest> {
    let mergeable = if matches!(
        pr.mergeable_state.as_str(),
        "clean" | "unstable" | "has_hooks"
    ) {
        Mergeable::Yes
    } else if pr.mergeable.is_none() {
        Mergeable::Unknown {
            state: pr.mergeable_state,
        }
    } else {
        Mergeable::No {
            state: pr.mergeable_state,
        }
    };
    Ok(PullRequest {
        forge: ForgeRef::GitHub { installation },
        number: PrNumber::new(pr.number),
        head_sha: answered_sha("head", &pr.head_sha)?,
        head_ref: pr.head_ref,
        base_sha: Some(answered_sha("base", &pr.base_sha)?),
        base_ref: pr.base_ref,
        draft: pr.draft,
        fork: pr.fork,
        author: Some(pr.author),
        open: pr.state == "open",
        mergeable: Some(mergeable),
        web_url: pr.base_web_url,
        pusher: None,
        labels: Some(pr.labels),
        merge_commit: pr
            .merge_commit_sha
            .as_deref()
            .map(|sha| answered_sha("merge commit", sha))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(mergeable: Option<bool>, state: &str) -> PullRequestInfo {
        PullRequestInfo {
            number: 7,
            head_sha: "a".repeat(40),
            head_ref: "feature".into(),
            base_sha: "b".repeat(40),
            base_ref: "main".into(),
            draft: false,
            mergeable,
            mergeable_state: state.into(),
            author: "alice".into(),
            fork: false,
            state: "open".into(),
            merged: false,
            base_web_url: None,
            labels: Vec::new(),
            merge_commit_sha: None,
        }
    }

    #[test]
    fn mergeability_is_read_from_the_flag_and_the_state() {
        let read = |m, s| change_request(pull(m, s), 1).unwrap().mergeable.unwrap();
        // No conflict says nothing about requirements: `merge_gate` judges `blocked`.
        assert_eq!(
            read(Some(true), "blocked"),
            Mergeable::No {
                state: "blocked".into()
            }
        );
        for state in ["clean", "unstable", "has_hooks"] {
            assert_eq!(read(Some(false), state), Mergeable::Yes);
        }
        assert_eq!(
            read(Some(false), "dirty"),
            Mergeable::No {
                state: "dirty".into()
            }
        );
        assert_eq!(
            read(None, "unknown"),
            Mergeable::Unknown {
                state: "unknown".into()
            }
        );
        let cr = change_request(pull(Some(true), "clean"), 1).unwrap();
        assert!(cr.open);
    }
}
