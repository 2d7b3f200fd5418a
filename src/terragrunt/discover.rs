//! The discovery run: walk the directory, evaluate every unit in parallel,
//! tell root configurations from units, pull in external dependencies, check
//! every edge's target, apply the repo configuration, and rebase paths onto
//! the discovery directory.

use super::context::Session;
use super::fs::FsIndex;
use super::unit_config::{self, Outcome};
use super::{DiscoverOptions, Discovery, ReadSet, Unit, UnitKind, paths};
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Discovers every unit under `opts.dir`, with edges and read sets.
///
/// Never executes anything and never reads outside `opts.repo_root`. Problems
/// (a file that does not parse, a missing dependency, an unresolved edge) are
/// collected in [`Discovery::problems`]; every other unit is still discovered.
pub fn discover(opts: &DiscoverOptions) -> Discovery {
    let root = std::fs::canonicalize(&opts.repo_root).unwrap_or_else(|_| opts.repo_root.clone());
    let dir = std::fs::canonicalize(&opts.dir).unwrap_or_else(|_| opts.dir.clone());
    let root_abs = root.to_string_lossy().trim_end_matches('/').to_string();
    let base = match dir.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => {
            let problem = Problem::new(
                ProblemKind::Config,
                format!(
                    "{} is not inside the repository root {}",
                    dir.display(),
                    root.display()
                ),
            );
            return Discovery {
                units: Vec::new(),
                problems: vec![problem],
                files: Vec::new(),
            };
        }
    };
    let (fs, candidates) = FsIndex::walk(&root, &base);
    let session = Session::new(root_abs, fs, opts.env.clone(), &opts.features);
    let config = &opts.config;
    // Config paths (environments, ignore) are relative to the discovery directory.
    let rel_to_base = |p: &str| rebase(&base, p);

    let candidates: Vec<_> = candidates
        .into_iter()
        .filter(|c| {
            let unit = UnitPath::new(rel_to_base(&c.dir));
            !config.is_ignored(unit.as_str()) && !config.outside_environments(&unit)
        })
        .collect();
    // A directory holding both files is a unit; its stack file is Terragrunt's error, not ours to guess.
    let mut outcomes: BTreeMap<String, (UnitKind, Outcome)> = candidates
        .par_iter()
        .map(|c| {
            if c.stack {
                (c.dir.clone(), (UnitKind::Stack, Outcome::default()))
            } else {
                (
                    c.dir.clone(),
                    (
                        UnitKind::Terragrunt,
                        unit_config::evaluate(&session, &c.dir),
                    ),
                )
            }
        })
        .collect::<Vec<_>>()
        .into_iter()
        .collect();

    drop_root_configs(&mut outcomes);
    pull_in_externals(&session, &base, &mut outcomes);

    let mut problems = Vec::new();
    let unit_dirs: HashSet<String> = outcomes.keys().cloned().collect();
    let mut units: Vec<Unit> = Vec::with_capacity(outcomes.len());
    let mut exclude_deps_of = Vec::new();
    for (dir, (kind, outcome)) in &outcomes {
        let path = UnitPath::new(rel_to_base(dir));
        let mut deps = BTreeSet::new();
        for dep in &outcome.dependencies {
            if unit_dirs.contains(&dep.target) {
                deps.insert(UnitPath::new(rel_to_base(&dep.target)));
                continue;
            }
            let why = if session.fs.is_dir(&dep.target) {
                "which holds no terragrunt.hcl"
            } else {
                "which does not exist (DependencyDirNotFoundError)"
            };
            let declared = if dep.name == "dependencies" {
                "dependencies.paths".to_string()
            } else {
                format!("dependency \"{}\"", dep.name)
            };
            let message = format!(
                "{path} depends on {} ({declared}), {why}; fix the path or create the unit",
                rel_to_base(&dep.target)
            );
            problems.push(
                Problem::new(ProblemKind::MissingDependency, message)
                    .unit(&path)
                    .at(rel_to_base(&dep.file), dep.line, None),
            );
        }
        for p in &outcome.problems {
            let mut p = p.clone().unit(&path);
            p.file = p.file.map(|f| rel_to_base(&f));
            p.message.push_str(match p.kind {
                ProblemKind::Parse => "; fix the syntax (until then the unit is planned on every change)",
                ProblemKind::Unresolved => {
                    "; cascade plans this unit on every change until it can tell (write the value statically, or declare the edge with implicit_deps in .cascade.yaml)"
                }
                _ => "",
            });
            problems.push(p);
        }
        if outcome.exclude_dependencies {
            exclude_deps_of.push((path.clone(), deps.clone()));
        }
        units.push(Unit {
            executor: config.executor_for(&path),
            path,
            kind: *kind,
            dependencies: deps.into_iter().collect(),
            reads: rebase_reads(&base, &outcome.reads),
            own_files: Vec::new(),
            unresolved: outcome.unresolved,
            excluded: outcome.excluded.clone(),
        });
    }
    add_config_units(opts, &session, &base, &mut units, &mut problems);
    units.sort_by(|a, b| a.path.cmp(&b.path));
    for (dependent, deps) in exclude_deps_of {
        for unit in units
            .iter_mut()
            .filter(|u| deps.contains(&u.path) && u.excluded.is_none())
        {
            unit.excluded = Some(format!(
                "excluded with {dependent} (exclude_dependencies = true)"
            ));
        }
    }
    assign_own_files(&session, &base, &mut units);
    problems.sort();
    problems.dedup();
    let files = session
        .fs
        .files_under(&base)
        .iter()
        .map(|f| rebase(&base, f))
        .collect();
    Discovery {
        units,
        problems,
        files,
    }
}

