//! Terragrunt stacks, expanded statically: what `terragrunt stack generate`
//! would write, without writing (or fetching) anything.
//!
//! Owns: reading a `terragrunt.stack.hcl` the way Terragrunt does at
//! generation (its `locals`, its `values` from the `terragrunt.values.hcl`
//! beside it, `include` blocks that bring in more `unit` and `stack` blocks,
//! `unit.<name>.path` and `stack.<name>.path`), and turning each `unit` block
//! into a unit at `<stack>/.terragrunt-stack/<path>` (beside the stack file
//! with `no_dot_terragrunt_stack`) whose configuration is its source's,
//! evaluated there with the block's `values` and `autoinclude`; `stack`
//! blocks recurse. The generated directories are declared to the file index,
//! which serves their reads from the sources.
//! A remote git `source` is served from the tree `DiscoverOptions::sources`
//! holds for it (mounted in the file index, walled at the tree's root); one
//! that is not there is unresolved and asked for (`Session::wanted`), one
//! that failed to fetch is unresolved with the reason, and other remote forms
//! are unresolved naming the form.
//! Must never: fetch a remote source itself, write a file, or let a stack
//! that generates itself run away (bounded by [`MAX_STACK_DEPTH`] and one
//! evaluation budget per stack file on disk).

use super::budget::Budget;
use super::context::{Acc, Instance, Role, Session};
use super::fs::{Probe, STACK_CONFIG_NAME, STACK_DIR, UNIT_CONFIG_NAMES};
use super::limits::{MAX_STACK_DEPTH, PLANNED_ON_EVERY_CHANGE};
use super::parse::HclFile;
use super::remote_source::{self, GitSource, RemoteSource};
use super::unit_config::{AutoInclude, DeclaredDependency, UnitSpec, load_values};
use super::value::Value;
use super::{ReadSet, paths};
use crate::discovery::SourceCommit;
use crate::problem::{Problem, ProblemKind};
use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Block;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod source;
use source::{SourceDir, source_dir};

/// Everything one stack file on disk generates, nested stacks included.
#[derive(Debug, Default)]
pub struct Expansion {
    /// The units, each with where it is generated and what it reads.
    pub units: Vec<GeneratedUnit>,
    /// The stacks generated inside (repo-relative directories).
    pub nested: Vec<String>,
    /// Problems of the stack files themselves, by the stack directory they belong to.
    pub problems: Vec<(String, Problem)>,
    /// Stack directories whose components could not all be known.
    pub unresolved: BTreeSet<String>,
}

/// One unit a stack generates.
#[derive(Debug)]
pub struct GeneratedUnit {
    pub spec: UnitSpec,
    /// The stack files, values files and sources its generation reads.
    pub reads: ReadSet,
    /// Every stack directory it is generated under (the outermost first):
    /// a dependency on any of them is a dependency on this unit.
    pub stacks: Vec<String>,
    pub problems: Vec<Problem>,
    /// True when it cannot be evaluated (a remote or unknown source).
    pub unresolved: bool,
    /// The fetched remote sources it comes from (its stacks' first).
    pub sources: Vec<SourceCommit>,
}

/// Expands the stack whose `terragrunt.stack.hcl` is in `dir` (repo-relative).
pub fn expand(s: &Session, dir: &str) -> Expansion {
    let budget = Budget::new(s.deadline);
    let mut out = Expansion::default();
    let level = Level {
        dir: dir.to_string(),
        values: None,
        reads: ReadSet::default(),
        stacks: Vec::new(),
        depth: 0,
        sources: Vec::new(),
    };
    expand_level(s, &budget, level, &mut out);
    if let Some(tripped) = budget.tripped() {
        let (file, line) = tripped
            .at
            .unwrap_or_else(|| (paths::join(dir, STACK_CONFIG_NAME), None));
        let problem =
            Problem::new(ProblemKind::Unresolved, tripped.limit.message()).at(file, line, None);
        out.problems.push((dir.to_string(), problem));
        out.unresolved.insert(dir.to_string());
    }
    out
}

