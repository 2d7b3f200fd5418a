//! Evaluating one unit: its includes (one level, labels, `expose`, merge
//! strategies), feature defaults, values, and the merged blocks that decide
//! its edges and reads (`blocks`): `dependency`, `dependencies`, `terraform`
//! (`source`, `extra_arguments`), `exclude` and legacy `skip`.

mod blocks;

use super::budget::Budget;
use super::context::{Acc, EvalError, IncludeRef, Instance, Role, Session};
use super::fs::Probe;
use super::limits::{Limit, PLANNED_ON_EVERY_CHANGE};
use super::value::Value;
use super::{ReadSet, paths};
use crate::problem::{Problem, ProblemKind};
use blocks::{
    edge_bool, eval_dependencies_paths, eval_dependency, eval_exclude, eval_extra_arguments,
    eval_source, force_reads,
};
use hcl_edit::Span;
use hcl_edit::structure::{Attribute, Block};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A dependency edge as written, before the target is checked.
#[derive(Clone, Debug)]
pub struct DeclaredDependency {
    /// Repo-relative target directory.
    pub target: String,
    /// Where it was declared, for messages: file and line, and the block name.
    pub file: String,
    pub line: Option<u32>,
    pub name: String,
    /// Whether messages may name the target (see `Instance::shown_path`).
    pub shown: bool,
}

/// Everything evaluating one unit produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub dependencies: Vec<DeclaredDependency>,
    pub reads: ReadSet,
    pub problems: Vec<Problem>,
    pub unresolved: bool,
    pub excluded: Option<String>,
    pub exclude_dependencies: bool,
    /// Files this unit includes (to tell root configurations from units).
    pub included: Vec<String>,
    /// Whether the unit's own file sets `terraform.source`.
    pub has_source: bool,
    /// The limit the unit ran into, if any (its problem is in `problems`).
    pub limit: Option<Limit>,
}

/// How an include merges into the unit (`merge_strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    Unmerged,
    Shallow,
    Deep,
}

/// What to evaluate as one unit.
#[derive(Clone, Debug)]
pub struct UnitSpec {
    /// Where the unit is (repo-relative): for a unit a stack generates, the
    /// directory generation writes it to.
    pub dir: String,
    /// Its configuration file, at `dir` (`terragrunt.hcl.json` or `terragrunt.hcl`).
    pub config: String,
    /// `values.*` a stack's `unit` block gives it; `None` reads the
    /// `terragrunt.values.hcl` next to the configuration, if any.
    pub values: Option<Arc<BTreeMap<String, Value>>>,
    /// What a stack's `autoinclude` block adds, evaluated in the stack's
    /// context; `None` merges a `terragrunt.autoinclude.hcl` next to the
    /// configuration, if any.
    pub autoinclude: Option<Arc<AutoInclude>>,
}

impl UnitSpec {
    /// A unit whose configuration file is `config`, in its own directory.
    pub fn on_disk(config: &str) -> UnitSpec {
        UnitSpec {
            dir: paths::parent(config).to_string(),
            config: config.to_string(),
            values: None,
            autoinclude: None,
        }
    }
}

/// The part of a stack's `autoinclude` block that decides edges, already
/// evaluated where Terragrunt evaluates it (the stack file, at generation).
#[derive(Clone, Debug, Default)]
pub struct AutoInclude {
    /// `dependency` blocks by name: they replace the unit's own of the same
    /// name (`None`: disabled, which removes the unit's too).
    pub dependency: Vec<(String, Option<DeclaredDependency>)>,
    /// `dependencies.paths` entries, added to the unit's.
    pub paths: Vec<DeclaredDependency>,
}

