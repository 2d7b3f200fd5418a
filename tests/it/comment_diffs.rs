//! The plan comment with each unit's rendered plan, through the path the bot takes: plan
//! JSON → summary and rendering (as the engine makes them) → plan record → view → template →
//! split and cap. Snapshots of the templates with rendered plans (also split over the cap)
//! and with a plan's policy findings (the whole plan's, then each unit's),
//! hostile values (5,000 resources, a 1 MiB value, backticks, control characters, HTML)
//! checked by an independent Markdown parser, and the order in which plans are left out.

use crate::support::show_json;

use cascade::comment::plan_view;
use cascade::comment::{
    ApplyOutcome, ApplyStatus, ApplyUnitView, ApplyView, ChangeView, Comments, MAX_COMMENTS,
    PlanView, parse_marker,
};
use cascade::forge::github::COMMENT_LIMIT;
use cascade::plan::render::{RenderOptions, RenderedPlan};
use cascade::plan::{Counts, PlanId, PlanSummary};
use cascade::store::{PlanKey, PlanRecord, PlanStatus, PlannedUnit, UnitStatus};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use show_json::plan as doc;

// ---------------------------------------------------------------- plans, as terraform writes them

/// A `terraform_data` change: `[actions]`, before, after, and the sensitive marks.
fn data(name: &str, actions: &[&str], before: Value, after: Value, sensitive: Value) -> Value {
    let creating = actions == ["create"];
    json!({
        "address": format!("terraform_data.{name}"),
        "mode": "managed",
        "type": "terraform_data",
        "name": name,
        "provider_name": "terraform.io/builtin/terraform",
        "change": {
            "actions": actions,
            "before": before,
            "after": after,
            "after_unknown": if creating { json!({"id": true, "output": true}) } else { json!({}) },
            "before_sensitive": if creating { json!(false) } else { sensitive.clone() },
            "after_sensitive": if actions == ["delete"] { json!(false) } else { sensitive },
        },
    })
}

/// A planned unit as the engine records it: summary and rendering from the same JSON.
fn planned(path: &str, wave: usize, destroy: bool, json: &[u8]) -> PlannedUnit {
    PlannedUnit {
        path: UnitPath::new(path),
        wave,
        destroy,
        deps: Vec::new(),
        tool: Tool::Terraform,
        init_args: Vec::new(),
        stack: None,
        status: UnitStatus::Planned,
        detail: String::new(),
        summary: Some(PlanSummary::from_show_json(json).unwrap()),
        rendered: Some(RenderedPlan::from_show_json(json, &RenderOptions::default()).unwrap()),
        retried: 0,
        steps: Vec::new(),
        policies: Vec::new(),
    }
}

fn record(units: Vec<PlannedUnit>) -> PlanRecord {
    PlanRecord {
        id: PlanId::from_stored("3f9a2c1b7d4e".into()),
        repo: PlanKey::from_stored("acme/infra"),
        head: "a1b2c3d4e5f6".into(),
        base: "9f8e7d6c5b4a".into(),
        status: PlanStatus::Current,
        run_id: "run".into(),
        units,
        created_at: 0,
        policies: Vec::new(),
    }
}

const SECRET: &str = "hunter2-correct-horse";

/// The change from the issue: an instance type grows, a sensitive value changes.
fn app_plan() -> Vec<u8> {
    doc(
        vec![data(
            "web",
            &["update"],
            json!({"id": "5e1f", "input": {"instance_type": "t3.small", "db_password": "old-password-1",
                   "tags": {"team": "platform"}}, "output": null, "triggers_replace": null}),
            json!({"id": "5e1f", "input": {"instance_type": "t3.2xlarge", "db_password": SECRET,
                   "tags": {"team": "platform"}}, "output": null, "triggers_replace": null}),
            json!({"input": {"db_password": true}}),
        )],
        json!({"instance_type": {"actions": ["update"], "before": "t3.small", "after": "t3.2xlarge",
               "after_unknown": false, "before_sensitive": false, "after_sensitive": false}}),
    )
}

fn network_plan() -> Vec<u8> {
    doc(
        vec![data(
            "vpc",
            &["create"],
            Value::Null,
            json!({"input": {"cidr": "10.0.0.0/16"}, "triggers_replace": null}),
            json!({}),
        )],
        json!({}),
    )
}

fn legacy_plan() -> Vec<u8> {
    doc(
        vec![data(
            "queue",
            &["delete"],
            json!({"id": "9a7c", "input": "jobs", "output": "jobs", "triggers_replace": null}),
            Value::Null,
            json!({}),
        )],
        json!({}),
    )
}

