//! Workflow steps' output in the plan and apply comments: which steps show (each record's
//! `visible`, from its `visible_on`), how (a code block, or `format: markdown` made inert
//! by [`crate::inert::markdown`]), and how much: at most [`STEP_SHOWN`] bytes per step
//! and [`COMMENT_STEPS`] per comment, the end of a code output (where the error usually
//! is), the rest said to be in the `cascade` check.
//!
//! A step's output is written by code the pull request controls: it arrives redacted
//! (`engine::steps`) and leaves here inert. Never decides whether a step ran or failed.

use crate::inert::{fence_for, visible_line};
use crate::store::{StepRecord, StepStatus};
use serde::Serialize;

/// The most of one step's output a comment shows.
pub const STEP_SHOWN: usize = 8 << 10;
/// The most step output one comment shows, over every unit.
pub const COMMENT_STEPS: usize = 64 << 10;

/// One step as the comment's view model has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepView {
    pub name: String,
    /// `pre_plan`, `post_apply`, …
    pub hook: String,
    pub status: StepStatus,
    pub code: Option<i32>,
    /// Why it did not run to an exit, else empty.
    pub error: String,
    pub output: String,
    /// More was written than `output` holds.
    pub truncated: bool,
    pub markdown: bool,
    pub took_ms: u64,
}

/// A unit's visible steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnitSteps {
    pub unit: String,
    pub steps: Vec<StepView>,
}

/// The visible steps of `records` for `unit`; `None` when none is visible.
pub fn unit_steps(unit: &str, records: &[StepRecord]) -> Option<UnitSteps> {
    let steps: Vec<StepView> = records
        .iter()
        .filter(|r| r.visible)
        .map(|r| StepView {
            name: r.name.clone(),
            hook: r.hook.clone(),
            status: r.status,
            code: r.code,
            error: crate::redact::redact(&r.error),
            output: crate::redact::redact(&r.output),
            truncated: r.truncated,
            markdown: r.markdown,
            took_ms: r.took_ms,
        })
        .collect();
    (!steps.is_empty()).then(|| UnitSteps {
        unit: unit.to_string(),
        steps,
    })
}

/// The visible steps of `units` as Markdown without a template (the drift issue), within
/// `budget` bytes of output: per unit a line naming it, then each step's verdict and body.
pub fn steps_markdown(units: &[UnitSteps], budget: usize) -> String {
    let mut budget = StepBudget { left: budget };
    let mut out = String::new();
    for unit in units {
        out.push_str(&format!(
            "Workflow steps of {}:\n\n",
            crate::inert::code(&unit.unit)
        ));
        for step in budget.contexts(&unit.steps) {
            out.push_str(&format!(
                "- {} ({}) — {} · {}\n\n",
                crate::inert::code(&step.name),
                step.hook,
                step.verdict,
                step.took
            ));
            if step.markdown {
                out.push_str(&step.body);
                out.push_str("\n\n");
            } else if !step.body.is_empty() {
                out.push_str(&crate::inert::fenced(&step.body, "text"));
                out.push_str("\n\n");
            }
            if !step.cut.is_empty() {
                out.push_str(&format!("*{}*\n\n", step.cut));
            }
        }
    }
    out
}

/// What a template sees of one step.
#[derive(Clone, Debug, Serialize)]
pub(super) struct StepContext {
    /// One line, for a code span.
    name: String,
    hook: String,
    /// "passed", "failed with exit code 1", "failed with exit code 2 (errors ignored)",
    /// "timed out after 5 s": cascade's words, one line.
    verdict: String,
    failed: bool,
    /// True: `body` is inert Markdown made by `inert::markdown`, printed as it is.
    markdown: bool,
    /// The output to show: inert Markdown, or raw text for `{{fenced body "text"}}`.
    body: String,
    /// A fence for `body` when it goes in a code block.
    fence: String,
    /// Cascade's own sentence when not all of the output is shown, else empty.
    cut: String,
    took: String,
}

/// Turns views into contexts within the comment's budget for step output.
pub(super) struct StepBudget {
    left: usize,
}

impl Default for StepBudget {
    fn default() -> StepBudget {
        StepBudget {
            left: COMMENT_STEPS,
        }
    }
}

impl StepBudget {
    pub(super) fn contexts(&mut self, steps: &[StepView]) -> Vec<StepContext> {
        steps.iter().map(|s| self.context(s)).collect()
    }

