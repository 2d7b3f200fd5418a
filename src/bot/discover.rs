//! Discovering a pull request: its configuration (from the base branch), the
//! head's graph (and the base's, when units were deleted), the changed files,
//! the affected units and what to plan.
//!
//! This is the work whose cost a pull request's files decide, so it never
//! runs on the async runtime, where it would stall webhook acknowledgements
//! and probes. It runs on a blocking thread, at most [`DiscoverySlots`] at a
//! time over every pull request, within a deadline; past the deadline the
//! caller is told and goes on (the pull request gets a user error). A panic in
//! it fails the job, never the worker. Never posts anything or touches the
//! store.

use super::ctx::PrCtx;
use super::refusal::Refusal;
use crate::catalog::Catalog;
use crate::command::UnitGlob;
use crate::config::RepoConfig;
use crate::engine::PlanTarget;
use crate::problem::{Problem, ProblemKind};
use crate::scan::{BaseScan, Scan, affected_by, plan_targets};
use crate::terragrunt::remote_source::Sources;
use crate::unit::UnitPath;
use crate::workspace::Workspaces;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Why bounded work gave no result.
#[derive(Debug, thiserror::Error)]
pub enum Interrupted {
    /// Past the deadline: a user error (the configuration is too costly to evaluate).
    #[error("discovery took longer than {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    /// A newer push made the result pointless.
    #[error("superseded by a newer push")]
    Superseded,
    /// The work panicked (an internal error: the details are in the log).
    #[error("discovery failed: {0}")]
    Panicked(String),
}

/// The blocking threads discovery may use at once, over every pull request,
/// and the time one discovery may take once it has a thread.
pub struct DiscoverySlots {
    slots: Arc<Semaphore>,
    size: usize,
    timeout: Duration,
}

/// Marks a slot busy for as long as it lives (so a panic frees it too).
struct Busy(#[allow(dead_code)] tokio::sync::OwnedSemaphorePermit);

impl Drop for Busy {
    fn drop(&mut self) {
        metrics::gauge!("cascade_discoveries_running").decrement(1.0);
    }
}

impl DiscoverySlots {
    /// One slot per core: discovery is CPU-bound, more would only queue for
    /// the same cores and hold more memory.
    pub fn new(timeout: Duration) -> DiscoverySlots {
        let size = std::thread::available_parallelism().map_or(2, |n| n.get());
        DiscoverySlots {
            slots: Arc::new(Semaphore::new(size)),
            size,
            timeout,
        }
    }

    /// Discoveries running now, including any still evaluating past their
    /// deadline after the pull request was told it timed out.
    pub fn running(&self) -> usize {
        self.size - self.slots.available_permits()
    }

    /// Runs `work` on a blocking thread once a slot is free, and waits for it
    /// until its deadline (the timeout from when the slot was taken: waiting
    /// for other pull requests is not this one's fault), or until `cancel`
    /// fires. `work` gets the deadline, to stop by itself. Work that overruns
    /// keeps its slot until it really ends, so runaway evaluations cannot pile
    /// up threads; the caller stops waiting for it at the deadline.
    pub async fn run<T: Send + 'static>(
        &self,
        cancel: &CancellationToken,
        work: impl FnOnce(Instant) -> T + Send + 'static,
    ) -> Result<T, Interrupted> {
        let slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot,
            _ = cancel.cancelled() => return Err(Interrupted::Superseded),
        };
        let Ok(slot) = slot else {
            return Err(Interrupted::Panicked(
                "the discovery slots were closed".into(),
            ));
        };
        metrics::gauge!("cascade_discoveries_running").increment(1.0);
        let busy = Busy(slot);
        let deadline = Instant::now() + self.timeout;
        let task = tokio::task::spawn_blocking(move || {
            let _busy = busy;
            work(deadline)
        });
        tokio::select! {
            done = tokio::time::timeout_at(deadline.into(), task) => match done {
                // A result that arrives late may be cut short (`discover` stops
                // at the deadline): it is never used.
                Ok(Ok(result)) if Instant::now() < deadline => Ok(result),
                Ok(Err(e)) => Err(Interrupted::Panicked(e.to_string())),
                _ => Err(Interrupted::TimedOut(self.timeout)),
            },
            _ = cancel.cancelled() => Err(Interrupted::Superseded),
        }
    }
}

