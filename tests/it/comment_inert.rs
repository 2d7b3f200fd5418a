//! Text from a pull request is inert in everything cascade writes: the plan and apply
//! comments (GitHub's and GitLab's spelling), the replies to malformed commands that echo
//! what was typed, the check run's failure logs and the drift report. Each is read back by
//! an independent Markdown parser (`support::markdown_oracle`), which fails on any link,
//! image, mention, reference, foreign HTML or broken table row, and each hostile text must
//! come back whole, as code. The plan and apply comments and the replies are also insta
//! snapshots, so a reviewer sees what a hostile pull request gets.

use crate::support;

use cascade::command::read_comment;
use cascade::comment::{
    ApplyOutcome, ApplyStatus, ApplyUnitView, ApplyView, Comments, PlanView, Problem, UnitView,
    WaveView, failure_logs_text,
};
use cascade::drift::{DriftReport, FailedUnit};
use cascade::engine::LogTail;
use cascade::forge::Spelling;
use cascade::forge::github::COMMENT_LIMIT;
use cascade::plan::{Counts, ResourceChange};
use cascade::unit::UnitPath;
use support::markdown_oracle::{Reading, assert_inert};

/// A unit directory that pings a team when written plainly.
const MENTION_UNIT: &str = "live/notify @acme/platform-team";
/// A unit directory with backtick runs, a table bar and a tag (all legal in a name).
const TICKS_UNIT: &str = "live/a`b|c ``d`` <img src=x>";
/// A precondition's `error_message`, as the pull request's author wrote it.
const MESSAGE: &str =
    "✅ Approved by @acme/security [x](https://evil) ![i](https://evil/i.png) <img src=x>";
/// Every other kind of reference and markup a forge acts on.
const REFERENCES: &str = "fixes #12 GH-7 acme/infra#1 !3 ~bug %v1 $4$ &5 www.evil.com \
                          <https://evil> *em* _u_ ~~s~~ [^1] | a | b </details>";

fn unit(path: &str, address: &str) -> UnitView {
    UnitView {
        path: path.into(),
        counts: Counts {
            add: 1,
            ..Counts::default()
        },
        fingerprint: "5d41402abc4b".into(),
        resources: vec![ResourceChange {
            address: address.into(),
            actions: vec!["create".into()],
            forced_by: Vec::new(),
        }],
        outputs: Vec::new(),
        no_changes: false,
        provisional: false,
        rendered: None,
        retried: 0,
    }
}

/// The unit with one more resource, replaced, forced by an attribute name the pull
/// request's module chose.
fn replaced(mut unit: UnitView) -> UnitView {
    unit.resources.push(ResourceChange {
        address: "terraform_data.z[\"<img src=x> @acme/team\"]".into(),
        actions: vec!["replace".into()],
        forced_by: vec!["tags`|@acme/x](https://evil)".into()],
    });
    unit.counts.replace += 1;
    unit
}

fn problem(unit: &str, reason: &str) -> Problem {
    Problem {
        unit: unit.into(),
        reason: reason.into(),
        retried: 0,
    }
}

/// A plan whose unit names, failure reasons and resource addresses are all hostile.
fn hostile_plan() -> PlanView {
    PlanView {
        merge_mode: Default::default(),
        plan_id: "3f9a2c1b7d4e".into(),
        needs_approval: false,
        head: "a1b2c3d".into(),
        base: "9f8e7d6".into(),
        totals: Counts {
            add: 2,
            replace: 1,
            ..Counts::default()
        },
        waves: vec![WaveView {
            number: 1,
            units: vec![
                unit(
                    MENTION_UNIT,
                    "terraform_data.x[\"@acme/team ``` </details>\"]",
                ),
                replaced(unit(TICKS_UNIT, "terraform_data.y")),
            ],
        }],
        destroys: Vec::new(),
        failed: vec![problem(
            "live/gate",
            &format!("{MESSAGE}\n```\n</details>\n{REFERENCES}"),
        )],
        skipped: vec![problem(TICKS_UNIT, REFERENCES)],
        unresolved: vec![problem(
            "live/x @acme/y",
            "terragrunt.hcl:3:1: `#12` reads ${run_cmd(\"@acme/z\")}",
        )],
        locked: vec![problem(MENTION_UNIT, "locked by #482: merge or close it")],
        ordered_last: Vec::new(),
        // A source URL and ref a pull request wrote.
        sources: vec![cascade::comment::SourceView {
            url: "https://evil.example/@acme/team`|x](https://evil.example)".into(),
            reference: Some("v1`|@acme/team".into()),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            units: 3,
        }],
        rounds: 1,
        steps: Vec::new(),
        policies: Vec::new(),
        policy_edits: Vec::new(),
        destroy_command: false,
    }
}

