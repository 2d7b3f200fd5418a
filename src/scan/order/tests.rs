//! The unresolved units' order: fixed cases read as the rule says, and a property over
//! random graphs: known edges kept, no cycle made, every unresolved unit ordered against
//! every other unit, the last one after everything but its known dependents.

use super::unresolved_last;
use crate::graph::Graph;
use crate::scan::PlanTarget;
use crate::unit::{Tool, UnitPath};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn p(s: &str) -> UnitPath {
    UnitPath::new(s)
}

/// The head targets of `edges` ("a depends on b") over `units`, as `head_targets` makes them.
fn planned(units: &[&str], edges: &[(&str, &str)]) -> (Vec<PlanTarget>, Graph) {
    let graph = Graph::new(
        units.iter().map(|u| p(u)),
        edges.iter().map(|(a, b)| (p(a), p(b))),
    );
    let scope: BTreeSet<UnitPath> = units.iter().map(|u| p(u)).collect();
    let mut out = Vec::new();
    for (i, wave) in graph.waves_of(&scope).iter().enumerate() {
        for path in wave {
            out.push(PlanTarget {
                path: path.clone(),
                wave: i + 1,
                deps: graph.dependencies(path).into_iter().cloned().collect(),
                destroy: false,
                tool: Tool::Terraform,
                dir: PathBuf::from(path.as_str()),
                root: PathBuf::new(),
                sources: Vec::new(),
                init_args: Vec::new(),
                stack: None,
                refused: None,
            });
        }
    }
    (out, graph)
}

/// A target as `(wave, path, deps)`.
type Row = (usize, String, Vec<String>);

/// Orders `units` with `unknown` unresolved: the targets, and the unresolved unit last.
fn ordered(units: &[&str], edges: &[(&str, &str)], unknown: &[&str]) -> (Vec<Row>, Option<String>) {
    let (mut targets, graph) = planned(units, edges);
    let last = unresolved_last(&mut targets, |u| unknown.contains(&u.as_str()), &graph);
    let shown = targets
        .iter()
        .map(|t| {
            let deps = t.deps.iter().map(|d| d.to_string()).collect();
            (t.wave, t.path.to_string(), deps)
        })
        .collect();
    (shown, last.map(|u| u.to_string()))
}

fn row(wave: usize, path: &str, deps: &[&str]) -> Row {
    (
        wave,
        path.to_string(),
        deps.iter().map(|d| d.to_string()).collect(),
    )
}

#[test]
fn an_unresolved_unit_runs_after_every_unit_but_its_known_dependents() {
    // The live-stacks example: `service` needs `db` and `role`, `role` needs `db`; only
    // `role`'s edge is known. `dns` is known to need `service`.
    let (targets, last) = ordered(
        &["db", "dns", "role", "service"],
        &[("role", "db"), ("dns", "service")],
        &["service"],
    );
    assert_eq!(
        targets,
        [
            row(1, "db", &[]),
            row(2, "role", &["db"]),
            row(3, "service", &["db", "role"]),
            row(4, "dns", &["service"]),
        ]
    );
    assert_eq!(last.as_deref(), Some("service"));
}

#[test]
fn a_plan_without_unresolved_units_is_left_as_it_is() {
    let (before, _) = planned(&["a", "b", "c"], &[("b", "a")]);
    let (mut after, graph) = planned(&["a", "b", "c"], &[("b", "a")]);
    assert_eq!(unresolved_last(&mut after, |_| false, &graph), None);
    assert_eq!(after, before);
}

#[test]
fn unresolved_units_run_one_at_a_time_in_path_order() {
    // Every unit unresolved, no edge known (Gruntwork's live-stacks layout).
    let (targets, last) = ordered(&["db", "role", "service"], &[], &["db", "role", "service"]);
    assert_eq!(
        targets,
        [
            row(1, "db", &[]),
            row(2, "role", &["db"]),
            row(3, "service", &["role"]),
        ]
    );
    assert_eq!(last.as_deref(), Some("service"));
}

