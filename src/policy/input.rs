//! The input document a policy sees (see the parent module): one per unit, `{plan, unit,
//! change, pull_request, plan_id, now, now_unix}`, and the whole-plan form `{units: [...],
//! …}` for sets that ask for every unit at once; and its JSON schema
//! (`cascade schema --policy-input`).
//!
//! Built from plain data, the plan as its parsed `show -json` document: this layer sits
//! beside `plan` and the graph walk and never imports them. The plan's sensitive values
//! are replaced before anything else sees it (`sensitive`). Never evaluates a policy nor
//! writes the document anywhere.

mod sensitive;
#[cfg(test)]
mod tests;

pub use sensitive::{MIN_SECRET_CHARS, SENSITIVE, without_sensitive};

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The unit's place in the repository and the dependency graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnitFacts {
    /// The unit's directory, relative to the repository root (`live/prod/vpc`).
    pub path: String,
    /// The `.cascade.yaml` environment it lies in, if any.
    pub environment: Option<String>,
    /// What runs it: `terragrunt`, `tofu` or `terraform`.
    pub tool: String,
    /// The units it depends on (planned and applied before it), by path.
    pub dependencies: Vec<String>,
    /// The units that depend on it, by path: every unit whose plan may change with its
    /// outputs.
    pub dependents: Vec<String>,
    /// Its wave in this plan: 1 for units with no dependency in the plan.
    pub wave: usize,
    /// The files whose change re-plans it (its read set), repo-relative.
    pub reads: Vec<String>,
}

/// What the unit's plan does, counted by resource, and its fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeCounts {
    /// Resources created.
    pub add: usize,
    /// Resources updated in place.
    pub change: usize,
    /// Resources destroyed (replacements not included).
    pub destroy: usize,
    /// Resources destroyed and created again.
    pub replace: usize,
    /// Resources imported.
    pub import: usize,
    /// Resources moved to a new address.
    #[serde(rename = "move")]
    pub move_: usize,
    /// The plan's fingerprint (SHA-256, hex), as in the comment.
    pub fingerprint: String,
}

/// The pull request the plan is for; absent for `cascade plan` outside one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PullRequestFacts {
    /// Its number (GitLab: the merge request's iid).
    pub number: u64,
    /// Its author's login.
    pub author: String,
    /// The branch it merges into.
    pub base_ref: String,
    /// The commit planned.
    pub head_sha: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// The files it changes, repo-relative.
    pub changed_files: Vec<String>,
    /// The approving reviews that count (by someone other than the author).
    pub approvals: Vec<Approval>,
    /// Whether it is a draft.
    pub draft: bool,
}

/// One approving review.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// Who approved.
    pub user: String,
    /// The commit the approval was given on.
    pub commit: String,
}

/// The document one policy evaluation sees for one unit.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(title = "cascade policy input (one unit)")]
pub struct UnitInput {
    /// The unit's plan as `terraform show -json` prints it, every sensitive value
    /// replaced by the string "(sensitive)".
    #[schemars(schema_with = "plan_schema")]
    pub plan: Value,
    /// The unit's place in the repository and the dependency graph.
    pub unit: UnitFacts,
    /// What the plan does, counted, and its fingerprint.
    pub change: ChangeCounts,
    /// The pull request; null for `cascade plan` outside one.
    #[schemars(required)]
    pub pull_request: Option<PullRequestFacts>,
    /// The plan id an `/apply` or `/approve-policies` names; null before it is known.
    #[schemars(required)]
    pub plan_id: Option<String>,
    /// The evaluation time, RFC 3339 in UTC to the second (`2026-12-01T10:00:00Z`):
    /// policies get no clock of their own (`time.now_ns` is disabled).
    pub now: String,
    /// The same time, in seconds since the Unix epoch.
    pub now_unix: i64,
}

/// The document a policy set that asks for the whole plan sees, once per plan.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(title = "cascade policy input (whole plan)")]
pub struct WholePlanInput {
    /// Every planned unit's own document, in plan order.
    #[schemars(with = "Vec<UnitInput>")]
    pub units: Vec<Value>,
    /// As in each unit's document.
    pub pull_request: Option<PullRequestFacts>,
    /// As in each unit's document.
    pub plan_id: Option<String>,
    /// As in each unit's document.
    pub now: String,
    /// As in each unit's document.
    pub now_unix: i64,
}

fn plan_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "terraform show -json, sensitive values replaced by \"(sensitive)\""
    })
}

/// One unit's input document: `plan` (a parsed `show -json` document) with its
/// sensitive values replaced, and the facts around it; `now` in seconds since the epoch.
pub fn unit_input(
    plan: &Value,
    unit: &UnitFacts,
    change: &ChangeCounts,
    pr: Option<&PullRequestFacts>,
    plan_id: Option<&str>,
    now: i64,
) -> Value {
    let input = UnitInput {
        plan: without_sensitive(plan),
        unit: unit.clone(),
        change: change.clone(),
        pull_request: pr.cloned(),
        plan_id: plan_id.map(str::to_string),
        now: rfc3339(now),
        now_unix: now,
    };
    serde_json::to_value(input).expect("the input document always serializes")
}

/// The whole-plan document: `units`, each a [`unit_input`] document, and the facts that
/// are the same for all of them.
pub fn whole_plan_input(
    units: Vec<Value>,
    pr: Option<&PullRequestFacts>,
    plan_id: Option<&str>,
    now: i64,
) -> Value {
    let input = WholePlanInput {
        units: Vec::new(),
        pull_request: pr.cloned(),
        plan_id: plan_id.map(str::to_string),
        now: rfc3339(now),
        now_unix: now,
    };
    let mut document = serde_json::to_value(input).expect("the input document always serializes");
    // Moved in, not serialized: every unit's plan at once would be copied whole.
    document["units"] = Value::Array(units);
    document
}

/// `now` as RFC 3339 in UTC; a time chrono cannot hold is the epoch.
fn rfc3339(now: i64) -> String {
    DateTime::<Utc>::from_timestamp(now, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The JSON schema of the per-unit input document, pretty-printed.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(UnitInput);
    serde_json::to_string_pretty(&schema).expect("a JSON schema always serializes")
}
