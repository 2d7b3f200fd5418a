//! An apply run: the approved plan walked again in the same order. Each unit
//! is re-planned (with refresh) and fingerprinted; only a plan equal to the
//! approved one is applied. An apply that fails with a transient error is
//! tried again, after the repository's backoff, only while the unit's fresh
//! plan still has the approved fingerprint (a retry needs no new approval
//! because it applies exactly what was approved); otherwise it stops and asks. A unit whose plan changed is not applied and holds
//! back its dependents; what is left becomes a new plan with a new id.
//!
//! An apply holds the plan id's claim from start to end. Before anything else
//! runs, units an earlier process left `applying` are re-attached: a live
//! terraform is waited for, a finished one's exit status and output recorded;
//! only when nothing tells how it ended is the unit re-planned (an empty plan
//! then means it was applied).

use super::plan_run::{RunCtx, UnitPlan, plan_id, record_unrun};
use super::steps::{HookEnd, RunRules};
use super::subset::{failed_and_dependents, missing_dependencies};
use super::{Engine, PlanTarget};
use crate::config::workflows::Hook;
use crate::exec::{Executor, Resumed};
use crate::plan::PlanId;
use crate::store::{
    ApplyClaim, PlanKey, PlanRecord, PlanStatus, PlannedUnit, RunKind, RunRecord, RunStore,
    UnitRecord, UnitStatus,
};
use crate::unit::UnitPath;
use crate::walk::{Outcome, Walk, WalkEvent, WalkUnit};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Why an apply was refused before anything ran. Each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("there is no plan {id}{}", current_hint(current))]
    Unknown { id: PlanId, current: Option<PlanId> },
    #[error("plan {id} was replaced by a newer plan{}", current_hint(current))]
    Superseded { id: PlanId, current: Option<PlanId> },
    #[error("plan {id} was already applied; plan again to see what is left")]
    Consumed { id: PlanId },
    #[error(
        "plan {id} is {} old, older than `plan_ttl` ({ttl}); run `cascade plan` again and apply the new id",
        crate::config::in_words(*age)
    )]
    Expired {
        id: PlanId,
        age: std::time::Duration,
        ttl: crate::config::PlanTtl,
    },
    #[error(
        "the repository changed since plan {id} was made (planned at {planned}, now at {now}); plan again and approve the new id"
    )]
    Stale {
        id: PlanId,
        planned: String,
        now: String,
    },
    #[error("plan {id} cannot be applied: {units} did not plan; fix the failure and plan again")]
    Incomplete { id: PlanId, units: String },
    #[error(
        "applying only some units of plan {id} needs what they depend on too: add {missing}, or apply the whole plan"
    )]
    NotClosed { id: PlanId, missing: String },
    #[error("plan {id} is being applied by pid {pid} on {host}; wait for it")]
    Busy { id: PlanId, pid: u32, host: String },
}

/// What [`Engine::recover_apply`] found for a plan left being applied.
#[derive(Debug)]
pub enum ApplyRecovery {
    /// A live process is applying it (this server or another): leave it alone.
    Busy(ApplyClaim),
    /// Nobody is applying it any more. The results of applies that ended were
    /// recorded; `running` lists units whose terraform still runs (the next
    /// apply of the plan waits for them before doing anything else).
    Recovered { running: Vec<UnitPath> },
}

fn current_hint(current: &Option<PlanId>) -> String {
    match current {
        Some(id) => format!(
            "; the current plan is {id}: apply it with `cascade apply {id}` (or `/apply {id}`)"
        ),
        None => "; there is no current plan: run `cascade plan` first".to_string(),
    }
}

/// One unit's result in an apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitApply {
    pub path: UnitPath,
    pub status: UnitStatus,
    pub detail: String,
    /// How many times its apply was tried again after a transient failure.
    pub retried: u32,
    /// Planned as a destroy: applying it destroyed the unit.
    pub destroy: bool,
    /// What was applied (the fresh plan that matched the approved one), for an applied unit.
    pub applied: Option<crate::plan::PlanSummary>,
    /// How long its last apply took, when this process ran it.
    pub duration: Option<std::time::Duration>,
    /// The end of what its apply printed, cleaned (`apply_output.rs`); empty when none.
    pub output: Vec<String>,
    /// When its plan changed since approval: both plans, and what this apply applied
    /// upstream of it.
    pub since_approval: Option<super::SinceApproval>,
    /// Its workflow's apply-phase steps (`pre_apply`, `pre_destroy`, `post_apply`).
    pub steps: Vec<crate::store::StepRecord>,
}

