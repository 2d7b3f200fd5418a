//! How [`markdown`](super::markdown) writes a block it has read: behind the prefixes of
//! the quotes and list items around it, after a blank line (or a line break inside a tight
//! list), and only while the block fits the budget; a paragraph, a code block or a table
//! that does not fit keeps the lines that do. Nothing here reads the input: blocks arrive as lines
//! already made inert.

use super::Renderer;
use super::inline::TextLine;
use crate::inert::fenced;

/// A quote, list or item around what is written, kept while nesting is under its cap.
pub(super) enum Container {
    Quote {
        started: bool,
    },
    List {
        /// The next item's number, for an ordered list.
        number: Option<u64>,
        delimiter: char,
        /// Whether the input's list is tight (items' text without paragraphs), once known.
        tight: Option<bool>,
        items: usize,
        /// Whether its first item may follow a line of text directly (a bullet, or `1.`).
        interrupts: bool,
        started: bool,
    },
    Item {
        marker: String,
        started: bool,
    },
}

impl Container {
    pub(super) fn started(&self) -> bool {
        match self {
            Container::Quote { started }
            | Container::List { started, .. }
            | Container::Item { started, .. } => *started,
        }
    }

    pub(super) fn start(&mut self) {
        match self {
            Container::Quote { started }
            | Container::List { started, .. }
            | Container::Item { started, .. } => *started = true,
        }
    }

    /// What this container puts before a line: an item's marker before its first line,
    /// the marker's width in spaces before the others.
    fn prefix(&self, first_line: bool, into: &mut String) {
        match self {
            Container::Quote { .. } => into.push_str("> "),
            Container::List { .. } => {}
            Container::Item { marker, started } => {
                if first_line && !started {
                    into.push_str(marker);
                    into.push(' ');
                } else {
                    into.extend(std::iter::repeat_n(' ', marker.len() + 1));
                }
            }
        }
    }
}

/// A block ready to write, as lines without the containers' prefixes.
pub(super) enum Block {
    /// cascade's own line (a rule, a note): shown whole or not at all.
    Lines(Vec<String>),
    /// A paragraph or a heading: a cut keeps whole lines.
    Paragraph(Vec<TextLine>),
    Fenced {
        info: String,
        parts: Vec<(String, usize)>,
    },
    Table {
        head: String,
        delimiter: String,
        rows: Vec<(String, usize)>,
    },
}

impl Block {
    /// How many parts (lines, code lines, table rows) a cut may keep the first of; 0 when
    /// the block is shown whole or not at all.
    fn parts(&self) -> usize {
        match self {
            Block::Lines(_) => 0,
            Block::Paragraph(lines) => lines.len(),
            Block::Fenced { parts, .. } => parts.len(),
            Block::Table { rows, .. } => rows.len(),
        }
    }

    fn lines(&self, keep: usize) -> Vec<String> {
        match self {
            Block::Lines(lines) => lines.clone(),
            Block::Paragraph(lines) => lines[..keep]
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    // A hard break ending the last line shown would show as a backslash.
                    let more = i + 1 < keep;
                    let hard = if line.hard_break && more { "\\" } else { "" };
                    format!("{}{hard}", line.text)
                })
                .collect(),
            Block::Fenced { info, parts } => {
                let body: String = parts[..keep].iter().map(|(t, _)| t.as_str()).collect();
                let body = body.strip_suffix('\n').unwrap_or(&body);
                fenced(body, info).split('\n').map(String::from).collect()
            }
            Block::Table {
                head,
                delimiter,
                rows,
            } => [head.clone(), delimiter.clone()]
                .into_iter()
                .chain(rows[..keep].iter().map(|(row, _)| row.clone()))
                .collect(),
        }
    }

    /// The input offset of the first part a cut after `keep` parts leaves out.
    fn resume_at(&self, keep: usize) -> Option<usize> {
        match self {
            Block::Lines(_) => None,
            Block::Paragraph(lines) => lines.get(keep).map(|line| line.start),
            Block::Fenced { parts, .. } => parts.get(keep).map(|(_, at)| *at),
            Block::Table { rows, .. } => rows.get(keep).map(|(_, at)| *at),
        }
    }
}

impl Renderer {
    /// Writes `block` if it fits; else as much of it as fits (when allowed) and stops.
    pub(super) fn place(&mut self, block: Block, start: usize) {
        if self.cut_at.is_some() {
            return;
        }
        let whole = self.layout(&block.lines(block.parts()));
        if self.fits(&whole) {
            self.commit(&whole);
            return;
        }
        let keep = if self.partial {
            self.longest_fitting(&block)
        } else {
            0
        };
        match block.resume_at(keep).filter(|_| keep > 0) {
            Some(resume_at) => {
                let some = self.layout(&block.lines(keep));
                self.commit(&some);
                self.cut_at = Some(resume_at);
            }
            None => self.cut_at = Some(start),
        }
    }

    fn fits(&self, more: &str) -> bool {
        self.out.len() + more.len() <= self.budget
    }

    /// The most parts of `block` that fit, knowing all of them do not: doubling, then
    /// halving, so a huge block costs a few renders of about the budget's size.
    fn longest_fitting(&self, block: &Block) -> usize {
        let fits = |keep: usize| self.fits(&self.layout(&block.lines(keep)));
        let (mut good, mut bad) = (0, block.parts());
        let mut probe = 1;
        while probe < bad {
            if !fits(probe) {
                bad = probe;
                break;
            }
            good = probe;
            probe *= 2;
        }
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        good
    }

    fn commit(&mut self, text: &str) {
        self.out.push_str(text);
        self.containers.iter_mut().for_each(Container::start);
        self.list_ended = None;
    }

    /// `lines` as they follow what is written: after a blank line (or a line break inside
    /// a tight list), each behind its containers' prefixes.
    fn layout(&self, lines: &[String]) -> String {
        let mut out = String::new();
        if !self.out.is_empty() {
            out.push('\n');
            if !self.joins_tightly() {
                out.push_str(&self.blank_line());
                out.push('\n');
            }
        }
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let start = out.len();
            for container in &self.containers {
                container.prefix(i == 0, &mut out);
            }
            if line.is_empty() {
                let prefix = out[start..].trim_end().len();
                out.truncate(start + prefix);
            }
            out.push_str(line);
        }
        out
    }

    /// A blank line inside the containers that already hold something: `>` keeps a quote
    /// open; containers opened since start after it.
    fn blank_line(&self) -> String {
        let mut line = String::new();
        for container in self.containers.iter().take_while(|c| c.started()) {
            container.prefix(false, &mut line);
        }
        line.trim_end().to_string()
    }

    /// Whether the next block starts on the next line rather than after a blank one: the
    /// next item of a tight list, or a tight item's sublist that may follow its text.
    fn joins_tightly(&self) -> bool {
        // The outermost quote or item that holds nothing yet (a list holds only items).
        let Some(p) = self
            .containers
            .iter()
            .position(|c| !c.started() && !matches!(c, Container::List { .. }))
        else {
            return false;
        };
        if !matches!(self.containers[p], Container::Item { .. }) || p == 0 {
            return false;
        }
        let Container::List {
            tight,
            items,
            interrupts,
            started,
            ..
        } = &self.containers[p - 1]
        else {
            return false;
        };
        if *started {
            return *items > 1 && *tight == Some(true);
        }
        *interrupts
            && p >= 3
            && matches!(
                self.containers[p - 2],
                Container::Item { started: true, .. }
            )
            && matches!(
                self.containers[p - 3],
                Container::List {
                    tight: Some(true),
                    ..
                }
            )
    }
}
