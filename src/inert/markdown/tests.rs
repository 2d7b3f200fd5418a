//! A step's hostile Markdown through [`markdown`], each result read again by pulldown-cmark
//! with every extension GitHub has: nothing active, nothing hidden, nothing left open.

use super::*;
use crate::inert::{WORD_JOINER, hides_text};
use pulldown_cmark::TagEnd;
use regex::Regex;
use std::sync::LazyLock;

const J: char = WORD_JOINER;
const ROOMY: usize = 64 * 1024;

/// What a forge would act on in rendered text: a mention, a reference, a bare link.
static ACTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:^|[^a-z0-9_])@[a-z0-9]|#[0-9]|(?:^|[^a-z0-9])gh-[0-9]|://|(?:^|[^a-z0-9])www\.",
    )
    .unwrap()
});

/// `raw` rendered with room to spare, checked by [`assert_inert`].
fn md(raw: &str) -> String {
    let out = markdown(raw, ROOMY);
    assert_inert(&out, ROOMY);
    out
}

/// Fails unless `out` fits `limit`, holds no character that hides text (but cascade's word
/// joiners, and tabs in code blocks), and, read as GitHub reads it with a paragraph
/// `SENTINEL` after a blank line: has no heading, link, image, HTML, footnote, math or
/// task box; no `](` or `<` outside code; no mention, reference or bare link in its
/// text; and the sentinel is a paragraph at the top level, so nothing swallowed it.
fn assert_inert(out: &str, limit: usize) {
    assert!(out.len() <= limit, "{} bytes past {limit}", out.len());
    let hidden: Vec<char> = out
        .chars()
        .filter(|&c| hides_text(c) && !matches!(c, '\n' | '\t' | J))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?} in:\n{out}");
    let doc = format!("{out}\n\nSENTINEL");
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM
        | Options::ENABLE_WIKILINKS;
    let mut open: Vec<TagEnd> = Vec::new();
    let mut code: Vec<Range<usize>> = Vec::new();
    let mut sentinels = 0;
    let mut run = String::new();
    let mut in_block = false;
    for (event, at) in Parser::new_ext(&doc, options).into_offset_iter() {
        if !matches!(event, Event::Text(_)) {
            let active = ACTIVE.find(&run);
            assert!(active.is_none(), "{active:?} in {run:?} of:\n{out}");
            run.clear();
        }
        match event {
            Event::Start(tag) => {
                match &tag {
                    Tag::CodeBlock(_) => {
                        in_block = true;
                        code.push(at);
                    }
                    Tag::Heading { .. }
                    | Tag::Link { .. }
                    | Tag::Image { .. }
                    | Tag::HtmlBlock
                    | Tag::FootnoteDefinition(_)
                    | Tag::MetadataBlock(_) => panic!("{tag:?} in:\n{out}"),
                    _ => {}
                }
                open.push(tag.to_end());
            }
            Event::End(end) => {
                assert_eq!(open.pop(), Some(end));
                in_block &= end != TagEnd::CodeBlock;
            }
            Event::Text(t) if t.as_ref() == "SENTINEL" && !in_block => {
                assert_eq!(open, [TagEnd::Paragraph], "the sentinel is inside:\n{out}");
                sentinels += 1;
            }
            Event::Text(t) if !in_block => run.push_str(&t),
            Event::Code(_) => code.push(at),
            event @ (Event::Html(_)
            | Event::InlineHtml(_)
            | Event::FootnoteReference(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_)
            | Event::TaskListMarker(_)) => panic!("{event:?} in:\n{out}"),
            _ => {}
        }
    }
    assert_eq!(sentinels, 1, "the sentinel was swallowed by:\n{out}");
    for pattern in ["](", "<"] {
        for (at, _) in out.match_indices(pattern) {
            assert!(
                code.iter().any(|c| c.contains(&at)),
                "{pattern:?} outside code at {at} of:\n{out}"
            );
        }
    }
}

