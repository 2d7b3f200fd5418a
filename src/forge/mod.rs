//! Forges cascade talks to: one concrete client per forge, behind one handle ([`Forge`],
//! an enum) that answers in the neutral [`types`]. They carry requests and answers; every
//! decision (who may apply, what to post) is made by the bot.

pub mod github;
pub mod gitlab;
mod handle;
mod origin;
pub mod types;

pub use handle::{Forge, Forges};
pub use origin::{CloneUrl, GitCredential, GitOrigin};
pub use types::{
    Actor, Approvals, Approver, ChangeRequest, CheckOutput, CheckStatus, Commit, CommitPerson,
    DefaultBranch, ForgeKind, ForgeRef, Membership, Mergeable, OwnComment, Spelling, TooLong,
};

use std::time::{Duration, SystemTime};

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
