//! The plan as a policy may see it: every value terraform marks sensitive replaced by
//! [`SENSITIVE`], so no policy (nor a `print` in one) can leak it.
//!
//! Two passes, after `plan::render`'s masking rules (mirrored here, not imported: the
//! policy layer sits beside `plan`). First the marks: resource changes' and drift's
//! `before`/`after` under `before_sensitive`/`after_sensitive`, output changes likewise,
//! state and planned values under `sensitive_values`, outputs marked `sensitive`, the
//! values of variables the configuration declares `sensitive` (and their defaults and
//! sensitive outputs' constant expressions in the configuration). Marks do not always
//! survive (`terraform_data.output` holds an unmarked copy of a sensitive input), so the
//! second pass replaces every other string that equals a replaced one, or contains one of
//! at least [`MIN_SECRET_CHARS`] characters. Addresses, types, names and actions outside
//! values are left alone, so a policy can still say which resource changes; map keys are
//! never replaced (only a whole marked map is), nor is `relevant_attributes`.
//!
//! When in doubt, replace: a mark whose shape does not mirror its value replaces the
//! whole value, and so does anything nested deeper than [`MAX_DEPTH`].

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// What a sensitive value becomes.
pub const SENSITIVE: &str = "(sensitive)";
/// Secrets shorter than this are replaced only where a string equals them, not where
/// one contains them (they would replace everything).
pub const MIN_SECRET_CHARS: usize = 4;
/// serde_json parses at most 128 levels; a document built otherwise is cut here.
const MAX_DEPTH: usize = 256;

/// Keys under which a subtree holds values from the configuration or the state, where
/// every string is looked at whatever its key.
const VALUE_KEYS: &[&str] = &[
    "before",
    "after",
    "values",
    "value",
    "default",
    "constant_value",
    "generated_config",
];
/// Keys that, outside values, name things rather than hold values.
const STRUCTURAL_KEYS: &[&str] = &[
    "address",
    "previous_address",
    "module_address",
    "mode",
    "type",
    "name",
    "provider_name",
    "provider_config_key",
    "actions",
    "action_reason",
    "format_version",
    "terraform_version",
    "references",
    "resource",
    "source",
    "version_constraint",
    "deposed",
    "timestamp",
];

/// `plan` (a `show -json` document) with its sensitive values replaced.
pub fn without_sensitive(plan: &Value) -> Value {
    let mut doc = plan.clone();
    let mut secrets = BTreeSet::new();
    if let Value::Object(top) = &mut doc {
        by_marks(top, &mut secrets);
    }
    secrets.remove(SENSITIVE);
    secrets.remove("");
    if !secrets.is_empty() {
        Scrub::new(secrets).document(&mut doc);
    }
    doc
}

/// The first pass: every marked value replaced, its strings collected.
fn by_marks(top: &mut Map<String, Value>, secrets: &mut BTreeSet<String>) {
    for list in ["resource_changes", "resource_drift"] {
        for entry in array_mut(top.get_mut(list)) {
            if let Some(change) = entry.get_mut("change") {
                marked_pair(change, secrets);
            }
        }
    }
    if let Some(Value::Object(outputs)) = top.get_mut("output_changes") {
        for change in outputs.values_mut() {
            marked_pair(change, secrets);
        }
    }
    let sensitive_variables: Vec<String> = top
        .get("configuration")
        .and_then(|c| c.get("root_module"))
        .and_then(|m| m.get("variables"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, declaration)| is_sensitive(declaration))
        .map(|(name, _)| name.clone())
        .collect();
    if let Some(Value::Object(variables)) = top.get_mut("variables") {
        for name in &sensitive_variables {
            if let Some(value) = variables.get_mut(name).and_then(|v| v.get_mut("value")) {
                replace(value, secrets);
            }
        }
    }
    if let Some(module) = top
        .get_mut("configuration")
        .and_then(|c| c.get_mut("root_module"))
    {
        configuration(module, secrets, 0);
    }
    if let Some(values) = top.get_mut("prior_state").and_then(|s| s.get_mut("values")) {
        state_values(values, secrets, 0);
    }
    if let Some(values) = top.get_mut("planned_values") {
        state_values(values, secrets, 0);
    }
}

fn is_sensitive(declaration: &Value) -> bool {
    declaration.get("sensitive") == Some(&Value::Bool(true))
}

fn array_mut(value: Option<&mut Value>) -> impl Iterator<Item = &mut Value> {
    value
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|items| items.iter_mut())
}

/// A change's `before` and `after` under their marks.
fn marked_pair(change: &mut Value, secrets: &mut BTreeSet<String>) {
    for (side, marks) in [("before", "before_sensitive"), ("after", "after_sensitive")] {
        let marks = change.get(marks).cloned().unwrap_or(Value::Null);
        if let Some(value) = change.get_mut(side) {
            marked(value, &marks, secrets, 0);
        }
    }
}

