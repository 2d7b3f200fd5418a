//! Why a unit's plan changed between its approval and its apply, in the terms a reviewer
//! needs: both plans (as the comment draws them), and the units of the same plan this apply
//! applied upstream of it. When there are such units, the unit was planned against their
//! outputs before they were applied and was re-planned with the real ones; when there are
//! none, something outside this plan changed it.
//!
//! Holds plans as they were stored (summaries without values, drawn plans already masked
//! and redacted); never reads a plan file.

use crate::plan::PlanSummary;
use crate::plan::render::RenderedPlan;
use crate::store::{PlannedUnit, UnitRecord, UnitStatus};
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet};

/// A unit whose fresh plan differed from the approved one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinceApproval {
    pub approved: Option<PlanSummary>,
    pub approved_rendered: Option<RenderedPlan>,
    pub now: Option<PlanSummary>,
    pub now_rendered: Option<RenderedPlan>,
    /// Units of the plan it depends on (directly or not) that this apply applied with a
    /// change, in the plan's order; empty when nothing in this plan explains the change.
    pub applied_upstream: Vec<UnitPath>,
}

/// What changed for `unit`, if its status says its plan changed since approval.
pub(super) fn since_approval(
    unit: &PlannedUnit,
    plan: &[PlannedUnit],
    records: &BTreeMap<UnitPath, UnitRecord>,
) -> Option<SinceApproval> {
    let now = records
        .get(&unit.path)
        .filter(|r| r.status == UnitStatus::ChangedSinceApproval)?;
    let upstream = upstream_of(unit, plan);
    let applied_upstream = plan
        .iter()
        .filter(|u| upstream.contains(&u.path))
        .filter(|u| {
            records.get(&u.path).is_some_and(|r| {
                r.status == UnitStatus::Applied && r.summary.as_ref().is_some_and(|s| !s.is_empty())
            })
        })
        .map(|u| u.path.clone())
        .collect();
    Some(SinceApproval {
        approved: unit.summary.clone(),
        approved_rendered: unit.rendered.clone(),
        now: now.summary.clone(),
        now_rendered: now.rendered.clone(),
        applied_upstream,
    })
}

/// Every unit of `plan` that `unit` depends on, directly or not.
fn upstream_of<'a>(unit: &'a PlannedUnit, plan: &'a [PlannedUnit]) -> BTreeSet<&'a UnitPath> {
    let by_path: BTreeMap<&UnitPath, &PlannedUnit> = plan.iter().map(|u| (&u.path, u)).collect();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&UnitPath> = unit.deps.iter().collect();
    while let Some(dep) = stack.pop() {
        if seen.insert(dep)
            && let Some(d) = by_path.get(dep)
        {
            stack.extend(d.deps.iter());
        }
    }
    seen
}
