//! Reading `terraform show -json <planfile>`: counts, labels and the fingerprint document.
//!
//! The rules are in the parent module's docs. Values are copied from the plan into the
//! fingerprint document and hashed; nothing here returns, formats or logs them. Errors name
//! a JSON path and what was expected there, never what was found.

use super::{Counts, Fingerprint, OutputChange, PlanError, PlanSummary, ResourceChange};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The fields of a resource change, and of its `change`, that go into the fingerprint.
const RESOURCE_FIELDS: [&str; 8] = [
    "address",
    "previous_address",
    "mode",
    "type",
    "name",
    "index",
    "deposed",
    "provider_name",
];
const RESOURCE_CHANGE_FIELDS: [&str; 8] = [
    "actions",
    "before",
    "after",
    "after_unknown",
    "before_sensitive",
    "after_sensitive",
    "replace_paths",
    "importing",
];
/// The fields of an output change that go into the fingerprint, besides its name.
const OUTPUT_FIELDS: [&str; 6] = [
    "actions",
    "before",
    "after",
    "after_unknown",
    "before_sensitive",
    "after_sensitive",
];

/// What a resource change's `actions` list means; shared with the renderer, which draws
/// the two orders of a replacement differently (`-/+` and `+/-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    NoOp,
    Create,
    Update,
    Delete,
    /// `["delete","create"]`: the default replacement.
    DeleteThenCreate,
    /// `["create","delete"]`: `create_before_destroy`.
    CreateThenDelete,
    Read,
    Forget,
    /// `["create","forget"]`: a replacement whose old object is forgotten, not destroyed.
    CreateThenForget,
}

impl Action {
    pub(super) fn of(actions: &[&str]) -> Option<Action> {
        Some(match actions {
            ["no-op"] => Action::NoOp,
            ["create"] => Action::Create,
            ["update"] => Action::Update,
            ["delete"] => Action::Delete,
            ["delete", "create"] => Action::DeleteThenCreate,
            ["create", "delete"] => Action::CreateThenDelete,
            ["read"] => Action::Read,
            ["forget"] => Action::Forget,
            ["create", "forget"] => Action::CreateThenForget,
            _ => return None,
        })
    }

    fn labels(self) -> &'static [&'static str] {
        match self {
            Action::NoOp => &[],
            Action::Create => &["create"],
            Action::Update => &["update"],
            Action::Delete => &["delete"],
            Action::DeleteThenCreate | Action::CreateThenDelete => &["replace"],
            Action::Read => &["read"],
            Action::Forget => &["forget"],
            Action::CreateThenForget => &["create", "forget"],
        }
    }

    fn count(self, counts: &mut Counts) {
        match self {
            Action::NoOp => {}
            Action::Create => counts.add += 1,
            Action::Update => counts.change += 1,
            Action::Delete => counts.destroy += 1,
            Action::DeleteThenCreate | Action::CreateThenDelete => counts.replace += 1,
            Action::Read => counts.read += 1,
            Action::Forget => counts.forget += 1,
            Action::CreateThenForget => {
                counts.add += 1;
                counts.forget += 1;
            }
        }
    }
}

/// One changed resource: its sort key, what the summary shows, what the hash sees.
struct Resource {
    address: String,
    deposed: String,
    summary: ResourceChange,
    hashed: Value,
}

pub(super) fn summarise(doc: &Value) -> Result<PlanSummary, PlanError> {
    let top = plan_fields(doc);

    let mut counts = Counts::default();
    let mut resources = Vec::new();
    for (i, change) in list(top, "resource_changes")?.iter().enumerate() {
        if let Some(resource) = resource(change, i, &mut counts)? {
            resources.push(resource);
        }
    }
    resources.sort_by(|a, b| (&a.address, &a.deposed).cmp(&(&b.address, &b.deposed)));

    let mut outputs = Vec::new();
    for (name, change) in output_changes(top)? {
        if let Some(output) = output(name, change)? {
            outputs.push(output);
        }
    }
    outputs.sort_by(|a: &(OutputChange, Value), b| a.0.name.cmp(&b.0.name));

    let (resources, hashed_resources): (Vec<_>, Vec<_>) =
        resources.into_iter().map(|r| (r.summary, r.hashed)).unzip();
    let (outputs, hashed_outputs): (Vec<_>, Vec<_>) = outputs.into_iter().unzip();
    let fingerprint = fingerprint_of(&document(hashed_resources, hashed_outputs))
        .map_err(PlanError::Canonical)?;
    Ok(PlanSummary {
        counts,
        resources,
        outputs,
        fingerprint,
    })
}

