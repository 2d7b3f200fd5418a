//! Forges cascade talks to: one concrete client per forge. They carry requests
//! and answers; every decision (who may apply, what to post) is made elsewhere.

pub mod github;
pub mod gitlab;
pub mod types;

pub use types::{
    Actor, Approver, ChangeRequest, CheckStatus as ForgeCheckStatus, ForgeKind, ForgeRef,
    Membership, Mergeable, OwnComment, Spelling,
};