/// Discovers one checkout, stopping at `deadline`, with the remote sources its stacks
/// name fetched through `catalog` (recorded in `sources`, one map per plan). The one
/// place discovery is called from the server: the evaluation itself stops at the
/// deadline (its step budget checks the clock), and the caller stops waiting for it too
/// ([`DiscoverySlots::run`]); fetches count against the same deadline. Runs on a
/// blocking thread, which may wait on the runtime for the fetches.
/// Discovers a whole checkout the server made (a drift run's, a merge group's) within the
/// discovery deadline, its stacks' remote sources fetched with `forge`'s credential; `what`
/// names it in the error.
pub async fn scan_tree(
    bot: &super::Bot,
    forge: &crate::forge::Forge,
    checkout: &Path,
    config: &RepoConfig,
    cancel: &CancellationToken,
    what: &str,
) -> anyhow::Result<Scan> {
    let (dir, scan_config) = (checkout.to_path_buf(), config.clone());
    let catalog = bot.catalog(forge.git_credential().await?);
    bot.discovery
        .run(cancel, move |deadline| {
            let mut sources = Default::default();
            scan_checkout(&catalog, &dir, scan_config, deadline, &mut sources)
        })
        .await
        .map_err(|e| anyhow::anyhow!("discovering {what}: {e}"))
}

pub fn scan_checkout(
    catalog: &Catalog,
    dir: &Path,
    config: RepoConfig,
    deadline: Instant,
    sources: &mut Sources,
) -> Scan {
    tokio::runtime::Handle::current().block_on(catalog.scan(
        dir,
        dir,
        config,
        &[],
        Some(deadline),
        sources,
    ))
}

/// What discovery decided for a pull request's head.
pub enum Discovered {
    /// The graph has a cycle: nothing can be planned.
    Cycle(Problem),
    /// A `/plan unit…` or `/destroy unit…` that cannot be planned, and why.
    Refused(Refusal),
    Targets {
        targets: Vec<PlanTarget>,
        /// Units cascade could not read fully, with the first reason each.
        unresolved: Vec<(UnitPath, String)>,
        /// The merge base the head was compared with.
        merge_base: String,
        /// The remote sources the targets came from, with their commits.
        sources: Vec<crate::comment::SourceView>,
        /// The files the pull request changes since the merge base, repo-relative.
        changed_files: Vec<String>,
    },
}

/// Everything discovery of one pull request needs, owned, so it can move to a
/// blocking thread.
pub struct DiscoveryInput {
    pub workspaces: Workspaces,
    pub repo: String,
    pub checkout: PathBuf,
    pub config: RepoConfig,
    pub base_sha: String,
    pub head_sha: String,
    /// `/plan unit…`: only the units these globs match, and their dependents.
    pub only: Option<Vec<UnitGlob>>,
    /// `/destroy unit…`: a destroy of the units these globs match at the head instead
    /// (`super::destroy`).
    pub destroy: Option<super::destroy::DestroyAsk>,
    /// Where the stacks' remote sources are fetched from.
    pub catalog: Arc<Catalog>,
}

/// The input for `pr`, checked out at `checkout`.
pub fn input(
    ctx: &PrCtx,
    checkout: PathBuf,
    config: RepoConfig,
    only: Option<&[UnitGlob]>,
    catalog: Arc<Catalog>,
) -> DiscoveryInput {
    let (key, pr) = (&ctx.key, &ctx.pr);
    DiscoveryInput {
        workspaces: ctx.bot.workspaces.clone(),
        repo: key.repo().stored(),
        checkout,
        config,
        base_sha: pr.base_sha_text().to_string(),
        head_sha: pr.head_sha.to_string(),
        only: only.map(<[UnitGlob]>::to_vec),
        destroy: None,
        catalog,
    }
}

/// Discovery proper: blocking, CPU-bound, and as costly as the pull request
/// makes it. Stops early once the deadline has passed (the caller has stopped
/// waiting by then, and discards a late result).
pub fn discover(input: DiscoveryInput, deadline: Instant) -> anyhow::Result<Discovered> {
    let late = || Instant::now() >= deadline;
    // One map for the head and the base: a branch ref is one commit in this plan.
    let mut sources = Sources::new();
    let catalog = &input.catalog;
    let head = scan_checkout(
        catalog,
        &input.checkout,
        input.config.clone(),
        deadline,
        &mut sources,
    );
    if let Some(cycle) = head.problems.iter().find(|p| p.kind == ProblemKind::Cycle) {
        return Ok(Discovered::Cycle(cycle.clone()));
    }
    if let Some(ask) = &input.destroy {
        return Ok(super::destroy::discovered(
            &head,
            &input.checkout,
            ask,
            &input.head_sha,
        ));
    }
    let changes = input
        .workspaces
        .changes(&input.repo, &input.base_sha, &input.head_sha)?;
    let base = if changes.deletes_a_unit() && !late() {
        let tree = input.workspaces.tree(&input.repo, &changes.base)?;
        let scan = scan_checkout(catalog, &tree, input.config.clone(), deadline, &mut sources);
        Some((scan, tree))
    } else {
        None
    };
    if late() {
        // `DiscoverySlots::run` throws away whatever arrives past the deadline.
        anyhow::bail!("discovery stopped at its deadline");
    }
    let changed_files = changes.paths();
    let base_scan = base.as_ref().map(|(scan, tree)| (scan, tree.as_path()));
    let only = match input.only.as_deref().filter(|globs| !globs.is_empty()) {
        None => None,
        Some(globs) => match named_units(&head, &changed_files, base_scan, globs) {
            Ok(units) => Some(units),
            Err(globs) => return Ok(Discovered::Refused(Refusal::PlanNoUnitMatched { globs })),
        },
    };
    let targets = plan_targets(
        &head,
        &input.checkout,
        &changed_files,
        base_scan,
        only.as_deref(),
    );
    let sources = crate::comment::sources_of(&head.discovery, targets.iter().map(|t| &t.path));
    Ok(Discovered::Targets {
        sources,
        targets,
        unresolved: head.unresolved(),
        merge_base: changes.base,
        changed_files,
    })
}

