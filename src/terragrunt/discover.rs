//! The discovery run: walk the directory, expand the stacks, evaluate every
//! unit in parallel, tell root configurations from units, pull in external
//! dependencies, check every edge's target (a stack's directory stands for
//! every unit it generates), apply the repo configuration and
//! `.terragrunt-excludes`, and rebase paths onto the discovery directory.
//!
//! Runs on its own thread pool, whose threads have a known, large stack
//! ([`DISCOVERY_STACK_BYTES`]): evaluation and parsing recurse, and the depth
//! limits in `limits` are calibrated against that stack, not against whatever
//! thread the caller happens to be on. Every problem leaves here bounded (per
//! unit, per message) and without the server's absolute paths.

mod config;
mod files;
mod twins;

use super::context::{NOT_SHOWN, Session};
use super::fs::{FsIndex, Probe, Truncation, UNIT_CONFIG_NAMES};
use super::limits::{
    DISCOVERY_STACK_BYTES, Limit, MAX_MESSAGE_CHARS, MAX_PROBLEMS_PER_UNIT, PLANNED,
    PLANNED_ON_EVERY_CHANGE,
};
use super::remote_source::GitSource;
use super::stack::{self, Expansion, GeneratedUnit};
use super::unit_config::{self, DeclaredDependency, Outcome, UnitSpec};
use super::{DiscoverOptions, Discovery, ReadSet, Unit, UnitKind, paths};
use crate::discovery::SourceCommit;
use crate::problem::{FAILS_EVERY_PLAN, Problem, ProblemKind};
use crate::unit::UnitPath;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::OnceLock;

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
    discover_wanting(opts).0
}

/// [`discover`], and the git sources stacks name that `opts.sources` lacks (each
/// once, by key): fetch them, add them to `opts.sources` and discover again
/// (`catalog::Catalog::discover` does).
pub fn discover_wanting(opts: &DiscoverOptions) -> (Discovery, Vec<GitSource>) {
    pool().install(|| discover_here(opts))
}

