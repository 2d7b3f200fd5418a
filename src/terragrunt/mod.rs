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
use crate::discovery::{Discovery, ReadSet, Unit, UnitKind};
use crate::problem::{Problem, ProblemKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// Remote stack sources fetched for this discovery (by `catalog`): a stack's
    /// `unit` or `stack` block whose git source is here is generated from the fetched
    /// tree; one that is not is unresolved and named in what [`discover_wanting`]
    /// returns. Empty: nothing remote is read.
    pub sources: remote_source::Sources,
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
pub mod remote_source;
#[cfg(test)]
mod stack_tests;
mod unit_config;
pub mod value;

mod discover;
mod stack;
pub use discover::{discover, discover_wanting};
/// What makes a directory a unit or a stack, for messages that explain what discovery looks for.
pub use fs::{STACK_CONFIG_NAME, UNIT_CONFIG_NAMES};

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
        sources: Default::default(),
    };
    Ok((tmp, opts, config_problem))
}
