//! `cascade plan` and `cascade apply`: the plan engine on a local repository,
//! with a SQLite store in the data directory (default `<repo>/.cascade`).
//! `--repo` and `--data-dir` are absolute by the time they get here (see
//! `Command::make_paths_absolute`).

use super::progress::{APPLY, PLAN, progress};
use super::repo::{changed_paths, locate, scan_async, scan_to_run};
use super::{ApplyArgs, PlanArgs, RunFormat, RunOptions};
use crate::clock::SystemClock;
use crate::engine::{Engine, UnitDir};
use crate::exec::ProcessExecutor;
use crate::exec::sandbox::{SandboxMode, SandboxState, SandboxUser};
use crate::plan::PlanId;
use crate::scan::plan_targets;
use crate::store::{AnyStore, PlanKey, PlannedUnit, RunStore};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where runs, plans and base trees are kept.
pub(super) fn data_dir(dir: &Path, flag: &Option<PathBuf>) -> PathBuf {
    flag.clone().unwrap_or_else(|| dir.join(".cascade"))
}

/// The engine over the store and runs in `runs` (the data directory `data`,
/// or a directory inside it), its executor keeping its provider caches and
/// records in `data`, in the sandbox the options ask for (`data` private).
pub(super) async fn engine(
    data: &Path,
    runs: &Path,
    options: &RunOptions,
) -> anyhow::Result<Engine<ProcessExecutor, AnyStore>> {
    let store = crate::store::open(None, runs).await?;
    let sandbox = options
        .sandbox
        .config()
        .build(SandboxUser::Cli)?
        .with_data_dir(data);
    if let SandboxState::Unconfined { why } = sandbox.state()
        && options.sandbox.mode != SandboxMode::Off
    {
        eprintln!(
            "cascade: warning: no sandbox ({why}): terraform runs with your own access to every file;              pass --sandbox off to say that is intended"
        );
    }
    let executor = ProcessExecutor::new(data.join("exec"))
        .with_environment(std::env::vars_os(), &options.pass.names)
        .with_unit_env(options.unit_env.load()?)
        .with_sandbox(sandbox)
        .with_plan_limits(options.plan_limits.limits()?);
    // Policies are evaluated in children of this binary, each under a memory ceiling.
    let executor = match std::env::current_exe() {
        Ok(exe) => executor.with_policy_worker(crate::exec::policy_worker::PolicyWorker::new(exe)),
        Err(_) => executor,
    };
    Ok(Engine {
        executor: Arc::new(executor),
        store: Arc::new(store),
        clock: Arc::new(SystemClock),
        data_dir: runs.to_path_buf(),
        parallelism: options.parallelism.max(1),
        timeout: Duration::from_secs(options.timeout),
        init_timeout: Duration::from_secs(options.init_timeout),
        shutdown: CancellationToken::new(),
    })
}

/// The tree of revision `sha`, written once under the data directory: deleted
/// units are planned and destroyed from it.
fn base_tree(root: &Path, data: &Path, sha: &str) -> anyhow::Result<PathBuf> {
    let tree = data.join("trees").join(sha);
    if !tree.is_dir() {
        let partial = data.join("trees").join(format!("{sha}.partial"));
        let _ = std::fs::remove_dir_all(&partial);
        crate::git::materialize(root, sha, &partial)?;
        std::fs::rename(&partial, &tree)
            .with_context(|| format!("cannot move {} into place", partial.display()))?;
    }
    Ok(tree)
}

/// Refuses a graph with a cycle (printing the problems): no order to run it in.
pub(super) fn refuse_cycles(scan: &super::repo::Scan, doing: &str) -> anyhow::Result<()> {
    if scan
        .problems
        .iter()
        .any(|p| p.kind == crate::problem::ProblemKind::Cycle)
    {
        for p in &scan.problems {
            eprintln!("{p}");
        }
        bail!("the graph has a cycle; fix it before {doing}");
    }
    Ok(())
}

/// A token cancelled on Ctrl-C: running commands get SIGTERM, units not started are cancelled.
pub(super) fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    cancel
}

pub fn plan(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    crate::private_dir::protect_process()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(plan_async(args))
}

