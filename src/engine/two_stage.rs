//! A two-stage apply (`apply: {targets: [...]}` in a unit's workflow): the targets first,
//! on their own, then the rest, as platctl's `crd_two_stage` applies a Helm release's
//! CRDs before the resources that use them.
//!
//! Both stages stay bound to the reviewed plan. Before stage one the unit's fresh plan
//! already matched the approved fingerprint (`apply_run`); stage one plans only the
//! targets (`-target=`) and is applied only when every change it makes is one the reviewed
//! plan makes (same address, same actions); stage two plans again and is applied only
//! when it makes exactly the reviewed plan's other changes. Anything else stops the unit
//! with the difference named: a reviewer must see the new plan. Never applies a stage it
//! did not check.

use super::PlanTarget;
use super::plan_run::RunCtx;
use crate::exec::{ExecError, Executor};
use crate::plan::{PlanSummary, ResourceChange};
use crate::store::RunStore;
use std::collections::BTreeSet;

/// Why a staged apply stopped.
pub(super) enum StageError {
    /// A command failed (the apply itself may be retried when transient).
    Exec(ExecError),
    /// A stage's plan was not part of the reviewed plan: never retried.
    Changed(String),
}

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// Applies `target`'s unit, whose fresh plan is the approved `expected`: in one go, or
    /// in two stages when its workflow names `targets`.
    pub(super) async fn apply_unit(
        &self,
        target: &PlanTarget,
        expected: &PlanSummary,
    ) -> Result<(), StageError> {
        let job = self.job(target);
        let targets = job
            .workflow
            .as_ref()
            .map(|w| w.targets.clone())
            .unwrap_or_default();
        if targets.is_empty() || target.destroy {
            return self
                .executor
                .apply(&job, &self.shutdown)
                .await
                .map_err(StageError::Exec);
        }
        // Stage one: the targets alone, into a plan file of its own.
        let mut first = job.clone();
        first.plan_targets = targets;
        first.plan_file = job.plan_file.with_extension("stage1.tfplan");
        let staged = self.plan_summary(&first).await?;
        let extra = not_in(&staged.resources, &expected.resources);
        if !extra.is_empty() {
            return Err(StageError::Changed(format!(
                "stage one of the two-stage apply would change {}, which the reviewed plan does not; plan again",
                names(&extra)
            )));
        }
        if !staged.is_empty() {
            self.executor
                .apply(&first, &self.shutdown)
                .await
                .map_err(StageError::Exec)?;
        }
        // Stage two: everything else, planned again now that stage one is applied.
        let rest = self.plan_summary(&job).await?;
        let wanted: Vec<ResourceChange> = not_in(&expected.resources, &staged.resources)
            .into_iter()
            .cloned()
            .collect();
        let (missing, extra) = (
            not_in(&wanted, &rest.resources),
            not_in(&rest.resources, &wanted),
        );
        if !missing.is_empty() || !extra.is_empty() {
            let mut why = Vec::new();
            if !extra.is_empty() {
                why.push(format!("would also change {}", names(&extra)));
            }
            if !missing.is_empty() {
                why.push(format!("no longer changes {}", names(&missing)));
            }
            return Err(StageError::Changed(format!(
                "stage one of the two-stage apply was applied, and stage two {}, unlike the reviewed plan; plan again and approve the rest",
                why.join(" and ")
            )));
        }
        if rest.is_empty() {
            return Ok(());
        }
        self.executor
            .apply(&job, &self.shutdown)
            .await
            .map_err(StageError::Exec)
    }

    /// Plans `job` and reads only its summary.
    async fn plan_summary(&self, job: &crate::exec::UnitJob) -> Result<PlanSummary, StageError> {
        let mut json = self
            .executor
            .plan(job, &self.cancel)
            .await
            .map_err(StageError::Exec)?;
        let bytes = json.take_bytes();
        tokio::task::spawn_blocking(move || PlanSummary::from_show_json(&bytes))
            .await
            .map_err(|e| StageError::Changed(format!("reading a stage's plan stopped: {e}")))?
            .map_err(|e| StageError::Changed(e.to_string()))
    }
}

/// The changes of `a` that `b` does not make (same address and actions).
fn not_in<'a>(a: &'a [ResourceChange], b: &[ResourceChange]) -> Vec<&'a ResourceChange> {
    let b: BTreeSet<(&str, &[String])> = b
        .iter()
        .map(|r| (r.address.as_str(), r.actions.as_slice()))
        .collect();
    a.iter()
        .filter(|r| !b.contains(&(r.address.as_str(), r.actions.as_slice())))
        .collect()
}

/// "`a.b` (create), `c.d` (update)": at most five, then how many more.
fn names(changes: &[&ResourceChange]) -> String {
    let mut shown: Vec<String> = changes
        .iter()
        .take(5)
        .map(|r| format!("`{}` ({})", r.address, r.actions.join(", ")))
        .collect();
    if changes.len() > 5 {
        shown.push(format!("{} more", changes.len() - 5));
    }
    shown.join(", ")
}
