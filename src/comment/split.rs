//! Cutting rendered Markdown into pieces that each fit a character budget without breaking
//! a code fence or a `<details>` block.
//!
//! This is a structural pass, not a Markdown parser: it follows fences and `<details>` depth
//! line by line, which is all the comment templates produce. Rules:
//!
//! - A *block* is a run of lines between blank lines at the top level (outside any fence and
//!   any `<details>`). Parts are cut only between blocks.
//! - Blocks are packed greedily into parts, joined by one blank line. A heading block moves
//!   to the next part when the block after it would not fit beside it.
//! - A block larger than the budget that holds no fence and no `<details>` (a long table or
//!   list) is cut between its lines; a table's header row and delimiter row are repeated at
//!   the top of each piece.
//! - Any other block larger than the budget is truncated: it keeps as many lines as fit, then
//!   gets a `… N more lines (see the run log)` line (inside the open fence, if any) and the
//!   fence closer and `</details>` tags it needs. When what follows it is short (under an
//!   eighth of the budget), it is cut shorter still so that the rest shares its part.
//!
//! Lengths are counted in `char`s, as GitHub counts a comment's length.
//!
//! A fence opens on a line whose text (after any indentation) starts with three or more
//! backticks or tildes (a backtick fence's info string holds no backtick), and closes on a
//! line of only the same character, at least as many. `<details` / `</details>` tags are
//! counted outside fences, case-insensitively.

use std::fmt;

/// A block that cannot be made to fit even by truncation: its first line (or its closing
/// tags) alone are longer than the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unsplittable {
    /// The first characters of the offending line.
    pub start: String,
}

impl fmt::Display for Unsplittable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a line starting {:?} cannot fit", self.start)
    }
}

/// An open code fence: its character and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fence {
    ch: char,
    len: usize,
}

/// Where a line-by-line walk stands: inside a fence or not, how deep in `<details>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Scanner {
    fence: Option<Fence>,
    details: usize,
}

/// What a line was to the structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    /// Opens or closes a fence, or holds only `<details>` / `</details>` / `<summary>` tags.
    Structure,
    /// Anything else, including lines inside a fence.
    Content,
}

impl Scanner {
    /// True outside every fence and `<details>` block.
    pub(super) fn at_top(&self) -> bool {
        self.fence.is_none() && self.details == 0
    }

    /// Moves past one line.
    fn feed(&mut self, line: &str) -> LineKind {
        let text = line.trim_start();
        if let Some(open) = self.fence {
            let t = text.trim_end();
            if t.chars().count() >= open.len && t.chars().all(|c| c == open.ch) {
                self.fence = None;
                return LineKind::Structure;
            }
            return LineKind::Content;
        }
        if let Some(fence) = fence_opener(text) {
            self.fence = Some(fence);
            return LineKind::Structure;
        }
        // Only a line that starts with a tag is an HTML block that can open or close
        // `<details>`; elsewhere a tag is a pull request's text inside a code span (outside
        // code, `<` is always escaped).
        let lower = text.to_ascii_lowercase();
        if !is_tags_only(&lower) {
            return LineKind::Content;
        }
        let opens = count_tag(&lower, "<details");
        let closes = lower.matches("</details>").count();
        self.details = (self.details + opens).saturating_sub(closes);
        if opens + closes > 0 {
            LineKind::Structure
        } else {
            LineKind::Content
        }
    }

    /// The lines that close whatever is open, innermost first.
    fn closers(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(f) = self.fence {
            lines.push(f.ch.to_string().repeat(f.len));
        }
        for _ in 0..self.details {
            lines.push("</details>".to_string());
        }
        lines
    }
}

/// True when `markdown` ends with no fence or `<details>` left open.
#[cfg(test)]
fn is_balanced(markdown: &str) -> bool {
    let mut scanner = Scanner::default();
    for line in markdown.lines() {
        scanner.feed(line);
    }
    scanner.at_top()
}