/// One stack file to read: where it is (where generation puts it), the
/// values it is given, and what reading the stacks above it read.
struct Level {
    dir: String,
    /// `values.*` from the `stack` block that generates it; `None` reads
    /// `terragrunt.values.hcl` in `dir`.
    values: Option<Value>,
    reads: ReadSet,
    /// The stack directories above it, outermost first.
    stacks: Vec<String>,
    depth: usize,
    /// The fetched sources of the stacks above it and of itself.
    sources: Vec<SourceCommit>,
}

/// A `unit` or `stack` block, with the file it is written in.
struct Component<'f> {
    file: &'f HclFile,
    block: &'f Block,
    name: String,
    /// Where it is generated, once known.
    dir: Option<String>,
    no_dot: bool,
}

fn expand_level(s: &Session, budget: &Budget, level: Level, out: &mut Expansion) {
    let here = level.dir.clone();
    let stack_file = paths::join(&here, STACK_CONFIG_NAME);
    let mut found = Vec::new();
    expand_file(s, budget, &level, &stack_file, &mut found, out);
    if !found.is_empty() {
        out.unresolved.insert(here.clone());
        out.problems
            .extend(found.into_iter().map(|p| (here.clone(), p)));
    }
}

/// [`expand_level`] for the stack file `stack_file`; its own problems go to `found`.
fn expand_file(
    s: &Session,
    budget: &Budget,
    level: &Level,
    stack_file: &str,
    found: &mut Vec<Problem>,
    out: &mut Expansion,
) {
    let here = level.dir.clone();
    let mut problem = |p: Problem| found.push(p);
    if level.depth > MAX_STACK_DEPTH {
        problem(
            Problem::new(
                ProblemKind::Unresolved,
                format!(
                    "stacks nest deeper than cascade's limit of {MAX_STACK_DEPTH} levels here (does a stack generate itself?); simplify the stacks {PLANNED_ON_EVERY_CHANGE}"
                ),
            )
            .at(s.fs.physical(stack_file).into_owned(), None, None),
        );
        return;
    }
    let file = match s.parse(stack_file) {
        Ok(file) => file,
        Err(e) => {
            let at = s.fs.physical(stack_file).into_owned();
            return problem(Problem::new(ProblemKind::Parse, e.message).at(at, e.line, e.column));
        }
    };
    let acc = Acc::new(budget);
    acc.read_file(stack_file.to_string());
    let mut inst = Instance::new(
        s,
        &acc,
        file.clone(),
        Role::Read,
        here.clone(),
        here.clone(),
    );
    inst.values = Arc::new(match &level.values {
        Some(Value::Map(values)) => values.clone(),
        Some(_) => BTreeMap::new(),
        None => load_values(s, &acc, &here).unwrap_or_else(|p| {
            problem(p);
            BTreeMap::new()
        }),
    });

    // Included stack files bring their unit and stack blocks, evaluated here.
    let mut files = vec![file.clone()];
    for block in file.body.get_blocks("include") {
        match included_stack_file(&inst, block) {
            Ok(included) => files.push(included),
            Err(p) => problem(p),
        }
    }
    let mut units = Vec::new();
    let mut stacks = Vec::new();
    for f in &files {
        for block in f.body.blocks() {
            let kind = block.ident.as_str();
            if kind != "unit" && kind != "stack" {
                continue;
            }
            if let Some(expansion) = block.body.get_blocks("expansion").next() {
                problem(
                    Problem::new(
                        ProblemKind::Unresolved,
                        format!(
                            "this {kind} block iterates with an `expansion` block (Terragrunt's block-iteration experiment), which cascade does not expand, so it cannot tell which units this block generates and none of them is planned; to have them planned, write one {kind} block for each"
                        ),
                    )
                    .at(f.path.clone(), f.line_of(expansion.span()), None),
                );
                continue;
            }
            let component = Component {
                file: f,
                block,
                name: block
                    .labels
                    .first()
                    .map(|l| l.as_str().to_string())
                    .unwrap_or_default(),
                dir: None,
                no_dot: false,
            };
            if kind == "unit" {
                units.push(component);
            } else {
                stacks.push(component);
            }
        }
    }

    // Where every component goes, first: `unit.<name>.path` and
    // `stack.<name>.path` may be used by any block's values.
    let mut names = BTreeMap::new();
    for (kind, list) in [("unit", &mut units), ("stack", &mut stacks)] {
        let mut refs = BTreeMap::new();
        for c in list.iter_mut() {
            match place(&inst, &here, c) {
                Ok(Some(dir)) => {
                    refs.insert(
                        c.name.clone(),
                        Value::Map(BTreeMap::from([(
                            "path".to_string(),
                            Value::String(s.absolute(&dir)),
                        )])),
                    );
                    c.dir = Some(dir);
                }
                Ok(None) => {}
                Err(p) => problem(p),
            }
        }
        names.insert(kind.to_string(), Value::Map(refs));
    }
    inst.components = Arc::new(names);
    // Terragrunt evaluates every local of a stack file: their reads count.
    for attr in inst.local_attributes() {
        let name = attr.key.as_str();
        if let Err(e) = inst.local(name, None) {
            problem(
                Problem::new(
                    ProblemKind::Unresolved,
                    format!("local.{name} cannot be evaluated: {}", e.message),
                )
                .at(e.file, e.line, None),
            );
        }
    }

    let mut stacks_here = level.stacks.clone();
    stacks_here.push(here.clone());
    let mut generated = Vec::new();
    for c in units.iter().filter(|c| c.dir.is_some()) {
        if let Some(mut unit) = generate_unit(&inst, c, &stacks_here) {
            let mine = std::mem::take(&mut unit.sources);
            unit.sources = level.sources.clone();
            unit.sources.extend(mine);
            generated.push(unit);
        }
    }
    let mut nested = Vec::new();
    for c in stacks.iter().filter(|c| c.dir.is_some()) {
        match generate_stack(&inst, c) {
            Ok(Some(next)) => nested.push(next),
            Ok(None) => {}
            Err(p) => problem(p),
        }
    }

    let mut reads = level.reads.clone();
    let mine = acc.reads.take();
    reads.files.extend(mine.files);
    reads.dirs.extend(mine.dirs);
    reads.globs.extend(mine.globs);
    for p in acc.unresolved.take() {
        problem(p);
    }
    for mut unit in generated {
        unit.reads.files.extend(reads.files.iter().cloned());
        unit.reads.dirs.extend(reads.dirs.iter().cloned());
        unit.reads.globs.extend(reads.globs.iter().cloned());
        out.units.push(unit);
    }
    for (dir, values, used) in nested {
        out.nested.push(dir.clone());
        let mut sources = level.sources.clone();
        sources.extend(used);
        let next = Level {
            dir,
            values,
            reads: reads.clone(),
            stacks: stacks_here.clone(),
            depth: level.depth + 1,
            sources,
        };
        expand_level(s, budget, next, out);
    }
}

