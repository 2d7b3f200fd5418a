//! What the `cascade` check run says about a plan. It is green (`success`) only when
//! every affected unit was planned and nothing waits for review; otherwise its title
//! says why: units that failed or were skipped, unresolved units left unplanned
//! (`failure`: someone must fix something), units locked by other pull requests, or a
//! plan to approve (`action_required`). A pull request whose units are all locked is
//! never "no changes".

use crate::comment::{PlanView, failure_logs_text, step_outputs_text};
use crate::engine::LogTail;
use crate::forge::github::CHECK_TEXT_LIMIT;
use crate::forge::{CheckOutput, CheckStatus, Spelling};
use crate::store::{Lock, PlanRecord, UnitStatus};
use crate::unit::UnitPath;
use std::collections::BTreeSet;

/// The check for `plan` as `view` shows it, with the units other pull requests hold
/// (`held`) and the units discovery could not resolve, worded for the forge of `spelling`.
pub fn plan_check(
    plan: &PlanRecord,
    view: &PlanView,
    held: &[Lock],
    unresolved: &[(UnitPath, String)],
    spelling: &Spelling,
) -> CheckOutput {
    let count = |status: UnitStatus| plan.units.iter().filter(|u| u.status == status).count();
    let failed = count(UnitStatus::Failed);
    let skipped = plan.units.len() - failed - count(UnitStatus::Planned);
    let planned: BTreeSet<&UnitPath> = plan.units.iter().map(|u| &u.path).collect();
    let locked_units: BTreeSet<&UnitPath> = held.iter().map(|l| &l.unit).collect();
    let unplanned = unresolved
        .iter()
        .filter(|(u, _)| !planned.contains(u) && !locked_units.contains(u))
        .count();
    let holders: BTreeSet<u64> = held.iter().map(|l| l.pr).collect();

    let mut problems = Vec::new();
    if failed > 0 {
        problems.push(format!("{} failed to plan", units(failed)));
    }
    if skipped > 0 {
        problems.push(format!("{} not planned (skipped)", units(skipped)));
    }
    if unplanned > 0 {
        problems.push(format!("{} unresolved and not planned", units(unplanned)));
    }
    let must_fix = !problems.is_empty();
    if !held.is_empty() {
        let by: Vec<String> = holders
            .iter()
            .map(|pr| format!("{}{pr}", spelling.ref_sigil))
            .collect();
        problems.push(format!(
            "{} locked by {}",
            units(locked_units.len()),
            by.join(", ")
        ));
    }
    // Units whose apply a policy set stops until one of its owners approves.
    let unapproved = || {
        view.policies
            .iter()
            .filter(|p| p.blocks && p.approved_by.is_empty())
    };
    let blocked: BTreeSet<&str> = unapproved().filter_map(|p| p.unit.as_deref()).collect();
    let what_blocks = if unapproved().any(|p| p.unit.is_none()) {
        "the whole plan".to_string()
    } else {
        units(blocked.len())
    };
    let blocks = unapproved().next().is_some();
    if blocks {
        problems.push(format!("policies block {what_blocks}"));
    }
    let mut summary = format!(
        "Plan `{}`: {} planned.",
        plan.id,
        units(count(UnitStatus::Planned))
    );
    for problem in &problems {
        summary.push_str(&format!("\n- {problem}"));
    }
    let (status, title) = if must_fix {
        (
            CheckStatus::Failure,
            format!("cascade: {}", problems.join(", ")),
        )
    } else if !held.is_empty() {
        summary.push_str(&format!(
            "\n\ncascade plans this {} again by itself once those locks are released.",
            spelling.change_request
        ));
        let mut title = format!("cascade: {}", problems.join(", "));
        if view.needs_approval && !blocks {
            title.push_str(&format!(
                "; {} applies the rest",
                spelling.command(&format!("apply {}", plan.id))
            ));
        }
        (CheckStatus::ActionRequired, title)
    } else if blocks {
        (
            CheckStatus::ActionRequired,
            format!(
                "cascade: policies block {what_blocks}; an owner can comment {}",
                spelling.command(&format!("approve-policies {}", plan.id))
            ),
        )
    } else if view.needs_approval {
        (CheckStatus::ActionRequired, apply_title(&plan.id, spelling))
    } else {
        (CheckStatus::Success, "cascade: no changes".to_string())
    };
    with_policy_findings(&mut summary, &view.policies);
    CheckOutput::new(status, title, summary)
}

