//! Which lines of a comment a person wrote as plain text. A command counts only at the start
//! of such a line: not in fenced or indented code, block quotes (with their lazy continuation
//! lines), code spans, HTML comments or `<pre>` blocks.
//!
//! This is a line scanner for the few CommonMark constructs that can hide a line, not a
//! Markdown renderer. Where CommonMark is subtle it errs towards hiding: a command that was
//! missed can be posted again, one that was misread can start an apply nobody asked for.

use std::collections::HashMap;
use std::ops::Range;

/// The lines of `body` that start as plain text, with their indentation and HTML comments
/// removed, in order. Lines that start inside code, a quote or a comment are left out.
pub(super) fn plain_lines(body: &str) -> Vec<String> {
    let body = body.strip_prefix('\u{feff}').unwrap_or(body);
    let mut blocks = BlockScanner::default();
    let mut plain = Vec::new();
    let mut paragraph = Vec::new();
    for line in body.lines() {
        match blocks.classify(line) {
            Line::Text { text, starts_plain } => paragraph.push((text, starts_plain)),
            Line::Hidden | Line::Blank => {
                plain.extend(paragraph_plain_lines(&paragraph));
                paragraph.clear();
            }
        }
    }
    plain.extend(paragraph_plain_lines(&paragraph));
    plain
}

/// What the block structure makes of one line.
enum Line<'a> {
    /// Code, a quote, an HTML block: nothing in it counts.
    Hidden,
    Blank,
    /// Paragraph text, indentation removed. `starts_plain` is false for a continuation line
    /// indented like code: CommonMark would read it as text, but nobody types a command so.
    Text {
        text: &'a str,
        starts_plain: bool,
    },
}

/// The block-level state carried from one line to the next.
#[derive(Default)]
struct BlockScanner {
    fence: Option<Fence>,
    /// Inside an HTML comment or `<pre>`-like block: the text that ends it.
    html_end: Option<&'static str>,
    /// A fence opened inside a block quote; it ends with the quote.
    quote_fence: Option<Fence>,
    /// The last line was quoted paragraph text, so a plain line continues the quote.
    quote_paragraph: bool,
    /// The last line was paragraph text, so an indented line continues it instead of being code.
    paragraph: bool,
}

impl BlockScanner {
    fn classify<'a>(&mut self, line: &'a str) -> Line<'a> {
        if let Some(fence) = self.fence {
            if fence.is_closed_by(line) {
                self.fence = None;
            }
            return Line::Hidden;
        }
        if let Some(end) = self.html_end {
            if contains_ignoring_case(line, end) {
                self.html_end = None;
            }
            return Line::Hidden;
        }
        let (columns, rest) = indentation(line);
        let after_paragraph = std::mem::take(&mut self.paragraph);
        if rest.is_empty() {
            self.quote_paragraph = false;
            self.quote_fence = None;
            return Line::Blank;
        }
        if columns >= 4 {
            if self.quote_paragraph {
                return Line::Hidden;
            }
            if after_paragraph {
                self.paragraph = true;
                return Line::Text {
                    text: line,
                    starts_plain: false,
                };
            }
            return Line::Hidden;
        }
        if let Some(content) = quote_content(rest) {
            self.quoted_line(content);
            return Line::Hidden;
        }
        self.quote_fence = None;
        let lazy = std::mem::take(&mut self.quote_paragraph);
        if let Some(fence) = Fence::opening(rest) {
            self.fence = Some(fence);
            return Line::Hidden;
        }
        if let Some(end) = html_block_end(rest) {
            if !contains_ignoring_case(rest, end) {
                self.html_end = Some(end);
            }
            return Line::Hidden;
        }
        if lazy && !interrupts_paragraph(rest) {
            self.quote_paragraph = true;
            return Line::Hidden;
        }
        self.paragraph = true;
        Line::Text {
            text: rest,
            starts_plain: true,
        }
    }

    /// Follows what a quoted line does to the quote, to know whether the next line continues it.
    fn quoted_line(&mut self, content: &str) {
        let (columns, rest) = indentation(content);
        if let Some(fence) = self.quote_fence {
            if fence.is_closed_by(content) {
                self.quote_fence = None;
            }
            self.quote_paragraph = false;
        } else if let Some(fence) = Fence::opening(rest).filter(|_| columns < 4) {
            self.quote_fence = Some(fence);
            self.quote_paragraph = false;
        } else {
            self.quote_paragraph = !rest.is_empty() && (columns < 4 || self.quote_paragraph);
        }
    }
}

