//! A unit's plan drawn as `terraform plan` draws it, from the in-memory `show -json`
//! document, masked and bounded so that it can be published on a pull request.
//!
//! This module owns turning one unit's plan JSON into the text a reviewer reads: per
//! resource the comment lines (`# aws_instance.web will be updated in-place`, reasons,
//! moves, imports, forgets, reads), the action symbol and declaration, and the attribute
//! lines (`~ instance_type = "t3.small" -> "t3.2xlarge"`, `(known after apply)`,
//! `(sensitive value)`, `# forces replacement`, nested objects, lists with context, heredoc
//! and `jsonencode` strings diffed line by line and key by key,
//! `# (N unchanged attributes hidden)`), then the output changes. It never runs a process,
//! writes a file or logs anything; the result is a string.
//!
//! It must never let a sensitive value out. Three layers see to that: values terraform
//! marks sensitive (`before_sensitive` / `after_sensitive`, at any depth) are drawn as
//! `(sensitive value)`; any string marked sensitive anywhere in the plan is also masked
//! wherever else it appears (terraform loses marks in places, `terraform_data.output` for
//! one); and the whole text goes through cascade's log redaction (`mask.rs`), as one
//! stream so that PEM blocks over several lines go whole.
//! Control characters and characters that reorder or hide text are escaped, and the text
//! is cut to a size limit with a note saying how many lines were cut.
//!
//! # How it differs from terraform's own rendering
//!
//! The plan JSON has no provider schemas, so every value is drawn as terraform draws a
//! dynamically typed value (as for `terraform_data.input` or an output): nested blocks
//! appear as lists of objects (`~ ebs_block_device = [ ~ { … }, ]`), map keys that are
//! identifiers appear unquoted, and empty strings are not treated as null. Where a
//! `replace_paths` entry ends, cascade always writes `# forces replacement`; terraform drops
//! it inside dynamically typed values. Drift (`resource_drift`) and the plan's summary line
//! are not drawn: the comment shows its own counts.

mod change;
mod header;
mod mask;
mod slice;
mod strings;
mod text;

use super::PlanError;
use super::show_json::{self, Action};
use crate::redact::Redactor;
use change::Change;
use mask::{Secrets, Sink};
use serde::{Deserialize, Serialize};
use slice::Budget;
use std::time::Duration;
use strings::attribute_name;
use text::{Opts, Out};

/// Limits on one unit's rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// The most characters of text per unit; the lines past it are counted and replaced
    /// by a note.
    pub max_chars: usize,
    /// The most characters per line; a longer line (a long one-line value) is cut with a
    /// note saying how many characters were cut.
    pub max_line_chars: usize,
}

impl Default for RenderOptions {
    /// 20,000 characters per unit (three units' worth fit one GitHub comment), 2,000 per
    /// line.
    fn default() -> RenderOptions {
        RenderOptions {
            max_chars: 20_000,
            max_line_chars: 2_000,
        }
    }
}

/// Table cells (4 bytes each) and time one unit may spend lining up lists and lines before
/// the renderer switches to a faster, coarser alignment.
const ALIGN_CELLS: u64 = 1 << 26;
const ALIGN_TIME: Duration = Duration::from_secs(2);

/// One unit's plan as a reviewer reads it: masked, escaped and cut to its limits, so it
/// may be published and stored. Holds no value that the plan marks sensitive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedPlan {
    text: String,
    cut_lines: usize,
}

impl RenderedPlan {
    /// Renders `terraform show -json <planfile>` output (held in memory only), redacted
    /// as [`crate::redact::redact`] redacts (patterns, PEM blocks, registered secrets).
    /// Refuses what [`PlanSummary::from_show_json`](super::PlanSummary::from_show_json)
    /// refuses, with the same errors.
    pub fn from_show_json(json: &[u8], options: &RenderOptions) -> Result<RenderedPlan, PlanError> {
        RenderedPlan::from_show_json_redacted(json, options, &Redactor::default())
    }

