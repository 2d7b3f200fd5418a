//! The merged blocks that decide a unit's edges and reads, evaluated for one
//! unit: `dependency`, `dependencies`, `terraform` (`source`,
//! `extra_arguments`), `exclude`, and every local or attribute that calls a
//! read function. An expression that stays unknown or fails makes the unit
//! unresolved, located at its file and line.

use super::{DeclaredDependency, Outcome, eval_error, line, unresolved};
use crate::problem::{Problem, ProblemKind};
use crate::terragrunt::context::{Acc, Instance, Session};
use crate::terragrunt::fs::Probe;
use crate::terragrunt::limits::PLANNED_ON_EVERY_CHANGE;
use crate::terragrunt::parse::EarlyRef;
use crate::terragrunt::reads;
use crate::terragrunt::value::Value;
use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Attribute, Block};

/// Evaluates an edge-deciding boolean; unknown makes the unit unresolved.
pub(super) fn edge_bool(
    inst: &Instance<'_>,
    expr: &Expression,
    what: &str,
    out: &mut Outcome,
) -> Option<bool> {
    match inst.eval(expr, None) {
        Ok(Value::Unknown(why)) => {
            unresolved(inst, expr.span(), out, format!("{what} is unknown ({why})"));
            None
        }
        Ok(v) => match v.as_bool() {
            Ok(b) => Some(b),
            Err(m) => {
                unresolved(inst, expr.span(), out, format!("{what}: {m}"));
                None
            }
        },
        Err(e) => {
            eval_error(out, what, e);
            None
        }
    }
}

pub(super) fn eval_dependency(
    inst: &Instance<'_>,
    block: &Block,
    out: &mut Outcome,
) -> Option<DeclaredDependency> {
    let name = block
        .labels
        .first()
        .map(|l| l.as_str().to_string())
        .unwrap_or_default();
    let what = format!("dependency.{name}");
    if let Some(enabled) = block.body.get_attribute("enabled") {
        // A disabled dependency is no edge, and its target is never looked at.
        if edge_bool(inst, &enabled.value, &format!("{what}.enabled"), out) != Some(true) {
            return None;
        }
    }
    let Some(attr) = block.body.get_attribute("config_path") else {
        unresolved(
            inst,
            block.span(),
            out,
            format!("{what} has no config_path"),
        );
        return None;
    };
    if let Ok(Value::String(p)) = inst.eval(&attr.value, None)
        && p.is_empty()
    {
        // Terragrunt's IsValidConfigPath: an empty path is no dependency at all
        // (not the unit itself, which would read as a cycle).
        out.unresolved = true;
        out.problems.push(
            Problem::new(
                ProblemKind::Parse,
                format!(
                    "dependency \"{name}\" has invalid config_path: it is empty; give the path of the unit it depends on, or remove the block {PLANNED_ON_EVERY_CHANGE}"
                ),
            )
            .at(inst.file.path.clone(), inst.file.line_of(attr.span()), None),
        );
        return None;
    }
    let target = edge_path(inst, &attr.value, &format!("{what}.config_path"), out)?;
    Some(DeclaredDependency {
        shown: inst.shown_path(&target) == target,
        target,
        file: inst.file.path.clone(),
        line: inst.file.line_of(attr.span()),
        name,
    })
}

pub(super) fn eval_dependencies_paths(inst: &Instance<'_>, attr: &Attribute, out: &mut Outcome) {
    let value = match inst.eval(&attr.value, None) {
        Ok(v) => v,
        Err(e) => return eval_error(out, "dependencies.paths", e),
    };
    let items = match value {
        Value::Unknown(why) => {
            return unresolved(
                inst,
                attr.span(),
                out,
                format!("dependencies.paths is unknown ({why})"),
            );
        }
        Value::List(items) => items,
        other => {
            return unresolved(
                inst,
                attr.span(),
                out,
                format!(
                    "dependencies.paths must be a list, found {}",
                    other.type_name()
                ),
            );
        }
    };
    for item in items {
        match item {
            Value::String(p) => match inst.s.resolve(&inst.tg_dir, &p) {
                Ok(target) => out.dependencies.push(DeclaredDependency {
                    shown: inst.shown_path(&target) == target,
                    target,
                    file: inst.file.path.clone(),
                    line: inst.file.line_of(attr.span()),
                    name: "dependencies".into(),
                }),
                Err(m) => unresolved(inst, attr.span(), out, format!("dependencies.paths: {m}")),
            },
            Value::Unknown(why) => unresolved(
                inst,
                attr.span(),
                out,
                format!("an entry of dependencies.paths is unknown ({why})"),
            ),
            other => unresolved(
                inst,
                attr.span(),
                out,
                format!(
                    "dependencies.paths entries must be strings, found {}",
                    other.type_name()
                ),
            ),
        }
    }
}

