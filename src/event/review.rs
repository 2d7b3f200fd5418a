//! GitHub's `pull_request_review` event, `submitted` or `dismissed`: whether a plan is
//! approved may have changed, which the check of a plan applied after merge shows
//! (https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request_review).
//!
//! Only the pull request's number and repository are read: the job reads the reviews from
//! the API, and this payload's `pull_request` is GitHub's shorter form (its `user` may lack
//! `type`), so nothing else of it is held to a shape.

use super::wire::RepositoryJsonPublic;
use super::{Event, InstallationId, RepoRef};
use serde::Deserialize;

/// A review given or dismissed on pull request `number`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewEvent {
    pub installation: Option<InstallationId>,
    pub repository: RepoRef,
    pub number: u64,
}

#[derive(Deserialize)]
pub(super) struct ReviewPayload {
    pull_request: NumberJson,
    repository: RepositoryJsonPublic,
    installation: Option<InstallationJson>,
}

#[derive(Deserialize)]
struct NumberJson {
    number: u64,
}

#[derive(Deserialize)]
struct InstallationJson {
    id: InstallationId,
}

impl ReviewPayload {
    pub(super) fn into_event(self) -> Event {
        Event::PullRequestReview(ReviewEvent {
            installation: self.installation.map(|i| i.id),
            repository: self.repository.into(),
            number: self.pull_request.number,
        })
    }
}
