//! The renderer against plans no configuration here can produce and plans written to hurt:
//! replacement and forget variants, deposed objects, deletion reasons, hostile text that
//! tries to break out of the Markdown code block, 1 MiB values, 5,000 resources, very deep
//! and very long values, and secrets that the marks miss.
//!
//! The plans are the JSON `terraform show -json` writes, built here; the oracle against
//! terraform's own rendering is `plan_render_oracle.rs`.

use crate::support::show_json;

use cascade::plan::render::{RenderOptions, RenderedPlan};
use cascade::plan::{PlanError, PlanSummary};
use serde_json::{Value, json};
use show_json::plan;
use std::time::{Duration, Instant};

/// A resource change at `address` (`[module.m.][data.]type.name[index]`) with the given
/// actions and sides.
fn rc(address: &str, actions: &[&str], before: Value, after: Value) -> Value {
    let mut local = address;
    while let Some(rest) = local.strip_prefix("module.") {
        local = rest.split_once('.').unwrap().1;
    }
    let (mode, local) = match local.strip_prefix("data.") {
        Some(rest) => ("data", rest),
        None => ("managed", local),
    };
    let (kind, name) = local.split_once('.').unwrap();
    json!({
        "address": address,
        "mode": mode,
        "type": kind,
        "name": name.split('[').next().unwrap(),
        "provider_name": "terraform.io/builtin/terraform",
        "change": {
            "actions": actions,
            "before": before,
            "after": after,
            "after_unknown": {},
            "before_sensitive": {},
            "after_sensitive": {},
        },
    })
}

fn render(doc: &[u8]) -> RenderedPlan {
    RenderedPlan::from_show_json(doc, &RenderOptions::default()).unwrap()
}

fn unlimited() -> RenderOptions {
    RenderOptions {
        max_chars: usize::MAX,
        max_line_chars: usize::MAX,
    }
}

fn with(mut change: Value, field: &str, value: Value) -> Value {
    change[field] = value;
    change
}

fn with_change(mut change: Value, field: &str, value: Value) -> Value {
    change["change"][field] = value;
    change
}

