//! Which lines of a comment a person wrote as plain text. A command counts only at the start
//! of such a line: not in fenced or indented code, block quotes (with their lazy continuation
//! lines), code spans, HTML comments, link reference definitions or `<pre>` blocks.
//!
//! pulldown-cmark reads the comment as CommonMark (lines end at `\n`, `\r\n` or a lone
//! `\r`, as the forge renders them); this module only decides, from its events and their byte
//! offsets, which lines start in plain text, and takes HTML comments out of them. It never
//! reads a command. Where the reading is subtle it errs towards hiding: a command that was
//! missed can be posted again, one that was misread can start an apply nobody asked for. So
//! cascade reads differently from CommonMark in four places:
//!
//! - a line indented 4 columns or more never counts, even where CommonMark reads it as the
//!   continuation of a paragraph or list item: nobody types a command so;
//! - an unclosed `<!--` in text hides the rest of its paragraph, up to the next blank line
//!   (CommonMark shows it as text);
//! - an HTML comment, `<script>`, `<style>` or `<textarea>` block that a quote or list item
//!   ends before its `-->` or end tag hides on up to that text (CommonMark ends it with the
//!   container, but the browser reads the rest of the page into it);
//! - HTML other than a comment or a raw-text element (`<pre>`, `<script>`, `<style>`,
//!   `<textarea>`) is read as text, so a command inside `<details>` counts as a reader sees
//!   it, and what is inside is read as Markdown (a quote or code there still hides).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::borrow::Cow;
use std::ops::Range;

/// The lines of `body` that start as plain text, with their indentation and HTML comments
/// removed, in order. Lines that start inside code, a quote or a comment are left out.
pub(super) fn plain_lines(body: &str) -> Vec<String> {
    let body = body.strip_prefix('\u{feff}').unwrap_or(body);
    let normalized = lone_returns_as_newlines(body);
    let body = normalized.as_ref();
    let reading = Reading::of(body);
    let mut text = reading.text.iter().peekable();
    let mut plain = Vec::new();
    for line in line_ranges(body) {
        let (columns, rest) = indentation(&body[line.clone()]);
        let start = line.end - rest.len();
        if rest.is_empty() || columns >= 4 {
            continue;
        }
        // Lines and text ranges are both in order: one pass over each keeps this linear.
        while text.next_if(|range| range.end <= start).is_some() {}
        if text.peek().is_some_and(|range| range.start <= start) {
            plain.push(without_comments(body, start..line.end, &reading.comments));
        }
    }
    plain
}

/// `body` with each lone `\r` made a `\n`. CommonMark and the forges end a line there,
/// pulldown-cmark does not everywhere (a fence after `a\r` stays paragraph text), and a
/// fence it missed would show the command inside as plain. The same length: offsets hold.
fn lone_returns_as_newlines(body: &str) -> Cow<'_, str> {
    let bytes = body.as_bytes();
    let lone = |at: usize| bytes[at] == b'\r' && bytes.get(at + 1) != Some(&b'\n');
    if !(0..bytes.len()).any(lone) {
        return Cow::Borrowed(body);
    }
    let mut out = bytes.to_vec();
    for at in (0..bytes.len()).filter(|&at| lone(at)) {
        out[at] = b'\n';
    }
    Cow::Owned(String::from_utf8(out).expect("one ASCII byte for another keeps UTF-8"))
}

/// The lines of `body` as CommonMark splits them (at `\n`, `\r\n` or a lone `\r`), without
/// their endings.
fn line_ranges(body: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = body.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(bytes.len(), |len| start + len);
        let line = start..end;
        start = if bytes[end..].starts_with(b"\r\n") {
            end + 2
        } else {
            end + 1
        };
        Some(line)
    })
}

/// What pulldown-cmark's reading of a comment leaves readable.
#[derive(Default)]
struct Reading {
    /// Text outside code, quotes and hidden HTML, in order and not overlapping.
    text: Vec<Range<usize>>,
    /// HTML comments, and each unclosed `<!--` to the end of its block, in order.
    comments: Vec<Range<usize>>,
}

impl Reading {
    fn of(body: &str) -> Reading {
        let readable = html_read_as_text(body);
        let mut reading = Reading::default();
        // Inside a quote, a code block or a hidden HTML block: nothing counts.
        let mut hidden = 0usize;
        // Text before this offset is inside an unclosed comment or raw-text element.
        let mut hidden_until = 0;
        for (event, range) in Parser::new_ext(&readable, Options::empty()).into_offset_iter() {
            match event {
                Event::Start(Tag::BlockQuote(_) | Tag::CodeBlock(_)) => hidden += 1,
                Event::Start(Tag::HtmlBlock) => {
                    hidden += 1;
                    // Searched only past what is already hidden, so each byte is searched once.
                    if range.start >= hidden_until {
                        hidden_until = html_block_end(&readable, range);
                    }
                }
                Event::End(TagEnd::BlockQuote(_) | TagEnd::CodeBlock | TagEnd::HtmlBlock) => {
                    hidden -= 1;
                }
                _ if hidden > 0 || range.start < hidden_until => {}
                Event::Text(_) => match unclosed_comment(&readable, range.clone()) {
                    Some(opener) => {
                        hidden_until = paragraph_end(body, opener);
                        reading.text.push(range.start..opener);
                        reading.comments.push(opener..hidden_until);
                    }
                    None => reading.text.push(range),
                },
                Event::InlineHtml(html) if html.starts_with("<!--") => {
                    reading.comments.push(range);
                }
                _ => {}
            }
        }
        reading
    }
}

