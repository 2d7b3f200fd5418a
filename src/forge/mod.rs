//! Forges cascade talks to: one concrete client per forge, behind one handle ([`Forge`],
//! an enum) that answers in the neutral [`types`]. They carry requests and answers; every
//! decision (who may apply, what to post) is made by the bot.

pub mod github;
pub mod gitlab;
mod handle;
pub mod types;

pub use handle::{Forge, Forges};
pub use types::{
    Actor, Approvals, Approver, ChangeRequest, CheckOutput, CheckStatus, ForgeKind, ForgeRef,
    Membership, Mergeable, OwnComment, Spelling,
};
