//! `cascade affected`: which units a change re-plans, and why.

use super::graph_cmd::{count, shown};
use super::repo::{changed_paths, locate, scan};
use super::{AffectedArgs, TextOrJson};
use crate::affected::Affected;
use crate::inert::visible_line;
use crate::problem::Problem;
use crate::scan::affected_by;
use crate::terragrunt::remote_source::Sources;
use crate::unit::UnitPath;
use anyhow::Context;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

#[derive(Serialize)]
struct AffectedJson<'a> {
    changed: &'a [String],
    units: Vec<UnitReason>,
    waves: &'a [Vec<UnitPath>],
    destroy_waves: &'a [Vec<UnitPath>],
    errors: &'a [Problem],
}

#[derive(Serialize)]
struct UnitReason {
    path: UnitPath,
    reason: String,
}

pub fn run(args: &AffectedArgs) -> anyhow::Result<ExitCode> {
    let at = locate(args.repo.as_deref())?;
    let (dir, root) = (&at.dir, &at.root);
    let prefix = at.prefix();
    let (changed, head_dir, base_rev) = match &args.base {
        None => (changed_paths(&at, &args.changed)?, None, None),
        Some(base) => {
            let changes = crate::git::changed_files(dir, base, &args.head)?;
            let head_sha = crate::git::resolve(dir, &args.head)?;
            let worktree_head = crate::git::resolve(dir, "HEAD").ok();
            // Discover the head revision itself unless it is what is checked out.
            let head_dir = if worktree_head.as_deref() == Some(head_sha.as_str()) {
                None
            } else {
                Some(head_sha)
            };
            let base_rev = changes.deletes_a_unit().then(|| changes.base.clone());
            (changes.paths_relative_to(&prefix), head_dir, base_rev)
        }
    };
    // One map for both revisions: a ref resolves to one commit for the command.
    let mut sources = Sources::new();
    let head = match &head_dir {
        None => scan(dir, root, &args.features, &mut sources)?,
        Some(rev) => scan_revision(root, &prefix, rev, &args.features, &mut sources)?,
    };
    let base = match &base_rev {
        Some(rev) => Some(scan_revision(
            root,
            &prefix,
            rev,
            &args.features,
            &mut sources,
        )?),
        None => None,
    };
    // A change that deletes every unit still has the base's to destroy.
    if base.as_ref().is_none_or(|b| b.discovery.units.is_empty()) {
        super::no_units::require_units(&head, &at)?;
    }
    let result = affected_by(&head, &changed, base.as_ref());
    let out = match args.format {
        TextOrJson::Json => {
            serde_json::to_string_pretty(&affected_json(&result, &head.problems))? + "\n"
        }
        TextOrJson::Text => affected_text(&result, &head.problems),
    };
    print!("{out}");
    Ok(if head.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Discovers the tree of another revision, written to a temporary directory.
fn scan_revision(
    root: &Path,
    prefix: &str,
    rev: &str,
    features: &[(String, String)],
    sources: &mut Sources,
) -> anyhow::Result<super::repo::Scan> {
    let tmp = tempfile::tempdir().context("cannot create a temporary directory")?;
    crate::git::materialize(root, rev, tmp.path())?;
    let dir = tmp.path().join(prefix);
    let dir = if dir.is_dir() {
        dir
    } else {
        tmp.path().to_path_buf()
    };
    super::repo::scan(&dir, tmp.path(), features, sources)
}

/// A `--changed` path made relative to the discovery directory.
fn affected_json<'a>(result: &'a Affected, problems: &'a [Problem]) -> AffectedJson<'a> {
    AffectedJson {
        changed: &result.changed,
        units: result
            .units
            .iter()
            .map(|u| UnitReason {
                path: u.path.clone(),
                reason: u.reason.to_string(),
            })
            .collect(),
        waves: &result.waves,
        destroy_waves: &result.destroy_waves,
        errors: problems,
    }
}

fn affected_text(result: &Affected, problems: &[Problem]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} changed file{} affect {} unit{}",
        result.changed.len(),
        if result.changed.len() == 1 { "" } else { "s" },
        result.units.len(),
        if result.units.len() == 1 { "" } else { "s" }
    );
    for (i, wave) in result.waves.iter().enumerate() {
        let _ = writeln!(out, "\nwave {} ({})", i + 1, count(wave.len(), "unit"));
        for unit in wave {
            let reason = result
                .reason(unit)
                .map(|r| r.to_string())
                .unwrap_or_default();
            let _ = writeln!(out, "  {}  ({})", shown(unit), visible_line(&reason));
        }
    }
    if !result.destroy_waves.is_empty() {
        let _ = writeln!(out, "\ndestroyed (deleted by the change), in order:");
        for wave in &result.destroy_waves {
            for unit in wave {
                let _ = writeln!(out, "  {}", shown(unit));
            }
        }
    }
    super::graph_cmd::write_problems(&mut out, problems);
    out
}
