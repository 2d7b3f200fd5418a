//! A unit's workflow steps within a run: which `run` steps of a hook run (by `when` and
//! how the unit's run has gone), each result recorded with the unit as it lands (so a
//! resumed run knows which finished), and what a failed step does to the unit.
//!
//! Owns the rules of issue 25's item 2 and 4: a failed step fails the unit with its name
//! and exit code, unless `ignore_errors` makes it a warning; a finished step is never run
//! again by a resumed run; steps are never retried (only the built-in plan and apply
//! are). Never runs a process itself (the executor does) and never shows anything (the
//! comment does, by each record's `visible`).

use super::PlanTarget;
use super::plan_run::RunCtx;
use crate::config::RepoConfig;
use crate::config::RetryPolicy;
use crate::config::workflows::{Hook, RunStep, VisibleOn, When, Workflow};
use crate::exec::{Executor, StepCall, StepVars};
use crate::store::{RunStore, StepRecord, StepStatus, UnitRecord, UnitStatus};
use crate::unit::UnitPath;
use crate::walk::Outcome;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What a run takes from the repository's rules (the default branch's `.cascade.yaml`)
/// and from the request that started it. A bare [`RetryPolicy`] is rules without
/// workflows.
#[derive(Clone, Debug, Default)]
pub struct RunRules {
    pub retries: RetryPolicy,
    /// Where the units' workflows come from; `None`: no workflow steps.
    pub config: Option<Arc<RepoConfig>>,
    /// The pull request's number (`CASCADE_PR`); none for drift and the CLI.
    pub pr: Option<u64>,
    /// `config`'s workflows, shared: every command of a unit is given its workflow, and a
    /// copy each time would clone its globs and steps.
    workflows: Vec<Arc<Workflow>>,
    /// The policy sets every planned unit is checked against (compiled from the
    /// default branch's tree); none: no policy checks.
    pub policies: Vec<super::PolicyCheck>,
    /// What a policy is told of the pull request (`input.pull_request`); none for drift
    /// and the CLI.
    pub pull_request: Option<Arc<crate::policy::input::PullRequestFacts>>,
    /// How old a plan an apply names may be (`plan_ttl`; default 7 days).
    pub plan_ttl: crate::config::PlanTtl,
    /// The units an apply is limited to (`/apply <id> unit…`), closed under their
    /// dependencies in the plan; none: the whole plan.
    pub only: Option<std::collections::BTreeSet<crate::unit::UnitPath>>,
    /// The merge commit an apply after merge (`apply: on_merge`) runs at, instead of the
    /// head the plan was made at: each unit is planned again there and applied only if
    /// that plan equals the approved one, and what is left goes to a new plan of that
    /// commit. `None`: the plan's own head.
    pub merge_commit: Option<String>,
}

impl From<&RetryPolicy> for RunRules {
    fn from(retries: &RetryPolicy) -> RunRules {
        RunRules {
            retries: retries.clone(),
            ..RunRules::default()
        }
    }
}

impl From<RetryPolicy> for RunRules {
    fn from(retries: RetryPolicy) -> RunRules {
        (&retries).into()
    }
}

impl From<&RepoConfig> for RunRules {
    fn from(config: &RepoConfig) -> RunRules {
        RunRules {
            retries: config.retries.clone(),
            config: Some(Arc::new(config.clone())),
            pr: None,
            workflows: config.workflows.iter().cloned().map(Arc::new).collect(),
            policies: Vec::new(),
            pull_request: None,
            plan_ttl: config.plan_ttl,
            only: None,
            merge_commit: None,
        }
    }
}

impl RunRules {
    /// The workflow of `unit`, if one covers it.
    pub fn workflow(&self, unit: &UnitPath) -> Option<Arc<Workflow>> {
        let config = self.config.as_ref()?;
        let found = config.workflow_for(unit)?;
        let at = config
            .workflows
            .iter()
            .position(|w| std::ptr::eq(w, found))?;
        self.workflows.get(at).cloned()
    }

