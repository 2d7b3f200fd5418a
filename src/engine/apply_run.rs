//! An apply run: the approved plan walked again in the same order. Each unit
//! is re-planned (with refresh) and fingerprinted; only a plan equal to the
//! approved one is applied. A unit whose plan changed is not applied and holds
//! back its dependents; what is left becomes a new plan with a new id.

use super::plan_run::{RunCtx, plan_id, record_unrun};
use super::{Engine, PlanTarget};
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::store::{PlanRecord, PlanStatus, PlannedUnit, RunKind, Store, UnitRecord, UnitStatus};
use crate::unit::UnitPath;
use crate::walk::{Outcome, Walk, WalkEvent, WalkUnit};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Why an apply was refused before anything ran. Each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("there is no plan {id}{}", current_hint(current))]
    Unknown { id: PlanId, current: Option<PlanId> },
    #[error("plan {id} was replaced by a newer plan{}", current_hint(current))]
    Superseded { id: PlanId, current: Option<PlanId> },
    #[error("plan {id} was already applied; plan again to see what is left")]
    Consumed { id: PlanId },
    #[error(
        "the repository changed since plan {id} was made (planned at {planned}, now at {now}); plan again and approve the new id"
    )]
    Stale {
        id: PlanId,
        planned: String,
        now: String,
    },
    #[error("plan {id} cannot be applied: {units} did not plan; fix the failure and plan again")]
    Incomplete { id: PlanId, units: String },
}

fn current_hint(current: &Option<PlanId>) -> String {
    match current {
        Some(id) => format!(
            "; the current plan is {id}: apply it with `cascade apply {id}` (or `/apply {id}`)"
        ),
        None => "; there is no current plan: run `cascade plan` first".to_string(),
    }
}

/// One unit's result in an apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitApply {
    pub path: UnitPath,
    pub status: UnitStatus,
    pub detail: String,
}

/// What an apply did.
#[derive(Debug)]
pub struct ApplyOutcome {
    pub plan_id: PlanId,
    pub units: Vec<UnitApply>,
    /// When a unit's plan changed since approval: the new plan for everything not yet applied.
    pub new_plan: Option<PlanRecord>,
    pub run_dir: PathBuf,
}

impl ApplyOutcome {
    /// True when every unit was applied or had nothing to do.
    pub fn complete(&self) -> bool {
        self.units
            .iter()
            .all(|u| matches!(u.status, UnitStatus::Applied | UnitStatus::Unchanged))
    }
}

