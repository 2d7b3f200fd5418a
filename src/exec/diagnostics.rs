//! Terraform's `Error:` diagnostics read out of a command's output, line by line as the
//! log is written: what a failed unit's reason says. Its first line names the cause
//! (`Error: Unclosed configuration block (main.tf line 1)`), the rest is every error
//! block as terraform printed it; without one, the last lines of output, the last first.
//!
//! Reads both shapes terraform prints a diagnostic in: plain (`-no-color`, as cascade runs
//! it) and boxed (`╷ │ Error: … ╵`, as a wrapper or an early message prints it). Warnings
//! are never a reason.
//!
//! Owns: finding the blocks and bounding them. Never: sees raw output (the lines it gets
//! are redacted already), keeps anything but the bounded blocks, or makes the text safe
//! for Markdown (the comment layer does, for every reason).

/// At most this many error blocks are kept; the others are counted.
const MAX_BLOCKS: usize = 5;
/// At most this many lines of one block are kept (a validation message may be long).
const MAX_BLOCK_LINES: usize = 24;
/// Longer lines are cut (terraform wraps its own text well below this).
const MAX_LINE_CHARS: usize = 400;
/// The summary in the first line is cut here, so the location after it still shows.
const MAX_SUMMARY_CHARS: usize = 180;

/// The summary terraform's `init` prints before the real errors of an invalid
/// configuration (`initialisation` in 1.11, `initialization` before): never the cause.
const INIT_PREAMBLE: &str = "Terraform encountered problems during initiali";

/// One `Error:` diagnostic.
#[derive(Debug, Default)]
struct Block {
    /// The lines as printed, box prefix removed, the `Error: …` line first.
    lines: Vec<String>,
    /// Lines past [`MAX_BLOCK_LINES`], not kept.
    cut: usize,
}

impl Block {
    /// The summary: the `Error:` line and the lines it wraps onto, up to the first blank.
    fn summary(&self) -> String {
        let mut words = Vec::new();
        for line in self.lines.iter().take_while(|l| !l.trim().is_empty()) {
            words.push(line.trim());
        }
        let text = words.join(" ");
        let text = text.strip_prefix("Error:").unwrap_or(&text).trim();
        cut(text, MAX_SUMMARY_CHARS)
    }

    /// `main.tf line 30`, from the `  on main.tf line 30, in resource …:` line.
    fn location(&self) -> Option<String> {
        self.lines.iter().find_map(|line| {
            let rest = line.strip_prefix("  on ")?;
            let (file, after) = rest.split_once(" line ")?;
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            (!file.is_empty() && !digits.is_empty()).then(|| format!("{file} line {digits}"))
        })
    }

    /// `Error: <summary> (<file> line <n>)`.
    fn headline(&self) -> String {
        match self.location() {
            Some(at) => format!("Error: {} ({at})", self.summary()),
            None => format!("Error: {}", self.summary()),
        }
    }

    fn text(&self) -> String {
        let mut lines = self.lines.clone();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        if self.cut > 0 {
            lines.push(format!("[{} more lines not shown]", self.cut));
        }
        lines.join("\n")
    }
}

/// What is being read: outside any diagnostic, inside an error, or inside a warning.
#[derive(Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Outside,
    InError,
    InWarning,
}

/// The error blocks of one command's output, fed one (redacted) line at a time.
#[derive(Debug, Default)]
pub(super) struct ErrorBlocks {
    blocks: Vec<Block>,
    /// Error blocks past [`MAX_BLOCKS`], counted, not kept.
    more: usize,
    state: State,
    /// The last line was blank (blank lines inside a block are kept one at a time).
    blank: bool,
}

impl ErrorBlocks {
    /// Reads one line of output.
    pub fn line(&mut self, raw: &str) {
        let plain = without_escapes(raw);
        let trimmed = plain.trim_end();
        // A box's top opens nothing by itself; its bottom closes the diagnostic.
        if trimmed.starts_with('╷') {
            self.state = State::Outside;
            return;
        }
        if trimmed.starts_with('╵') {
            self.state = State::Outside;
            return;
        }
        let text = match trimmed.strip_prefix('│') {
            Some(rest) => rest.strip_prefix(' ').unwrap_or(rest),
            None => trimmed,
        };
        if let Some(summary) = text.strip_prefix("Error:") {
            self.state = State::InError;
            self.blank = false;
            if self.blocks.len() == MAX_BLOCKS {
                self.more += 1;
                return;
            }
            self.blocks.push(Block {
                lines: vec![cut(&format!("Error: {}", summary.trim()), MAX_LINE_CHARS)],
                cut: 0,
            });
            return;
        }
        if text.starts_with("Warning:") {
            self.state = State::InWarning;
            return;
        }
        if self.state != State::InError || self.more > 0 {
            return;
        }
        let Some(block) = self.blocks.last_mut() else {
            return;
        };
        let blank = text.trim().is_empty();
        if blank && self.blank {
            return;
        }
        self.blank = blank;
        if block.lines.len() < MAX_BLOCK_LINES {
            block.lines.push(if blank {
                String::new()
            } else {
                cut(text, MAX_LINE_CHARS)
            });
        } else if !blank {
            block.cut += 1;
        }
    }

    /// The failure text: the cause on the first line, then every error block; `None`
    /// when the output had no error block.
    pub fn reason(&self) -> Option<String> {
        let first = self
            .blocks
            .iter()
            .find(|b| !b.summary().starts_with(INIT_PREAMBLE))
            .or(self.blocks.first())?;
        let headline = first.headline();
        let mut blocks: Vec<String> = self.blocks.iter().map(Block::text).collect();
        if self.more > 0 {
            blocks.push(format!(
                "[{} more error{} not shown]",
                self.more,
                if self.more == 1 { "" } else { "s" }
            ));
        }
        let all = blocks.join("\n\n");
        // A bare `Error: boom` says it all in its headline.
        if all == headline {
            return Some(headline);
        }
        Some(format!("{headline}\n\n{all}"))
    }
}

/// The reason for a failure whose output had no error block: its last line first (the
/// nearest to the cause), then the last lines in order.
pub(super) fn last_lines(tail: &[String]) -> String {
    match tail {
        [] => String::new(),
        [one] => one.clone(),
        [.., last] => format!("{last}\n\n{}", tail.join("\n")),
    }
}

/// `text` without terminal escape sequences (`ESC [ … letter`): colour codes, were a
/// wrapper to ask for them.
fn without_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    out.into()
}

/// `text` cut to `max` characters, marked.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(max).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
#[path = "diagnostics_tests.rs"]
mod tests;
