//! How long cascade takes to render a 5,000-resource plan, next to reading the same plan
//! for its summary and fingerprint.
//!
//! ```text
//! cargo bench --bench render
//! ```
//!
//! The plan is `show -json` output built here in the shape terraform writes for
//! `terraform_data` (5,000 resources, a fifth each of: in-place updates of nested objects
//! and lists; creations with unknown values; JSON policy documents changing a key;
//! heredoc scripts changing a line; replacements with sensitive values). Rows are the
//! median of seven runs of: `PlanSummary::from_show_json` (parse, count, fingerprint);
//! `RenderedPlan::from_show_json` with the default limits (20,000 characters: most lines
//! are only counted); and with no limit (every line masked and kept); then the whole
//! comment as the bot makes it: summary and rendering as the engine makes them, the plan
//! record, `engine::views::plan_view`, the template and the split (`Comments::plan_comment`),
//! and that last part alone, from a stored record. The document's size and the rendering's
//! size are printed too.

use cascade::comment::Comments;
use cascade::comment::plan_view;
use cascade::forge::github::COMMENT_LIMIT;
use cascade::plan::render::{RenderOptions, RenderedPlan};
use cascade::plan::{PlanId, PlanSummary};
use cascade::store::{PlanKey, PlanRecord, PlanStatus, PlannedUnit, UnitStatus};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const RESOURCES: usize = 5_000;
const RUNS: usize = 7;