fn fence_opener(text: &str) -> Option<Fence> {
    let ch = text.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = text.chars().take_while(|c| *c == ch).count();
    if len < 3 {
        return None;
    }
    let info = &text[len * ch.len_utf8()..];
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some(Fence { ch, len })
}

/// `<details` followed by `>` or whitespace, so `<detailsfoo>` does not count.
fn count_tag(lower: &str, tag: &str) -> usize {
    lower
        .match_indices(tag)
        .filter(|(i, _)| {
            lower[i + tag.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c.is_whitespace())
        })
        .count()
}

/// A line like `</details>` or `<details><summary>x</summary>`: nothing outside the tags
/// but the summary text.
fn is_tags_only(lower: &str) -> bool {
    let t = lower.trim();
    t.starts_with("<details") || t.starts_with("</details>")
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A block's lines, joined by `\n`.
struct Block<'a> {
    lines: Vec<&'a str>,
    /// True when some line opened a fence or `<details>`.
    nested: bool,
}

impl Block<'_> {
    fn text(&self) -> String {
        self.lines.join("\n")
    }

    fn len(&self) -> usize {
        self.lines.iter().map(|l| chars(l)).sum::<usize>() + self.lines.len().saturating_sub(1)
    }
}

/// The top-level blocks of `markdown`; blank lines between them are dropped.
fn blocks(markdown: &str) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut scanner = Scanner::default();
    let mut current = Block {
        lines: Vec::new(),
        nested: false,
    };
    for line in markdown.lines() {
        if scanner.at_top() && line.trim().is_empty() {
            if !current.lines.is_empty() {
                out.push(current);
                current = Block {
                    lines: Vec::new(),
                    nested: false,
                };
            }
            continue;
        }
        scanner.feed(line);
        current.nested |= !scanner.at_top();
        current.lines.push(line);
    }
    if !current.lines.is_empty() {
        out.push(current);
    }
    out
}

/// Collapses runs of blank lines outside fences to one and trims blank lines at both ends.
pub(super) fn tidy(markdown: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut scanner = Scanner::default();
    for line in markdown.lines() {
        let blank = line.trim().is_empty();
        if blank && scanner.fence.is_none() {
            if out.last().is_none_or(|l| l.trim().is_empty()) {
                continue;
            }
            out.push("");
            continue;
        }
        scanner.feed(line);
        out.push(line);
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    out.join("\n")
}

/// Cuts `markdown` into pieces of at most `budget` characters each, following the rules in
/// the module header. Joining the pieces with blank lines gives back the content (less
/// whatever truncation dropped, and plus repeated table headers).
pub(super) fn split(markdown: &str, budget: usize) -> Result<Vec<String>, Unsplittable> {
    let blocks = blocks(markdown);
    // What follows each block, joined: a truncated block leaves room for a short tail (the
    // footer, say) rather than pushing it alone into one more comment.
    let mut tails = vec![0; blocks.len() + 1];
    for i in (0..blocks.len()).rev() {
        tails[i] = tails[i + 1] + 2 + blocks[i].len();
    }
    let mut pieces: Vec<String> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if block.len() <= budget {
            pieces.push(block.text());
        } else if !block.nested {
            pieces.extend(split_lines(&block.lines, budget));
        } else {
            let tail = tails[i + 1];
            let short = (tail <= budget / 8).then(|| truncate(&block.lines, budget - tail));
            let piece = match short {
                Some(Ok(piece)) => piece,
                _ => truncate(&block.lines, budget)?,
            };
            pieces.push(piece);
        }
    }
    Ok(pack(pieces, budget))
}

