//! Which units of a plan go together: the dependencies an apply of part of a plan must
//! take with it, and the units an apply leaves out after a failure. Pure functions over
//! a [`PlanRecord`]'s dependency lists; never runs or stores anything.

use crate::store::{PlanRecord, UnitRecord, UnitStatus};
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