/// The title of a plan's check that waits only for `/apply <id>`.
fn apply_title(id: &crate::plan::PlanId, spelling: &Spelling) -> String {
    format!(
        "cascade: comment {} to apply",
        spelling.command(&format!("apply {id}"))
    )
}

/// `true` when `check` (of plan `id`) waits only for `/apply <id>`: nothing failed, is
/// locked or blocked by a policy.
pub fn awaits_apply(check: &CheckOutput, id: &crate::plan::PlanId, spelling: &Spelling) -> bool {
    check.status == CheckStatus::ActionRequired && check.title == apply_title(id, spelling)
}

/// The most of one policy message the check's summary shows.
const POLICY_MESSAGE_SHOWN: usize = 1 << 10;
/// The most policy findings the check's summary lists; the rest are counted.
const POLICY_FINDINGS_SHOWN: usize = 50;

/// Lists every policy finding under "Policies" in a check's summary: set, unit, whether
/// it blocks (or who approved it), and each message, inert and bounded.
fn with_policy_findings(summary: &mut String, policies: &[crate::comment::PolicyView]) {
    if policies.is_empty() {
        return;
    }
    summary.push_str("\n\n### Policies\n");
    let mut shown = 0;
    let mut total = 0;
    for view in policies {
        let state = if !view.blocks {
            "warns".to_string()
        } else if view.approved_by.is_empty() {
            "blocks the apply".to_string()
        } else {
            format!(
                "approved by {}",
                view.approved_by
                    .iter()
                    .map(|u| crate::inert::code(u))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut lines = Vec::new();
        if !view.error.is_empty() {
            lines.push(format!(
                "could not be evaluated: {}",
                crate::inert::code(&view.error)
            ));
        }
        lines.extend(view.denies.iter().map(|m| m.to_string()));
        lines.extend(view.warnings.iter().map(|m| format!("⚠️ {m}")));
        total += lines.len();
        if shown >= POLICY_FINDINGS_SHOWN {
            continue;
        }
        summary.push_str(&format!(
            "\n- {} — {}: {state}",
            crate::inert::code(view.unit.as_deref().unwrap_or(crate::comment::WHOLE_PLAN)),
            crate::inert::code(&view.set)
        ));
        for line in lines.into_iter().take(POLICY_FINDINGS_SHOWN - shown) {
            shown += 1;
            let shown_line = if line.starts_with("could not be evaluated") {
                line
            } else {
                crate::inert::markdown(&line, POLICY_MESSAGE_SHOWN)
                    .lines()
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            summary.push_str(&format!("\n  - {shown_line}"));
        }
    }
    if total > shown {
        summary.push_str(&format!(
            "\n\n{} more findings are in the plan comment.",
            total - shown
        ));
    }
}

/// Adds the end of each failed unit's log (`logs`, of the `failed` units that `what`:
/// "failed to plan") to a check, as its text within GitHub's limit, and says so in the
/// summary.
pub fn with_failure_logs(check: &mut CheckOutput, logs: &[LogTail], failed: usize, what: &str) {
    check.text = failure_logs_text(logs, failed, what, CHECK_TEXT_LIMIT);
    if !check.text.is_empty() {
        check.summary.push_str(
            "\n\nThe last lines of each failed unit's log are below; the comment on the pull request lists the units.",
        );
    }
}

/// Adds every workflow step's output (`steps`: each unit's steps, in order) to a check's
/// text, after what it holds, within GitHub's limit: the whole output the comment shows
/// only part of.
pub fn with_step_outputs<'a>(
    check: &mut CheckOutput,
    steps: impl Iterator<Item = (&'a crate::unit::UnitPath, &'a [crate::store::StepRecord])>,
) {
    let tails: Vec<(String, LogTail)> = steps
        .flat_map(|(unit, steps)| steps.iter().map(move |s| (unit, s)))
        .filter(|(_, s)| !s.output.is_empty() || !s.error.is_empty())
        .map(|(unit, s)| {
            let verdict = match (s.status, s.code) {
                (crate::store::StepStatus::Passed, _) => "passed".to_string(),
                (_, Some(code)) => format!("failed with exit code {code}"),
                (_, None) => "did not finish".to_string(),
            };
            let heading = format!(
                "### {} — {} ({}): {verdict}\n\n",
                crate::inert::code(unit.as_str()),
                crate::inert::code(&s.name),
                s.hook
            );
            let text = if s.output.is_empty() {
                &s.error
            } else {
                &s.output
            };
            let tail = LogTail {
                unit: unit.to_string(),
                lines: text.lines().map(str::to_string).collect(),
                earlier: s.truncated,
            };
            (heading, tail)
        })
        .collect();
    if tails.is_empty() {
        return;
    }
    let room = CHECK_TEXT_LIMIT.saturating_sub(check.text.len() + 2);
    let text = step_outputs_text(tails.iter().map(|(h, t)| (h.clone(), t)), room);
    if text.is_empty() {
        return;
    }
    if !check.text.is_empty() {
        check.text.push_str("\n\n");
    }
    check.text.push_str(&text);
}

fn units(n: usize) -> String {
    format!("{n} unit{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comment::plan_view;
    use crate::plan::PlanId;
    use crate::store::PlannedUnit;

    fn unit(path: &str, status: UnitStatus) -> PlannedUnit {
        PlannedUnit {
            path: UnitPath::new(path),
            wave: 1,
            destroy: false,
            deps: vec![],
            tool: crate::unit::Tool::Terraform,
            init_args: vec![],
            stack: None,
            status,
            detail: String::new(),
            summary: None,
            rendered: None,
            retried: 0,
            steps: Vec::new(),
            policies: Vec::new(),
        }
    }

    fn plan(id: &str, units: Vec<PlannedUnit>) -> PlanRecord {
        PlanRecord::sample(PlanId::from_stored(id.into()), units)
    }

    fn lock(unit: &str, pr: u64) -> Lock {
        Lock {
            unit: UnitPath::new(unit),
            pr,
        }
    }

    fn verdict(plan: &PlanRecord, held: &[Lock], unresolved: &[(UnitPath, String)]) -> CheckOutput {
        plan_check(
            plan,
            &plan_view(plan, unresolved),
            held,
            unresolved,
            &Spelling::GITHUB,
        )
    }

    #[test]
    fn nothing_planned_and_nothing_held_is_green() {
        let v = verdict(&plan(PlanId::NO_CHANGES, vec![]), &[], &[]);
        assert_eq!(v.status, CheckStatus::Success);
        assert_eq!(v.title, "cascade: no changes");
    }

    #[test]
    fn every_unit_locked_is_never_no_changes() {
        let p = plan(PlanId::NO_CHANGES, vec![]);
        let v = verdict(&p, &[lock("dns", 1), lock("vpc", 1), lock("db", 3)], &[]);
        assert_eq!(v.status, CheckStatus::ActionRequired);
        assert_eq!(v.title, "cascade: 3 units locked by #1, #3");
        assert!(v.summary.contains("again by itself"), "{}", v.summary);
    }

    #[test]
    fn failures_and_skips_fail_the_check_with_the_reason() {
        let p = plan(
            "0123456789ab",
            vec![
                unit("vpc", UnitStatus::Failed),
                unit("db", UnitStatus::Skipped),
                unit("app", UnitStatus::Skipped),
                unit("dns", UnitStatus::Planned),
            ],
        );
        let v = verdict(&p, &[lock("cdn", 2)], &[]);
        assert_eq!(v.status, CheckStatus::Failure);
        assert_eq!(
            v.title,
            "cascade: 1 unit failed to plan, 2 units not planned (skipped), 1 unit locked by #2"
        );
    }

    #[test]
    fn an_unresolved_unit_left_unplanned_fails_the_check() {
        let p = plan(PlanId::NO_CHANGES, vec![unit("dns", UnitStatus::Planned)]);
        let unresolved = [
            (UnitPath::new("dns"), "unknown path".to_string()),
            (UnitPath::new("legacy"), "unknown path".to_string()),
        ];
        let v = verdict(&p, &[], &unresolved);
        assert_eq!(v.status, CheckStatus::Failure);
        assert_eq!(v.title, "cascade: 1 unit unresolved and not planned");
        // Planned although unresolved: nothing waits.
        let v = verdict(&p, &[], &unresolved[..1]);
        assert_eq!(v.status, CheckStatus::Success);
    }
}
