//! Merging a pull request of the bot's world as GitHub's merge button does: a real merge
//! commit on the origin's `main`, the pull request marked merged with it, and the
//! `pull_request` `closed` event with `merged: true`; and announcing a review.

use super::bot_world::{REPO, World, git_out, push};

impl World {
    /// Merges pull request `number` (head `head`) into `main` with a merge commit
    /// ("Create a merge commit"), pushes `main` and sends `closed`; the merge commit.
    pub async fn merge_pr(&self, number: u64, head: &str) -> String {
        let merge = self.merge_commit(number, head);
        assert_eq!(self.send_pr(number, "closed").await, 202);
        merge
    }

    /// [`World::merge_pr`] without the event: the merge commit.
    pub fn merge_commit(&self, number: u64, head: &str) -> String {
        let dir = self.work.path();
        git_out(dir, &["checkout", "-q", "main"]);
        git_out(
            dir,
            &[
                "merge",
                "-q",
                "--no-ff",
                "-m",
                &format!("Merge pull request #{number}"),
                head,
            ],
        );
        let merge = push(self, "main");
        self.fake.merge_pull_request(REPO, number, &merge);
        merge
    }

    /// `user` approves pull request `number` and GitHub sends `pull_request_review`.
    pub async fn approve_with_event(&self, number: u64, user: &str) {
        self.fake.approve(REPO, number, user);
        let status = self
            .fake
            .pull_request_review_event(REPO, number)
            .post(&self.hook())
            .await
            .status();
        assert_eq!(status, 202);
    }
}
