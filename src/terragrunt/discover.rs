//! The discovery run: walk the directory, evaluate every unit in parallel,
//! tell root configurations from units, pull in external dependencies, check
//! every edge's target, apply the repo configuration, and rebase paths onto
//! the discovery directory.
//!
//! Runs on its own thread pool, whose threads have a known, large stack
//! ([`DISCOVERY_STACK_BYTES`]): evaluation and parsing recurse, and the depth
//! limits in `limits` are calibrated against that stack, not against whatever
//! thread the caller happens to be on. Every problem leaves here bounded (per
//! unit, per message) and without the server's absolute paths.

use super::context::{NOT_SHOWN, Session};
use super::fs::{FsIndex, Probe, Refusal, Truncation};
use super::limits::{
    DISCOVERY_STACK_BYTES, Limit, MAX_MESSAGE_CHARS, MAX_PROBLEMS_PER_UNIT, MAX_WALK_DEPTH,
    MAX_WALK_ENTRIES, PLANNED_ON_EVERY_CHANGE,
};
use super::unit_config::{self, Outcome};
use super::{DiscoverOptions, Discovery, ReadSet, Unit, UnitKind, paths};
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::OnceLock;
use std::time::Instant;

/// The discovery threads: as many as rayon would start, each with a
/// [`DISCOVERY_STACK_BYTES`] stack. Shared by every discovery in the process.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(DISCOVERY_STACK_BYTES)
            .thread_name(|i| format!("cascade-discovery-{i}"))
            .build()
            .expect("cannot start discovery threads")
    })
}

/// Discovers every unit under `opts.dir`, with edges and read sets.
///
/// Never executes anything and never reads outside `opts.repo_root`. Problems
/// (a file that does not parse, a missing dependency, an unresolved edge) are
/// collected in [`Discovery::problems`]; every other unit is still discovered.
/// Past `opts.deadline`, units not yet evaluated are unresolved and
/// [`Discovery::timed_out`] is set.
pub fn discover(opts: &DiscoverOptions) -> Discovery {
    pool().install(|| discover_here(opts))
}

/// [`discover`] on the current thread, whose stack must be large enough.
pub(super) fn discover_here(opts: &DiscoverOptions) -> Discovery {
    let root = std::fs::canonicalize(&opts.repo_root).unwrap_or_else(|_| opts.repo_root.clone());
    let dir = std::fs::canonicalize(&opts.dir).unwrap_or_else(|_| opts.dir.clone());
    let root_abs = root.to_string_lossy().trim_end_matches('/').to_string();
    let base = match dir.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => {
            let problem = Problem::new(
                ProblemKind::Config,
                "the directory to discover is not inside the repository root; pass a directory inside the repository",
            );
            return Discovery {
                problems: vec![problem],
                ..Discovery::default()
            };
        }
    };
    let (fs, candidates) = FsIndex::walk(&root, &base, opts.deadline);
    let session = Session::new(
        root_abs.clone(),
        fs,
        opts.env.clone(),
        &opts.features,
        opts.deadline,
    );
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
                    (UnitKind::Terragrunt, evaluate_unit(&session, &c.dir)),
                )
            }
        })
        .collect::<Vec<_>>()
        .into_iter()
        .collect();

    drop_root_configs(&mut outcomes);
    pull_in_externals(&session, &base, &mut outcomes);

    let mut problems = Vec::new();
    let mut timed_out = session.fs.truncated() == Some(Truncation::Deadline);
    let unit_dirs: HashSet<String> = outcomes.keys().cloned().collect();
    let mut units: Vec<Unit> = Vec::with_capacity(outcomes.len());
    let mut exclude_deps_of = Vec::new();
    for (dir, (kind, outcome)) in &outcomes {
        let path = UnitPath::new(rel_to_base(dir));
        timed_out |= outcome.limit == Some(Limit::Deadline);
        let mut deps = BTreeSet::new();
        let mut unit_problems = Vec::new();
        for dep in &outcome.dependencies {
            if unit_dirs.contains(&dep.target) {
                deps.insert(UnitPath::new(rel_to_base(&dep.target)));
                continue;
            }
            let why = match session.fs.probe(&dep.target) {
                Probe::Dir => "which holds no terragrunt.hcl",
                Probe::Escapes => {
                    "which is a symbolic link (or lies under one) that leads outside the repository, and cascade follows none"
                }
                _ => "which does not exist (DependencyDirNotFoundError)",
            };
            let declared = if dep.name == "dependencies" {
                "dependencies.paths".to_string()
            } else {
                format!("dependency \"{}\"", dep.name)
            };
            let target = if dep.shown {
                rel_to_base(&dep.target)
            } else {
                NOT_SHOWN.to_string()
            };
            let message = format!(
                "{path} depends on {target} ({declared}), {why}; fix the path or create the unit"
            );
            unit_problems.push(
                Problem::new(ProblemKind::MissingDependency, message)
                    .unit(&path)
                    .at(rel_to_base(&dep.file), dep.line, None),
            );
        }
        for p in &outcome.problems {
            let mut p = p.clone().unit(&path);
            p.file = p.file.map(|f| rel_to_base(&f));
            p.message.push_str(match p.kind {
                // Limits and unreadable files say what to do already.
                _ if p.message.ends_with(PLANNED_ON_EVERY_CHANGE) => "",
                ProblemKind::Parse => "; fix the syntax (until then the unit is planned on every change)",
                ProblemKind::Unresolved => {
                    "; cascade plans this unit on every change until it can tell (write the value statically, or declare the edge with implicit_deps in .cascade.yaml)"
                }
                _ => "",
            });
            unit_problems.push(p);
        }
        problems.extend(at_most_per_unit(&path, unit_problems));
        if outcome.exclude_dependencies {
            exclude_deps_of.push((path.clone(), deps.clone()));
        }
        units.push(Unit {
            executor: config.executor_for(&path),
            path,
            kind: *kind,
            dependencies: deps.into_iter().collect(),
            reads: rebase_reads(&base, &with_link_targets(&session, &outcome.reads)),
            own_files: Vec::new(),
            unresolved: outcome.unresolved,
            excluded: outcome.excluded.clone(),
        });
    }
    add_config_units(opts, &session, &base, &mut units, &mut problems);
    timed_out |= units
        .iter()
        .any(|u| u.kind == UnitKind::Module && u.unresolved);
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
    walk_problems(&session, &base, &mut units, &mut problems);
    for p in &mut problems {
        let given = [opts.repo_root.to_string_lossy(), opts.dir.to_string_lossy()];
        p.message = scrubbed(&p.message, &[&root_abs, &given[0], &given[1]]);
    }
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
        timed_out,
    }
}

