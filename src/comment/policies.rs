//! The plan comment's "Policies" section: per unit, and for the whole plan (a set with
//! `input: plan`, labelled "whole plan" in cascade's words), each blocking set's failing
//! rules (their messages as inert Markdown), who approved them for this plan id, and the
//! warnings collapsed. Messages are written by the default branch's policy authors but
//! quote what a pull request planned, so they go through `inert::markdown`, bounded.
//! Never decides what blocks: each result says so (`PolicyResult::blocks`).

use crate::store::{PlanRecord, PolicyApproval, PolicyResult};
use serde::Serialize;

/// How the comment names the whole plan where it names a unit elsewhere.
pub const WHOLE_PLAN: &str = "whole plan";

/// The most of one message the comment shows.
const MESSAGE_SHOWN: usize = 2 << 10;
/// The most messages shown per unit and set; the rest are counted.
const MESSAGES_PER_SET: usize = 10;

/// One unit's findings from one policy set, or the whole plan's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PolicyView {
    /// The unit's path; `None` for a set that judged the whole plan.
    pub unit: Option<String>,
    pub set: String,
    /// Its findings stop the apply (a blocking set with a denial or an error).
    pub blocks: bool,
    /// Owners who approved this set's failures for this plan id.
    pub approved_by: Vec<String>,
    pub denies: Vec<String>,
    pub warnings: Vec<String>,
    /// Why the set could not be evaluated, else empty.
    pub error: String,
}

/// The views of `results` by unit, with the approvals recorded for the plan.
pub fn policy_views<'a>(
    results: impl Iterator<Item = (&'a str, &'a [PolicyResult])>,
    approvals: &[PolicyApproval],
) -> Vec<PolicyView> {
    views(
        results.flat_map(|(unit, sets)| sets.iter().map(move |r| (Some(unit), r))),
        approvals,
    )
}

/// The views of every finding of `plan`: the whole plan's first, then each unit's in
/// plan order, with the approvals recorded for the plan.
pub fn plan_policy_views(plan: &PlanRecord, approvals: &[PolicyApproval]) -> Vec<PolicyView> {
    views(
        plan.policy_results()
            .map(|(unit, r)| (unit.map(|u| u.as_str()), r)),
        approvals,
    )
}

/// A view for each result that found something.
fn views<'a>(
    results: impl Iterator<Item = (Option<&'a str>, &'a PolicyResult)>,
    approvals: &[PolicyApproval],
) -> Vec<PolicyView> {
    results
        .filter(|(_, r)| !r.denies.is_empty() || !r.warnings.is_empty() || !r.error.is_empty())
        .map(|(unit, r)| PolicyView {
            unit: unit.map(str::to_string),
            set: r.set.clone(),
            blocks: r.blocks(),
            approved_by: approvals
                .iter()
                .filter(|a| a.set == r.set)
                .map(|a| a.user.clone())
                .collect(),
            denies: r.denies.iter().map(|m| m.message.clone()).collect(),
            warnings: r.warnings.iter().map(|m| m.message.clone()).collect(),
            error: r.error.clone(),
        })
        .collect()
}

/// What the template sees of one unit's findings from one set.
#[derive(Clone, Debug, Serialize)]
pub(super) struct PolicyContext {
    /// The unit's path, or "whole plan" (cascade's words) when `whole_plan`.
    unit: String,
    /// The set judged the whole plan (`input: plan`): no unit to name.
    whole_plan: bool,
    set: String,
    blocks: bool,
    /// "approved by carol for this plan", one line, cascade's words; empty when not.
    approved: String,
    /// Each message rendered inert (cascade-made Markdown, one list item each).
    denies: Vec<String>,
    warnings: Vec<String>,
    /// "3 more" when messages were left out.
    more: String,
    error: String,
}

