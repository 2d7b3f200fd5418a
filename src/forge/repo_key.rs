//! Which repository a record is about: its forge and its path there. The store keeps it as
//! one text (`owner/name` on GitHub, `gitlab:group/sub/project` on GitLab: GitHub's paths
//! never hold a `:`, so the two cannot collide); this is the one place that text is read.
//!
//! Owns: reading and writing that key. Never: checks that a path is valid for its forge
//! (`workspace` does, before anything is fetched).

use super::types::{ForgeKind, GITLAB_REPO_PREFIX};

/// A repository on its forge.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RepoKey {
    forge: ForgeKind,
    /// The forge's own path: `owner/name`, or `group/sub/project`.
    path: String,
}

impl RepoKey {
    pub fn new(forge: ForgeKind, path: impl Into<String>) -> RepoKey {
        RepoKey {
            forge,
            path: path.into(),
        }
    }

    /// The key as the store keeps it.
    pub fn from_stored(key: &str) -> RepoKey {
        match key.strip_prefix(GITLAB_REPO_PREFIX) {
            Some(path) => RepoKey::new(ForgeKind::GitLab, path),
            None => RepoKey::new(ForgeKind::GitHub, key),
        }
    }

    /// The text the store keeps.
    pub fn stored(&self) -> String {
        match self.forge {
            ForgeKind::GitHub => self.path.clone(),
            ForgeKind::GitLab => format!("{GITLAB_REPO_PREFIX}{}", self.path),
        }
    }

    pub fn forge(&self) -> ForgeKind {
        self.forge
    }

    /// The path people know the repository by on its forge.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// GitHub's owner, GitLab's namespace (every group of `group/sub/project`).
    pub fn owner(&self) -> &str {
        match self.forge {
            ForgeKind::GitHub => self.path.split_once('/').map_or(&self.path, |(o, _)| o),
            ForgeKind::GitLab => self.path.rsplit_once('/').map_or(&self.path, |(ns, _)| ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_key_names_its_forge_and_comes_back_the_same() {
        for (stored, forge, path, owner) in [
            ("acme/infra", ForgeKind::GitHub, "acme/infra", "acme"),
            (
                "gitlab:acme/platform/infra",
                ForgeKind::GitLab,
                "acme/platform/infra",
                "acme/platform",
            ),
            ("gitlab:solo", ForgeKind::GitLab, "solo", "solo"),
        ] {
            let key = RepoKey::from_stored(stored);
            assert_eq!((key.forge(), key.path(), key.owner()), (forge, path, owner));
            assert_eq!(key.stored(), stored);
        }
    }
}