/// The code spans the hostile plan must show whole, wherever a reviewer reads a name or a
/// reason.
fn assert_plan_shown_whole(reading: &Reading) {
    for whole in [MENTION_UNIT, TICKS_UNIT, "live/gate", MESSAGE, REFERENCES] {
        reading.assert_code(whole);
    }
    reading.assert_in_block(&format!("{MESSAGE}\n```\n</details>\n{REFERENCES}"));
    reading.assert_in_block("terraform_data.x[\"@acme/team ``` </details>\"]");
    reading.assert_code("https://evil.example/@acme/team`|x](https://evil.example)");
    reading.assert_code("v1`|@acme/team");
}

#[test]
fn a_hostile_plan_comment_is_inert() {
    let parts = Comments::new()
        .plan_comment(&hostile_plan(), COMMENT_LIMIT)
        .unwrap();
    assert_eq!(parts.len(), 1);
    let reading = assert_inert(&parts[0], &[]);
    assert_plan_shown_whole(&reading);
    insta::assert_snapshot!("comment_plan_hostile", parts[0]);
}

#[test]
fn a_hostile_plan_comment_is_inert_on_gitlab_and_with_logs_in_the_check() {
    for comments in [
        Comments::new().spelled(&Spelling::GITLAB),
        Comments::new().logs_in_check(true),
    ] {
        let parts = comments
            .plan_comment(&hostile_plan(), COMMENT_LIMIT)
            .unwrap();
        let reading = assert_inert(&parts[0], &[]);
        for whole in [MENTION_UNIT, TICKS_UNIT, "live/gate", MESSAGE] {
            reading.assert_code(whole);
        }
    }
}

#[test]
fn a_hostile_plan_split_over_several_comments_stays_inert() {
    let mut view = hostile_plan();
    view.waves[0].units = (0..60)
        .map(|i| unit(&format!("{TICKS_UNIT} {i:02}"), "terraform_data.y"))
        .collect();
    let parts = Comments::new().plan_comment(&view, 3_000).unwrap();
    assert!(parts.len() > 2, "{} parts", parts.len());
    for part in &parts {
        assert_inert(part, &[]);
    }
}

#[test]
fn a_hostile_apply_comment_is_inert() {
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Partial,
        units: vec![
            ApplyUnitView {
                path: MENTION_UNIT.into(),
                status: ApplyStatus::Failed,
                detail: format!("{MESSAGE}\n{REFERENCES}"),
                destroy: false,
                applied: None,
                duration: None,
                output: Vec::new(),
                since_approval: None,
            },
            ApplyUnitView {
                path: TICKS_UNIT.into(),
                status: ApplyStatus::Skipped,
                detail: format!("{MENTION_UNIT} failed"),
                destroy: false,
                applied: None,
                duration: None,
                output: Vec::new(),
                since_approval: None,
            },
            // What a provisioner the pull request wrote printed during the apply.
            ApplyUnitView {
                path: "live/gate".into(),
                status: ApplyStatus::Applied,
                detail: String::new(),
                destroy: false,
                applied: Some((Counts::default(), 1)),
                duration: Some(std::time::Duration::from_secs(75)),
                output: vec![
                    format!("terraform_data.x (local-exec): {MESSAGE}"),
                    "```".into(),
                    "</details>".into(),
                    REFERENCES.into(),
                ],
                since_approval: None,
            },
        ],
        new_plan: Some(hostile_plan()),
        steps: Vec::new(),
    };
    let parts = Comments::new().apply_comment(&view, COMMENT_LIMIT).unwrap();
    assert_eq!(parts.len(), 1);
    let reading = assert_inert(&parts[0], &[]);
    assert_plan_shown_whole(&reading);
    reading.assert_code(&format!("{MENTION_UNIT} failed"));
    reading.assert_in_block(&format!("{MESSAGE}\n{REFERENCES}"));
    insta::assert_snapshot!("comment_apply_hostile", parts[0]);
}

#[test]
fn a_newline_in_a_unit_name_cannot_end_its_line() {
    let mut view = hostile_plan();
    view.waves[0].units[0].path = "live/x\n\n![i](https://evil)\n| a | b |".into();
    view.failed[0].unit = "live/y\n</details>\n@acme/team".into();
    let body = &Comments::new().plan_comment(&view, COMMENT_LIMIT).unwrap()[0];
    let reading = assert_inert(body, &[]);
    // Shown on one line, the newlines as control pictures.
    reading.assert_code("live/x␊␊![i](https://evil)␊| a | b |");
    reading.assert_code("live/y␊</details>␊@acme/team");
}

