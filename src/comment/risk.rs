//! What a reviewer must see before anything else: the plan's one summary line ("8 to
//! replace, 16 to change in 24 of 32 units") and its destroys and replacements, each with
//! the attributes that force a replacement.
//!
//! Computed from the view model only (counts, resource labels, the attribute names the
//! plan summary kept); never reads a value. The pull request's text (unit paths, addresses,
//! attribute names) is handed over raw on one line, for the templates' inert helpers.

use super::view::{PlanView, UnitView, line, plural};
use crate::plan::Counts;
use serde::Serialize;

/// At most this many destroys and replacements are listed in the open; the rest are in a
/// collapsed block under them.
pub(super) const RISKS_SHOWN: usize = 10;

/// One resource a plan destroys or replaces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct RiskContext {
    pub unit: String,
    pub address: String,
    /// `destroy` or `replace`.
    pub action: &'static str,
    /// For a replacement, the top-level attributes whose change forces it (may be empty).
    pub forced_by: Vec<String>,
    /// The unit was planned against outputs an upstream apply may change.
    pub provisional: bool,
}

/// The destroys and replacements among the planned units, destroys first, each group in
/// wave order. Units the pull request deletes are not listed here: their own section
/// follows this one.
pub(super) fn risks(view: &PlanView) -> Vec<RiskContext> {
    let planned = view.waves.iter().flat_map(|w| w.units.iter());
    let mut risks: Vec<RiskContext> = planned.flat_map(unit_risks).collect();
    // Stable: wave order is kept within each action.
    risks.sort_by_key(|r| r.action != "destroy");
    risks
}

fn unit_risks(unit: &UnitView) -> impl Iterator<Item = RiskContext> + '_ {
    unit.resources.iter().filter_map(move |change| {
        let action = match change.actions.first().map(String::as_str) {
            Some("delete") => "destroy",
            Some("replace") => "replace",
            _ => return None,
        };
        Some(RiskContext {
            unit: line(&unit.path),
            address: line(&change.address),
            action,
            forced_by: change.forced_by.iter().map(|a| line(a)).collect(),
            provisional: unit.provisional,
        })
    })
}

/// The plan in one line: what happens to resources, most dangerous first, over how many of
/// the units, then how many outputs change.
pub(super) fn summary(view: &PlanView) -> String {
    let units: Vec<&UnitView> = view
        .waves
        .iter()
        .flat_map(|w| w.units.iter())
        .chain(view.destroys.iter())
        .collect();
    let changing = units
        .iter()
        .filter(|u| !u.no_changes && u.resources.len() + u.outputs.len() > 0)
        .count();
    let outputs: usize = units.iter().map(|u| u.outputs.len()).sum();
    let resources = resource_parts(&view.totals);
    let scope = if changing == units.len() {
        plural(units.len(), "unit")
    } else {
        format!("{changing} of {}", plural(units.len(), "unit"))
    };
    if units.is_empty() {
        // Every unit failed, was locked or was left out: "no changes" would be a claim.
        return "No unit planned".into();
    }
    let mut text = match (resources.is_empty(), outputs) {
        (true, 0) => return format!("No changes in {}", plural(units.len(), "unit")),
        (true, _) => format!("No resource changes in {scope}"),
        (false, _) => format!("{} in {scope}", resources.join(", ")),
    };
    if outputs > 0 {
        let verb = if outputs == 1 { "changes" } else { "change" };
        text.push_str(&format!("; {} {verb}", plural(outputs, "output")));
    }
    text
}

