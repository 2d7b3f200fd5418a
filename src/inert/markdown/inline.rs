//! A paragraph, a heading or a table cell being written by
//! [`markdown`](super::markdown): the input's text through [`text`], its code through
//! [`code`] or [`cell`], and around them only cascade's own delimiters (`*`, `**`, `~~`),
//! placed so that no line of it can start a block and no two code spans can run together.

use crate::inert::{WORD_JOINER, cell, code, text};

/// A line of a paragraph: its text, whether a hard break ends it (written only where
/// another line follows), and the input offset where it starts, where a cut resumes.
pub(super) struct TextLine {
    pub(super) text: String,
    pub(super) hard_break: bool,
    pub(super) start: usize,
}

impl TextLine {
    fn starting_at(start: usize) -> Self {
        TextLine {
            text: String::new(),
            hard_break: false,
            start,
        }
    }
}

/// The styles cascade writes around text.
#[derive(Clone, Copy)]
pub(super) enum Style {
    Emphasis,
    Strong,
    Strikethrough,
}

impl Style {
    fn index(self) -> usize {
        self as usize
    }

    fn delimiter(self) -> &'static str {
        match self {
            Style::Emphasis => "*",
            Style::Strong => "**",
            Style::Strikethrough => "~~",
        }
    }
}

/// A paragraph, a heading or a table cell being written: cascade's own delimiters around
/// the input's text and code, each through `inert`.
pub(super) struct Inline {
    /// The lines so far.
    lines: Vec<TextLine>,
    /// Text not yet escaped: neighbouring pieces of text are escaped together, so a
    /// reference or an address split over two pieces (`GH` and `-12`) is still broken.
    pending: String,
    /// A heading or a cell: line breaks as spaces.
    one_line: bool,
    /// A table cell: code escapes `|`.
    in_table: bool,
    /// The line holds only opening delimiters so far, if anything: a space here would
    /// make a list marker or keep the delimiter from opening, so it is written `&#32;`.
    opened: bool,
    /// How deep each style is open, and where its delimiter was written (line, offset);
    /// a style open inside itself writes no second delimiter.
    depth: [u32; 3],
    opened_at: [(usize, usize); 3],
    /// Inside an autolink, whose address is shown instead of its text.
    hidden: u32,
    /// Inside an image, whose text is gathered into `alt`.
    image: u32,
    alt: String,
}

impl Inline {
    pub(super) fn paragraph() -> Self {
        Inline {
            lines: vec![TextLine::starting_at(0)],
            pending: String::new(),
            one_line: false,
            in_table: false,
            opened: true,
            depth: [0; 3],
            opened_at: [(0, 0); 3],
            hidden: 0,
            image: 0,
            alt: String::new(),
        }
    }

    /// A bold line: no step may write a heading that looks like one of cascade's sections.
    pub(super) fn heading() -> Self {
        let mut inline = Inline {
            one_line: true,
            ..Inline::paragraph()
        };
        inline.open(Style::Strong);
        inline
    }

    pub(super) fn cell() -> Self {
        Inline {
            one_line: true,
            in_table: true,
            ..Inline::paragraph()
        }
    }

    fn line(&mut self) -> &mut String {
        if self.lines.is_empty() {
            self.lines.push(TextLine::starting_at(0));
        }
        let last = self.lines.len() - 1;
        &mut self.lines[last].text
    }

    pub(super) fn raw(&mut self, piece: &str) {
        if self.image > 0 {
            self.alt.push_str(piece);
        } else if self.hidden == 0 {
            self.pending.push_str(piece);
        }
    }

