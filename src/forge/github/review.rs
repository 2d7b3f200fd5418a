//! Which approvals are in force on a pull request, read from GitHub's reviews. It owns
//! GitHub's review states (what counts as a reviewer's word, which word is the latest);
//! whether an approval is enough to apply is the bot's rule and is never decided here.

use std::collections::BTreeMap;

use super::{Installation, Review};
use crate::forge::types::{Actor, Approver};

impl Installation {
    /// The reviewers whose latest word on the pull request is an approval, each with the
    /// head they approved, ordered by login (case-insensitive).
    pub async fn approvers(&self, repo: &str, number: u64) -> anyhow::Result<Vec<Approver>> {
        Ok(latest_approvals(&self.reviews(repo, number).await?))
    }
}

/// A comment or a review still being written is no verdict, so the review that counts
/// is each reviewer's latest other one; it approves only when it is `APPROVED` (a later
/// `CHANGES_REQUESTED` or `DISMISSED` withdraws an approval).
fn latest_approvals(reviews: &[Review]) -> Vec<Approver> {
    let mut latest: BTreeMap<String, &Review> = BTreeMap::new();
    for review in reviews {
        if !matches!(review.state.as_str(), "COMMENTED" | "PENDING") {
            latest.insert(review.author.to_ascii_lowercase(), review);
        }
    }
    latest
        .into_values()
        .filter(|review| review.state == "APPROVED")
        .map(|review| Approver {
            actor: Actor {
                id: None,
                login: review.author.clone(),
            },
            name: None,
            commit: Some(review.commit_id.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(author: &str, state: &str, commit: &str) -> Review {
        Review {
            author: author.into(),
            state: state.into(),
            commit_id: commit.into(),
        }
    }

    #[test]
    fn only_a_reviewers_latest_verdict_counts_and_comments_are_no_verdict() {
        let reviews = [
            review("Bob", "APPROVED", "a1"),
            review("bob", "COMMENTED", "b2"),
            review("carol", "APPROVED", "a1"),
            review("carol", "CHANGES_REQUESTED", "b2"),
            review("dave", "CHANGES_REQUESTED", "a1"),
            review("dave", "APPROVED", "b2"),
            review("erin", "APPROVED", "b2"),
            review("erin", "PENDING", "b2"),
            review("frank", "DISMISSED", "b2"),
        ];
        let approvers = latest_approvals(&reviews);
        let shown: Vec<(&str, Option<&str>)> = approvers
            .iter()
            .map(|a| (a.actor.login.as_str(), a.commit.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Bob", Some("a1")),
                ("dave", Some("b2")),
                ("erin", Some("b2"))
            ]
        );
    }
}
