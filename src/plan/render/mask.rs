//! Making rendered lines safe to publish: known secrets masked, the log redaction applied,
//! control characters escaped, and the unit's text cut to its size limits with a note.
//!
//! Terraform marks sensitive values in the plan, and the renderer draws those as
//! `(sensitive value)`. Marks do not always survive: `terraform_data.output`, for one, holds
//! a copy of a sensitive input without its mark, and terraform itself prints it. So every
//! string that is marked sensitive anywhere in the plan (changes, outputs, state, sensitive
//! variables) is also looked for in the rendered values and masked wherever it appears.
//! Strings shorter than [`MIN_SECRET_CHARS`], and strings that occur in the renderer's own
//! vocabulary (so a value marked sensitive cannot blank out `-> null` or
//! `# forces replacement`), are left to the marks alone.
//!
//! Then the text goes through the same redaction as the unit's log (`crate::redact`, with
//! the child's own secrets when the caller passes its [`Redactor`]): one
//! [`RedactStream`] per unit, fed every line in order, so a PEM block drawn as a heredoc
//! over many lines is dropped whole, not just its `BEGIN` line.
//!
//! Cascade's own markers (`(sensitive value)`, `(known after apply)`) are never handed to
//! the redaction, which would otherwise take `(sensitive` for a password.

use super::strings::{quoted, quoted_inner, visible};
use super::text::{Line, SENSITIVE};
use crate::redact::{RedactStream, Redactor};
use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Secrets shorter than this are not searched for in the text (they would mask everything).
pub(super) const MIN_SECRET_CHARS: usize = 4;

/// What the renderer writes around values; a secret found inside it is not searched for.
const VOCABULARY: &str = "null -> # forces replacement # whitespace changes force replacement \
    jsonencode( <<-EOT EOT (known after apply) (sensitive value) # (1 unchanged attributes \
    elements hidden) # Warning: this attribute value will no longer be marked as sensitive \
    # after applying this change. will be marked as sensitive and will not display in UI \
    output The value is unchanged. true false";

/// Every sensitive string of one plan, ready to be searched for.
pub(super) struct Secrets {
    matcher: Option<AhoCorasick>,
}

impl Secrets {
    /// Collects the strings the plan marks sensitive anywhere.
    pub fn of_plan(top: &Map<String, Value>) -> Secrets {
        let mut found = BTreeSet::new();
        for list in ["resource_changes", "resource_drift"] {
            for entry in top
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(change) = entry.get("change") {
                    marked_pair(change, &mut found);
                }
            }
        }
        for change in top
            .get("output_changes")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::values)
        {
            marked_pair(change, &mut found);
        }
        let declared = top
            .get("configuration")
            .and_then(|c| c.get("root_module"))
            .and_then(|m| m.get("variables"))
            .and_then(Value::as_object);
        for (name, declaration) in declared.into_iter().flatten() {
            if declaration.get("sensitive") == Some(&Value::Bool(true))
                && let Some(value) = top.get("variables").and_then(|v| v.get(name))
            {
                strings(value.get("value").unwrap_or(&Value::Null), &mut found);
            }
        }
        for state in [
            top.get("prior_state").and_then(|s| s.get("values")),
            top.get("planned_values"),
        ]
        .into_iter()
        .flatten()
        {
            state_values(state, &mut found, 0);
        }
        Secrets::of_strings(found)
    }

    fn of_strings(found: BTreeSet<String>) -> Secrets {
        let mut patterns = BTreeSet::new();
        let searchable = |s: &str| s.chars().count() >= MIN_SECRET_CHARS && !VOCABULARY.contains(s);
        for secret in found.iter().filter(|s| searchable(s)) {
            // The secret as the renderer may have written it: quoted, inside quotes,
            // raw, escaped.
            patterns.insert(quoted(secret));
            patterns.insert(quoted_inner(secret));
            patterns.insert(secret.clone());
            patterns.insert(visible(secret).into_owned());
        }
        // Each line of a multi-line secret, for heredocs.
        for line in found
            .iter()
            .filter(|s| s.contains('\n'))
            .flat_map(|s| s.lines())
        {
            if searchable(line) {
                patterns.insert(line.to_string());
                patterns.insert(visible(line).into_owned());
            }
        }
        let matcher = (!patterns.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .expect("literal patterns build")
        });
        Secrets { matcher }
    }

    /// Appends `text` to `out` with every known secret replaced by `(sensitive value)`,
    /// the rest redacted by `stream`. True when anything was appended (a piece wholly
    /// inside a PEM block is not).
    fn mask_into(&self, text: &str, out: &mut String, stream: &mut RedactStream) -> bool {
        let Some(matcher) = &self.matcher else {
            return redact_into(text, out, stream);
        };
        let mut shown = false;
        let mut last = 0;
        for found in matcher.find_iter(text) {
            // The masked secret shows, whatever the stream makes of the text before it.
            redact_into(&text[last..found.start()], out, stream);
            out.push_str(SENSITIVE);
            shown = true;
            last = found.end();
        }
        redact_into(&text[last..], out, stream) || shown
    }

    /// The line as it may be published, or `None` when all of it lies inside a PEM block.
    /// `values` says whether the line holds plan values (attribute lines) or only what
    /// cascade writes around them (headers, notes), which is never searched for secrets;
    /// both are redacted. `stream` carries the redaction from line to line.
    pub fn mask(&self, line: &Line, values: bool, stream: &mut RedactStream) -> Option<String> {
        let mut out = String::with_capacity(line.text.len());
        let mut shown = !line.markers.is_empty();
        let mut last = 0;
        let mut piece = |text: &str, out: &mut String| {
            shown |= if values {
                self.mask_into(text, out, stream)
            } else {
                redact_into(text, out, stream)
            };
        };
        for marker in &line.markers {
            piece(&line.text[last..marker.start], &mut out);
            out.push_str(&line.text[marker.clone()]);
            last = marker.end;
        }
        piece(&line.text[last..], &mut out);
        // Everything written was escaped already; this catches what a change might miss.
        shown.then(|| visible(&out).into_owned())
    }
}