/// [`discover_wanting`] on the current thread, whose stack must be large enough.
pub(super) fn discover_here(opts: &DiscoverOptions) -> (Discovery, Vec<GitSource>) {
    let root = std::fs::canonicalize(&opts.repo_root).unwrap_or_else(|_| opts.repo_root.clone());
    let dir = std::fs::canonicalize(&opts.dir).unwrap_or_else(|_| opts.dir.clone());
    let root_abs = root.to_string_lossy().trim_end_matches('/').to_string();
    let base = match dir.strip_prefix(&root) {
        // Bytes as the filesystem keeps them: a backslash is part of a name.
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => {
            let problem = Problem::new(
                ProblemKind::Config,
                "the directory to discover is not inside the repository root; pass a directory inside the repository",
            );
            let discovery = Discovery {
                problems: vec![problem],
                ..Discovery::default()
            };
            return (discovery, Vec::new());
        }
    };
    let (fs, candidates) = FsIndex::walk(&root, &base, opts.deadline);
    let mut session = Session::new(
        root_abs.clone(),
        fs,
        opts.env.clone(),
        &opts.features,
        opts.deadline,
    );
    session.sources = opts.sources.clone();
    let session = session;
    let config = &opts.config;
    // Config paths (environments, ignore) are relative to the discovery directory.
    let rel_to_base = |p: &str| rebase(&base, p);
    let wanted = |dir: &str| {
        let unit = UnitPath::new(rel_to_base(dir));
        !config.is_ignored(unit.as_str()) && !config.outside_environments(&unit)
    };
    let candidates: Vec<_> = candidates.into_iter().filter(|c| wanted(&c.dir)).collect();

    // Stacks first: expanding them declares the directories they generate.
    let expansions: Vec<(String, Expansion)> = candidates
        .par_iter()
        .filter(|c| c.stack)
        .map(|c| (c.dir.clone(), stack::expand(&session, &c.dir)))
        .collect();
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let mut generated = Vec::new();
    for (stack_dir, expansion) in expansions {
        for (dir, problem) in expansion.problems {
            let entry = found.entry(dir).or_insert_with(|| Found::stack(None));
            entry.outcome.problems.push(problem);
        }
        for dir in &expansion.unresolved {
            found
                .entry(dir.clone())
                .or_insert_with(|| Found::stack(None))
                .outcome
                .unresolved = true;
        }
        found
            .entry(stack_dir.clone())
            .or_insert_with(|| Found::stack(None));
        for nested in expansion.nested.into_iter().filter(|d| wanted(d)) {
            found
                .entry(nested)
                .or_insert_with(|| Found::stack(Some(stack_dir.clone())));
        }
        generated.extend(
            expansion
                .units
                .into_iter()
                .filter(|u| wanted(&u.spec.dir))
                .map(|u| (stack_dir.clone(), u)),
        );
    }
    let members = stack_members(&generated);
    // A unit generated into a directory that holds a unit already replaces it.
    let generated_dirs: HashSet<&str> =
        generated.iter().map(|(_, u)| u.spec.dir.as_str()).collect();
    let on_disk: Vec<UnitSpec> = candidates
        .iter()
        .filter(|c| !c.stack && !generated_dirs.contains(c.dir.as_str()))
        .map(|c| UnitSpec::on_disk(&c.config))
        .collect();
    let evaluated: Vec<(String, Found)> = on_disk
        .par_iter()
        .map(|spec| {
            (
                spec.dir.clone(),
                Found::unit(evaluate_unit(&session, spec), None),
            )
        })
        .chain(generated.par_iter().map(|(stack_dir, unit)| {
            let mut outcome = if unit.unresolved {
                Outcome::default()
            } else {
                evaluate_unit(&session, &unit.spec)
            };
            outcome.unresolved |= unit.unresolved;
            outcome.problems.extend(unit.problems.iter().cloned());
            outcome.reads.files.extend(unit.reads.files.iter().cloned());
            outcome.reads.dirs.extend(unit.reads.dirs.iter().cloned());
            outcome.reads.globs.extend(unit.reads.globs.iter().cloned());
            // Terragrunt reads what the stack generated, not what a dependency names.
            outcome.has_source = true;
            let mut found = Found::unit(outcome, Some(stack_dir.clone()));
            found.sources = unit.sources.clone();
            (unit.spec.dir.clone(), found)
        }))
        .collect();
    // Built in bulk from sorted input; a unit replaces what a stack put at its directory.
    found.append(&mut evaluated.into_iter().collect());

    drop_root_configs(&on_disk, &mut found);
    pull_in_externals(&session, &base, &mut found);

    let mut problems = Vec::new();
    let mut timed_out = session.fs.truncated() == Some(Truncation::Deadline);
    let unit_dirs: HashSet<String> = found
        .iter()
        .filter(|(_, f)| f.kind == UnitKind::Terragrunt)
        .map(|(d, _)| d.clone())
        .collect();
    // Each directory becomes a unit on its own, in parallel; the outcomes are
    // moved, not copied (their read sets are most of discovery's memory).
    let built: Vec<Built> = found
        .into_iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(dir, f)| {
            let outcome = f.outcome;
            let path = UnitPath::new(rel_to_base(&dir));
            let mut deps = BTreeSet::new();
            let mut unit_problems = Vec::new();
            for dep in &outcome.dependencies {
                match targets_of(&session, &unit_dirs, &members, &dep.target) {
                    Some(targets) => {
                        deps.extend(targets.iter().map(|t| UnitPath::new(rel_to_base(t))));
                    }
                    None => unit_problems.push(missing_dependency(
                        &session,
                        &path,
                        dep,
                        &wanted,
                        &rel_to_base,
                    )),
                }
            }
            for p in outcome.problems {
                let mut p = p.unit(&path);
                p.file = p.file.map(|f| shown_file(&session, &f, &rel_to_base));
                p.message.push_str(match p.kind {
                    // A message that says what is planned already (limits,
                    // unreadable files, remote sources) gave its own advice.
                    _ if p.message.contains(PLANNED) => "",
                    ProblemKind::Parse => "; fix the syntax",
                    ProblemKind::Unresolved => {
                        "; cascade plans this unit on every change until it can tell (write the value statically, or declare the edge with implicit_deps in .cascade.yaml)"
                    }
                    _ => "",
                });
                if p.fails_unit() {
                    // Terragrunt refuses this unit, so cascade fails it rather than plan it.
                    if p.message.contains(PLANNED_ON_EVERY_CHANGE) {
                        p.message = p.message.replace(PLANNED_ON_EVERY_CHANGE, FAILS_EVERY_PLAN);
                    } else {
                        p.message = format!("{} {FAILS_EVERY_PLAN}", p.message);
                    }
                }
                unit_problems.push(p);
            }
            let problems = at_most_per_unit(&path, unit_problems);
            let exclude_deps = outcome
                .exclude_dependencies
                .then(|| (path.clone(), deps.clone()));
            let unit = Unit {
                executor: config.executor_for(&path),
                path,
                kind: f.kind,
                dependencies: deps.into_iter().collect(),
                reads: rebase_reads(&base, files::with_link_targets(&session, outcome.reads)),
                own_files: Vec::new(),
                unresolved: outcome.unresolved,
                excluded: outcome.excluded,
                stack: f.stack.as_ref().map(|s| UnitPath::new(rel_to_base(s))),
                refused: None,
                sources: f.sources,
            };
            Built {
                unit,
                problems,
                exclude_deps,
                timed_out: outcome.limit == Some(Limit::Deadline),
            }
        })
        .collect();
    let mut units: Vec<Unit> = Vec::with_capacity(built.len());
    let mut exclude_deps_of = Vec::new();
    for b in built {
        units.push(b.unit);
        problems.extend(b.problems);
        exclude_deps_of.extend(b.exclude_deps);
        timed_out |= b.timed_out;
    }
    config::add_config_units(opts, &session, &base, &mut units, &mut problems);
    timed_out |= units
        .iter()
        .any(|u| u.kind == UnitKind::Module && u.unresolved);
    units.sort_by(|a, b| a.path.cmp(&b.path));
    twins::refuse_shared_paths(&mut units, &mut problems);
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
    config::apply_excludes(&session, &base, &mut units);
    files::assign_own_files(&session, &base, &mut units);
    files::walk_problems(&session, &base, &mut units, &mut problems);
    for p in &mut problems {
        let given = [opts.repo_root.to_string_lossy(), opts.dir.to_string_lossy()];
        // A fetched tree's name and place on this machine become its source's text.
        let message = session.fs.unmounted_text(&p.message);
        p.message = scrubbed(&message, &[&root_abs, &given[0], &given[1]]);
    }
    problems.sort();
    problems.dedup();
    let mut files = session.fs.files_under_walked(&base);
    if !base.is_empty() {
        for f in &mut files {
            *f = rebase(&base, f);
        }
    }
    let wanted_sources = session
        .wanted
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_values()
        .collect();
    let discovery = Discovery {
        units,
        problems,
        files,
        timed_out,
    };
    (discovery, wanted_sources)
}