/// Evaluates one unit within one [`Budget`]: a unit that runs into a limit
/// (or finishes after the deadline) is unresolved with one problem saying which.
pub fn evaluate(s: &Session, spec: &UnitSpec) -> Outcome {
    let budget = Budget::new(s.deadline);
    let mut out = match budget.check() {
        Ok(()) => evaluate_within(s, spec, &budget),
        Err(_) => Outcome::default(),
    };
    // A unit finished after the deadline may have used work cut short by it.
    let _ = budget.check();
    if let Some(tripped) = budget.tripped() {
        out.problems.retain(|p| p.kind != ProblemKind::Unresolved);
        let (file, line) = tripped
            .at
            .unwrap_or_else(|| (s.fs.physical(&spec.config).into_owned(), None));
        out.problems.push(
            Problem::new(ProblemKind::Unresolved, tripped.limit.message()).at(file, line, None),
        );
        out.unresolved = true;
        out.excluded = None;
        out.limit = Some(tripped.limit);
    }
    out
}

fn evaluate_within(s: &Session, spec: &UnitSpec, budget: &Budget) -> Outcome {
    let mut out = Outcome::default();
    let dir = spec.dir.as_str();
    // A unit's own file is read by that unit alone: parsed for it, not kept.
    let file = match s.parse_once(&spec.config) {
        Ok(f) => f,
        Err(e) => {
            let at = s.fs.physical(&spec.config).into_owned();
            out.problems
                .push(Problem::new(ProblemKind::Parse, e.message).at(at, e.line, e.column));
            out.unresolved = true;
            return out;
        }
    };
    out.has_source = file
        .body
        .get_blocks("terraform")
        .any(|b| b.body.has_attribute("source"));
    let acc = Acc::new(budget);
    let mut unit = Instance::new(
        s,
        &acc,
        file.clone(),
        Role::Unit,
        dir.to_string(),
        dir.to_string(),
    );
    unit.values = match &spec.values {
        Some(values) => values.clone(),
        None => Arc::new(load_values(s, &acc, dir).unwrap_or_else(|problem| {
            out.unresolved = true;
            out.problems.push(problem);
            BTreeMap::new()
        })),
    };

    // Include paths are evaluated before locals, with functions only (as in Terragrunt).
    let mut includes = Vec::new();
    let mut strategies = Vec::new();
    for block in file.body.get_blocks("include") {
        let label = block
            .labels
            .first()
            .map(|l| l.as_str().to_string())
            .unwrap_or_default();
        match open_include(s, &acc, &unit, block, &label) {
            Ok(Some((include, merge))) => {
                out.included.push(include.instance.file.path.clone());
                includes.push(include);
                strategies.push(merge);
            }
            Ok(None) => {}
            Err(problem) => {
                // Without its include the unit's edges and reads are incomplete.
                out.unresolved = true;
                out.problems.push(problem);
            }
        }
    }
    // Terragrunt merges a sibling terragrunt.autoinclude.hcl last, as an include that wins.
    let autoinclude_file = match &spec.autoinclude {
        Some(_) => None,
        None => open_autoinclude(s, &acc, &unit, &mut out),
    };

    let features = Arc::new(collect_features(&unit, &includes, &strategies, &mut out));
    unit.features = features.clone();
    for include in &mut includes {
        include.instance.features = features.clone();
        include.instance.values = unit.values.clone();
    }
    let _ = unit.includes.set(includes);
    let mut autoinclude_file = autoinclude_file;
    if let Some(auto) = &mut autoinclude_file {
        auto.features = features.clone();
        auto.values = unit.values.clone();
    }
    for inst in std::iter::once(&unit)
        .chain(unit.includes().iter().map(|i| &i.instance))
        .chain(autoinclude_file.as_ref())
    {
        blocks::refuse_early_dependency_refs(inst, &mut out);
    }
    let mut merged = Merged::collect(&unit, &strategies, autoinclude_file.as_ref());
    if let Some(auto) = &spec.autoinclude {
        // The stack's autoinclude replaces same-named dependency blocks wholesale.
        merged.dependency.retain(|(_, b)| {
            let name = b.labels.first().map(|l| l.as_str()).unwrap_or_default();
            !auto.dependency.iter().any(|(n, _)| n == name)
        });
        out.dependencies
            .extend(auto.dependency.iter().filter_map(|(_, d)| d.clone()));
        out.dependencies.extend(auto.paths.iter().cloned());
    }

    for (inst, block) in &merged.dependency {
        // A dependency block's own attributes come before any dependency's outputs.
        if let Some(dep) = inst.before_dependencies(|| eval_dependency(inst, block, &mut out)) {
            out.dependencies.push(dep);
        }
    }
    for (inst, attr) in &merged.dependencies_paths {
        eval_dependencies_paths(inst, attr, &mut out);
    }
    eval_source(s, &acc, dir, merged.source, &mut out);
    for (inst, block) in merged.extra_arguments.values() {
        eval_extra_arguments(inst, block, &mut out);
    }
    if let Some((inst, block)) = merged.exclude {
        eval_exclude(inst, block, &mut out);
    }
    if let Some((inst, attr)) = merged.skip
        && let Some(true) = edge_bool(inst, &attr.value, "skip", &mut out)
    {
        out.excluded.get_or_insert_with(|| {
            format!(
                "skip = true ({}:{})",
                inst.file.path,
                line(inst, attr.span())
            )
        });
    }

    force_reads(&unit, &mut out);
    for include in unit.includes() {
        force_reads(&include.instance, &mut out);
    }
    if let Some(auto) = &autoinclude_file {
        force_reads(auto, &mut out);
    }

    let unresolved = acc.unresolved.take();
    out.unresolved |= !unresolved.is_empty();
    out.problems.extend(unresolved);
    // One problem per place: a configuration Terragrunt refuses there explains
    // the unknown value it leads to.
    let refused: std::collections::HashSet<(Option<String>, Option<u32>)> = out
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Parse)
        .map(|p| (p.file.clone(), p.line))
        .collect();
    if !refused.is_empty() {
        out.problems.retain(|p| {
            p.kind != ProblemKind::Unresolved || !refused.contains(&(p.file.clone(), p.line))
        });
    }
    out.reads = acc.reads.take();
    out.reads.files.extend(out.included.iter().cloned());
    if out.excluded.is_some() {
        // An excluded unit is never planned, so what it would read cannot go wrong
        // (a legacy root with `skip = true` often has a source only its children resolve).
        out.problems.retain(|p| p.kind != ProblemKind::Unresolved);
        out.unresolved = false;
    }
    out
}

