//! Discovery of Terragrunt units, their edges and their read sets, by evaluating
//! `terragrunt.hcl` files in process.
//!
//! Owns: finding units, evaluating the parts of their configuration that decide
//! edges (`include`, `locals` on demand, `feature`, `dependency`, `dependencies`,
//! `terraform.source`, `exclude`, legacy `skip`) and the files each unit reads.
//! Must never: execute anything from the repository (`run_cmd`, AWS calls, sops
//! decryption are unknown values), read a file outside the repository root
//! (symbolic links included), run unbounded (see [`limits`]), or put a file's
//! contents or the server's absolute paths into a problem.
//!
//! What a problem may quote: names written in the configuration's syntax
//! (locals, labels, functions, attributes), repository-relative paths of the
//! files and lines where something went wrong, and computed paths only as
//! `context::Instance::shown_path` allows: a path that exists in the
//! repository, or one computed before the unit read any file's contents as
//! data (`file()`, `read_tfvars_file()`), short and printable. Values are
//! described by their kind ("expected a number, found a string"), never quoted.

use crate::config::RepoConfig;
use crate::graph::Graph;
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// True when the deadline stopped discovery: units it did not finish are
    /// unresolved (each with a problem saying so).
    pub timed_out: bool,
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
    /// When to stop: units not evaluated by then are unresolved and
    /// [`Discovery::timed_out`] is set. `None` runs to the end (every unit is
    /// still bounded by [`limits::MAX_STEPS_PER_UNIT`]).
    pub deadline: Option<Instant>,
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

mod budget;
mod calls;
mod context;
mod eval;
mod fs;
mod funcs;
pub mod limits;
pub mod parse;
pub mod paths;
mod reads;
#[cfg(test)]
mod stack_tests;
mod unit_config;
pub mod value;

mod discover;
pub use discover::discover;

/// Discovers a repository made of `files` (repo-relative path, contents),
/// written to a temporary directory: the entry point for fuzzing and for
/// trying a configuration without a checkout. Paths that are absolute or
/// climb with `..` are skipped; the repository has no `.cascade.yaml` unless
/// `files` holds one (it is read like any other).
pub fn discover_files(files: &[(&str, &[u8])]) -> Discovery {
    match scratch_repository(files) {
        Ok((_tmp, opts, config_problem)) => {
            let mut discovery = discover(&opts);
            discovery.problems.extend(config_problem);
            discovery
        }
        Err(_) => Discovery {
            problems: vec![Problem::new(
                ProblemKind::Config,
                "cannot write the files to a temporary directory to discover them",
            )],
            ..Discovery::default()
        },
    }
}

/// `files` written to a new temporary directory, the options that discover
/// all of it, and the problem its `.cascade.yaml` has, if any.
fn scratch_repository(
    files: &[(&str, &[u8])],
) -> std::io::Result<(tempfile::TempDir, DiscoverOptions, Option<Problem>)> {
    let tmp = tempfile::tempdir()?;
    for (path, contents) in files {
        let Some(rel) = paths::clean(path).filter(|r| !r.is_empty() && !path.starts_with('/'))
        else {
            continue;
        };
        let target = tmp.path().join(&rel);
        // A path that collides with one already written is skipped.
        let _ = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, contents));
    }
    let root: &Path = tmp.path();
    let (config, config_problem) = match RepoConfig::load(root) {
        Ok(config) => (config, None),
        Err(problem) => (RepoConfig::default(), Some(problem)),
    };
    let opts = DiscoverOptions {
        dir: root.to_path_buf(),
        repo_root: root.to_path_buf(),
        config,
        env: BTreeMap::new(),
        features: BTreeMap::new(),
        deadline: None,
    };
    Ok((tmp, opts, config_problem))
}