/// The units `/plan glob…` names: every unit of the head, or unit the change deletes,
/// that a glob matches (an exact path matches itself), as `scan::plan_targets` takes them;
/// or the globs that name nothing it would plan (no unit they match, nor a dependent of
/// one, is affected by the change).
fn named_units(
    head: &Scan,
    changed: &[String],
    base: Option<BaseScan<'_>>,
    globs: &[UnitGlob],
) -> Result<Vec<UnitPath>, Vec<String>> {
    let affected = affected_by(head, changed, base.map(|(scan, _)| scan));
    let planned: BTreeSet<&UnitPath> = affected.units.iter().map(|u| &u.path).collect();
    let candidates: BTreeSet<&UnitPath> = head
        .discovery
        .units
        .iter()
        .map(|u| &u.path)
        .chain(planned.iter().copied())
        .collect();
    let mut named: BTreeSet<UnitPath> = BTreeSet::new();
    let mut unmatched = Vec::new();
    for glob in globs {
        let matched: Vec<&UnitPath> = candidates
            .iter()
            .copied()
            .filter(|u| glob.matches(u))
            .collect();
        let plans_one = matched.iter().any(|u| planned.contains(u))
            || head
                .graph
                .dependents_closure(matched.iter().copied())
                .keys()
                .any(|u| planned.contains(u));
        if plans_one {
            named.extend(matched.into_iter().cloned());
        } else {
            unmatched.push(glob.to_string());
        }
    }
    if unmatched.is_empty() {
        Ok(named.into_iter().collect())
    } else {
        Err(unmatched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(timeout_ms: u64) -> DiscoverySlots {
        DiscoverySlots::new(Duration::from_millis(timeout_ms))
    }

    #[tokio::test]
    async fn work_within_the_deadline_returns_its_result() {
        let s = slots(5_000);
        let got = s.run(&CancellationToken::new(), |_| 42).await;
        assert_eq!(got.unwrap(), 42);
        assert_eq!(s.running(), 0);
    }

    #[tokio::test]
    async fn a_panic_is_an_interruption_and_frees_the_slot() {
        let s = slots(5_000);
        let got = s
            .run(&CancellationToken::new(), |_| -> u32 {
                panic!("evaluator bug")
            })
            .await;
        assert!(matches!(got, Err(Interrupted::Panicked(m)) if m.contains("panicked")));
        assert_eq!(s.running(), 0);
    }

    #[tokio::test]
    async fn overrunning_work_times_out_and_keeps_its_slot_until_it_ends() {
        let s = slots(100);
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let got = s
            .run(&CancellationToken::new(), move |_| wait.recv().is_ok())
            .await;
        assert!(
            matches!(got, Err(Interrupted::TimedOut(limit)) if limit == Duration::from_millis(100))
        );
        assert_eq!(s.running(), 1, "the runaway work still holds its slot");
        release.send(()).unwrap();
        for _ in 0..100 {
            if s.running() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the slot was not given back when the work ended");
    }

    #[tokio::test]
    async fn work_gets_its_deadline_and_a_newer_push_stops_the_wait() {
        let s = slots(60_000);
        let before = Instant::now();
        let deadline = s.run(&CancellationToken::new(), |d| d).await.unwrap();
        assert!(deadline > before + Duration::from_secs(59));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let got = s
            .run(&cancel, |_| std::thread::sleep(Duration::from_millis(50)))
            .await;
        assert!(matches!(got, Err(Interrupted::Superseded)));
    }
}