/// The `terragrunt.autoinclude.hcl` next to a unit, as an include instance
/// (its directory functions see the unit's directory as the parent's).
fn open_autoinclude<'a>(
    s: &'a Session,
    acc: &'a Acc<'a>,
    unit: &Instance<'a>,
    out: &mut Outcome,
) -> Option<Instance<'a>> {
    let path = paths::join(&unit.tg_dir, AUTOINCLUDE_FILE);
    if !s.fs.is_file(&path) {
        return None;
    }
    acc.read_file(path.clone());
    match s.parse(&path) {
        Ok(file) => Some(Instance::new(
            s,
            acc,
            file,
            Role::Include {
                parent_dir: unit.tg_dir.clone(),
            },
            unit.tg_dir.clone(),
            unit.original_dir.clone(),
        )),
        Err(e) => {
            out.unresolved = true;
            let at = s.fs.physical(&path).into_owned();
            out.problems
                .push(Problem::new(ProblemKind::Parse, e.message).at(at, e.line, e.column));
            None
        }
    }
}

/// The file Terragrunt merges into the unit next to it, last.
pub const AUTOINCLUDE_FILE: &str = "terragrunt.autoinclude.hcl";

pub(super) fn line(inst: &Instance<'_>, span: Option<std::ops::Range<usize>>) -> u32 {
    inst.file.line_of(span).unwrap_or(0)
}

