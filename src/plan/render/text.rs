//! Drawing a [`Diff`] tree as the lines `terraform plan` prints: `+`/`-`/`~` symbols, four
//! spaces per level, `->` between old and new, `(known after apply)`, `(sensitive value)`,
//! `# forces replacement`, heredocs for multi-line strings, `jsonencode(…)` for JSON
//! strings, and `# (N unchanged attributes hidden)` for what did not change.
//!
//! Lines are collected with the spans where cascade itself wrote `(sensitive value)` or
//! `(known after apply)`, so masking later can tell cascade's markers from text a value
//! happens to contain. Every piece of a value goes through `strings.rs` on its way in, so no
//! raw control character reaches a line.

use super::change::{Act, Change, Diff, Kind, value};
use super::slice::{self, Budget};
use super::strings::{StringForm, attribute_name, quoted, string_form, visible};
use serde_json::Value;
use std::ops::Range;

/// What cascade writes where a value is sensitive.
pub(super) const SENSITIVE: &str = "(sensitive value)";
/// What cascade writes where a value is not known until apply.
pub(super) const UNKNOWN: &str = "(known after apply)";

/// How deep in the drawing a string may still be read as JSON.
const MAX_JSON_STRING_DEPTH: usize = 32;

/// Attributes terraform always shows, changed or not, so a reader can tell objects apart.
const IMPORTANT: [&str; 3] = ["id", "name", "tags"];

/// One finished line and where cascade's own markers are in it.
#[derive(Debug, Default)]
pub(super) struct Line {
    pub text: String,
    pub markers: Vec<Range<usize>>,
}

/// Lines being written; the last one stays open until [`Out::end_line`].
pub(super) struct Out<'b> {
    lines: Vec<Line>,
    current: Line,
    budget: &'b mut Budget,
}

/// How a value is drawn; mirrors what a parent tells its children in terraform.
#[derive(Clone, Copy, Default)]
pub(super) struct Opts {
    /// Do not write ` -> null` after a removed value (its parent says it already).
    override_null_suffix: bool,
    /// Never write `# forces replacement` here (the parent writes it).
    forbid_replace: bool,
    /// Show unchanged children instead of counting them.
    show_unchanged: bool,
}

impl Opts {
    /// The options a resource or output starts from; an imported resource shows every
    /// attribute.
    pub fn top(show_unchanged: bool) -> Opts {
        Opts {
            show_unchanged,
            ..Opts::default()
        }
    }

    /// What passes to a child: the replacement override does not cascade.
    fn child(self) -> Opts {
        Opts {
            forbid_replace: false,
            ..self
        }
    }
}

