//! `cascade drift`: plans every unit of the checked-out tree (or those the
//! `--units` globs pick) with the plan engine, in dependency order, and reports
//! the units whose plan is not empty.
//!
//! Never applies, and never leaves a plan a later `cascade apply` could pick up:
//! the run gets its own store and run directory in a private temporary directory
//! under the data directory, deleted when the run ends (saved plan files
//! included); only the per-unit logs are kept, in `<data-dir>/drift/logs/`. A
//! fresh store each time also means a drift run never resumes an earlier one,
//! whose results may be stale.

use super::progress::{PLAN, progress};
use super::repo::{locate, scan_to_run};
use super::run_cmd::{cancel_on_ctrl_c, data_dir, engine, refuse_cycles};
use super::{DriftArgs, RunFormat};
use crate::drift::{DriftReport, units_to_check};
use crate::engine::head_targets;
use crate::store::PlanKey;
use crate::unit::UnitPath;
use anyhow::{Context, bail};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::Path;
use std::process::ExitCode;

/// Exit status when some unit drifted (as terraform's `-detailed-exitcode`).
const DRIFTED: u8 = 2;
/// Exit status when a unit failed, or cascade could not run; wins over drift.
const FAILED: u8 = 1;

/// The exit status for a report: failures win over drift.
fn exit_code(report: &DriftReport) -> ExitCode {
    if !report.failed.is_empty() {
        ExitCode::from(FAILED)
    } else if !report.drifted.is_empty() {
        ExitCode::from(DRIFTED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The `--units` globs: `*` stays within a directory, `**` crosses them, as in
/// `.cascade.yaml`'s `ignore`.
fn unit_globs(patterns: &[String]) -> anyhow::Result<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern.trim_end_matches('/'))
            .literal_separator(true)
            .build()
            .with_context(|| format!("--units {pattern} is not a valid glob; use `*`, `**`, `?`, `[abc]` or `{{a,b}}`"))?;
        set.add(glob);
    }
    Ok(set.build()?)
}

/// True when `set` matches the unit's path or a directory above it (`dev` picks
/// `dev/app`).
fn picked(set: &GlobSet, unit: &UnitPath) -> bool {
    let path = unit.as_str();
    set.is_match(path)
        || path
            .match_indices('/')
            .any(|(end, _)| set.is_match(&path[..end]))
}

pub fn run(args: &DriftArgs) -> anyhow::Result<ExitCode> {
    // Exit status 2 means drift here, so cascade's own errors exit 1.
    let result = crate::private_dir::protect_process().and_then(|()| {
        let runtime = tokio::runtime::Runtime::new()?;
        runtime.block_on(run_async(args))
    });
    match result {
        Ok(code) => Ok(code),
        Err(err) => {
            eprintln!("cascade: {err:#}");
            Ok(ExitCode::from(FAILED))
        }
    }
}

async fn run_async(args: &DriftArgs) -> anyhow::Result<ExitCode> {
    let globs = unit_globs(&args.units)?;
    let at = locate(args.repo.as_deref())?;
    let (dir, root) = (at.dir.clone(), at.root.clone());
    let data = data_dir(&dir, &args.run.data_dir);
    // Outside git the plan is bound to nothing; it is never applied anyway.
    let head = crate::git::worktree_identity(&dir).unwrap_or_else(|_| "0".repeat(40));
    let mut sources = crate::terragrunt::remote_source::Sources::new();
    let scan = scan_to_run(&dir, &root, "cascade drift", &mut sources).await?;
    refuse_cycles(&scan, "checking for drift")?;
    super::no_units::require_units(&scan, &at)?;
    let picked = units_to_check(&scan, |u| args.units.is_empty() || picked(&globs, u));
    if picked.is_empty() {
        bail!(
            "no unit to check: {}; run `cascade graph` to see the units",
            if args.units.is_empty() {
                "every unit discovery found is excluded (an `exclude` block) or a stack"
            } else {
                "no unit matches --units"
            }
        );
    }
    let mut plan_targets = head_targets(&scan.discovery, &scan.graph, &dir, &picked);
    // Terraform may read the whole repository, not only what `--repo` names.
    for t in &mut plan_targets {
        t.root = root.clone();
    }
    let drift_dir = data.join("drift");
    // Once the input is checked: a refused run leaves nothing behind.
    crate::private_dir::make_private(&data)?;
    std::fs::create_dir_all(&drift_dir)
        .with_context(|| format!("cannot create {}", drift_dir.display()))?;
    // Private (0700) and deleted on drop: the store, saved plans and raw output of this run.
    let scratch = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&drift_dir)
        .with_context(|| format!("cannot create a directory in {}", drift_dir.display()))?;
    let engine = engine(&data, scratch.path(), &args.run).await?;
    let outcome = engine
        .plan(
            &PlanKey::directory(&dir),
            &head,
            &head,
            plan_targets.clone(),
            &scan.config,
            cancel_on_ctrl_c(),
            progress(plan_targets.len(), PLAN),
        )
        .await?;
    let logs = keep_logs(&outcome.run_dir, &drift_dir.join("logs"));
    drop(engine);
    let report = DriftReport::of_plan(&outcome.plan);
    let out = match args.run.format {
        RunFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        RunFormat::Markdown => report.markdown(),
    };
    print!("{out}");
    match logs {
        Ok(dir) => eprintln!("logs: {}", dir.display()),
        Err(err) => eprintln!("cascade: the logs were not kept ({err:#})"),
    }
    let scratch_path = scratch.path().to_path_buf();
    if let Err(err) = scratch.close() {
        // It holds saved plans (values in clear); the report stands, the run did not end cleanly.
        bail!(
            "cannot delete this run's private directory {} ({err}); delete it by hand",
            scratch_path.display()
        );
    }
    Ok(exit_code(&report))
}

/// Moves the run's per-unit logs to `to`, replacing the previous drift run's.
fn keep_logs(run_dir: &Path, to: &Path) -> anyhow::Result<std::path::PathBuf> {
    match std::fs::remove_dir_all(to) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot clear {}", to.display())),
    }
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in std::fs::read_dir(run_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "log") {
            let name = path.file_name().unwrap_or_default();
            std::fs::rename(&path, to.join(name))
                .with_context(|| format!("cannot move a log into {}", to.display()))?;
        }
    }
    Ok(to.to_path_buf())
}
