//! `terraform show -json` documents for tests that need a plan without running terraform.

use serde_json::{Value, json};

/// A plan document holding `resource_changes` and `output_changes`, as terraform 1.11
/// writes one (only the fields cascade reads, plus the version header).
pub fn plan(resource_changes: impl Into<Value>, output_changes: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "planned_values": {"root_module": {}},
        "resource_changes": resource_changes.into(),
        "output_changes": output_changes,
        "errored": false,
    }))
    .unwrap()
}
