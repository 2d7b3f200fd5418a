//! A plan run: every target planned in dependency order, each result
//! persisted as it lands, the whole bound to a plan id.

use super::steps::{HookEnd, Recording, RunRules};
use super::{Engine, PlanTarget};
use crate::config::workflows::Hook;
use crate::exec::{Executor, Phase, PlanJson, UnitJob};
use crate::plan::render::{RenderOptions, RenderedPlan};
use crate::plan::{PlanDocument, PlanId, PlanSummary};
use crate::store::{
    PlanKey, PlanRecord, PlanStatus, PlannedUnit, RunKind, RunStore, UnitRecord, UnitStatus,
};
use crate::unit::UnitPath;
use crate::walk::{Outcome, UnitState, Walk, WalkEvent, WalkUnit};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The result of a plan run.
#[derive(Debug)]
pub struct PlanOutcome {
    pub plan: PlanRecord,
    /// Where the run's plan files and logs are.
    pub run_dir: PathBuf,
    /// True when some unit failed to plan (or was skipped because of one).
    pub failed: bool,
    /// The end of each failed unit's log (at most [`super::MAX_LOG_TAILS`]), redacted and
    /// without the server's paths: what the check run shows.
    pub failure_logs: Vec<super::LogTail>,
}

/// One unit's plan as cascade keeps it: what it does, and how the comment shows it.
/// Made from the `show -json` bytes, which are dropped once both are made.
#[derive(Clone, Debug)]
pub(super) struct UnitPlan {
    pub summary: PlanSummary,
    /// `None` when the plan could not be drawn; the comment then lists its resources.
    pub rendered: Option<RenderedPlan>,
}

impl UnitPlan {
    /// Summarises and draws `json`, parsed once, redacted by `redactor`. The raw
    /// bytes go as soon as they are parsed; `json`'s share of the plan memory is
    /// given back when both passes are done.
    fn of_show_json(
        unit: &UnitPath,
        mut json: PlanJson,
        redactor: &crate::redact::Redactor,
    ) -> Result<UnitPlan, String> {
        let document = PlanDocument::parse(&json.take_bytes()).map_err(|e| e.to_string())?;
        let summary = PlanSummary::of(&document).map_err(|e| e.to_string())?;
        let rendered = match RenderedPlan::of(&document, &RenderOptions::default(), redactor) {
            Ok(rendered) => Some(rendered),
            Err(e) => {
                // Not reached: the renderer refuses only what the summary refuses.
                tracing::warn!(unit = %unit, error = %e, "cannot draw a unit's plan; the comment lists its resources");
                None
            }
        };
        drop(document);
        drop(json);
        Ok(UnitPlan { summary, rendered })
    }

    /// What `record` holds of a unit's plan, if it has one.
    pub fn of_record(record: &UnitRecord) -> Option<UnitPlan> {
        record.summary.clone().map(|summary| UnitPlan {
            summary,
            rendered: record.rendered.clone(),
        })
    }
}

