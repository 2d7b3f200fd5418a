//! Names for units. A unit is named by its directory relative to the repo root,
//! `/`-separated, with `.` for the root itself. Ordering is byte order, which is
//! the order Terragrunt uses inside a wave.
//!
//! A name is the bytes git and the filesystem keep: `\` is a character of a
//! directory's name on Linux, never a separator, so `live\base` and
//! `live/base` are two units. Turning one into the other once let a directory
//! hide another unit's change, or plan another checkout.

mod file_stem;
mod state_change;
mod tool;

pub use state_change::{AddressKind, ImportId, ResourceAddress, StateChange};
pub use tool::Tool;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A unit's path relative to the repository root (`live/dev/vpc`), `.` for the root.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnitPath(String);

/// A part of a unit path that names no directory of its own, so the path
/// cannot be run as it is written (see [`UnitPath::odd_part`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OddPart {
    /// Nothing between two `/`.
    Empty,
    /// `.`, between `/` or between backslashes inside one name.
    Current,
    /// `..` after a name, or between backslashes inside one name.
    Parent,
}

impl fmt::Display for OddPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OddPart::Empty => "an empty part (`//`)",
            OddPart::Current => "a `.` part",
            OddPart::Parent => "a `..` part",
        })
    }
}

impl UnitPath {
    /// Builds a unit path from a repo-relative path, dropping `./` prefixes
    /// and trailing slashes. An empty path is the root, `.`. Every other
    /// byte is kept: a backslash stays a backslash.
    pub fn new(path: impl AsRef<str>) -> UnitPath {
        let p = path.as_ref();
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

    /// The first part of the path that is not a directory name of its own:
    /// empty, `.`, or `..` after a name. `..` and `.` between backslashes
    /// inside a name count too: harmless on Linux, they climb out wherever a
    /// tool or a reader takes `\` for a separator, and no real layout needs
    /// them. Leading `..` parts are a unit outside the discovery directory
    /// (an external dependency of `cascade plan --repo <subdirectory>`); where
    /// such a path really leads is checked against its tree before it runs.
    pub fn odd_part(&self) -> Option<OddPart> {
        if self.0 == "." {
            return None;
        }
        let mut parts = self.0.split('/').peekable();
        while parts.peek() == Some(&"..") {
            parts.next();
        }
        for part in parts {
            match part {
                "" => return Some(OddPart::Empty),
                "." => return Some(OddPart::Current),
                ".." => return Some(OddPart::Parent),
                _ => {}
            }
            for piece in part.split('\\') {
                match piece {
                    "." => return Some(OddPart::Current),
                    ".." => return Some(OddPart::Parent),
                    _ => {}
                }
            }
        }
        None
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
    fn a_backslash_is_part_of_a_name() {
        let twin = UnitPath::new("live\\base");
        assert_eq!(twin.as_str(), "live\\base");
        assert_ne!(twin, UnitPath::new("live/base"));
        assert!(!twin.contains_file("live/base/main.tf"));
        assert!(twin.contains_file("live\\base/main.tf"));
        assert_eq!(twin.odd_part(), None);
    }

    #[test]
    fn odd_parts_are_found() {
        let odd = |p: &str| UnitPath::new(p).odd_part();
        assert_eq!(
            odd("live/x\\..\\..\\..\\pr-2\\live\\victim"),
            Some(OddPart::Parent)
        );
        assert_eq!(
            odd("live/x/../../../pr-2/live/victim"),
            Some(OddPart::Parent)
        );
        assert_eq!(odd("live/./vpc"), Some(OddPart::Current));
        assert_eq!(odd("live\\.\\vpc"), Some(OddPart::Current));
        assert_eq!(odd("live//vpc"), Some(OddPart::Empty));
        assert_eq!(odd(".."), None, "an external unit one level up");
        assert_eq!(odd("../../shared/vpc"), None);
        assert_eq!(odd("../x/.."), Some(OddPart::Parent));
        for plain in [
            ".",
            "live/vpc",
            "a..b/c",
            "...",
            ".hidden/x",
            "x\\y",
            "\\",
            "a\\\\b",
        ] {
            assert_eq!(odd(plain), None, "{plain}");
        }
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