/// Evaluates one unit; a bug in cascade (a panic) makes that unit unresolved
/// instead of taking the whole discovery (and the server's worker) down.
fn evaluate_unit(session: &Session, dir: &str) -> Outcome {
    let evaluated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        unit_config::evaluate(session, dir)
    }));
    evaluated.unwrap_or_else(|_| {
        super::calls::forget_reads_in_progress();
        let message =
            "cascade failed while evaluating this unit (an internal error; please report it)";
        let problem = Problem::new(ProblemKind::Unresolved, message).at(
            paths::join(dir, "terragrunt.hcl"),
            None,
            None,
        );
        Outcome {
            problems: vec![problem],
            unresolved: true,
            ..Outcome::default()
        }
    })
}

/// A unit's problems, the first [`MAX_PROBLEMS_PER_UNIT`] of them and a count of the rest.
fn at_most_per_unit(unit: &UnitPath, mut problems: Vec<Problem>) -> Vec<Problem> {
    if problems.len() > MAX_PROBLEMS_PER_UNIT {
        problems.sort();
        let more = problems.len() - MAX_PROBLEMS_PER_UNIT;
        problems.truncate(MAX_PROBLEMS_PER_UNIT);
        let file = problems[0].file.clone().unwrap_or_default();
        problems.push(
            Problem::new(
                problems[0].kind,
                format!(
                    "{more} more problems in this unit are not listed; fix the ones above first"
                ),
            )
            .unit(unit)
            .at(file, None, None),
        );
    }
    problems
}

/// `message` cut to [`MAX_MESSAGE_CHARS`], with the server's paths (and their
/// ancestors of two components or more) replaced by `.`: a message may quote
/// a path computed from `get_repo_root()` and the like, which must not reach a
/// pull request.
fn scrubbed(message: &str, server_paths: &[&str]) -> String {
    let mut forms: Vec<&str> = Vec::new();
    for path in server_paths {
        let mut path = path.trim_end_matches('/');
        while path.matches('/').count() >= 2 {
            // Also without the leading slash: a path joined after `..` loses it.
            forms.extend([path, path.trim_start_matches('/')]);
            path = paths::parent(path);
        }
    }
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    let mut out = message.to_string();
    for form in forms {
        if out.contains(form) {
            out = out.replace(form, ".");
        }
    }
    if out.chars().count() > MAX_MESSAGE_CHARS {
        out = out.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
    }
    out
}