/// Parses `show -json` output and refuses what is not a finished 1.x plan; the summary and
/// the renderer read the same documents.
pub(super) fn plan_document(json: &[u8]) -> Result<Value, PlanError> {
    // Parsing into a `Value` can only fail on syntax, whose messages quote no input.
    let doc: Value = serde_json::from_slice(json).map_err(PlanError::NotJson)?;
    let Value::Object(top) = &doc else {
        return Err(PlanError::NotAPlan {
            reason: "it is not a JSON object",
        });
    };
    let Some(version) = top.get("format_version").and_then(Value::as_str) else {
        return Err(PlanError::NotAPlan {
            reason: "it has no format_version",
        });
    };
    if version.split('.').next() != Some("1") {
        return Err(PlanError::UnsupportedFormat {
            version: printable(version),
        });
    }
    if !top.contains_key("planned_values") {
        return Err(PlanError::NotAPlan {
            reason: "it has no planned_values; it looks like `terraform show -json` of a state",
        });
    }
    if top.get("errored") == Some(&Value::Bool(true)) {
        return Err(PlanError::Errored);
    }
    Ok(doc)
}

/// The top-level fields of a document [`plan_document`] accepted.
pub(super) fn plan_fields(doc: &Value) -> &Map<String, Value> {
    doc.as_object()
        .expect("plan_document accepts JSON objects only")
}

/// The plan's `output_changes`, by name; none when the field is missing or null.
pub(super) fn output_changes(
    top: &Map<String, Value>,
) -> Result<impl Iterator<Item = (&String, &Value)>, PlanError> {
    match top.get("output_changes") {
        None | Some(Value::Null) => Ok(None.into_iter().flatten()),
        Some(Value::Object(map)) => Ok(Some(map.iter()).into_iter().flatten()),
        Some(_) => Err(unexpected("output_changes".into(), "an object")),
    }
}

/// The document whose canonical form is hashed; see the module docs.
fn document(resource_changes: Vec<Value>, output_changes: Vec<Value>) -> Value {
    json!({
        "resource_changes": resource_changes,
        "output_changes": output_changes,
    })
}

/// The document of a plan that changes nothing.
pub(super) fn empty_document() -> Value {
    document(Vec::new(), Vec::new())
}

pub(super) fn fingerprint_of(document: &Value) -> Result<Fingerprint, serde_json::Error> {
    let canonical = serde_jcs::to_vec(document)?;
    Ok(Fingerprint(hex::encode(Sha256::digest(&canonical))))
}

/// One `resource_changes` entry with the fields every reader needs checked.
pub(super) struct ResourceEntry<'a> {
    pub entry: &'a Map<String, Value>,
    pub address: &'a str,
    pub change: &'a Map<String, Value>,
    pub action: Action,
}

/// Checks the `i`th `resource_changes` entry: an object with an address, a `change` object
/// and actions cascade knows.
pub(super) fn resource_entry(value: &Value, i: usize) -> Result<ResourceEntry<'_>, PlanError> {
    let path = format!("resource_changes[{i}]");
    let entry = object(value, &path)?;
    let address = string(entry, &path, "address")?;
    let change = object(
        entry.get("change").unwrap_or(&Value::Null),
        &format!("{path}.change"),
    )?;
    let actions = actions(change, &format!("{path}.change"))?;
    let action = Action::of(&actions).ok_or_else(|| PlanError::UnknownActions {
        address: address.to_string(),
        actions: actions.iter().map(|a| printable(a)).collect(),
    })?;
    Ok(ResourceEntry {
        entry,
        address,
        change,
        action,
    })
}

/// Reads one `resource_changes` entry; `None` for a plain no-op.
fn resource(value: &Value, i: usize, counts: &mut Counts) -> Result<Option<Resource>, PlanError> {
    let ResourceEntry {
        entry,
        address,
        change,
        action,
    } = resource_entry(value, i)?;
    let importing = present(change.get("importing"));
    let moved = present(entry.get("previous_address"));

    let mut labels: Vec<String> = action.labels().iter().map(|l| l.to_string()).collect();
    if importing {
        labels.push("import".into());
    }
    if moved {
        labels.push("move".into());
    }
    if labels.is_empty() {
        return Ok(None);
    }
    action.count(counts);
    counts.import += u32::from(importing);
    counts.moved += u32::from(moved);

    let mut hashed = pick(entry, &RESOURCE_FIELDS);
    hashed.insert(
        "change".into(),
        Value::Object(pick(change, &RESOURCE_CHANGE_FIELDS)),
    );
    let deposed = entry
        .get("deposed")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Some(Resource {
        address: address.to_string(),
        deposed,
        summary: ResourceChange {
            address: address.to_string(),
            actions: labels,
            forced_by: forced_by(change),
        },
        hashed: Value::Object(hashed),
    }))
}