#[test]
fn what_cascade_writes_itself_is_kept() {
    let raw = "# Title\n\nSome *em*, **strong**, ~~gone~~ and `code`.\nNext line  \nafter a break.\n\n\
        - a\n- b\n  - c\n\n3. x\n4. y\n\n> quoted\n> > twice\n\n***\n\n\
        | a | b |\n|:--|--:|\n| 1 | `x\\|y` |\n\n```hcl title=\"x\"\nx = 1\n```\n\n    indented\n";
    assert_eq!(
        md(raw),
        "**Title**\n\n\
         Some *em*, **strong**, ~~gone~~ and `code`.\nNext line\\\nafter a break.\n\n\
         - a\n- b\n  - c\n\n3. x\n4. y\n\n> quoted\n>\n> > twice\n\n___\n\n\
         | a | b |\n| :-- | --: |\n| 1 | `x\\|y` |\n\n```hcl\nx = 1\n```\n\n```\nindented\n```"
    );
}

#[test]
fn loose_lists_stay_loose_and_neighbouring_lists_stay_apart() {
    assert_eq!(md("- a\n\n  more\n- b\n"), "- a\n\n  more\n\n- b");
    assert_eq!(md("- a\n- b\n\n* c\n"), "- a\n- b\n\n* c");
    assert_eq!(md("1. a\n\n1) b\n"), "1. a\n\n1) b");
    // An ordered list from 3 cannot follow text: the input's is text, and stays text.
    assert_eq!(md("- a\n  3. b\n"), "- a\n  3\\. b");
    assert_eq!(md("- a\n  1. b\n"), "- a\n  1. b");
}

#[test]
fn headings_are_bold_lines() {
    assert_eq!(md("## Plan: 3 to add\n"), "**Plan: 3 to add**");
    assert_eq!(md("# *a* **b** `c`\n"), "***a* b `c`**");
    assert_eq!(md("Title\n=====\n"), "**Title**");
    assert_eq!(md("#\n"), "");
}

#[test]
fn mentions_and_references_are_broken() {
    assert_eq!(
        md("cc @org/team about #12 and owner/repo#3, GH-4\n"),
        format!("cc @{J}org/team about \\#{J}12 and owner/repo\\#{J}3, GH-{J}4")
    );
    // Split over two pieces of text by an escape, still one piece for `inert::text`.
    assert_eq!(md("GH\\-4 www\\.x.com\n"), format!("GH-{J}4 www{J}.x.com"));
}

#[test]
fn links_show_their_words_and_https_addresses_as_code() {
    assert_eq!(
        md("[click](javascript:alert(1)) [x](https://evil) [y](http://plain)\n"),
        "click x `https://evil` y"
    );
    assert_eq!(
        md("<https://auto.example> <a@b.example> https://bare.example\n"),
        format!("`https://auto.example` `a@b.example` https:{J}//bare.example")
    );
    assert_eq!(
        md("[ref]\n\n[ref]: https://ref.example \"title\"\n"),
        "ref `https://ref.example`"
    );
    assert_eq!(md("*[](javascript:x)*\n"), "");
}

#[test]
fn images_are_their_alt_text() {
    assert_eq!(
        md("![img](https://tracker/pixel.png) [![badge *ok*](x)](https://ci)\n"),
        "\\[image: img\\] \\[image: badge ok\\] `https://ci`"
    );
}

#[test]
fn html_is_shown_as_code() {
    assert_eq!(
        md("<img src=x onerror=alert(1)>\n"),
        "```html\n<img src=x onerror=alert(1)>\n```"
    );
    assert_eq!(
        md("<details><summary>Cost</summary>\n\nbody\n\n</details>\n"),
        "```html\n<details><summary>Cost</summary>\n```\n\nbody\n\n```html\n</details>\n```"
    );
    assert_eq!(
        md("a <b onclick=x>bold</b> <!-- hidden -->\n"),
        "a `<b onclick=x>`bold`</b>` `<!-- hidden -->`"
    );
    assert_eq!(md("<!-- hidden -->\n"), "```html\n<!-- hidden -->\n```");
}

#[test]
fn a_fence_never_swallows_what_follows() {
    assert_eq!(md("```\nswallow\n"), "```\nswallow\n```");
    assert_eq!(md("```````\n"), "```\n\n```");
    assert_eq!(md("~~~\n```\n~~~\n"), "````\n```\n````");
    assert_eq!(md("- ```\n  open\n"), "- ```\n  open\n  ```");
    assert_eq!(md("> ```\n> open\n"), "> ```\n> open\n> ```");
}