/// What an apply did.
#[derive(Debug)]
pub struct ApplyOutcome {
    pub plan_id: PlanId,
    pub units: Vec<UnitApply>,
    /// When a unit's plan changed since approval: the new plan for everything not yet applied.
    pub new_plan: Option<PlanRecord>,
    pub run_dir: PathBuf,
    /// The end of each failed unit's log, as for a plan (`PlanOutcome::failure_logs`).
    pub failure_logs: Vec<super::LogTail>,
    /// The units of the plan an apply of only some of them left for the new plan.
    pub left_out: Vec<UnitPath>,
}

impl ApplyOutcome {
    /// True when every unit of the plan was applied or had nothing to do.
    pub fn complete(&self) -> bool {
        self.left_out.is_empty()
            && self
                .units
                .iter()
                .all(|u| matches!(u.status, UnitStatus::Applied | UnitStatus::Unchanged))
    }
}

impl<E: Executor, S: RunStore> Engine<E, S> {
    /// Applies plan `id` of `repo`, whose working tree is now at `head`.
    /// `dir_for` says where each planned unit's tool runs: its directory in
    /// the working tree, or for a destroy, in a tree of the base revision.
    /// Refused with [`ApplyError::Busy`] while another live process applies `id`.
    /// A unit whose apply fails with a transient error is tried again as
    /// `retries` says, each time only after a fresh plan equal to the approved one.
    pub async fn apply(
        &self,
        repo: &PlanKey,
        id: &PlanId,
        head: &str,
        dir_for: &(dyn Fn(&PlannedUnit) -> super::UnitDir + Sync),
        rules: impl Into<RunRules>,
        observe: impl FnMut(WalkEvent<'_>),
    ) -> anyhow::Result<Result<ApplyOutcome, ApplyError>> {
        let rules: RunRules = rules.into();
        let held = match self.take_claim(repo, id).await? {
            Ok(held) => held,
            Err(holder) => {
                return Ok(Err(ApplyError::Busy {
                    id: id.clone(),
                    pid: holder.pid,
                    host: holder.host,
                }));
            }
        };
        let result = self
            .apply_claimed(repo, id, head, dir_for, &rules, observe)
            .await;
        self.release_claim(held).await;
        result
    }

    /// For a plan a dead process was applying (the server's start-up, for a
    /// pull request left `applying`): takes its claim unless a live process
    /// holds it, records the result of every apply that ended meanwhile,
    /// and releases the claim. Never waits for a running terraform and never
    /// starts one.
    pub async fn recover_apply(
        &self,
        repo: &PlanKey,
        id: &PlanId,
    ) -> anyhow::Result<ApplyRecovery> {
        let held = match self.take_claim(repo, id).await? {
            Ok(held) => held,
            Err(holder) => return Ok(ApplyRecovery::Busy(holder)),
        };
        let result = self.recover_claimed(repo, id).await;
        self.release_claim(held).await;
        result
    }

    async fn recover_claimed(&self, repo: &PlanKey, id: &PlanId) -> anyhow::Result<ApplyRecovery> {
        let (Some(plan), Some(run)) = (
            self.store.plan(repo, id).await?,
            self.store
                .latest_run(repo, RunKind::Apply, id.as_str())
                .await?,
        ) else {
            return Ok(ApplyRecovery::Recovered { running: vec![] });
        };
        // Re-attaching reads the unit's working files only; it runs nothing in its directory.
        let ctx = self
            .apply_ctx(
                &run,
                &plan,
                &|_| super::UnitDir::of(Path::new(""), Path::new(""), &UnitPath::new(".")),
                RunRules::default(),
            )
            .await?;
        let now = CancellationToken::new();
        now.cancel();
        let found = reattach(&ctx, &now).await;
        Ok(ApplyRecovery::Recovered {
            running: found.running.into_iter().collect(),
        })
    }

    async fn apply_ctx(
        &self,
        run: &RunRecord,
        plan: &PlanRecord,
        dir_for: &(dyn Fn(&PlannedUnit) -> super::UnitDir + Sync),
        rules: RunRules,
    ) -> anyhow::Result<RunCtx<E, S>> {
        let targets: BTreeMap<UnitPath, PlanTarget> = plan
            .units
            .iter()
            .map(|u| (u.path.clone(), target_of(u, dir_for(u))))
            .collect();
        let run_dir = PathBuf::from(&run.dir);
        let previous = self.unit_results(&run.id).await?;
        Ok(RunCtx {
            steps: super::steps::previous_steps(&previous),
            policies: Default::default(),
            documents: Default::default(),
            executor: self.executor.clone(),
            store: self.store.clone(),
            run_id: run.id.clone(),
            paths: super::failure_log::server_paths(&self.data_dir, &run_dir, targets.values()),
            run_dir,
            repo: run.repo.clone(),
            phase: crate::exec::Phase::Apply,
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            cancel: CancellationToken::new(),
            shutdown: self.shutdown.clone(),
            targets,
            previous,
            generated: Default::default(),
            retries: rules.retries.clone(),
            retried: Default::default(),
            retry_at: Default::default(),
            clock: self.clock.clone(),
            step_vars: crate::exec::StepVars {
                repo: run.repo.repository().to_string(),
                pr: rules.pr,
                head_sha: rules
                    .merge_commit
                    .clone()
                    .unwrap_or_else(|| plan.head.clone()),
                base_sha: plan.base.clone(),
                plan_id: Some(plan.id.as_str().to_string()),
                results_file: None,
            },
            rules,
        })
    }

    async fn apply_claimed(
        &self,
        repo: &PlanKey,
        id: &PlanId,
        head: &str,
        dir_for: &(dyn Fn(&PlannedUnit) -> super::UnitDir + Sync),
        rules: &RunRules,
        observe: impl FnMut(WalkEvent<'_>),
    ) -> anyhow::Result<Result<ApplyOutcome, ApplyError>> {
        let plan = match self.current_plan_named(repo, id, rules.plan_ttl).await? {
            Ok(plan) => plan,
            Err(not) => return Ok(Err(not.into())),
        };
        // After a merge the tree is the merge commit's, never the planned head's: what
        // binds the apply to the review is each unit's fingerprint, checked per unit.
        let planned_at = rules.merge_commit.as_deref().unwrap_or(&plan.head);
        if planned_at != head {
            return Ok(Err(ApplyError::Stale {
                id: id.clone(),
                planned: plan.head.clone(),
                now: head.to_string(),
            }));
        }
        let incomplete: Vec<&str> = plan
            .units
            .iter()
            .filter(|u| u.status != UnitStatus::Planned)
            .map(|u| u.path.as_str())
            .collect();
        if !incomplete.is_empty() {
            return Ok(Err(ApplyError::Incomplete {
                id: id.clone(),
                units: incomplete.join(", "),
            }));
        }
        let taken = |p: &UnitPath| rules.only.as_ref().is_none_or(|only| only.contains(p));
        if let Some(only) = &rules.only {
            let missing = missing_dependencies(&plan, only);
            if !missing.is_empty() {
                let missing: Vec<&str> = missing.iter().map(|p| p.as_str()).collect();
                return Ok(Err(ApplyError::NotClosed {
                    id: id.clone(),
                    missing: missing.join(", "),
                }));
            }
        }

        // One apply run per plan: a retry or a resume continues it, never re-applying a unit.
        let run = match self
            .store
            .latest_run(repo, RunKind::Apply, id.as_str())
            .await?
        {
            Some(run) => {
                self.store.reopen_run(&run.id).await?;
                run
            }
            None => {
                self.new_run(repo, RunKind::Apply, id.as_str().to_string())
                    .await?
            }
        };
        let approved: BTreeMap<UnitPath, PlannedUnit> = plan
            .units
            .iter()
            .map(|u| (u.path.clone(), u.clone()))
            .collect();
        let mut ctx = self.apply_ctx(&run, &plan, dir_for, rules.clone()).await?;
        // Before anything else: applies an earlier process left running.
        let found = reattach(&ctx, &self.shutdown).await;
        ctx.previous = self.unit_results(&run.id).await?;
        let ctx = Arc::new(ctx);
        let walk = Walk::new(
            plan.units
                .iter()
                .filter(|u| taken(&u.path))
                .map(|u| WalkUnit {
                    path: u.path.clone(),
                    deps: u.deps.iter().filter(|d| taken(d)).cloned().collect(),
                })
                .collect(),
            self.parallelism,
        );
        let worker = ctx.clone();
        let approved = Arc::new(approved);
        let found = Arc::new(found);
        let timings: Timings = Arc::default();
        let timed = timings.clone();
        let states = walk
            .run(
                CancellationToken::new(),
                move |unit| {
                    let ctx = worker.clone();
                    let approved = approved.clone();
                    let found = found.clone();
                    let timed = timed.clone();
                    async move { apply_one(&ctx, &approved[&unit], &found, &timed, &unit).await }
                },
                observe,
            )
            .await;
        record_unrun(&ctx, &states, "failed").await;
        if let Some(only) = &rules.only {
            let done = self.unit_results(&run.id).await?;
            super::subset::replan_left_out(&ctx, &plan, only, &done).await;
        }
        let records = self.unit_results(&run.id).await?;
        self.store.finish_run(&run.id).await?;

        let applied = |p: &UnitPath| records.get(p).map(|r| r.status) == Some(UnitStatus::Applied);
        let mut outputs = ctx
            .apply_outputs(plan.units.iter().map(|u| &u.path).filter(|p| applied(p)))
            .await;
        let timings = std::mem::take(&mut *timings.lock().unwrap_or_else(|e| e.into_inner()));
        let units: Vec<UnitApply> = plan
            .units
            .iter()
            .filter(|u| taken(&u.path))
            .map(|u| {
                let r = records.get(&u.path);
                UnitApply {
                    path: u.path.clone(),
                    status: r.map(|r| r.status).unwrap_or(UnitStatus::Cancelled),
                    detail: r.map(|r| r.detail.clone()).unwrap_or_default(),
                    retried: r.map(|r| r.retried).unwrap_or(0),
                    destroy: u.destroy,
                    applied: r
                        .filter(|_| applied(&u.path))
                        .and_then(|r| r.summary.clone()),
                    duration: timings.get(&u.path).copied(),
                    output: outputs.remove(&u.path).unwrap_or_default(),
                    since_approval: super::since_approval::since_approval(u, &plan.units, &records),
                    steps: r.map(|r| r.steps.clone()).unwrap_or_default(),
                }
            })
            .collect();
        let failure_logs = ctx
            .failure_logs(units.iter().map(|u| (&u.path, u.status, u.detail.as_str())))
            .await;
        let mut outcome = ApplyOutcome {
            plan_id: id.clone(),
            units,
            new_plan: None,
            run_dir: PathBuf::from(&run.dir),
            failure_logs,
            left_out: plan
                .units
                .iter()
                .filter(|u| !taken(&u.path))
                .map(|u| u.path.clone())
                .collect(),
        };
        if outcome.complete() {
            self.store
                .set_plan_status(repo, id, PlanStatus::Consumed)
                .await?;
        } else if !outcome.left_out.is_empty()
            || outcome
                .units
                .iter()
                .any(|u| u.status == UnitStatus::ChangedSinceApproval)
        {
            outcome.new_plan = self.replan_rest(&plan, head, &records, &run.id).await?;
        }
        Ok(Ok(outcome))
    }

    /// The new plan after a change since approval: every unit not yet
    /// applied, with the changed units' new plans, under a new id. A unit whose apply
    /// failed is left out, and so is everything depending on it: approving the new id
    /// must not run it again unfixed (a push or `/plan` plans it again). `None` when
    /// nothing is left to approve.
    async fn replan_rest(
        &self,
        plan: &PlanRecord,
        head: &str,
        records: &BTreeMap<UnitPath, UnitRecord>,
        run_id: &str,
    ) -> anyhow::Result<Option<PlanRecord>> {
        let done = |p: &UnitPath| {
            records
                .get(p)
                .is_some_and(|r| matches!(r.status, UnitStatus::Applied | UnitStatus::Unchanged))
        };
        let left_out = failed_and_dependents(plan, records);
        let units: Vec<PlannedUnit> = plan
            .units
            .iter()
            .filter(|u| !done(&u.path) && !left_out.contains(&u.path))
            .map(|u| {
                let mut u = u.clone();
                if let Some(r) = records
                    .get(&u.path)
                    .filter(|r| r.status == UnitStatus::ChangedSinceApproval)
                {
                    u.summary = r.summary.clone();
                    u.rendered = r.rendered.clone();
                    // Judged again with its fresh plan (an apply run checks policies too).
                    u.policies = r.policies.clone();
                }
                u.deps.retain(|d| !done(d));
                u.status = UnitStatus::Planned;
                u.detail = String::new();
                u
            })
            .collect();
        if units.is_empty() {
            // Everything left failed or depends on what failed: nothing to approve.
            return Ok(None);
        }
        let new_plan = PlanRecord {
            id: plan_id(head, &plan.base, &units),
            repo: plan.repo.clone(),
            head: head.to_string(),
            base: plan.base.clone(),
            status: PlanStatus::Current,
            run_id: run_id.to_string(),
            units,
            created_at: self.clock.now(),
            // The approved plan's whole-plan findings, kept: an apply re-plans units one
            // by one and keeps no unit's policy input, so the whole-plan sets cannot be
            // evaluated over this new set of units. Kept rather than dropped, so what
            // blocked the approved plan blocks the rest (fails closed; the new id needs
            // its own approval); `/plan` or a push evaluates them again.
            policies: plan.policies.clone(),
        };
        self.store.save_plan(&new_plan).await?;
        Ok(Some(new_plan))
    }
}

/// What re-attaching found, for the walk.
#[derive(Default)]
struct Reattached {
    /// Units whose terraform still runs (the wait was stopped): not touched.
    running: BTreeSet<UnitPath>,
    /// Units whose re-attached apply failed: failed in this run too.
    failed: BTreeMap<UnitPath, String>,
}

/// Re-attaches to every unit recorded `applying` and records how its apply
/// ended. `stop` ends the waits (the units stay `applying`).
async fn reattach<E: Executor, S: RunStore>(
    ctx: &RunCtx<E, S>,
    stop: &CancellationToken,
) -> Reattached {
    let mut found = Reattached::default();
    for (unit, record) in ctx
        .previous
        .iter()
        .filter(|(_, r)| r.status == UnitStatus::Applying)
    {
        let Some(target) = ctx.targets.get(unit) else {
            continue;
        };
        let plan = UnitPlan::of_record(record);
        match ctx.executor.resume_apply(&ctx.job(target), stop).await {
            Ok(Resumed::Finished(Ok(()))) => {
                let detail =
                    "applied by a terraform that an earlier cascade process started".into();
                ctx.record(unit, UnitStatus::Applied, detail, plan).await;
            }
            Ok(Resumed::Finished(Err(e))) => {
                let why = e.to_string();
                ctx.record(unit, UnitStatus::Failed, why.clone(), plan)
                    .await;
                found.failed.insert(unit.clone(), why);
            }
            Ok(Resumed::Running) => {
                found.running.insert(unit.clone());
            }
            // Nothing tells how it ended: the unit is re-planned, and its plan tells.
            Ok(Resumed::Nothing | Resumed::Unknown) => {}
            Err(e) => {
                tracing::error!(unit = %unit, error = %e, "cannot re-attach to an apply; leaving the unit as it is");
                found.running.insert(unit.clone());
            }
        }
    }
    found
}

/// How long each unit's last apply took, as this process timed it.
type Timings = Arc<std::sync::Mutex<BTreeMap<UnitPath, std::time::Duration>>>;

async fn apply_one<E: Executor, S: RunStore>(
    ctx: &RunCtx<E, S>,
    approved: &PlannedUnit,
    found: &Reattached,
    timings: &Timings,
    unit: &UnitPath,
) -> Outcome {
    let previous = ctx.previous.get(unit).map(|r| r.status);
    if previous == Some(UnitStatus::Applied) {
        // Applied by an earlier process: only the post_apply steps it did not finish run.
        return ctx.post_apply(unit, Outcome::Done).await;
    }
    if previous == Some(UnitStatus::Unchanged) {
        return Outcome::Done;
    }
    if found.running.contains(unit) {
        // Its plan file is in use and its outcome unknown: neither re-plan nor apply.
        let why = "still being applied by a terraform an earlier cascade process started; apply again to record its result".to_string();
        let plan = ctx.previous.get(unit).and_then(UnitPlan::of_record);
        ctx.record(unit, UnitStatus::Applying, why.clone(), plan)
            .await;
        return Outcome::Failed(why);
    }
    if let Some(why) = found.failed.get(unit) {
        return Outcome::Failed(why.clone());
    }
    // Left waiting to be tried again by a process that stopped: the rest of the wait.
    if let Some(left) = ctx.resumed_wait(unit)
        && !ctx.wait_for_retry(unit, left, &ctx.shutdown).await
    {
        return Outcome::Failed("stopped while waiting to try the apply again".into());
    }
    let target = &ctx.targets[unit];
    let Some(expected) = approved.summary.as_ref() else {
        return Outcome::Failed("the approved plan has no summary for this unit".into());
    };
    ctx.record(unit, UnitStatus::Planning, String::new(), None)
        .await;
    // A destroy's pre_destroy steps run before its fresh plan: they may take resources
    // out of its state (platctl's state_purge), which the plan must then see.
    if target.destroy
        && let HookEnd::Failed(why) = ctx.pre_hook(target, Hook::PreDestroy, None).await
    {
        ctx.record(unit, UnitStatus::Failed, why.clone(), None)
            .await;
        return ctx.post_apply(unit, Outcome::Failed(why)).await;
    }
    let fresh = match ctx.plan_unit(target).await {
        Ok(plan) => plan,
        Err(why) => {
            ctx.record(unit, UnitStatus::Failed, why.clone(), None)
                .await;
            return ctx.post_apply(unit, Outcome::Failed(why)).await;
        }
    };
    let purged = target.destroy && super::steps::purged(&fresh.summary, expected);
    if fresh.summary.fingerprint != expected.fingerprint && !purged {
        if previous == Some(UnitStatus::Applying) && fresh.summary.is_empty() {
            // Killed after terraform applied it but before cascade recorded that.
            ctx.record(
                unit,
                UnitStatus::Applied,
                "applied before the interruption".into(),
                Some(fresh),
            )
            .await;
            return Outcome::Done;
        }
        // An empty fresh plan after an approved change means something else made the
        // change (cascade's own interrupted apply was ruled out above): its dependents
        // were planned against a world that no longer is, so they wait too.
        let detail = if fresh.summary.is_empty() {
            format!(
                "approved {}, now it changes nothing: something other than this apply changed it",
                expected.fingerprint.short()
            )
        } else {
            format!(
                "approved {}, now {}",
                expected.fingerprint.short(),
                fresh.summary.fingerprint.short()
            )
        };
        ctx.record(
            unit,
            UnitStatus::ChangedSinceApproval,
            detail.clone(),
            Some(fresh),
        )
        .await;
        return Outcome::Blocked(detail);
    }
    if fresh.summary.is_empty() {
        ctx.record(unit, UnitStatus::Unchanged, String::new(), Some(fresh))
            .await;
        return Outcome::Done;
    }
    if !target.destroy
        && let HookEnd::Failed(why) = ctx.pre_hook(target, Hook::PreApply, Some(&fresh)).await
    {
        // Nothing was applied: the state is as it was.
        ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh))
            .await;
        let outcome = Outcome::Failed(why);
        return ctx.post_apply(unit, outcome).await;
    }
    let outcome = apply_with_retries(ctx, target, expected, fresh, timings).await;
    ctx.post_apply(unit, outcome).await
}

