//! What the repository says about its units besides their configuration:
//! `.cascade.yaml` (plain root modules, implicit dependencies) and
//! Terragrunt's `.terragrunt-excludes`.

use super::super::context::Session;
use super::super::limits::Limit;
use super::super::reads::module_dirs;
use super::super::{DiscoverOptions, ReadSet, Unit, UnitKind, paths};
use super::rebase;
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

/// Plain root modules and implicit dependencies from `.cascade.yaml`.
pub(super) fn add_config_units(
    opts: &DiscoverOptions,
    session: &Session,
    base: &str,
    units: &mut Vec<Unit>,
    problems: &mut Vec<Problem>,
) {
    let config = &opts.config;
    for module in &config.modules {
        let dir = paths::clean(&paths::join(base, module.path.as_str())).unwrap_or_default();
        if !session.fs.is_dir(&dir) {
            problems.push(
                Problem::new(
                    ProblemKind::Config,
                    format!(
                        "module {} in .cascade.yaml does not exist; fix its path",
                        module.path
                    ),
                )
                .at(crate::config::FILE_NAME, None, None),
            );
            continue;
        }
        let mut reads = ReadSet::default();
        let modules = module_dirs(session, &dir);
        for d in modules.dirs.iter().filter(|d| **d != dir) {
            reads.dirs.insert(rebase(base, d));
        }
        // A module call through a link out of the repository: cascade cannot tell what it reads.
        let escapes = !modules.escaping.is_empty();
        for (file, line) in modules.escaping.iter() {
            problems.push(
                Problem::new(
                    ProblemKind::Unresolved,
                    "this module's source leads through a symbolic link outside the repository; cascade reads nothing outside the repository, so keep local modules inside it",
                )
                .unit(&module.path)
                .at(rebase(base, file), *line, None),
            );
        }
        // Module calls stop being followed at the deadline: the reads may be cut short.
        let late = session.deadline.is_some_and(|d| Instant::now() >= d);
        if late {
            problems.push(
                Problem::new(ProblemKind::Unresolved, Limit::Deadline.message())
                    .unit(&module.path)
                    .at(crate::config::FILE_NAME, None, None),
            );
        }
        // A Terragrunt unit already at this path stays: two units with one
        // path are refused together (`twins`), so neither wins silently.
        units.push(Unit {
            path: module.path.clone(),
            kind: UnitKind::Module,
            dependencies: Vec::new(),
            reads,
            own_files: Vec::new(),
            unresolved: late || escapes,
            excluded: None,
            executor: Some(module.executor),
            stack: None,
            refused: None,
            sources: Vec::new(),
        });
    }
    let known: HashSet<UnitPath> = units.iter().map(|u| u.path.clone()).collect();
    let mut extra: BTreeMap<UnitPath, BTreeSet<UnitPath>> = BTreeMap::new();
    // A module that does not exist was reported above; its edges are moot.
    for module in config.modules.iter().filter(|m| known.contains(&m.path)) {
        extra
            .entry(module.path.clone())
            .or_default()
            .extend(module.depends_on.iter().cloned());
    }
    for (unit, deps) in &config.implicit_deps {
        extra
            .entry(unit.clone())
            .or_default()
            .extend(deps.iter().cloned());
    }
    for (unit, deps) in extra {
        if !known.contains(&unit) {
            problems.push(
                Problem::new(
                    ProblemKind::Config,
                    format!("{unit} in .cascade.yaml is not a unit; fix the path"),
                )
                .at(crate::config::FILE_NAME, None, None),
            );
            continue;
        }
        for dep in deps {
            if !known.contains(&dep) {
                problems.push(
                    Problem::new(ProblemKind::MissingDependency, format!("{unit} depends on {dep} in .cascade.yaml, which is not a unit; fix the path"))
                        .unit(&unit)
                        .at(crate::config::FILE_NAME, None, None),
                );
                continue;
            }
            let u = units
                .iter_mut()
                .find(|u| u.path == unit)
                .expect("known unit");
            if !u.dependencies.contains(&dep) {
                u.dependencies.push(dep);
                u.dependencies.sort();
            }
        }
    }
}

/// The file of directories Terragrunt leaves out of `run --all`
/// (`--queue-excludes-file`, read from the working directory by default).
pub(super) const EXCLUDES_FILE: &str = ".terragrunt-excludes";

/// Applies `.terragrunt-excludes` in the discovery directory as Terragrunt
/// does: each line (blank lines and `#` comments skipped) is a filter that
/// excludes what it matches. A line with a `/` (or `./…`, `{…}`) is a path
/// glob relative to the directory, whose `*` stays within one directory; any
/// other line is a name glob matched against each unit's directory name.
/// Excluded units are kept out of plans like an `exclude` block's. Since
/// editing the file can bring a unit back, every unit reads it.
pub(super) fn apply_excludes(session: &Session, base: &str, units: &mut [Unit]) {
    let file = paths::join(base, EXCLUDES_FILE);
    if !session.fs.is_file(&file) {
        return;
    }
    let shown = rebase(base, &file);
    for unit in units.iter_mut() {
        unit.reads.files.insert(shown.clone());
    }
    let Ok(text) = session
        .fs
        .read_text(&file, super::super::limits::MAX_CONFIG_FILE_BYTES)
    else {
        // Unreadable: nothing is known to be excluded, and everything reads it.
        for unit in units.iter_mut() {
            unit.unresolved = true;
        }
        return;
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(filter) = ExcludeLine::parse(line) else {
            continue;
        };
        for unit in units.iter_mut().filter(|u| u.excluded.is_none()) {
            if filter.matches(unit.path.as_str()) {
                unit.excluded = Some(format!("{EXCLUDES_FILE}:{}", n + 1));
            }
        }
    }
}

/// One line of `.terragrunt-excludes`.
enum ExcludeLine {
    Path(globset::GlobMatcher),
    Name(globset::GlobMatcher),
}

impl ExcludeLine {
    fn parse(line: &str) -> Option<ExcludeLine> {
        let braced = line.strip_prefix('{').and_then(|l| l.strip_suffix('}'));
        let is_path = braced.is_some() || line.contains('/') || line.starts_with('.');
        let mut pattern = braced.unwrap_or(line);
        while let Some(rest) = pattern.strip_prefix("./") {
            pattern = rest;
        }
        let pattern = pattern.trim_end_matches('/');
        let pattern = if pattern.is_empty() { "." } else { pattern };
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .ok()?
            .compile_matcher();
        Some(if is_path {
            ExcludeLine::Path(glob)
        } else {
            ExcludeLine::Name(glob)
        })
    }

    /// Whether the unit at `path` (relative to the discovery directory) matches.
    fn matches(&self, path: &str) -> bool {
        match self {
            ExcludeLine::Path(glob) => glob.is_match(path),
            ExcludeLine::Name(glob) => glob.is_match(path.rsplit('/').next().unwrap_or(path)),
        }
    }
}