pub(super) fn unresolved(
    inst: &Instance<'_>,
    span: Option<std::ops::Range<usize>>,
    out: &mut Outcome,
    message: String,
) {
    out.unresolved = true;
    out.problems
        .push(Problem::new(ProblemKind::Unresolved, message).at(
            inst.file.path.clone(),
            inst.file.line_of(span),
            None,
        ));
}

pub(super) fn eval_error(out: &mut Outcome, what: &str, e: EvalError) {
    out.unresolved = true;
    if e.limit.is_some() {
        // `evaluate` reports the unit's limit once, where it was first hit.
        return;
    }
    out.problems.push(
        Problem::new(ProblemKind::Unresolved, format!("{what}: {}", e.message))
            .at(e.file, e.line, None),
    );
}

/// `terragrunt.values.hcl` in `dir`: the `values.*` namespace of a unit or a
/// stack there. A values file that does not parse is a problem (its values
/// are then unknown to whatever uses them).
pub fn load_values(
    s: &Session,
    acc: &Acc<'_>,
    dir: &str,
) -> Result<BTreeMap<String, Value>, Problem> {
    let path = paths::join(dir, VALUES_FILE);
    if !s.fs.is_file(&path) {
        return Ok(BTreeMap::new());
    }
    acc.read_file(path.clone());
    let file = s.parse(&path).map_err(|e| {
        Problem::new(ProblemKind::Parse, e.message).at(
            s.fs.physical(&path).into_owned(),
            e.line,
            e.column,
        )
    })?;
    let inst = Instance::new(
        s,
        acc,
        file.clone(),
        Role::Read,
        dir.to_string(),
        dir.to_string(),
    );
    Ok(file
        .body
        .attributes()
        .map(|a| {
            (
                a.key.as_str().to_string(),
                inst.eval(&a.value, None)
                    .unwrap_or_else(|e| Value::unknown(e.message)),
            )
        })
        .collect())
}

/// The file stack generation writes a unit's (or a stack's) `values` to.
pub const VALUES_FILE: &str = "terragrunt.values.hcl";

/// Opens one `include` block of `unit` (the unit's own file, or a file read
/// with `read_terragrunt_config`, whose includes Terragrunt merges too): its
/// path, the file it names, `expose` and `merge_strategy`. An include that
/// cannot be opened is a problem, and the caller's edges are then unknown.
/// Terragrunt reads include blocks before dependency outputs.
pub fn open_include<'a>(
    s: &'a Session,
    acc: &'a Acc<'a>,
    unit: &Instance<'a>,
    block: &Block,
    label: &str,
) -> Result<Option<(IncludeRef<'a>, Merge)>, Problem> {
    unit.before_dependencies(|| open_include_block(s, acc, unit, block, label))
}