/// What a worker needs, shared by every unit of a run.
pub(super) struct RunCtx<E, S> {
    pub executor: Arc<E>,
    pub store: Arc<S>,
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The plan key the run is for (`owner/name#7`, a repository, a directory).
    pub repo: PlanKey,
    /// A plan run's or an apply run's: which credentials its units get.
    pub phase: Phase,
    pub timeout: Duration,
    pub init_timeout: Duration,
    pub cancel: CancellationToken,
    pub shutdown: CancellationToken,
    pub targets: BTreeMap<UnitPath, PlanTarget>,
    /// Results of an earlier attempt of this run (resume).
    pub previous: BTreeMap<UnitPath, UnitRecord>,
    /// Stacks generated in this run: each once, before its first unit plans.
    pub generated: StacksGenerated,
    /// How transient plan failures are retried.
    pub retries: crate::config::RetryPolicy,
    /// How many times each unit's plan (or apply) was tried again, counting
    /// the tries of an earlier process that this run resumes.
    pub retried: std::sync::Mutex<BTreeMap<UnitPath, u32>>,
    /// When each unit waiting to be tried again is due (seconds since the epoch).
    pub retry_at: std::sync::Mutex<BTreeMap<UnitPath, i64>>,
    pub clock: Arc<dyn crate::clock::Clock>,
    /// The server's directories, replaced in every detail recorded and log line shown.
    pub paths: crate::redact::ServerPaths,
    /// The repository's rules for this run: its workflows.
    pub rules: super::steps::RunRules,
    /// What every step of the run is told (`CASCADE_REPO`, `CASCADE_HEAD_SHA`, …).
    pub step_vars: crate::exec::StepVars,
    /// Each unit's steps so far, recorded with it.
    pub steps: super::steps::StepsSoFar,
    /// What each unit's policy checks found, recorded with it.
    pub policies: std::sync::Mutex<BTreeMap<UnitPath, Vec<crate::store::PolicyResult>>>,
    /// Each unit's policy input document, kept until the whole-plan policy sets are
    /// evaluated; empty unless a set asks for the whole plan.
    pub documents: std::sync::Mutex<BTreeMap<UnitPath, serde_json::Value>>,
}

/// Why a unit has no plan.
pub(super) enum Unplanned {
    /// Its last try failed, for this reason.
    Failed(String),
    /// Cancelled while it waited to try again: the run stays open for the same request to
    /// resume.
    Cancelled,
}

/// Why one try of a unit's plan failed.
pub(super) struct PlanFailure {
    /// What the unit's record and the comment say.
    pub reason: String,
    /// True when the tool ran and failed, so `reason` holds its output: only then can the
    /// failure be transient (cascade's own timeout, a cancellation or a missing binary
    /// would fail the same way again).
    pub tool_failed: bool,
}