fn rendered_plan() -> PlanView {
    let mut app = planned("live/prod/app", 2, false, &app_plan());
    app.deps = vec![UnitPath::new("live/prod/network")];
    plan_view(
        &record(vec![
            planned("live/prod/network", 1, false, &network_plan()),
            app,
            planned("live/prod/legacy", 3, true, &legacy_plan()),
        ]),
        &[],
    )
}

// ---------------------------------------------------------------- checks

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// What an independent CommonMark parser makes of a body: the text inside fenced code
/// blocks, and everything outside them (text, inline code, HTML). Also checks that code
/// blocks and `<details>` tags are balanced.
struct Parsed {
    code: String,
    outside: String,
}

fn parse(body: &str) -> Parsed {
    let mut parsed = Parsed {
        code: String::new(),
        outside: String::new(),
    };
    let mut in_code = false;
    let mut details: i64 = 0;
    for event in Parser::new(body) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(t) if in_code => parsed.code.push_str(&t),
            Event::Text(t) | Event::Code(t) => parsed.outside.push_str(&t),
            Event::Html(h) | Event::InlineHtml(h) => {
                details += h.matches("<details>").count() as i64;
                details -= h.matches("</details>").count() as i64;
                assert!(details >= 0, "</details> closes a block it did not open");
                parsed.outside.push_str(&h);
            }
            _ => {}
        }
    }
    assert!(!in_code, "a code block is left open");
    assert_eq!(details, 0, "a <details> block is left open");
    parsed
}

/// Every part: within the limit, its marker first, balanced, no raw control character.
fn check_parts(parts: &[String], limit: usize) {
    for (i, part) in parts.iter().enumerate() {
        assert!(
            chars(part) <= limit,
            "part {} has {} chars",
            i + 1,
            chars(part)
        );
        assert_eq!(parse_marker(part).unwrap().part, i + 1);
        parse(part);
        assert!(
            !part.chars().any(|c| c.is_control() && c != '\n'),
            "part {} holds a control character",
            i + 1
        );
    }
}

// ---------------------------------------------------------------- snapshots