#[test]
fn block_starts_inside_text_stay_text() {
    assert_eq!(md("1\\. one\n"), "1\\. one");
    assert_eq!(md("\\- dash\n\\+ plus\n"), "\\- dash\n\\+ plus");
    assert_eq!(md("a\n\\=\\=\\=\n"), "a\n\\===");
    assert_eq!(
        md("&#32;&#32;&#32;&#32;code?\n"),
        "&#32;&#32;&#32;&#32;code?"
    );
    assert_eq!(md("*&#32;x&#32;*\n"), "*&#32;x&#32;*");
    assert_eq!(md("\\> not a quote\n"), "&gt; not a quote");
    assert_eq!(md("\\| a \\|\n\\|---\\|\n"), "\\| a \\|\n\\|---\\|");
}

#[test]
fn wide_tables_keep_twelve_columns() {
    let head: String = (0..100).map(|i| format!("| c{i} ")).collect();
    let line: String = "| --- ".repeat(100);
    let row: String = (0..100).map(|i| format!("| {i} ")).collect();
    let out = md(&format!("{head}|\n{line}|\n{row}|\n| short |\n"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0].matches(" |").count(), 12, "{out}");
    assert_eq!(lines[3], format!("| short |{}", " |".repeat(11)));
    assert_eq!(lines[5], "*… 88 more columns not shown.*");
}

#[test]
fn deep_nesting_is_capped() {
    let quotes = format!("{} deep\n", ">".repeat(10_000));
    assert_eq!(md(&quotes), "> > > > deep");
    let list: String = (0..8)
        .map(|depth| format!("{}- {depth}\n", "  ".repeat(depth)))
        .collect();
    assert_eq!(
        md(&list),
        "- 0\n  - 1\n    - 2\n      - 3\n\n        4\n\n        5\n\n        6\n\n        7"
    );
}

#[test]
fn characters_that_hide_text_are_shown() {
    assert_eq!(
        md("a\u{202e}b\0c\u{1b}[31m &#x202e;\n"),
        "a\u{FFFD}b␀c␛\\[31m \u{FFFD}"
    );
    assert_eq!(
        md("```\na\u{202e}b\0c\u{1b}[31m\n```\n"),
        "```\na\u{FFFD}b␀c␛[31m\n```"
    );
}

#[test]
fn a_long_output_is_cut_at_a_block_with_what_is_left() {
    let raw = "first paragraph\n\nsecond paragraph\n\nthird paragraph\n";
    assert_eq!(markdown(raw, 50), raw.trim_end());
    let out = markdown(raw, 49);
    assert_eq!(out, "first paragraph\n\n*… output cut: 34 more bytes.*");
    assert_inert(&out, 49);
    // A paragraph, a code block and a table keep the lines that fit; a hard break ending
    // the last line shown goes.
    let lines: String = (0..100).map(|i| format!("*line {i}*  \n")).collect();
    let out = markdown(&format!("> {lines}"), 80);
    assert_eq!(
        out,
        "> *line 0*\\\n> *line 1*\\\n> *line 2*\n\n*… output cut: 1157 more bytes.*"
    );
    assert_inert(&out, 80);
    let code: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let out = markdown(&format!("```\n{code}```\n"), 120);
    assert_eq!(
        out,
        "```\nline 0\nline 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\n\
         line 10\n```\n\n*… output cut: 716 more bytes.*"
    );
    assert_inert(&out, 120);
    let rows: String = (0..100).map(|i| format!("> | {i} |\n")).collect();
    let out = markdown(&format!("> | n |\n> |---|\n{rows}"), 90);
    assert_inert(&out, 90);
    assert!(out.starts_with("> | n |\n> | --- |\n> | 0 |\n"), "{out}");
    // Nothing but the line, or nothing at all, when the limit is that small.
    assert_eq!(
        markdown(&"x".repeat(100), 36),
        "*… output cut: 100 more bytes.*"
    );
    assert_eq!(markdown(&"x".repeat(100), 10), "");
    assert_eq!(markdown("", 0), "");
    assert_eq!(markdown("x", 1), "x");
}

