//! Forges cascade talks to: one concrete client per forge, behind one handle ([`Forge`],
//! an enum) that answers in the neutral [`types`]. They carry requests and answers; every
//! decision (who may apply, what to post) is made by the bot.

pub mod github;
pub mod gitlab;
mod handle;
mod ids;
mod origin;
mod pull_request;
mod repo_key;
pub mod types;

pub use handle::{Forge, Forges};
pub use ids::{PrNumber, Sha};
pub use origin::{CloneUrl, GitCredential, GitOrigin};
pub use pull_request::PullRequest;
pub(crate) use pull_request::answered_sha;
pub use repo_key::RepoKey;
pub use types::{
    Actor, Approvals, Approver, CheckOutput, CheckStatus, Commit, CommitPerson, DefaultBranch,
    ForgeKind, ForgeRef, Membership, Mergeable, OwnComment, Spelling, TooLong,
};

use std::time::{Duration, SystemTime};

/// A forge's timestamp: RFC 3339, as GitHub (`2016-07-11T22:14:10Z`) and GitLab
/// (`2026-01-05T09:00:00.123Z`, or with an offset on a self-managed instance that answers
/// in local time) write them. None when it is not one.
pub(crate) fn parse_timestamp(text: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(SystemTime::from)
}

/// Of `ours` (oldest first), the newest that `matches` and was stored after `since`: a
/// local instant, moved onto the forge's clock with the listing's `date`. How a create
/// the forge answered with a 5xx is found before it is sent again. Timestamps may have
/// whole seconds: one second of slack on the forge's side. Without the forge's clock,
/// only the newest can be the one.
pub(crate) fn newest_since<T>(
    ours: impl DoubleEndedIterator<Item = T>,
    date: Option<SystemTime>,
    since: tokio::time::Instant,
    created: impl Fn(&T) -> Option<SystemTime>,
    matches: impl Fn(&T) -> bool,
) -> Option<T> {
    let earliest = date.and_then(|d| d.checked_sub(since.elapsed() + Duration::from_secs(1)));
    let mut newest_first = ours.rev();
    match earliest {
        Some(earliest) => newest_first
            .take_while(|item| created(item).is_none_or(|at| at >= earliest))
            .find(|item| matches(item)),
        None => newest_first.next().filter(|item| matches(item)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_timestamp;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn reads_github_timestamps() {
        let t = parse_timestamp("2016-07-11T22:14:10Z").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_468_275_250
        );
        assert!(parse_timestamp("2016-07-11 22:14:10").is_none());
        assert!(parse_timestamp("2016-13-11T22:14:10Z").is_none());
    }

    #[test]
    fn reads_gitlab_timestamps_with_offsets() {
        let utc = parse_timestamp("2016-07-11T22:14:10.123Z").unwrap();
        let local = parse_timestamp("2016-07-12T00:14:10.123+02:00").unwrap();
        assert_eq!(utc, local);
        assert_eq!(
            utc.duration_since(UNIX_EPOCH).unwrap(),
            Duration::from_millis(1_468_275_250_123)
        );
        assert!(parse_timestamp("yesterday").is_none());
    }
}
