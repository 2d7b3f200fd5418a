//! Discovery of Terragrunt units, their edges and their read sets, by evaluating
//! `terragrunt.hcl` files in process.
//!
//! Owns: finding units, evaluating the parts of their configuration that decide
//! edges (`include`, `locals` on demand, `feature`, `dependency`, `dependencies`,
//! `terraform.source`, `exclude`, legacy `skip`) and the files each unit reads.
//! Must never: execute anything from the repository (`run_cmd`, AWS calls, sops
//! decryption are unknown values), or read a file outside the repository root.

use crate::config::RepoConfig;
use crate::problem::Problem;
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
}

impl Discovery {
    pub fn unit(&self, path: &UnitPath) -> Option<&Unit> {
        self.units.binary_search_by(|u| u.path.cmp(path)).ok().map(|i| &self.units[i])
    }
}