    /// Like [`RenderedPlan::from_show_json`], redacted by `redactor`: pass the one that
    /// redacts the unit's log (`Executor::redactor`), so the rendering hides everything the
    /// log hides, the child's `TF_VAR_*` values included.
    pub fn from_show_json_redacted(
        json: &[u8],
        options: &RenderOptions,
        redactor: &Redactor,
    ) -> Result<RenderedPlan, PlanError> {
        RenderedPlan::of(&super::PlanDocument::parse(json)?, options, redactor)
    }

    /// [`RenderedPlan::from_show_json_redacted`] of a document parsed once for the summary
    /// and the rendering both.
    pub fn of(
        plan: &super::PlanDocument,
        options: &RenderOptions,
        redactor: &Redactor,
    ) -> Result<RenderedPlan, PlanError> {
        let top = show_json::plan_fields(&plan.0);
        let mut sink = Sink::new(
            Secrets::of_plan(top),
            redactor,
            options.max_chars,
            options.max_line_chars,
        );
        let mut budget = Budget::new(ALIGN_CELLS, ALIGN_TIME);
        let mut blocks = 0;
        for (i, value) in show_json::list(top, "resource_changes")?.iter().enumerate() {
            let entry = show_json::resource_entry(value, i)?;
            if header::hidden(&entry) {
                continue;
            }
            if blocks > 0 {
                sink.note("");
            }
            blocks += 1;
            for line in header::comment(&entry) {
                sink.note(&line);
            }
            let change = Change::of(entry.change, entry.action == Action::Forget);
            let diff = change::resource(&change, &mut budget);
            let mut out = Out::new(&mut budget);
            out.push(header::symbol(entry.action));
            out.push(" ");
            out.push(&header::declaration(&entry));
            out.push(" ");
            out.diff(&diff, 0, Opts::top(header::importing(&entry)));
            for (n, line) in out.finish().iter().enumerate() {
                // The first line is the declaration, which holds no values.
                sink.line(line, n > 0);
            }
        }
        outputs(top, &mut sink, &mut budget, blocks > 0)?;
        let (text, cut_lines) = sink.finish();
        Ok(RenderedPlan { text, cut_lines })
    }

    /// The rendered text, lines separated by `\n`, no trailing newline; empty when the
    /// plan changes nothing. Every line is safe to publish.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many lines the size limit cut (the text then ends with a note saying so).
    pub fn cut_lines(&self) -> usize {
        self.cut_lines
    }

    /// True when there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// A backtick fence longer than any run of backticks in the text (at least three), so
    /// nothing in the text can close the code block it sits in.
    pub fn fence(&self) -> String {
        crate::inert::fence_for(&self.text)
    }

    /// The text as a fenced Markdown code block (put a blank line before it when it
    /// follows a `<summary>`).
    pub fn to_markdown(&self) -> String {
        let fence = self.fence();
        format!("{fence}\n{}\n{fence}", self.text)
    }
}

/// `Changes to Outputs:` and one line per output that changes, names aligned over all
/// outputs as terraform aligns them.
fn outputs(
    top: &serde_json::Map<String, serde_json::Value>,
    sink: &mut Sink,
    budget: &mut Budget,
    after_resources: bool,
) -> Result<(), PlanError> {
    let mut changes = Vec::new();
    for (name, value) in show_json::output_changes(top)? {
        let Some(change) = value.as_object() else {
            continue;
        };
        changes.push((name.as_str(), Change::of(change, false)));
    }
    changes.sort_by(|a, b| a.0.cmp(b.0));
    let diffs: Vec<_> = changes
        .iter()
        .map(|(name, change)| (attribute_name(name), change::value(change, budget)))
        .collect();
    if diffs.iter().all(|(_, d)| d.action == change::Act::NoOp) {
        return Ok(());
    }
    let width = diffs
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    if after_resources {
        sink.note("");
    }
    sink.note("Changes to Outputs:");
    for (name, diff) in diffs.iter().filter(|(_, d)| d.action != change::Act::NoOp) {
        let mut out = Out::new(budget);
        out.symbol(diff.action);
        out.push(name);
        out.push(&" ".repeat(width - name.chars().count()));
        out.push(" = ");
        out.diff(diff, 0, Opts::top(false));
        for line in out.finish() {
            sink.line(&line, true);
        }
    }
    Ok(())
}