/// Problems of the walk itself: symbolic links it refused and directories it
/// did not enter (each makes the unit whose directory holds it unresolved; the
/// first [`MAX_PROBLEMS_PER_UNIT`] are listed), and a walk cut short.
fn walk_problems(session: &Session, base: &str, units: &mut [Unit], problems: &mut Vec<Problem>) {
    let owners: BTreeMap<String, usize> = units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == UnitKind::Terragrunt)
        .map(|(i, u)| (u.path.as_str().to_string(), i))
        .collect();
    let refused = session.fs.refused();
    for (link, refusal) in refused.iter().take(MAX_PROBLEMS_PER_UNIT) {
        let message = match refusal {
            Refusal::Escapes => {
                "this symbolic link leads outside the repository; cascade neither follows nor reads it (make it a file or directory inside the repository)"
            }
            Refusal::Loop => {
                "this symbolic link leads to a directory it is itself inside of (a loop); cascade does not follow it (point it elsewhere or remove it)"
            }
            Refusal::TooManyLinks => {
                "cascade did not follow this symbolic link: the walk already followed its limit of links to directories (replace some links with directories)"
            }
            Refusal::TooDeep => &format!(
                "cascade did not walk this directory: it is more than cascade's limit of {MAX_WALK_DEPTH} levels below the directory it discovers (flatten the layout)"
            ),
        };
        let rel = rebase(base, link);
        let mut problem =
            Problem::new(ProblemKind::Unresolved, message).at(rel.clone(), None, None);
        if let Some(&i) = owner(&owners, &rel) {
            problem = problem.unit(&units[i].path);
        }
        problems.push(problem);
    }
    if refused.len() > MAX_PROBLEMS_PER_UNIT {
        problems.push(Problem::new(
            ProblemKind::Unresolved,
            format!(
                "{} more symbolic links or directories were not followed; fix the ones above first",
                refused.len() - MAX_PROBLEMS_PER_UNIT
            ),
        ));
    }
    for link in refused.keys() {
        if let Some(&i) = owner(&owners, &rebase(base, link)) {
            units[i].unresolved = true;
        }
    }
    match session.fs.truncated() {
        Some(Truncation::Entries) => problems.push(Problem::new(
            ProblemKind::Unresolved,
            format!("the repository holds more than {MAX_WALK_ENTRIES} files and directories, cascade's limit; only part of it was discovered (ignore large directories in .cascade.yaml or discover a subdirectory)"),
        )),
        Some(Truncation::Deadline) => problems.push(Problem::new(
            ProblemKind::Unresolved,
            Limit::Deadline.message(),
        )),
        None => {}
    }
}

/// The unit whose directory holds `rel` (the nearest one above it).
fn owner<'m>(owners: &'m BTreeMap<String, usize>, rel: &str) -> Option<&'m usize> {
    let mut dir = paths::parent(rel);
    loop {
        let key = if dir.is_empty() { "." } else { dir };
        if let Some(i) = owners.get(key) {
            return Some(i);
        }
        if dir.is_empty() {
            return None;
        }
        dir = paths::parent(dir);
    }
}

/// `reads` plus, for each path reached through a symbolic link, the path it
/// really is and the links on its way: git reports changes there.
fn with_link_targets(session: &Session, reads: &ReadSet) -> ReadSet {
    let mut out = reads.clone();
    for file in &reads.files {
        if let Some((real, links)) = session.fs.through_links(file) {
            out.files.insert(real);
            out.files.extend(links);
        }
    }
    for dir in &reads.dirs {
        if let Some((real, links)) = session.fs.through_links(dir) {
            out.dirs.insert(real);
            out.files.extend(links);
        }
    }
    out
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
            let outcome = evaluate_unit(session, &dir);
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
        // Module calls stop being followed at the deadline: the reads may be cut short.
        let late = session.deadline.is_some_and(|d| Instant::now() >= d);
        if late {
            problems.push(
                Problem::new(ProblemKind::Unresolved, Limit::Deadline.message())
                    .unit(&module.path)
                    .at(crate::config::FILE_NAME, None, None),
            );
        }
        units.retain(|u| u.path != module.path);
        units.push(Unit {
            path: module.path.clone(),
            kind: UnitKind::Module,
            dependencies: Vec::new(),
            reads,
            own_files: Vec::new(),
            unresolved: late,
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
                        owned[i].push(file.clone());
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
        // A file reached through a link changes where the link points.
        for file in &files {
            if let Some((real, links)) = session.fs.through_links(file) {
                unit.reads.files.insert(rebase(base, &real));
                unit.reads
                    .files
                    .extend(links.iter().map(|l| rebase(base, l)));
            }
        }
        unit.own_files = files.iter().map(|f| rebase(base, f)).collect();
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