/// `value` replaced wherever `marks` (its shape, `true` marking a subtree) says so.
fn marked(value: &mut Value, marks: &Value, secrets: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return replace(value, secrets);
    }
    match (marks, &mut *value) {
        (Value::Bool(true), _) => replace(value, secrets),
        (Value::Object(marks), Value::Object(values)) => {
            for (key, mark) in marks {
                if let Some(v) = values.get_mut(key) {
                    marked(v, mark, secrets, depth + 1);
                }
            }
        }
        (Value::Array(marks), Value::Array(values)) => {
            for (mark, v) in marks.iter().zip(values.iter_mut()) {
                marked(v, mark, secrets, depth + 1);
            }
        }
        // A mark that does not mirror its value: when in doubt, replace.
        (Value::Object(_) | Value::Array(_), v) if !v.is_null() && marks_any(marks, 0) => {
            replace(value, secrets)
        }
        _ => {}
    }
}

/// True when `marks` marks anything.
fn marks_any(marks: &Value, depth: usize) -> bool {
    match marks {
        Value::Bool(true) => true,
        _ if depth > MAX_DEPTH => true,
        Value::Object(map) => map.values().any(|m| marks_any(m, depth + 1)),
        Value::Array(items) => items.iter().any(|m| marks_any(m, depth + 1)),
        _ => false,
    }
}

/// `value` becomes [`SENSITIVE`]; its strings are remembered for the second pass.
fn replace(value: &mut Value, secrets: &mut BTreeSet<String>) {
    strings(value, secrets, 0);
    *value = Value::String(SENSITIVE.to_string());
}

fn strings(value: &Value, found: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::String(s) => {
            found.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, found, depth + 1)),
        Value::Object(map) => map.values().for_each(|v| strings(v, found, depth + 1)),
        _ => {}
    }
}

/// A state's or the planned values' module tree: resources' `values` under
/// `sensitive_values`, outputs marked `sensitive`, child modules alike.
fn state_values(module_values: &mut Value, secrets: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return replace(module_values, secrets);
    }
    if let Some(Value::Object(outputs)) = module_values.get_mut("outputs") {
        for output in outputs.values_mut() {
            if is_sensitive(output)
                && let Some(value) = output.get_mut("value")
            {
                replace(value, secrets);
            }
        }
    }
    // A state's values hold a root module; a child module is its own module.
    let module = if module_values.get("root_module").is_some() {
        module_values
            .get_mut("root_module")
            .expect("checked just above")
    } else {
        module_values
    };
    for resource in array_mut(module.get_mut("resources")) {
        let marks = resource
            .get("sensitive_values")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(values) = resource.get_mut("values") {
            marked(values, &marks, secrets, 0);
        }
    }
    for child in array_mut(module.get_mut("child_modules")) {
        state_values(child, secrets, depth + 1);
    }
}

/// The configuration's module tree: sensitive variables' defaults and sensitive
/// outputs' constant expressions, in every module called.
fn configuration(module: &mut Value, secrets: &mut BTreeSet<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return replace(module, secrets);
    }
    if let Some(Value::Object(variables)) = module.get_mut("variables") {
        for declaration in variables.values_mut() {
            if is_sensitive(declaration)
                && let Some(default) = declaration.get_mut("default")
            {
                replace(default, secrets);
            }
        }
    }
    if let Some(Value::Object(outputs)) = module.get_mut("outputs") {
        for output in outputs.values_mut() {
            if is_sensitive(output)
                && let Some(constant) = output
                    .get_mut("expression")
                    .and_then(|e| e.get_mut("constant_value"))
            {
                replace(constant, secrets);
            }
        }
    }
    if let Some(Value::Object(calls)) = module.get_mut("module_calls") {
        for call in calls.values_mut() {
            if let Some(child) = call.get_mut("module") {
                configuration(child, secrets, depth + 1);
            }
        }
    }
}

/// The second pass: strings equal to a secret, or holding one long enough to search for.
struct Scrub {
    exact: BTreeSet<String>,
    inside: Option<AhoCorasick>,
}

impl Scrub {
    fn new(exact: BTreeSet<String>) -> Scrub {
        let long: Vec<&String> = exact
            .iter()
            .filter(|s| s.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        let inside = (!long.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(&long)
                .expect("literal patterns build")
        });
        Scrub { exact, inside }
    }

    fn document(&self, doc: &mut Value) {
        match doc {
            Value::Object(top) => {
                for (key, value) in top.iter_mut() {
                    if key != "relevant_attributes" {
                        self.walk(key, value, false, 1);
                    }
                }
            }
            other => self.walk("", other, true, 0),
        }
    }

    /// `value`, found under `key`; `in_values` once inside a value subtree.
    fn walk(&self, key: &str, value: &mut Value, in_values: bool, depth: usize) {
        if depth > MAX_DEPTH {
            *value = Value::String(SENSITIVE.to_string());
            return;
        }
        let in_values = in_values || VALUE_KEYS.contains(&key);
        match value {
            Value::String(text) => {
                let names_a_thing = !in_values && STRUCTURAL_KEYS.contains(&key);
                if !names_a_thing && self.holds_secret(text) {
                    *text = SENSITIVE.to_string();
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(key, item, in_values, depth + 1);
                }
            }
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    self.walk(k, v, in_values, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn holds_secret(&self, text: &str) -> bool {
        text != SENSITIVE
            && (self.exact.contains(text) || self.inside.as_ref().is_some_and(|m| m.is_match(text)))
    }
}