impl<E: Executor, S: Store> Engine<E, S> {
    /// Applies plan `id` of `repo`, whose working tree is now at `head`.
    /// `dir_for` says where each planned unit's tool runs: its directory in
    /// the working tree, or for a destroy, in a tree of the base revision.
    pub async fn apply(
        &self,
        repo: &str,
        id: &PlanId,
        head: &str,
        dir_for: &(dyn Fn(&PlannedUnit) -> PathBuf + Sync),
        observe: impl FnMut(WalkEvent<'_>),
    ) -> anyhow::Result<Result<ApplyOutcome, ApplyError>> {
        let current = self.store.current_plan(repo).await?.map(|p| p.id);
        let Some(plan) = self.store.plan(repo, id).await? else {
            return Ok(Err(ApplyError::Unknown {
                id: id.clone(),
                current,
            }));
        };
        match plan.status {
            PlanStatus::Superseded => {
                return Ok(Err(ApplyError::Superseded {
                    id: id.clone(),
                    current,
                }));
            }
            PlanStatus::Consumed => return Ok(Err(ApplyError::Consumed { id: id.clone() })),
            PlanStatus::Current => {}
        }
        if plan.head != head {
            return Ok(Err(ApplyError::Stale {
                id: id.clone(),
                planned: plan.head.clone(),
                now: head.to_string(),
            }));
        }
        let incomplete: Vec<&str> = plan
            .units
            .iter()
            .filter(|u| u.status != UnitStatus::Planned)
            .map(|u| u.path.as_str())
            .collect();
        if !incomplete.is_empty() {
            return Ok(Err(ApplyError::Incomplete {
                id: id.clone(),
                units: incomplete.join(", "),
            }));
        }

        // One apply run per plan: a retry or a resume continues it, never re-applying a unit.
        let run = match self
            .store
            .latest_run(repo, RunKind::Apply, id.as_str())
            .await?
        {
            Some(run) => {
                self.store.reopen_run(&run.id).await?;
                run
            }
            None => {
                self.new_run(repo, RunKind::Apply, id.as_str().to_string())
                    .await?
            }
        };
        let previous = self.unit_results(&run.id).await?;
        let approved: BTreeMap<UnitPath, PlannedUnit> = plan
            .units
            .iter()
            .map(|u| (u.path.clone(), u.clone()))
            .collect();
        let ctx = Arc::new(RunCtx {
            executor: self.executor.clone(),
            store: self.store.clone(),
            run_id: run.id.clone(),
            run_dir: PathBuf::from(&run.dir),
            timeout: self.timeout,
            cancel: CancellationToken::new(),
            shutdown: self.shutdown.clone(),
            targets: plan
                .units
                .iter()
                .map(|u| (u.path.clone(), target_of(u, dir_for(u))))
                .collect(),
            previous,
        });
        let walk = Walk::new(
            plan.units
                .iter()
                .map(|u| WalkUnit {
                    path: u.path.clone(),
                    deps: u.deps.clone(),
                })
                .collect(),
            self.parallelism,
        );
        let worker = ctx.clone();
        let approved = Arc::new(approved);
        let states = walk
            .run(
                CancellationToken::new(),
                move |unit| {
                    let ctx = worker.clone();
                    let approved = approved.clone();
                    async move { apply_one(&ctx, &approved[&unit], &unit).await }
                },
                observe,
            )
            .await;
        record_unrun(&ctx, &states).await;
        let records = self.unit_results(&run.id).await?;
        self.store.finish_run(&run.id).await?;

        let units: Vec<UnitApply> = plan
            .units
            .iter()
            .map(|u| {
                let r = records.get(&u.path);
                UnitApply {
                    path: u.path.clone(),
                    status: r.map(|r| r.status).unwrap_or(UnitStatus::Cancelled),
                    detail: r.map(|r| r.detail.clone()).unwrap_or_default(),
                }
            })
            .collect();
        let mut outcome = ApplyOutcome {
            plan_id: id.clone(),
            units,
            new_plan: None,
            run_dir: PathBuf::from(&run.dir),
        };
        if outcome.complete() {
            self.store
                .set_plan_status(repo, id, PlanStatus::Consumed)
                .await?;
        } else if outcome
            .units
            .iter()
            .any(|u| u.status == UnitStatus::ChangedSinceApproval)
        {
            let new_plan = self.replan_rest(&plan, &records, &run.id).await?;
            outcome.new_plan = Some(new_plan);
        }
        Ok(Ok(outcome))
    }

    /// The new plan after a change since approval: every unit not yet
    /// applied, with the changed units' new plans, under a new id.
    async fn replan_rest(
        &self,
        plan: &PlanRecord,
        records: &BTreeMap<UnitPath, UnitRecord>,
        run_id: &str,
    ) -> anyhow::Result<PlanRecord> {
        let done = |p: &UnitPath| {
            records
                .get(p)
                .is_some_and(|r| matches!(r.status, UnitStatus::Applied | UnitStatus::Unchanged))
        };
        let units: Vec<PlannedUnit> = plan
            .units
            .iter()
            .filter(|u| !done(&u.path))
            .map(|u| {
                let mut u = u.clone();
                if let Some(r) = records
                    .get(&u.path)
                    .filter(|r| r.status == UnitStatus::ChangedSinceApproval)
                {
                    u.summary = r.summary.clone();
                }
                u.deps.retain(|d| !done(d));
                u.status = UnitStatus::Planned;
                u.detail = String::new();
                u
            })
            .collect();
        let new_plan = PlanRecord {
            id: plan_id(&plan.head, &plan.base, &units),
            repo: plan.repo.clone(),
            head: plan.head.clone(),
            base: plan.base.clone(),
            status: PlanStatus::Current,
            run_id: run_id.to_string(),
            units,
            created_at: self.clock.now(),
        };
        self.store.save_plan(&new_plan).await?;
        Ok(new_plan)
    }
}

async fn apply_one<E: Executor, S: Store>(
    ctx: &RunCtx<E, S>,
    approved: &PlannedUnit,
    unit: &UnitPath,
) -> Outcome {
    let previous = ctx.previous.get(unit).map(|r| r.status);
    if matches!(previous, Some(UnitStatus::Applied | UnitStatus::Unchanged)) {
        return Outcome::Done;
    }
    let target = &ctx.targets[unit];
    let Some(expected) = approved.summary.as_ref() else {
        return Outcome::Failed("the approved plan has no summary for this unit".into());
    };
    ctx.record(unit, UnitStatus::Planning, String::new(), None)
        .await;
    let fresh = match ctx.plan_unit(target).await {
        Ok(summary) => summary,
        Err(why) => {
            ctx.record(unit, UnitStatus::Failed, why.clone(), None)
                .await;
            return Outcome::Failed(why);
        }
    };
    if fresh.fingerprint != expected.fingerprint {
        if previous == Some(UnitStatus::Applying) && fresh.is_empty() {
            // Killed after terraform applied it but before cascade recorded that.
            ctx.record(
                unit,
                UnitStatus::Applied,
                "applied before the interruption".into(),
                Some(fresh),
            )
            .await;
            return Outcome::Done;
        }
        let detail = format!(
            "plan changed since approval (approved {}, now {})",
            expected.fingerprint.short(),
            fresh.fingerprint.short()
        );
        ctx.record(
            unit,
            UnitStatus::ChangedSinceApproval,
            detail.clone(),
            Some(fresh),
        )
        .await;
        return Outcome::Blocked(detail);
    }
    if fresh.is_empty() {
        ctx.record(unit, UnitStatus::Unchanged, String::new(), Some(fresh))
            .await;
        return Outcome::Done;
    }
    ctx.record(
        unit,
        UnitStatus::Applying,
        String::new(),
        Some(fresh.clone()),
    )
    .await;
    match ctx.executor.apply(&ctx.job(target), &ctx.shutdown).await {
        Ok(()) => {
            ctx.record(unit, UnitStatus::Applied, String::new(), Some(fresh))
                .await;
            Outcome::Done
        }
        Err(e) => {
            let why = e.to_string();
            ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh))
                .await;
            Outcome::Failed(why)
        }
    }
}

fn target_of(unit: &PlannedUnit, dir: PathBuf) -> PlanTarget {
    PlanTarget {
        path: unit.path.clone(),
        wave: unit.wave,
        deps: unit.deps.clone(),
        destroy: unit.destroy,
        tool: unit.tool,
        dir,
        init_args: unit.init_args.clone(),
    }
}