#[test]
fn actions_and_reasons_terraform_cannot_be_made_to_show_here() {
    let obj = || json!({"id": "i-1", "input": "x"});
    let changes = json!([
        rc(
            "terraform_data.forget_replace",
            &["create", "forget"],
            obj(),
            json!({"input": "y"})
        ),
        with(
            rc("terraform_data.left_over", &["delete"], obj(), Value::Null),
            "deposed",
            json!("00000001"),
        ),
        with(
            rc(
                "terraform_data.left_forgotten",
                &["forget"],
                obj(),
                Value::Null
            ),
            "deposed",
            json!("00000002"),
        ),
        with(
            rc("terraform_data.repeated", &["delete"], obj(), Value::Null),
            "action_reason",
            json!("delete_because_wrong_repetition"),
        ),
        with(
            with(
                rc("terraform_data.counted[0]", &["delete"], obj(), Value::Null),
                "action_reason",
                json!("delete_because_wrong_repetition"),
            ),
            "index",
            json!(0),
        ),
        with(
            with(
                rc(
                    "module.gone.terraform_data.x",
                    &["delete"],
                    obj(),
                    Value::Null
                ),
                "action_reason",
                json!("delete_because_no_module"),
            ),
            "module_address",
            json!("module.gone"),
        ),
        with(
            with(
                rc("terraform_data.target", &["delete"], obj(), Value::Null),
                "action_reason",
                json!("delete_because_no_move_target"),
            ),
            "previous_address",
            json!("terraform_data.source"),
        ),
        with_change(
            rc(
                "terraform_data.imported_replaced",
                &["delete", "create"],
                obj(),
                obj()
            ),
            "importing",
            json!({"id": "i-1"}),
        ),
        with_change(
            with_change(
                rc("terraform_data.generated", &["no-op"], obj(), obj()),
                "importing",
                json!({"id": "i-1"}),
            ),
            "generated_config",
            json!("resource \"terraform_data\" \"generated\" {}"),
        ),
        with_change(
            rc(
                "terraform_data.future",
                &["update"],
                obj(),
                json!({"id": "i-1", "input": "z"})
            ),
            "importing",
            json!({}),
        ),
        with(
            rc(
                "data.terraform_remote_state.check",
                &["read"],
                Value::Null,
                json!({"backend": "local"})
            ),
            "action_reason",
            json!("read_because_check_nested"),
        ),
        with(
            rc(
                "data.terraform_remote_state.gone",
                &["delete"],
                obj(),
                Value::Null
            ),
            "mode",
            json!("data"),
        ),
        rc("terraform_data.quiet", &["no-op"], obj(), obj()),
    ]);
    let text = render(&plan(changes, json!({}))).text().to_string();
    assert!(
        !text.contains("terraform_data.quiet"),
        "a plain no-op is not shown"
    );
    assert!(
        !text.contains("remote_state.gone"),
        "a data source being deleted is not shown"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn hostile_text_cannot_break_out_of_the_code_block() {
    let hostile = "`````````` ten backticks\n```\n</details>\n<details><summary>fake</summary>\n\
                   \u{1b}[31mred\u{7}\r\u{0}nul\u{202e}reversed\u{200b}\ttab";
    let changes = json!([rc(
        "terraform_data.x[\"key\u{1b}[2J\"]",
        &["update"],
        json!({"input": {"a": "old", "key\nwith newline": 1}}),
        json!({"input": {"a": hostile, "key\nwith newline": 2, "one line \u{1b}": "`x`"}}),
    )]);
    let rendered = render(&plan(changes, json!({})));
    let text = rendered.text();
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "no control character other than newline and tab:\n{text}"
    );
    for hidden in ['\u{202e}', '\u{200b}'] {
        assert!(!text.contains(hidden), "{hidden:?} is escaped");
    }
    let fence = rendered.fence();
    assert_eq!(fence.len(), 11, "longer than the ten-backtick run");
    let markdown = rendered.to_markdown();
    let lines: Vec<&str> = markdown.lines().collect();
    let closes_fence = |line: &str| {
        let t = line.trim_start();
        line.len() - t.len() <= 3 && t.starts_with(&fence)
    };
    assert_eq!(lines.iter().filter(|l| closes_fence(l)).count(), 2);
    assert!(closes_fence(lines[0]) && closes_fence(lines[lines.len() - 1]));
    insta::assert_snapshot!(text);
}

#[test]
fn fences_are_never_shorter_than_three() {
    let rendered = render(&plan(
        json!([rc(
            "terraform_data.x",
            &["create"],
            Value::Null,
            json!({"input": "no ticks"})
        )]),
        json!({}),
    ));
    assert_eq!(rendered.fence(), "```");
    assert!(
        rendered
            .to_markdown()
            .starts_with("```\n  # terraform_data.x will be created\n")
    );
    assert!(rendered.to_markdown().ends_with("\n```"));
}

#[test]
fn values_the_log_redaction_recognises_are_redacted_but_markers_stay() {
    let mut change = rc(
        "terraform_data.x",
        &["create"],
        Value::Null,
        json!({"input": {"db_password": "hunter2hunter2", "api_token": null, "note": "AKIAABCDEFGHIJKLMNOP"}}),
    );
    change["change"]["after_unknown"] = json!({"input": {"api_token": true}});
    let text = render(&plan(json!([change]), json!({}))).text().to_string();
    assert!(!text.contains("hunter2hunter2"), "{text}");
    assert!(!text.contains("AKIAABCDEFGHIJKLMNOP"), "{text}");
    assert!(
        text.contains("+ api_token   = (known after apply)"),
        "{text}"
    );
    assert!(text.contains("+ db_password = "), "{text}");
}

#[test]
fn sensitive_marks_at_any_depth_hide_the_value_and_its_copies() {
    let mut change = rc(
        "terraform_data.x",
        &["update"],
        json!({"input": {"list": [{"k": "copied-secret-value"}, 7], "n": 1}, "output": null}),
        json!({"input": {"list": [{"k": "new-secret-value"}, 8], "n": 2},
               "output": {"leak": "copied-secret-value", "in_text": "x new-secret-value y"}}),
    );
    change["change"]["before_sensitive"] = json!({"input": {"list": [{"k": true}, true]}});
    change["change"]["after_sensitive"] =
        json!({"input": {"list": [{"k": true}, true], "n": true}});
    let outputs = json!({"o": {"actions": ["update"], "before": {"deep": ["out-secret-1"]},
        "after": {"deep": ["out-secret-2"]}, "after_unknown": false,
        "before_sensitive": {"deep": [true]}, "after_sensitive": true}});
    let text = render(&plan(json!([change]), outputs)).text().to_string();
    for secret in [
        "copied-secret-value",
        "new-secret-value",
        "out-secret-1",
        "out-secret-2",
    ] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    for number in ["7", "8"] {
        assert!(!text.contains(number), "{number} leaked:\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn a_unit_of_5000_resources_is_cut_with_a_note_that_counts() {
    let changes: Vec<Value> = (0..5000)
        .map(|i| {
            rc(
                &format!("terraform_data.r[{i}]"),
                &["update"],
                json!({"id": format!("id-{i}"), "input": {"size": "small", "n": i}}),
                json!({"id": format!("id-{i}"), "input": {"size": "large", "n": i}}),
            )
        })
        .collect();
    let doc = plan(Value::Array(changes), json!({}));
    let options = RenderOptions::default();
    let cut = RenderedPlan::from_show_json(&doc, &options).unwrap();
    let full = RenderedPlan::from_show_json(&doc, &unlimited()).unwrap();
    assert_eq!(full.cut_lines(), 0);
    let shown = cut.text().lines().count() - 1;
    assert_eq!(shown + cut.cut_lines(), full.text().lines().count());
    let last = cut.text().lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "… {} more lines cut; the unit's log (`cascade plan` prints where) has the whole plan",
            cut.cut_lines()
        )
    );
    assert!(cut.text().chars().count() <= options.max_chars + last.chars().count() + 1);
    assert!(
        full.text()
            .starts_with(cut.text().rsplit_once('\n').unwrap().0)
    );
    // The summary reads the same document; rendering it changes nothing there.
    assert_eq!(
        PlanSummary::from_show_json(&doc).unwrap().counts.change,
        5000
    );
}

#[test]
fn a_value_of_one_mib_is_cut_per_line_and_per_unit() {
    let long = "x".repeat(1 << 20);
    let many_lines: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
    let mut edited = many_lines.replace("line 20000\n", "changed\n");
    edited.push_str("appended\n");
    let doc = plan(
        json!([
            rc(
                "terraform_data.long",
                &["create"],
                Value::Null,
                json!({"input": long})
            ),
            rc(
                "terraform_data.lines",
                &["update"],
                json!({"input": many_lines}),
                json!({"input": edited})
            ),
        ]),
        json!({}),
    );
    let started = Instant::now();
    let rendered = render(&doc);
    let elapsed = started.elapsed();
    let text = rendered.text();
    let full = RenderedPlan::from_show_json(&doc, &unlimited()).unwrap();
    let long_line = full.text().lines().find(|l| l.contains("xxxx")).unwrap();
    let cut_line = format!(
        "{}… ({} more characters cut)",
        long_line.chars().take(2_000).collect::<String>(),
        long_line.chars().count() - 2_000
    );
    assert!(text.lines().any(|l| l == cut_line), "{}", &text[..300]);
    assert!(text.lines().all(|l| l.chars().count() <= 2_000 + 40));
    assert!(rendered.cut_lines() > 30_000);
    assert!(text.chars().count() < 21_000);
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}

#[test]
fn long_lists_line_up_within_the_budget() {
    let before: Vec<Value> = (0..30_000).map(|i| json!(format!("e{i}"))).collect();
    let mut after = before.clone();
    after.insert(100, json!("inserted"));
    after[25_001] = json!("changed");
    let started = Instant::now();
    let rendered = RenderedPlan::from_show_json(
        &plan(
            json!([rc(
                "terraform_data.l",
                &["update"],
                json!({"input": before}),
                json!({"input": after})
            )]),
            json!({}),
        ),
        &unlimited(),
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    let text = rendered.text();
    let changed: Vec<&str> = text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("+ \"") || l.starts_with("- \""))
        .collect();
    assert_eq!(
        changed,
        ["+ \"inserted\",", "- \"e25000\",", "+ \"changed\","]
    );
}

/// Nested `{"a": …}` `depth` times around `leaf`.
fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| json!({"a": inner}))
}

