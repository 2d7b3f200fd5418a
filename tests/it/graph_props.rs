//! Properties of `cascade::graph::Graph` on random DAGs whose path order is unrelated to
//! their topological order, plus the same DAGs with one edge added to close a cycle.

use std::collections::{BTreeMap, BTreeSet};

use cascade::graph::Graph;
use cascade::unit::UnitPath;
use proptest::prelude::*;
use proptest::sample::Index;

/// A random DAG as the test sees it: node `i` is `names[i]`, and every edge `(a, b)` has
/// `a > b`, so index order is a topological order while path order is shuffled.
#[derive(Clone, Debug)]
struct Dag {
    names: Vec<UnitPath>,
    edges: BTreeSet<(usize, usize)>,
}

impl Dag {
    fn graph(&self) -> Graph {
        Graph::new(
            self.names.iter().cloned(),
            self.edges.iter().map(|&(a, b)| self.edge(a, b)),
        )
    }

    fn edge(&self, a: usize, b: usize) -> (UnitPath, UnitPath) {
        (self.names[a].clone(), self.names[b].clone())
    }

    /// The edge set by path, for checks that do not trust `Graph`.
    fn edge_paths(&self) -> BTreeSet<(UnitPath, UnitPath)> {
        self.edges.iter().map(|&(a, b)| self.edge(a, b)).collect()
    }
}

fn names(n: usize) -> BoxedStrategy<Vec<UnitPath>> {
    let padded = Just(
        (0..n)
            .map(|i| UnitPath::new(format!("u{i:03}")))
            .collect::<Vec<_>>(),
    )
    .boxed();
    let random = prop::collection::btree_set("[a-z]{1,3}(/[a-z0-9-]{1,4}){0,2}", n)
        .prop_map(|set| set.into_iter().map(UnitPath::new).collect::<Vec<_>>())
        .boxed();
    prop_oneof![padded, random].prop_shuffle().boxed()
}

fn dag() -> impl Strategy<Value = Dag> {
    (0usize..60)
        .prop_flat_map(|n| {
            (
                names(n),
                prop::collection::vec((any::<Index>(), any::<Index>()), 0..=3 * n),
            )
        })
        .prop_map(|(names, picks)| {
            let n = names.len();
            let edges = picks
                .into_iter()
                .filter(|_| n > 1)
                .map(|(a, b)| (a.index(n), b.index(n)))
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (a.max(b), a.min(b)))
                .collect();
            Dag { names, edges }
        })
}

/// Each unit's wave number; panics if a unit appears twice.
fn wave_of(waves: &[Vec<UnitPath>]) -> BTreeMap<UnitPath, usize> {
    let mut at = BTreeMap::new();
    for (k, wave) in waves.iter().enumerate() {
        for u in wave {
            assert!(at.insert(u.clone(), k).is_none(), "{u} is in two waves");
        }
    }
    at
}

fn assert_sorted(waves: &[Vec<UnitPath>]) {
    for wave in waves {
        assert!(!wave.is_empty(), "empty wave");
        assert!(
            wave.windows(2).all(|w| w[0] < w[1]),
            "wave not sorted: {wave:?}"
        );
    }
}