/// One directory made a [`Unit`], with what the whole discovery needs from it.
struct Built {
    unit: Unit,
    problems: Vec<Problem>,
    /// The unit and its dependencies, when it sets `exclude_dependencies`.
    exclude_deps: Option<(UnitPath, BTreeSet<UnitPath>)>,
    timed_out: bool,
}

/// What discovery found in one directory before it becomes a [`Unit`].
struct Found {
    kind: UnitKind,
    outcome: Outcome,
    /// For a generated unit or stack: the stack on disk that generates it.
    stack: Option<String>,
    /// The remote sources a generated unit came from.
    sources: Vec<SourceCommit>,
}

impl Found {
    fn unit(outcome: Outcome, stack: Option<String>) -> Found {
        Found {
            kind: UnitKind::Terragrunt,
            outcome,
            stack,
            sources: Vec::new(),
        }
    }

    fn stack(generated_by: Option<String>) -> Found {
        Found {
            kind: UnitKind::Stack,
            outcome: Outcome::default(),
            stack: generated_by,
            sources: Vec::new(),
        }
    }
}

/// Every stack directory (on disk or generated) → the units generated under it.
fn stack_members(generated: &[(String, GeneratedUnit)]) -> HashMap<String, Vec<String>> {
    let mut members: HashMap<String, Vec<String>> = HashMap::new();
    for (_, unit) in generated {
        for stack in &unit.stacks {
            members
                .entry(stack.clone())
                .or_default()
                .push(unit.spec.dir.clone());
        }
    }
    members
}

/// The units a dependency on `target` is an edge to: the unit there (its
/// path compared with symbolic links resolved, as Terragrunt does), or every
/// unit a stack there generates. `None` when there is none.
fn targets_of(
    session: &Session,
    unit_dirs: &HashSet<String>,
    members: &HashMap<String, Vec<String>>,
    target: &str,
) -> Option<Vec<String>> {
    let real = session.fs.through_links(target).map(|(real, _)| real);
    for t in real
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(target))
    {
        if unit_dirs.contains(t) {
            return Some(vec![t.to_string()]);
        }
        if let Some(units) = members.get(t) {
            return Some(units.clone());
        }
    }
    None
}

