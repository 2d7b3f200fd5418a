//! What a drift run found, for `cascade drift` and for the server's drift issue
//! alike: which units of a plan of the default branch are clean, which drifted
//! (with their counts and diff) and which failed, and the units a drift run
//! checks. Never runs anything: the plan engine made the plan.

use crate::discovery::UnitKind;
use crate::plan::Counts;
use crate::plan::render::RenderedPlan;
use crate::scan::Scan;
use crate::store::{PlanRecord, UnitStatus};
use crate::unit::UnitPath;
use serde::Serialize;
use std::collections::BTreeSet;

/// The units of `scan` a drift run plans: every unit that is not a stack, not
/// excluded and not ignored, and that `wanted` picks.
pub fn units_to_check(scan: &Scan, wanted: impl Fn(&UnitPath) -> bool) -> BTreeSet<UnitPath> {
    scan.discovery
        .units
        .iter()
        .filter(|u| u.kind != UnitKind::Stack && u.excluded.is_none())
        .filter(|u| !scan.config.is_ignored(u.path.as_str()))
        .filter(|u| wanted(&u.path))
        .map(|u| u.path.clone())
        .collect()
}

/// What `cascade drift --format json` prints.
#[derive(Debug, Default, Serialize)]
pub struct DriftReport {
    pub drifted: Vec<DriftedUnit>,
    pub clean: Vec<UnitPath>,
    pub failed: Vec<FailedUnit>,
}

#[derive(Debug, Serialize)]
pub struct DriftedUnit {
    pub path: UnitPath,
    pub counts: Counts,
    pub fingerprint: String,
    /// The attribute-level diff, for the Markdown report only.
    #[serde(skip)]
    pub rendered: Option<RenderedPlan>,
}

#[derive(Debug, Serialize)]
pub struct FailedUnit {
    pub path: UnitPath,
    pub reason: String,
}

impl DriftReport {
    /// Sorts the units of a finished plan run: planned and empty → clean, planned and
    /// not empty → drifted, anything else (failed, skipped behind a failed dependency,
    /// cancelled) → failed with the engine's reason.
    pub fn of_plan(plan: &PlanRecord) -> DriftReport {
        let mut report = DriftReport::default();
        for unit in &plan.units {
            match (&unit.status, &unit.summary) {
                (UnitStatus::Planned, Some(summary)) if summary.is_empty() => {
                    report.clean.push(unit.path.clone())
                }
                (UnitStatus::Planned, Some(summary)) => report.drifted.push(DriftedUnit {
                    path: unit.path.clone(),
                    counts: summary.counts,
                    fingerprint: summary.fingerprint.to_string(),
                    rendered: unit.rendered.clone(),
                }),
                (status, _) => report.failed.push(FailedUnit {
                    path: unit.path.clone(),
                    reason: if unit.detail.is_empty() {
                        status.as_str().to_string()
                    } else {
                        unit.detail.clone()
                    },
                }),
            }
        }
        report
    }

    /// The report for people: drifted units with their counts and diff, how many are
    /// clean, failed units with their reasons. Paths and reasons are shown the way the
    /// plan comment shows them (code spans, fenced excerpts).
    pub fn markdown(&self) -> String {
        use crate::inert::{code, fenced};
        let total = self.drifted.len() + self.clean.len() + self.failed.len();
        let mut out = if self.drifted.is_empty() {
            format!("## Drift: none in {total} units\n")
        } else {
            format!(
                "## Drift: {} of {total} units drifted\n",
                self.drifted.len()
            )
        };
        for unit in &self.drifted {
            out.push_str(&format!(
                "\n### {}\n\n**Plan:** {}.\n",
                code(unit.path.as_str()),
                counts_line(&unit.counts)
            ));
            if let Some(rendered) = unit.rendered.as_ref().filter(|r| !r.is_empty()) {
                out.push_str(&format!("\n{}\n", rendered.to_markdown()));
            }
        }
        out.push_str(&format!("\n**Clean:** {} units.\n", self.clean.len()));
        if !self.failed.is_empty() {
            out.push_str(&format!("\n### Failed: {} units\n", self.failed.len()));
            for unit in &self.failed {
                out.push_str(&format!(
                    "\n{}:\n\n{}\n",
                    code(unit.path.as_str()),
                    fenced(unit.reason.trim_end(), "")
                ));
            }
        }
        out
    }
}

/// `1 to add, 0 to change, 0 to destroy`, and the other actions when there are any.
fn counts_line(c: &Counts) -> String {
    let mut parts = vec![
        format!("{} to add", c.add),
        format!("{} to change", c.change),
        format!("{} to destroy", c.destroy),
    ];
    for (n, what) in [
        (c.replace, "to replace"),
        (c.import, "to import"),
        (c.moved, "to move"),
        (c.forget, "to forget"),
        (c.read, "to read"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    parts.join(", ")
}