    /// With the policy sets to check every planned unit against.
    pub fn with_policies(mut self, policies: Vec<super::PolicyCheck>) -> RunRules {
        self.policies = policies;
        self
    }

    /// With what policies are told of the pull request.
    pub fn with_pull_request_facts(
        mut self,
        facts: crate::policy::input::PullRequestFacts,
    ) -> RunRules {
        self.pull_request = Some(Arc::new(facts));
        self
    }

    /// With the pull request's number.
    pub fn for_pull_request(mut self, number: u64) -> RunRules {
        self.pr = Some(number);
        self
    }

    /// An apply after merge, at `commit` (see [`RunRules::merge_commit`]).
    pub fn at_merge_commit(mut self, commit: &str) -> RunRules {
        self.merge_commit = Some(commit.to_string());
        self
    }

    /// An apply of only `units` of the plan; the rest goes to a new plan.
    pub fn only_units(
        mut self,
        units: std::collections::BTreeSet<crate::unit::UnitPath>,
    ) -> RunRules {
        self.only = Some(units);
        self
    }
}

/// What a unit's record says while a hook's steps are recorded with it.
#[derive(Clone, Copy)]
pub(super) struct Recording<'a> {
    pub status: crate::store::UnitStatus,
    pub detail: &'a str,
    pub plan: Option<&'a super::plan_run::UnitPlan>,
}

/// How a hook's steps went.
pub(super) enum HookEnd {
    /// Every step that ran passed or only warned (or none ran).
    Passed,
    /// A step failed: the unit fails with this reason.
    Failed(String),
}