impl PolicyContext {
    pub(super) fn new(view: &PolicyView) -> PolicyContext {
        let shown = |messages: &[String]| -> Vec<String> {
            messages
                .iter()
                .take(MESSAGES_PER_SET)
                .map(|m| one_item(&crate::inert::markdown(m, MESSAGE_SHOWN)))
                .collect()
        };
        let left = view.denies.len().saturating_sub(MESSAGES_PER_SET)
            + view.warnings.len().saturating_sub(MESSAGES_PER_SET);
        PolicyContext {
            unit: super::view::line(view.unit.as_deref().unwrap_or(WHOLE_PLAN)),
            whole_plan: view.unit.is_none(),
            set: super::view::line(&view.set),
            blocks: view.blocks,
            approved: match view.approved_by.as_slice() {
                [] => String::new(),
                users => format!(
                    "approved by {} for this plan",
                    users
                        .iter()
                        .map(|u| crate::inert::code(u))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            denies: shown(&view.denies),
            warnings: shown(&view.warnings),
            more: match left {
                0 => String::new(),
                n => format!("{n} more"),
            },
            error: super::view::failure_line(&view.error),
        }
    }
}

/// The most policy files a pull request edits that the comment names; the rest are counted.
const POLICY_EDITS_SHOWN: usize = 5;

/// What the plan template sees of the Policies section (flattened into its context).
#[derive(Serialize)]
pub(super) struct PolicySection {
    /// Findings that block the apply, then those that do not.
    policy_blocks: Vec<PolicyContext>,
    policy_notes: Vec<PolicyContext>,
    /// Some blocking finding is not approved yet: the template says how to approve it.
    policy_unapproved: bool,
    /// The policy files the pull request changes (first few), and how many more.
    policy_edits: Vec<String>,
    policy_edits_more: usize,
}

impl PolicySection {
    pub(super) fn new(views: &[PolicyView], edits: &[String]) -> PolicySection {
        let contexts = |blocks: bool| {
            views
                .iter()
                .filter(|p| p.blocks == blocks)
                .map(PolicyContext::new)
                .collect()
        };
        PolicySection {
            policy_blocks: contexts(true),
            policy_notes: contexts(false),
            policy_unapproved: views.iter().any(|p| p.blocks && p.approved_by.is_empty()),
            policy_edits: edits
                .iter()
                .take(POLICY_EDITS_SHOWN)
                .map(|f| super::view::line(f))
                .collect(),
            policy_edits_more: edits.len().saturating_sub(POLICY_EDITS_SHOWN),
        }
    }
}

/// Inert Markdown made to sit in one list item: its lines indented under the bullet.
fn one_item(markdown: &str) -> String {
    markdown.lines().collect::<Vec<_>>().join("\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::PolicyMessage;

    fn result(set: &str, blocking: bool, denies: &[&str], warnings: &[&str]) -> PolicyResult {
        let messages = |list: &[&str], rule: &str| {
            list.iter()
                .map(|m| PolicyMessage {
                    rule: rule.into(),
                    message: m.to_string(),
                })
                .collect()
        };
        PolicyResult {
            set: set.into(),
            blocking,
            denies: messages(denies, "data.main.deny"),
            warnings: messages(warnings, "data.main.warn"),
            error: String::new(),
        }
    }

    #[test]
    fn blocking_findings_name_their_approvers_and_clean_sets_are_left_out() {
        let results = [
            result("prod-guard", true, &["no destroy in prod"], &[]),
            result("costs", false, &[], &["big instance"]),
            result("tags", true, &[], &[]),
        ];
        let approvals = [PolicyApproval {
            set: "prod-guard".into(),
            user: "carol".into(),
            at: 1,
        }];
        let views = policy_views([("prod/db", &results[..])].into_iter(), &approvals);
        assert_eq!(views.len(), 2, "{views:?}");
        assert!(views[0].blocks);
        assert_eq!(views[0].approved_by, ["carol"]);
        assert!(!views[1].blocks, "a warn set blocks nothing");
        let context = PolicyContext::new(&views[0]);
        assert_eq!(context.approved, "approved by `carol` for this plan");
    }

    #[test]
    fn the_whole_plans_findings_come_first_named_in_cascades_words() {
        use crate::store::{PlanKey, PlanRecord, PlanStatus};
        let plan = PlanRecord {
            id: crate::plan::PlanId::from_stored("3f9a2c1b7d4e".into()),
            repo: PlanKey::from_stored("acme/infra#7"),
            head: "h".into(),
            base: "b".into(),
            status: PlanStatus::Current,
            run_id: "r".into(),
            units: Vec::new(),
            created_at: 0,
            policies: vec![result("spread", true, &["3 destroys"], &[])],
        };
        let views = plan_policy_views(&plan, &[]);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].unit, None);
        let context = PolicyContext::new(&views[0]);
        assert!(context.whole_plan);
        assert_eq!(context.unit, WHOLE_PLAN);
    }

    #[test]
    fn a_message_is_inert_and_bounded() {
        let long = format!(
            "@acme/admins see #12 [x](https://evil) {}",
            "y".repeat(5000)
        );
        let view = &policy_views(
            [("a", &[result("s", true, &[long.as_str()], &[])][..])].into_iter(),
            &[],
        )[0];
        let context = PolicyContext::new(view);
        let shown = &context.denies[0];
        assert!(shown.len() <= MESSAGE_SHOWN + 64, "{}", shown.len());
        assert!(!shown.contains("@acme/admins"), "{shown}");
        assert!(!shown.contains("](https://evil)"), "{shown}");
    }
}