/// Malformed commands, each with what its reply echoes (`/` stands for the forge's
/// command prefix).
const HOSTILE_COMMANDS: &[(&str, &str)] = &[
    ("/Plan @acme/platform-team", "/plan @acme/platform-team"),
    ("/help @acme/platform-team", "@acme/platform-team"),
    ("/apply x`@acme/platform-team", "x`@acme/platform-team"),
    ("/apply 3f9a2c1b7d4e 0123456789ab #12 @acme/t", "@acme/t"),
    ("/plan ../@acme/platform-team", "../@acme/platform-team"),
    ("/plan live/a`@acme/t", "live/a`@acme/t"),
    ("/plan --notify=@acme/t", "--notify=@acme/t"),
];

#[test]
fn replies_echo_what_was_typed_as_code() {
    for spelling in [&Spelling::GITHUB, &Spelling::GITLAB] {
        let spell = |text: &str| match text.strip_prefix('/') {
            Some(rest) => format!("{}{rest}", spelling.command_prefix),
            None => text.to_string(),
        };
        let mut replies = Vec::new();
        for (line, echoed) in HOSTILE_COMMANDS {
            let line = spell(line);
            let read = read_comment(&line, spelling);
            assert_eq!(read.mistakes.len(), 1, "{line}");
            let message = &read.mistakes[0].message;
            assert_inert(message, &[]).assert_code(&spell(echoed));
            replies.push(format!("{line}\n→ {message}"));
        }
        if spelling.command_prefix == "/" {
            insta::assert_snapshot!("replies_hostile", replies.join("\n\n"));
        }
    }
}

#[test]
fn the_checks_failure_logs_are_inert() {
    let tail = LogTail {
        unit: MENTION_UNIT.into(),
        lines: vec![MESSAGE.into(), REFERENCES.into(), "```".into()],
        earlier: false,
    };
    let ticks = LogTail {
        unit: TICKS_UNIT.into(),
        ..tail.clone()
    };
    let text = failure_logs_text(&[tail, ticks], 2, "failed to plan", 65_535);
    let reading = assert_inert(&text, &[]);
    reading.assert_code(MENTION_UNIT);
    reading.assert_code(TICKS_UNIT);
    reading.assert_in_block(&format!("{MESSAGE}\n{REFERENCES}\n```"));
}

#[test]
fn the_drift_report_is_inert() {
    let report = DriftReport {
        drifted: Vec::new(),
        clean: Vec::new(),
        failed: vec![
            FailedUnit {
                path: UnitPath::new(MENTION_UNIT),
                reason: MESSAGE.into(),
            },
            FailedUnit {
                path: UnitPath::new(TICKS_UNIT),
                reason: REFERENCES.into(),
            },
        ],
    };
    let reading = assert_inert(&report.markdown(), &[]);
    reading.assert_code(MENTION_UNIT);
    reading.assert_code(TICKS_UNIT);
    reading.assert_in_block(MESSAGE);
}

#[test]
fn an_override_printing_fields_plainly_is_still_inert() {
    // A repository's template that uses no helper: every `{{field}}` prints inert text, in
    // a table, a list and a `<summary>` alike.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.md.hbs"),
        "| Unit | Fingerprint |\n|---|---|\n\
         {{#each waves}}{{#each units}}| {{path}} | {{fingerprint}} |\n{{/each}}{{/each}}\n\
         {{#each failed}}- {{unit}}: {{reason}} {{detail}}\n{{/each}}\n\
         {{#each skipped}}<details><summary>{{unit}} {{reason}}</summary>\n\nx\n\n</details>\n\n{{/each}}",
    )
    .unwrap();
    let comments = Comments::with_overrides(dir.path()).unwrap();
    let body = &comments
        .plan_comment(&hostile_plan(), COMMENT_LIMIT)
        .unwrap()[0];
    let reading = assert_inert(body, &[]);
    assert!(reading.code.is_empty(), "{:?}", reading.code);
    // The text reads as it was written, but for invisible word joiners.
    let shown = reading.text.join(" ").replace('\u{2060}', "");
    for whole in [MENTION_UNIT, TICKS_UNIT, MESSAGE] {
        assert!(shown.contains(whole), "{whole:?} not in {shown:?}");
    }
}