/// The stack file an `include` block of a stack file names.
fn included_stack_file(inst: &Instance<'_>, block: &Block) -> Result<Arc<HclFile>, Problem> {
    let at = |span| (inst.file.path.clone(), inst.file.line_of(span));
    let Some(attr) = block.body.get_attribute("path") else {
        let (f, l) = at(block.span());
        return Err(
            Problem::new(ProblemKind::Parse, "include block without `path`").at(f, l, None),
        );
    };
    let path = string(inst, &attr.value, "include.path").map_err(|m| {
        let (f, l) = at(attr.span());
        Problem::new(ProblemKind::Unresolved, m).at(f, l, None)
    })?;
    let target = inst.s.resolve(&inst.tg_dir, &path).map_err(|m| {
        let (f, l) = at(attr.span());
        Problem::new(ProblemKind::Unresolved, format!("include path {m}")).at(f, l, None)
    })?;
    inst.acc.read_file(target.clone());
    inst.s.parse(&target).map_err(|e| {
        Problem::new(ProblemKind::Parse, e.message).at(
            inst.s.fs.physical(&target).into_owned(),
            e.line,
            e.column,
        )
    })
}

/// Where a component is generated (`None` when it is disabled), checked to
/// stay inside the stack's directory as Terragrunt requires.
fn place(
    inst: &Instance<'_>,
    here: &str,
    c: &mut Component<'_>,
) -> Result<Option<String>, Problem> {
    let body = &c.block.body;
    let located = |span, kind, message: String| {
        Problem::new(kind, message).at(c.file.path.clone(), c.file.line_of(span), None)
    };
    if let Some(attr) = body.get_attribute("enabled") {
        match inst
            .eval(&attr.value, None)
            .map(|v| (v.is_unknown(), v.as_bool()))
        {
            Ok((false, Ok(false))) => return Ok(None),
            Ok((false, Ok(true))) => {}
            _ => {
                return Err(located(
                    attr.span(),
                    ProblemKind::Unresolved,
                    format!(
                        "cannot tell whether {} \"{}\" is enabled",
                        c.block.ident.as_str(),
                        c.name
                    ),
                ));
            }
        }
    }
    if let Some(attr) = body.get_attribute("no_dot_terragrunt_stack") {
        c.no_dot = match inst.eval(&attr.value, None).map(|v| v.as_bool()) {
            Ok(Ok(b)) => b,
            _ => {
                return Err(located(
                    attr.span(),
                    ProblemKind::Unresolved,
                    format!(
                        "{}.no_dot_terragrunt_stack is unknown or not a bool",
                        c.name
                    ),
                ));
            }
        };
    }
    let Some(attr) = body.get_attribute("path") else {
        return Err(located(
            c.block.span(),
            ProblemKind::Parse,
            format!(
                "{} \"{}\" has no `path`; add where it is generated",
                c.block.ident.as_str(),
                c.name
            ),
        ));
    };
    let path = string(inst, &attr.value, "path")
        .map_err(|m| located(attr.span(), ProblemKind::Unresolved, m))?;
    let base = if c.no_dot {
        here.to_string()
    } else {
        paths::join(here, STACK_DIR)
    };
    let dir = (!path.starts_with('/'))
        .then(|| paths::clean(&paths::join(&base, &path)))
        .flatten()
        .filter(|d| paths::is_within(d, &base) && *d != base);
    match dir {
        Some(dir) => Ok(Some(dir)),
        None => Err(located(
            attr.span(),
            ProblemKind::Parse,
            format!(
                "the path of {} \"{}\" leaves the stack's directory; Terragrunt generates only inside it, so use a relative path below it {PLANNED_ON_EVERY_CHANGE}",
                c.block.ident.as_str(),
                c.name
            ),
        )),
    }
}

