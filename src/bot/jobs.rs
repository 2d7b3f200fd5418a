//! From typed events to the work each pull request's actor does.

use crate::event::Event;
use crate::forge::{ForgeRef, PrNumber, PullRequest, RepoKey};
use crate::store::{AnyStore, BotStore, PlanKey};
use std::fmt;

/// A pull request: `owner/name#number`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrKey {
    pub repo: String,
    pub number: u64,
}

impl PrKey {
    /// The number of a repository's drift work (its scheduled runs and the
    /// commands on its drift issue): never a pull request's or merge request's.
    pub const DRIFT: u64 = 0;

    /// The key of `repo`'s drift work: one at a time, like a pull request's jobs.
    pub fn drift(repo: &str) -> PrKey {
        PrKey {
            repo: repo.to_string(),
            number: PrKey::DRIFT,
        }
    }

    /// The key plans are stored under: one current plan per pull request.
    pub fn plan_key(&self) -> PlanKey {
        let repo = RepoKey::from_stored(&self.repo);
        if self.number == PrKey::DRIFT {
            PlanKey::drift(&repo)
        } else {
            PlanKey::pull_request(&repo, PrNumber::new(self.number))
        }
    }
}

impl fmt::Display for PrKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.repo, self.number)
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
    Comment(PrComment),
    /// Plan again: the locks it waited for were released.
    Replan {
        forge: ForgeRef,
    },
    /// Check the repository's default branch for drift (key: [`PrKey::drift`]);
    /// `claimed`: the schedule fired here, and its claim is given back after.
    Drift {
        forge: ForgeRef,
        claimed: bool,
    },
    /// A new comment on issue `issue` of the repository (key: [`PrKey::drift`]).
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
            PrJob::Update(pr) | PrJob::Closed(pr) => pr.forge,
            PrJob::Comment(comment) => comment.forge,
            PrJob::Replan { forge } | PrJob::Drift { forge, .. } => *forge,
            PrJob::DriftComment { comment, .. } => comment.forge,
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

pub enum Routed {
    Pr(PrKey, PrJob),
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
