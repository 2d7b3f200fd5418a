//! A merge request's commits (`GET /projects/:id/merge_requests/:iid/commits`), with
//! the names and emails written in them: GitLab links a commit to no user in this API,
//! so the bot matches them against approvers itself. Nothing here decides whose
//! approval counts.

use anyhow::Context as _;
use gitlab::api::projects::merge_requests::MergeRequestCommits;
use serde::Deserialize;

use super::{Project, built};
use crate::forge::types::{Commit, CommitPerson};

/// One item of the listing; see
/// <https://docs.gitlab.com/api/merge_requests/#get-single-merge-request-commits>.
#[derive(Deserialize)]
pub(crate) struct WireCommit {
    id: String,
    #[serde(default)]
    author_name: String,
    #[serde(default)]
    author_email: String,
    #[serde(default)]
    committer_name: String,
    #[serde(default)]
    committer_email: String,
}

impl From<WireCommit> for Commit {
    fn from(c: WireCommit) -> Self {
        let mut people = Vec::new();
        for (name, email) in [
            (c.author_name, c.author_email),
            (c.committer_name, c.committer_email),
        ] {
            let person = CommitPerson::Written { name, email };
            if !people.contains(&person) {
                people.push(person);
            }
        }
        Commit { sha: c.id, people }
    }
}

impl Project {
    /// The merge request's commits, as GitLab lists them (every page), with the author
    /// and committer written in each.
    pub async fn commits(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Commit>> {
        let endpoint = MergeRequestCommits::builder()
            .project(self.id)
            .merge_request(number)
            .build()
            .map_err(built)?;
        let call = self.inner.transport.call("merge_requests.commits");
        let commits: Vec<WireCommit> = self
            .inner
            .list(&call, endpoint)
            .await
            .with_context(|| format!("could not read the commits of {repo}!{number}"))?;
        Ok(commits.into_iter().map(Commit::from).collect())
    }
}