/// The stacks a run has generated (or failed to), by directory.
pub(super) type StacksGenerated =
    std::sync::Mutex<BTreeMap<PathBuf, Arc<tokio::sync::OnceCell<Result<(), String>>>>>;

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    pub fn job(&self, target: &PlanTarget) -> UnitJob {
        let slug = target.path.file_stem();
        UnitJob {
            unit: target.path.clone(),
            dir: target.dir.clone(),
            root: target.root.clone(),
            repo: self.repo.repository().to_string(),
            sources: target.sources.clone(),
            tool: target.tool,
            plan_file: self.run_dir.join("plans").join(format!("{slug}.tfplan")),
            log: self.run_dir.join(format!("{:03}_{slug}.log", target.wave)),
            work: self.run_dir.join("work").join(&slug),
            destroy: target.destroy,
            init_args: target.init_args.clone(),
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            phase: self.phase,
            workflow: self.rules.workflow(&target.path),
            plan_targets: Vec::new(),
            state_change: None,
        }
    }

    pub async fn record(
        &self,
        unit: &UnitPath,
        status: UnitStatus,
        detail: String,
        plan: Option<UnitPlan>,
    ) {
        let (summary, rendered) = plan.map_or((None, None), |p| (Some(p.summary), p.rendered));
        let record = UnitRecord {
            unit: unit.clone(),
            status,
            // Error excerpts come redacted from the executor; this catches what else may
            // quote. The detail reaches the pull request: no server path in it.
            detail: self.paths.scrub(&crate::redact::redact(&detail)),
            summary,
            rendered,
            retried: self.retried_so_far(unit),
            retry_at: lock(&self.retry_at).get(unit).copied(),
            steps: self.steps_of(unit),
            policies: lock(&self.policies).get(unit).cloned().unwrap_or_default(),
        };
        if let Err(e) = self.store.record_unit(&self.run_id, &record).await {
            tracing::error!(unit = %unit, error = %e, "cannot record a unit's result");
        }
    }

    /// How many times `unit` was tried again so far.
    pub fn retried_so_far(&self, unit: &UnitPath) -> u32 {
        lock(&self.retried).get(unit).copied().unwrap_or(0)
    }

    /// Retry `n` of `unit` is due in `wait`: counted and timed here, stored with
    /// the unit's next record, so a process that stops during the wait leaves
    /// both for the run that resumes it.
    pub fn start_wait(&self, unit: &UnitPath, n: u32, wait: Duration) {
        lock(&self.retried).insert(unit.clone(), n);
        let due = self.clock.now() + wait.as_secs_f64().ceil() as i64;
        lock(&self.retry_at).insert(unit.clone(), due);
    }

    /// Waits until `unit`'s retry is due, unless `stop` fires first (false).
    pub async fn wait_for_retry(
        &self,
        unit: &UnitPath,
        wait: Duration,
        stop: &CancellationToken,
    ) -> bool {
        let waited = tokio::select! {
            () = tokio::time::sleep(wait) => true,
            () = stop.cancelled() => false,
            () = self.shutdown.cancelled() => false,
        };
        if waited {
            lock(&self.retry_at).remove(unit);
        }
        waited
    }

    /// A unit an earlier process left waiting to be tried again: takes over its
    /// count and answers how long is left of its wait.
    pub fn resumed_wait(&self, unit: &UnitPath) -> Option<Duration> {
        let previous = self.previous.get(unit)?;
        let due = previous.retry_at?;
        lock(&self.retried).insert(unit.clone(), previous.retried);
        lock(&self.retry_at).insert(unit.clone(), due);
        Some(Duration::from_secs((due - self.clock.now()).max(0) as u64))
    }

    /// Plans one unit: the saved plan file, its summary and its rendering. The plan JSON
    /// is read, summarised and drawn here, once, off the async workers, and dropped.
    /// Runs no workflow step (an apply's fresh plan is made with this).
    /// A unit's plan is checked against the run's policy sets here too: an apply's fresh
    /// plan that differs from the approved one becomes part of a new plan, whose findings
    /// must be its own.
    pub async fn plan_unit(&self, target: &PlanTarget) -> Result<UnitPlan, String> {
        let json = self.try_plan(target).await.map_err(|f| f.reason)?;
        self.read_checked(target, json).await
    }

    /// Summarises and draws a unit's plan JSON off the async workers; the bytes go.
    pub async fn read_plan(&self, target: &PlanTarget, json: PlanJson) -> Result<UnitPlan, String> {
        let redactor = self.executor.redactor();
        let unit = target.path.clone();
        tokio::task::spawn_blocking(move || UnitPlan::of_show_json(&unit, json, &redactor))
            .await
            .map_err(|e| format!("reading the plan stopped: {e}"))
            .and_then(|plan| plan)
    }

    /// Reads a unit's plan and, while its JSON is still in memory, checks it against the
    /// run's policy sets.
    async fn read_and_check(
        &self,
        target: &PlanTarget,
        json: PlanJson,
    ) -> Result<UnitPlan, Unplanned> {
        self.read_checked(target, json)
            .await
            .map_err(Unplanned::Failed)
    }

    async fn read_checked(&self, target: &PlanTarget, json: PlanJson) -> Result<UnitPlan, String> {
        if self.rules.policies.is_empty() {
            return self.read_plan(target, json).await;
        }
        // Copied for the policy input, dropped once it is built; the plan memory budget
        // share of `json` is held until then.
        let bytes = json.bytes().to_vec();
        let plan = self.read_plan(target, json).await?;
        self.check_policies(target, &bytes, &plan).await;
        Ok(plan)
    }

    /// One try of a unit's plan: its JSON, telling a failure of the tool from any other.
    async fn try_plan(&self, target: &PlanTarget) -> Result<PlanJson, PlanFailure> {
        let other = |reason: String| PlanFailure {
            reason,
            tool_failed: false,
        };
        // Before anything runs for it, its stack's generation included.
        if let Some(why) = target.refusal() {
            return Err(other(why));
        }
        if let Some(stack) = &target.stack {
            self.generate_stack(stack, target).await.map_err(other)?;
        }
        let job = self.job(target);
        self.executor
            .plan(&job, &self.cancel)
            .await
            .map_err(|e| PlanFailure {
                tool_failed: matches!(e, crate::exec::ExecError::Failed { .. }),
                reason: e.to_string(),
            })
    }

    /// Plans one unit, trying again after each transient failure while the policy allows:
    /// the wait before retry `n` is `base * factor^(n-1)`, and a cancellation (a new push,
    /// shutdown) ends the wait at once. Past the limit, the last failure stands. How many
    /// retries it took is in `retried`. The worker keeps its slot of the walk while it
    /// waits (the walk counts a slot per running worker).
    async fn plan_with_retries(&self, target: &PlanTarget) -> Result<PlanJson, Unplanned> {
        let unit = &target.path;
        if let Some(left) = self.resumed_wait(unit)
            && !self.wait_for_retry(unit, left, &self.cancel).await
        {
            return Err(Unplanned::Cancelled);
        }
        let mut retried = self.retried_so_far(unit);
        loop {
            let failure = match self.try_plan(target).await {
                Ok(plan) => return Ok(plan),
                Err(failure) => failure,
            };
            let transient = failure.tool_failed && self.retries.is_transient(&failure.reason);
            if !transient || retried + 1 >= self.retries.attempts {
                return Err(Unplanned::Failed(failure.reason));
            }
            retried += 1;
            let wait = self.retries.wait_before(retried);
            tracing::info!(unit = %unit, retry = retried, wait_ms = wait.as_millis() as u64, "transient plan failure; trying again");
            self.start_wait(unit, retried, wait);
            self.record(unit, UnitStatus::Planning, failure.reason, None)
                .await;
            if !self.wait_for_retry(unit, wait, &self.cancel).await {
                return Err(Unplanned::Cancelled);
            }
        }
    }
}

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// Runs `terragrunt stack generate` in `stack` once for the run (the
    /// first unit of the stack to plan does it, the others wait for it), so
    /// no generation rewrites a unit another worker is planning.
    async fn generate_stack(
        &self,
        stack: &std::path::Path,
        target: &PlanTarget,
    ) -> Result<(), String> {
        let cell = self
            .generated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(stack.to_path_buf())
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            let mut job = self.job(target);
            job.dir = stack.to_path_buf();
            job.tool = crate::unit::Tool::Terragrunt;
            self.executor
                .generate_stack(&job, &self.cancel)
                .await
                .map_err(|e| format!("generating the stack this unit belongs to failed: {e}"))
        })
        .await
        .clone()
    }
}

