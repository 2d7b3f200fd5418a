//! An independent reading of what cascade posts, to check that a pull request's text stays
//! inert: pulldown-cmark (with GitHub's extensions, and math and wiki links besides) parses
//! a body, and [`assert_inert`] walks its events. It fails on any link, image, autolink,
//! footnote, math, task box or strikethrough; on any HTML element other than the ones
//! cascade writes itself (`<details>`, `<summary>`, `<code>`, its marker comment); on text
//! outside code in which a forge would find a mention (`@team`), a reference (`#12`,
//! `GH-12`, `!12`, `~label`, `%milestone`, `$12`, `&12`) or a bare link (`://`, `www.`);
//! on a table row whose cells are not all the header's (an unescaped `|` splits a cell,
//! and the parser silently drops what no header column holds); and it returns the code
//! spans (and `<code>` elements) so a test can check that each hostile text is shown whole.
#![allow(dead_code)]

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;
use std::sync::LazyLock;

/// What a forge would act on in rendered text: a mention, a reference, a bare link.
static ACTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^a-z0-9_])@[a-z0-9]|#[0-9]|(?:^|[^a-z0-9])gh-[0-9]|![0-9]|~[a-z0-9\x22]|%[a-z0-9\x22]|\$[a-z0-9]|&[a-z0-9]|://|(?:^|[^a-z0-9])www\.")
        .unwrap()
});

/// The HTML tags cascade writes itself.
const OWN_TAGS: &[&str] = &[
    "<details>",
    "</details>",
    "<summary>",
    "</summary>",
    "<code>",
    "</code>",
];

/// What [`assert_inert`] read outside code blocks.
#[derive(Debug, Default)]
pub struct Reading {
    /// Every code span and `<code>` element, in order, as a reader sees it.
    pub code: Vec<String>,
    /// Every run of text outside code, in order.
    pub text: Vec<String>,
    /// The text of every code block, in order.
    pub blocks: Vec<String>,
}

impl Reading {
    /// Panics unless some code block holds `text`.
    pub fn assert_in_block(&self, text: &str) {
        assert!(
            self.blocks.iter().any(|b| b.contains(text)),
            "no code block holds {text:?}; the blocks are {:#?}",
            self.blocks
        );
    }

    /// Panics unless `whole` is one of the code spans, complete.
    pub fn assert_code(&self, whole: &str) {
        assert!(
            self.code.iter().any(|c| c == whole),
            "{whole:?} is not one whole code span; the code spans are {:#?}",
            self.code
        );
    }
}

/// Reads `markdown` as a forge would and fails the test if anything in it is active (see
/// the module header). `allowed` are the mentions and references cascade writes on purpose
/// (`@bob` when it answers bob, `#3` for the pull request holding a lock): they are taken
/// out of the text before it is checked.
pub fn assert_inert(markdown: &str, allowed: &[&str]) -> Reading {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM
        | Options::ENABLE_WIKILINKS;
    let mut reading = Reading::default();
    let mut run = String::new();
    let mut in_block = false;
    // Inside `<code>`: what it holds so far.
    let mut in_code: Option<String> = None;
    let mut columns = 0;
    let mut row: Option<(std::ops::Range<usize>, Vec<std::ops::Range<usize>>)> = None;
    let check = |run: &mut String, reading: &mut Reading| {
        if run.is_empty() {
            return;
        }
        let mut text = run.clone();
        for own in allowed {
            text = text.replace(own, " ");
        }
        if let Some(found) = ACTIVE.find(&text) {
            panic!("active text {:?} in {run:?}:\n{markdown}", found.as_str());
        }
        reading.text.push(std::mem::take(run));
    };
    for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
        if !matches!(event, Event::Text(_)) {
            check(&mut run, &mut reading);
        }
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                in_block = true;
                reading.blocks.push(String::new());
            }
            Event::End(TagEnd::CodeBlock) => in_block = false,
            Event::Text(t) if in_block => reading.blocks.last_mut().unwrap().push_str(&t),
            Event::Text(t) => match in_code.as_mut() {
                Some(code) => code.push_str(&t),
                None => run.push_str(&t),
            },
            Event::Code(c) => reading.code.push(c.to_string()),
            Event::Html(h) | Event::InlineHtml(h) => {
                read_html(&h, &mut in_code, &mut run, &mut reading, markdown)
            }
            Event::Start(Tag::Table(aligns)) => columns = aligns.len(),
            Event::Start(Tag::TableHead | Tag::TableRow) => row = Some((range, Vec::new())),
            Event::Start(Tag::TableCell) => {
                if let Some((_, cells)) = row.as_mut() {
                    cells.push(range);
                }
            }
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                let (whole, cells) = row.take().expect("a row was open");
                let source = &markdown[whole.clone()];
                assert_eq!(cells.len(), columns, "row {source:?}");
                assert!(
                    cells.iter().all(|c| !c.is_empty()),
                    "row {source:?} has fewer cells than its header"
                );
                let last = cells.last().map_or(whole.start, |c| c.end);
                let tail = markdown[last..whole.end].trim();
                assert!(
                    tail.is_empty() || tail == "|",
                    "row {source:?} has more cells than its header: {tail:?} is dropped"
                );
            }
            Event::Start(
                tag @ (Tag::Link { .. }
                | Tag::Image { .. }
                | Tag::Strikethrough
                | Tag::FootnoteDefinition(_)),
            ) => panic!("{tag:?} in:\n{markdown}"),
            event @ (Event::FootnoteReference(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_)
            | Event::TaskListMarker(_)) => panic!("{event:?} in:\n{markdown}"),
            _ => {}
        }
    }
    check(&mut run, &mut reading);
    assert!(!in_block, "a code block is left open:\n{markdown}");
    assert!(in_code.is_none(), "<code> is left open:\n{markdown}");
    reading
}

/// An HTML block or inline HTML: only cascade's own tags and marker; the text outside
/// `<code>` is checked like any text, the text inside is a code element.
fn read_html(
    html: &str,
    in_code: &mut Option<String>,
    run: &mut String,
    reading: &mut Reading,
    markdown: &str,
) {
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        let before = decode(&rest[..open]);
        match in_code.as_mut() {
            Some(code) => code.push_str(&before),
            None => run.push_str(&before),
        }
        let close = rest[open..]
            .find('>')
            .unwrap_or_else(|| panic!("an unclosed tag in {html:?}:\n{markdown}"))
            + open;
        let tag = &rest[open..=close];
        if tag.starts_with("<!-- cascade:") {
            // The marker: a comment holding nothing but cascade's words.
        } else {
            assert!(
                OWN_TAGS.contains(&tag),
                "HTML {tag:?} that cascade does not write, in:\n{markdown}"
            );
            match tag {
                "<code>" => *in_code = Some(String::new()),
                "</code>" => reading
                    .code
                    .push(in_code.take().expect("</code> closes a <code>")),
                _ => {}
            }
        }
        rest = &rest[close + 1..];
    }
    let after = decode(rest.trim_end_matches('\n'));
    match in_code.as_mut() {
        Some(code) => code.push_str(&after),
        None => run.push_str(&after),
    }
}

/// The entities cascade's HTML escaping writes, decoded as a browser would.
fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
