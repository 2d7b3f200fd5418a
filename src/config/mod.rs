//! The repository's own configuration, `.cascade.yaml`: reading it, checking it, and
//! answering questions about it (which environment a unit is in, which executor runs it,
//! whether a path is ignored).
//!
//! This module owns the file format (`file`), every message a user sees about that file
//! (`diagnose` for YAML and shape errors, `validate` for values), and the JSON schema
//! editors use. Every error is a `Problem` of kind `Config` located at a line and column
//! of `.cascade.yaml`, because it ends up as a comment on the pull request that broke it.
//! It never looks at the repository's units and never runs anything; whether a configured
//! path actually holds a unit is for discovery and the graph to say.
//!
//! Reading the file is hostile input like the rest of a pull request: only a regular file
//! of at most [`MAX_FILE_BYTES`] is read (a symbolic link is refused, so the file can never
//! be one outside the repository, and a FIFO cannot hang the reader), and YAML parsing is
//! bounded (aliases, nodes, depth). Messages quote the file's own keys and values only when
//! it is that regular file.

mod diagnose;
pub mod drift;
mod file;
pub(crate) use file::yaml_options;
mod apply_mode;
mod plan_ttl;
pub mod policies;
pub mod prevent_destroy;
pub mod retries;
#[cfg(test)]
mod tests;
mod validate;
pub mod workflows;

pub use apply_mode::{ApplyMode, Mode as ApplyModeKind};
pub use plan_ttl::{PlanTtl, in_words};
pub use prevent_destroy::{PreventDestroy, Protection};
pub use retries::RetryPolicy;

use crate::problem::{Problem, ProblemKind};
use crate::unit::{Tool, UnitPath};
use globset::GlobSet;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// The configuration file's name, at the root of the repository.
pub const FILE_NAME: &str = ".cascade.yaml";

/// The largest `.cascade.yaml` cascade reads.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The repository configuration, checked and normalised. `RepoConfig::default()` is what a
/// repository without `.cascade.yaml` gets: no environments, no extra edges, nothing ignored.
///
/// Build it with [`RepoConfig::load`] or [`RepoConfig::parse`] (or `default()`): the ignore
/// globs are compiled once, there, and kept in a private field that
/// [`RepoConfig::is_ignored`] matches against. Editing `ignore` afterwards would not change
/// what is ignored, so debug builds panic in `is_ignored` when the two disagree.
#[derive(Clone, Debug)]
pub struct RepoConfig {
    /// Environments in file order; paths are distinct.
    pub environments: Vec<Environment>,
    /// Extra dependencies: unit -> units it depends on, beyond what `terragrunt.hcl` says.
    pub implicit_deps: BTreeMap<UnitPath, Vec<UnitPath>>,
    /// The ignore globs as compiled (repo-relative, without a leading `./`).
    pub ignore: Vec<String>,
    /// Plain OpenTofu/Terraform root modules treated as units; paths are distinct.
    pub modules: Vec<ModuleUnit>,
    /// Plan draft pull requests too (default: no; a draft is planned once ready for review).
    pub drafts: bool,
    /// Plan when a pull request is opened or pushed (default: yes); otherwise only on `/plan`.
    pub autoplan: bool,
    /// What must hold before `/apply` runs (default: approved and mergeable).
    pub apply_requirements: Vec<ApplyRequirement>,
    /// Who may `/apply`, `/plan` and `/unlock`, beyond write permission; `None`: everyone
    /// with write permission.
    pub apply_permission: Option<ApplyPermission>,
    /// Which approving reviews count (default: only those on the current head).
    pub approvals: ApprovalRule,
    /// Whether someone who pushed a commit to the pull request may approve it (default:
    /// no, as GitHub's "require approval of the most recent reviewable push").
    pub pushers_may_approve: bool,
    /// How long a plan may be applied after it was made (default: 7 days).
    pub plan_ttl: PlanTtl,
    /// Base branches other than the default whose pull requests are planned (globs over
    /// branch names; default: none).
    branches: CompiledGlobs,
    /// The commands turned on that are off by default (default: none).
    pub commands: Vec<OptInCommand>,
    /// How transient plan failures are retried (default: 3 tries, 5 s then 10 s apart).
    pub retries: retries::RetryPolicy,
    /// Drift detection on the default branch (default: none).
    pub drift: Option<drift::DriftConfig>,
    /// The teams' own steps around plan and apply, in file order (default: none).
    pub workflows: Vec<workflows::Workflow>,
    /// The policy sets every planned unit is checked against, in file order (default:
    /// none).
    pub policies: Vec<policies::PolicySet>,
    /// Which units are applied after merge rather than by `/apply` (default: none).
    pub apply: ApplyMode,
    /// The units `/destroy` never destroys, and no plan that destroys one is applied
    /// (default: none).
    pub prevent_destroy: PreventDestroy,
    /// `ignore`, compiled.
    ignore_set: CompiledGlobs,
}