/// Appends `text` redacted; false when the stream hides all of it (inside a PEM block).
fn redact_into(text: &str, out: &mut String, stream: &mut RedactStream) -> bool {
    match stream.piece(text) {
        Some(shown) => {
            out.push_str(&shown);
            true
        }
        None => false,
    }
}

/// Strings of a change's `before` and `after` under their sensitive marks.
fn marked_pair(change: &Value, found: &mut BTreeSet<String>) {
    let null = Value::Null;
    let side = |key: &str| change.get(key).unwrap_or(&null);
    marked(side("before"), side("before_sensitive"), found, 0);
    marked(side("after"), side("after_sensitive"), found, 0);
}

/// Strings of `value` wherever `marks` (the same shape, `true` marking a subtree) says so.
fn marked(value: &Value, marks: &Value, found: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match (marks, value) {
        (Value::Bool(true), _) => strings(value, found),
        (Value::Object(marks), Value::Object(values)) => {
            for (key, mark) in marks {
                if let Some(v) = values.get(key) {
                    marked(v, mark, found, depth + 1);
                }
            }
        }
        (Value::Array(marks), Value::Array(values)) => {
            for (mark, v) in marks.iter().zip(values) {
                marked(v, mark, found, depth + 1);
            }
        }
        _ => {}
    }
}

/// The documents are at most as deep as serde_json parses (128); this is a backstop.
const MAX_DEPTH: usize = 256;

/// Every string inside `value`.
fn strings(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            found.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, found)),
        Value::Object(map) => map.values().for_each(|v| strings(v, found)),
        _ => {}
    }
}

/// Sensitive strings of a state or planned-values module tree: resources' `values` under
/// `sensitive_values`, outputs marked `sensitive`.
fn state_values(module_values: &Value, found: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for output in module_values
        .get("outputs")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::values)
    {
        if output.get("sensitive") == Some(&Value::Bool(true)) {
            strings(output.get("value").unwrap_or(&Value::Null), found);
        }
    }
    // A state's values hold a root module; a child module is its own module.
    let module = module_values.get("root_module").unwrap_or(module_values);
    for resource in module
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let null = Value::Null;
        marked(
            resource.get("values").unwrap_or(&null),
            resource.get("sensitive_values").unwrap_or(&null),
            found,
            0,
        );
    }
    for child in module
        .get("child_modules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        state_values(child, found, depth + 1);
    }
}

/// The text of one unit, cut to its limits as lines arrive.
pub(super) struct Sink {
    secrets: Secrets,
    stream: RedactStream,
    max_chars: usize,
    max_line_chars: usize,
    text: String,
    chars: usize,
    cut: usize,
}