/// The opening fence of a fenced code block; the closing one repeats its character at least
/// as many times.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

impl Fence {
    /// `rest` is a line without its indentation (at most 3 columns).
    fn opening(rest: &str) -> Option<Fence> {
        let ch = *rest.as_bytes().first()?;
        if ch != b'`' && ch != b'~' {
            return None;
        }
        let len = run_length(rest.as_bytes(), 0, ch);
        // A backtick in the info string makes the line a code span, not a fence.
        if len < 3 || (ch == b'`' && rest[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    fn is_closed_by(self, line: &str) -> bool {
        let (columns, rest) = indentation(line);
        let len = run_length(rest.as_bytes(), 0, self.ch);
        columns < 4 && len >= self.len && rest[len..].trim_matches([' ', '\t']).is_empty()
    }
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

/// The text inside a block quote line (`> text`, `>> text`, `> > text`), or None.
fn quote_content(rest: &str) -> Option<&str> {
    let mut content = rest.strip_prefix('>')?;
    loop {
        content = content.strip_prefix(' ').unwrap_or(content);
        let (columns, inner) = indentation(content);
        match inner.strip_prefix('>') {
            Some(nested) if columns < 4 => content = nested,
            _ => return Some(content),
        }
    }
}

/// For a line that starts an HTML block whose content is hidden (a comment, or `<pre>`,
/// `<script>`, `<style>`, `<textarea>`), the text that ends the block.
fn html_block_end(rest: &str) -> Option<&'static str> {
    if rest.starts_with("<!--") {
        return Some("-->");
    }
    const RAW: [(&str, &str); 4] = [
        ("<pre", "</pre>"),
        ("<script", "</script>"),
        ("<style", "</style>"),
        ("<textarea", "</textarea>"),
    ];
    RAW.into_iter().find_map(|(open, end)| {
        let after = rest
            .get(..open.len())?
            .eq_ignore_ascii_case(open)
            .then(|| &rest[open.len()..])?;
        matches!(after.chars().next(), None | Some(' ' | '\t' | '>')).then_some(end)
    })
}

/// True when `rest` starts a block that ends a (quoted) paragraph: a fence, HTML, a heading,
/// a thematic break or a list item.
fn interrupts_paragraph(rest: &str) -> bool {
    let bytes = rest.as_bytes();
    let heading = run_length(bytes, 0, b'#');
    let after_marker = |at: usize| matches!(bytes.get(at), Some(b' ' | b'\t'));
    let thematic_break = |ch: u8| {
        rest.bytes().all(|b| b == ch || b == b' ' || b == b'\t')
            && rest.bytes().filter(|&b| b == ch).count() >= 3
    };
    Fence::opening(rest).is_some()
        || (bytes[0] == b'<'
            && bytes
                .get(1)
                .is_some_and(|b| b.is_ascii_alphabetic() || b"/!".contains(b)))
        || ((1..=6).contains(&heading) && (heading == bytes.len() || after_marker(heading)))
        || thematic_break(bytes[0]) && b"-*_".contains(&bytes[0])
        || (b"-+*".contains(&bytes[0]) && after_marker(1) && !rest[2..].trim().is_empty())
        || ((rest.starts_with("1.") || rest.starts_with("1)")) && after_marker(2))
}

/// The plain lines of one paragraph, after removing what its code spans and HTML comments
/// hide. Both may run across lines, so the paragraph is scanned as a whole.
fn paragraph_plain_lines(lines: &[(&str, bool)]) -> Vec<String> {
    let text = lines
        .iter()
        .map(|(line, _)| *line)
        .collect::<Vec<_>>()
        .join("\n");
    let hidden = inline_hidden(&text);
    let mut plain = Vec::new();
    // The spans are in order and do not overlap, so one cursor serves every line: a
    // comment is at most 64 KiB on GitHub, but a scan per line would still be quadratic.
    let mut first_open = 0;
    let mut start = 0;
    for (line, starts_plain) in lines {
        let end = start + line.len();
        while hidden
            .get(first_open)
            .is_some_and(|span| span.range.end <= start)
        {
            first_open += 1;
        }
        let open = &hidden[first_open..];
        let starts_hidden = open.first().is_some_and(|span| span.range.start <= start);
        if *starts_plain && !starts_hidden {
            plain.push(without_comments(&text, start..end, open));
        }
        start = end + 1;
    }
    plain
}

/// A stretch of a paragraph that is not plain text.
struct InlineHidden {
    range: Range<usize>,
    comment: bool,
}

/// Code spans and HTML comments in a paragraph, in order. An unclosed comment hides the
/// rest of the paragraph; an unclosed backtick run is just backticks.
fn inline_hidden(text: &str) -> Vec<InlineHidden> {
    let bytes = text.as_bytes();
    let runs = BacktickRuns::of(bytes);
    let mut hidden = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if bytes.get(at + 1).is_some_and(u8::is_ascii_punctuation) => at += 2,
            b'`' => {
                let len = run_length(bytes, at, b'`');
                match runs.closing(at + len, len) {
                    Some(close) => {
                        hidden.push(InlineHidden {
                            range: at..close + len,
                            comment: false,
                        });
                        at = close + len;
                    }
                    None => at += len,
                }
            }
            b'<' if bytes[at..].starts_with(b"<!--") => {
                let end = text[at + 2..]
                    .find("-->")
                    .map_or(text.len(), |found| at + 2 + found + 3);
                hidden.push(InlineHidden {
                    range: at..end,
                    comment: true,
                });
                at = end;
            }
            _ => at += 1,
        }
    }
    hidden
}

/// Where each run of backticks in a paragraph starts, by length: a code span opened by `n`
/// backticks is closed by the next run of exactly `n`. Looking that up instead of scanning
/// keeps a paragraph of many unclosed runs (`` ` `` `` ``` ``…) linear.
struct BacktickRuns(HashMap<usize, Vec<usize>>);

impl BacktickRuns {
    fn of(bytes: &[u8]) -> BacktickRuns {
        let mut runs: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut at = 0;
        while at < bytes.len() {
            if bytes[at] == b'`' {
                let len = run_length(bytes, at, b'`');
                runs.entry(len).or_default().push(at);
                at += len;
            } else {
                at += 1;
            }
        }
        BacktickRuns(runs)
    }

    /// Where the run that closes a code span opened by `len` backticks ending at `from`
    /// starts. `from` ends a run, so every run at or after it is one `of` found.
    fn closing(&self, from: usize, len: usize) -> Option<usize> {
        let starts = self.0.get(&len)?;
        starts
            .get(starts.partition_point(|&start| start < from))
            .copied()
    }
}

/// The text of `line` without the comments in `hidden`, which holds the spans from the first
/// one that does not end before the line.
fn without_comments(text: &str, line: Range<usize>, hidden: &[InlineHidden]) -> String {
    let mut kept = String::new();
    let mut at = line.start;
    let on_line = hidden.iter().take_while(|span| span.range.start < line.end);
    for span in on_line.filter(|span| span.comment) {
        let (start, end) = (
            span.range.start.max(line.start),
            span.range.end.min(line.end),
        );
        if start < end {
            kept.push_str(&text[at..start]);
            at = end;
        }
    }
    kept.push_str(&text[at..line.end]);
    kept
}

fn run_length(bytes: &[u8], from: usize, ch: u8) -> usize {
    bytes[from..].iter().take_while(|&&b| b == ch).count()
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_ascii_lowercase().contains(needle)
}
