//! The dependency graph between units: its edges, the waves it is planned, applied and
//! destroyed in, its cycles, its critical path, and the DOT and Mermaid pictures of it.
//!
//! A [`Graph`] is built once from what discovery found and is read-only afterwards. Every
//! answer is sorted by path (byte order), because answers end up in PR comments and in the
//! plan id, and those must not change between two runs over the same repository.
//!
//! This module must never touch the filesystem, git, the network or a process: it takes
//! nodes and edges and returns values. That keeps it pure enough to property-test and fast
//! enough for 10,000-unit graphs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use petgraph::Directed;
use petgraph::algo::tred::{dag_to_toposorted_adjacency_list, dag_transitive_reduction_closure};
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::csr::Csr;
use petgraph::graph::DiGraph;
use petgraph::visit::IntoNeighbors;

use crate::unit::UnitPath;

/// Sorted adjacency: petgraph's CSR keeps each node's neighbours in index order, and since
/// node indices follow path order, every traversal visits neighbours in path order for free.
type Adjacency = Csr<(), (), Directed, u32>;

/// The unit dependency graph. Edge `a -> b` means "a depends on b".
#[derive(Clone, Debug)]
pub struct Graph {
    /// Sorted and unique: node `i` is `units[i]`, so sorting indices sorts paths.
    units: Vec<UnitPath>,
    /// For each node, what it depends on.
    dependencies: Adjacency,
    /// For each node, what depends on it.
    dependents: Adjacency,
}

/// Which way a Kahn walk goes: apply places dependencies first, destroy dependents first.
#[derive(Clone, Copy)]
enum Walk {
    Apply,
    Destroy,
}

