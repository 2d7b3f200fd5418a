//! Policy checks in a plan run: each planned unit's input document built while its plan
//! JSON is in memory (never written anywhere), every per-unit policy set evaluated off the
//! async runtime and the findings recorded with the unit; then, once every unit has
//! planned, the sets that ask for the whole plan (`input: plan`) evaluated once over all
//! the units' documents, their findings recorded with the plan.
//!
//! The units' documents are kept in memory only while a whole-plan set needs them, and
//! only for the units planned by this process: a resumed run's earlier units have none,
//! so a whole-plan set then records an error rather than judge part of the plan. A set
//! that cannot be evaluated (a limit, an error in a rule) is recorded with its error,
//! which blocks like a denial when the set blocks. Never decides whether an apply may go
//! ahead: the findings are data for the bot, the comment and the check.

use super::PlanTarget;
use super::plan_run::{RunCtx, UnitPlan, lock};
use super::steps::RunRules;
use crate::config::policies::{Enforcement, PolicyScope};
use crate::exec::Executor;
use crate::plan::PlanId;
use crate::policy::engine::{Evaluator, Findings};
use crate::policy::input::{ChangeCounts, UnitFacts, unit_input, whole_plan_input};
use crate::store::{PlannedUnit, PolicyMessage, PolicyResult, RunStore, UnitStatus};
use std::sync::Arc;

/// A policy set ready to evaluate: its compiled rules, what its denials do and what its
/// rules see as `input`.
#[derive(Clone, Debug)]
pub struct PolicyCheck {
    pub evaluator: Arc<Evaluator>,
    pub enforcement: Enforcement,
    /// `Unit`: evaluated for each planned unit; `Plan`: once for the whole plan.
    pub scope: PolicyScope,
}

impl PolicyCheck {
    /// The set's findings for `input`: in a child process under a memory ceiling when the
    /// executor has a policy worker (the server, the CLI), else on the blocking pool.
    pub async fn evaluate(
        &self,
        input: Arc<serde_json::Value>,
        worker: Option<&crate::exec::policy_worker::PolicyWorker>,
    ) -> Result<crate::policy::engine::Findings, crate::policy::engine::PolicyError> {
        match worker {
            Some(worker) => worker.evaluate(&self.evaluator, &input).await,
            None => self.evaluator.clone().evaluate(input).await,
        }
    }
}

impl PolicyCheck {
    /// The set's result: its findings, or why it could not be evaluated.
    fn result(&self, evaluated: Result<Findings, String>) -> PolicyResult {
        let message = |f: crate::policy::engine::Finding| PolicyMessage {
            rule: f.rule,
            message: f.message,
        };
        let (denies, warnings, error) = match evaluated {
            Ok(found) => (
                found.deny.into_iter().map(message).collect(),
                found.warn.into_iter().map(message).collect(),
                String::new(),
            ),
            Err(error) => (Vec::new(), Vec::new(), error),
        };
        PolicyResult {
            set: self.evaluator.name().to_string(),
            blocking: self.enforcement == Enforcement::Block,
            denies,
            warnings,
            error,
        }
    }
}

impl RunRules {
    /// The policy sets of `scope`, in `.cascade.yaml`'s order.
    fn checks_of(&self, scope: PolicyScope) -> impl Iterator<Item = &PolicyCheck> {
        self.policies.iter().filter(move |c| c.scope == scope)
    }