/// The steps recorded so far, by unit: copied into every record of the unit.
pub(super) type StepsSoFar = std::sync::Mutex<BTreeMap<UnitPath, Vec<StepRecord>>>;

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// Runs the steps of `hook` for `target`'s unit, in order: each whose `when` matches
    /// how the unit's run has gone so far (`failed`, updated by each failing step), and
    /// not one a run of this same job already finished (`resume`). Each result is
    /// recorded with the unit as it lands, under `status`. `stdin` is the plan JSON, for
    /// the steps that ask for it.
    pub(super) async fn run_hook(
        &self,
        target: &PlanTarget,
        hook: Hook,
        mut failed: bool,
        stdin: Option<&[u8]>,
        record_as: Recording<'_>,
    ) -> HookEnd {
        let unit = &target.path;
        let Some(workflow) = self.rules.workflow(unit) else {
            return HookEnd::Passed;
        };
        let mut reason = None;
        for (index, step) in workflow.steps(hook).iter().enumerate() {
            if self.step_done(unit, hook, index) || !runs(step.when, failed) {
                continue;
            }
            let record = self.run_one(target, hook, index, step, stdin).await;
            let failed_now = record.status == StepStatus::Failed;
            if failed_now && reason.is_none() {
                reason = Some(record.failure());
            }
            failed |= failed_now;
            self.add_step(unit, record);
            // The unit's own reason stays first; a step's failure fills an empty one.
            let detail = match (&reason, record_as.detail) {
                (Some(why), "") => why.clone(),
                (_, detail) => detail.to_string(),
            };
            self.record(unit, record_as.status, detail, record_as.plan.cloned())
                .await;
        }
        match reason {
            Some(why) => HookEnd::Failed(why),
            None => HookEnd::Passed,
        }
    }

    async fn run_one(
        &self,
        target: &PlanTarget,
        hook: Hook,
        index: usize,
        step: &RunStep,
        stdin: Option<&[u8]>,
    ) -> StepRecord {
        let job = self.job(target);
        let vars = StepVars {
            results_file: match hook.is_post() {
                true => self.results_file(&job.work, hook).await,
                false => None,
            },
            ..self.step_vars.clone()
        };
        let call = StepCall {
            step,
            hook,
            vars: &vars,
            stdin: match step.stdin {
                crate::config::workflows::Stdin::PlanJson => stdin,
                crate::config::workflows::Stdin::None => None,
            },
        };
        let started = std::time::Instant::now();
        let result = self.executor.run_step(&job, call, &self.cancel).await;
        let (code, error, output, truncated, took) = match result {
            Ok(out) => (
                Some(out.code),
                String::new(),
                out.output,
                out.truncated,
                out.took,
            ),
            Err(e) => (None, e.to_string(), String::new(), false, started.elapsed()),
        };
        let ok = code == Some(0);
        let status = match (ok, step.ignore_errors) {
            (true, _) => StepStatus::Passed,
            (false, true) => StepStatus::Warned,
            (false, false) => StepStatus::Failed,
        };
        let visible = match step.visible_on {
            VisibleOn::Never => false,
            VisibleOn::Always => true,
            VisibleOn::Failure => !ok,
        };
        StepRecord {
            hook: hook.name().to_string(),
            index,
            name: step.name.clone(),
            status,
            code,
            error: self.paths.scrub(&crate::redact::redact(&error)),
            output: self.paths.scrub(&crate::redact::redact(&output)),
            truncated,
            visible,
            markdown: step.format == crate::config::workflows::Format::Markdown,
            took_ms: took.as_millis() as u64,
        }
    }

    /// Runs `unit`'s `post_apply` steps after its apply ended with `outcome` (those a run of
    /// this job already finished are not run again). A failed step leaves an applied unit
    /// applied (it is never applied again) but holds its dependents back, unless it ignores
    /// errors: then it is a warning.
    pub(super) async fn post_apply(&self, unit: &UnitPath, outcome: Outcome) -> Outcome {
        let Some(target) = self.targets.get(unit) else {
            return outcome;
        };
        let record = self
            .store
            .unit_records(&self.run_id)
            .await
            .ok()
            .and_then(|records| records.into_iter().find(|r| &r.unit == unit));
        let (status, detail, plan) = match &record {
            Some(r) => (
                r.status,
                r.detail.clone(),
                super::plan_run::UnitPlan::of_record(r),
            ),
            None => (UnitStatus::Failed, String::new(), None),
        };
        let failed = !matches!(outcome, Outcome::Done);
        let recording = Recording {
            status,
            detail: &detail,
            plan: plan.as_ref(),
        };
        match self
            .run_hook(target, Hook::PostApply, failed, None, recording)
            .await
        {
            HookEnd::Failed(why) if !failed => {
                let why = format!("applied, then {why}");
                self.record(unit, status, why.clone(), plan).await;
                Outcome::Failed(why)
            }
            _ => outcome,
        }
    }

    /// The steps of a pre hook (`pre_apply`, `pre_destroy`) before anything is applied, the
    /// unit recorded as planning with `plan` (its fresh plan, when made).
    pub(super) async fn pre_hook(
        &self,
        target: &PlanTarget,
        hook: Hook,
        plan: Option<&super::plan_run::UnitPlan>,
    ) -> HookEnd {
        let planning = Recording {
            status: crate::store::UnitStatus::Planning,
            detail: "",
            plan,
        };
        self.run_hook(target, hook, false, None, planning).await
    }

    /// Whether step `index` of `hook` already finished for `unit` in this job.
    fn step_done(&self, unit: &UnitPath, hook: Hook, index: usize) -> bool {
        lock(&self.steps)
            .get(unit)
            .is_some_and(|s| s.iter().any(|r| r.hook == hook.name() && r.index == index))
    }

    fn add_step(&self, unit: &UnitPath, record: StepRecord) {
        lock(&self.steps)
            .entry(unit.clone())
            .or_default()
            .push(record);
    }

    /// The steps recorded for `unit` so far.
    pub(super) fn steps_of(&self, unit: &UnitPath) -> Vec<StepRecord> {
        lock(&self.steps).get(unit).cloned().unwrap_or_default()
    }

    /// Forgets `unit`'s steps: its plan starts again from the first step.
    pub(super) fn clear_steps(&self, unit: &UnitPath) {
        lock(&self.steps).remove(unit);
    }

    /// Every unit's result so far as JSON, in a file of the unit's private directory a
    /// post step may read (`CASCADE_RESULTS_FILE`): unit, status, detail, counts.
    async fn results_file(&self, work: &std::path::Path, hook: Hook) -> Option<PathBuf> {
        let records = self.store.unit_records(&self.run_id).await.ok()?;
        let results: Vec<serde_json::Value> = records.iter().map(result_json).collect();
        let text = serde_json::to_vec_pretty(&results).ok()?;
        let path = work.join(format!("results-{}.json", hook.name()));
        write_private(work, &path, &text).ok()?;
        Some(path)
    }
}