impl<'b> Out<'b> {
    pub fn new(budget: &'b mut Budget) -> Out<'b> {
        Out {
            lines: Vec::new(),
            current: Line::default(),
            budget,
        }
    }

    pub fn push(&mut self, text: &str) {
        self.current.text.push_str(text);
    }

    fn marker(&mut self, marker: &'static str) {
        let start = self.current.text.len();
        self.current.text.push_str(marker);
        self.current.markers.push(start..self.current.text.len());
    }

    fn end_line(&mut self) {
        self.lines.push(std::mem::take(&mut self.current));
    }

    /// The finished lines, the open one included if anything was written to it.
    pub fn finish(mut self) -> Vec<Line> {
        if !self.current.text.is_empty() {
            self.end_line();
        }
        self.lines
    }

    fn indent(&mut self, levels: usize) {
        for _ in 0..levels {
            self.push("    ");
        }
    }

    pub fn symbol(&mut self, action: Act) {
        self.push(match action {
            Act::Create => "  + ",
            Act::Delete => "  - ",
            Act::Update => "  ~ ",
            Act::NoOp => "    ",
        });
    }

    fn null_suffix(&mut self, action: Act, opts: Opts) {
        if action == Act::Delete && !opts.override_null_suffix {
            self.push(" -> null");
        }
    }

    fn replace_suffix(&mut self, replace: bool, opts: Opts) {
        if replace && !opts.forbid_replace {
            self.push(" # forces replacement");
        }
    }

    /// Continues the open line with `lines` drawn elsewhere (markers move along).
    fn append(&mut self, lines: Vec<Line>) {
        let count = lines.len();
        for (i, line) in lines.into_iter().enumerate() {
            let offset = self.current.text.len();
            self.current.text.push_str(&line.text);
            self.current.markers.extend(
                line.markers
                    .into_iter()
                    .map(|r| r.start + offset..r.end + offset),
            );
            if i + 1 < count {
                self.end_line();
            }
        }
    }

    /// Draws `diff` into a fresh set of lines sharing this budget.
    fn capture(&mut self, diff: &Diff<'_>, indent: usize, opts: Opts) -> Vec<Line> {
        let mut inner = Out::new(self.budget);
        inner.diff(diff, indent, opts);
        inner.finish()
    }

    /// Writes `diff` from the current position; continuation lines are indented for
    /// `indent`, and the last line is left open for the caller's suffix.
    pub fn diff(&mut self, diff: &Diff<'_>, indent: usize, opts: Opts) {
        match &diff.kind {
            Kind::Primitive { before, after } => self.primitive(diff, before, after, indent, opts),
            Kind::Object(attributes) => self.attributes(diff, attributes, indent, opts, false),
            Kind::Block(attributes) => self.attributes(diff, attributes, indent, opts, true),
            Kind::List(elements) => self.list(diff, elements, indent, opts),
            Kind::Unknown(before) => {
                match before {
                    Some(before) if diff.action != Act::Create => {
                        let before_opts = Opts {
                            override_null_suffix: true,
                            forbid_replace: diff.replace,
                            ..opts.child()
                        };
                        self.diff(before, indent, before_opts);
                        self.push(" -> ");
                    }
                    _ => {}
                }
                self.marker(UNKNOWN);
                self.replace_suffix(diff.replace, opts);
            }
            Kind::Sensitive { .. } => {
                self.marker(SENSITIVE);
                self.null_suffix(diff.action, opts);
                self.replace_suffix(diff.replace, opts);
            }
            Kind::TypeChange(before, after) => {
                let sides = Opts {
                    override_null_suffix: true,
                    ..opts
                };
                self.diff(before, indent, sides);
                self.push(" -> ");
                self.diff(after, indent, sides);
                self.replace_suffix(diff.replace, opts);
            }
        }
    }

    /// The warning terraform prints above a value whose sensitivity changes.
    fn warnings(&mut self, diff: &Diff<'_>, indent: usize) {
        let Kind::Sensitive {
            before,
            after,
            inner,
        } = diff.kind
        else {
            return;
        };
        if before == after || matches!(inner, Act::Create | Act::Delete) {
            return;
        }
        let (first, second) = if before {
            (
                "  # Warning: this attribute value will no longer be marked as sensitive",
                "  # after applying this change.",
            )
        } else {
            (
                "  # Warning: this attribute value will be marked as sensitive and will not",
                "  # display in UI output after applying this change.",
            )
        };
        self.indent(indent);
        self.push(first);
        self.end_line();
        self.indent(indent);
        self.push(second);
        if inner == Act::NoOp {
            self.push(" The value is unchanged.");
        }
        self.end_line();
    }

    /// An object's keys, or a resource's attributes (`block`): changed ones shown, unchanged
    /// ones counted, `id`, `name` and `tags` always shown.
    fn attributes(
        &mut self,
        diff: &Diff<'_>,
        attributes: &[(&str, Diff<'_>)],
        indent: usize,
        opts: Opts,
        block: bool,
    ) {
        if attributes.is_empty() {
            self.push("{}");
            if !block {
                self.null_suffix(diff.action, opts);
            }
            self.replace_suffix(diff.replace, opts);
            return;
        }
        let names: Vec<_> = attributes
            .iter()
            .map(|(key, _)| attribute_name(key))
            .collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let child_opts = Opts {
            override_null_suffix: !block || opts.override_null_suffix,
            ..opts.child()
        };
        self.push("{");
        self.replace_suffix(diff.replace, opts);
        self.end_line();
        let mut unchanged = 0;
        for ((key, attribute), name) in attributes.iter().zip(&names) {
            let important = IMPORTANT.contains(key);
            let attribute_opts = if important {
                Opts {
                    show_unchanged: true,
                    ..child_opts.child()
                }
            } else if attribute.action == Act::NoOp && !opts.show_unchanged {
                unchanged += 1;
                continue;
            } else {
                child_opts
            };
            self.warnings(attribute, indent + 1);
            self.indent(indent + 1);
            self.symbol(attribute.action);
            // Terraform prints the important names of a resource unquoted.
            let shown: &str = if important && block { key } else { name };
            self.push(shown);
            let pad = width.saturating_sub(shown.chars().count());
            self.push(&" ".repeat(pad));
            self.push(" = ");
            self.diff(attribute, indent + 1, attribute_opts);
            self.end_line();
        }
        if unchanged > 0 {
            self.unchanged_note(indent + 1, "attribute", unchanged);
        }
        self.indent(indent);
        self.symbol(Act::NoOp);
        self.push("}");
        if !block {
            self.null_suffix(diff.action, opts);
        }
    }

    fn unchanged_note(&mut self, indent: usize, what: &str, count: usize) {
        self.indent(indent);
        self.symbol(Act::NoOp);
        let plural = if count == 1 { "" } else { "s" };
        self.push(&format!("# ({count} unchanged {what}{plural} hidden)"));
        self.end_line();
    }

    /// A list: changed elements with the element before and after each run of changes for
    /// context, other unchanged elements counted.
    fn list(&mut self, diff: &Diff<'_>, elements: &[Diff<'_>], indent: usize, opts: Opts) {
        if elements.is_empty() {
            self.push("[]");
            self.null_suffix(diff.action, opts);
            self.replace_suffix(diff.replace, opts);
            return;
        }
        let element_opts = Opts {
            override_null_suffix: true,
            ..opts.child()
        };
        let unchanged_opts = Opts {
            show_unchanged: true,
            ..opts.child()
        };
        self.push("[");
        self.replace_suffix(diff.replace, opts);
        self.end_line();
        let mut skipped: Vec<&Diff<'_>> = Vec::new();
        let mut show_next = false;
        for element in elements {
            if element.action == Act::NoOp && !show_next && !opts.show_unchanged {
                skipped.push(element);
                continue;
            }
            show_next = false;
            if skipped.len() > 1 {
                self.unchanged_note(indent + 1, "element", skipped.len() - 1);
            }
            if let Some(last) = skipped.pop() {
                self.element(last, indent, unchanged_opts);
            }
            skipped.clear();
            let this_opts = if element.action == Act::NoOp {
                unchanged_opts
            } else {
                show_next = true;
                element_opts
            };
            self.element(element, indent, this_opts);
        }
        if !skipped.is_empty() {
            self.unchanged_note(indent + 1, "element", skipped.len());
        }
        self.indent(indent);
        self.symbol(Act::NoOp);
        self.push("]");
        self.null_suffix(diff.action, opts);
    }

    fn element(&mut self, element: &Diff<'_>, indent: usize, opts: Opts) {
        self.warnings(element, indent + 1);
        self.indent(indent + 1);
        self.symbol(element.action);
        self.diff(element, indent + 1, opts);
        self.push(",");
        self.end_line();
    }

    fn primitive(
        &mut self,
        diff: &Diff<'_>,
        before: &Value,
        after: &Value,
        indent: usize,
        opts: Opts,
    ) {
        if before.is_string() || after.is_string() {
            return self.string(diff, before, after, indent, opts);
        }
        match diff.action {
            Act::Create => self.push(&scalar(after)),
            Act::Delete => {
                self.push(&scalar(before));
                self.null_suffix(diff.action, opts);
            }
            Act::NoOp => self.push(&scalar(before)),
            Act::Update => {
                self.push(&scalar(before));
                self.push(" -> ");
                self.push(&scalar(after));
            }
        }
        self.replace_suffix(diff.replace, opts);
    }

    /// A string: quoted on one line, a heredoc diffed line by line, or JSON diffed key by key.
    fn string(
        &mut self,
        diff: &Diff<'_>,
        before: &Value,
        after: &Value,
        indent: usize,
        opts: Opts,
    ) {
        // JSON inside JSON inside JSON…: past this depth a string is shown as a string, so
        // the drawing stays about as deep as the plan document.
        let json = indent < MAX_JSON_STRING_DEPTH;
        match diff.action {
            Act::Update => self.string_update(diff, before, after, indent, opts, json),
            Act::Delete => self.string_side(diff, before, indent, opts, json),
            Act::Create | Act::NoOp => self.string_side(diff, after, indent, opts, json),
        }
    }

    /// A string created, removed or unchanged.
    fn string_side(
        &mut self,
        diff: &Diff<'_>,
        side: &Value,
        indent: usize,
        opts: Opts,
        json: bool,
    ) {
        match string_value_form(side, json) {
            None => {
                self.push(&scalar(side));
                self.replace_suffix(diff.replace, opts);
            }
            Some(StringForm::Json(doc)) => {
                let (b, a) = match diff.action {
                    Act::Create => (None, Some(&doc)),
                    Act::Delete => (Some(&doc), None),
                    _ => (Some(&doc), Some(&doc)),
                };
                self.json_string(diff, b, a, indent, opts);
            }
            Some(StringForm::Line(text)) => {
                self.push(&quoted(text));
                self.null_suffix(diff.action, opts);
                self.replace_suffix(diff.replace, opts);
            }
            Some(StringForm::Lines(lines)) => {
                let lines = lines.into_iter().map(|l| (Act::NoOp, l)).collect();
                self.heredoc(diff, lines, indent, opts);
            }
        }
    }

    /// A string changed: JSON against JSON key by key, lines against lines, or old -> new.
    fn string_update(
        &mut self,
        diff: &Diff<'_>,
        before: &Value,
        after: &Value,
        indent: usize,
        opts: Opts,
        json: bool,
    ) {
        let form = |v| string_value_form(v, json);
        match (form(before), form(after)) {
            (Some(StringForm::Json(b)), Some(StringForm::Json(a))) => {
                self.json_string(diff, Some(&b), Some(&a), indent, opts);
            }
            (Some(StringForm::Json(_)), _) | (_, Some(StringForm::Json(_))) => {
                self.string_type_change(diff, before, after, indent, opts);
            }
            (Some(StringForm::Line(b)), Some(StringForm::Line(a))) => {
                self.push(&quoted(b));
                self.push(" -> ");
                self.push(&quoted(a));
                self.replace_suffix(diff.replace, opts);
            }
            (Some(b), Some(a)) => {
                let lines = slice_lines(&lines_of(&b), &lines_of(&a), self.budget);
                self.heredoc(diff, lines, indent, opts);
            }
            _ => {
                // Not reached (an update of a string has strings on both sides); drawn on
                // one line all the same.
                self.push(&scalar(before));
                self.push(" -> ");
                self.push(&scalar(after));
                self.replace_suffix(diff.replace, opts);
            }
        }
    }

    /// A multi-line string as a heredoc, each line with its own symbol.
    fn heredoc(&mut self, diff: &Diff<'_>, lines: Vec<(Act, &str)>, indent: usize, opts: Opts) {
        self.push("<<-EOT");
        self.replace_suffix(diff.replace, opts);
        self.end_line();
        for (action, line) in lines {
            self.indent(indent + 1);
            self.symbol(action);
            self.push(&visible(line));
            self.end_line();
        }
        self.indent(indent);
        self.symbol(Act::NoOp);
        self.push("EOT");
        self.null_suffix(diff.action, opts);
    }

    /// JSON on one side only: the old string removed, the new one added.
    fn string_type_change(
        &mut self,
        diff: &Diff<'_>,
        before: &Value,
        after: &Value,
        indent: usize,
        opts: Opts,
    ) {
        fn side<'v>(before: &'v Value, after: &'v Value, action: Act) -> Diff<'v> {
            Diff {
                kind: Kind::Primitive {
                    before: if action == Act::Delete {
                        before
                    } else {
                        &Value::Null
                    },
                    after: if action == Act::Create {
                        after
                    } else {
                        &Value::Null
                    },
                },
                action,
                replace: false,
            }
        }
        let change = Diff {
            kind: Kind::TypeChange(
                Box::new(side(before, after, Act::Delete)),
                Box::new(side(before, after, Act::Create)),
            ),
            action: diff.action,
            replace: diff.replace,
        };
        self.diff(&change, indent, opts);
    }

    /// A string holding JSON, drawn as `jsonencode(…)` with the JSON diffed inside.
    fn json_string(
        &mut self,
        diff: &Diff<'_>,
        before: Option<&Value>,
        after: Option<&Value>,
        indent: usize,
        opts: Opts,
    ) {
        let change = Change {
            before: before.unwrap_or(&Value::Null),
            after: after.unwrap_or(&Value::Null),
            before_explicit: diff.action != Act::Create,
            after_explicit: diff.action != Act::Delete,
            unknown: &Value::Null,
            before_sensitive: &Value::Null,
            after_sensitive: &Value::Null,
            replace: Vec::new(),
        };
        let json_diff = value(&change, self.budget);
        let mut json_opts = Opts {
            override_null_suffix: true,
            ..opts.child()
        };
        let mut action = diff.action;
        let (whitespace, replace) = if json_diff.action == Act::NoOp && diff.action == Act::Update {
            // Only white space changed: say so, and show the whole document.
            json_opts.show_unchanged = true;
            action = Act::NoOp;
            let note = if diff.replace {
                " # whitespace changes force replacement"
            } else {
                " # whitespace changes"
            };
            (note, false)
        } else {
            ("", true)
        };
        let rendered = self.capture(&json_diff, indent + 1, json_opts);
        if matches!(diff.action, Act::Create | Act::Delete) {
            action = Act::NoOp;
        }
        if rendered.len() > 1 {
            self.push("jsonencode(");
            self.push(whitespace);
            self.end_line();
            self.indent(indent + 1);
            self.symbol(action);
            self.append(rendered);
            if replace {
                self.replace_suffix(diff.replace, opts);
            }
            self.end_line();
            self.indent(indent);
            self.symbol(Act::NoOp);
            self.push(")");
            self.null_suffix(diff.action, opts);
        } else {
            self.push("jsonencode(");
            self.append(rendered);
            self.push(")");
            self.push(whitespace);
            if replace {
                self.replace_suffix(diff.replace, opts);
            }
        }
    }
}

fn string_value_form(value: &Value, json: bool) -> Option<StringForm<'_>> {
    value.as_str().map(|s| string_form(s, json))
}

/// The lines of two strings lined up: kept, removed, added.
fn slice_lines<'s>(
    before: &[&'s str],
    after: &[&'s str],
    budget: &mut Budget,
) -> Vec<(Act, &'s str)> {
    let mut lines = Vec::new();
    for (b, a) in slice::align_lines(before, after, budget) {
        match (before.get(b), after.get(a)) {
            (Some(old), Some(new)) if old == new => lines.push((Act::NoOp, *old)),
            (Some(old), Some(new)) => {
                lines.push((Act::Delete, *old));
                lines.push((Act::Create, *new));
            }
            (Some(old), None) => lines.push((Act::Delete, *old)),
            (None, Some(new)) => lines.push((Act::Create, *new)),
            (None, None) => {}
        }
    }
    lines
}

/// A string's lines for a line diff: a one-line string is one line.
fn lines_of<'s>(form: &StringForm<'s>) -> Vec<&'s str> {
    match form {
        StringForm::Lines(lines) => lines.clone(),
        StringForm::Line(line) => vec![*line],
        StringForm::Json(_) => Vec::new(),
    }
}

/// `null`, a bool, a number, or (where a string reaches here) the quoted string.
fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quoted(s),
        // Not reached: collections have their own kinds.
        Value::Array(_) | Value::Object(_) => "…".to_string(),
    }
}
