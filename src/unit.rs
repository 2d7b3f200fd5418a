//! Names for units. A unit is named by its directory relative to the repo root,
//! `/`-separated, with `.` for the root itself. Ordering is byte order, which is
//! the order Terragrunt uses inside a wave.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A unit's path relative to the repository root (`live/dev/vpc`), `.` for the root.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnitPath(String);

impl UnitPath {
    /// Builds a unit path from a repo-relative path, normalising separators,
    /// `./` prefixes and trailing slashes. An empty path is the root, `.`.
    pub fn new(path: impl AsRef<str>) -> UnitPath {
        let p = path.as_ref().replace('\\', "/");
        let trimmed = p.trim_start_matches("./").trim_end_matches('/');
        if trimmed.is_empty() || trimmed == "." {
            UnitPath(".".to_string())
        } else {
            UnitPath(trimmed.to_string())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `file` (repo-relative, `/`-separated) lies inside this unit's directory.
    pub fn contains_file(&self, file: &str) -> bool {
        self.0 == "."
            || (file.len() > self.0.len()
                && file.starts_with(&self.0)
                && file.as_bytes()[self.0.len()] == b'/')
    }
}

impl fmt::Display for UnitPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for UnitPath {
    fn from(s: &str) -> Self {
        UnitPath::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        assert_eq!(UnitPath::new("./a/b/").as_str(), "a/b");
        assert_eq!(UnitPath::new("").as_str(), ".");
        assert_eq!(UnitPath::new(".").as_str(), ".");
    }

    #[test]
    fn contains_file_respects_component_boundaries() {
        let u = UnitPath::new("live/vpc");
        assert!(u.contains_file("live/vpc/main.tf"));
        assert!(!u.contains_file("live/vpc2/main.tf"));
        assert!(!u.contains_file("live/vpc"));
        assert!(UnitPath::new(".").contains_file("x.tf"));
    }
}