/// The top-level attributes of a change's `replace_paths`: each path's first step when it is
/// a name. Anything malformed is left out; the fingerprint still hashes the whole field.
fn forced_by(change: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<String> = change
        .get("replace_paths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|path| path.as_array()?.first()?.as_str())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Reads one `output_changes` entry; `None` for a no-op.
fn output(name: &str, value: &Value) -> Result<Option<(OutputChange, Value)>, PlanError> {
    let path = format!("output_changes.{name}");
    let change = object(value, &path)?;
    let actions = actions(change, &path)?;
    let action = match actions.as_slice() {
        ["no-op"] => return Ok(None),
        [a @ ("create" | "update" | "delete")] => *a,
        _ => {
            return Err(PlanError::UnknownActions {
                address: format!("output.{name}"),
                actions: actions.iter().map(|a| printable(a)).collect(),
            });
        }
    };
    let mut hashed = pick(change, &OUTPUT_FIELDS);
    hashed.insert("name".into(), Value::String(name.to_string()));
    Ok(Some((
        OutputChange {
            name: name.to_string(),
            action: action.to_string(),
        },
        Value::Object(hashed),
    )))
}

/// Copies the named fields, a missing one as `null`, so that every entry has the same shape.
fn pick(from: &Map<String, Value>, fields: &[&str]) -> Map<String, Value> {
    fields
        .iter()
        .map(|f| (f.to_string(), from.get(*f).cloned().unwrap_or(Value::Null)))
        .collect()
}

pub(super) fn present(value: Option<&Value>) -> bool {
    !matches!(value, None | Some(Value::Null))
}

pub(super) fn list<'a>(top: &'a Map<String, Value>, key: &str) -> Result<&'a [Value], PlanError> {
    match top.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(unexpected(key.to_string(), "a list")),
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, PlanError> {
    value
        .as_object()
        .ok_or_else(|| unexpected(path.to_string(), "an object"))
}

fn string<'a>(entry: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a str, PlanError> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| unexpected(format!("{path}.{key}"), "a string"))
}

fn actions<'a>(change: &'a Map<String, Value>, path: &str) -> Result<Vec<&'a str>, PlanError> {
    let bad = || unexpected(format!("{path}.actions"), "a list of action names");
    change
        .get("actions")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|a| a.as_str().ok_or_else(bad))
        .collect()
}

fn unexpected(path: String, expected: &'static str) -> PlanError {
    PlanError::Unexpected { path, expected }
}