/// Where what an HTML block hides ends. A comment, `<script>`, `<style>` or `<textarea>`
/// hides past the line holding its `-->` or end tag (in any case): a quote or list that
/// ends first does not end it, as the browser still reads the rest of the page as the
/// comment or element. `<pre>` (which the browser ends with its container) and a lone end
/// tag (`</pre>`) end where pulldown-cmark ends them.
fn html_block_end(readable: &str, block: Range<usize>) -> usize {
    let bytes = readable.as_bytes();
    let end_tag;
    let marker: &[u8] = if bytes[block.start..].starts_with(b"<!--") {
        b"-->"
    } else if let Some(tag) = raw_text_tag(&bytes[block.start + 1..]).filter(|&tag| tag != "pre") {
        end_tag = format!("</{tag}>");
        end_tag.as_bytes()
    } else {
        return block.end;
    };
    let found = bytes[block.start..]
        .windows(marker.len())
        .position(|window| window.eq_ignore_ascii_case(marker));
    match found {
        Some(at) => {
            let after = block.start + at + marker.len();
            line_ranges(&readable[after..])
                .next()
                .map_or(after, |line| after + line.end)
        }
        None => readable.len(),
    }
}

/// Where the paragraph holding `at` ends as it was typed: at the next blank line, whatever
/// block CommonMark would end first.
fn paragraph_end(body: &str, at: usize) -> usize {
    line_ranges(&body[at..])
        .skip(1)
        .find(|line| {
            body[at..][line.clone()]
                .trim_matches([' ', '\t'])
                .is_empty()
        })
        .map_or(body.len(), |line| at + line.start)
}

/// Where a `<!--` that pulldown-cmark left as text (no `-->` closes it) starts in the text at
/// `range`. A `<` escaped by a backslash opens nothing. The opener may be split over two text
/// events (`<`, `!--`), so it is looked for in the source past the range's end.
fn unclosed_comment(readable: &str, range: Range<usize>) -> Option<usize> {
    let bytes = readable.as_bytes();
    (range.start..range.end).find(|&at| {
        bytes[at] == b'<'
            && bytes[at + 1..].starts_with(b"!--")
            && bytes[..at]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count()
                % 2
                == 0
    })
}

/// `body` with every `<` that does not open or close an HTML comment or a raw-text element
/// replaced by `;` (the same length, so offsets hold, and like `<` a punctuation mark that
/// means nothing to Markdown): other HTML is then read as the text a reader sees around its
/// tags.
fn html_read_as_text(body: &str) -> Cow<'_, str> {
    let kept = |at: usize| {
        let after = &body.as_bytes()[at + 1..];
        let after = after.strip_prefix(b"/").unwrap_or(after);
        after.starts_with(b"!--") || raw_text_tag(after).is_some()
    };
    if body.match_indices('<').all(|(at, _)| kept(at)) {
        return Cow::Borrowed(body);
    }
    let mut readable = body.as_bytes().to_vec();
    for (at, _) in body.match_indices('<') {
        if !kept(at) {
            readable[at] = b';';
        }
    }
    // Only ASCII `<` bytes were replaced by ASCII `;`.
    Cow::Owned(String::from_utf8(readable).expect("an ASCII byte replaced by another"))
}

/// The raw-text element (`pre`, `script`, `style`, `textarea`) whose name `after` starts
/// with, in any case, followed by the end of the line, a space, a tab or `>`.
fn raw_text_tag(after: &[u8]) -> Option<&'static str> {
    ["pre", "script", "style", "textarea"]
        .into_iter()
        .find(|tag| {
            after
                .get(..tag.len())
                .is_some_and(|name| name.eq_ignore_ascii_case(tag.as_bytes()))
                && matches!(
                    after.get(tag.len()),
                    None | Some(b' ' | b'\t' | b'\n' | b'\r' | b'>')
                )
        })
}

/// The width of a line's leading spaces and tabs (tab stops every 4 columns) and the rest.
fn indentation(line: &str) -> (usize, &str) {
    let mut columns = 0;
    for (at, ch) in line.char_indices() {
        match ch {
            ' ' => columns += 1,
            '\t' => columns += 4 - columns % 4,
            _ => return (columns, &line[at..]),
        }
    }
    (columns, "")
}

/// The text of `line` without the parts of `comments` on it.
fn without_comments(body: &str, line: Range<usize>, comments: &[Range<usize>]) -> String {
    let first = comments.partition_point(|comment| comment.end <= line.start);
    let mut kept = String::new();
    let mut at = line.start;
    for comment in comments[first..]
        .iter()
        .take_while(|comment| comment.start < line.end)
    {
        kept.push_str(&body[at..comment.start.max(at)]);
        at = comment.end.min(line.end);
    }
    kept.push_str(&body[at..line.end]);
    kept
}