impl Default for RepoConfig {
    fn default() -> RepoConfig {
        RepoConfig {
            environments: Vec::new(),
            implicit_deps: BTreeMap::new(),
            ignore: Vec::new(),
            modules: Vec::new(),
            drafts: false,
            autoplan: true,
            apply_requirements: vec![ApplyRequirement::Approved, ApplyRequirement::Mergeable],
            apply_permission: None,
            approvals: ApprovalRule::Head,
            pushers_may_approve: false,
            plan_ttl: PlanTtl::DEFAULT,
            branches: CompiledGlobs::default(),
            commands: Vec::new(),
            retries: retries::RetryPolicy::default(),
            drift: None,
            workflows: Vec::new(),
            policies: Vec::new(),
            apply: ApplyMode::default(),
            prevent_destroy: PreventDestroy::default(),
            ignore_set: CompiledGlobs::default(),
        }
    }
}

/// A command that is off unless the default branch's `.cascade.yaml` lists it
/// (`commands:`): each changes terraform state without a reviewed plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptInCommand {
    /// `/import <unit> <address> <id>`.
    Import,
    /// `/state rm <unit> <address>`.
    StateRm,
}

impl OptInCommand {
    /// The word `commands:` lists it by.
    pub fn word(self) -> &'static str {
        match self {
            OptInCommand::Import => "import",
            OptInCommand::StateRm => "state_rm",
        }
    }
}

/// A condition `/apply` checks before applying anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApplyRequirement {
    /// An approving review from someone other than the pull request's author.
    Approved,
    /// GitHub says the pull request can be merged (no conflicts, required checks pass).
    Mergeable,
}

/// Which approving reviews satisfy [`ApplyRequirement::Approved`]. Either way only reviews
/// by someone with write permission, other than the author, count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRule {
    /// Only a review given on the pull request's current head commit: a push after the
    /// approval needs a new one.
    #[default]
    Head,
    /// A review given on any commit of the pull request.
    AnyHead,
}

/// Who may apply, narrowed from "everyone with write permission": a user must still have
/// write permission, and be listed in `users` or be an active member of one of `teams`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyPermission {
    /// GitHub logins or GitLab usernames, as written (both forges compare them
    /// case-insensitively).
    pub users: Vec<String>,
    /// Teams whose active members may apply.
    pub teams: Vec<TeamName>,
}

impl ApplyPermission {
    /// True when `login` is one of `users` (case-insensitively, as GitHub compares logins).
    pub fn lists_user(&self, login: &str) -> bool {
        self.users.iter().any(|u| u.eq_ignore_ascii_case(login))
    }
}

/// A GitHub team, `org/team-slug`, or a GitLab group's full path (`org` its top-level
/// group, `slug` the subgroups below it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TeamName {
    pub org: String,
    pub slug: String,
}

impl std::fmt::Display for TeamName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.org, self.slug)
    }
}

/// One word of `approvals` in `.cascade.yaml` (a word or a list of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalWord {
    /// Only a review given on the current head counts (the default).
    Head,
    /// A review given on any commit of the pull request counts.
    AnyHead,
    /// Someone who pushed a commit to the pull request may approve it.
    AllowPushers,
}

/// A compiled glob set and the patterns it was compiled from.
#[derive(Clone, Debug, Default)]
pub(super) struct CompiledGlobs {
    pub(super) patterns: Vec<String>,
    pub(super) set: GlobSet,
}

/// A named environment: the directory its units live in, and optionally the executor
/// that runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Environment {
    pub name: String,
    /// Repo-relative, `/`-separated, no trailing slash; `.` for the whole repository.
    pub path: String,
    /// `None` means the default: terragrunt for `terragrunt.hcl` units.
    pub executor: Option<Tool>,
}

/// A plain root module that cascade treats as a unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleUnit {
    pub path: UnitPath,
    /// Units this module depends on, in file order, without repeats.
    pub depends_on: Vec<UnitPath>,
    /// Terraform unless the file says otherwise.
    pub executor: Tool,
}

impl RepoConfig {
    /// Reads `<dir>/.cascade.yaml`. A missing file is the default configuration; a file
    /// that cannot be read, does not parse, or holds unknown keys or bad values is a
    /// `Problem` of kind `Config` that says where and what to do about it.
    pub fn load(dir: &Path) -> Result<RepoConfig, Problem> {
        match read_file(&dir.join(FILE_NAME)) {
            Ok(None) => Ok(RepoConfig::default()),
            Ok(Some(text)) => RepoConfig::parse(&text),
            Err(message) => {
                Err(Problem::new(ProblemKind::Config, message).at(FILE_NAME, None, None))
            }
        }
    }

