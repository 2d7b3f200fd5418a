//! The plan comment's open part stays short whatever the plan's size: rendered with a GFM
//! reader (pulldown-cmark, as GitHub's renderer reads Markdown), the lines a reviewer sees
//! without opening a `<details>` block stay within a budget, risky changes first.

use cascade::comment::{Comments, PlanView, UnitView, WaveView};
use cascade::forge::github::COMMENT_LIMIT;
use cascade::plan::{Counts, ResourceChange};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

fn change(address: &str, action: &str) -> ResourceChange {
    ResourceChange {
        address: address.into(),
        actions: vec![action.into()],
        forced_by: if action == "replace" {
            vec!["engine_version".into()]
        } else {
            Vec::new()
        },
    }
}

fn unit(path: &str, resources: Vec<ResourceChange>) -> UnitView {
    let mut counts = Counts::default();
    for r in &resources {
        match r.actions[0].as_str() {
            "update" => counts.change += 1,
            _ => counts.replace += 1,
        }
    }
    UnitView {
        path: path.into(),
        counts,
        fingerprint: "5d41402abc4b".into(),
        no_changes: resources.is_empty(),
        resources,
        outputs: Vec::new(),
        provisional: false,
        rendered: None,
        retried: 0,
    }
}

/// 41 units in 4 waves: 8 databases each replaced, 16 services each changed, 17 unchanged.
fn large_plan() -> PlanView {
    let mut units: Vec<UnitView> = Vec::new();
    for i in 0..8 {
        units.push(unit(
            &format!("live/prod/data/db-{i:02}"),
            vec![change("aws_db_instance.main", "replace")],
        ));
    }
    for i in 0..16 {
        units.push(unit(
            &format!("live/prod/app/svc-{i:02}"),
            vec![change("aws_ecs_service.main", "update")],
        ));
    }
    for i in 0..17 {
        units.push(unit(&format!("live/prod/misc/u-{i:02}"), Vec::new()));
    }
    let mut totals = Counts::default();
    for u in &units {
        totals.change += u.counts.change;
        totals.replace += u.counts.replace;
    }
    let mut waves: Vec<WaveView> = (1..=4)
        .map(|number| WaveView {
            number,
            units: Vec::new(),
        })
        .collect();
    for (i, u) in units.into_iter().enumerate() {
        waves[i % 4].units.push(u);
    }
    PlanView {
        merge_mode: Default::default(),
        plan_id: "3f9a2c1b7d4e".into(),
        needs_approval: true,
        head: "a1b2c3d".into(),
        base: "9f8e7d6".into(),
        totals,
        waves,
        destroys: Vec::new(),
        failed: Vec::new(),
        skipped: Vec::new(),
        unresolved: Vec::new(),
        ordered_last: Vec::new(),
        locked: Vec::new(),
        sources: Vec::new(),
        rounds: 1,
        steps: Vec::new(),
        policies: Vec::new(),
        policy_edits: Vec::new(),
        destroy_command: false,
    }
}

/// The lines outside every `<details>` block (each paragraph, heading, list item, table row
/// and code block line), and how many closed blocks there are (one `<summary>` line each).
fn visible_lines(markdown: &str) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut details = 0usize;
    let mut text = String::new();
    let mut in_code = false;
    let mut closed = 0;
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                if html.contains("<details") {
                    closed += usize::from(details == 0);
                    details += 1;
                }
                if html.contains("</details>") {
                    details = details.saturating_sub(1);
                }
            }
            _ if details > 0 => {}
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(t) if in_code => lines.extend(t.lines().map(str::to_string)),
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::TableRow
                | TagEnd::TableHead,
            ) => {
                if !text.trim().is_empty() {
                    lines.push(std::mem::take(&mut text));
                }
                text.clear();
            }
            _ => {}
        }
    }
    (lines, closed)
}

#[test]
fn a_41_unit_plan_shows_its_8_replacements_first_and_stays_within_60_open_lines() {
    let parts = Comments::new()
        .plan_comment(&large_plan(), COMMENT_LIMIT)
        .unwrap();
    assert_eq!(parts.len(), 1);
    let (lines, closed) = visible_lines(&parts[0]);
    // One closed block per changed unit's plan, and one for the unchanged units.
    assert_eq!(closed, 24 + 1);
    assert!(
        lines.len() <= 60,
        "{} open lines:\n{}",
        lines.len(),
        lines.join("\n")
    );
    // Right under the title, the summary; then the replacements, before any table row.
    assert_eq!(lines[0], "cascade plan 3f9a2c1b7d4e");
    assert_eq!(lines[1], "8 to replace, 16 to change in 24 of 41 units.");
    let first_risk = lines.iter().position(|l| l.contains("replaced")).unwrap();
    let first_row = lines.iter().position(|l| l.contains("svc-")).unwrap();
    assert!(first_risk < first_row, "{}", lines.join("\n"));
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("aws_db_instance.main") && l.contains("engine_version"))
            .count(),
        8
    );
    // The unchanged units are one closed block, not 17 rows of zeros.
    assert!(!lines.iter().any(|l| l.contains("live/prod/misc")));
    assert!(parts[0].contains("<details><summary>17 units unchanged</summary>"));
}
