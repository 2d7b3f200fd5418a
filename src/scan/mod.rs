//! Discovering a checkout: its configuration, units, graph and problems, as
//! one value the CLI and the bot share; and the one pipeline from a change's
//! files to the units a plan walks ([`affected_by`], [`plan_targets`]), so the
//! bot and `cascade plan` cannot choose different units for the same change.

use crate::affected::{Affected, ReadIndex, affected, deleted_units};
use crate::config::RepoConfig;
use crate::discovery::Discovery;
use crate::graph::Graph;
use crate::problem::Problem;
use crate::terragrunt::remote_source::{GitSource, Sources};
use crate::terragrunt::{self, DiscoverOptions};
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

mod destroy;
mod order;
mod targets;

pub use destroy::destroy_targets;
pub use targets::{PlanTarget, UnitDir, head_targets, stack_dir, stack_path, targets, unit_dir};

/// A discovered repository: configuration, units, graph, and every problem found on the way.
pub struct Scan {
    pub config: RepoConfig,
    pub discovery: Discovery,
    pub graph: Graph,
    pub problems: Vec<Problem>,
}

/// Loads `.cascade.yaml` from `dir` and discovers the graph under it. A broken
/// configuration is reported as a problem and discovery goes on without it.
pub fn scan(dir: &Path, root: &Path, features: &[(String, String)]) -> Scan {
    let (config, problem) = config_or_default(dir);
    let mut scan = scan_with(dir, root, config, features);
    scan.problems.extend(problem);
    scan.problems.sort();
    scan
}

/// `.cascade.yaml` in `dir`, or the defaults and the problem that made it unreadable.
pub fn config_or_default(dir: &Path) -> (RepoConfig, Option<Problem>) {
    match RepoConfig::load(dir) {
        Ok(config) => (config, None),
        Err(problem) => (RepoConfig::default(), Some(problem)),
    }
}

/// Discovers `dir` with a configuration read elsewhere (the bot reads it from
/// the base branch, so a pull request cannot change its own configuration).
pub fn scan_with(
    dir: &Path,
    root: &Path,
    config: RepoConfig,
    features: &[(String, String)],
) -> Scan {
    scan_until(dir, root, config, features, None)
}

/// [`scan_with`] that stops at `deadline`: units not evaluated by then are
/// unresolved (planned on every change) and `scan.discovery.timed_out` is set.
/// Blocking and CPU-bound: the bot calls it from `spawn_blocking`.
pub fn scan_with_deadline(
    dir: &Path,
    root: &Path,
    config: RepoConfig,
    features: &[(String, String)],
    deadline: Instant,
) -> Scan {
    scan_until(dir, root, config, features, Some(deadline))
}

fn scan_until(
    dir: &Path,
    root: &Path,
    config: RepoConfig,
    features: &[(String, String)],
    deadline: Option<Instant>,
) -> Scan {
    let sources = Sources::new();
    scan_sourced(dir, root, config, features, deadline, &sources).0
}

/// [`scan_with`] (stopping at `deadline`, if any) whose stacks read the remote
/// sources fetched in `sources`, and the git sources they name that `sources`
/// lacks: `catalog::Catalog::scan` fetches those and scans again.
pub fn scan_sourced(
    dir: &Path,
    root: &Path,
    config: RepoConfig,
    features: &[(String, String)],
    deadline: Option<Instant>,
    sources: &Sources,
) -> (Scan, Vec<GitSource>) {
    let opts = DiscoverOptions {
        dir: dir.to_path_buf(),
        repo_root: root.to_path_buf(),
        config: config.clone(),
        env: Default::default(),
        features: features.iter().cloned().collect(),
        deadline,
        sources: sources.clone(),
    };
    let (discovery, wanted) = terragrunt::discover_wanting(&opts);
    let (graph, cycle_problems) = discovery.graph();
    let mut problems: Vec<Problem> = discovery.problems.clone();
    problems.extend(cycle_problems);
    problems.sort();
    let scan = Scan {
        config,
        discovery,
        graph,
        problems,
    };
    (scan, wanted)
}

impl Scan {
    /// Units whose edges or reads cascade could not work out (planned on
    /// every change), each with its first problem as the reason: an unknown
    /// value, a file cascade would not read. A unit Terragrunt would refuse
    /// (a file that does not parse, an include that names no file) is not
    /// one: it fails ([`Discovery::failures`]).
    pub fn unresolved(&self) -> Vec<(UnitPath, String)> {
        let failures = self.discovery.failures();
        let mut out: Vec<(UnitPath, String)> = Vec::new();
        for unit in self
            .discovery
            .units
            .iter()
            .filter(|u| u.unresolved && !failures.contains_key(&u.path))
        {
            let mine = |p: &&Problem| p.unit.as_ref() == Some(&unit.path);
            let reason = self
                .problems
                .iter()
                .filter(mine)
                .find(|p| p.kind == crate::problem::ProblemKind::Unresolved)
                .or_else(|| self.problems.iter().find(mine))
                .map(|p| p.to_string())
                .unwrap_or_else(|| "cascade could not tell what it reads".to_string());
            out.push((unit.path.clone(), reason));
        }
        out
    }
}

/// The base revision's scan, when the change deletes units: with the directory it was
/// discovered in, where a destroy plan runs.
pub type BaseScan<'a> = (&'a Scan, &'a Path);

/// The units `changed` (paths relative to the discovery directory) affects in `head`,
/// and why. Paths the repository's configuration ignores change nothing. With `base`,
/// units it has and `head` does not are deleted ones, and its graph orders their
/// destroys.
pub fn affected_by(head: &Scan, changed: &[String], base: Option<&Scan>) -> Affected {
    let changed: Vec<String> = changed
        .iter()
        .filter(|f| !head.config.is_ignored(f))
        .cloned()
        .collect();
    let deleted = base
        .map(|b| deleted_units(&b.discovery.units, &head.discovery.units))
        .unwrap_or_default();
    let index = ReadIndex::new(&head.discovery.units);
    affected(
        &index,
        &head.discovery.units,
        &head.graph,
        &changed,
        &deleted,
        base.map(|b| &b.graph),
    )
}

/// What a plan of this change walks: [`affected_by`], cut to `only` and its dependents
/// when a `/plan unit…` names units, as plan targets in `head_dir` (destroys in the
/// base's directory).
pub fn plan_targets(
    head: &Scan,
    head_dir: &Path,
    changed: &[String],
    base: Option<BaseScan<'_>>,
    only: Option<&[UnitPath]>,
) -> Vec<PlanTarget> {
    let mut result = affected_by(head, changed, base.map(|(b, _)| b));
    if let Some(only) = only.filter(|o| !o.is_empty()) {
        let mut keep: BTreeSet<UnitPath> = only.iter().cloned().collect();
        keep.extend(head.graph.dependents_closure(only.iter()).into_keys());
        result.units.retain(|u| keep.contains(&u.path));
    }
    targets(
        &head.discovery,
        &head.graph,
        head_dir,
        &result,
        base.map(|(b, dir)| (&b.discovery, &b.graph, dir)),
    )
}