    pub(super) fn code(&mut self, piece: &str) {
        if self.image > 0 {
            self.alt.push_str(piece);
        } else if self.hidden == 0 {
            let span = if self.in_table {
                cell(piece)
            } else {
                code(piece)
            };
            self.flush();
            if self.line().ends_with('`') {
                // Two code spans side by side would read as one span and what is around
                // it, turning code into Markdown and Markdown into code: an invisible
                // joiner keeps the backtick runs apart.
                self.line().push(WORD_JOINER);
            }
            self.append(&span);
        }
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let escaped = text(&self.pending);
            self.pending.clear();
            self.append(&escaped);
        }
    }

    fn append(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        let opened = self.opened;
        let line = self.line();
        if opened {
            let rest = piece.trim_start_matches(' ');
            for _ in 0..piece.len() - rest.len() {
                line.push_str("&#32;");
            }
            line.push_str(rest);
        } else {
            line.push_str(piece);
        }
        self.opened = false;
    }

    /// A line break; the next line starts at input offset `next`.
    pub(super) fn line_break(&mut self, hard: bool, next: usize) {
        if self.one_line || self.image > 0 {
            self.raw(" ");
            return;
        }
        if self.hidden > 0 {
            return;
        }
        self.flush();
        let last = self.lines.len() - 1;
        self.lines[last].hard_break = hard;
        self.lines.push(TextLine::starting_at(next));
        self.opened = true;
    }

    pub(super) fn open(&mut self, style: Style) {
        if self.image > 0 || self.hidden > 0 {
            return;
        }
        let i = style.index();
        self.depth[i] += 1;
        if self.depth[i] == 1 {
            self.flush();
            let at = (self.lines.len() - 1, self.line().len());
            self.opened_at[i] = at;
            self.line().push_str(style.delimiter());
            self.opened = true;
        }
    }

    pub(super) fn close(&mut self, style: Style) {
        if self.image > 0 || self.hidden > 0 {
            return;
        }
        let i = style.index();
        if self.depth[i] == 0 {
            return;
        }
        self.depth[i] -= 1;
        if self.depth[i] > 0 {
            return;
        }
        self.flush();
        let (opened_line, opened_at) = self.opened_at[i];
        let on_line = self.lines.len() - 1;
        let delimiter = style.delimiter();
        let line = self.line();
        entity_spaces_at_end(line);
        let opened = if opened_line == on_line && line.len() == opened_at + delimiter.len() {
            // Nothing between the delimiters (a link without words or address): a pair
            // of them alone could read as a rule.
            line.truncate(opened_at);
            line.is_empty() || line.ends_with(['*', '~'])
        } else {
            line.push_str(delimiter);
            false
        };
        self.opened = opened;
    }

    pub(super) fn link_end(&mut self, address: Option<&str>) {
        if self.image > 0 || self.hidden > 0 {
            return;
        }
        self.flush();
        if let Some(address) = address {
            if !self.opened {
                self.append(" ");
            }
            self.code(address);
        }
    }

    pub(super) fn hide(&mut self) {
        self.flush();
        self.hidden += 1;
    }

    pub(super) fn autolink_end(&mut self, address: &str) {
        self.hidden = self.hidden.saturating_sub(1);
        self.code(address);
    }

    pub(super) fn image_start(&mut self) {
        if self.image == 0 {
            self.alt.clear();
        }
        self.image += 1;
    }

    pub(super) fn image_end(&mut self) {
        self.image = self.image.saturating_sub(1);
        if self.image == 0 {
            let alt = std::mem::take(&mut self.alt);
            self.raw(&format!("[image: {}]", alt.trim()));
        }
    }

    /// Closes what is open; every style closes at its end in the input, but a heading's
    /// own bold does not.
    fn close_all(&mut self) {
        self.image = 0;
        self.hidden = 0;
        for style in [Style::Strikethrough, Style::Strong, Style::Emphasis] {
            if self.depth[style.index()] > 0 {
                self.depth[style.index()] = 1;
                self.close(style);
            }
        }
        self.flush();
    }

    /// The lines, none empty, none starting a block of its own.
    pub(super) fn finish(mut self) -> Vec<TextLine> {
        self.close_all();
        let mut lines = self.lines;
        for line in &mut lines {
            line.text.truncate(line.text.trim_end_matches(' ').len());
            no_list_number(&mut line.text);
        }
        lines.retain(|line| !line.text.is_empty());
        lines
    }

    pub(super) fn finish_cell(mut self) -> String {
        self.close_all();
        self.lines
            .into_iter()
            .map(|line| line.text)
            .collect::<String>()
            .trim_matches(' ')
            .to_string()
    }
}

/// Spaces before a closing delimiter keep it from closing: they are written `&#32;`.
fn entity_spaces_at_end(line: &mut String) {
    let kept = line.trim_end_matches(' ').len();
    let spaces = line.len() - kept;
    line.truncate(kept);
    for _ in 0..spaces {
        line.push_str("&#32;");
    }
}

/// A line starting `12. ` would start an ordered list; its dot is escaped (`text` escapes
/// every other character that starts a block).
fn no_list_number(line: &mut String) {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[digits..];
    if (1..=9).contains(&digits) && (rest == "." || rest.starts_with(". ")) {
        line.insert(digits, '\\');
    }
}