/// The problem for a dependency whose target is no unit.
fn missing_dependency(
    session: &Session,
    path: &UnitPath,
    dep: &DeclaredDependency,
    wanted: &dyn Fn(&str) -> bool,
    rel_to_base: &dyn Fn(&str) -> String,
) -> Problem {
    let holds_config = UNIT_CONFIG_NAMES
        .iter()
        .any(|name| session.fs.is_file(&paths::join(&dep.target, name)));
    let why = match session.fs.probe(&dep.target) {
        Probe::Dir if holds_config && !wanted(&dep.target) => {
            "which .cascade.yaml ignores (or places outside every environment)"
        }
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
    let message =
        format!("{path} depends on {target} ({declared}), {why}; fix the path or create the unit");
    Problem::new(ProblemKind::MissingDependency, message)
        .unit(path)
        .at(shown_file(session, &dep.file, rel_to_base), dep.line, None)
}

/// The file a problem names: repo-relative made relative to the discovery
/// directory, or a fetched tree's file as its source (`git::…?ref=v1//units/db/terragrunt.hcl`).
fn shown_file(session: &Session, file: &str, rel_to_base: &dyn Fn(&str) -> String) -> String {
    session
        .fs
        .shown_mounted(file)
        .unwrap_or_else(|| rel_to_base(file))
}

/// A `terragrunt.hcl` that other units include and that sets no
/// `terraform.source` is a root configuration, not a unit (the legacy root
/// `terragrunt.hcl` pattern; Terragrunt's own advice is to rename it root.hcl).
fn drop_root_configs(on_disk: &[UnitSpec], found: &mut BTreeMap<String, Found>) {
    let included: HashSet<&str> = found
        .values()
        .flat_map(|f| f.outcome.included.iter().map(String::as_str))
        .collect();
    let roots: HashSet<&str> = on_disk
        .iter()
        .filter(|spec| included.contains(spec.config.as_str()))
        .map(|spec| spec.dir.as_str())
        .collect();
    found.retain(|dir, f| {
        f.kind != UnitKind::Terragrunt || f.outcome.has_source || !roots.contains(dir.as_str())
    });
}

/// Dependencies outside the discovery directory are discovered too (as
/// Terragrunt's `--external` does), so the graph is complete.
fn pull_in_externals(session: &Session, base: &str, found: &mut BTreeMap<String, Found>) {
    loop {
        let missing: BTreeMap<String, String> = found
            .values()
            .flat_map(|f| f.outcome.dependencies.iter().map(|d| &d.target))
            .filter(|t| !found.contains_key(t.as_str()) && !paths::is_within(t, base))
            .cloned()
            .filter_map(|t| {
                let config = UNIT_CONFIG_NAMES
                    .iter()
                    .map(|name| paths::join(&t, name))
                    .find(|c| session.fs.is_file(c))?;
                Some((t, config))
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        for (dir, config) in missing {
            let outcome = evaluate_unit(session, &UnitSpec::on_disk(&config));
            found.insert(dir, Found::unit(outcome, None));
        }
    }
}

/// Evaluates one unit; a bug in cascade (a panic) makes that unit unresolved
/// instead of taking the whole discovery (and the server's worker) down.
fn evaluate_unit(session: &Session, spec: &UnitSpec) -> Outcome {
    let evaluated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        unit_config::evaluate(session, spec)
    }));
    evaluated.unwrap_or_else(|_| {
        super::calls::forget_reads_in_progress();
        let message =
            "cascade failed while evaluating this unit (an internal error; please report it)";
        let problem = Problem::new(ProblemKind::Unresolved, message).at(
            session.fs.physical(&spec.config).into_owned(),
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

fn rebase_reads(base: &str, reads: ReadSet) -> ReadSet {
    if base.is_empty() {
        return reads;
    }
    ReadSet {
        files: reads.files.iter().map(|f| rebase(base, f)).collect(),
        dirs: reads.dirs.iter().map(|d| rebase(base, d)).collect(),
        globs: reads.globs.iter().map(|g| rebase(base, g)).collect(),
    }
}
