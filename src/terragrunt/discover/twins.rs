//! Two units with one path. The graph, the read index and the plan know a
//! unit by its path alone, so of two units sharing one, whichever came last
//! would silently stand for both: its `exclude` block could hide the other's
//! change, its directory be planned for the other's. Instead both are
//! reported and the path becomes one *refused* unit that reads what either
//! read: a change to either is a failed unit saying what to rename, never
//! "no changes".

use super::super::{Unit, UnitKind};
use crate::problem::{Problem, ProblemKind};
use crate::unit::UnitPath;

/// Merges every run of units sharing a path (`units` sorted by path) into one
/// refused unit, with a problem for each of them.
pub(super) fn refuse_shared_paths(units: &mut Vec<Unit>, problems: &mut Vec<Problem>) {
    if units.windows(2).all(|w| w[0].path != w[1].path) {
        return;
    }
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    // For each unit of `out`, the kind of every unit merged into it.
    let mut kinds: Vec<Vec<UnitKind>> = Vec::with_capacity(units.len());
    for unit in units.drain(..) {
        match (out.last_mut(), kinds.last_mut()) {
            (Some(last), Some(seen)) if last.path == unit.path => {
                seen.push(unit.kind);
                absorb(last, unit);
            }
            _ => {
                kinds.push(vec![unit.kind]);
                out.push(unit);
            }
        }
    }
    for (unit, kinds) in out.iter_mut().zip(&kinds).filter(|(_, k)| k.len() > 1) {
        for (i, kind) in kinds.iter().enumerate() {
            let others: Vec<&str> = kinds
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, k)| route(*k))
                .collect();
            let message = format!(
                "{} shares the path `{}` with {}; cascade runs none of them until one is renamed or removed",
                route(*kind),
                unit.path,
                others.join(" and ")
            );
            let mut problem = Problem::new(ProblemKind::DuplicateUnit, message).unit(&unit.path);
            if *kind == UnitKind::Module {
                problem = problem.at(crate::config::FILE_NAME, None, None);
            }
            problems.push(problem);
        }
        unit.refused = Some(reason(&unit.path, kinds));
    }
    *units = out;
}

/// Folds `twin` into `kept`: what either reads or depends on, unresolved if
/// either is, excluded by neither (one twin's `exclude` must not hide the
/// other).
fn absorb(kept: &mut Unit, twin: Unit) {
    kept.dependencies.extend(twin.dependencies);
    kept.dependencies.sort();
    kept.dependencies.dedup();
    kept.reads.files.extend(twin.reads.files);
    kept.reads.dirs.extend(twin.reads.dirs);
    kept.reads.globs.extend(twin.reads.globs);
    kept.unresolved |= twin.unresolved;
    kept.excluded = None;
    kept.stack = kept.stack.take().or(twin.stack);
}

/// How a unit came to be, for the problem naming it.
fn route(kind: UnitKind) -> &'static str {
    match kind {
        UnitKind::Terragrunt => "a Terragrunt unit",
        UnitKind::Stack => "a Terragrunt stack",
        UnitKind::Module => "a module of .cascade.yaml",
    }
}

/// What the refused unit's failed line says.
fn reason(path: &UnitPath, kinds: &[UnitKind]) -> String {
    let routes: Vec<&str> = kinds.iter().map(|k| route(*k)).collect();
    let fix = if kinds.contains(&UnitKind::Module) {
        "remove the module from .cascade.yaml or the unit's configuration from its directory"
    } else {
        "rename one of the directories"
    };
    format!(
        "cascade runs nothing for `{path}`: {} share this path, and cascade cannot tell which one a change is for; {fix}",
        routes.join(" and ")
    )
}
