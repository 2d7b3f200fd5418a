//! Policy checks in a plan run: each planned unit's input document built while its plan
//! JSON is in memory (never written anywhere), every policy set of the run evaluated off
//! the async runtime, and the findings recorded with the unit.
//!
//! A set that cannot be evaluated (a limit, an error in a rule) is recorded with its error,
//! which blocks like a denial when the set blocks. Never decides whether an apply may go
//! ahead: the findings are data for the bot, the comment and the check.

use super::PlanTarget;
use super::plan_run::{RunCtx, UnitPlan};
use crate::config::policies::Enforcement;
use crate::exec::Executor;
use crate::policy::engine::Evaluator;
use crate::policy::input::{ChangeCounts, UnitFacts, unit_input};
use crate::store::{PolicyMessage, PolicyResult, RunStore};
use std::sync::Arc;

/// A policy set ready to evaluate: its compiled rules and what its denials do.
#[derive(Clone, Debug)]
pub struct PolicyCheck {
    pub evaluator: Arc<Evaluator>,
    pub enforcement: Enforcement,
}

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// Evaluates every policy set of the run for `target`'s unit, whose plan JSON is
    /// `json` and whose read plan is `plan`, and keeps the findings for its record.
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
        for check in &self.rules.policies {
            let evaluated = check.evaluator.clone().evaluate(input.clone()).await;
            let blocking = check.enforcement == Enforcement::Block;
            let set = check.evaluator.name().to_string();
            let message = |f: crate::policy::engine::Finding| PolicyMessage {
                rule: f.rule,
                message: f.message,
            };
            results.push(match evaluated {
                Ok(found) => PolicyResult {
                    set,
                    blocking,
                    denies: found.deny.into_iter().map(message).collect(),
                    warnings: found.warn.into_iter().map(message).collect(),
                    error: String::new(),
                },
                Err(e) => PolicyResult {
                    set,
                    blocking,
                    denies: Vec::new(),
                    warnings: Vec::new(),
                    error: e.to_string(),
                },
            });
        }
        self.policies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(target.path.clone(), results);
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
            })
        })
        .collect()
}
