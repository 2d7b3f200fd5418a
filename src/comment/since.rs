//! What changed in a unit's plan between its approval and its apply, for the apply result:
//! the line difference between the two plans as `terraform plan` draws them (masked and
//! redacted when they were drawn), or between their resource lists when a plan was stored
//! without its drawing. Why it changed (the units applied upstream of it, or an
//! out-of-band change) is the template's to say, from `since_approval.upstream`.
//!
//! Never reads a value beyond the drawn plans; bounded to [`MAX_DIFFERENCE_LINES`] lines and
//! [`MAX_DIFFERENCE_CHARS`] characters.

use crate::plan::PlanSummary;
use crate::plan::render::RenderedPlan;
use similar::TextDiff;

/// At most this many lines of difference are shown; the rest is counted.
pub(super) const MAX_DIFFERENCE_LINES: usize = 200;
/// And at most this many characters (a drawn plan's own cap).
const MAX_DIFFERENCE_CHARS: usize = 20_000;

/// Lines of context around each changed line.
const CONTEXT: usize = 2;

/// The difference between the approved plan and the fresh one, as a unified diff whose
/// `-` lines are the approved plan's and `+` lines the fresh one's; `None` when neither
/// plan can be shown.
pub(super) fn difference(
    approved: (Option<&RenderedPlan>, Option<&PlanSummary>),
    now: (Option<&RenderedPlan>, Option<&PlanSummary>),
) -> Option<String> {
    let drawn = |(rendered, _): (Option<&RenderedPlan>, Option<&PlanSummary>)| {
        rendered.map(|r| r.text().to_string())
    };
    let (before, after) = match (drawn(approved), drawn(now)) {
        (Some(before), Some(after)) => (before, after),
        _ => (listing(approved.1)?, listing(now.1)?),
    };
    let diff = TextDiff::from_lines(&before, &after);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header("approved", "now")
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut shown: Vec<String> = Vec::new();
    let mut chars = 0;
    for line in lines.iter().take(MAX_DIFFERENCE_LINES) {
        chars += line.chars().count() + 1;
        if chars > MAX_DIFFERENCE_CHARS {
            break;
        }
        shown.push(line.chars().map(visible).collect());
    }
    if shown.len() < lines.len() {
        shown.push(format!(
            "… {} more lines (run `cascade plan` to see the whole plan)",
            lines.len() - shown.len()
        ));
    }
    Some(shown.join("\n"))
}

/// A plan stored without its drawing: one line per resource and output, with actions.
fn listing(summary: Option<&PlanSummary>) -> Option<String> {
    let summary = summary?;
    let mut lines: Vec<String> = summary
        .resources
        .iter()
        .map(|r| format!("{}: {}", r.address, r.actions.join(", ")))
        .collect();
    lines.extend(
        summary
            .outputs
            .iter()
            .map(|o| format!("output.{}: {}", o.name, o.action)),
    );
    lines.push(String::new());
    Some(lines.join("\n"))
}

/// Control characters (the renderer escaped them already) as U+FFFD, as in `diff.rs`.
fn visible(c: char) -> char {
    if c.is_control() && c != '\t' {
        '\u{FFFD}'
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Counts, Fingerprint, ResourceChange};

    fn summary(actions: &[(&str, &str)]) -> PlanSummary {
        PlanSummary {
            counts: Counts::default(),
            resources: actions
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
    fn without_drawings_the_resource_lists_are_compared() {
        let approved = summary(&[("a.x", "update"), ("a.y", "create")]);
        let now = summary(&[("a.x", "replace"), ("a.y", "create")]);
        let text = difference((None, Some(&approved)), (None, Some(&now))).unwrap();
        assert!(text.starts_with("--- approved\n+++ now\n@@"), "{text}");
        assert!(
            text.contains("\n-a.x: update\n+a.x: replace\n a.y: create"),
            "{text}"
        );
        assert_eq!(difference((None, None), (None, Some(&now))), None);
    }

    #[test]
    fn a_long_difference_is_cut_and_says_how_much_is_left_out() {
        let names: Vec<String> = (0..400)
            .map(|i| format!("r.{i:03}{}", "x".repeat(80)))
            .collect();
        let many = |action: &'static str| {
            let pairs: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), action)).collect();
            summary(&pairs)
        };
        let text =
            difference((None, Some(&many("create"))), (None, Some(&many("delete")))).unwrap();
        assert!(
            text.chars().count() <= MAX_DIFFERENCE_CHARS + 100,
            "{}",
            text.len()
        );
        assert!(text.lines().count() <= MAX_DIFFERENCE_LINES + 1);
        assert!(
            text.ends_with("more lines (run `cascade plan` to see the whole plan)"),
            "{text}"
        );
    }
}
