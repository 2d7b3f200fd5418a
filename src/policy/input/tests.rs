//! The input document's shape, and sensitive values replaced in crafted `show -json`
//! documents: nested maps and lists, unknown values, unmarked copies, every place
//! terraform puts values. Real terraform plans are in `tests/it/policy_input.rs`.

use super::*;
use serde_json::json;

fn facts() -> (UnitFacts, ChangeCounts, PullRequestFacts) {
    let unit = UnitFacts {
        path: "live/prod/vpc".into(),
        environment: Some("prod".into()),
        tool: "terragrunt".into(),
        dependencies: vec!["live/prod/account".into()],
        dependents: vec!["live/prod/app".into(), "live/prod/db".into()],
        wave: 2,
        reads: vec!["live/prod/vpc/terragrunt.hcl".into(), "root.hcl".into()],
    };
    let change = ChangeCounts {
        add: 1,
        change: 2,
        destroy: 3,
        replace: 4,
        import: 5,
        move_: 6,
        fingerprint: "ab".repeat(32),
    };
    let pr = PullRequestFacts {
        number: 7,
        author: "alice".into(),
        base_ref: "main".into(),
        head_sha: "c".repeat(40),
        labels: vec!["network".into()],
        changed_files: vec!["live/prod/vpc/terragrunt.hcl".into()],
        approvals: vec![Approval {
            user: "bob".into(),
            commit: "c".repeat(40),
        }],
        draft: false,
    };
    (unit, change, pr)
}

#[test]
fn a_unit_document_holds_the_plan_the_facts_and_the_time() {
    let (unit, change, pr) = facts();
    let plan = json!({"format_version": "1.2", "resource_changes": []});
    let input = unit_input(&plan, &unit, &change, Some(&pr), Some("p-1"), 1_796_119_200);
    assert_eq!(
        input,
        json!({
            "plan": plan,
            "unit": {
                "path": "live/prod/vpc", "environment": "prod", "tool": "terragrunt",
                "dependencies": ["live/prod/account"],
                "dependents": ["live/prod/app", "live/prod/db"],
                "wave": 2,
                "reads": ["live/prod/vpc/terragrunt.hcl", "root.hcl"],
            },
            "change": {
                "add": 1, "change": 2, "destroy": 3, "replace": 4, "import": 5, "move": 6,
                "fingerprint": "ab".repeat(32),
            },
            "pull_request": {
                "number": 7, "author": "alice", "base_ref": "main", "head_sha": "c".repeat(40),
                "labels": ["network"], "changed_files": ["live/prod/vpc/terragrunt.hcl"],
                "approvals": [{"user": "bob", "commit": "c".repeat(40)}],
                "draft": false,
            },
            "plan_id": "p-1",
            "now": "2026-12-01T10:00:00Z",
            "now_unix": 1_796_119_200,
        })
    );
}

#[test]
fn outside_a_pull_request_its_facts_and_the_plan_id_are_null() {
    let (unit, change, _) = facts();
    let input = unit_input(&json!({}), &unit, &change, None, None, 0);
    assert_eq!(input["pull_request"], Value::Null);
    assert_eq!(input["plan_id"], Value::Null);
    assert_eq!(input["now"], "1970-01-01T00:00:00Z");
    // A time chrono cannot hold is the epoch, not a panic.
    let input = unit_input(&json!({}), &unit, &change, None, None, i64::MAX);
    assert_eq!(input["now"], "1970-01-01T00:00:00Z");
    assert_eq!(input["now_unix"], i64::MAX);
}

#[test]
fn the_whole_plan_document_lists_every_units_document() {
    let (unit, change, pr) = facts();
    let one = unit_input(&json!({}), &unit, &change, Some(&pr), Some("p-1"), 60);
    let whole = whole_plan_input(vec![one.clone(), one.clone()], Some(&pr), Some("p-1"), 60);
    let keys: Vec<&String> = whole.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["now", "now_unix", "plan_id", "pull_request", "units"]
    );
    assert_eq!(whole["units"], json!([one, one]));
    assert_eq!(whole["now"], "1970-01-01T00:01:00Z");
    assert_eq!(whole["pull_request"]["author"], "alice");
}