#[test]
fn the_deepest_plan_serde_reads_renders_on_a_small_stack() {
    // Values as deep as the plan document allows, and a JSON string as deep as a JSON
    // string may be read, holding JSON as deep as serde reads.
    let deepest_json = serde_json::to_string(&nested(127, json!("x"))).unwrap();
    let doc = plan(
        json!([
            rc(
                "terraform_data.deep",
                &["update"],
                json!({"input": nested(118, json!("x"))}),
                json!({"input": nested(118, json!("y"))})
            ),
            rc(
                "terraform_data.json",
                &["update"],
                json!({"input": nested(28, json!(deepest_json))}),
                json!({"input": nested(28, json!("y"))})
            ),
        ]),
        json!({}),
    );
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || RenderedPlan::from_show_json(&doc, &unlimited()).map(|r| r.text().len()))
        .unwrap();
    let length = handle.join().expect("no stack overflow").unwrap();
    assert!(length > 0);
}

#[test]
fn what_the_summary_refuses_the_renderer_refuses() {
    let unknown = plan(
        json!([rc(
            "terraform_data.x",
            &["explode"],
            Value::Null,
            Value::Null
        )]),
        json!({}),
    );
    let err = RenderedPlan::from_show_json(&unknown, &RenderOptions::default()).unwrap_err();
    assert!(matches!(err, PlanError::UnknownActions { .. }), "{err}");
    let errored = br#"{"format_version":"1.2","planned_values":{},"errored":true}"#;
    let err = RenderedPlan::from_show_json(errored, &RenderOptions::default()).unwrap_err();
    assert!(matches!(err, PlanError::Errored), "{err}");
    let state = br#"{"format_version":"1.0","values":{}}"#;
    assert!(RenderedPlan::from_show_json(state, &RenderOptions::default()).is_err());
}