/// Writes `text` to `path` in `dir` (made 0700 if missing), readable by cascade only.
fn write_private(
    dir: &std::path::Path,
    path: &std::path::Path,
    text: &[u8],
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text)
}

fn result_json(record: &UnitRecord) -> serde_json::Value {
    serde_json::json!({
        "unit": record.unit.as_str(),
        "status": record.status.as_str(),
        "detail": record.detail,
        "counts": record.summary.as_ref().map(|s| &s.counts),
        "fingerprint": record.summary.as_ref().map(|s| s.fingerprint.as_str()),
    })
}

/// Whether a destroy's fresh plan, made after its `pre_destroy` steps, destroys only part of
/// what was approved and nothing else: the steps took the rest out of its state (platctl's
/// `state_purge`), so applying it destroys less than the reviewer approved, never more.
pub(super) fn purged(
    fresh: &crate::plan::PlanSummary,
    approved: &crate::plan::PlanSummary,
) -> bool {
    let approved: std::collections::BTreeSet<(&str, &[String])> = approved
        .resources
        .iter()
        .map(|r| (r.address.as_str(), r.actions.as_slice()))
        .collect();
    fresh.resources.len() < approved.len()
        && fresh.outputs.iter().all(|o| o.action == "delete")
        && fresh.resources.iter().all(|r| {
            r.actions == ["delete"]
                && approved.contains(&(r.address.as_str(), r.actions.as_slice()))
        })
}

/// Whether a step with `when` runs once the unit's run has (`failed`) or has not failed.
fn runs(when: When, failed: bool) -> bool {
    match when {
        When::Success => !failed,
        When::Failure => failed,
        When::Always => true,
    }
}

/// The steps each unit of `previous` recorded: what a resumed run starts from.
pub(super) fn previous_steps(previous: &BTreeMap<UnitPath, UnitRecord>) -> StepsSoFar {
    std::sync::Mutex::new(
        previous
            .iter()
            .filter(|(_, r)| !r.steps.is_empty())
            .map(|(u, r)| (u.clone(), r.steps.clone()))
            .collect(),
    )
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Counts, Fingerprint, PlanSummary, ResourceChange};

    fn plan(changes: &[(&str, &str)]) -> PlanSummary {
        PlanSummary {
            counts: Counts::default(),
            resources: changes
                .iter()
                .map(|(address, action)| ResourceChange {
                    address: address.to_string(),
                    actions: vec![action.to_string()],
                    forced_by: Vec::new(),
                })
                .collect(),
            outputs: Vec::new(),
            fingerprint: Fingerprint::empty(),
        }
    }

    #[test]
    fn a_destroy_purged_of_some_resources_destroys_less_and_nothing_else() {
        let approved = plan(&[("a.realm", "delete"), ("a.other", "delete")]);
        assert!(purged(&plan(&[("a.other", "delete")]), &approved));
        assert!(purged(&plan(&[]), &approved), "everything purged");
        // Not less: the same plan is the fingerprint's business, not the purge rule's.
        assert!(!purged(&approved.clone(), &approved));
        // Something the reviewer did not approve.
        assert!(!purged(&plan(&[("a.new", "delete")]), &approved));
        assert!(!purged(&plan(&[("a.other", "create")]), &approved));
    }

    #[test]
    fn when_picks_steps_by_how_the_run_has_gone() {
        assert!(runs(When::Success, false) && !runs(When::Success, true));
        assert!(!runs(When::Failure, false) && runs(When::Failure, true));
        assert!(runs(When::Always, false) && runs(When::Always, true));
    }
}