#[test]
fn the_schema_describes_every_top_level_key_and_the_facts() {
    // Which keys it has is pinned through the command line, in tests/it/policy_input.rs.
    let schema: Value = serde_json::from_str(&json_schema()).unwrap();
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 7);
    for (key, property) in properties {
        assert!(property["description"].is_string(), "`{key}` undescribed");
    }
    assert_eq!(properties["plan"]["type"], "object");
    let change = &schema["$defs"]["ChangeCounts"]["properties"];
    assert!(change["move"].is_object() && change["move_"].is_null());
    let unit = &schema["$defs"]["UnitFacts"]["properties"];
    for key in [
        "path",
        "environment",
        "tool",
        "dependencies",
        "dependents",
        "wave",
        "reads",
    ] {
        assert!(unit[key]["description"].is_string(), "unit.{key}");
    }
}

/// A plan with a secret in every place terraform puts one, and non-secrets beside.
fn crafted_plan() -> Value {
    json!({
        "format_version": "1.2",
        "variables": {
            "db_password": {"value": "hunter2-db"},
            "region": {"value": "eu-west-1"},
        },
        "configuration": {"root_module": {
            "variables": {
                "db_password": {"sensitive": true, "default": "default-secret"},
                "region": {"default": "eu-west-1"},
            },
            "outputs": {
                "token": {"sensitive": true, "expression": {"constant_value": "const-token"}},
                "name": {"expression": {"constant_value": "plain-name"}},
            },
            "module_calls": {"child": {"module": {
                "variables": {"key": {"sensitive": true, "default": "child-default"}},
            }}},
        }},
        "resource_changes": [{
            "address": "aws_db_instance.main",
            "type": "aws_db_instance",
            "name": "main",
            "change": {
                "actions": ["update"],
                "before": {
                    "password": "old-pass",
                    "tags": {"env": "prod", "owner": "old-owner"},
                    "users": [{"name": "app", "secret": "list-secret"}, {"name": "ro", "secret": "ro-secret"}],
                    "port": 5432,
                },
                "after": {
                    "password": "hunter2-db",
                    "tags": {"env": "prod", "owner": "new-owner"},
                    "users": [{"name": "app", "secret": "list-secret-2"}],
                    "port": 5432,
                },
                "after_unknown": {"arn": true, "password": false},
                "before_sensitive": {
                    "password": true,
                    "tags": {"owner": true},
                    "users": [{"secret": true}, {"secret": true}],
                },
                "after_sensitive": {
                    "password": true,
                    "tags": {"owner": true},
                    "users": [{"secret": true}],
                    "arn": true,
                },
            },
        }, {
            // terraform_data.output: an unmarked copy of the sensitive input.
            "address": "terraform_data.copy",
            "type": "terraform_data",
            "name": "copy",
            "change": {
                "actions": ["create"],
                "before": null,
                "after": {"input": "hunter2-db", "url": "https://u:old-pass@db/", "pin": "42"},
                "after_unknown": {"output": true},
                "before_sensitive": false,
                "after_sensitive": {"whole": true},
            },
        }, {
            "address": "null_resource.odd",
            "type": "null_resource",
            "name": "odd",
            "change": {
                "actions": ["create"],
                "after": {"blob": "shape-mismatch-secret"},
                "after_sensitive": {"blob": {"inner": true}},
            },
        }],
        "output_changes": {
            "token": {
                "actions": ["update"],
                "before": "out-old", "after": "out-new",
                "before_sensitive": true, "after_sensitive": true,
            },
            "name": {"actions": ["no-op"], "before": "plain-name", "after": "plain-name",
                "before_sensitive": false, "after_sensitive": false},
        },
        "prior_state": {"values": {
            "outputs": {"token": {"sensitive": true, "value": "state-token"}},
            "root_module": {
                "resources": [{
                    "address": "aws_db_instance.main",
                    "values": {"password": "old-pass", "identifier": "main-db"},
                    "sensitive_values": {"password": true},
                }],
                "child_modules": [{
                    "address": "module.child",
                    "resources": [{
                        "address": "module.child.x.y",
                        "values": {"key": {"nested": ["deep-state-secret"]}},
                        "sensitive_values": {"key": true},
                    }],
                }],
            },
        }},
        "planned_values": {
            "outputs": {"token": {"sensitive": true, "value": "out-new"}},
            "root_module": {"resources": [{
                "address": "aws_db_instance.main",
                "values": {"password": "hunter2-db", "identifier": "main-db"},
                "sensitive_values": {"password": true},
            }]},
        },
        "relevant_attributes": [{"resource": "aws_db_instance.main", "attribute": ["password"]}],
    })
}