impl Sink {
    pub fn new(
        secrets: Secrets,
        redactor: &Redactor,
        max_chars: usize,
        max_line_chars: usize,
    ) -> Sink {
        Sink {
            secrets,
            stream: redactor.stream(),
            max_chars,
            max_line_chars,
            text: String::new(),
            chars: 0,
            cut: 0,
        }
    }

    /// Adds a line (see [`Secrets::mask`] for `values`); once the limit is reached lines
    /// are only counted. A line wholly inside a PEM block is dropped.
    pub fn line(&mut self, line: &Line, values: bool) {
        if self.cut > 0 {
            self.cut += 1;
            return;
        }
        let Some(masked) = self.secrets.mask(line, values, &mut self.stream) else {
            return;
        };
        let masked = cap_line(masked, self.max_line_chars);
        let chars = masked.chars().count() + 1;
        if self.chars + chars > self.max_chars {
            self.cut = 1;
            return;
        }
        self.chars += chars;
        self.text.push_str(&masked);
        self.text.push('\n');
    }

    /// Adds a line cascade wrote (no plan values in it).
    pub fn note(&mut self, text: &str) {
        self.line(
            &Line {
                text: text.to_string(),
                markers: Vec::new(),
            },
            false,
        );
    }

    /// The text and the number of lines cut; a note ends the text if any were.
    pub fn finish(mut self) -> (String, usize) {
        // Past the limit nothing more was fed to the stream, so a block it is still in
        // was cut, not left open: only a block open at the end hides the rest.
        if let Some(note) = self.stream.finish().filter(|_| self.cut == 0) {
            self.text.push_str(&visible(&note));
            self.text.push('\n');
        }
        if self.cut > 0 {
            self.text.push_str(&format!(
                "… {} more lines cut; the unit's log (`cascade plan` prints where) has the whole plan\n",
                self.cut
            ));
        }
        if self.text.ends_with('\n') {
            self.text.pop();
        }
        (self.text, self.cut)
    }
}

