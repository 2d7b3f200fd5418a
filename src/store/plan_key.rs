//! The key runs, plans and apply claims are stored under (`runs.repo`, `plans.repo`,
//! `apply_claims.repo`): one current plan per key. A pull request's is
//! `<stored repository>#<number>`, a repository's drift work's is `<stored repository>#0`,
//! and the CLI's is the directory it plans, as displayed.
//!
//! Owns: writing that text for each kind of key, and reading the repository back out of
//! it. Never: checks a repository or a directory (the text is kept byte for byte, as
//! existing databases hold it).

use crate::forge::{PrNumber, RepoKey};
use std::fmt;
use std::path::Path;

/// The number the store keeps a repository's drift work under, where a pull request's
/// number goes (its plan key, its lease, its locks, its pull request row): never a pull
/// request's or merge request's number, which start at 1.
pub const DRIFT_NUMBER: u64 = 0;

/// What follows `#` in a merge group plan's key.
const MERGE_GROUP: &str = "queue";

/// What a run or a plan belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanKey(String);

impl PlanKey {
    /// A pull request's (or merge request's) key: `owner/name#7`.
    pub fn pull_request(repo: &RepoKey, number: PrNumber) -> PlanKey {
        PlanKey::numbered(repo, number.get())
    }

    /// The key of a repository's drift plans: `owner/name#0`.
    pub fn drift(repo: &RepoKey) -> PlanKey {
        PlanKey::numbered(repo, DRIFT_NUMBER)
    }

    /// The key of a repository's merge-queue plans: `owner/name#queue`. Never applied; one
    /// current plan, the last group's.
    pub fn merge_group(repo: &RepoKey) -> PlanKey {
        PlanKey(format!("{}#{MERGE_GROUP}", repo.stored()))
    }

    fn numbered(repo: &RepoKey, number: u64) -> PlanKey {
        PlanKey(format!("{}#{number}", repo.stored()))
    }

    /// The CLI's key: the directory it plans, as it displays.
    pub fn directory(dir: &Path) -> PlanKey {
        PlanKey(dir.display().to_string())
    }

    /// A key as a row holds it.
    pub fn from_stored(text: impl Into<String>) -> PlanKey {
        PlanKey(text.into())
    }

    /// The text the store keeps.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The repository the key belongs to: the key without a trailing `#<number>`
    /// (a directory's key is its own repository). Every plan of a repository shares
    /// its provider cache.
    pub fn repository(&self) -> &str {
        match self.0.rsplit_once('#') {
            Some((repo, number))
                if number == MERGE_GROUP
                    || (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())) =>
            {
                repo
            }
            _ => &self.0,
        }
    }
}

impl fmt::Display for PlanKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::ForgeKind;

    #[test]
    fn each_kind_of_key_is_written_as_stores_hold_it() {
        let github = RepoKey::from_stored("acme/infra");
        let gitlab = RepoKey::new(ForgeKind::GitLab, "acme/platform/infra");
        assert_eq!(
            PlanKey::pull_request(&github, PrNumber::new(7)).as_str(),
            "acme/infra#7"
        );
        assert_eq!(
            PlanKey::pull_request(&gitlab, PrNumber::new(7)).as_str(),
            "gitlab:acme/platform/infra#7"
        );
        assert_eq!(PlanKey::drift(&github).as_str(), "acme/infra#0");
        assert_eq!(
            PlanKey::directory(Path::new("/work/infra")).to_string(),
            "/work/infra"
        );
    }

    #[test]
    fn the_repository_is_the_key_without_its_number() {
        for (key, repo) in [
            ("acme/infra#7", "acme/infra"),
            ("acme/infra#0", "acme/infra"),
            ("gitlab:acme/sub/infra#12", "gitlab:acme/sub/infra"),
            ("/work/infra", "/work/infra"),
            ("/work/in#fra", "/work/in#fra"),
            ("/work/infra#", "/work/infra#"),
        ] {
            assert_eq!(PlanKey::from_stored(key).repository(), repo, "{key}");
        }
    }
}