fn open_include_block<'a>(
    s: &'a Session,
    acc: &'a Acc<'a>,
    unit: &Instance<'a>,
    block: &Block,
    label: &str,
) -> Result<Option<(IncludeRef<'a>, Merge)>, Problem> {
    let at = |span| (unit.file.path.clone(), unit.file.line_of(span));
    let Some(path_attr) = block.body.get_attribute("path") else {
        let (f, l) = at(block.span());
        return Err(Problem::new(
            ProblemKind::Parse,
            "include block without `path`; add `path = find_in_parent_folders(\"root.hcl\")`",
        )
        .at(f, l, None));
    };
    let path = match unit.eval(&path_attr.value, None) {
        Ok(Value::String(p)) => p,
        Ok(Value::Unknown(why)) => {
            let (f, l) = at(path_attr.span());
            return Err(Problem::new(
                ProblemKind::Unresolved,
                format!("include path is unknown ({why})"),
            )
            .at(f, l, None));
        }
        Ok(other) => {
            let (f, l) = at(path_attr.span());
            return Err(Problem::new(
                ProblemKind::Parse,
                format!("include path must be a string, found {}", other.type_name()),
            )
            .at(f, l, None));
        }
        Err(e) => {
            let problem = Problem::new(
                ProblemKind::Unresolved,
                format!("include path: {}", e.message),
            )
            .at(e.file, e.line, None);
            return match e.limit {
                // `evaluate` reports the unit's limit once.
                Some(_) => Ok(None),
                None => Err(problem),
            };
        }
    };
    let target = s.resolve(&unit.tg_dir, &path).map_err(|m| {
        let (f, l) = at(path_attr.span());
        Problem::new(ProblemKind::Unresolved, format!("include path {m}")).at(f, l, None)
    })?;
    acc.read_file(target.clone());
    match s.fs.probe(&target) {
        Probe::File => {}
        Probe::Escapes => {
            let (f, l) = at(path_attr.span());
            return Err(Problem::new(
                ProblemKind::Unresolved,
                "the included file is a symbolic link (or lies under one) that leads outside the repository; cascade reads nothing outside the repository, so include a file inside it",
            )
            .at(f, l, None));
        }
        _ => {
            let (f, l) = at(path_attr.span());
            return Err(Problem::new(
                ProblemKind::Parse,
                format!(
                    "included file {} does not exist; fix the include path {PLANNED_ON_EVERY_CHANGE}",
                    unit.shown_path(&target)
                ),
            )
            .at(f, l, None));
        }
    }
    let file = s.parse(&target).map_err(|e| {
        Problem::new(ProblemKind::Parse, e.message).at(
            s.fs.physical(&target).into_owned(),
            e.line,
            e.column,
        )
    })?;
    if let Some(nested) = file.body.get_blocks("include").next() {
        return Err(Problem::new(
            ProblemKind::Parse,
            format!("{target} is included by {} and has an include of its own; Terragrunt allows one level of include", unit.file.path),
        )
        .at(target.clone(), file.line_of(nested.span()), None));
    }
    // `expose` and `merge_strategy` decide which edges reach the unit: an
    // unknown one is as unknown as the path.
    let setting = |name: &str| -> Result<Option<Value>, Problem> {
        let Some(attr) = block.body.get_attribute(name) else {
            return Ok(None);
        };
        let (f, l) = at(attr.span());
        match unit.eval(&attr.value, None) {
            Ok(Value::Unknown(why)) => Err(Problem::new(
                ProblemKind::Unresolved,
                format!("include.{name} is unknown ({why})"),
            )
            .at(f, l, None)),
            Ok(v) => Ok(Some(v)),
            Err(e) => Err(Problem::new(
                ProblemKind::Unresolved,
                format!("include.{name}: {}", e.message),
            )
            .at(e.file, e.line, None)),
        }
    };
    let expose = match setting("expose")? {
        Some(v) => v.as_bool().map_err(|m| {
            let (f, l) = at(block.span());
            Problem::new(ProblemKind::Parse, format!("include.expose: {m}")).at(f, l, None)
        })?,
        None => false,
    };
    let merge = match setting("merge_strategy")? {
        Some(Value::String(m)) if m == "no_merge" => Merge::Unmerged,
        Some(Value::String(m)) if m == "deep" => Merge::Deep,
        Some(Value::String(m)) if m == "shallow" => Merge::Shallow,
        None => Merge::Shallow,
        Some(_) => {
            let (f, l) = at(block.span());
            return Err(Problem::new(
                ProblemKind::Parse,
                "include.merge_strategy must be \"no_merge\", \"shallow\" or \"deep\"",
            )
            .at(f, l, None));
        }
    };
    let parent_dir = paths::parent(&target).to_string();
    let instance = Instance::new(
        s,
        acc,
        file,
        Role::Include { parent_dir },
        unit.tg_dir.clone(),
        unit.original_dir.clone(),
    );
    Ok(Some((
        IncludeRef {
            label: label.to_string(),
            expose,
            instance,
        },
        merge,
    )))
}

