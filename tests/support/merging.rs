//! Merging a pull request of the bot's world as GitHub's merge button does: a real merge
//! commit on the origin's `main`, the pull request marked merged with it, and the
//! `pull_request` `closed` event with `merged: true`; and announcing a review.

use super::bot_world::{REPO, World, git_out, push};
use super::fake_github::{FileChange, PrSpec};

impl World {
    /// A pull request by `author` from `branch`, made off the base, with a line added to
    /// `file`, opened and planned: its number and head.
    pub async fn open_changing(&self, author: &str, branch: &str, file: &str) -> (u64, String) {
        let w = self;
        let dir = w.work.path();
        git_out(dir, &["checkout", "-q", "-B", branch, &w.base_sha]);
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n# {branch}\n")).unwrap();
        git_out(dir, &["commit", "-qam", branch]);
        let head = push(w, branch);
        let n = w.fake.open_pull_request(
            REPO,
            PrSpec {
                author: author.into(),
                head_ref: branch.into(),
                head_sha: head.clone(),
                base_ref: "main".into(),
                base_sha: w.base_sha.clone(),
                files: vec![FileChange::modified(file)],
                ..PrSpec::default()
            },
        );
        w.send_pr(n, "opened").await;
        w.until("the plan", |w| w.checks_done(&head)).await;
        (n, head)
    }

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

    /// Queues pull request `number` (head `head`) as GitHub's merge queue does: the branch
    /// `gh-readonly-queue/main/pr-<n>-<base>` holds `main` with the pull request merged
    /// ("Merge pull request #n"), and `merge_group` asks for checks on it; its head.
    pub async fn queue_pr(&self, number: u64, head: &str) -> String {
        let dir = self.work.path();
        let base = git_out(dir, &["rev-parse", "main"]);
        let branch = crate::support::fake_github::queue_branch(number, &base);
        git_out(dir, &["checkout", "-q", "-B", &branch, "main"]);
        // Each group its own commit, as GitHub makes one per queue entry: a group made
        // again within the same second must not be the same commit as the last.
        static GROUPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nth = GROUPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let message = format!("Merge pull request #{number} from acme/queued\n\ngroup {nth}");
        git_out(dir, &["merge", "-q", "--no-ff", "-m", &message, head]);
        let group = push(self, &branch);
        git_out(dir, &["checkout", "-q", "main"]);
        let status = self
            .fake
            .merge_group_event(REPO, number, &group, &base)
            .post(&self.hook())
            .await
            .status();
        assert_eq!(status, 202);
        group
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
