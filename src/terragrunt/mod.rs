//! Discovery of Terragrunt units, their edges and their read sets, by evaluating
//! `terragrunt.hcl` files in process.
//!
//! Owns: finding units, evaluating the parts of their configuration that decide
//! edges (`include`, `locals` on demand, `feature`, `dependency`, `dependencies`,
//! `terraform.source`, `exclude`, legacy `skip`) and the files each unit reads.
//! Must never: execute anything from the repository (`run_cmd`, AWS calls, sops
//! decryption are unknown values), or read a file outside the repository root.

use crate::config::RepoConfig;
use crate::graph::Graph;
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What a directory in the graph is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    /// A directory holding `terragrunt.hcl`.
    Terragrunt,
    /// A directory holding `terragrunt.stack.hcl`: listed, never given edges.
    Stack,
    /// A plain OpenTofu/Terraform root module named in `.cascade.yaml`.
    Module,
}

/// The files a unit reads besides the files of its own directory.
///
/// All paths are relative to the discovery directory, `/`-separated, and may
/// name files that do not exist (a `find_in_parent_folders` probe, an optional
/// var file): adding such a file changes what the unit reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadSet {
    /// Single files.
    pub files: BTreeSet<String>,
    /// Directories read recursively (local module sources).
    pub dirs: BTreeSet<String>,
    /// Glob patterns (`fileset`, `mark_glob_as_read`), relative to the discovery directory.
    pub globs: BTreeSet<String>,
}

/// One discovered unit.
#[derive(Clone, Debug)]
pub struct Unit {
    pub path: UnitPath,
    pub kind: UnitKind,
    /// Units this one depends on, sorted, without duplicates.
    pub dependencies: Vec<UnitPath>,
    /// Files read besides the unit's own directory (which is always read).
    pub reads: ReadSet,
    /// Every file inside the unit's own directory (not descending into nested units).
    pub own_files: Vec<String>,
    /// True when an edge or read expression stayed unknown: the unit is then
    /// affected by any change.
    pub unresolved: bool,
    /// Why the unit is excluded from plans (an `exclude` block or legacy `skip`), if it is.
    pub excluded: Option<String>,
    /// Which executor the repo config asks for, if it names one.
    pub executor: Option<crate::config::Executor>,
}

/// Everything discovery found: units sorted by path, and the problems met on the way.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    pub units: Vec<Unit>,
    pub problems: Vec<Problem>,
    /// Every file the walk saw, relative to the discovery directory, sorted.
    pub files: Vec<String>,
}

/// Where and how to discover.
#[derive(Clone, Debug)]
pub struct DiscoverOptions {
    /// The directory whose units are discovered (`--repo`); output paths are relative to it.
    pub dir: PathBuf,
    /// The repository root: `get_repo_root()`, and the boundary no read may cross.
    /// Usually the git top-level that holds `dir`, or `dir` itself.
    pub repo_root: PathBuf,
    /// The repo configuration (`.cascade.yaml`), already loaded.
    pub config: RepoConfig,
    /// Values for `get_env`; a variable not here is unknown unless the call gives a default.
    pub env: BTreeMap<String, String>,
    /// Feature flag values that override `feature` block defaults (`--feature name=value`).
    pub features: BTreeMap<String, String>,
}

impl Discovery {
    pub fn unit(&self, path: &UnitPath) -> Option<&Unit> {
        self.units
            .binary_search_by(|u| u.path.cmp(path))
            .ok()
            .map(|i| &self.units[i])
    }

    /// Everything `unit` reads, as a sorted list of paths: its own files, the
    /// files it reads, every file of the module directories it reads, and
    /// glob patterns as written.
    pub fn reads_of(&self, unit: &Unit) -> Vec<String> {
        let mut all: BTreeSet<String> = unit.own_files.iter().cloned().collect();
        all.extend(unit.reads.files.iter().cloned());
        for dir in &unit.reads.dirs {
            let prefix = format!("{dir}/");
            let start = self.files.partition_point(|f| f.as_str() < prefix.as_str());
            let under: Vec<&String> = self.files[start..]
                .iter()
                .take_while(|f| f.starts_with(&prefix))
                .collect();
            if under.is_empty() {
                all.insert(prefix);
            } else {
                all.extend(under.into_iter().cloned());
            }
        }
        all.extend(unit.reads.globs.iter().cloned());
        all.into_iter().collect()
    }

    /// The dependency graph of the units that are not excluded, and the cycle
    /// problems it has. Edges to excluded units are dropped: Terragrunt runs
    /// their dependents as if the excluded unit were already applied.
    pub fn graph(&self) -> (Graph, Vec<Problem>) {
        let live = |p: &UnitPath| self.unit(p).is_some_and(|u| u.excluded.is_none());
        let nodes = self
            .units
            .iter()
            .filter(|u| u.excluded.is_none())
            .map(|u| u.path.clone());
        let edges = self
            .units
            .iter()
            .filter(|u| u.excluded.is_none())
            .flat_map(|u| {
                u.dependencies
                    .iter()
                    .filter(|d| live(d))
                    .map(|d| (u.path.clone(), d.clone()))
            });
        let graph = Graph::new(nodes, edges.collect::<Vec<_>>());
        let problems = graph
            .cycles()
            .into_iter()
            .map(|cycle| {
                let first = cycle[0].clone();
                let file = if first.as_str() == "." { "terragrunt.hcl".to_string() } else { format!("{first}/terragrunt.hcl") };
                let message = format!(
                    "dependency cycle: {}; remove one of these dependencies (or set `enabled = false` on it)",
                    Graph::cycle_message(&cycle)
                );
                Problem::new(ProblemKind::Cycle, message).unit(&first).at(file, None, None)
            })
            .collect();
        (graph, problems)
    }
}

mod calls;
mod context;
mod eval;
mod fs;
mod funcs;
pub mod parse;
pub mod paths;
mod reads;
mod unit_config;
pub mod value;

mod discover;
pub use discover::discover;