/// Names and versions are not values, but a broken document could hold anything there:
/// keep what an error message quotes short and on one line.
fn printable(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(40).collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal plan around the given resource and output changes.
    fn plan(resource_changes: Value, output_changes: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "format_version": "1.2",
            "terraform_version": "1.11.4",
            "planned_values": {"root_module": {}},
            "resource_changes": resource_changes,
            "output_changes": output_changes,
            "timestamp": "2026-01-01T00:00:00Z",
            "applyable": true,
            "complete": true,
            "errored": false,
        }))
        .unwrap()
    }

    fn rc(address: &str, actions: &[&str]) -> Value {
        json!({
            "address": address,
            "mode": "managed",
            "type": "terraform_data",
            "name": address.rsplit('.').next().unwrap(),
            "provider_name": "terraform.io/builtin/terraform",
            "change": {"actions": actions, "before": null, "after": {"input": "v"}},
        })
    }

    fn summary(resource_changes: Value) -> PlanSummary {
        PlanSummary::from_show_json(&plan(resource_changes, json!({}))).unwrap()
    }

    #[test]
    fn counts_each_action_once() {
        let s = summary(json!([
            rc("a.create", &["create"]),
            rc("b.update", &["update"]),
            rc("c.delete", &["delete"]),
            rc("d.replace", &["delete", "create"]),
            rc("e.replace_cbd", &["create", "delete"]),
            rc("f.read", &["read"]),
            rc("g.forget", &["forget"]),
            rc("h.noop", &["no-op"]),
        ]));
        let expected = Counts {
            add: 1,
            change: 1,
            destroy: 1,
            replace: 2,
            read: 1,
            forget: 1,
            ..Counts::default()
        };
        assert_eq!(s.counts, expected);
        let labels: Vec<_> = s
            .resources
            .iter()
            .map(|r| format!("{} {}", r.address, r.actions.join(",")))
            .collect();
        assert_eq!(
            labels,
            [
                "a.create create",
                "b.update update",
                "c.delete delete",
                "d.replace replace",
                "e.replace_cbd replace",
                "f.read read",
                "g.forget forget",
            ]
        );
    }

    #[test]
    fn a_replacement_names_the_top_level_attributes_that_force_it_and_no_deeper_step() {
        let mut replaced = rc("a.b", &["delete", "create"]);
        replaced["change"]["replace_paths"] = json!([
            ["triggers_replace"],
            ["tags", "secret-key"],
            [0],
            ["ami"],
            ["ami", 1]
        ]);
        let s = summary(json!([replaced, rc("c.d", &["update"])]));
        assert_eq!(
            s.resources[0].forced_by,
            ["ami", "tags", "triggers_replace"]
        );
        assert!(s.resources[1].forced_by.is_empty());
        let stored = serde_json::to_string(&s.resources[1]).unwrap();
        assert!(!stored.contains("forced_by"), "{stored}");
        let old: super::ResourceChange =
            serde_json::from_str(r#"{"address":"x","actions":["replace"]}"#).unwrap();
        assert!(old.forced_by.is_empty());
    }

    #[test]
    fn create_then_forget_adds_and_forgets() {
        let s = summary(json!([rc("a.b", &["create", "forget"])]));
        assert_eq!(s.counts.add, 1);
        assert_eq!(s.counts.forget, 1);
        assert_eq!(s.counts.replace, 0);
        assert_eq!(s.resources[0].actions, ["create", "forget"]);
    }

    #[test]
    fn import_and_move_come_after_the_action() {
        let mut r = rc("x.b", &["update"]);
        r["change"]["importing"] = json!({"id": "i-1"});
        r["previous_address"] = json!("x.a");
        let s = summary(json!([r]));
        assert_eq!(s.resources[0].actions, ["update", "import", "move"]);
        assert_eq!(
            (s.counts.change, s.counts.import, s.counts.moved),
            (1, 1, 1)
        );
    }

    #[test]
    fn resources_are_sorted_by_address() {
        let s = summary(json!([rc("z.a", &["create"]), rc("a.z", &["create"])]));
        let addresses: Vec<_> = s.resources.iter().map(|r| r.address.as_str()).collect();
        assert_eq!(addresses, ["a.z", "z.a"]);
        let reversed = summary(json!([rc("a.z", &["create"]), rc("z.a", &["create"])]));
        assert_eq!(s.fingerprint, reversed.fingerprint);
    }

    #[test]
    fn a_deposed_object_is_its_own_change() {
        let mut deposed = rc("a.b", &["delete"]);
        deposed["deposed"] = json!("00000001");
        let s = summary(json!([deposed, rc("a.b", &["create"])]));
        assert_eq!(s.counts.add, 1);
        assert_eq!(s.counts.destroy, 1);
        let other = {
            let mut d = rc("a.b", &["delete"]);
            d["deposed"] = json!("00000002");
            summary(json!([rc("a.b", &["create"]), d]))
        };
        assert_ne!(s.fingerprint, other.fingerprint);
    }

    #[test]
    fn drift_and_volatile_fields_do_not_count() {
        let base: Value =
            serde_json::from_slice(&plan(json!([rc("a.b", &["create"])]), json!({}))).unwrap();
        let mut noisy = base.clone();
        noisy["terraform_version"] = json!("1.99.0");
        noisy["format_version"] = json!("1.9");
        noisy["timestamp"] = json!("2030-01-01T00:00:00Z");
        noisy["resource_drift"] = json!([rc("c.d", &["update"])]);
        noisy["variables"] = json!({"v": {"value": "other"}});
        noisy["resource_changes"][0]["action_reason"] = json!("replace_because_tainted");
        let a = PlanSummary::from_show_json(&serde_json::to_vec(&base).unwrap()).unwrap();
        let b = PlanSummary::from_show_json(&serde_json::to_vec(&noisy).unwrap()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn missing_and_null_fields_hash_alike() {
        // Terraform leaves `after` out of an output whose value is unknown.
        let with_null = json!({"o": {"actions": ["create"], "before": null, "after": null,
            "after_unknown": true, "before_sensitive": false, "after_sensitive": false}});
        let without = json!({"o": {"actions": ["create"], "before": null,
            "after_unknown": true, "before_sensitive": false, "after_sensitive": false}});
        let a = PlanSummary::from_show_json(&plan(json!([]), with_null)).unwrap();
        let b = PlanSummary::from_show_json(&plan(json!([]), without)).unwrap();
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.fingerprint, Fingerprint::empty());
    }

    #[test]
    fn empty_plan_without_any_lists() {
        let doc = br#"{"format_version":"1.2","planned_values":{"root_module":{}}}"#;
        let s = PlanSummary::from_show_json(doc).unwrap();
        assert!(s.is_empty());
        assert_eq!(s.fingerprint, Fingerprint::empty());
        assert_eq!(s.counts, Counts::default());
    }

    #[test]
    fn unknown_actions_are_refused() {
        let err = PlanSummary::from_show_json(&plan(json!([rc("a.b", &["explode"])]), json!({})))
            .unwrap_err();
        insta::assert_snapshot!(err, @r#"`a.b` has the actions ["explode"], which cascade does not know; upgrade cascade or plan with a Terraform release it supports"#);
        let err = PlanSummary::from_show_json(&plan(
            json!([]),
            json!({"o": {"actions": ["delete", "create"]}}),
        ))
        .unwrap_err();
        insta::assert_snapshot!(err, @r#"`output.o` has the actions ["delete", "create"], which cascade does not know; upgrade cascade or plan with a Terraform release it supports"#);
    }

    #[test]
    fn malformed_documents() {
        let err = |doc: &[u8]| PlanSummary::from_show_json(doc).unwrap_err().to_string();
        insta::assert_snapshot!(err(b"{\"format_version\": "), @"the plan is not valid JSON (EOF while parsing a value at line 1 column 19); cascade reads the output of `terraform show -json <planfile>`, check that nothing else was written to stdout");
        insta::assert_snapshot!(err(b"[]"), @"this JSON is not a plan (it is not a JSON object); cascade reads the output of `terraform show -json <planfile>` run on a saved plan file");
        insta::assert_snapshot!(err(b"{}"), @"this JSON is not a plan (it has no format_version); cascade reads the output of `terraform show -json <planfile>` run on a saved plan file");
        insta::assert_snapshot!(err(br#"{"format_version":"2.0","planned_values":{}}"#), @"plan JSON format_version 2.0 is not supported: cascade reads format 1.x (Terraform 1.x, OpenTofu); use a release that writes format 1.x or upgrade cascade");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"errored":true}"#), @"the plan is marked as errored: Terraform could not finish planning; fix the errors shown in the plan log and plan again");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"resource_changes":{}}"#), @"unexpected plan JSON: `resource_changes` should be a list; is this the output of `terraform show -json <planfile>`?");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"resource_changes":[{"address":"a.b"}]}"#), @"unexpected plan JSON: `resource_changes[0].change` should be an object; is this the output of `terraform show -json <planfile>`?");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"resource_changes":[{"address":"a.b","change":{"actions":"create"}}]}"#), @"unexpected plan JSON: `resource_changes[0].change.actions` should be a list of action names; is this the output of `terraform show -json <planfile>`?");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"resource_changes":[{"change":{"actions":["create"]}}]}"#), @"unexpected plan JSON: `resource_changes[0].address` should be a string; is this the output of `terraform show -json <planfile>`?");
        insta::assert_snapshot!(err(br#"{"format_version":"1.2","planned_values":{},"output_changes":[]}"#), @"unexpected plan JSON: `output_changes` should be an object; is this the output of `terraform show -json <planfile>`?");
    }

    #[test]
    fn fingerprint_definition_is_pinned() {
        // Changing what goes into the fingerprint changes every pending plan's id; this pin
        // makes such a change deliberate. The plan is fixed, so the value is too.
        let mut moved = rc("a.moved", &["no-op"]);
        moved["previous_address"] = json!("a.old");
        let doc = plan(
            json!([rc("a.create", &["create"]), moved, rc("a.noop", &["no-op"])]),
            json!({"o": {"actions": ["update"], "before": 1, "after": 2,
                "after_unknown": false, "before_sensitive": false, "after_sensitive": false}}),
        );
        let s = PlanSummary::from_show_json(&doc).unwrap();
        assert_eq!(
            s.fingerprint.as_str(),
            "f43c081c5b8729a562c9fc979a1748e6d17c52230d4f2482420441f25c87a1ef"
        );
    }

    #[test]
    fn errors_never_quote_values() {
        // A value where an action name belongs must not end up in the message.
        let doc = br#"{"format_version":"1.2","planned_values":{},"resource_changes":[{"address":"a.b","change":{"actions":[{"secret":"hunter2"}]}}]}"#;
        let err = PlanSummary::from_show_json(doc).unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
        assert!(!format!("{err:?}").contains("hunter2"));
    }
}
