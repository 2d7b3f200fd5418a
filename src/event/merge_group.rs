//! GitHub's `merge_group` event: a merge queue built a group and wants its required
//! checks on the group's head
//! (https://docs.github.com/en/webhooks/webhook-events-and-payloads#merge_group).
//! Only `checks_requested` is acted on; `destroyed` (the group merged, failed or was
//! removed) is ignored.

use super::{Event, InstallationId, RepoRef, Sha};
use serde::Deserialize;

/// A merge group whose checks GitHub asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeGroupEvent {
    pub installation: Option<InstallationId>,
    pub repository: RepoRef,
    /// The group's head: the base with the queued pull requests merged, the commit the
    /// check is reported on.
    pub head_sha: Sha,
    /// `gh-readonly-queue/<base>/pr-<number>-<sha>`, without `refs/heads/`: its number is
    /// the pull request that entered the queue last.
    pub head_ref: String,
    pub base_sha: Sha,
    /// The branch the group merges into, without `refs/heads/`.
    pub base_ref: String,
}

impl MergeGroupEvent {
    /// The pull request whose entry made this group, read from the head branch's name.
    pub fn entering(&self) -> Option<u64> {
        let name = self.head_ref.rsplit('/').next()?;
        let rest = name.strip_prefix("pr-")?;
        let (number, _) = rest.split_once('-')?;
        number.parse().ok().filter(|n| *n > 0)
    }
}

#[derive(Deserialize)]
pub(super) struct MergeGroupPayload {
    merge_group: MergeGroupJson,
    repository: super::wire::RepositoryJsonPublic,
    installation: Option<InstallationJson>,
}

#[derive(Deserialize)]
struct MergeGroupJson {
    head_sha: Sha,
    head_ref: String,
    base_sha: Sha,
    base_ref: String,
}

#[derive(Deserialize)]
struct InstallationJson {
    id: InstallationId,
}

impl MergeGroupPayload {
    pub(super) fn into_event(self) -> Event {
        let branch = |r: String| {
            r.strip_prefix("refs/heads/")
                .map(str::to_string)
                .unwrap_or(r)
        };
        Event::MergeGroup(MergeGroupEvent {
            installation: self.installation.map(|i| i.id),
            repository: self.repository.into(),
            head_sha: self.merge_group.head_sha,
            head_ref: branch(self.merge_group.head_ref),
            base_sha: self.merge_group.base_sha,
            base_ref: branch(self.merge_group.base_ref),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(head_ref: &str) -> MergeGroupEvent {
        MergeGroupEvent {
            installation: None,
            repository: RepoRef {
                id: super::super::RepoId(1),
                owner: "acme".into(),
                name: "infra".into(),
                full_name: "acme/infra".into(),
                default_branch: "main".into(),
                private: true,
                html_url: None,
            },
            head_sha: Sha::new(&"a".repeat(40)).unwrap(),
            head_ref: head_ref.into(),
            base_sha: Sha::new(&"b".repeat(40)).unwrap(),
            base_ref: "main".into(),
        }
    }

    #[test]
    fn the_entering_pull_request_is_read_from_the_queue_branch() {
        let sha = "c".repeat(40);
        assert_eq!(
            group(&format!("gh-readonly-queue/main/pr-104-{sha}")).entering(),
            Some(104)
        );
        assert_eq!(
            group(&format!("gh-readonly-queue/release/v1/pr-7-{sha}")).entering(),
            Some(7)
        );
        for bad in [
            "main",
            "gh-readonly-queue/main/pr--x",
            "gh-readonly-queue/main/pr-0-x",
            "pr-x-1",
        ] {
            assert_eq!(group(bad).entering(), None, "{bad}");
        }
    }
}