impl Graph {
    /// Builds the graph. Edges `(a, b)` mean "a depends on b". Nodes are sorted by path and
    /// deduplicated; duplicate edges collapse. An edge whose end is not a node is a
    /// programming error (discovery reports missing dependencies before building the graph):
    /// it panics in debug builds and is dropped in release builds.
    pub fn new(
        nodes: impl IntoIterator<Item = UnitPath>,
        edges: impl IntoIterator<Item = (UnitPath, UnitPath)>,
    ) -> Graph {
        let mut units: Vec<UnitPath> = nodes.into_iter().collect();
        units.sort_unstable();
        units.dedup();
        assert!(
            u32::try_from(units.len()).is_ok_and(|n| n < u32::MAX),
            "too many units for a u32-indexed graph"
        );
        let mut forward = Vec::new();
        for (a, b) in edges {
            let ends = index_in(&units, &a).zip(index_in(&units, &b));
            debug_assert!(
                ends.is_some(),
                "edge {a} -> {b} names a unit that is not in the graph"
            );
            forward.extend(ends);
        }
        let mut backward: Vec<(u32, u32)> = forward.iter().map(|&(a, b)| (b, a)).collect();
        Graph {
            dependencies: adjacency(units.len(), &mut forward),
            dependents: adjacency(units.len(), &mut backward),
            units,
        }
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// True when the graph has no units.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Every unit, sorted by path.
    pub fn units(&self) -> Vec<&UnitPath> {
        self.units.iter().collect()
    }

    /// True when `u` is a unit of this graph.
    pub fn contains(&self, u: &UnitPath) -> bool {
        self.index(u).is_some()
    }

    /// What `u` depends on directly, sorted by path. Empty for an unknown unit.
    pub fn dependencies(&self, u: &UnitPath) -> Vec<&UnitPath> {
        self.neighbours(&self.dependencies, u)
    }

    /// What depends on `u` directly, sorted by path. Empty for an unknown unit.
    pub fn dependents(&self, u: &UnitPath) -> Vec<&UnitPath> {
        self.neighbours(&self.dependents, u)
    }

    /// Every cycle: one per strongly connected component with more than one unit, and one per
    /// self-loop. Each is the ordered unit list of one simple cycle through the component's
    /// smallest path, starting there and not repeating the start (`[a, c, b]` for
    /// `a -> c -> b -> a`). It is a shortest such cycle, so a self-loop on the smallest unit
    /// wins over a longer loop through it. Sorted by first element.
    pub fn cycles(&self) -> Vec<Vec<UnitPath>> {
        let components = self.cyclic_components();
        // A node's component number, so the search below stays inside its component;
        // `NONE` marks nodes outside every cyclic component.
        let mut component_of = vec![NONE; self.len()];
        for (c, members) in components.iter().enumerate() {
            for &u in members {
                component_of[u as usize] = c as u32;
            }
        }
        // Shared across components (they are disjoint), so the whole search is O(V + E).
        let mut reached_from = vec![NONE; self.len()];
        let mut cycles: Vec<Vec<UnitPath>> = components
            .iter()
            .enumerate()
            .map(|(c, members)| {
                let start = members[0];
                let last = self.shortest_return(start, c as u32, &component_of, &mut reached_from);
                let mut cycle = vec![last];
                while let Some(&u) = cycle.last()
                    && u != start
                {
                    cycle.push(reached_from[u as usize]);
                }
                cycle.reverse();
                self.paths(&cycle)
            })
            .collect();
        cycles.sort_unstable();
        cycles
    }

    /// `"a -> c -> b -> a"` for a cycle as returned by [`Graph::cycles`]
    /// (`"foo -> foo"` for a self-loop).
    pub fn cycle_message(cycle: &[UnitPath]) -> String {
        let mut message = String::new();
        for u in cycle.iter().chain(cycle.first()) {
            if !message.is_empty() {
                message.push_str(" -> ");
            }
            message.push_str(u.as_str());
        }
        message
    }

    /// Apply waves over the whole graph: wave 1 holds the units with no dependencies, wave
    /// k+1 the units whose dependencies are all in waves 1..=k; each wave is sorted by path.
    /// Units on a cycle, and everything that depends on them, are left out: they can never
    /// become ready.
    pub fn waves(&self) -> Vec<Vec<UnitPath>> {
        self.wave_paths(Walk::Apply, &vec![true; self.len()])
    }

    /// Destroy waves over the whole graph: a unit comes after everything that depends on it.
    /// Units that can never become ready are left out, which here means units on a cycle and
    /// everything they depend on.
    pub fn waves_down(&self) -> Vec<Vec<UnitPath>> {
        self.wave_paths(Walk::Destroy, &vec![true; self.len()])
    }

    /// [`Graph::waves`] restricted to `scope`. Dependencies outside the scope are taken as
    /// already applied, as Terragrunt's queue does. Scope entries that are not units of the
    /// graph are ignored.
    pub fn waves_of(&self, scope: &BTreeSet<UnitPath>) -> Vec<Vec<UnitPath>> {
        self.wave_paths(Walk::Apply, &self.scope_mask(scope))
    }

    /// [`Graph::waves_down`] restricted to `scope`; dependents outside the scope are taken as
    /// already destroyed.
    pub fn waves_down_of(&self, scope: &BTreeSet<UnitPath>) -> Vec<Vec<UnitPath>> {
        self.wave_paths(Walk::Destroy, &self.scope_mask(scope))
    }

    /// The transitive dependents of `seeds`. A seed is in the result only when it is
    /// reachable from another seed (or from itself, through a cycle). Each unit maps to the
    /// dependency through which it was first reached, in one breadth-first search that
    /// visits seeds and neighbours in path order; the comment prints it as
    /// "depends on <unit>". Seeds that are not units are ignored.
    pub fn dependents_closure<'a>(
        &self,
        seeds: impl IntoIterator<Item = &'a UnitPath>,
    ) -> BTreeMap<UnitPath, UnitPath> {
        // petgraph's `Bfs` does not record which edge discovered a node, and that edge is
        // the answer here, so the (short) search is written out.
        let mut queue: Vec<u32> = seeds.into_iter().filter_map(|s| self.index(s)).collect();
        queue.sort_unstable();
        queue.dedup();
        let mut queued = vec![false; self.len()];
        for &s in &queue {
            queued[s as usize] = true;
        }
        let mut reached_from = vec![NONE; self.len()];
        let mut head = 0;
        while let Some(&u) = queue.get(head) {
            head += 1;
            for &d in self.dependents.neighbors_slice(u) {
                if reached_from[d as usize] == NONE {
                    reached_from[d as usize] = u;
                    if !queued[d as usize] {
                        queued[d as usize] = true;
                        queue.push(d);
                    }
                }
            }
        }
        reached_from
            .iter()
            .enumerate()
            .filter(|&(_, &from)| from != NONE)
            .map(|(d, &from)| (self.units[d].clone(), self.units[from as usize].clone()))
            .collect()
    }