/// `feature "<name>" { default = … }` from the includes, then the unit (which wins).
fn collect_features<'a>(
    unit: &Instance<'a>,
    includes: &[IncludeRef<'a>],
    strategies: &[Merge],
    out: &mut Outcome,
) -> BTreeMap<String, Value> {
    let mut features = BTreeMap::new();
    let sources = includes
        .iter()
        .zip(strategies)
        .filter(|(_, m)| **m != Merge::Unmerged)
        .map(|(i, _)| &i.instance)
        .chain(std::iter::once(unit));
    for inst in sources {
        for block in inst.file.body.get_blocks("feature") {
            let Some(name) = block.labels.first() else {
                continue;
            };
            let value = match block.body.get_attribute("default") {
                // Terragrunt reads feature blocks before dependency outputs.
                Some(attr) => inst
                    .before_dependencies(|| inst.eval(&attr.value, None))
                    .unwrap_or_else(|e| {
                        eval_error(out, &format!("feature {}", name.as_str()), e);
                        Value::unknown("feature default could not be evaluated")
                    }),
                None => Value::Null,
            };
            features.insert(name.as_str().to_string(), value);
        }
    }
    for (name, value) in &unit.s.features {
        if let Some(slot) = features.get_mut(name) {
            *slot = value.clone();
        }
    }
    features
}

/// The blocks that decide edges, merged across includes as Terragrunt merges them.
struct Merged<'i, 'a> {
    dependency: Vec<(&'i Instance<'a>, &'i Block)>,
    dependencies_paths: Vec<(&'i Instance<'a>, &'i Attribute)>,
    source: Option<(&'i Instance<'a>, &'i Attribute)>,
    extra_arguments: BTreeMap<String, (&'i Instance<'a>, &'i Block)>,
    exclude: Option<(&'i Instance<'a>, &'i Block)>,
    skip: Option<(&'i Instance<'a>, &'i Attribute)>,
}

impl<'i, 'a> Merged<'i, 'a> {
    /// The includes merged first, then the unit, then its autoinclude file (which wins).
    fn collect(
        unit: &'i Instance<'a>,
        strategies: &[Merge],
        autoinclude: Option<&'i Instance<'a>>,
    ) -> Merged<'i, 'a> {
        let mut m = Merged {
            dependency: Vec::new(),
            dependencies_paths: Vec::new(),
            source: None,
            extra_arguments: BTreeMap::new(),
            exclude: None,
            skip: None,
        };
        let merged_includes = unit
            .includes()
            .iter()
            .zip(strategies)
            .filter(|(_, s)| **s != Merge::Unmerged)
            .map(|(i, _)| &i.instance);
        for inst in merged_includes
            .chain(std::iter::once(unit))
            .chain(autoinclude)
        {
            let body = &inst.file.body;
            for block in body.get_blocks("dependency") {
                let name = block.labels.first().map(|l| l.as_str()).unwrap_or_default();
                // Same-named dependency blocks: the later file (the unit last) wins.
                m.dependency.retain(|(_, b)| {
                    b.labels.first().map(|l| l.as_str()).unwrap_or_default() != name
                });
                m.dependency.push((inst, block));
            }
            for block in body.get_blocks("dependencies") {
                if let Some(attr) = block.body.get_attribute("paths") {
                    m.dependencies_paths.push((inst, attr));
                }
            }
            for block in body.get_blocks("terraform") {
                if let Some(attr) = block.body.get_attribute("source") {
                    m.source = Some((inst, attr));
                }
                for extra in block.body.get_blocks("extra_arguments") {
                    let name = extra
                        .labels
                        .first()
                        .map(|l| l.as_str().to_string())
                        .unwrap_or_default();
                    m.extra_arguments.insert(name, (inst, extra));
                }
            }
            if let Some(block) = body.get_blocks("exclude").last() {
                m.exclude = Some((inst, block));
            }
            if let Some(attr) = body.get_attribute("skip") {
                m.skip = Some((inst, attr));
            }
        }
        m
    }
}