fn generate_unit(
    inst: &Instance<'_>,
    c: &Component<'_>,
    stacks: &[String],
) -> Option<GeneratedUnit> {
    let s = inst.s;
    let dir = c.dir.clone()?;
    let mut unit = GeneratedUnit {
        spec: UnitSpec {
            config: paths::join(&dir, "terragrunt.hcl"),
            dir: dir.clone(),
            values: None,
            autoinclude: None,
        },
        reads: ReadSet::default(),
        stacks: stacks.to_vec(),
        problems: Vec::new(),
        unresolved: false,
        sources: Vec::new(),
    };
    let (source, fetched) = match source_dir(inst, c) {
        Ok(SourceDir::Local(source)) => (source, None),
        Ok(SourceDir::Fetched { dir, used }) => (dir, Some(used)),
        Err(p) => {
            unit.unresolved = true;
            unit.problems.push(p);
            return Some(unit);
        }
    };
    let Some(config) = UNIT_CONFIG_NAMES
        .iter()
        .find(|name| s.fs.is_file(&paths::join(&source, name)))
    else {
        unit.unresolved = true;
        unit.problems.push(
            Problem::new(
                ProblemKind::Parse,
                format!(
                    "the source of unit \"{}\" holds no terragrunt.hcl, so stack generation fails (Terragrunt: validation failed); point it at a unit {PLANNED_ON_EVERY_CHANGE}",
                    c.name
                ),
            )
            .at(c.file.path.clone(), c.file.line_of(c.block.span()), None),
        );
        return Some(unit);
    };
    s.fs.generate(&dir, &source, c.no_dot);
    unit.spec.config = paths::join(&dir, config);
    match fetched {
        // A fetched tree is no part of the repository: the stack file naming it is read.
        Some(used) => unit.sources.push(used),
        None => {
            unit.reads.dirs.insert(source);
        }
    }
    if let Some(attr) = c.block.body.get_attribute("values") {
        match inst.eval(&attr.value, None) {
            Ok(Value::Map(values)) => unit.spec.values = Some(Arc::new(values)),
            Ok(Value::Unknown(why)) => {
                unit.unresolved = true;
                unit.problems.push(
                    Problem::new(
                        ProblemKind::Unresolved,
                        format!("the values of unit \"{}\" are unknown ({why})", c.name),
                    )
                    .at(c.file.path.clone(), c.file.line_of(attr.span()), None),
                );
                unit.spec.values = Some(Arc::default());
            }
            Ok(other) => {
                unit.unresolved = true;
                unit.problems.push(
                    Problem::new(
                        ProblemKind::Parse,
                        format!(
                            "the values of unit \"{}\" must be an object, found {}",
                            c.name,
                            other.type_name()
                        ),
                    )
                    .at(c.file.path.clone(), c.file.line_of(attr.span()), None),
                );
                unit.spec.values = Some(Arc::default());
            }
            Err(e) => {
                unit.unresolved = true;
                unit.problems.push(
                    Problem::new(
                        ProblemKind::Unresolved,
                        format!(
                            "the values of unit \"{}\" cannot be evaluated: {}",
                            c.name, e.message
                        ),
                    )
                    .at(c.file.path.clone(), c.file.line_of(attr.span()), None),
                );
                unit.spec.values = Some(Arc::default());
            }
        }
    }
    if let Some(block) = c.block.body.get_blocks("autoinclude").next() {
        unit.spec.autoinclude = Some(Arc::new(autoinclude(inst, c, block, &dir, &mut unit)));
    }
    Some(unit)
}