/// A path that decides an edge, resolved against the unit directory.
fn edge_path(
    inst: &Instance<'_>,
    expr: &Expression,
    what: &str,
    out: &mut Outcome,
) -> Option<String> {
    match inst.eval(expr, None) {
        Ok(Value::String(p)) => match inst.s.resolve(&inst.tg_dir, &p) {
            Ok(target) => Some(target),
            Err(m) => {
                unresolved(inst, expr.span(), out, format!("{what}: {m}"));
                None
            }
        },
        Ok(Value::Unknown(why)) => {
            unresolved(inst, expr.span(), out, format!("{what} is unknown ({why})"));
            None
        }
        Ok(other) => {
            unresolved(
                inst,
                expr.span(),
                out,
                format!("{what} must be a string, found {}", other.type_name()),
            );
            None
        }
        Err(e) => {
            eval_error(out, &format!("{what} cannot be evaluated"), e);
            None
        }
    }
}

/// `terraform.source`: a local source joins the read set (the whole root
/// Terragrunt copies, and every local module it calls); a remote one adds
/// nothing. Without a source the unit directory is the root module, whose
/// module calls are followed the same way. A module directory, or a module
/// call, that leads through a link out of the repository is an error.
pub(super) fn eval_source(
    s: &Session,
    acc: &Acc<'_>,
    dir: &str,
    source: Option<(&Instance<'_>, &Attribute)>,
    out: &mut Outcome,
) {
    let module_dir = match source {
        None => dir.to_string(),
        Some((inst, attr)) => match inst.eval(&attr.value, None) {
            Ok(Value::String(src)) => match reads::local_source_dirs(s, dir, &src) {
                None => return,
                Some(Ok((root, module))) => {
                    if s.fs.probe(&root) == Probe::Escapes || s.fs.probe(&module) == Probe::Escapes
                    {
                        return unresolved(
                            inst,
                            attr.span(),
                            out,
                            "terraform.source leads through a symbolic link outside the repository; cascade reads nothing outside the repository, so keep local modules inside it".to_string(),
                        );
                    }
                    // `source = "."` is the unit's own directory: its files are the unit's already.
                    if root != dir {
                        acc.read_dir(root);
                    }
                    module
                }
                Some(Err(m)) => {
                    return unresolved(inst, attr.span(), out, format!("terraform.source: {m}"));
                }
            },
            Ok(Value::Unknown(why)) => {
                return unresolved(
                    inst,
                    attr.span(),
                    out,
                    format!("terraform.source is unknown ({why})"),
                );
            }
            Ok(other) => {
                return unresolved(
                    inst,
                    attr.span(),
                    out,
                    format!(
                        "terraform.source must be a string, found {}",
                        other.type_name()
                    ),
                );
            }
            Err(e) => return eval_error(out, "terraform.source cannot be evaluated", e),
        },
    };
    let modules = reads::module_dirs(s, &module_dir);
    for read in modules.dirs.iter() {
        if read != dir {
            acc.read_dir(read.clone());
        }
    }
    for (file, line) in modules.escaping.iter() {
        out.unresolved = true;
        out.problems.push(
            Problem::new(
                ProblemKind::Unresolved,
                "this module's source leads through a symbolic link outside the repository; cascade reads nothing outside the repository, so keep local modules inside it",
            )
            .at(s.fs.physical(file).into_owned(), *line, None),
        );
    }
}

/// Var files named by `extra_arguments`: required, optional and `-var-file=` arguments.
pub(super) fn eval_extra_arguments(inst: &Instance<'_>, block: &Block, out: &mut Outcome) {
    let mut files = Vec::new();
    for key in ["required_var_files", "optional_var_files", "arguments"] {
        let Some(attr) = block.body.get_attribute(key) else {
            continue;
        };
        match inst.eval(&attr.value, None) {
            Ok(Value::List(items)) => {
                let mut next_is_file = false;
                for item in items {
                    match item {
                        Value::String(text) if key == "arguments" => {
                            if next_is_file {
                                files.push((text, attr));
                                next_is_file = false;
                            } else if let Some(f) = text.strip_prefix("-var-file=") {
                                files.push((f.to_string(), attr));
                            } else {
                                next_is_file = text == "-var-file";
                            }
                        }
                        Value::String(file) => files.push((file, attr)),
                        Value::Unknown(why) => unresolved(
                            inst,
                            attr.span(),
                            out,
                            format!("extra_arguments.{key} is unknown ({why})"),
                        ),
                        _ => {}
                    }
                }
            }
            Ok(Value::Unknown(why)) => unresolved(
                inst,
                attr.span(),
                out,
                format!("extra_arguments.{key} is unknown ({why})"),
            ),
            Ok(_) => {}
            Err(e) => eval_error(out, &format!("extra_arguments.{key}"), e),
        }
    }
    for (file, attr) in files {
        // A var file outside the repository cannot change in a pull request.
        let Ok(path) = inst.s.resolve(&inst.tg_dir, &file) else {
            continue;
        };
        if inst.s.fs.probe(&path) == Probe::Escapes {
            unresolved(
                inst,
                attr.span(),
                out,
                "a var file of extra_arguments leads through a symbolic link outside the repository; cascade reads nothing outside the repository, so keep var files inside it".to_string(),
            );
        }
        inst.acc.read_file(path);
    }
}

pub(super) fn eval_exclude(inst: &Instance<'_>, block: &Block, out: &mut Outcome) {
    let Some(cond) = block.body.get_attribute("if") else {
        return;
    };
    let Some(true) = edge_bool(inst, &cond.value, "exclude.if", out) else {
        return;
    };
    let actions = match block
        .body
        .get_attribute("actions")
        .map(|a| (a, inst.eval(&a.value, None)))
    {
        Some((_, Ok(Value::List(items)))) => items,
        Some((a, Ok(Value::Unknown(why)))) => {
            return unresolved(
                inst,
                a.span(),
                out,
                format!("exclude.actions is unknown ({why})"),
            );
        }
        Some((_, Err(e))) => return eval_error(out, "exclude.actions", e),
        _ => Vec::new(),
    };
    // One unknown action may be `plan`: whether the unit is planned is unknown.
    if let Some(why) = actions.iter().find_map(|a| match a {
        Value::Unknown(why) => Some(why),
        _ => None,
    }) {
        let span = block.body.get_attribute("actions").and_then(|a| a.span());
        return unresolved(
            inst,
            span,
            out,
            format!("an action of exclude.actions is unknown ({why})"),
        );
    }
    // cascade plans and applies; an exclude that names either keeps the unit out.
    let applies = actions.iter().any(|a| {
        matches!(a, Value::String(s) if ["all", "all_except_output", "plan", "apply"].contains(&s.to_lowercase().as_str()))
    });
    if applies {
        out.excluded = Some(format!(
            "exclude block ({}:{})",
            inst.file.path,
            line(inst, block.span())
        ));
        if let Some(attr) = block.body.get_attribute("exclude_dependencies") {
            out.exclude_dependencies =
                edge_bool(inst, &attr.value, "exclude.exclude_dependencies", out) == Some(true);
        }
    }
}

/// Evaluates what Terragrunt evaluates on every parse (every local) as far as
/// reads are concerned: each local and each attribute that calls a read
/// function, so their arguments join the read set.
pub(super) fn force_reads(inst: &Instance<'_>, out: &mut Outcome) {
    if !reads::file_reads(&inst.file) {
        return;
    }
    let plan = reads::read_plan(&inst.file);
    for name in &plan.locals {
        if let Err(e) = inst.local(name, None) {
            eval_error(out, &format!("local.{name} cannot be evaluated"), e);
        }
    }
    for path in &plan.attributes {
        // Inputs and generated files may use dependency outputs; only the reads matter here.
        if let Some(attr) = reads::attribute_at(&inst.file.body, path) {
            let _ = inst.eval(&attr.value, None);
        }
    }
}

/// The expressions Terragrunt evaluates before `dependency` blocks, checked
/// for a reference to `dependency.*`. Terragrunt checks some of them for
/// references before evaluating anything, so it refuses a reference anywhere
/// in them, even inside `try()` or `can()`: `terraform.source`
/// (TerraformSourceReferencesDependencyError), locals (only `local`,
/// `include`, `feature` and `values` may be named there) and, as cascade
/// reads them, `dependencies.paths`. The others (include paths, feature
/// defaults, a dependency's `config_path` and `enabled`) it evaluates where
/// there is no `dependency` variable: outside `try()`/`can()` that fails,
/// inside them the fallback is taken (`Instance::before_dependencies`). Each
/// refusal is an error for the unit, located.
pub(super) fn refuse_early_dependency_refs(inst: &Instance<'_>, out: &mut Outcome) {
    if !inst.file.refers_to("dependency") {
        return;
    }
    let found = inst.file.early_dependency_refs(|body| {
        let mut found = Vec::new();
        let mut check = |what: String, expr: &Expression| {
            let refs = dependency_refs(expr);
            if refs.anywhere {
                found.push(EarlyRef {
                    what,
                    span: expr.span(),
                    only_in_try: !refs.outside_try,
                });
            }
        };
        for block in body.get_blocks("locals") {
            for attr in block.body.attributes() {
                check(format!("local.{}", attr.key.as_str()), &attr.value);
            }
        }
        for block in body.get_blocks("terraform") {
            if let Some(attr) = block.body.get_attribute("source") {
                check("terraform.source".into(), &attr.value);
            }
        }
        for (kind, attrs) in [
            ("include", &["path"][..]),
            ("feature", &["default"][..]),
            ("dependency", &["config_path", "enabled"][..]),
            ("dependencies", &["paths"][..]),
        ] {
            for block in body.get_blocks(kind) {
                for name in attrs {
                    if let Some(attr) = block.body.get_attribute(name) {
                        check(format!("{kind}.{name}"), &attr.value);
                    }
                }
            }
        }
        found
    });
    for early in found {
        let what = early.what.as_str();
        let checked_first = what == "terraform.source"
            || what == "dependencies.paths"
            || what.starts_with("local.");
        if early.only_in_try && !checked_first {
            // Evaluated with no `dependency` variable: try() and can() catch that.
            continue;
        }
        let even_in_try = match (early.only_in_try, what) {
            (false, _) => "",
            (true, "dependencies.paths") => {
                ", even inside try() or can(), which pass the unknown outputs on"
            }
            (true, _) => {
                ", even inside try() or can(), since it checks what the expression refers to before evaluating it"
            }
        };
        let why = if what == "terraform.source" {
            format!(
                "terraform.source cannot reference dependency outputs; the module source must be resolvable before dependencies are evaluated (Terragrunt refuses this configuration{even_in_try})"
            )
        } else {
            format!(
                "{what} refers to dependency outputs, which Terragrunt has not read yet when it evaluates {what} (there is no `dependency` variable there, and Terragrunt refuses this configuration{even_in_try})"
            )
        };
        out.unresolved = true;
        out.problems.push(
            Problem::new(
                ProblemKind::Parse,
                format!("{why}; use a literal or a local instead {PLANNED_ON_EVERY_CHANGE}"),
            )
            .at(
                inst.file.path.clone(),
                inst.file.line_of(early.span.clone()),
                None,
            ),
        );
    }
}

/// Where an expression refers to the `dependency` namespace.
struct DependencyRefs {
    anywhere: bool,
    /// Somewhere other than inside an argument of `try()` or `can()`.
    outside_try: bool,
}

fn dependency_refs(expr: &Expression) -> DependencyRefs {
    struct Finder {
        refs: DependencyRefs,
        /// How many `try()`/`can()` calls the walk is inside.
        in_try: usize,
    }
    impl hcl_edit::visit::Visit for Finder {
        fn visit_expr(&mut self, expr: &Expression) {
            match expr {
                Expression::Variable(v) if v.as_str() == "dependency" => {
                    self.refs.anywhere = true;
                    self.refs.outside_try |= self.in_try == 0;
                }
                Expression::FuncCall(call)
                    if !call.name.is_namespaced()
                        && matches!(call.name.name.as_str(), "try" | "can") =>
                {
                    self.in_try += 1;
                    hcl_edit::visit::visit_expr(self, expr);
                    self.in_try -= 1;
                }
                _ => hcl_edit::visit::visit_expr(self, expr),
            }
        }
    }
    let mut finder = Finder {
        refs: DependencyRefs {
            anywhere: false,
            outside_try: false,
        },
        in_try: 0,
    };
    hcl_edit::visit::Visit::visit_expr(&mut finder, expr);
    finder.refs
}