    /// Parses and checks the text of a `.cascade.yaml`. Empty text is the default.
    pub fn parse(text: &str) -> Result<RepoConfig, Problem> {
        let file = file::ConfigFile::from_yaml(text).map_err(|err| diagnose::yaml_problem(&err))?;
        validate::repo_config(file)
    }

    /// The environment whose directory contains `unit` (or is `unit`); the deepest one
    /// when environments nest.
    pub fn environment_of(&self, unit: &UnitPath) -> Option<&Environment> {
        self.environments
            .iter()
            .filter(|env| dir_contains(&env.path, unit.as_str()))
            .max_by_key(|env| if env.path == "." { 0 } else { env.path.len() })
    }

    /// True when environments are configured and `unit` lies in none of them; such units
    /// are left out of the graph.
    pub fn outside_environments(&self, unit: &UnitPath) -> bool {
        !self.environments.is_empty() && self.environment_of(unit).is_none()
    }

    /// True when pull requests into `base` are planned: `base` is the default branch
    /// (`default`), or matches one of `branches`. The rules that apply are the default
    /// branch's either way.
    pub fn plans_into(&self, base: &str, default: &str) -> bool {
        base == default || self.branches.set.is_match(base)
    }

    /// The `branches` globs, as written.
    pub fn branches(&self) -> &[String] {
        &self.branches.patterns
    }

    /// True when `path` (a unit directory or a file, repo-relative) matches an ignore
    /// glob, or lies under a directory that does: `sandbox` ignores `sandbox/a/main.tf`.
    pub fn is_ignored(&self, path: &str) -> bool {
        debug_assert_eq!(
            self.ignore, self.ignore_set.patterns,
            "RepoConfig::ignore was edited after parsing; build the config with RepoConfig::parse"
        );
        let set = &self.ignore_set.set;
        let path = UnitPath::new(path);
        let path = path.as_str();
        set.is_match(path)
            || path
                .match_indices('/')
                .any(|(end, _)| set.is_match(&path[..end]))
    }

    /// The executor configured for a unit: its `modules` entry's, else its environment's,
    /// else `None` (the caller's default, terragrunt for `terragrunt.hcl` units).
    pub fn executor_for(&self, unit: &UnitPath) -> Option<Tool> {
        match self.modules.iter().find(|module| &module.path == unit) {
            Some(module) => Some(module.executor),
            None => self.environment_of(unit).and_then(|env| env.executor),
        }
    }

    /// `true` when `unit` is applied by cascade after merge (`apply: on_merge`).
    pub fn applies_on_merge(&self, unit: &UnitPath) -> bool {
        self.apply
            .on_merge(unit, self.environment_of(unit).map(|e| e.name.as_str()))
    }

    /// The workflow of `unit`: the first that covers it, if any.
    pub fn workflow_for(&self, unit: &UnitPath) -> Option<&workflows::Workflow> {
        let environment = self.environment_of(unit).map(|e| e.name.as_str());
        self.workflows.iter().find(|w| w.covers(unit, environment))
    }

    /// The JSON schema of `.cascade.yaml` for editors, pretty-printed. The repository
    /// ships it as `schema/cascade.schema.json`.
    pub fn json_schema() -> String {
        file::schema_json()
    }
}

/// The text of the configuration file at `path`; `None` when there is none. Refuses a
/// symbolic link, anything but a regular file, and more than [`MAX_FILE_BYTES`]; the
/// messages never quote what the file holds.
fn read_file(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |why: &str, fix: &str| format!("cannot read {FILE_NAME}: {why}; {fix}");
    let kind = |err: io::Error| {
        cannot(
            &err.kind().to_string(),
            "make it a readable file or remove it",
        )
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(kind(err)),
    };
    if meta.file_type().is_symlink() {
        return Err(cannot(
            "it is a symbolic link, and cascade reads its configuration only from a regular file",
            "put the configuration itself at the repository root",
        ));
    }
    if !meta.is_file() {
        return Err(cannot(
            "it is not a regular file",
            "make it a readable file or remove it",
        ));
    }
    let too_large = || {
        cannot(
            &format!(
                "it is larger than cascade's limit of {} KiB",
                MAX_FILE_BYTES >> 10
            ),
            "shorten it",
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO swapped in since the check is refused, not followed or waited on.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(kind)?;
    if !file.metadata().map_err(kind)?.is_file() {
        return Err(cannot(
            "it is not a regular file",
            "make it a readable file or remove it",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(kind)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{FILE_NAME} is not UTF-8 text; save it as UTF-8"))
}

/// True when the repo-relative directory `dir` is `path` or one of its ancestors.
fn dir_contains(dir: &str, path: &str) -> bool {
    dir == "."
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}
