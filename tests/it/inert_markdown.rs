//! A workflow step's Markdown output through `cascade::inert::markdown`, read back by the
//! independent reader of `support::markdown_oracle` (GitHub's extensions, math and wiki
//! links besides): no link, image, mention, reference, foreign HTML or broken table row,
//! the addresses and the HTML shown whole as code, and a paragraph after it at the top
//! level however the output ends. (The unit tests next to the code cover strikethrough,
//! which the oracle refuses because cascade's own templates never write it.)

use crate::support;

use cascade::inert::markdown;
use support::markdown_code_and_rest;
use support::markdown_oracle::assert_inert;

/// One of each attack a step's output can try.
const ATTACKS: &[&str] = &[
    "notify @org/team about #12, owner/repo#3, GH-7, !4 ~bug %v1 $5 &6",
    "[click](javascript:alert(1)) [x](https://evil) <https://auto> www.bare.example",
    "![img](https://tracker/pixel.png)",
    "<img src=x onerror=alert(1)>",
    "<details><summary>hidden</summary>\n\n@org/inside\n\n</details>",
    "a <b onclick=x>b</b> <!-- hidden --> c",
    "# Plan: 1 to add\n\n## Apply",
    "```\nan unclosed fence that would swallow the comment",
    "```````",
    "> > > > > > > quoted [x](https://evil)",
    "- a\n  - b\n    - c\n      - d\n        - e\n          - f @org/deep",
    "| a | b |\n|---|---|\n| `x\\|y` | @org/cell |\n| [l](https://evil) | <br> |",
    "bidi \u{202e}txt.exe NUL \0 ESC \u{1b}[31m red",
    "[^1] $x$ [[wiki]] - [ ] task",
];

/// Reads `out` with the oracle, and a sentinel paragraph after it must be plain text at
/// the top level: no fence, list or quote left open swallows it.
fn assert_shown_inert(out: &str) -> support::markdown_oracle::Reading {
    let reading = assert_inert(out, &[]);
    let (_, rest) = markdown_code_and_rest(&format!("{out}\n\nSENTINEL"));
    assert!(
        rest.ends_with("SENTINEL\n"),
        "the sentinel was swallowed:\n{out}"
    );
    reading
}

#[test]
fn each_attack_is_inert() {
    for attack in ATTACKS {
        let out = markdown(attack, 8 * 1024);
        let reading = assert_shown_inert(&out);
        if attack.contains("https://evil") {
            reading.assert_code("https://evil");
        }
        if attack.starts_with("<img") {
            reading.assert_in_block("<img src=x onerror=alert(1)>");
        }
    }
}

#[test]
fn all_attacks_at_once_and_cut_stay_inert() {
    let all = ATTACKS.join("\n\n");
    for limit in [0, 100, 300, 1000, 8 * 1024] {
        let out = markdown(&all, limit);
        assert!(out.len() <= limit, "{} bytes past {limit}", out.len());
        assert_shown_inert(&out);
    }
    let huge = all.repeat((1 << 20) / all.len() + 1);
    let out = markdown(&huge, 8192);
    assert!(out.len() <= 8192);
    assert!(out.ends_with(" more bytes.*"), "{out}");
    assert_shown_inert(&out);
}
