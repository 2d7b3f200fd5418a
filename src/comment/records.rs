//! From plan records and apply outcomes to the comment's view model: what a
//! reviewer sees on the pull request (and `cascade plan` prints). Every
//! failure or skip reason is redacted once more here, whatever stored it;
//! each unit's rendered plan was redacted when the engine drew it.

use super::{
    ApplyOutcome, ApplyStatus, ApplyUnitView, ApplyView, PlanView, Problem, UnitView, WaveView,
};
use crate::engine::ApplyOutcome as Applied;
use crate::plan::{Counts, PlanId};
use crate::redact::redact;
use crate::store::{PlanRecord, PlannedUnit, UnitStatus};
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet};

/// The plan comment's view of `plan`; `unresolved` lists planned units
/// cascade could not fully resolve, with the reason.
pub fn plan_view(plan: &PlanRecord, unresolved: &[(UnitPath, String)]) -> PlanView {
    let by_path: BTreeMap<&UnitPath, &PlannedUnit> =
        plan.units.iter().map(|u| (&u.path, u)).collect();
    let changing: BTreeSet<&UnitPath> = plan
        .units
        .iter()
        .filter(|u| u.summary.as_ref().is_some_and(|s| !s.is_empty()))
        .map(|u| &u.path)
        .collect();
    let mut waves: BTreeMap<usize, Vec<UnitView>> = BTreeMap::new();
    let mut destroys = Vec::new();
    let (mut failed, mut skipped) = (Vec::new(), Vec::new());
    for unit in &plan.units {
        match unit.status {
            UnitStatus::Failed => failed.push(Problem {
                unit: unit.path.to_string(),
                reason: redact(&unit.detail),
                retried: unit.retried,
            }),
            UnitStatus::Planned => {
                let view = unit_view(unit, provisional(unit, &by_path, &changing));
                if unit.destroy {
                    destroys.push(view)
                } else {
                    waves.entry(unit.wave).or_default().push(view)
                }
            }
            _ => skipped.push(Problem {
                unit: unit.path.to_string(),
                reason: redact(&unit.detail),
                retried: 0,
            }),
        }
    }
    let mut totals = Counts::default();
    for s in plan.units.iter().filter_map(|u| u.summary.as_ref()) {
        add(&mut totals, &s.counts);
    }
    let rounds = 1 + plan
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Planned && !u.destroy)
        .map(|u| changing_upstream(u, &by_path, &changing, &mut BTreeMap::new()))
        .max()
        .unwrap_or(0);
    PlanView {
        rounds,
        needs_approval: plan.id.as_str() != PlanId::NO_CHANGES
            && failed.is_empty()
            && skipped.is_empty(),
        plan_id: plan.id.to_string(),
        head: short(&plan.head),
        base: short(&plan.base),
        totals,
        waves: waves
            .into_iter()
            .enumerate()
            .map(|(i, (_, units))| WaveView {
                number: i + 1,
                units,
            })
            .collect(),
        destroys,
        failed,
        skipped,
        unresolved: unresolved
            .iter()
            .map(|(u, why)| Problem {
                unit: u.to_string(),
                reason: redact(why),
                retried: 0,
            })
            .collect(),
        // `scan::targets` orders every unresolved unit a plan walks after the others.
        ordered_last: unresolved
            .iter()
            .filter(|(u, _)| by_path.get(u).is_some_and(|p| !p.destroy))
            .map(|(u, _)| u.to_string())
            .collect(),
        locked: Vec::new(),
        sources: Vec::new(),
        steps: steps_of(plan.units.iter().map(|u| (&u.path, u.steps.as_slice()))),
        policies: super::policies::plan_policy_views(plan, &[]),
        policy_edits: Vec::new(),
        merge_mode: Default::default(),
        destroy_command: false,
    }
}

/// The visible steps of each unit, failed units first (the comment's budget for step
/// output goes to them first), then in the order given.
fn steps_of<'a>(
    units: impl Iterator<Item = (&'a UnitPath, &'a [crate::store::StepRecord])>,
) -> Vec<super::steps::UnitSteps> {
    let mut all: Vec<super::steps::UnitSteps> = units
        .filter_map(|(unit, steps)| super::steps::unit_steps(unit.as_str(), steps))
        .collect();
    all.sort_by_key(|u| {
        !u.steps
            .iter()
            .any(|s| s.status == crate::store::StepStatus::Failed)
    });
    all
}

/// The apply result comment's view.
pub fn apply_view(outcome: &Applied, unresolved: &[(UnitPath, String)]) -> ApplyView {
    let units: Vec<ApplyUnitView> = outcome
        .units
        .iter()
        .map(|u| ApplyUnitView {
            path: u.path.to_string(),
            status: match u.status {
                UnitStatus::Applied => ApplyStatus::Applied,
                UnitStatus::Unchanged => ApplyStatus::Unchanged,
                UnitStatus::ChangedSinceApproval => ApplyStatus::ChangedSinceApproval,
                UnitStatus::Failed => ApplyStatus::Failed,
                _ => ApplyStatus::Skipped,
            },
            detail: redact(&u.detail),
            destroy: u.destroy,
            applied: u.applied.as_ref().map(|s| (s.counts, s.outputs.len())),
            duration: u.duration,
            output: u.output.clone(),
            since_approval: u.since_approval.as_ref().map(|c| super::ChangeView {
                upstream: c.applied_upstream.iter().map(|p| p.to_string()).collect(),
                difference: super::since::difference(
                    (c.approved_rendered.as_ref(), c.approved.as_ref()),
                    (c.now_rendered.as_ref(), c.now.as_ref()),
                ),
            }),
        })
        .collect();
    let applied = units.iter().any(|u| u.status == ApplyStatus::Applied);
    let failed = units.iter().any(|u| u.status == ApplyStatus::Failed);
    // A failure is the headline even when another unit's plan changed too.
    let changed = units
        .iter()
        .any(|u| u.status == ApplyStatus::ChangedSinceApproval);
    let result = if outcome.new_plan.is_some() && !failed {
        // Only the units named were applied, and none of them changed: the rest waits.
        if !changed && !outcome.left_out.is_empty() {
            ApplyOutcome::SubsetApplied
        } else {
            ApplyOutcome::PlanChanged
        }
    } else if outcome.complete() {
        ApplyOutcome::Applied
    } else if applied {
        ApplyOutcome::Partial
    } else {
        ApplyOutcome::Failed
    };
    ApplyView {
        plan_id: outcome.plan_id.to_string(),
        outcome: result,
        units,
        new_plan: outcome.new_plan.as_ref().map(|p| plan_view(p, unresolved)),
        steps: steps_of(outcome.units.iter().map(|u| (&u.path, u.steps.as_slice()))),
        merge_commit: None,
    }
}

