//! Which units of a plan go together: the dependencies an apply of part of a plan must
//! take with it, the units an apply leaves out after a failure, and the left-out units
//! planned again (never applied) once what they depend on was applied. Never applies.

use super::plan_run::RunCtx;
use crate::exec::Executor;
use crate::store::{PlanRecord, RunStore, UnitRecord, UnitStatus};
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet};

/// The units of `plan` that a unit of `only` depends on (directly or not) and that
/// `only` leaves out: applying `only` first would run a unit before what it reads.
/// Empty when `only` is closed under the plan's dependencies.
pub fn missing_dependencies(plan: &PlanRecord, only: &BTreeSet<UnitPath>) -> BTreeSet<UnitPath> {
    let deps: BTreeMap<&UnitPath, &Vec<UnitPath>> =
        plan.units.iter().map(|u| (&u.path, &u.deps)).collect();
    let mut seen: BTreeSet<&UnitPath> = BTreeSet::new();
    let mut stack: Vec<&UnitPath> = only.iter().collect();
    while let Some(unit) = stack.pop() {
        for dep in deps.get(unit).into_iter().flat_map(|d| d.iter()) {
            if seen.insert(dep) {
                stack.push(dep);
            }
        }
    }
    seen.into_iter()
        .filter(|dep| !only.contains(*dep) && deps.contains_key(dep))
        .cloned()
        .collect()
}

/// The units whose apply failed, and every unit of `plan` that depends on one of them.
pub(super) fn failed_and_dependents(
    plan: &PlanRecord,
    records: &BTreeMap<UnitPath, UnitRecord>,
) -> BTreeSet<UnitPath> {
    let mut out: BTreeSet<UnitPath> = records
        .iter()
        .filter(|(_, r)| r.status == UnitStatus::Failed)
        .map(|(p, _)| p.clone())
        .collect();
    // Units are few and chains short: repeat until nothing is added.
    loop {
        let before = out.len();
        for unit in &plan.units {
            if unit.deps.iter().any(|d| out.contains(d)) {
                out.insert(unit.path.clone());
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// Plans again, in plan order, every unit of `plan` left out of `only` that depends
/// (directly or not) on a unit `done` records as applied, and records it as changed since
/// approval when its fresh plan differs: the new plan for the rest then shows what each
/// will do now, not its plan made before its upstream was applied. Never applies.
pub(super) async fn replan_left_out<E: Executor, S: RunStore>(
    ctx: &RunCtx<E, S>,
    plan: &PlanRecord,
    only: &BTreeSet<UnitPath>,
    done: &BTreeMap<UnitPath, UnitRecord>,
) {
    let mut upstream: BTreeSet<&UnitPath> = done
        .iter()
        .filter(|(_, r)| r.status == UnitStatus::Applied)
        .map(|(p, _)| p)
        .collect();
    // Plan order is wave order: a unit's upstream comes before it.
    for unit in plan.units.iter().filter(|u| !only.contains(&u.path)) {
        if !unit.deps.iter().any(|d| upstream.contains(d)) {
            continue;
        }
        upstream.insert(&unit.path);
        let Some(target) = ctx.targets.get(&unit.path) else {
            continue;
        };
        if let Ok(fresh) = ctx.plan_unit(target).await
            && Some(&fresh.summary.fingerprint) != unit.fingerprint()
        {
            ctx.record(
                &unit.path,
                UnitStatus::ChangedSinceApproval,
                "planned again after what it depends on was applied".to_string(),
                Some(fresh),
            )
            .await;
        }
    }
}
