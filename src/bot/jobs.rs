//! From typed events to the work each pull request's actor does.

use crate::event::Event;
use crate::forge::{ForgeRef, PrNumber, PullRequest, RepoKey};
use crate::store::{AnyStore, BotStore, DRIFT_NUMBER, PlanKey};
use std::fmt;

/// What one actor works on, one job at a time: a pull request, or a repository's drift
/// work (its scheduled runs and the commands on its drift issue). Shown as the store keeps
/// it: `owner/name#7`, and `owner/name#0` for drift.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkKey {
    PullRequest { repo: RepoKey, number: PrNumber },
    Drift { repo: RepoKey },
}

impl WorkKey {
    /// The work a stored row's repository and number name. The one place (with
    /// [`WorkKey::number`]) that reads the store's drift number, [`DRIFT_NUMBER`].
    pub fn from_stored(repo: &str, number: u64) -> WorkKey {
        let repo = RepoKey::from_stored(repo);
        match number {
            DRIFT_NUMBER => WorkKey::Drift { repo },
            number => WorkKey::PullRequest {
                repo,
                number: PrNumber::new(number),
            },
        }
    }

    pub fn repo(&self) -> &RepoKey {
        match self {
            WorkKey::PullRequest { repo, .. } | WorkKey::Drift { repo } => repo,
        }
    }

    /// The number the store keeps this work under (its lease, its locks, its pull
    /// request row): the pull request's, or [`DRIFT_NUMBER`] for drift.
    pub fn number(&self) -> u64 {
        match self {
            WorkKey::PullRequest { number, .. } => number.get(),
            WorkKey::Drift { .. } => DRIFT_NUMBER,
        }
    }

    /// The key plans are stored under: one current plan per pull request.
    pub fn plan_key(&self) -> PlanKey {
        match self {
            WorkKey::PullRequest { repo, number } => PlanKey::pull_request(repo, *number),
            WorkKey::Drift { repo } => PlanKey::drift(repo),
        }
    }
}

impl fmt::Display for WorkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.repo().stored(), self.number())
    }
}

/// A comment newly created on a pull request.
#[derive(Clone, Debug)]
pub struct PrComment {
    pub forge: ForgeRef,
    pub comment_id: u64,
    pub author: String,
    /// The author's numeric id where the event carries it (GitLab's member lookups need it).
    pub author_id: Option<u64>,
    pub author_is_bot: bool,
    pub body: String,
}

/// One unit of work for a pull request's actor.
#[derive(Clone, Debug)]
pub enum PrJob {
    /// Opened, pushed, reopened, ready for review: plan the head.
    Update(PullRequest),
    Closed(PullRequest),
    /// Merged (key: [`WorkKey::Drift`], its repository's actor): apply what applies after
    /// merge, then close it as [`PrJob::Closed`] does.
    Merged(PullRequest),
    /// A review was given or dismissed: the check of a plan applied after merge says
    /// whether it is approved.
    Reviewed {
        forge: ForgeRef,
    },
    /// A merge queue's group wants the `cascade` check on its head (key:
    /// [`WorkKey::Drift`], its repository's actor).
    MergeGroup(super::merge_group::QueuedGroup),
    Comment(PrComment),
    /// Plan again: the locks it waited for were released.
    Replan {
        forge: ForgeRef,
    },
    /// Check the repository's default branch for drift (key: [`WorkKey::Drift`]);
    /// `claimed`: the schedule fired here, and its claim is given back after.
    Drift {
        forge: ForgeRef,
        claimed: bool,
    },
    /// A new comment on issue `issue` of the repository (key: [`WorkKey::Drift`]).
    DriftComment {
        issue: u64,
        comment: PrComment,
    },
}

impl PrJob {
    /// A new head to plan: it supersedes a plan in progress.
    pub fn is_new_head(&self) -> bool {
        matches!(self, PrJob::Update(_))
    }

    /// The forge the event came through (whose answers are about the pull request).
    pub fn forge(&self) -> ForgeRef {
        match self {
            PrJob::Update(pr) | PrJob::Closed(pr) | PrJob::Merged(pr) => pr.forge,
            PrJob::Comment(comment) => comment.forge,
            PrJob::Replan { forge } | PrJob::Drift { forge, .. } | PrJob::Reviewed { forge } => {
                *forge
            }
            PrJob::DriftComment { comment, .. } => comment.forge,
            PrJob::MergeGroup(group) => group.forge,
        }
    }
}

/// An installation change to record.
pub struct InstallationChange {
    pub id: u64,
    pub account: String,
    pub active: Option<bool>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

// A `Routed` lives only from an event's parse to its job's queue, moved once: boxing the
// job would add an allocation per event for nothing.
#[allow(clippy::large_enum_variant)]
pub enum Routed {
    Pr(WorkKey, PrJob),
    Installation(InstallationChange),
    Done,
}

/// Decides where an event goes.
pub fn route(event: Event) -> Routed {
    super::adapt::route(event)
}

pub async fn apply_installation(
    store: &AnyStore,
    change: InstallationChange,
) -> anyhow::Result<()> {
    if let Some(active) = change.active {
        store
            .upsert_installation(change.id, &change.account, active)
            .await?;
    } else {
        store
            .upsert_installation(change.id, &change.account, true)
            .await?;
    }
    store
        .change_installation_repos(change.id, &change.added, &change.removed)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_shows_and_stores_as_the_store_keeps_it() {
        let pr = WorkKey::from_stored("gitlab:acme/infra", 7);
        assert_eq!(
            pr,
            WorkKey::PullRequest {
                repo: RepoKey::from_stored("gitlab:acme/infra"),
                number: PrNumber::new(7),
            }
        );
        assert_eq!(pr.to_string(), "gitlab:acme/infra#7");
        assert_eq!(pr.plan_key().as_str(), "gitlab:acme/infra#7");
        assert_eq!(pr.number(), 7);

        let drift = WorkKey::from_stored("acme/infra", DRIFT_NUMBER);
        assert_eq!(
            drift,
            WorkKey::Drift {
                repo: RepoKey::from_stored("acme/infra"),
            }
        );
        assert_eq!(drift.to_string(), "acme/infra#0");
        assert_eq!(drift.plan_key().as_str(), "acme/infra#0");
        assert_eq!((drift.number(), drift.repo().path()), (0, "acme/infra"));
    }
}
