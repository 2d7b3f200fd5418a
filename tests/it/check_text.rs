//! The failed units' logs as the `cascade` check run's text shows them: a snapshot of the
//! layout, and the attacks on it (a log is what the pull request's code printed), checked
//! with an independent Markdown parser.

use crate::support;

use cascade::comment::failure_logs_text;
use cascade::engine::LogTail;
use support::markdown_code_and_rest;

const LIMIT: usize = 65_535;

fn tail(unit: &str, lines: &[&str], earlier: bool) -> LogTail {
    LogTail {
        unit: unit.into(),
        lines: lines.iter().map(|l| l.to_string()).collect(),
        earlier,
    }
}

#[test]
fn a_terraform_error_in_the_check() {
    let lines = [
        "$ terraform plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -out=<run>/plans/dev--app-0123456789abcdef.tfplan",
        "",
        "Planning failed. Terraform encountered an error while generating this plan.",
        "",
        "╷",
        "│ Error: Resource precondition failed",
        "│ ",
        "│   on main.tf line 4, in resource \"terraform_data\" \"gate\":",
        "│    4:       condition     = 1 == 2",
        "│ ",
        "│ the gate is closed",
        "╵",
    ];
    let text = failure_logs_text(
        &[
            tail("dev/app", &lines, true),
            tail("dev/db", &["boom"], false),
        ],
        2,
        "failed to plan",
        LIMIT,
    );
    markdown_code_and_rest(&text);
    insta::assert_snapshot!("check_text_terraform_error", text);
}

#[test]
fn fences_html_and_escape_sequences_cannot_leave_the_block() {
    let hostile = [
        "```",
        "EVIL after a fence",
        "````````````````````````````````````````",
        "~~~",
        "</details><script>EVIL</script>",
        "\u{1b}[31mEVIL in red\u{1b}[0m\u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{7}",
        "\u{202E}EVIL reversed\rcarriage",
        "    ```",
        "# EVIL heading",
    ];
    let text = failure_logs_text(
        &[tail("dev/`app`</details>", &hostile, false)],
        1,
        "failed to plan",
        LIMIT,
    );
    let (code, outside) = markdown_code_and_rest(&text);
    assert!(
        !outside.contains("EVIL"),
        "escaped the block:\n{outside}\n---\n{text}"
    );
    assert!(code.contains("EVIL after a fence"), "{code}");
    assert!(code.contains("EVIL in red"), "{code}");
    for c in text.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "control character {c:?} in:\n{text}"
        );
    }
    assert!(!text.contains('\u{202E}'));
    assert!(!text.contains("[31m"), "{text}");
    // The unit's name is one code span holding all of it, backticks and tag included.
    assert!(
        text.contains("### ``dev/`app`</details>`` failed to plan"),
        "{text}"
    );
    assert!(outside.contains("\ndev/`app`</details>\n"), "{outside}");
}

#[test]
fn a_huge_log_keeps_its_most_recent_lines_within_the_limit() {
    let lines: Vec<String> = (0..200_000)
        .map(|i| format!("output line {i:06} ```"))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let small: Vec<String> = (0..10).map(|i| format!("small {i}")).collect();
    let small: Vec<&str> = small.iter().map(String::as_str).collect();
    let text = failure_logs_text(
        &[
            tail("a", &refs, true),
            tail("b", &refs, false),
            tail("c", &small, false),
        ],
        3,
        "failed to plan",
        LIMIT,
    );
    assert!(text.len() <= LIMIT, "{} bytes", text.len());
    assert!(
        text.len() > LIMIT - 2_000,
        "the budget is used: {}",
        text.len()
    );
    let (code, _) = markdown_code_and_rest(&text);
    assert!(
        code.contains("output line 199999"),
        "the newest line is kept"
    );
    assert!(!code.contains("output line 000000"), "the oldest is not");
    // The small log is whole; the two big ones share the rest evenly.
    assert!(code.contains("small 0") && code.contains("small 9"));
    let a = text.find("### `a`").unwrap();
    let b = text.find("### `b`").unwrap();
    let c = text.find("### `c`").unwrap();
    let (len_a, len_b) = ((b - a) as i64, (c - b) as i64);
    assert!((len_a - len_b).abs() < 200, "{len_a} vs {len_b}");
    assert_eq!(text.matches("*Earlier lines are not shown.*").count(), 2);
}

#[test]
fn many_failed_units_share_the_limit_and_the_rest_are_counted() {
    let line = "x".repeat(900);
    let lines: Vec<&str> = vec![line.as_str(); 200];
    let tails: Vec<LogTail> = (0..25)
        .map(|i| tail(&format!("u{i:02}"), &lines, false))
        .collect();
    let text = failure_logs_text(&tails, 120, "failed to plan", LIMIT);
    assert!(text.len() <= LIMIT, "{}", text.len());
    assert_eq!(text.matches("### ").count(), 20, "{text}");
    assert!(
        text.ends_with("100 more units failed; their logs are not shown here.\n"),
        "{text}"
    );
    markdown_code_and_rest(&text);
}
