//! From the affected set to the units a plan walks: each with its wave, its
//! dependencies inside the plan, the tool that runs it and where.

use crate::affected::{Affected, Reason};
use crate::discovery::{Discovery, UnitKind};
use crate::graph::Graph;
use crate::unit::Tool;
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where a planned unit runs: its directory and the tree it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitDir {
    /// The tree its commands may read (see [`PlanTarget::root`]).
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl UnitDir {
    /// `unit` of the tree `root`, found under `top` (the directory discovery
    /// ran in: `root` or a directory inside it).
    pub fn of(root: &Path, top: &Path, unit: &UnitPath) -> UnitDir {
        UnitDir {
            root: root.to_path_buf(),
            dir: unit_dir(top, unit),
        }
    }
}

/// One unit to plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanTarget {
    pub path: UnitPath,
    pub wave: usize,
    pub deps: Vec<UnitPath>,
    /// A unit the change deletes: planned as a destroy, from the base revision.
    pub destroy: bool,
    pub tool: Tool,
    /// Where the tool runs (absolute), inside `root`.
    pub dir: PathBuf,
    /// The tree the unit belongs to (absolute): the checkout (or a base
    /// revision's tree, for a destroy). The unit's commands may read it all.
    pub root: PathBuf,
    /// The local module directories the unit uses (absolute), from its read
    /// set: checked for providers committed with the change before it runs.
    pub sources: Vec<PathBuf>,
    pub init_args: Vec<String>,
    /// For a unit a Terragrunt stack generates: the stack's directory
    /// (absolute), where `terragrunt stack generate` runs before it is planned.
    pub stack: Option<PathBuf>,
    /// Why cascade runs nothing for this unit, when discovery refused it
    /// (`discovery::Unit::refused`) or Terragrunt would (`Discovery::failures`:
    /// `file:line: message`): it is recorded failed with this reason.
    pub refused: Option<String>,
}

impl PlanTarget {
    /// Why cascade runs nothing for this unit, if it refuses to: discovery's
    /// reason, or a part of its path that names no directory of its own (a
    /// `..` would lead the tool into another directory than the one
    /// reviewed: another unit's, or another pull request's checkout). Checked
    /// by the engine before every plan and apply, whatever discovery or the
    /// store said; where the directory really leads (links included) is
    /// checked again, resolved, by the executor as each command starts
    /// (`exec::preflight`).
    pub fn refusal(&self) -> Option<String> {
        if let Some(why) = &self.refused {
            return Some(why.clone());
        }
        let odd = self.path.odd_part()?;
        Some(format!(
            "cascade runs nothing for `{}`: its path has {odd}, so it does not name one directory of the repository; rename the directory so that no part of its path is `.` or `..` (between `/` or backslashes)",
            self.path
        ))
    }
}

/// The units to plan for `affected`: changed units in head-graph waves, then
/// deleted units as destroys, each after everything that depended on it.
/// `head_dir` / `base_dir` are the discovery directories of the two trees.
/// Stacks themselves are left out; the units they generate are planned, each
/// naming the stack to generate first.
///
/// An unresolved unit's edges are unknown, so it runs after every other
/// planned unit that is not one of its known dependents, never beside one
/// (the rule, for several of them too: [`super::order::unresolved_last`]).
/// Destroys keep their own rule and also wait for the unresolved units: one
/// may have depended on a deleted unit at the base without cascade knowing.
pub fn targets(
    head: &Discovery,
    head_graph: &Graph,
    head_dir: &Path,
    affected: &Affected,
    base: Option<(&Discovery, &Graph, &Path)>,
) -> Vec<PlanTarget> {
    let planned: BTreeSet<UnitPath> = affected
        .units
        .iter()
        .filter(|u| u.reason != Reason::Deleted)
        .filter(|u| {
            head.unit(&u.path)
                .is_some_and(|d| d.kind != UnitKind::Stack)
        })
        .map(|u| u.path.clone())
        .collect();
    let mut out = head_targets(head, head_graph, head_dir, &planned);
    // A unit that fails runs nothing, so it has no order to keep among the others.
    let failures = head.failures();
    let unresolved =
        |p: &UnitPath| head.unit(p).is_some_and(|u| u.unresolved) && !failures.contains_key(p);
    let last_unresolved = super::order::unresolved_last(&mut out, unresolved, head_graph);
    let deleted: BTreeSet<UnitPath> = affected
        .units
        .iter()
        .filter(|u| u.reason == Reason::Deleted)
        .map(|u| u.path.clone())
        .collect();
    let Some((base_disc, base_graph, base_dir)) = base else {
        return out;
    };
    let first_destroy_wave = out.iter().map(|t| t.wave).max().unwrap_or(0) + 1;
    for (i, wave) in base_graph.waves_down_of(&deleted).iter().enumerate() {
        for path in wave {
            let Some(unit) = base_disc.unit(path) else {
                continue;
            };
            // A deleted unit waits for everything in this plan that depended on it at the
            // base, and for the last unresolved unit (so for every one of them).
            let mut deps: Vec<UnitPath> = base_graph
                .dependents(path)
                .into_iter()
                .filter(|d| deleted.contains(*d) || planned.contains(*d))
                .cloned()
                .collect();
            if let Some(last) = last_unresolved.as_ref().filter(|l| !deps.contains(*l)) {
                deps.push(last.clone());
                deps.sort();
            }
            let state = unit_dir(head_dir, path).join("terraform.tfstate");
            // Local state left next to a deleted unit is the state to destroy,
            // when it is inside the head's tree (not through a link the change made).
            let inside = |p: &Path| {
                std::fs::canonicalize(p).is_ok_and(|real| {
                    std::fs::canonicalize(head_dir).is_ok_and(|top| real.starts_with(top))
                })
            };
            let init_args = if state.is_file() && inside(&state) {
                vec![format!("-backend-config=path={}", state.display())]
            } else {
                Vec::new()
            };
            out.push(PlanTarget {
                path: path.clone(),
                wave: first_destroy_wave + i,
                deps,
                destroy: true,
                tool: tool_for(unit.kind, unit.executor),
                dir: unit_dir(base_dir, path),
                root: base_dir.to_path_buf(),
                sources: sources(unit, base_dir),
                init_args,
                stack: unit.stack.as_ref().map(|s| unit_dir(base_dir, s)),
                refused: unit.refused.clone(),
            });
        }
    }
    out
}