/// Records what the walk decided for units that never ran. A skipped unit's detail
/// names the unit that held it back and why (`failed` says what a failure was: "failed
/// to plan", "failed"); a change since approval is not a failure.
pub(super) async fn record_unrun<E: Executor, S: RunStore>(
    ctx: &RunCtx<E, S>,
    states: &BTreeMap<UnitPath, UnitState>,
    failed: &str,
) {
    for (unit, state) in states {
        match state {
            UnitState::Skipped { because } => {
                let why = match states.get(because) {
                    Some(UnitState::Blocked(_)) => {
                        format!("{because}'s plan changed since approval")
                    }
                    _ => format!("{because} {failed}"),
                };
                ctx.record(unit, UnitStatus::Skipped, why, None).await;
            }
            UnitState::Cancelled => {
                ctx.record(
                    unit,
                    UnitStatus::Cancelled,
                    "cancelled before it started".into(),
                    None,
                )
                .await
            }
            UnitState::Failed(why) if why.starts_with("panicked") => {
                ctx.record(unit, UnitStatus::Failed, why.clone(), None)
                    .await
            }
            _ => {}
        }
    }
}

/// Identifies a plan run, so a run killed half-way is resumed by the same request.
fn run_key(head: &str, base: &str, targets: &[PlanTarget]) -> String {
    let mut h = Sha256::new();
    h.update(format!("{head}\n{base}\n"));
    for t in targets {
        h.update(format!("{}:{}:{}\n", t.path, t.destroy, t.wave));
    }
    hex::encode(h.finalize())
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Plans `targets` for `repo` at `head` (against `base`) and saves the
    /// plan as the repository's current one. A run interrupted earlier with
    /// the same inputs is resumed: units it planned are not planned again.
    /// A unit whose plan fails with a transient error is planned again as `retries` says.
    // Each argument is a different input of the run; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub async fn plan(
        &self,
        repo: &PlanKey,
        head: &str,
        base: &str,
        targets: Vec<PlanTarget>,
        rules: impl Into<RunRules>,
        cancel: CancellationToken,
        observe: impl FnMut(WalkEvent<'_>),
    ) -> anyhow::Result<PlanOutcome> {
        let key = run_key(head, base, &targets);
        let run = match self.store.unfinished_run(repo, RunKind::Plan, &key).await? {
            Some(run) => run,
            None => self.new_run(repo, RunKind::Plan, key).await?,
        };
        let rules: RunRules = rules.into();
        let previous = self.unit_results(&run.id).await?;
        let run_dir = PathBuf::from(&run.dir);
        let ctx = Arc::new(RunCtx {
            executor: self.executor.clone(),
            store: self.store.clone(),
            run_id: run.id.clone(),
            paths: super::failure_log::server_paths(&self.data_dir, &run_dir, targets.iter()),
            run_dir,
            repo: repo.clone(),
            phase: Phase::Plan,
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            cancel: cancel.clone(),
            shutdown: self.shutdown.clone(),
            targets: targets
                .iter()
                .map(|t| (t.path.clone(), t.clone()))
                .collect(),
            steps: super::steps::previous_steps(&previous),
            policies: Default::default(),
            documents: Default::default(),
            previous,
            generated: Default::default(),
            retries: rules.retries.clone(),
            retried: Default::default(),
            retry_at: Default::default(),
            clock: self.clock.clone(),
            step_vars: crate::exec::StepVars {
                repo: repo.repository().to_string(),
                pr: rules.pr,
                head_sha: head.to_string(),
                base_sha: base.to_string(),
                plan_id: None,
                results_file: None,
            },
            rules,
        });
        let walk = Walk::new(
            targets
                .iter()
                .map(|t| WalkUnit {
                    path: t.path.clone(),
                    deps: t.deps.clone(),
                })
                .collect(),
            self.parallelism,
        );
        let worker = ctx.clone();
        let states = walk
            .run(
                cancel,
                move |unit| {
                    let ctx = worker.clone();
                    async move { plan_one(&ctx, &unit).await }
                },
                observe,
            )
            .await;
        record_unrun(&ctx, &states, "failed to plan").await;

        let records = self.unit_results(&run.id).await?;
        let units: Vec<PlannedUnit> = targets
            .iter()
            .map(|t| {
                let record = records.get(&t.path);
                PlannedUnit {
                    path: t.path.clone(),
                    wave: t.wave,
                    destroy: t.destroy,
                    deps: t.deps.clone(),
                    tool: t.tool,
                    init_args: t.init_args.clone(),
                    stack: super::stack_path(t),
                    status: record.map(|r| r.status).unwrap_or(UnitStatus::Cancelled),
                    detail: record.map(|r| r.detail.clone()).unwrap_or_default(),
                    summary: record.and_then(|r| r.summary.clone()),
                    rendered: record.and_then(|r| r.rendered.clone()),
                    retried: record.map(|r| r.retried).unwrap_or(0),
                    steps: record.map(|r| r.steps.clone()).unwrap_or_default(),
                    policies: record.map(|r| r.policies.clone()).unwrap_or_default(),
                }
            })
            .collect();
        let failed = units.iter().any(|u| u.status != UnitStatus::Planned);
        let failure_logs = ctx
            .failure_logs(units.iter().map(|u| (&u.path, u.status, u.detail.as_str())))
            .await;
        let id = plan_id(head, base, &units);
        let policies = ctx.check_whole_plan(&units, &id).await;
        let plan = PlanRecord {
            id,
            repo: repo.clone(),
            head: head.to_string(),
            base: base.to_string(),
            status: PlanStatus::Current,
            run_id: run.id.clone(),
            units,
            created_at: self.clock.now(),
            policies,
        };
        self.store.save_plan(&plan).await?;
        // An interrupted run stays open: the same request resumes it.
        if !plan.units.iter().any(|u| u.status == UnitStatus::Cancelled) {
            self.store.finish_run(&run.id).await?;
        }
        Ok(PlanOutcome {
            plan,
            run_dir: PathBuf::from(run.dir),
            failed,
            failure_logs,
        })
    }
}