#[test]
fn a_known_dependency_between_unresolved_units_goes_first_whatever_the_paths() {
    let (targets, last) = ordered(&["a", "m", "z"], &[("a", "z")], &["a", "z"]);
    assert_eq!(
        targets,
        [row(1, "m", &[]), row(2, "z", &["m"]), row(3, "a", &["z"]),]
    );
    assert_eq!(last.as_deref(), Some("a"));
}

#[test]
fn each_unresolved_unit_is_followed_by_its_known_dependents_before_the_next() {
    // `u1` and `u2` unresolved; `v1` needs `u1`, `v2` needs `u2`; `r` stands alone.
    let (targets, _) = ordered(
        &["r", "u1", "u2", "v1", "v2"],
        &[("v1", "u1"), ("v2", "u2")],
        &["u1", "u2"],
    );
    assert_eq!(
        targets,
        [
            row(1, "r", &[]),
            row(2, "u1", &["r"]),
            row(3, "v1", &["u1"]),
            row(4, "u2", &["u1", "v1"]),
            row(5, "v2", &["u2"]),
        ]
    );
}

/// `a` runs before `b` in every walk of `targets`: `b` waits for it, directly or not.
fn before(targets: &[PlanTarget]) -> BTreeMap<UnitPath, BTreeSet<UnitPath>> {
    let deps: BTreeMap<&UnitPath, &Vec<UnitPath>> =
        targets.iter().map(|t| (&t.path, &t.deps)).collect();
    let mut out = BTreeMap::new();
    for t in targets {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&UnitPath> = t.deps.iter().collect();
        while let Some(d) = stack.pop() {
            if seen.insert(d.clone()) {
                stack.extend(deps.get(d).into_iter().flat_map(|v| v.iter()));
            }
        }
        out.insert(t.path.clone(), seen);
    }
    out
}

proptest! {
    #[test]
    fn the_order_is_safe_on_random_graphs(
        n in 1usize..9,
        raw in prop::collection::vec((0usize..9, 0usize..9), 0..14),
        flags in prop::collection::vec(any::<bool>(), 9),
    ) {
        let names: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
        // Edges from a higher index to a lower one: a DAG.
        let edges: Vec<(&str, &str)> = raw
            .iter()
            .filter(|(a, b)| a < &n && b < a)
            .map(|&(a, b)| (names[a].as_str(), names[b].as_str()))
            .collect();
        let units: Vec<&str> = names.iter().map(String::as_str).collect();
        let unknown: BTreeSet<UnitPath> =
            (0..n).filter(|&i| flags[i]).map(|i| p(&names[i])).collect();
        let (mut targets, graph) = planned(&units, &edges);
        let known = before(&targets);
        let last = unresolved_last(&mut targets, |u| unknown.contains(u), &graph);
        let after = before(&targets);
        prop_assert_eq!(targets.len(), n);
        for t in &targets {
            // No cycle; known order kept; waves follow the dependencies.
            prop_assert!(!after[&t.path].contains(&t.path));
            prop_assert!(known[&t.path].is_subset(&after[&t.path]));
            for d in &t.deps {
                let dep = targets.iter().find(|x| &x.path == d).unwrap();
                prop_assert!(dep.wave < t.wave);
            }
        }
        for u in &unknown {
            for t in targets.iter().filter(|t| &t.path != u) {
                // Never at the same time as another unit.
                prop_assert!(after[u].contains(&t.path) || after[&t.path].contains(u));
                // Known dependents come after it.
                if known[&t.path].contains(u) {
                    prop_assert!(after[&t.path].contains(u));
                }
            }
        }
        prop_assert_eq!(last.is_some(), !unknown.is_empty());
        if let Some(last) = last {
            for t in targets.iter().filter(|t| t.path != last) {
                let dependent = graph.dependents_closure([&last]).contains_key(&t.path);
                prop_assert_eq!(after[&last].contains(&t.path), !dependent);
            }
        }
    }
}