/// Transitive dependents by naive search, as the oracle for `dependents_closure`.
fn naive_dependents(dag: &Dag, seeds: &BTreeSet<usize>) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack: Vec<usize> = seeds.iter().copied().collect();
    while let Some(u) = stack.pop() {
        for &(a, b) in &dag.edges {
            if b == u && found.insert(a) {
                stack.push(a);
            }
        }
    }
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn waves_partition_the_units_and_respect_every_edge(dag in dag()) {
        let g = dag.graph();
        let all: BTreeSet<UnitPath> = dag.names.iter().cloned().collect();
        for waves in [g.waves(), g.waves_down()] {
            assert_sorted(&waves);
            let at = wave_of(&waves);
            prop_assert_eq!(at.keys().cloned().collect::<BTreeSet<_>>(), all.clone());
        }
        let up = wave_of(&g.waves());
        let down = wave_of(&g.waves_down());
        for (a, b) in dag.edge_paths() {
            prop_assert!(up[&a] > up[&b], "{} -> {}: up waves {} vs {}", a, b, up[&a], up[&b]);
            prop_assert!(down[&b] > down[&a], "{} -> {}: down waves {} vs {}", a, b, down[&a], down[&b]);
        }
    }

    #[test]
    fn each_unit_is_in_the_earliest_wave_its_dependencies_allow(dag in dag()) {
        let g = dag.graph();
        let up = wave_of(&g.waves());
        for u in &dag.names {
            let expected = g.dependencies(u).iter().map(|d| up[*d] + 1).max().unwrap_or(0);
            prop_assert_eq!(up[u], expected, "{}", u);
        }
    }

    #[test]
    fn waves_of_partitions_its_scope(dag in dag(), picks in prop::collection::vec(any::<Index>(), 0..40)) {
        let g = dag.graph();
        let scope: BTreeSet<UnitPath> = picks
            .iter()
            .filter(|_| !dag.names.is_empty())
            .map(|i| dag.names[i.index(dag.names.len())].clone())
            .collect();
        for (waves, dependency_first) in [(g.waves_of(&scope), true), (g.waves_down_of(&scope), false)] {
            assert_sorted(&waves);
            let at = wave_of(&waves);
            prop_assert_eq!(at.keys().cloned().collect::<BTreeSet<_>>(), scope.clone());
            for (a, b) in dag.edge_paths() {
                if let (Some(wa), Some(wb)) = (at.get(&a), at.get(&b)) {
                    prop_assert_eq!(wa > wb, dependency_first, "{} -> {}", a, b);
                }
            }
        }
    }

    #[test]
    fn dependents_closure_is_exactly_the_transitive_dependents(
        dag in dag(),
        picks in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let g = dag.graph();
        let seeds: BTreeSet<usize> = picks
            .iter()
            .filter(|_| !dag.names.is_empty())
            .map(|i| i.index(dag.names.len()))
            .collect();
        let closure = g.dependents_closure(seeds.iter().map(|&s| &dag.names[s]));
        let expected: BTreeSet<UnitPath> = naive_dependents(&dag, &seeds).into_iter().map(|i| dag.names[i].clone()).collect();
        prop_assert_eq!(closure.keys().cloned().collect::<BTreeSet<_>>(), expected);
        // Closed under dependents, and each unit was reached through one of its dependencies.
        let members = seeds.iter().map(|&s| &dag.names[s]).chain(closure.keys());
        for m in members {
            for d in g.dependents(m) {
                prop_assert!(closure.contains_key(d), "{} depends on member {} but is missing", d, m);
            }
        }
        for (u, from) in &closure {
            prop_assert!(g.dependencies(u).contains(&from), "{} was reached from {}, not a dependency", u, from);
            let from_is_seed = seeds.iter().any(|&s| &dag.names[s] == from);
            prop_assert!(from_is_seed || closure.contains_key(from));
        }
    }

    #[test]
    fn critical_path_is_a_chain_as_long_as_the_waves(dag in dag()) {
        let g = dag.graph();
        let path = g.critical_path();
        prop_assert_eq!(path.len(), g.waves().len());
        for pair in path.windows(2) {
            prop_assert!(g.dependents(&pair[0]).contains(&&pair[1]), "{} does not depend on {}", pair[1], pair[0]);
        }
    }

    #[test]
    fn a_back_edge_makes_a_reported_cycle_that_really_is_one(
        dag in dag().prop_filter("needs a unit", |d| !d.names.is_empty()),
        pick_top in any::<Index>(),
        pick_bottom in any::<Index>(),
    ) {
        // Close a loop: the bottom unit is the top unit itself (a self-loop) or one of its
        // transitive dependencies, and it now depends on the top unit.
        let top = pick_top.index(dag.names.len());
        let below: Vec<usize> = naive_dependencies(&dag, top).into_iter().chain([top]).collect();
        let bottom = below[pick_bottom.index(below.len())];
        let mut cyclic = dag.clone();
        cyclic.edges.insert((bottom, top));
        let g = cyclic.graph();
        let edges = cyclic.edge_paths();
        let cycles = g.cycles();
        prop_assert!(!cycles.is_empty());
        prop_assert!(cycles.windows(2).all(|w| w[0][0] < w[1][0]), "not sorted by first unit");
        let mut on_cycles = BTreeSet::new();
        for cycle in &cycles {
            let distinct: BTreeSet<&UnitPath> = cycle.iter().collect();
            prop_assert_eq!(distinct.len(), cycle.len(), "not simple: {:?}", cycle);
            prop_assert_eq!(distinct.first().copied(), cycle.first(), "does not start at its smallest unit");
            for (i, u) in cycle.iter().enumerate() {
                let next = &cycle[(i + 1) % cycle.len()];
                prop_assert!(edges.contains(&(u.clone(), next.clone())), "{} -> {} is not an edge", u, next);
            }
            on_cycles.extend(distinct.into_iter().cloned());
        }
        let in_waves = wave_of(&g.waves());
        prop_assert!(in_waves.keys().all(|u| !on_cycles.contains(u)), "a unit on a cycle got a wave");
        prop_assert!(!in_waves.contains_key(&cyclic.names[top]));
    }
}

fn naive_dependencies(dag: &Dag, from: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack = vec![from];
    while let Some(u) = stack.pop() {
        for &(a, b) in &dag.edges {
            if a == u && found.insert(b) {
                stack.push(b);
            }
        }
    }
    found
}

/// A 10,000-unit, ~30,000-edge layered graph, the size the bot must handle. Its speed is
/// measured by `cargo bench --bench discovery`; this checks the answers at that size.
#[test]
fn large_graph() {
    let n = 10_000usize;
    let name = |i: usize| UnitPath::new(format!("live/acct-{:02}/unit-{:05}", (i * 7919) % 97, i));
    // Deterministic pseudo-random edges from a unit to three units below it.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut edges = Vec::new();
    for a in 1..n {
        for _ in 0..3 {
            let span = a.min(200) as u64;
            let b = a - 1 - (next() % span) as usize;
            edges.push((name(a), name(b)));
        }
    }
    let g = Graph::new((0..n).map(name), edges);
    assert_eq!(g.len(), n);

    let seed = name(5_000);
    assert!(g.dependents_closure([&seed]).len() > 1_000);
    assert_eq!(g.waves().iter().map(Vec::len).sum::<usize>(), n);
    assert!(g.cycles().is_empty());
}
