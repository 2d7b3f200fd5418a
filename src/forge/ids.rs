//! The ids a pull request is known by on every forge: its number and its commits.
//! Owns their parsing and printing; never what they point at (that is the forge's
//! answer, [`super::PullRequest`]).

use std::fmt;

/// A commit id, as events and forges answer it (the webhook parser's type, kept end to
/// end so a head read from a hook is never a bare string again).
pub use crate::event::Sha;

/// A pull request's number (GitHub) or merge request's iid (GitLab): what `#7` or `!7`
/// names within its repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrNumber(u64);

impl PrNumber {
    pub const fn new(number: u64) -> PrNumber {
        PrNumber(number)
    }

    /// The number as the store and the forges' APIs take it.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for PrNumber {
    fn from(number: u64) -> PrNumber {
        PrNumber(number)
    }
}

impl fmt::Display for PrNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::PrNumber;

    #[test]
    fn a_number_prints_bare() {
        assert_eq!(PrNumber::new(7).to_string(), "7");
        assert_eq!(PrNumber::from(7).get(), 7);
    }
}
