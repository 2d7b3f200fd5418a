//! Repository keys as the workspace stores them: GitHub's `owner/name` and GitLab's
//! `gitlab:group/sub/project`, validated and mapped to directories that cannot collide or
//! leave the workspace root. Never touches the file system.

use anyhow::anyhow;
use std::path::{Path, PathBuf};

/// A validated repository key, lowercased (GitHub and GitLab names are case-insensitive, so
/// `Acme/Infra` and `acme/infra` share one mirror): GitHub's `owner/name`, or GitLab's
/// `gitlab:group/sub/project` (nested groups). Each maps to its own directory under the
/// workspace root: GitHub's `owner/name`, GitLab's `@gitlab/group/sub/project.git`, which no
/// GitHub name can reach (`@` is refused in an owner) and no GitLab project can nest in
/// (GitLab refuses a group path ending in `.git`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RepoName {
    pub(super) key: String,
    /// Directory segments below `mirrors/`, `checkouts/` and `trees/`.
    pub(super) dirs: Vec<String>,
}

/// GitLab allows 20 levels of subgroups under a top-level group.
const GITLAB_MAX_SEGMENTS: usize = 22;

impl RepoName {
    pub(super) fn parse(repo: &str) -> anyhow::Result<RepoName> {
        match repo.strip_prefix(crate::forge::types::GITLAB_REPO_PREFIX) {
            Some(path) => RepoName::parse_gitlab(repo, path),
            None => RepoName::parse_github(repo),
        }
    }

    fn parse_github(repo: &str) -> anyhow::Result<RepoName> {
        let invalid = || {
            anyhow!(
                "invalid repository name {repo:?}: expected `owner/name` made of letters, digits, \
                 `-`, `_` and `.`; check the repository in the webhook or the server configuration"
            )
        };
        let (owner, name) = repo.split_once('/').ok_or_else(invalid)?;
        for part in [owner, name] {
            if !name_segment(part, 100) {
                return Err(invalid());
            }
        }
        let (owner, name) = (owner.to_ascii_lowercase(), name.to_ascii_lowercase());
        Ok(RepoName {
            key: format!("{owner}/{name}"),
            dirs: vec![owner, name],
        })
    }

    /// `group[/subgroup…]/project` by GitLab's path rules: letters, digits, `-`, `_` and `.`,
    /// not starting with `-` or `.`, and no segment (so no group) ending in `.git` or `.atom`.
    fn parse_gitlab(repo: &str, path: &str) -> anyhow::Result<RepoName> {
        let invalid = || {
            anyhow!(
                "invalid GitLab project {repo:?}: expected `gitlab:group/project` (or with \
                 subgroups, `gitlab:group/sub/project`) made of letters, digits, `-`, `_` and `.`; \
                 check the project in the webhook"
            )
        };
        let segments: Vec<&str> = path.split('/').collect();
        if !(2..=GITLAB_MAX_SEGMENTS).contains(&segments.len()) {
            return Err(invalid());
        }
        let mut dirs = vec!["@gitlab".to_string()];
        for segment in &segments {
            let lower = segment.to_ascii_lowercase();
            if !name_segment(segment, 255)
                || segment.starts_with('.')
                || lower.ends_with(".git")
                || lower.ends_with(".atom")
            {
                return Err(invalid());
            }
            dirs.push(lower);
        }
        let key = format!(
            "{}{}",
            crate::forge::types::GITLAB_REPO_PREFIX,
            dirs[1..].join("/")
        );
        // The project's own directory ends in `.git`, which no group can: a project never
        // lies inside another's checkouts.
        if let Some(project) = dirs.last_mut() {
            project.push_str(".git");
        }
        Ok(RepoName { key, dirs })
    }

    pub(super) fn key(&self) -> String {
        self.key.clone()
    }

    /// `<root>/<area>/<segments…>`: where this repository's `area` (`checkouts`, `trees`) lives.
    pub(super) fn dir_in(&self, root: &Path, area: &str) -> PathBuf {
        let mut dir = root.join(area);
        dir.extend(&self.dirs);
        dir
    }
}

/// One segment of a repository name: at most `max` of letters, digits, `-`, `_` and `.`,
/// never empty, `.`, `..` or starting with `-` (git would read it as an option).
fn name_segment(part: &str, max: usize) -> bool {
    !part.is_empty()
        && part.len() <= max
        && part != "."
        && part != ".."
        && !part.starts_with('-')
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
