//! Which plan id an apply may name: only the current plan of its key. A newer plan
//! supersedes an older one, an applied plan is consumed, and an id the store never saw
//! names nothing; none of them is applied. The bot asks this before it checks the apply
//! requirements, and an apply asks it again under its claim.
//!
//! Owns that rule and its typed answer ([`NotCurrent`]). Never words it: the CLI says
//! [`ApplyError`], the bot a refusal.

use super::{ApplyError, Engine};
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::store::{PlanKey, PlanRecord, PlanStatus, RunStore};

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
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Plan `id` of `key` when an apply may name it (it is the current plan), or what
    /// it is instead.
    pub async fn current_plan_named(
        &self,
        key: &PlanKey,
        id: &PlanId,
    ) -> anyhow::Result<Result<PlanRecord, NotCurrent>> {
        let was = match self.store.plan(key, id).await? {
            None => Was::Unknown,
            Some(plan) => match plan.status {
                PlanStatus::Current => return Ok(Ok(plan)),
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
}

impl From<NotCurrent> for ApplyError {
    fn from(not: NotCurrent) -> ApplyError {
        let NotCurrent { id, was, current } = not;
        match was {
            Was::Unknown => ApplyError::Unknown { id, current },
            Was::Superseded => ApplyError::Superseded { id, current },
            Was::Consumed => ApplyError::Consumed { id },
        }
    }
}