/// "8 to replace", "16 to change", …: the non-zero counts, most dangerous first.
pub(super) fn resource_parts(totals: &Counts) -> Vec<String> {
    [
        (totals.destroy, "destroy"),
        (totals.replace, "replace"),
        (totals.change, "change"),
        (totals.add, "add"),
        (totals.import, "import"),
        (totals.moved, "move"),
        (totals.forget, "forget"),
        (totals.read, "read"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, verb)| format!("{n} to {verb}"))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comment::{UnitView, WaveView};
    use crate::plan::{OutputChange, ResourceChange};

    fn change(address: &str, action: &str, forced_by: &[&str]) -> ResourceChange {
        ResourceChange {
            address: address.into(),
            actions: vec![action.into()],
            forced_by: forced_by.iter().map(|a| a.to_string()).collect(),
        }
    }

    fn unit(path: &str, resources: Vec<ResourceChange>, outputs: usize) -> UnitView {
        let mut counts = Counts::default();
        for r in &resources {
            match r.actions[0].as_str() {
                "create" => counts.add += 1,
                "update" => counts.change += 1,
                "delete" => counts.destroy += 1,
                _ => counts.replace += 1,
            }
        }
        UnitView {
            path: path.into(),
            counts,
            fingerprint: "f".into(),
            no_changes: resources.is_empty() && outputs == 0,
            resources,
            outputs: (0..outputs)
                .map(|i| OutputChange {
                    name: format!("o{i}"),
                    action: "update".into(),
                })
                .collect(),
            provisional: false,
            rendered: None,
            retried: 0,
        }
    }

    fn view(waves: Vec<Vec<UnitView>>, destroys: Vec<UnitView>) -> PlanView {
        let mut totals = Counts::default();
        for u in waves.iter().flatten().chain(destroys.iter()) {
            totals.add += u.counts.add;
            totals.change += u.counts.change;
            totals.destroy += u.counts.destroy;
            totals.replace += u.counts.replace;
        }
        PlanView {
            plan_id: "p".into(),
            needs_approval: true,
            head: "h".into(),
            base: "b".into(),
            totals,
            waves: waves
                .into_iter()
                .enumerate()
                .map(|(i, units)| WaveView {
                    number: i + 1,
                    units,
                })
                .collect(),
            destroys,
            failed: Vec::new(),
            skipped: Vec::new(),
            unresolved: Vec::new(),
            ordered_last: Vec::new(),
            locked: Vec::new(),
            sources: Vec::new(),
            rounds: 1,
            steps: Vec::new(),
            policies: Vec::new(),
            policy_edits: Vec::new(),
            merge_mode: Default::default(),
            destroy_command: false,
        }
    }

    #[test]
    fn destroys_come_before_replacements_each_in_wave_order_and_deleted_units_are_not_listed() {
        let plan = view(
            vec![
                vec![unit(
                    "db",
                    vec![
                        change("a.r", "replace", &["engine"]),
                        change("a.u", "update", &[]),
                    ],
                    0,
                )],
                vec![unit("app", vec![change("b.d", "delete", &[])], 0)],
            ],
            vec![unit("gone", vec![change("c.d", "delete", &[])], 0)],
        );
        let listed: Vec<_> = risks(&plan)
            .iter()
            .map(|r| format!("{} {} {} {:?}", r.action, r.unit, r.address, r.forced_by))
            .collect();
        assert_eq!(
            listed,
            ["destroy app b.d []", "replace db a.r [\"engine\"]"]
        );
    }

    #[test]
    fn the_summary_puts_danger_first_and_counts_outputs_apart() {
        let plan = view(
            vec![vec![
                unit(
                    "a",
                    vec![change("x", "replace", &[]), change("y", "update", &[])],
                    2,
                ),
                unit("b", vec![], 0),
                unit("c", vec![change("z", "create", &[])], 0),
            ]],
            vec![],
        );
        assert_eq!(
            summary(&plan),
            "1 to replace, 1 to change, 1 to add in 2 of 3 units; 2 outputs change"
        );
        let outputs_only = view(vec![vec![unit("a", vec![], 1)]], vec![]);
        assert_eq!(
            summary(&outputs_only),
            "No resource changes in 1 unit; 1 output changes"
        );
        let nothing = view(
            vec![vec![unit("a", vec![], 0), unit("b", vec![], 0)]],
            vec![],
        );
        assert_eq!(summary(&nothing), "No changes in 2 units");
    }
}
