//! A pull request's commits and the accounts GitHub links them to
//! (`GET /repos/{o}/{r}/pulls/{n}/commits`): who wrote and who committed each, as the
//! bot needs them to tell whose approval counts. It owns GitHub's shapes and quirks
//! (unlinked people are `null`, web commits are committed by `web-flow`, at most 250
//! commits are listed); it never decides whose approval counts.

use serde::Deserialize;

use super::types::WireUser;
use super::{Installation, repo_path};
use crate::forge::types::{Commit, CommitPerson};

/// GitHub lists at most this many commits of a pull request.
pub const PULL_REQUEST_COMMITS_CAP: usize = 250;

/// The committer GitHub records for commits made in its web interface (an edit, a
/// merge of the base, a suggestion applied): GitHub itself, not a person.
const WEB_FLOW: &str = "web-flow";

/// One item of the listing; see
/// <https://docs.github.com/en/rest/pulls/pulls#list-commits-on-a-pull-request>.
#[derive(Deserialize)]
pub(crate) struct WireCommit {
    sha: String,
    /// `null` when the author's email belongs to no account.
    author: Option<WireUser>,
    /// `null` when the committer's email belongs to no account.
    committer: Option<WireUser>,
}

impl From<WireCommit> for Commit {
    fn from(c: WireCommit) -> Self {
        let logins = [c.author, c.committer]
            .into_iter()
            .flatten()
            .map(|u| u.login);
        let mut people = Vec::new();
        for login in logins.filter(|login| login != WEB_FLOW) {
            let person = CommitPerson::Account(login);
            if !people.contains(&person) {
                people.push(person);
            }
        }
        Commit { sha: c.sha, people }
    }
}

impl Installation {
    /// The pull request's commits, oldest first, with the accounts GitHub links their
    /// author and committer to. GitHub lists at most 250: a pull request with that many
    /// or more is an error, since who made the rest cannot be told.
    pub async fn commits(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Commit>> {
        let path = format!("{}/pulls/{number}/commits?per_page=100", repo_path(repo)?);
        let commits = self
            .get_all::<Commit, WireCommit>("pulls.commits", path, usize::MAX)
            .await?;
        anyhow::ensure!(
            commits.len() < PULL_REQUEST_COMMITS_CAP,
            "GitHub lists at most {PULL_REQUEST_COMMITS_CAP} commits of a pull request, and \
             {repo}#{number} has that many or more: who made the rest cannot be read"
        );
        Ok(commits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_authors_and_committers_count_once_and_web_flow_never() {
        let commit: WireCommit = serde_json::from_value(serde_json::json!({
            "sha": "abc",
            "author": { "login": "carol" },
            "committer": { "login": "web-flow" },
        }))
        .unwrap();
        assert_eq!(
            Commit::from(commit).people,
            [CommitPerson::Account("carol".into())]
        );
        let commit: WireCommit = serde_json::from_value(serde_json::json!({
            "sha": "def",
            "author": null,
            "committer": { "login": "bob" },
        }))
        .unwrap();
        assert_eq!(
            Commit::from(commit).people,
            [CommitPerson::Account("bob".into())]
        );
        let commit: WireCommit = serde_json::from_value(serde_json::json!({
            "sha": "fed", "author": { "login": "bob" }, "committer": { "login": "bob" },
        }))
        .unwrap();
        assert_eq!(
            Commit::from(commit).people,
            [CommitPerson::Account("bob".into())]
        );
    }
}