    /// Whether a set asks for the whole plan, so each unit's document must be kept.
    fn needs_whole_plan(&self) -> bool {
        self.checks_of(PolicyScope::Plan).next().is_some()
    }
}

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// Evaluates every per-unit policy set of the run for `target`'s unit, whose plan
    /// JSON is `json` and whose read plan is `plan`, and keeps the findings for its
    /// record; keeps the unit's document too when a set asks for the whole plan.
    pub(super) async fn check_policies(&self, target: &PlanTarget, json: &[u8], plan: &UnitPlan) {
        if self.rules.policies.is_empty() {
            return;
        }
        let document: serde_json::Value = match serde_json::from_slice(json) {
            Ok(document) => document,
            // Not reached: the plan was read from the same bytes.
            Err(_) => return,
        };
        let counts = &plan.summary.counts;
        let change = ChangeCounts {
            add: counts.add as usize,
            change: counts.change as usize,
            destroy: counts.destroy as usize,
            replace: counts.replace as usize,
            import: counts.import as usize,
            move_: counts.moved as usize,
            fingerprint: plan.summary.fingerprint.to_string(),
        };
        let facts = self.unit_facts(target);
        let pull_request = self.rules.pull_request.clone();
        let now = self.clock.now();
        // Walking a large plan for sensitive values is CPU work: off the async workers.
        let Ok(input) = tokio::task::spawn_blocking(move || {
            unit_input(
                &document,
                &facts,
                &change,
                pull_request.as_deref(),
                None,
                now,
            )
        })
        .await
        else {
            return;
        };
        let input = Arc::new(input);
        let mut results = Vec::new();
        for check in self.rules.checks_of(PolicyScope::Unit) {
            let evaluated = check
                .evaluate(input.clone(), self.executor.policy_worker())
                .await;
            results.push(check.result(evaluated.map_err(|e| e.to_string())));
        }
        lock(&self.policies).insert(target.path.clone(), results);
        if self.rules.needs_whole_plan() {
            // Every evaluation has ended and dropped its share: no copy is made.
            let input = Arc::try_unwrap(input).unwrap_or_else(|shared| (*shared).clone());
            lock(&self.documents).insert(target.path.clone(), input);
        }
    }

    /// Evaluates the run's whole-plan sets once over the documents of `units` that
    /// planned (in plan order), under the plan's id, and gives their results; none when
    /// no set asks for the whole plan. The kept documents are dropped here.
    pub(super) async fn check_whole_plan(
        &self,
        units: &[PlannedUnit],
        plan_id: &PlanId,
    ) -> Vec<PolicyResult> {
        let mut kept = std::mem::take(&mut *lock(&self.documents));
        if !self.rules.needs_whole_plan() {
            return Vec::new();
        }
        let planned: Vec<&PlannedUnit> = units
            .iter()
            .filter(|u| u.status == UnitStatus::Planned)
            .collect();
        let missing = planned
            .iter()
            .filter(|u| !kept.contains_key(&u.path))
            .count();
        if missing > 0 {
            // Their plan JSON is gone with the process that planned them: judging the
            // rest alone could let through what the whole plan would not.
            let why = format!(
                "the whole plan was not checked: {missing} of its {} planned units were \
                 planned by an interrupted earlier attempt and their plans are no longer in \
                 memory; plan again to check it",
                planned.len()
            );
            return self
                .rules
                .checks_of(PolicyScope::Plan)
                .map(|check| check.result(Err(why.clone())))
                .collect();
        }
        let documents = planned
            .iter()
            .filter_map(|u| kept.remove(&u.path))
            .collect();
        drop(kept);
        let input = Arc::new(whole_plan_input(
            documents,
            self.rules.pull_request.as_deref(),
            Some(plan_id.as_str()),
            self.clock.now(),
        ));
        let mut results = Vec::new();
        for check in self.rules.checks_of(PolicyScope::Plan) {
            let evaluated = check
                .evaluate(input.clone(), self.executor.policy_worker())
                .await;
            results.push(check.result(evaluated.map_err(|e| e.to_string())));
        }
        results
    }

    /// What a policy is told of the unit's place: its tool, environment, the units of this
    /// run it depends on and that depend on it, its wave.
    fn unit_facts(&self, target: &PlanTarget) -> UnitFacts {
        let dependents = self
            .targets
            .values()
            .filter(|t| t.deps.contains(&target.path))
            .map(|t| t.path.to_string())
            .collect();
        UnitFacts {
            path: target.path.to_string(),
            environment: self
                .rules
                .config
                .as_ref()
                .and_then(|c| c.environment_of(&target.path))
                .map(|e| e.name.clone()),
            tool: format!("{:?}", target.tool).to_lowercase(),
            dependencies: target.deps.iter().map(|d| d.to_string()).collect(),
            dependents,
            wave: target.wave,
            reads: Vec::new(),
        }
    }
}

/// Every set of `sets`, compiled from the tree at `root` (the repository root, or the
/// default branch's policy directories written out): the first set that cannot be read
/// or compiled is named with its reason.
pub fn compile_sets(
    root: &std::path::Path,
    sets: &[crate::config::policies::PolicySet],
) -> anyhow::Result<Vec<PolicyCheck>> {
    use anyhow::Context as _;
    sets.iter()
        .map(|set| {
            let files = crate::policy::engine::load_set(root, &set.path)
                .with_context(|| format!("cannot read policy set `{}`", set.name))?;
            let evaluator = Evaluator::new(&set.name, &files, &set.namespaces)
                .with_context(|| format!("cannot compile policy set `{}`", set.name))?;
            Ok(PolicyCheck {
                evaluator: Arc::new(evaluator),
                enforcement: set.enforcement,
                scope: set.scope,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::engine::PolicyFile;

    fn check(name: &str, scope: PolicyScope) -> PolicyCheck {
        let file = PolicyFile {
            path: format!("{name}/main.rego"),
            text: "package main\n\ndeny contains \"always\" if true\n".into(),
        };
        PolicyCheck {
            evaluator: Arc::new(Evaluator::new(name, &[file], &[]).unwrap()),
            enforcement: Enforcement::Block,
            scope,
        }
    }

    #[test]
    fn a_unit_is_checked_against_its_sets_only_and_documents_are_kept_for_a_whole_plan_set() {
        let rules = RunRules::default().with_policies(vec![
            check("guard", PolicyScope::Unit),
            check("spread", PolicyScope::Plan),
            check("tags", PolicyScope::Unit),
        ]);
        let names = |scope| {
            rules
                .checks_of(scope)
                .map(|c| c.evaluator.name().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(PolicyScope::Unit), ["guard", "tags"]);
        assert_eq!(names(PolicyScope::Plan), ["spread"]);
        assert!(rules.needs_whole_plan());
        let per_unit = RunRules::default().with_policies(vec![check("guard", PolicyScope::Unit)]);
        assert!(
            !per_unit.needs_whole_plan(),
            "no document is kept without a whole-plan set"
        );
    }

    #[test]
    fn a_set_that_could_not_be_evaluated_keeps_its_reason_and_blocks_if_it_blocks() {
        let result = check("spread", PolicyScope::Plan).result(Err("stopped".into()));
        assert_eq!(result.set, "spread");
        assert_eq!(result.error, "stopped");
        assert!(result.blocks());
    }
}