/// Greedy packing, keeping a heading with the piece after it.
fn pack(pieces: Vec<String>, budget: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for (i, piece) in pieces.iter().enumerate() {
        let len = chars(piece);
        let joined = |extra: usize| {
            if current_len == 0 {
                extra
            } else {
                current_len + 2 + extra
            }
        };
        let mut needed = joined(len);
        if is_heading(piece)
            && let Some(next) = pieces.get(i + 1)
            && len + 2 + chars(next) <= budget
        {
            needed = joined(len + 2 + chars(next));
        }
        if current_len > 0 && needed > budget {
            parts.push(std::mem::take(&mut current));
            current_len = 0;
        }
        if current_len > 0 {
            current.push_str("\n\n");
            current_len += 2;
        }
        current.push_str(piece);
        current_len += len;
    }
    if current_len > 0 {
        parts.push(current);
    }
    parts
}

fn is_heading(piece: &str) -> bool {
    !piece.contains('\n') && piece.starts_with('#')
}

/// Cuts a flat block (no fence, no `<details>`) between lines; repeats a table's header.
fn split_lines(lines: &[&str], budget: usize) -> Vec<String> {
    let header: &[&str] = if is_table(lines) { &lines[..2] } else { &[] };
    let header_len: usize = header.iter().map(|l| chars(l) + 1).sum();
    let (header, body) = if header_len * 2 < budget {
        (header, &lines[header.len()..])
    } else {
        (&[][..], lines)
    };
    let header_len: usize = header.iter().map(|l| chars(l) + 1).sum();
    let mut pieces = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut current_len = 0;
    for line in body {
        let line = cut_line(line, budget - header_len);
        let len = chars(&line);
        if !current.is_empty() && header_len + current_len + 1 + len > budget {
            pieces.push(with_header(header, &current));
            current.clear();
            current_len = 0;
        }
        current_len += len + usize::from(!current.is_empty());
        current.push(line);
    }
    if !current.is_empty() {
        pieces.push(with_header(header, &current));
    }
    pieces
}

fn with_header(header: &[&str], lines: &[String]) -> String {
    let mut all: Vec<&str> = header.to_vec();
    all.extend(lines.iter().map(String::as_str));
    all.join("\n")
}

/// A GFM table: a `|` row followed by a delimiter row such as `|:---|---:|`.
fn is_table(lines: &[&str]) -> bool {
    lines.len() >= 2 && lines[0].trim_start().starts_with('|') && {
        let delim = lines[1].trim();
        delim.contains('-') && delim.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
    }
}

/// A single line longer than `width` keeps its first `width - 1` characters and an ellipsis.
fn cut_line(line: &str, width: usize) -> String {
    if chars(line) <= width {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn notice(dropped: usize) -> String {
    format!("… {dropped} more lines (see the run log)")
}

/// Keeps the head of a nested block, then says how much was dropped and closes what is open.
fn truncate(lines: &[&str], budget: usize) -> Result<String, Unsplittable> {
    let reserve = chars(&notice(lines.len())) + 1;
    let cost = |s: &Scanner| s.closers().iter().map(|c| chars(c) + 1).sum::<usize>();
    let mut scanner = Scanner::default();
    let mut used = 0;
    let mut kept = 0;
    let mut at_cut = scanner;
    for line in lines {
        let mut next = scanner;
        next.feed(line);
        let len = chars(line) + usize::from(kept > 0);
        if used + len + reserve + cost(&next) > budget {
            break;
        }
        used += len;
        kept += 1;
        scanner = next;
        at_cut = scanner;
    }
    if kept == 0 {
        return Err(Unsplittable {
            start: lines
                .first()
                .map_or(String::new(), |l| l.chars().take(60).collect()),
        });
    }
    let mut rest = at_cut;
    let dropped = lines[kept..]
        .iter()
        .filter(|l| rest.feed(l) == LineKind::Content && !l.trim().is_empty())
        .count();
    let mut out: Vec<String> = lines[..kept].iter().map(|l| l.to_string()).collect();
    if dropped > 0 {
        out.push(notice(dropped));
    }
    out.extend(at_cut.closers());
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests;