#[test]
fn every_secret_is_replaced_and_every_other_value_kept() {
    let masked = without_sensitive(&crafted_plan());
    let text = masked.to_string();
    for secret in [
        "hunter2-db",
        "default-secret",
        "const-token",
        "child-default",
        "old-pass",
        "old-owner",
        "new-owner",
        "list-secret",
        "ro-secret",
        "shape-mismatch-secret",
        "out-old",
        "out-new",
        "state-token",
        "deep-state-secret",
    ] {
        assert!(!text.contains(secret), "{secret} left in {masked:#}");
    }
    for kept in [
        "eu-west-1",
        "plain-name",
        "main-db",
        "aws_db_instance.main",
        "terraform_data.copy",
        "\"prod\"",
        "\"app\"",
        "\"42\"",
        "update",
    ] {
        assert!(text.contains(kept), "{kept} lost from {masked:#}");
    }
    let change = &masked["resource_changes"][0]["change"];
    assert_eq!(change["after"]["password"], SENSITIVE);
    assert_eq!(
        change["after"]["tags"],
        json!({"env": "prod", "owner": SENSITIVE})
    );
    assert_eq!(
        change["before"]["users"],
        json!([{"name": "app", "secret": SENSITIVE}, {"name": "ro", "secret": SENSITIVE}])
    );
    assert_eq!(change["after"]["port"], 5432);
    // An unknown value stays unknown: nothing is added where terraform wrote nothing.
    assert!(change["after"].get("arn").is_none());
    assert_eq!(
        change["after_unknown"],
        json!({"arn": true, "password": false})
    );
    // The marks stay, so a policy can tell which values were sensitive.
    assert_eq!(change["after_sensitive"]["password"], true);
    // The unmarked copy and a string holding a secret are replaced whole; a mark for a
    // key the value lacks adds nothing.
    let copy = &masked["resource_changes"][1]["change"]["after"];
    assert_eq!(
        copy,
        &json!({"input": SENSITIVE, "url": SENSITIVE, "pin": "42"})
    );
    // A mark whose shape does not mirror the value replaces the value.
    assert_eq!(
        masked["resource_changes"][2]["change"]["after"]["blob"],
        SENSITIVE
    );
    assert_eq!(masked["variables"]["db_password"]["value"], SENSITIVE);
    assert_eq!(masked["variables"]["region"]["value"], "eu-west-1");
    assert_eq!(
        masked["relevant_attributes"],
        crafted_plan()["relevant_attributes"]
    );
}

#[test]
fn a_short_secret_is_replaced_where_a_string_equals_it_only() {
    let plan = json!({
        "resource_changes": [{
            "address": "a.b",
            "change": {
                "actions": ["create"],
                "after": {"pin": "4242", "code": "42", "other": "x42x", "same": "42"},
                "after_sensitive": {"code": true},
            },
        }],
    });
    let after = &without_sensitive(&plan)["resource_changes"][0]["change"]["after"];
    assert_eq!(
        after,
        &json!({"pin": "4242", "code": SENSITIVE, "other": "x42x", "same": SENSITIVE})
    );
}

#[test]
fn addresses_and_actions_are_kept_even_when_they_hold_a_secret() {
    // A secret that happens to be a resource's name must not hide which resource changes.
    let plan = json!({
        "resource_changes": [{
            "address": "aws_s3_bucket.audit",
            "type": "aws_s3_bucket",
            "name": "audit",
            "change": {
                "actions": ["create"],
                "after": {"bucket": "audit", "label": "audit"},
                "after_sensitive": {"bucket": true},
            },
        }],
    });
    let masked = without_sensitive(&plan);
    let entry = &masked["resource_changes"][0];
    assert_eq!(entry["address"], "aws_s3_bucket.audit");
    assert_eq!(entry["name"], "audit");
    assert_eq!(entry["change"]["actions"], json!(["create"]));
    assert_eq!(
        entry["change"]["after"],
        json!({"bucket": SENSITIVE, "label": SENSITIVE})
    );
}

#[test]
fn a_plan_without_marks_is_unchanged_and_odd_documents_do_not_panic() {
    let plan = json!({"resource_changes": [{"address": "a.b", "change": {"after": {"x": "y"}}}]});
    assert_eq!(without_sensitive(&plan), plan);
    for odd in [
        json!(null),
        json!([]),
        json!("text"),
        json!({"resource_changes": {"not": "a list"}}),
        json!({"resource_changes": [{"change": {"after": "s", "after_sensitive": [true]}}]}),
        json!({"prior_state": {"values": []}, "planned_values": "x", "configuration": 1}),
    ] {
        let _ = without_sensitive(&odd);
    }
    let masked = without_sensitive(
        &json!({"resource_changes": [{"change": {"after": "s", "after_sensitive": [true]}}]}),
    );
    assert_eq!(masked["resource_changes"][0]["change"]["after"], SENSITIVE);
}
