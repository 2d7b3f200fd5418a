//! Output of `cascade plan` and `cascade apply`: JSON for programs, and for
//! people the comment the bot would post, every part of it: the bot posts at
//! most `MAX_COMMENTS` and leaves rendered plans out past that, pointing here.

use crate::comment::Comments;
use crate::comment::{SourceView, apply_view, plan_view, totals};
use crate::engine::ApplyOutcome;
use crate::forge::github::COMMENT_LIMIT;
use crate::store::{PlanRecord, PlannedUnit};
use crate::unit::UnitPath;
use serde_json::{Value, json};

/// The plan; `policies`, the whole-plan sets' results (`input: plan`), only when it has
/// any, as each unit's own `policies`.
pub fn plan_json(plan: &PlanRecord) -> Value {
    let mut out = json!({
        "plan_id": plan.id,
        "head": plan.head,
        "base": plan.base,
        "units": plan.units.iter().map(unit_json).collect::<Vec<_>>(),
        "totals": totals(plan),
    });
    if !plan.policies.is_empty() {
        out["policies"] = json!(plan.policies);
    }
    out
}

/// One planned unit; `steps` and `policies` only when it has any.
fn unit_json(u: &PlannedUnit) -> Value {
    let mut unit = with_steps(
        json!({
            "path": u.path,
            "wave": u.wave,
            "status": u.status.as_str(),
            "destroy": u.destroy,
            "counts": u.summary.as_ref().map(|s| s.counts).unwrap_or_default(),
            "fingerprint": u.summary.as_ref().map(|s| s.fingerprint.to_string()),
            "detail": u.detail,
            "retried": u.retried,
            "diff": u.rendered.as_ref().map(|r| r.text()),
        }),
        &u.steps,
    );
    if !u.policies.is_empty() {
        unit["policies"] = json!(u.policies);
    }
    unit
}

pub fn apply_json(outcome: &ApplyOutcome) -> Value {
    json!({
        "plan_id": outcome.plan_id,
        "complete": outcome.complete(),
        "units": outcome.units.iter().map(|u| with_steps(json!({
            "path": u.path,
            "status": u.status.as_str(),
            "detail": u.detail,
            "retried": u.retried,
            "destroy": u.destroy,
            "applied": u.applied.as_ref().map(|s| json!({
                "counts": s.counts,
                "outputs": s.outputs.len(),
            })),
            "duration_ms": u.duration.map(|d| d.as_millis() as u64),
            "output": u.output,
            "since_approval": u.since_approval.as_ref().map(|c| json!({
                "applied_upstream": c.applied_upstream,
            })),
        }), &u.steps)).collect::<Vec<_>>(),
        "new_plan": outcome.new_plan.as_ref().map(plan_json),
    })
}

/// A unit's JSON with its workflow steps, when it ran any.
fn with_steps(mut unit: Value, steps: &[crate::store::StepRecord]) -> Value {
    if !steps.is_empty() {
        unit["steps"] = json!(steps);
    }
    unit
}

/// The comment the bot would post: every part, separated by a rule.
pub fn plan_markdown(
    plan: &PlanRecord,
    unresolved: &[(UnitPath, String)],
    sources: Vec<SourceView>,
) -> anyhow::Result<String> {
    let mut view = plan_view(plan, unresolved);
    view.sources = sources;
    let parts = Comments::new().plan_comment_within(&view, COMMENT_LIMIT, usize::MAX)?;
    Ok(parts.join("\n\n---\n\n") + "\n")
}

pub fn apply_markdown(
    outcome: &ApplyOutcome,
    unresolved: &[(UnitPath, String)],
) -> anyhow::Result<String> {
    let parts = Comments::new().apply_comment_within(
        &apply_view(outcome, unresolved),
        COMMENT_LIMIT,
        usize::MAX,
    )?;
    Ok(parts.join("\n\n---\n\n") + "\n")
}