/// The edges an `autoinclude` block adds, evaluated in the stack file (as
/// generation does), paths resolved from the generated unit.
fn autoinclude(
    inst: &Instance<'_>,
    c: &Component<'_>,
    block: &Block,
    unit_dir: &str,
    unit: &mut GeneratedUnit,
) -> AutoInclude {
    let mut out = AutoInclude::default();
    let mut fail = |span, message: String| {
        unit.unresolved = true;
        unit.problems
            .push(Problem::new(ProblemKind::Unresolved, message).at(
                c.file.path.clone(),
                c.file.line_of(span),
                None,
            ));
    };
    let target = |expr: &Expression, what: &str| -> Result<(String, bool), String> {
        let path = string(inst, expr, what)?;
        let target = inst
            .s
            .resolve(unit_dir, &path)
            .map_err(|m| format!("{what}: {m}"))?;
        Ok((target.clone(), inst.shown_path(&target) == target))
    };
    for dep in block.body.get_blocks("dependency") {
        let name = dep
            .labels
            .first()
            .map(|l| l.as_str().to_string())
            .unwrap_or_default();
        if let Some(enabled) = dep.body.get_attribute("enabled") {
            match inst
                .eval(&enabled.value, None)
                .map(|v| (v.is_unknown(), v.as_bool()))
            {
                Ok((false, Ok(false))) => {
                    out.dependency.push((name, None));
                    continue;
                }
                Ok((false, Ok(true))) => {}
                _ => {
                    fail(
                        enabled.span(),
                        format!("autoinclude dependency.{name}.enabled is unknown"),
                    );
                    continue;
                }
            }
        }
        let Some(attr) = dep.body.get_attribute("config_path") else {
            fail(
                dep.span(),
                format!("autoinclude dependency.{name} has no config_path"),
            );
            continue;
        };
        match target(&attr.value, &format!("dependency.{name}.config_path")) {
            Ok((target, shown)) => out.dependency.push((
                name.clone(),
                Some(DeclaredDependency {
                    target,
                    file: c.file.path.clone(),
                    line: c.file.line_of(attr.span()),
                    name,
                    shown,
                }),
            )),
            Err(m) => fail(attr.span(), m),
        }
    }
    for deps in block.body.get_blocks("dependencies") {
        let Some(attr) = deps.body.get_attribute("paths") else {
            continue;
        };
        match inst.eval(&attr.value, None) {
            Ok(Value::List(items)) => {
                for item in items {
                    let Value::String(p) = item else {
                        fail(
                            attr.span(),
                            "autoinclude dependencies.paths must be strings".into(),
                        );
                        continue;
                    };
                    match inst.s.resolve(unit_dir, &p) {
                        Ok(target) => out.paths.push(DeclaredDependency {
                            shown: inst.shown_path(&target) == target,
                            target,
                            file: c.file.path.clone(),
                            line: c.file.line_of(attr.span()),
                            name: "dependencies".into(),
                        }),
                        Err(m) => fail(attr.span(), format!("autoinclude dependencies.paths: {m}")),
                    }
                }
            }
            Ok(_) => fail(
                attr.span(),
                "autoinclude dependencies.paths is unknown or not a list".into(),
            ),
            Err(e) => fail(
                attr.span(),
                format!("autoinclude dependencies.paths: {}", e.message),
            ),
        }
    }
    out
}