/// A line longer than `max` characters, cut with a note saying how much.
fn cap_line(line: String, max: usize) -> String {
    let count = line.chars().count();
    if count <= max {
        return line;
    }
    let keep: String = line.chars().take(max).collect();
    format!("{keep}… ({} more characters cut)", count - max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secrets(list: &[&str]) -> Secrets {
        Secrets::of_strings(list.iter().map(|s| s.to_string()).collect())
    }

    /// Masks one line with a fresh redaction stream.
    fn mask(s: &Secrets, line: &Line, values: bool) -> String {
        s.mask(line, values, &mut Redactor::default().stream())
            .expect("not inside a PEM block")
    }

    fn line(text: &str) -> Line {
        Line {
            text: text.to_string(),
            markers: Vec::new(),
        }
    }

    #[test]
    fn known_secrets_are_masked_in_values_only() {
        let s = secrets(&["hunter22", "ab"]);
        assert_eq!(
            mask(&s, &line(r#"  - secret = "hunter22" -> null"#), true),
            "  - secret = (sensitive value) -> null"
        );
        assert_eq!(
            mask(&s, &line(r#"  + url = "https://x:hunter22@h/""#), true),
            r#"  + url = "https://x:(sensitive value)@h/""#
        );
        // Too short to search for.
        assert_eq!(mask(&s, &line(r#"  + x = "ab""#), true), r#"  + x = "ab""#);
        // Headers are what cascade writes, never searched.
        assert_eq!(
            mask(&s, &line("  # a.hunter22 will be created"), false),
            "  # a.hunter22 will be created"
        );
    }

    #[test]
    fn secrets_in_the_vocabulary_are_left_to_the_marks() {
        let s = secrets(&["forces replacement", "null"]);
        assert_eq!(
            mask(
                &s,
                &line(r#"  ~ x = "a" -> null # forces replacement"#),
                true
            ),
            r#"  ~ x = "a" -> null # forces replacement"#
        );
    }

    #[test]
    fn multi_line_and_escaped_secrets_are_found() {
        let s = secrets(&["first line\nsecond \"q\" line"]);
        assert_eq!(
            mask(&s, &line("        first line"), true),
            "        (sensitive value)"
        );
        assert_eq!(
            mask(
                &s,
                &line(r#"  + x = "first line\nsecond \"q\" line""#),
                true
            ),
            "  + x = (sensitive value)"
        );
    }

    #[test]
    fn markers_are_not_redacted() {
        let mut l = line("  ~ db_password = ");
        let start = l.text.len();
        l.text.push_str(SENSITIVE);
        l.markers.push(start..l.text.len());
        assert_eq!(
            mask(&secrets(&[]), &l, true),
            "  ~ db_password = (sensitive value)"
        );
        assert_eq!(
            mask(&secrets(&[]), &line(r#"  + db_password = "hunter2""#), true),
            "  + db_password = [redacted]"
        );
    }

    #[test]
    fn collects_marked_strings_everywhere() {
        let plan = json!({
            "resource_changes": [{"change": {
                "before": {"a": "before-secret", "b": "plain", "l": ["x1", "list-secret"]},
                "before_sensitive": {"a": true, "l": [false, true]},
                "after": {"o": {"deep": "after-secret"}},
                "after_sensitive": {"o": true},
            }}],
            "output_changes": {"o": {"before": "out-secret", "before_sensitive": true}},
            "variables": {"v": {"value": "var-secret"}, "w": {"value": "not-secret"}},
            "configuration": {"root_module": {"variables": {"v": {"sensitive": true}}}},
            "prior_state": {"values": {
                "outputs": {"p": {"sensitive": true, "value": "state-output"}},
                "root_module": {"child_modules": [{"resources": [{
                    "values": {"k": "module-secret"}, "sensitive_values": {"k": true}}]}]}
            }},
        });
        let s = Secrets::of_plan(plan.as_object().unwrap());
        let text = "before-secret plain list-secret x1 after-secret out-secret var-secret \
                    not-secret state-output module-secret";
        assert_eq!(
            mask(&s, &line(text), true),
            "(sensitive value) plain (sensitive value) x1 (sensitive value) (sensitive value) \
             (sensitive value) not-secret (sensitive value) (sensitive value)"
        );
    }

    #[test]
    fn the_sink_cuts_lines_and_text_with_a_note() {
        let mut sink = Sink::new(secrets(&[]), &Redactor::default(), 45, 10);
        sink.note("0123456789abcdef");
        sink.note("short");
        sink.note("this one no longer fits");
        sink.note("nor this");
        let (text, cut) = sink.finish();
        assert_eq!(cut, 2);
        assert_eq!(
            text,
            "0123456789… (6 more characters cut)\nshort\n\
             … 2 more lines cut; the unit's log (`cascade plan` prints where) has the whole plan"
        );
    }

    fn marked_line(text: &str, marker: &str) -> Line {
        let mut l = line(text);
        let start = l.text.len();
        l.text.push_str(marker);
        l.markers.push(start..l.text.len());
        l
    }

    #[test]
    fn the_log_redaction_sees_the_whole_text_and_leaves_the_markers() {
        let redactor = Redactor::with_secrets(["tfvar-secret-value"]);
        let mut sink = Sink::new(secrets(&[]), &redactor, 10_000, 1_000);
        for text in [
            "  + key = <<-EOT",
            "        -----BEGIN RSA PRIVATE KEY-----",
            "        MIIEpAIBAAKCAQEA1",
            "        -----END RSA PRIVATE KEY-----",
            "    EOT",
        ] {
            sink.line(&line(text), true);
        }
        sink.line(
            &marked_line("  + id       = ", super::super::text::UNKNOWN),
            true,
        );
        sink.line(&marked_line("  ~ password = ", SENSITIVE), true);
        sink.line(&line(r#"  + input    = "tfvar-secret-value""#), true);
        let (text, cut) = sink.finish();
        assert_eq!(cut, 0);
        assert_eq!(
            text,
            "  + key = <<-EOT\n        [redacted PEM block]\n    EOT\n\
             \x20 + id       = (known after apply)\n\
             \x20 ~ password = (sensitive value)\n\
             \x20 + input    = \"[redacted]\""
        );
    }

    #[test]
    fn a_pem_block_that_never_ends_hides_the_rest_of_the_unit() {
        let mut sink = Sink::new(secrets(&[]), &Redactor::default(), 10_000, 1_000);
        for text in [
            "  + a = \"ok\"",
            "  + key = <<-EOT",
            "        -----BEGIN CERTIFICATE-----",
            "        MIIBszCCAVmgAwIBAgIU",
            "  + b = \"after\"",
        ] {
            sink.line(&line(text), true);
        }
        let (text, _) = sink.finish();
        assert_eq!(
            text,
            "  + a = \"ok\"\n  + key = <<-EOT\n        [redacted PEM block]\n\
             [redacted PEM block] (no END line: the rest is hidden)"
        );
    }
}