#[test]
fn a_mebibyte_of_hostile_markdown_fits_its_limit() {
    let attack = "@org/team #12 [x](https://evil) <img src=x>\n\n```\nopen fence\n\n\
        > > > - 1. | a | b |\n|---|---|\n| c | d |\n\n<details>\n\n";
    let raw = attack.repeat((1 << 20) / attack.len() + 1);
    let out = markdown(&raw, 8192);
    assert_inert(&out, 8192);
    assert!(out.ends_with(" more bytes.*"), "{out}");
    let out = markdown(&format!("```\n{}", "x\n".repeat(1 << 19)), 8192);
    assert_inert(&out, 8192);
}

/// A few hundred inputs mixing the hostile tokens, from a fixed seed.
#[test]
fn generated_hostile_inputs_stay_inert() {
    const TOKENS: &[&str] = &[
        "@org/team",
        "#12",
        "owner/repo#3",
        "GH-7",
        "www.x.com",
        "https://a.b/c",
        "[click](javascript:alert(1))",
        "[x](https://evil)",
        "![img](https://tracker/p.png)",
        "<https://x>",
        "<a@b.c>",
        "[ref]",
        "[ref]: https://x\n",
        "[^1]",
        "[^1]: n\n",
        "$x$",
        "<img src=x onerror=alert(1)>",
        "<details>",
        "<summary>",
        "</details>",
        "<!-- hidden -->",
        "-->",
        "<br>",
        "</code>",
        "<pre>",
        "```",
        "~~~",
        "```````",
        "`",
        "``",
        "> ",
        ">",
        "- ",
        "* ",
        "+ ",
        "1. ",
        "3) ",
        "- [ ] ",
        "\n",
        "\n\n",
        "    ",
        "\t",
        "|",
        "|--|",
        "| a | b |\n|---|---|\n",
        "# ",
        "## ",
        "===",
        "---",
        "***",
        "___",
        "*",
        "**",
        "_",
        "~~",
        "~",
        "\\",
        "&amp;",
        "&#32;",
        "&#x202e;",
        "\u{202e}",
        "\0",
        "\u{1b}",
        "\r",
        "\r\n",
        "é",
        "text",
        "word ",
        "1",
        ".",
        "(",
        ")",
        "]",
        "[",
        "!",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |below: usize| {
        // xorshift64*: deterministic, and enough to mix tokens.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % below
    };
    for _ in 0..400 {
        let count = 1 + next(80);
        let raw: String = (0..count).map(|_| TOKENS[next(TOKENS.len())]).collect();
        let limit = [0, 40, 64, 200, 1024, ROOMY][next(6)];
        let out = markdown(&raw, limit);
        assert_inert(&out, limit);
        assert_eq!(out, markdown(&raw, limit), "not deterministic for {raw:?}");
    }
}

const INFRACOST: &str = r#"💰 Infracost report

## Monthly cost will increase by $1,234 📈

| **Project** | **Cost change** | **New monthly cost** |
| ----------- | --------------: | -------------------- |
| acme/infra/live/prod/app | +$1,234 (+45%) | $3,980 |
| acme/infra/live/prod/db | -$12 (-2%) | $600 |

<details>
<summary>Cost details</summary>

```
Key: * usage cost, ~ changed, + added, - removed

──────────────────────────────────
Project: live/prod/app

+ aws_instance.web
  +$1,234 ($0.00 → $1,234)
```
</details>

*Usage costs were estimated with [infracost.yml](https://www.infracost.io/docs/usage).*
This comment will be updated when code changes; ping @acme/finops on #42.
<!-- infracost-comment -->
"#;

const TFLINT: &str = r#"### tflint: 2 issues

1. **warning** `aws_instance_invalid_type`: "t1.2xlarge" is an invalid value as instance_type
   ([docs](https://github.com/terraform-linters/tflint-ruleset-aws/blob/v0.30.0/docs/rules/aws_instance_invalid_type.md))
2. **notice** `terraform_unused_declarations`: variable "legacy" is declared but not used
   - main.tf:12
   - see owner/repo#3 and [this](javascript:alert(document.cookie))

> Fix these before `/apply`. ![status](https://tracker.example/pixel.png?pr=7)
"#;

#[test]
fn realistic_step_outputs() {
    let infracost = md(INFRACOST);
    insta::assert_snapshot!("infracost", infracost);
    let tflint = md(TFLINT);
    insta::assert_snapshot!("tflint", tflint);
    let cut = markdown(INFRACOST, 600);
    assert_inert(&cut, 600);
    insta::assert_snapshot!("infracost_in_600_bytes", cut);
}
