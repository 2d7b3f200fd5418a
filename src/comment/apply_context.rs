//! What `apply.md.hbs` sees: the apply result's render context, built from the
//! [`ApplyView`]. Each unit's status, what its apply did ("1 added, 1 output"), how long it
//! took, the end of its output, and for a plan that changed since approval, why and how.
//! A pull request's text is handed over raw on one line, or for a fenced block, as the
//! plan context does (`view.rs`).

use super::view::{
    ApplyOutcome, ApplyStatus, ApplyView, PlanContext, block_text, failure_line, line, plural,
    reason_parts,
};
use crate::forge::Spelling;
use crate::inert::fence_for;
use crate::plan::Counts;
use serde::Serialize;

/// What `apply.md.hbs` sees.
#[derive(Serialize)]
pub(super) struct ApplyContext {
    plan_id: String,
    outcome: ApplyOutcome,
    /// Non-zero counts by status, in a fixed order: `{count, label}`.
    tally: Vec<Tally>,
    units: Vec<ApplyUnitContext>,
    /// The new plan's context; `null` unless the plan changed since approval.
    new_plan: Option<PlanContext>,
    /// As in [`PlanContext`].
    command_prefix: String,
    change_request: String,
    /// For an apply after merge: the merge commit it ran at (short); empty otherwise.
    merge_commit: String,
}

#[derive(Serialize)]
struct ChangeContext {
    upstream: Vec<String>,
    difference: String,
}

#[derive(Serialize)]
struct Tally {
    count: usize,
    label: &'static str,
}

#[derive(Serialize)]
struct ApplyUnitContext {
    path: String,
    status: ApplyStatus,
    destroy: bool,
    /// "1 added, 2 changed, 1 destroyed, 1 output" for an applied unit (cascade's words),
    /// else empty.
    applied: String,
    /// "4.2 s", "1 min 5 s"; empty when not timed.
    took: String,
    /// The end of its apply's output, for a fenced block; empty when none.
    output: String,
    /// For a unit whose plan changed since approval: `{upstream [path], difference}`
    /// (difference empty when it cannot be shown), else null.
    since_approval: Option<ChangeContext>,
    /// First line of the detail (one line, cut at [`ONE_LINE_MAX`]), for a code span; may
    /// be empty.
    reason: String,
    /// The whole detail when it does not fit on one line, else empty.
    detail: String,
    fence: String,
    /// As in [`ProblemContext`].
    see_check: bool,
    /// Its apply-phase workflow steps that show.
    steps: Vec<super::steps::StepContext>,
}

impl ApplyContext {
    /// The new plan shown inside the result, if any.
    pub(super) fn new_plan_mut(&mut self) -> Option<&mut PlanContext> {
        self.new_plan.as_mut()
    }
}

/// "1 added, 2 changed, 1 destroyed, 1 output": what an apply did, non-zero parts only.
fn applied_text((counts, outputs): (Counts, usize)) -> String {
    let mut parts: Vec<String> = [
        (counts.add, "added"),
        (counts.change, "changed"),
        (counts.replace, "replaced"),
        (counts.destroy, "destroyed"),
        (counts.import, "imported"),
        (counts.moved, "moved"),
        (counts.forget, "forgotten"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, verb)| format!("{n} {verb}"))
    .collect();
    if outputs > 0 {
        parts.push(plural(outputs, "output"));
    }
    parts.join(", ")
}

/// "0.4 s", "12 s", "3 min 5 s".
fn took_text(took: std::time::Duration) -> String {
    let secs = took.as_secs_f64();
    match took.as_secs() {
        0..10 => format!("{secs:.1} s"),
        10..60 => format!("{} s", took.as_secs()),
        s => format!("{} min {} s", s / 60, s % 60),
    }
}

impl ApplyContext {
    /// The context for `view`; `logs_in_check`: see [`super::Comments::logs_in_check`].
    pub(super) fn new(view: &ApplyView, spelling: &Spelling, logs_in_check: bool) -> ApplyContext {
        // (status, destroyed unit?, label): an applied destroy is "destroyed".
        let order = [
            (ApplyStatus::Applied, Some(false), "applied"),
            (ApplyStatus::Applied, Some(true), "destroyed"),
            (ApplyStatus::Unchanged, None, "unchanged"),
            (
                ApplyStatus::ChangedSinceApproval,
                None,
                "changed since approval",
            ),
            (ApplyStatus::Failed, None, "failed"),
            (ApplyStatus::Skipped, None, "skipped"),
        ];
        let tally = order
            .iter()
            .map(|&(status, destroy, label)| Tally {
                count: view
                    .units
                    .iter()
                    .filter(|u| u.status == status && destroy.is_none_or(|d| d == u.destroy))
                    .count(),
                label,
            })
            .filter(|t| t.count > 0)
            .collect();
        let mut budget = super::steps::StepBudget::default();
        let mut steps: std::collections::BTreeMap<&str, Vec<super::steps::StepContext>> = view
            .steps
            .iter()
            .map(|u| (u.unit.as_str(), budget.contexts(&u.steps)))
            .collect();
        ApplyContext {
            plan_id: line(&view.plan_id),
            merge_commit: view
                .merge_commit
                .as_deref()
                .map(|c| line(&c.chars().take(7).collect::<String>()))
                .unwrap_or_default(),
            outcome: view.outcome,
            tally,
            units: view
                .units
                .iter()
                .map(|u| {
                    let see_check = logs_in_check && u.status == ApplyStatus::Failed;
                    let (reason, detail, fence) = if see_check {
                        (failure_line(&u.detail), String::new(), fence_for(""))
                    } else {
                        reason_parts(&u.detail)
                    };
                    ApplyUnitContext {
                        path: line(&u.path),
                        status: u.status,
                        destroy: u.destroy,
                        applied: u.applied.map(applied_text).unwrap_or_default(),
                        took: u.duration.map(took_text).unwrap_or_default(),
                        output: block_text(&u.output.join("\n")),
                        since_approval: u.since_approval.as_ref().map(|c| ChangeContext {
                            upstream: c.upstream.iter().map(|u| line(u)).collect(),
                            difference: c.difference.clone().unwrap_or_default(),
                        }),
                        reason,
                        detail,
                        fence,
                        see_check,
                        steps: steps.remove(u.path.as_str()).unwrap_or_default(),
                    }
                })
                .collect(),
            new_plan: view
                .new_plan
                .as_ref()
                .map(|plan| PlanContext::new(plan, spelling, logs_in_check)),
            command_prefix: spelling.command_prefix.to_string(),
            change_request: spelling.change_request.to_string(),
        }
    }
}