/// A `terragrunt.hcl` that other units include and that sets no
/// `terraform.source` is a root configuration, not a unit (the legacy root
/// `terragrunt.hcl` pattern; Terragrunt's own advice is to rename it root.hcl).
fn drop_root_configs(outcomes: &mut BTreeMap<String, (UnitKind, Outcome)>) {
    let included: HashSet<String> = outcomes
        .values()
        .flat_map(|(_, o)| o.included.iter().cloned())
        .collect();
    outcomes.retain(|dir, (kind, outcome)| {
        *kind != UnitKind::Terragrunt
            || outcome.has_source
            || !included.contains(&paths::join(dir, "terragrunt.hcl"))
    });
}

/// Dependencies outside the discovery directory are discovered too (as
/// Terragrunt's `--external` does), so the graph is complete.
fn pull_in_externals(
    session: &Session,
    base: &str,
    outcomes: &mut BTreeMap<String, (UnitKind, Outcome)>,
) {
    loop {
        let missing: BTreeSet<String> = outcomes
            .values()
            .flat_map(|(_, o)| o.dependencies.iter().map(|d| d.target.clone()))
            .filter(|t| !outcomes.contains_key(t) && !paths::is_within(t, base))
            .filter(|t| session.fs.is_file(&paths::join(t, "terragrunt.hcl")))
            .collect();
        if missing.is_empty() {
            return;
        }
        for dir in missing {
            let outcome = unit_config::evaluate(session, &dir);
            outcomes.insert(dir, (UnitKind::Terragrunt, outcome));
        }
    }
}

/// Plain root modules and implicit dependencies from `.cascade.yaml`.
fn add_config_units(
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
        for d in super::reads::module_dirs(session, &dir)
            .iter()
            .filter(|d| **d != dir)
        {
            reads.dirs.insert(rebase(base, d));
        }
        units.retain(|u| u.path != module.path);
        units.push(Unit {
            path: module.path.clone(),
            kind: UnitKind::Module,
            dependencies: Vec::new(),
            reads,
            own_files: Vec::new(),
            unresolved: false,
            excluded: None,
            executor: Some(module.executor),
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

/// Each unit owns the files of its directory, down to (not into) nested units.
fn assign_own_files(session: &Session, base: &str, units: &mut [Unit]) {
    let index: BTreeMap<String, usize> = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            (
                paths::clean(&paths::join(base, unit_dir(&u.path))).unwrap_or_default(),
                i,
            )
        })
        .collect();
    let mut owned: Vec<Vec<String>> = vec![Vec::new(); units.len()];
    for (dir, &i) in &index {
        for file in session.fs.files_under(dir) {
            let mut owner = paths::parent(&file);
            loop {
                if let Some(&j) = index.get(owner) {
                    if j == i {
                        owned[i].push(rebase(base, &file));
                    }
                    break;
                }
                if owner.is_empty() {
                    break;
                }
                owner = paths::parent(owner);
            }
        }
    }
    for (unit, files) in units.iter_mut().zip(owned) {
        unit.own_files = files;
    }
}

fn unit_dir(path: &UnitPath) -> &str {
    if path.as_str() == "." {
        ""
    } else {
        path.as_str()
    }
}

/// A repo-relative path made relative to the discovery directory `base`.
fn rebase(base: &str, path: &str) -> String {
    if base.is_empty() {
        return path.to_string();
    }
    paths::relative(base, path)
}

fn rebase_reads(base: &str, reads: &ReadSet) -> ReadSet {
    if base.is_empty() {
        return reads.clone();
    }
    ReadSet {
        files: reads.files.iter().map(|f| rebase(base, f)).collect(),
        dirs: reads.dirs.iter().map(|d| rebase(base, d)).collect(),
        globs: reads.globs.iter().map(|g| rebase(base, g)).collect(),
    }
}