/// Applies a unit whose fresh plan is the approved one. After a transient
/// failure, while the policy allows, it waits, plans again and applies again
/// only if the new plan still has the approved fingerprint (what failed may
/// have changed something: then a reviewer must see the new plan).
async fn apply_with_retries<E: Executor, S: RunStore>(
    ctx: &RunCtx<E, S>,
    target: &PlanTarget,
    expected: &crate::plan::PlanSummary,
    mut fresh: UnitPlan,
    timings: &Timings,
) -> Outcome {
    let unit = &target.path;
    // Planning refused it already; this keeps the apply itself behind the same check.
    if let Some(why) = target.refusal() {
        ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh))
            .await;
        return Outcome::Failed(why);
    }
    let mut retried = ctx.retried_so_far(unit);
    loop {
        ctx.record(
            unit,
            UnitStatus::Applying,
            String::new(),
            Some(fresh.clone()),
        )
        .await;
        let started = std::time::Instant::now();
        let result = ctx.apply_unit(target, expected).await;
        timings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(unit.clone(), started.elapsed());
        let error = match result {
            Ok(()) => {
                ctx.record(unit, UnitStatus::Applied, String::new(), Some(fresh))
                    .await;
                return Outcome::Done;
            }
            Err(super::two_stage::StageError::Exec(e)) => e,
            Err(super::two_stage::StageError::Changed(why)) => {
                ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh))
                    .await;
                return Outcome::Failed(why);
            }
        };
        let why = error.to_string();
        let transient = matches!(error, crate::exec::ExecError::Failed { .. })
            && ctx.retries.is_transient(&why);
        if !transient || retried + 1 >= ctx.retries.attempts {
            let why = if retried > 0 {
                format!("retried {retried}×, then: {why}")
            } else {
                why
            };
            ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh))
                .await;
            return Outcome::Failed(why);
        }
        retried += 1;
        let wait = ctx.retries.wait_before(retried);
        tracing::info!(unit = %unit, retry = retried, wait_ms = wait.as_millis() as u64, "transient apply failure; planning again to retry");
        ctx.start_wait(unit, retried, wait);
        ctx.record(unit, UnitStatus::Failed, why.clone(), Some(fresh.clone()))
            .await;
        if !ctx.wait_for_retry(unit, wait, &ctx.shutdown).await {
            return Outcome::Failed(why);
        }
        ctx.record(unit, UnitStatus::Planning, String::new(), None)
            .await;
        let again = match ctx.plan_unit(target).await {
            Ok(plan) => plan,
            Err(plan_failed) => {
                let detail = format!(
                    "the apply failed ({why}) and planning it again to retry failed too: {plan_failed}"
                );
                ctx.record(unit, UnitStatus::Failed, detail.clone(), None)
                    .await;
                return Outcome::Failed(detail);
            }
        };
        if again.summary.fingerprint != expected.fingerprint {
            let detail = format!(
                "the apply failed ({why}) and was not retried: the unit's plan changed since approval (approved {}, now {}); plan again and approve the new plan",
                expected.fingerprint.short(),
                again.summary.fingerprint.short()
            );
            ctx.record(unit, UnitStatus::Failed, detail.clone(), Some(again))
                .await;
            return Outcome::Failed(detail);
        }
        fresh = again;
    }
}

fn target_of(unit: &PlannedUnit, place: super::UnitDir) -> PlanTarget {
    let super::UnitDir { root, dir } = place;
    PlanTarget {
        path: unit.path.clone(),
        wave: unit.wave,
        deps: unit.deps.clone(),
        destroy: unit.destroy,
        tool: unit.tool,
        stack: unit
            .stack
            .as_ref()
            .map(|stack| super::stack_dir(&dir, &unit.path, stack)),
        dir,
        root,
        // Checked when it was planned, at the same head.
        sources: Vec::new(),
        init_args: unit.init_args.clone(),
        // A unit discovery refused never planned, so its plan is not applied;
        // its path is still checked (`PlanTarget::refusal`) before it runs.
        refused: None,
    }
}