    /// The longest dependency chain by number of units, dependencies first: each unit
    /// depends on the one before it. With enough parallelism an apply takes as long as this
    /// chain. Ties go to the smaller path at each step, starting with the first unit. Units
    /// on cycles are ignored. Empty for an empty graph.
    pub fn critical_path(&self) -> Vec<UnitPath> {
        let mut acyclic = vec![true; self.len()];
        for members in self.cyclic_components() {
            for u in members {
                acyclic[u as usize] = false;
            }
        }
        // Removing every unit on a cycle leaves a DAG, so these waves hold every other unit.
        let levels = self.levels(Walk::Apply, &acyclic);
        // `height[u]` = units in the longest chain that starts at u and walks dependents.
        let mut height = vec![0u32; self.len()];
        for &u in levels.iter().rev().flatten() {
            let above = self.dependents.neighbors_slice(u).iter();
            height[u as usize] = 1 + above.map(|&d| height[d as usize]).max().unwrap_or(0);
        }
        // Unit indices ascend in path order, so the first maximum is the smallest path.
        let Some(mut u) = (0..self.len() as u32)
            .filter(|&u| acyclic[u as usize])
            .max_by_key(|&u| (height[u as usize], std::cmp::Reverse(u)))
        else {
            return Vec::new();
        };
        let mut chain = vec![u];
        while height[u as usize] > 1 {
            let want = height[u as usize] - 1;
            let mut above = self.dependents.neighbors_slice(u).iter();
            u = *above
                .find(|&&d| height[d as usize] == want)
                .expect("a unit of height h > 1 has a dependent of height h - 1");
            chain.push(u);
        }
        self.paths(&chain)
    }