#[test]
fn a_plan_comment_shows_each_units_change_as_terraform_draws_it() {
    let parts = Comments::new()
        .plan_comment(&rendered_plan(), COMMENT_LIMIT)
        .unwrap();
    assert_eq!(parts.len(), 1);
    let body = &parts[0];
    check_parts(&parts, COMMENT_LIMIT);
    let parsed = parse(body);
    assert!(
        parsed.code.contains(r#""t3.small" -> "t3.2xlarge""#),
        "{body}"
    );
    assert!(parsed.code.contains("(sensitive value)"));
    assert!(!body.contains(SECRET) && !body.contains("old-password-1"));
    insta::assert_snapshot!("comment_plan_rendered", body);
}

#[test]
fn whole_plan_findings_come_first_in_the_policies_section_named_the_whole_plan() {
    use crate::comment_render::finding;
    let mut network = planned("live/prod/network", 1, false, &network_plan());
    network.policies = vec![finding(
        "guard",
        true,
        &["`terraform_data.vpc` is created in prod"],
        &[],
    )];
    let mut plan = record(vec![network]);
    plan.policies = vec![
        finding(
            "spread",
            true,
            &[
                "`live/prod/network` changes but its dependent `live/prod/app` did not plan (@acme/net)",
            ],
            &[],
        ),
        finding(
            "budget",
            false,
            &[],
            &["the plan adds 1 resource across 1 unit"],
        ),
        finding("clean", true, &[], &[]),
    ];
    let parts = Comments::new()
        .plan_comment(&plan_view(&plan, &[]), COMMENT_LIMIT)
        .unwrap();
    let body = &parts[0];
    check_parts(&parts, COMMENT_LIMIT);
    assert!(!body.contains("@acme/net"), "{body}");
    assert!(
        !body.contains("clean"),
        "a set that found nothing is left out: {body}"
    );
    let whole = body.find("- whole plan — `spread`").expect(body);
    assert!(whole < body.find("- `live/prod/network` — `guard`").unwrap());
    assert!(body.contains("- whole plan — `budget`"), "{body}");
    insta::assert_snapshot!("comment_plan_whole_plan_policies", body);
}

#[test]
fn an_apply_result_shows_the_new_plan_rendered_the_same_way() {
    let mut new_plan = rendered_plan();
    new_plan.plan_id = "b7e23ec29af2".into();
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::PlanChanged,
        units: vec![
            ApplyUnitView {
                path: "live/prod/network".into(),
                status: ApplyStatus::Applied,
                detail: String::new(),
                destroy: false,
                applied: Some((
                    Counts {
                        add: 1,
                        ..Counts::default()
                    },
                    0,
                )),
                duration: Some(std::time::Duration::from_millis(2300)),
                output: vec![
                    "terraform_data.vpc: Creating...".into(),
                    "terraform_data.vpc: Creation complete after 0s [id=5e1f]".into(),
                ],
                since_approval: None,
            },
            ApplyUnitView {
                path: "live/prod/app".into(),
                status: ApplyStatus::ChangedSinceApproval,
                detail: "approved 8f14e45fceea, now 0cc175b9c0f1".into(),
                destroy: false,
                applied: None,
                duration: None,
                output: Vec::new(),
                since_approval: Some(ChangeView {
                    upstream: vec!["live/prod/network".into()],
                    difference: Some(
                        "--- approved\n+++ now\n@@ -3,3 +3,3 @@\n         id    = \"5e1f\"\n       ~ input = {\n-          ~ subnet_id     = \"subnet-0aa\" -> (known after apply)\n+          ~ subnet_id     = \"subnet-0aa\" -> \"subnet-0bb\"".into(),
                    ),
                }),
            },
        ],
        new_plan: Some(new_plan),
        steps: Vec::new(),
    };
    let parts = Comments::new().apply_comment(&view, COMMENT_LIMIT).unwrap();
    check_parts(&parts, COMMENT_LIMIT);
    assert!(parts[0].contains(r#""t3.small" -> "t3.2xlarge""#));
    assert!(!parts[0].contains(SECRET));
    insta::assert_snapshot!("comment_apply_plan_changed_rendered", parts[0]);
}

/// `n` units in one wave; unit `i` updates `lines(i)` resources.
fn units_of_sizes(lines: impl Fn(usize) -> usize, n: usize) -> PlanView {
    let units = (0..n)
        .map(|i| {
            let changes: Vec<Value> = (0..lines(i))
                .map(|r| {
                    data(
                        &format!("r{r}"),
                        &["update"],
                        json!({"id": format!("{r}"), "input": format!("v{r}-old")}),
                        json!({"id": format!("{r}"), "input": format!("v{r}-new")}),
                        json!({}),
                    )
                })
                .collect();
            planned(
                &format!("live/unit-{i:02}"),
                1,
                false,
                &doc(changes, json!({})),
            )
        })
        .collect();
    plan_view(&record(units), &[])
}

#[test]
fn a_plan_split_over_the_cap_leaves_the_largest_plans_out_and_says_so() {
    // Six units of 2 to 12 resources, in parts of 3,000 characters, at most three parts.
    let sizes = [2, 12, 4, 10, 6, 8];
    let view = units_of_sizes(|i| sizes[i], 6);
    let parts = Comments::new()
        .plan_comment_within(&view, 3_000, 3)
        .unwrap();
    assert!(parts.len() <= 3);
    check_parts(&parts, 3_000);
    let all = parts.join("\n");
    let cut: Vec<usize> = (0..6)
        .filter(|i| {
            let block = &all[all
                .find(&format!("<summary><code>live/unit-{i:02}</code> —"))
                .unwrap()..];
            block[..block.find("</details>").unwrap()].contains("is not shown here")
        })
        .map(|i| sizes[i])
        .collect();
    // Some were left out, the largest first; the sentence says how many.
    assert!(!cut.is_empty() && cut.len() < 6, "{cut:?}");
    let smallest_cut = *cut.iter().min().unwrap();
    assert!(
        sizes.iter().all(|s| *s < smallest_cut || cut.contains(s)),
        "{cut:?}"
    );
    let n = cut.len();
    let sentence = if n == 1 {
        "The plan of 1 unit is not shown below".to_string()
    } else {
        format!("The plans of {n} units are not shown below")
    };
    assert!(all.contains(&format!(
        "{sentence} (the largest first): cascade posts at most 3 comments. \
         Run `cascade plan --format markdown` locally to see {}.",
        if n == 1 { "it" } else { "them" }
    )));
    assert!(all.contains(r#""v1-old" -> "v1-new""#), "unit-00 is shown");
    insta::assert_snapshot!("comment_plan_over_the_cap", parts.join("\n\n======\n\n"));
    // Without a cap (what `cascade plan` prints) nothing is left out.
    let whole = Comments::new()
        .plan_comment_within(&view, 3_000, usize::MAX)
        .unwrap();
    assert!(whole.len() > 3);
    check_parts(&whole, 3_000);
    let whole = whole.join("\n");
    assert!(!whole.contains("not shown"));
    assert_eq!(whole.matches(r#""v11-old" -> "v11-new""#).count(), 1);
}

#[test]
fn among_plans_of_one_size_the_later_unit_is_left_out_first() {
    let view = units_of_sizes(|_| 6, 3);
    let one = Comments::new()
        .plan_comment_within(&view, COMMENT_LIMIT, usize::MAX)
        .unwrap()
        .remove(0);
    // One comment, a little too short for all three rendered plans.
    let limit = chars(&one) - 300;
    let parts = Comments::new()
        .plan_comment_within(&view, limit, 1)
        .unwrap();
    assert_eq!(parts.len(), 1);
    check_parts(&parts, limit);
    let all = parts.join("\n");
    assert!(
        all.contains("The plan of 1 unit is not shown below"),
        "{all}"
    );
    let shown = |unit: &str| {
        let block = &all[all
            .find(&format!("<summary><code>{unit}</code> —"))
            .unwrap()..];
        !block[..block.find("</details>").unwrap()].contains("is not shown here")
    };
    assert!(shown("live/unit-00") && shown("live/unit-01") && !shown("live/unit-02"));
}

// ---------------------------------------------------------------- hostile plans

/// Values written to break out of the code block, hide text or make GitHub read HTML.
const HOSTILE: [&str; 9] = [
    "EVIL```",
    "EVIL ```````````` twelve",
    "EVIL\u{0}\u{1b}[31mred\r\nsecond line",
    "EVIL</details></summary><details>",
    "EVIL~~~",
    "EVIL\u{202e}reversed\u{200b}",
    "```\nEVIL multi\n</details>\n~~~~\n```````````````````",
    "EVIL `inline` <script>alert(1)</script>",
    "EVIL [link](https://example.com) **bold** <!-- comment",
];

fn hostile_plan(resources: usize, big_value: bool) -> Vec<u8> {
    let mut changes: Vec<Value> = (0..resources)
        .map(|r| {
            let bad = HOSTILE[r % HOSTILE.len()];
            data(
                &format!("r{r}"),
                &["update"],
                json!({"id": format!("{r}"), "input": {"v": format!("{bad} old {r}"), "n": r}}),
                json!({"id": format!("{r}"), "input": {"v": format!("{bad} new {r}"), "n": r}}),
                json!({}),
            )
        })
        .collect();
    if big_value {
        // 1 MiB in one value, backticks and newlines included.
        let big = "EVIL ``` line\n".repeat(1024 * 1024 / 14);
        changes.insert(
            0,
            data(
                "big",
                &["create"],
                Value::Null,
                json!({"input": big}),
                json!({}),
            ),
        );
    }
    doc(changes, json!({}))
}

#[test]
fn hostile_values_stay_inside_their_code_blocks_through_the_whole_comment() {
    let mut units = vec![planned("live/huge", 1, false, &hostile_plan(5_000, true))];
    // Enough hostile units besides to need more than the eleven comments.
    units.extend((0..40).map(|i| {
        planned(
            &format!("live/hostile-{i:02}"),
            2,
            false,
            &hostile_plan(120, false),
        )
    }));
    let view = plan_view(&record(units), &[]);
    let parts = Comments::new().plan_comment(&view, COMMENT_LIMIT).unwrap();
    assert_eq!(parts.len(), MAX_COMMENTS, "the cap holds");
    check_parts(&parts, COMMENT_LIMIT);
    let mut code = String::new();
    for part in &parts {
        let parsed = parse(part);
        assert!(
            !parsed.outside.contains("EVIL"),
            "a value got out of its code block:\n{}",
            parsed.outside
        );
        code.push_str(&parsed.code);
    }
    assert!(
        code.contains("EVIL ```````````` twelve"),
        "values are shown, in code"
    );
    let all = parts.join("\n");
    assert!(all.contains("units are not shown below (the largest first)"));
    // The 5,000-resource unit is cut by the renderer's own limit, with its note, or left
    // out by the cap with its line: never silently.
    let huge = &all[all.find("<summary><code>live/huge</code> —").unwrap()..];
    let huge = &huge[..huge.find("</details>").unwrap()];
    assert!(
        huge.contains("more lines cut") || huge.contains("is not shown here"),
        "{huge}"
    );
}