    fn context(&mut self, step: &StepView) -> StepContext {
        let room = STEP_SHOWN.min(self.left);
        let (body, cut) = if room == 0 && !step.output.is_empty() {
            (
                String::new(),
                format!(
                    "Its output is not shown: this comment already shows {} KiB of step output. The whole output is in the `cascade` check.",
                    COMMENT_STEPS >> 10
                ),
            )
        } else if !step.error.is_empty() {
            // It did not run to an exit: why, in a code block.
            let text = super::view::block_text(&step.error);
            (tail(&text, room).to_string(), String::new())
        } else if step.markdown {
            let body = crate::inert::markdown(&step.output, room);
            let cut = match step.truncated {
                true => {
                    "Only the end of its output was kept; the whole output is in the unit's log."
                        .to_string()
                }
                false => String::new(),
            };
            (body, cut)
        } else {
            let text = super::view::block_text(&step.output);
            let shown = tail(&text, room);
            let cut = if shown.len() < text.len() || step.truncated {
                format!(
                    "The last {} KiB of its output; the whole output is in the `cascade` check.",
                    shown.len().div_ceil(1024)
                )
            } else {
                String::new()
            };
            (shown.to_string(), cut)
        };
        self.left = self.left.saturating_sub(body.len());
        StepContext {
            name: visible_line(&step.name).into_owned(),
            hook: visible_line(&step.hook).into_owned(),
            verdict: verdict(step),
            failed: step.status != StepStatus::Passed,
            markdown: step.markdown,
            fence: fence_for(&body),
            body,
            cut,
            took: took_text(step.took_ms),
        }
    }
}

/// "40 ms", "2.5 s": how long a step took.
fn took_text(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        _ => format!("{:.1} s", ms as f64 / 1000.0),
    }
}

/// "failed with exit code 1": how a step ended, in cascade's words only (the reason
/// it did not finish is in its body).
fn verdict(step: &StepView) -> String {
    let how = match (step.status, step.code) {
        (StepStatus::Passed, _) => return "passed".into(),
        (_, Some(code)) => format!("failed with exit code {code}"),
        (_, None) => "did not finish".to_string(),
    };
    match step.status {
        StepStatus::Warned => format!("{how} (errors ignored)"),
        _ => how,
    }
}

/// The last `max` bytes of `text`, starting on a line (or at least a character) boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let rest = &text[start..];
    match rest.find('\n') {
        Some(at) if at + 1 < rest.len() => &rest[at + 1..],
        _ => rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(output: &str, markdown: bool) -> StepView {
        StepView {
            name: "tflint".into(),
            hook: "pre_plan".into(),
            status: StepStatus::Failed,
            code: Some(2),
            error: String::new(),
            output: output.into(),
            truncated: false,
            markdown,
            took_ms: 1500,
        }
    }

    #[test]
    fn a_long_code_output_shows_its_last_lines_within_the_step_limit() {
        let output: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let ctx = StepBudget::default().context(&step(&output, false));
        assert!(ctx.body.len() <= STEP_SHOWN);
        assert!(ctx.body.ends_with("line 4999"));
        assert!(ctx.body.starts_with("line "));
        assert!(ctx.cut.contains("`cascade` check"));
        assert_eq!(ctx.verdict, "failed with exit code 2");
        assert_eq!(ctx.took, "1.5 s");
        assert_eq!(took_text(40), "40 ms");
    }

    #[test]
    fn the_comment_shows_at_most_its_budget_of_step_output() {
        let output = "x\n".repeat(10_000);
        let mut budget = StepBudget::default();
        let shown: usize = (0..20)
            .map(|_| budget.context(&step(&output, false)).body.len())
            .sum();
        assert!(shown <= COMMENT_STEPS, "{shown}");
        let last = budget.context(&step(&output, false));
        assert!(last.body.is_empty());
        assert!(last.cut.contains("not shown"));
    }

    #[test]
    fn only_visible_steps_are_shown() {
        let record = |visible| StepRecord {
            hook: "post_plan".into(),
            index: 0,
            name: "x".into(),
            status: StepStatus::Passed,
            code: Some(0),
            error: String::new(),
            output: "ok".into(),
            truncated: false,
            visible,
            markdown: false,
            took_ms: 3,
        };
        assert!(unit_steps("a", &[record(false)]).is_none());
        assert_eq!(
            unit_steps("a", &[record(true), record(false)])
                .unwrap()
                .steps
                .len(),
            1
        );
    }
}