    /// Graphviz DOT in the style of Terragrunt's `dag graph`: every unit in path order,
    /// each followed by its edges sorted by target. With `full == false`, edges implied by
    /// other paths are dropped (transitive reduction), as `tofu graph` does, which keeps big
    /// pictures readable. A graph with a cycle has no transitive reduction, so then every
    /// edge is drawn.
    pub fn to_dot(&self, full: bool) -> String {
        let edges = if full {
            self.edges()
        } else {
            self.reduced_edges()
        };
        let mut edges = edges.iter().peekable();
        let mut out = String::from("digraph {\n");
        for (a, unit) in self.units.iter().enumerate() {
            let _ = writeln!(out, "\t\"{}\" ;", dot_escape(unit.as_str()));
            while let Some(&(_, b)) = edges.next_if(|&&(from, _)| from as usize == a) {
                let dependency = self.units[b as usize].as_str();
                let _ = writeln!(
                    out,
                    "\t\"{}\" -> \"{}\";",
                    dot_escape(unit.as_str()),
                    dot_escape(dependency)
                );
            }
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart: one node per unit with id `n<index>` (path order) and the path as
    /// its label, then one `dependent --> dependency` arrow per edge of the transitive
    /// reduction (every edge if the graph has a cycle), as in [`Graph::to_dot`].
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        for (i, unit) in self.units.iter().enumerate() {
            let _ = writeln!(out, "  n{i}[\"{}\"]", mermaid_escape(unit.as_str()));
        }
        for (a, b) in self.reduced_edges() {
            let _ = writeln!(out, "  n{a} --> n{b}");
        }
        out
    }

    fn index(&self, u: &UnitPath) -> Option<u32> {
        index_in(&self.units, u)
    }

    fn neighbours(&self, adjacency: &Adjacency, u: &UnitPath) -> Vec<&UnitPath> {
        let Some(i) = self.index(u) else {
            return Vec::new();
        };
        adjacency
            .neighbors_slice(i)
            .iter()
            .map(|&v| &self.units[v as usize])
            .collect()
    }

    fn paths(&self, nodes: &[u32]) -> Vec<UnitPath> {
        nodes
            .iter()
            .map(|&u| self.units[u as usize].clone())
            .collect()
    }

    fn scope_mask(&self, scope: &BTreeSet<UnitPath>) -> Vec<bool> {
        let mut mask = vec![false; self.len()];
        for i in scope.iter().filter_map(|u| self.index(u)) {
            mask[i as usize] = true;
        }
        mask
    }

    /// Every edge `(a, b)`, sorted.
    fn edges(&self) -> Vec<(u32, u32)> {
        (0..self.len() as u32)
            .flat_map(|a| {
                self.dependencies
                    .neighbors_slice(a)
                    .iter()
                    .map(move |&b| (a, b))
            })
            .collect()
    }

    /// The cyclic strongly connected components (more than one unit, or a self-loop), each
    /// sorted, in no particular order.
    fn cyclic_components(&self) -> Vec<Vec<u32>> {
        tarjan_scc(&self.dependencies)
            .into_iter()
            .filter(|c| c.len() > 1 || self.dependencies.contains_edge(c[0], c[0]))
            .map(|mut c| {
                c.sort_unstable();
                c
            })
            .collect()
    }

    /// Breadth-first search from `start` along dependencies inside component `c` until an
    /// edge leads back to `start`; returns the unit that has that edge. The tree is left in
    /// `reached_from`, so the cycle is read back from there. Breadth-first makes the cycle a
    /// shortest one, and path-ordered neighbours make it the same one every time.
    fn shortest_return(
        &self,
        start: u32,
        c: u32,
        component_of: &[u32],
        reached_from: &mut [u32],
    ) -> u32 {
        let mut queue = vec![start];
        let mut head = 0;
        while let Some(&u) = queue.get(head) {
            head += 1;
            for &d in self.dependencies.neighbors_slice(u) {
                if d == start {
                    return u;
                }
                if component_of[d as usize] == c && reached_from[d as usize] == NONE {
                    reached_from[d as usize] = u;
                    queue.push(d);
                }
            }
        }
        unreachable!("a cyclic component has a cycle through each of its units")
    }

    /// Kahn levels over the units in `in_scope`, ignoring edges that leave the scope. One
    /// pass, O(V + E) plus sorting each level.
    fn levels(&self, walk: Walk, in_scope: &[bool]) -> Vec<Vec<u32>> {
        let (before, after) = match walk {
            Walk::Apply => (&self.dependencies, &self.dependents),
            Walk::Destroy => (&self.dependents, &self.dependencies),
        };
        let mut waiting = vec![0u32; self.len()];
        let mut ready = Vec::new();
        for u in (0..self.len() as u32).filter(|&u| in_scope[u as usize]) {
            let n = before
                .neighbors_slice(u)
                .iter()
                .filter(|&&v| in_scope[v as usize])
                .count();
            waiting[u as usize] = n as u32;
            if n == 0 {
                ready.push(u);
            }
        }
        let mut levels = Vec::new();
        while !ready.is_empty() {
            let mut next = Vec::new();
            for &u in &ready {
                for &v in after
                    .neighbors_slice(u)
                    .iter()
                    .filter(|&&v| in_scope[v as usize])
                {
                    waiting[v as usize] -= 1;
                    if waiting[v as usize] == 0 {
                        next.push(v);
                    }
                }
            }
            next.sort_unstable();
            levels.push(std::mem::replace(&mut ready, next));
        }
        levels
    }

    fn wave_paths(&self, walk: Walk, in_scope: &[bool]) -> Vec<Vec<UnitPath>> {
        self.levels(walk, in_scope)
            .iter()
            .map(|level| self.paths(level))
            .collect()
    }

    /// The transitive reduction's edges, sorted; every edge when the graph has a cycle.
    fn reduced_edges(&self) -> Vec<(u32, u32)> {
        let edges = self.edges();
        let mut graph = DiGraph::<(), (), u32>::with_capacity(self.len(), edges.len());
        for _ in &self.units {
            graph.add_node(());
        }
        graph.extend_with_edges(&edges);
        let Ok(order) = toposort(&graph, None) else {
            return edges;
        };
        let (ranked, _) = dag_to_toposorted_adjacency_list::<_, u32>(&graph, &order);
        // The closure also computed here can be quadratic in size on deep graphs; it is
        // dropped at once, and renderings are rare next to plans.
        let (reduction, _closure) = dag_transitive_reduction_closure(&ranked);
        let mut kept: Vec<(u32, u32)> = reduction
            .node_indices()
            .flat_map(|a| {
                let from = order[a as usize].index() as u32;
                reduction.neighbors(a).map(move |b| (from, b))
            })
            .map(|(from, b)| (from, order[b as usize].index() as u32))
            .collect();
        kept.sort_unstable();
        kept
    }
}

/// Marks "not reached" / "in no component" in index-valued arrays.
const NONE: u32 = u32::MAX;

fn index_in(units: &[UnitPath], u: &UnitPath) -> Option<u32> {
    units.binary_search(u).ok().map(|i| i as u32)
}

/// Sorts and deduplicates `edges` and builds a CSR with exactly `nodes` nodes (the CSR
/// constructor only creates nodes up to the largest edge end).
fn adjacency(nodes: usize, edges: &mut Vec<(u32, u32)>) -> Adjacency {
    edges.sort_unstable();
    edges.dedup();
    let mut csr =
        Adjacency::from_sorted_edges(edges).expect("edges were just sorted and deduplicated");
    while csr.node_count() < nodes {
        csr.add_node(());
    }
    csr
}

/// Paths come from directory names, which may hold any character DOT treats specially.
fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn mermaid_escape(s: &str) -> String {
    s.replace('"', "#quot;")
}

#[cfg(test)]
mod tests;