fn resource(i: usize) -> Value {
    let address = format!("module.app[{}].terraform_data.r[{i}]", i % 40);
    let script =
        |v: usize| format!("#!/bin/sh\nset -eu\necho start\nrun --generation={v}\necho done {i}\n");
    let policy = |actions: &[&str]| {
        serde_json::to_string(&json!({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": actions, "Resource": format!("arn:aws:s3:::b{i}/*")}
        ]}))
        .unwrap()
    };
    let id = format!("00000000-0000-0000-0000-{i:012}");
    let (actions, before, after, unknown, before_sensitive, after_sensitive) = match i % 5 {
        0 => (
            json!(["update"]),
            json!({"id": id, "input": {"instance_type": "t3.small", "name": format!("web-{i}"),
                "tags": {"env": "dev", "team": "platform"}, "ports": [80, 443, 8080]}}),
            json!({"id": id, "input": {"instance_type": "t3.2xlarge", "name": format!("web-{i}"),
                "tags": {"env": "prod", "team": "platform"}, "ports": [80, 443, 8443]}}),
            json!({"output": true}),
            json!({}),
            json!({}),
        ),
        1 => (
            json!(["create"]),
            Value::Null,
            json!({"input": {"from": null, "size": i}}),
            json!({"id": true, "output": true, "input": {"from": true}}),
            json!(false),
            json!({}),
        ),
        2 => (
            json!(["update"]),
            json!({"id": id, "input": policy(&["s3:GetObject"])}),
            json!({"id": id, "input": policy(&["s3:GetObject", "s3:PutObject"])}),
            json!({"output": true}),
            json!({}),
            json!({}),
        ),
        3 => (
            json!(["update"]),
            json!({"id": id, "input": script(1)}),
            json!({"id": id, "input": script(2)}),
            json!({"output": true}),
            json!({}),
            json!({}),
        ),
        _ => (
            json!(["delete", "create"]),
            json!({"id": id, "input": {"password": format!("pw-{i}-old")}, "triggers_replace": "a"}),
            json!({"input": {"password": format!("pw-{i}-new")}, "triggers_replace": "b"}),
            json!({"id": true, "output": true}),
            json!({"input": {"password": true}}),
            json!({"input": {"password": true}}),
        ),
    };
    json!({
        "address": address,
        "module_address": format!("module.app[{}]", i % 40),
        "mode": "managed",
        "type": "terraform_data",
        "name": "r",
        "index": i,
        "provider_name": "terraform.io/builtin/terraform",
        "change": {
            "actions": actions,
            "before": before,
            "after": after,
            "after_unknown": unknown,
            "before_sensitive": before_sensitive,
            "after_sensitive": after_sensitive,
            "replace_paths": [["triggers_replace"]],
        },
    })
}

fn median<T>(mut run: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(RUNS);
    let mut last = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        let result = run();
        times.push(started.elapsed());
        last = Some(result);
    }
    times.sort();
    (times[RUNS / 2], last.expect("at least one run"))
}

/// The plan record the engine would save for one unit planned from `doc`.
fn record(doc: &[u8]) -> PlanRecord {
    let unit = PlannedUnit {
        path: UnitPath::new("live/prod/app"),
        wave: 1,
        destroy: false,
        deps: Vec::new(),
        tool: Tool::Terraform,
        init_args: Vec::new(),
        stack: None,
        status: UnitStatus::Planned,
        detail: String::new(),
        summary: Some(PlanSummary::from_show_json(doc).unwrap()),
        rendered: Some(RenderedPlan::from_show_json(doc, &RenderOptions::default()).unwrap()),
        retried: 0,
        steps: Vec::new(),
        policies: Vec::new(),
    };
    PlanRecord {
        id: PlanId::from_stored("3f9a2c1b7d4e".into()),
        repo: PlanKey::from_stored("acme/infra"),
        head: "a1b2c3d4e5f6".into(),
        base: "9f8e7d6c5b4a".into(),
        status: PlanStatus::Current,
        run_id: "run".into(),
        units: vec![unit],
        created_at: 0,
        policies: Vec::new(),
    }
}

fn comment(record: &PlanRecord) -> Vec<String> {
    Comments::new()
        .plan_comment(&plan_view(record, &[]), COMMENT_LIMIT)
        .unwrap()
}

fn main() {
    let doc = serde_json::to_vec(&json!({
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "planned_values": {"root_module": {}},
        "resource_changes": (0..RESOURCES).map(resource).collect::<Vec<_>>(),
        "output_changes": {},
        "errored": false,
    }))
    .unwrap();

    let (summary_time, summary) = median(|| PlanSummary::from_show_json(&doc).unwrap());
    let (limited_time, limited) =
        median(|| RenderedPlan::from_show_json(&doc, &RenderOptions::default()).unwrap());
    let unlimited = RenderOptions {
        max_chars: usize::MAX,
        max_line_chars: usize::MAX,
    };
    let (full_time, full) = median(|| RenderedPlan::from_show_json(&doc, &unlimited).unwrap());
    let (whole_time, parts) = median(|| comment(&record(&doc)));
    let stored = record(&doc);
    let (template_time, _) = median(|| comment(&stored));

    println!(
        "plan: {RESOURCES} resources ({} to add, {} to change, {} to replace), {:.1} MiB of JSON",
        summary.counts.add,
        summary.counts.change,
        summary.counts.replace,
        doc.len() as f64 / (1024.0 * 1024.0)
    );
    println!("| step (median of {RUNS}) | time | output |");
    println!("|---|---|---|");
    println!(
        "| summary + fingerprint | {:.1} ms | — |",
        summary_time.as_secs_f64() * 1e3
    );
    println!(
        "| render, default limits | {:.1} ms | {} lines shown, {} cut |",
        limited_time.as_secs_f64() * 1e3,
        limited.text().lines().count(),
        limited.cut_lines()
    );
    println!(
        "| render, no limit | {:.1} ms | {} lines, {:.1} MiB |",
        full_time.as_secs_f64() * 1e3,
        full.text().lines().count(),
        full.text().len() as f64 / (1024.0 * 1024.0)
    );
    println!(
        "| whole comment: summary + render + record + view + template + split | {:.1} ms | {} part(s), {} characters |",
        whole_time.as_secs_f64() * 1e3,
        parts.len(),
        parts.iter().map(|p| p.chars().count()).sum::<usize>()
    );
    println!(
        "| comment from the stored record: view + template + split | {:.1} ms | — |",
        template_time.as_secs_f64() * 1e3
    );
    assert!(
        !full.text().contains("pw-"),
        "a sensitive value was rendered"
    );
    assert!(
        parts.iter().all(|p| !p.contains("pw-")),
        "a sensitive value reached the comment"
    );
}