#[test]
fn a_plan_without_changes_renders_nothing_and_round_trips() {
    let rendered = render(&plan(
        json!([rc(
            "terraform_data.x",
            &["no-op"],
            json!({"id": "a"}),
            json!({"id": "a"})
        )]),
        json!({"o": {"actions": ["no-op"], "before": 1, "after": 1}}),
    ));
    assert!(rendered.is_empty());
    let stored = serde_json::to_string(&rendered).unwrap();
    assert_eq!(
        serde_json::from_str::<RenderedPlan>(&stored).unwrap(),
        rendered
    );
}

#[test]
fn the_whole_log_redaction_applies_pem_blocks_over_lines_and_the_childs_secrets() {
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAkeymaterial\nb64linetwo\n-----END RSA PRIVATE KEY-----\n";
    let doc = plan(
        json!([{
            "address": "terraform_data.k",
            "mode": "managed",
            "type": "terraform_data",
            "name": "k",
            "provider_name": "terraform.io/builtin/terraform",
            "change": {
                "actions": ["update"],
                "before": {"id": "i-1", "input": {"key": "old", "var": "plain", "pw": "x"}},
                "after": {"id": "i-1", "input": {"key": key, "var": "from-tf-var-1234", "pw": "y"}},
                "after_unknown": {"output": true},
                "before_sensitive": {"input": {"pw": true}},
                "after_sensitive": {"input": {"pw": true}},
            },
        }]),
        json!({}),
    );
    let redactor = cascade::redact::Redactor::with_secrets(["from-tf-var-1234"]);
    let rendered =
        RenderedPlan::from_show_json_redacted(&doc, &RenderOptions::default(), &redactor).unwrap();
    let text = rendered.text();
    for leak in [
        "MIIEpAIBAAKCAQEAkeymaterial",
        "b64linetwo",
        "from-tf-var-1234",
    ] {
        assert!(!text.contains(leak), "{leak} leaked:\n{text}");
    }
    assert!(text.contains("[redacted PEM block]"), "{text}");
    assert!(text.contains("(sensitive value)"), "{text}");
    assert!(text.contains("(known after apply)"), "{text}");
    assert!(text.contains(r#""plain" -> "[redacted]""#), "{text}");
    // Without the child's redactor, only the value the child got is left to the marks.
    let plain = render(&doc);
    assert!(plain.text().contains("from-tf-var-1234"));
    assert!(!plain.text().contains("b64linetwo"));
}