/// A nested stack generated here and read next: where, with which values, from which fetched source.
type NestedStack = (String, Option<Value>, Option<SourceCommit>);

/// A nested stack: where it is generated, the values it is given and the
/// fetched source it comes from.
fn generate_stack(inst: &Instance<'_>, c: &Component<'_>) -> Result<Option<NestedStack>, Problem> {
    let Some(dir) = c.dir.clone() else {
        return Ok(None);
    };
    let (source, used) = match source_dir(inst, c)? {
        SourceDir::Local(source) => (source, None),
        SourceDir::Fetched { dir, used } => (dir, Some(used)),
    };
    if !inst.s.fs.is_file(&paths::join(&source, STACK_CONFIG_NAME)) {
        return Err(Problem::new(
            ProblemKind::Parse,
            format!(
                "the source of stack \"{}\" holds no terragrunt.stack.hcl, so stack generation fails; point it at a stack {PLANNED_ON_EVERY_CHANGE}",
                c.name
            ),
        )
        .at(c.file.path.clone(), c.file.line_of(c.block.span()), None));
    }
    inst.s.fs.generate(&dir, &source, c.no_dot);
    let values = match c.block.body.get_attribute("values") {
        None => None,
        Some(attr) => match inst.eval(&attr.value, None) {
            Ok(v @ Value::Map(_)) => Some(v),
            Ok(_) | Err(_) => {
                return Err(Problem::new(
                    ProblemKind::Unresolved,
                    format!(
                        "the values of stack \"{}\" are unknown or not an object",
                        c.name
                    ),
                )
                .at(c.file.path.clone(), c.file.line_of(attr.span()), None));
            }
        },
    };
    Ok(Some((dir, values, used)))
}

/// A string-valued attribute, or why not.
fn string(inst: &Instance<'_>, expr: &Expression, what: &str) -> Result<String, String> {
    match inst.eval(expr, None) {
        Ok(Value::String(s)) => Ok(s),
        Ok(Value::Unknown(why)) => Err(format!("{what} is unknown ({why})")),
        Ok(other) => Err(format!(
            "{what} must be a string, found {}",
            other.type_name()
        )),
        Err(e) => Err(format!("{what} cannot be evaluated: {}", e.message)),
    }
}
