//! The order of unresolved units in a plan. A unit whose edges cascade could not work out
//! (`discovery::Unit::unresolved`) may depend on any other planned unit, and cascade does
//! not guess which: it runs after every other planned unit that is not one of its known
//! dependents, and never at the same time as another unit.
//!
//! Owns: the in-plan dependencies that rule adds and the waves they make. Never: drops or
//! reverses a known edge, adds an edge between units it knows, or changes anything in a
//! plan without unresolved units.

use super::PlanTarget;
use crate::graph::Graph;
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet};

/// Orders the unresolved units of `targets` (a change's head targets, no destroys) after the
/// others, renumbers the waves and sorts `targets` by wave, then path. Returns the unresolved
/// unit that runs last, if there is one: destroys wait for it.
///
/// The rule. The unresolved units U1…Uk are taken one at a time, in path order, except that
/// one that is a known (transitive) dependent of another comes after it. A planned unit's
/// *stage* is the largest i such that it is Ui or a known dependent of Ui, 0 for none. Ui
/// waits for every planned unit of a stage below i (directly for those of stage i-1, through
/// them for the rest); everything of stage i or above is Ui's known dependent or waits for a
/// later Uj, which waits for Ui. So Ui runs alone: after everything but its own known
/// dependents and the later unresolved units with theirs, before all of those. Uk runs
/// after everything but its known dependents. Several unresolved units cannot each come
/// after all the others; this order is the one that still keeps each from running beside
/// any unit it might depend on.
pub(super) fn unresolved_last(
    targets: &mut [PlanTarget],
    is_unresolved: impl Fn(&UnitPath) -> bool,
    graph: &Graph,
) -> Option<UnitPath> {
    let planned: BTreeSet<UnitPath> = targets.iter().map(|t| t.path.clone()).collect();
    let unknown: Vec<UnitPath> = planned
        .iter()
        .filter(|p| is_unresolved(p))
        .cloned()
        .collect();
    if unknown.is_empty() {
        return None;
    }
    // Each unresolved unit's known dependents in this plan, through any unit of the graph.
    let dependents: BTreeMap<UnitPath, BTreeSet<UnitPath>> = unknown
        .iter()
        .map(|u| {
            let known = graph
                .dependents_closure([u])
                .into_keys()
                .filter(|d| planned.contains(d) && d != u)
                .collect();
            (u.clone(), known)
        })
        .collect();
    let sequence = one_at_a_time(&unknown, &dependents);
    let mut stage: BTreeMap<&UnitPath, usize> = BTreeMap::new();
    for (i, u) in sequence.iter().enumerate() {
        // Later stages overwrite earlier ones: a unit's stage is the largest.
        for v in std::iter::once(u).chain(&dependents[u]) {
            stage.insert(v, i + 1);
        }
    }
    let mut by_stage: Vec<Vec<UnitPath>> = vec![Vec::new(); sequence.len() + 1];
    for path in &planned {
        by_stage[stage.get(path).copied().unwrap_or(0)].push(path.clone());
    }
    let position: BTreeMap<&UnitPath, usize> =
        sequence.iter().enumerate().map(|(i, u)| (u, i)).collect();
    for target in targets.iter_mut() {
        let Some(&i) = position.get(&target.path) else {
            continue;
        };
        target.deps.extend(by_stage[i].iter().cloned());
        target.deps.sort();
        target.deps.dedup();
    }
    renumber_waves(targets);
    sequence.last().cloned()
}

/// The unresolved units in the order they run: path order, each known dependent of another
/// after it (Kahn's algorithm over the known relation, smallest path first).
fn one_at_a_time(
    unknown: &[UnitPath],
    dependents: &BTreeMap<UnitPath, BTreeSet<UnitPath>>,
) -> Vec<UnitPath> {
    let mut waits: BTreeMap<&UnitPath, usize> = unknown.iter().map(|u| (u, 0)).collect();
    for known in dependents.values() {
        for d in known {
            if let Some(n) = waits.get_mut(d) {
                *n += 1;
            }
        }
    }
    let mut ready: BTreeSet<&UnitPath> = waits
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(u, _)| *u)
        .collect();
    let mut out = Vec::with_capacity(unknown.len());
    while let Some(u) = ready.pop_first() {
        out.push(u.clone());
        for d in &dependents[u] {
            if let Some(n) = waits.get_mut(d) {
                *n -= 1;
                if *n == 0 {
                    ready.insert(d);
                }
            }
        }
    }
    // Only a known cycle could leave one out, and units on a cycle are never planned.
    debug_assert_eq!(out.len(), unknown.len(), "unresolved units on a cycle");
    out
}

/// Wave 1 holds the targets with no dependency in the plan, wave k+1 those whose
/// dependencies are all in waves 1..=k: the head graph's waves, with the added edges.
fn renumber_waves(targets: &mut [PlanTarget]) {
    let index: BTreeMap<UnitPath, usize> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.path.clone(), i))
        .collect();
    let mut waits = vec![0usize; targets.len()];
    let mut dependents = vec![Vec::new(); targets.len()];
    for (i, t) in targets.iter().enumerate() {
        for d in t.deps.iter().filter_map(|d| index.get(d)) {
            waits[i] += 1;
            dependents[*d].push(i);
        }
    }
    let mut wave = vec![1usize; targets.len()];
    let mut ready: Vec<usize> = (0..targets.len()).filter(|&i| waits[i] == 0).collect();
    while let Some(i) = ready.pop() {
        for &d in &dependents[i] {
            wave[d] = wave[d].max(wave[i] + 1);
            waits[d] -= 1;
            if waits[d] == 0 {
                ready.push(d);
            }
        }
    }
    for (t, w) in targets.iter_mut().zip(wave) {
        t.wave = w;
    }
    targets.sort_by(|a, b| (a.wave, &a.path).cmp(&(b.wave, &b.path)));
}

#[cfg(test)]
mod tests;