/// The plan id of a set of planned units: over head, base and each unit's fingerprint, by path.
pub(super) fn plan_id(head: &str, base: &str, units: &[PlannedUnit]) -> PlanId {
    let mut list: Vec<(UnitPath, crate::plan::Fingerprint)> = units
        .iter()
        .filter_map(|u| u.fingerprint().map(|f| (u.path.clone(), f.clone())))
        .collect();
    list.sort();
    PlanId::compute(head, base, &list)
}

async fn plan_one<E: Executor, S: RunStore>(ctx: &RunCtx<E, S>, unit: &UnitPath) -> Outcome {
    if let Some(done) = ctx
        .previous
        .get(unit)
        .filter(|r| r.status == UnitStatus::Planned)
    {
        // Planned before the interruption; its plan file is still in the run directory.
        if done.summary.is_some() {
            return Outcome::Done;
        }
    }
    let target = &ctx.targets[unit];
    // A unit planned again starts its steps again.
    ctx.clear_steps(unit);
    ctx.record(unit, UnitStatus::Planning, String::new(), None)
        .await;
    let planning = Recording {
        status: UnitStatus::Planning,
        detail: "",
        plan: None,
    };
    let pre = ctx
        .run_hook(target, Hook::PrePlan, false, None, planning)
        .await;
    let planned = match pre {
        HookEnd::Failed(why) => Err(Unplanned::Failed(why)),
        HookEnd::Passed => ctx.plan_with_retries(target).await,
    };
    let failed = planned.is_err();
    let stdin = planned.as_ref().ok().map(|json| json.bytes());
    let post = ctx
        .run_hook(target, Hook::PostPlan, failed, stdin, planning)
        .await;
    let planned = match (planned, post) {
        (Ok(json), HookEnd::Passed) => ctx.read_and_check(target, json).await,
        (Ok(_), HookEnd::Failed(why)) => Err(Unplanned::Failed(why)),
        (Err(e), _) => Err(e),
    };
    match planned {
        Ok(plan) => {
            ctx.record(unit, UnitStatus::Planned, String::new(), Some(plan))
                .await;
            Outcome::Done
        }
        Err(Unplanned::Cancelled) => {
            let why = "cancelled while waiting to try again".to_string();
            ctx.record(unit, UnitStatus::Cancelled, why.clone(), None)
                .await;
            Outcome::Failed(why)
        }
        Err(Unplanned::Failed(why)) => {
            ctx.record(unit, UnitStatus::Failed, why.clone(), None)
                .await;
            Outcome::Failed(why)
        }
    }
}

/// A map of the run's, poisoned or not (a panicked worker leaves it consistent).
pub(super) fn lock<T>(map: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|p| p.into_inner())
}