/// Planned against outputs an upstream apply in this plan may change: some
/// unit it depends on (directly or not) in this plan changes something.
fn provisional(
    unit: &PlannedUnit,
    by_path: &BTreeMap<&UnitPath, &PlannedUnit>,
    changing: &BTreeSet<&UnitPath>,
) -> bool {
    if unit.destroy {
        return false;
    }
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&UnitPath> = unit.deps.iter().collect();
    while let Some(dep) = stack.pop() {
        if !seen.insert(dep) {
            continue;
        }
        if changing.contains(dep) {
            return true;
        }
        if let Some(d) = by_path.get(dep) {
            stack.extend(d.deps.iter());
        }
    }
    false
}

/// The longest chain of units this plan changes upstream of `unit` (0: none, the unit is
/// not provisional). Each link may change its dependents' plans once applied, stopping
/// the apply there for a new round of approval. `memo` holds what is known already.
fn changing_upstream<'a>(
    unit: &'a PlannedUnit,
    by_path: &BTreeMap<&UnitPath, &'a PlannedUnit>,
    changing: &BTreeSet<&UnitPath>,
    memo: &mut BTreeMap<&'a UnitPath, usize>,
) -> usize {
    if let Some(&known) = memo.get(&unit.path) {
        return known;
    }
    // A plan's units form no cycle (it was ordered); the guard keeps a corrupt record
    // from recursing forever.
    memo.insert(&unit.path, 0);
    let depth = unit
        .deps
        .iter()
        .filter_map(|d| by_path.get(d).copied())
        .filter(|d| !d.destroy)
        .map(|d| {
            changing_upstream(d, by_path, changing, memo) + usize::from(changing.contains(&d.path))
        })
        .max()
        .unwrap_or(0);
    memo.insert(&unit.path, depth);
    depth
}

fn unit_view(unit: &PlannedUnit, provisional: bool) -> UnitView {
    let summary = unit.summary.as_ref();
    UnitView {
        path: unit.path.to_string(),
        counts: summary.map(|s| s.counts).unwrap_or_default(),
        fingerprint: summary
            .map(|s| s.fingerprint.short().to_string())
            .unwrap_or_default(),
        resources: summary.map(|s| s.resources.clone()).unwrap_or_default(),
        outputs: summary.map(|s| s.outputs.clone()).unwrap_or_default(),
        no_changes: summary.is_none_or(|s| s.is_empty()),
        provisional,
        // Redacted when it was drawn; redacting again would take cascade's own
        // `password = (sensitive value)` for a password.
        rendered: unit.rendered.clone(),
        retried: unit.retried,
    }
}

fn add(total: &mut Counts, c: &Counts) {
    total.add += c.add;
    total.change += c.change;
    total.destroy += c.destroy;
    total.replace += c.replace;
    total.import += c.import;
    total.moved += c.moved;
    total.forget += c.forget;
    total.read += c.read;
}

/// `abc1234`, or `abc1234 + local changes` for a plan of uncommitted edits.
fn short(rev: &str) -> String {
    let (sha, dirty) = match rev.split_once('+') {
        Some((sha, _)) => (sha, true),
        None => (rev, false),
    };
    let s: String = sha.chars().take(7).collect();
    if dirty {
        format!("{s} + local changes")
    } else {
        s
    }
}

/// The sum of every planned unit's counts.
pub fn totals(plan: &PlanRecord) -> Counts {
    let mut t = Counts::default();
    for s in plan.units.iter().filter_map(|u| u.summary.as_ref()) {
        add(&mut t, &s.counts);
    }
    t
}

/// The remote sources the units at `planned` were generated from (`discovery::Unit::sources`),
/// each (repository, ref, commit) once, with how many of those units it gave, in order.
pub fn sources_of<'a>(
    discovery: &crate::discovery::Discovery,
    planned: impl IntoIterator<Item = &'a UnitPath>,
) -> Vec<super::view::SourceView> {
    let planned: std::collections::BTreeSet<&UnitPath> = planned.into_iter().collect();
    let mut counted: std::collections::BTreeMap<(String, Option<String>, String), usize> =
        Default::default();
    for unit in discovery.units.iter().filter(|u| planned.contains(&u.path)) {
        for source in &unit.sources {
            let key = (
                source.url.clone(),
                source.reference.clone(),
                source.commit.clone(),
            );
            *counted.entry(key).or_default() += 1;
        }
    }
    counted
        .into_iter()
        .map(
            |((url, reference, commit), units)| super::view::SourceView {
                url,
                reference,
                commit,
                units,
            },
        )
        .collect()
}
