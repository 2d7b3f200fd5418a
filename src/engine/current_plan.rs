//! Which plan id an apply may name: only the current plan of its key, made within the
//! repository's `plan_ttl`. A newer plan supersedes an older one, an applied plan is
//! consumed, an id the store never saw names nothing, and a plan older than `plan_ttl`
//! has expired (what it was reviewed against may be long gone); none of them is applied.
//! An apply of the plan already begun (a retry, or a resume after a crash) continues
//! however old the plan is: refusing it would leave the apply half done. The bot asks
//! this before it checks the apply requirements, and an apply asks it again under its
//! claim.
//!
//! Owns that rule and its typed answer ([`NotCurrent`]). Never words it: the CLI says
//! [`ApplyError`], the bot a refusal.

use super::{ApplyError, Engine};
use crate::config::PlanTtl;
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::store::{PlanKey, PlanRecord, PlanStatus, RunKind, RunStore};
use std::time::Duration;

/// Plan `id` is not the plan an apply may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCurrent {
    pub id: PlanId,
    /// What became of `id`.
    pub was: Was,
    /// The key's current plan, the one to apply instead, if there is one.
    pub current: Option<PlanId>,
}

/// What became of a plan id that is not current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Was {
    /// No plan of the key has this id.
    Unknown,
    /// A newer plan replaced it (or it was discarded).
    Superseded,
    /// It was applied.
    Consumed,
    /// It is the key's newest plan, but was made `age` ago, longer than `ttl`.
    Expired { age: Duration, ttl: PlanTtl },
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Plan `id` of `key` when an apply may name it (it is the current plan, made
    /// within `ttl` or already being applied), or what it is instead.
    pub async fn current_plan_named(
        &self,
        key: &PlanKey,
        id: &PlanId,
        ttl: PlanTtl,
    ) -> anyhow::Result<Result<PlanRecord, NotCurrent>> {
        let was = match self.store.plan(key, id).await? {
            None => Was::Unknown,
            Some(plan) => match plan.status {
                PlanStatus::Current => {
                    // A clock set back makes no plan older than it is.
                    let age = self.clock.now().saturating_sub(plan.created_at).max(0);
                    let age = Duration::from_secs(age as u64);
                    if !ttl.expired(age) || self.apply_begun(key, id).await? {
                        return Ok(Ok(plan));
                    }
                    // Nothing else to apply instead: the plan to review is a new one.
                    return Ok(Err(NotCurrent {
                        id: id.clone(),
                        was: Was::Expired { age, ttl },
                        current: None,
                    }));
                }
                PlanStatus::Superseded => Was::Superseded,
                PlanStatus::Consumed => Was::Consumed,
            },
        };
        let current = self.store.current_plan(key).await?.map(|p| p.id);
        Ok(Err(NotCurrent {
            id: id.clone(),
            was,
            current,
        }))
    }

    /// True when an apply of plan `id` was started (its run is recorded before any unit
    /// is applied, and kept when one fails or the process dies).
    async fn apply_begun(&self, key: &PlanKey, id: &PlanId) -> anyhow::Result<bool> {
        let run = self
            .store
            .latest_run(key, RunKind::Apply, id.as_str())
            .await?;
        Ok(run.is_some())
    }
}

impl From<NotCurrent> for ApplyError {
    fn from(not: NotCurrent) -> ApplyError {
        let NotCurrent { id, was, current } = not;
        match was {
            Was::Unknown => ApplyError::Unknown { id, current },
            Was::Superseded => ApplyError::Superseded { id, current },
            Was::Consumed => ApplyError::Consumed { id },
            Was::Expired { age, ttl } => ApplyError::Expired { id, age, ttl },
        }
    }
}