async fn plan_async(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let at = locate(args.repo.as_deref())?;
    let (dir, root) = (at.dir.clone(), at.root.clone());
    let prefix = at.prefix();
    let data = data_dir(&dir, &args.run.data_dir);
    let head = crate::git::worktree_identity(&dir)
        .context("cascade plan needs a git repository (it binds the plan to a commit): run `git init && git add -A && git commit`")?;
    let head_commit = head.split('+').next().unwrap_or_default().to_string();
    let (changed, base, deletes) = match &args.base {
        Some(base_rev) => {
            let head_rev = crate::git::resolve(&dir, &args.head)?;
            if head_rev != head_commit {
                bail!(
                    "--head {} is not checked out: cascade plans the working tree; check it out first",
                    args.head
                );
            }
            let changes = crate::git::changed_files(&dir, base_rev, &args.head)?;
            let deletes = changes.deletes_a_unit();
            (
                changes.paths_relative_to(&prefix),
                changes.base.clone(),
                deletes,
            )
        }
        None => (
            changed_paths(&at, &args.changed)?,
            head_commit.clone(),
            false,
        ),
    };
    // One map for the plan: the base revision's stacks get the commits the head's got.
    let mut sources = crate::terragrunt::remote_source::Sources::new();
    let head_scan = scan_to_run(&dir, &root, "cascade plan", &mut sources).await?;
    refuse_cycles(&head_scan, "planning")?;
    if !deletes {
        super::no_units::require_units(&head_scan, &at)?;
    }
    // Created (or made private again) once the input is checked: a refused plan
    // leaves nothing behind.
    crate::private_dir::make_private(&data)?;
    let base_tree = if deletes {
        Some(base_tree(&root, &data, &base)?)
    } else {
        None
    };
    let base_scan = match base_tree.as_ref() {
        Some(tree) => {
            let base_dir = tree.join(&prefix);
            Some((
                scan_async(&base_dir, tree, &[], &mut sources).await,
                base_dir,
            ))
        }
        None => None,
    };
    // A change that deletes every unit still has the base's to destroy.
    if base_scan
        .as_ref()
        .is_some_and(|(b, _)| b.discovery.units.is_empty())
    {
        super::no_units::require_units(&head_scan, &at)?;
    }
    let mut to_plan = plan_targets(
        &head_scan,
        &dir,
        &changed,
        base_scan.as_ref().map(|(b, d)| (b, d.as_path())),
        None,
    );
    // Terraform may read the whole repository (or base tree), not only the
    // directory `--repo` names: modules live above it.
    for t in &mut to_plan {
        t.root = match &base_tree {
            Some(tree) if t.destroy => tree.clone(),
            _ => root.clone(),
        };
    }
    let rules = crate::engine::RunRules::from(&head_scan.config)
        .with_policies(super::policies::checks(&dir, &head_scan.config)?);
    let engine = engine(&data, &data, &args.run).await?;
    let plan_key = PlanKey::directory(&dir);
    let observe = progress(to_plan.len(), PLAN);
    let outcome = engine
        .plan(
            &plan_key,
            &head,
            &base,
            to_plan,
            rules,
            cancel_on_ctrl_c(),
            observe,
        )
        .await?;
    let out = match args.run.format {
        RunFormat::Json => {
            serde_json::to_string_pretty(&super::render::plan_json(&outcome.plan))? + "\n"
        }
        RunFormat::Markdown => {
            let sources = crate::comment::sources_of(
                &head_scan.discovery,
                outcome.plan.units.iter().map(|u| &u.path),
            );
            super::render::plan_markdown(&outcome.plan, &head_scan.unresolved(), sources)?
        }
    };
    print!("{out}");
    eprintln!("logs: {}", outcome.run_dir.display());
    Ok(if outcome.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn apply(args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    crate::private_dir::protect_process()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(apply_async(args))
}

async fn apply_async(args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    let id = PlanId::parse(&args.id).map_err(anyhow::Error::msg)?;
    let at = locate(args.repo.as_deref())?;
    let (dir, root) = (at.dir.clone(), at.root.clone());
    let prefix = at.prefix();
    let data = data_dir(&dir, &args.run.data_dir);
    crate::private_dir::make_private(&data)?;
    let head = crate::git::worktree_identity(&dir)?;
    let engine = engine(&data, &data, &args.run).await?;
    let plan_key = PlanKey::directory(&dir);
    let plan = engine.store.plan(&plan_key, &id).await.ok().flatten();
    // Destroys run in the base revision's tree, as they were planned.
    let base_dir = match plan.as_ref().filter(|p| p.units.iter().any(|u| u.destroy)) {
        Some(p) => {
            let tree = base_tree(&root, &data, &p.base)?;
            Some((tree.clone(), tree.join(&prefix)))
        }
        None => None,
    };
    let dir_for = |u: &PlannedUnit| match &base_dir {
        Some((tree, top)) if u.destroy => UnitDir::of(tree, top, &u.path),
        _ => UnitDir::of(&root, &dir, &u.path),
    };
    let total = plan.as_ref().map(|p| p.units.len()).unwrap_or(0);
    // Transient apply failures are retried as the repository says; with a
    // `.cascade.yaml` it cannot read, as by default (the apply itself was approved).
    // Its workflows too: the apply runs their apply-phase steps.
    let rules = crate::config::RepoConfig::load(&dir).unwrap_or_default();
    let outcome = match engine
        .apply(
            &plan_key,
            &id,
            &head,
            &dir_for,
            &rules,
            progress(total, APPLY),
        )
        .await?
    {
        Ok(outcome) => outcome,
        Err(refusal) => {
            eprintln!("cascade: {refusal}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let out = match args.run.format {
        RunFormat::Json => {
            serde_json::to_string_pretty(&super::render::apply_json(&outcome))? + "\n"
        }
        RunFormat::Markdown => super::render::apply_markdown(&outcome, &[])?,
    };
    print!("{out}");
    eprintln!("logs: {}", outcome.run_dir.display());
    Ok(if outcome.complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