/// The units of `planned` (paths of `head`, stacks left out by the caller) in
/// head-graph waves, each with its dependencies inside `planned`: what a plan of
/// the head tree walks. `cascade drift` plans a whole tree this way. Unresolved
/// units keep the known waves here: a drift run is never applied, and plans
/// side by side cannot race (nothing they read changes while they plan);
/// [`targets`] orders them for a change, whose plan is applied in its order.
pub fn head_targets(
    head: &Discovery,
    head_graph: &Graph,
    head_dir: &Path,
    planned: &BTreeSet<UnitPath>,
) -> Vec<PlanTarget> {
    let mut out = Vec::new();
    let waves = head_graph.waves_of(planned);
    let failures = head.failures();
    for (i, wave) in waves.iter().enumerate() {
        for path in wave {
            let unit = head
                .unit(path)
                .expect("planned units come from the head graph");
            let failure = failures.get(path).map(|p| p.to_string());
            // A unit Terragrunt would refuse fails at once, with its own reason, whatever
            // its dependencies do; its dependents wait for it and are skipped.
            let deps = match failure {
                Some(_) => Vec::new(),
                None => head_graph
                    .dependencies(path)
                    .into_iter()
                    .filter(|d| planned.contains(*d))
                    .cloned()
                    .collect(),
            };
            out.push(at_head(unit, head_dir, i + 1, deps, false, failure));
        }
    }
    out
}

/// The target of `unit` run in the head's tree `head_dir`, in `wave` after `deps`;
/// `failure`: why discovery refuses it, if it does.
pub(super) fn at_head(
    unit: &crate::discovery::Unit,
    head_dir: &Path,
    wave: usize,
    deps: Vec<UnitPath>,
    destroy: bool,
    failure: Option<String>,
) -> PlanTarget {
    let path = &unit.path;
    PlanTarget {
        path: path.clone(),
        wave,
        deps,
        destroy,
        tool: tool_for(unit.kind, unit.executor),
        dir: unit_dir(head_dir, path),
        root: head_dir.to_path_buf(),
        sources: sources(unit, head_dir),
        init_args: Vec::new(),
        stack: unit.stack.as_ref().map(|s| unit_dir(head_dir, s)),
        refused: unit.refused.clone().or(failure),
    }
}

/// The unit's local module directories, absolute.
fn sources(unit: &crate::discovery::Unit, dir: &Path) -> Vec<PathBuf> {
    unit.reads.dirs.iter().map(|d| dir.join(d)).collect()
}

fn tool_for(kind: UnitKind, configured: Option<Tool>) -> Tool {
    configured.unwrap_or(match kind {
        UnitKind::Module => Tool::Terraform,
        _ => Tool::Terragrunt,
    })
}

/// The stack directory of a planned unit whose directory is `unit_dir`:
/// `stack` is relative to the same discovery directory as `unit`.
pub fn stack_dir(unit_dir: &Path, unit: &UnitPath, stack: &UnitPath) -> PathBuf {
    let depth = if unit.as_str() == "." {
        0
    } else {
        unit.as_str().split('/').count()
    };
    let top = unit_dir.ancestors().nth(depth).unwrap_or(unit_dir);
    self::unit_dir(top, stack)
}

/// The stack of `target`, relative to its discovery directory.
pub fn stack_path(target: &PlanTarget) -> Option<UnitPath> {
    let stack = target.stack.as_ref()?;
    let depth = if target.path.as_str() == "." {
        0
    } else {
        target.path.as_str().split('/').count()
    };
    let top = target.dir.ancestors().nth(depth)?;
    let rel = stack.strip_prefix(top).ok()?;
    Some(UnitPath::new(rel.to_string_lossy()))
}

/// Where a unit of the tree in `dir` is: `dir` itself for the root unit.
pub fn unit_dir(dir: &Path, unit: &UnitPath) -> PathBuf {
    if unit.as_str() == "." {
        dir.to_path_buf()
    } else {
        dir.join(unit.as_str())
    }
}
