//! A workflow step's Markdown output (`format: markdown`: tflint, infracost, checkov…),
//! rewritten as Markdown cascade writes itself before it is shown in a unit's section.
//!
//! Code the pull request controls prints that output, so it is as hostile as any text of
//! the pull request: it could mention a team, reference an issue, link anywhere, load a
//! tracking image, carry raw HTML or characters that hide text, dress a line as one of
//! cascade's own headings, or open a fence that swallows the rest of the comment.
//! [`markdown`] reads it with pulldown-cmark (CommonMark with GFM tables and strikethrough)
//! and writes back, from the parser's events, only a small subset:
//!
//! - paragraphs and line breaks; headings as bold lines; emphasis, strong, strikethrough;
//! - code spans and fenced blocks (the info string cut to one short word);
//! - lists and block quotes, nested at most four deep (deeper ones flattened); GFM tables,
//!   at most twelve columns; rules.
//!
//! Every piece of text goes through [`text`] and every piece of code through [`code`],
//! [`cell`] or [`fenced`], so nothing of the input reaches the result but through them: a
//! link shows its words, then its address as code if it is `https://` (never a link); an
//! autolink shows as code; an image as `[image: alt]`; raw HTML (comments too) as code.
//!
//! The result is whole blocks, at most `limit` bytes: it stops before the block that would
//! pass the limit (a paragraph, a code block or a table keeps the lines that fit) and ends
//! with a line
//! saying how much of the output is not shown. It leaves nothing open: every fence it
//! writes is closed, and a paragraph after a blank line following it is at the top level.
//!
//! It never decides whether a step's output is shown, never redacts it (the caller does,
//! before), and never copies a byte of the input to the result except through `inert`.

mod blocks;
mod inline;
mod table;

use blocks::{Block, Container};
use inline::{Inline, Style};
use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag};
use std::ops::Range;
use table::Table;

/// Lists nested deeper are flattened: their items' blocks join the deepest kept item.
const MAX_LIST_DEPTH: usize = 4;
/// Quotes nested deeper are flattened into the deepest kept quote.
const MAX_QUOTE_DEPTH: usize = 4;
/// Table columns past this are dropped, with a line saying how many.
const MAX_COLUMNS: usize = 12;
/// The longest info string a code block keeps (`hcl`, `diff`, `terraform`).
const MAX_INFO_CHARS: usize = 20;
/// CommonMark reads at most nine digits as a list item's number.
const MAX_LIST_NUMBER: u64 = 999_999_999;

/// `raw`, a step's Markdown output, as inert Markdown of at most `limit` bytes (see the
/// module header). The result is a run of blocks without a trailing newline; put it
/// between blank lines. Empty when `raw` shows nothing, or when `limit` cannot even hold
/// the line saying what was cut.
pub fn markdown(raw: &str, limit: usize) -> String {
    let whole = Renderer::new(limit, false).run(raw);
    if whole.cut_at.is_none() {
        return whole.out;
    }
    // Not all of it fits: write again, keeping room for the line saying how much is left.
    let room = cut_line(raw.len()).len() + 2;
    let part = Renderer::new(limit.saturating_sub(room), true).run(raw);
    let Some(at) = part.cut_at else {
        return part.out;
    };
    let mut out = part.out;
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&cut_line(raw.len().saturating_sub(at)));
    if out.len() > limit {
        return String::new();
    }
    out
}

/// cascade's own words after a cut output: how many bytes of the input are not shown.
fn cut_line(left: usize) -> String {
    let unit = if left == 1 { "byte" } else { "bytes" };
    format!("*… output cut: {left} more {unit}.*")
}

/// What one pass wrote, and where in the input it stopped (`None`: it wrote everything).
struct Rendered {
    out: String,
    cut_at: Option<usize>,
}

/// One pass over the parser's events, writing blocks while they fit in `budget` bytes.
struct Renderer {
    budget: usize,
    /// Whether a code block or table that does not fit may show its first lines.
    partial: bool,
    out: String,
    /// The kept quotes, lists and items around what is written now, outermost first.
    containers: Vec<Container>,
    /// One per open tag of the input, telling what its end does.
    frames: Vec<Frame>,
    /// The block being read.
    leaf: Option<Leaf>,
    /// The nesting and delimiter of a list that just ended: a list right after it must use
    /// the other delimiter, or the two would read as one.
    list_ended: Option<(usize, char)>,
    cut_at: Option<usize>,
}

/// What the end of an input tag does.
enum Frame {
    /// A block-level tag shown only through what it holds (or nested too deep).
    Block,
    /// An inline tag shown only through what it holds.
    Inline,
    /// Pops a kept quote, list or item.
    Container,
    /// Writes the block read since its start.
    Leaf,
    Style(Style),
    /// A link: its address follows its text, as code, when it is `https://`.
    Link(Option<String>),
    /// `<https://…>` or `<a@b>`: the address as code instead of its text.
    Autolink(String),
    Image,
    TableHead,
    TableRow,
    TableCell,
}

struct Leaf {
    kind: LeafKind,
    start: usize,
}

enum LeafKind {
    Paragraph(Inline),
    Heading(Inline),
    /// A code block, or an HTML block shown as one: each piece of text with its offset.
    Code {
        info: String,
        parts: Vec<(String, usize)>,
    },
    Table(Table),
}

impl Renderer {
    fn new(budget: usize, partial: bool) -> Self {
        Renderer {
            budget,
            partial,
            out: String::new(),
            containers: Vec::new(),
            frames: Vec::new(),
            leaf: None,
            list_ended: None,
            cut_at: None,
        }
    }

    fn run(mut self, raw: &str) -> Rendered {
        let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
        for (event, at) in Parser::new_ext(raw, options).into_offset_iter() {
            self.event(event, at);
            if self.cut_at.is_some() {
                break;
            }
        }
        if let Some(leaf) = self.leaf.take() {
            self.write_leaf(leaf, raw.len());
        }
        Rendered {
            out: self.out,
            cut_at: self.cut_at,
        }
    }

    fn event(&mut self, event: Event<'_>, at: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, at.start),
            Event::End(_) => self.end(at.end),
            Event::Text(t) => match &mut self.leaf {
                Some(Leaf {
                    kind: LeafKind::Code { parts, .. },
                    ..
                }) => push_lines(parts, &t, at),
                _ => self.with_inline(at.start, |i| i.raw(&t)),
            },
            Event::Html(h) => match &mut self.leaf {
                Some(Leaf {
                    kind: LeafKind::Code { parts, .. },
                    ..
                }) => push_lines(parts, &h, at),
                _ => self.with_inline(at.start, |i| i.code(&h)),
            },
            Event::Code(c)
            | Event::InlineHtml(c)
            | Event::InlineMath(c)
            | Event::DisplayMath(c) => self.with_inline(at.start, |i| i.code(&c)),
            Event::FootnoteReference(name) => {
                self.with_inline(at.start, |i| i.raw(&format!("[^{name}]")))
            }
            Event::TaskListMarker(done) => {
                self.with_inline(at.start, |i| i.raw(if done { "[x] " } else { "[ ] " }))
            }
            Event::SoftBreak => self.with_inline(at.start, |i| i.line_break(false, at.end)),
            Event::HardBreak => self.with_inline(at.start, |i| i.line_break(true, at.end)),
            Event::Rule => {
                self.end_leaf(at.start);
                // `___`, not `---` (a setext underline after text) or `***` (a break
                // where it follows a `*` item marker).
                self.place(Block::Lines(vec!["___".to_string()]), at.start);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>, at: usize) {
        let frame = match tag {
            Tag::Paragraph => {
                self.end_leaf(at);
                self.note_tightness(false);
                self.open_leaf(LeafKind::Paragraph(Inline::paragraph()), at);
                Frame::Leaf
            }
            Tag::Heading { .. } => {
                self.end_leaf(at);
                self.open_leaf(LeafKind::Heading(Inline::heading()), at);
                Frame::Leaf
            }
            Tag::CodeBlock(CodeBlockKind::Fenced(info)) => self.open_code(info_word(&info), at),
            Tag::CodeBlock(CodeBlockKind::Indented) => self.open_code(String::new(), at),
            Tag::HtmlBlock => self.open_code("html".to_string(), at),
            Tag::Table(aligns) => {
                self.end_leaf(at);
                self.open_leaf(LeafKind::Table(Table::new(aligns)), at);
                Frame::Leaf
            }
            Tag::TableHead => {
                self.table(|t| t.start_row(at));
                Frame::TableHead
            }
            Tag::TableRow => {
                self.table(|t| t.start_row(at));
                Frame::TableRow
            }
            Tag::TableCell => {
                self.table(Table::start_cell);
                Frame::TableCell
            }
            Tag::BlockQuote(_) => {
                self.end_leaf(at);
                if self.depth(|c| matches!(c, Container::Quote { .. })) >= MAX_QUOTE_DEPTH {
                    Frame::Block
                } else {
                    self.containers.push(Container::Quote { started: false });
                    Frame::Container
                }
            }
            Tag::List(first) => {
                self.end_leaf(at);
                if self.depth(|c| matches!(c, Container::List { .. })) >= MAX_LIST_DEPTH {
                    Frame::Block
                } else {
                    self.open_list(first);
                    Frame::Container
                }
            }
            Tag::Item => {
                self.end_leaf(at);
                self.open_item()
            }
            Tag::Emphasis => self.open_style(Style::Emphasis, at),
            Tag::Strong => self.open_style(Style::Strong, at),
            Tag::Strikethrough => self.open_style(Style::Strikethrough, at),
            Tag::Link {
                link_type: LinkType::Autolink | LinkType::Email,
                dest_url,
                ..
            } => {
                self.with_inline(at, Inline::hide);
                Frame::Autolink(dest_url.to_string())
            }
            Tag::Link { dest_url, .. } => {
                self.with_inline(at, |_| {});
                let https = dest_url
                    .get(..8)
                    .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
                Frame::Link(https.then(|| dest_url.to_string()))
            }
            Tag::Image { .. } => {
                self.with_inline(at, Inline::image_start);
                Frame::Image
            }
            Tag::Superscript | Tag::Subscript => Frame::Inline,
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => {
                self.end_leaf(at);
                Frame::Block
            }
        };
        self.frames.push(frame);
    }

    fn end(&mut self, at: usize) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Inline => {}
            Frame::Block => self.end_leaf(at),
            Frame::Container => {
                self.end_leaf(at);
                if let Some(Container::List { delimiter, .. }) = self.containers.pop() {
                    self.list_ended = Some((self.containers.len(), delimiter));
                }
            }
            Frame::Leaf => {
                if let Some(leaf) = self.leaf.take() {
                    self.write_leaf(leaf, at);
                }
            }
            Frame::Style(style) => self.in_inline(|i| i.close(style)),
            Frame::Link(address) => self.in_inline(|i| i.link_end(address.as_deref())),
            Frame::Autolink(address) => self.in_inline(|i| i.autolink_end(&address)),
            Frame::Image => self.in_inline(Inline::image_end),
            Frame::TableHead => self.table(|t| t.end_row(true)),
            Frame::TableRow => self.table(|t| t.end_row(false)),
            Frame::TableCell => self.table(Table::end_cell),
        }
    }

    fn depth(&self, of: impl Fn(&Container) -> bool) -> usize {
        self.containers.iter().filter(|c| of(c)).count()
    }

    fn open_list(&mut self, first: Option<u64>) {
        let (usual, other) = if first.is_some() {
            ('.', ')')
        } else {
            ('-', '*')
        };
        let delimiter = match self.list_ended {
            Some((depth, used)) if depth == self.containers.len() && used == usual => other,
            _ => usual,
        };
        self.containers.push(Container::List {
            number: first.map(|n| n.min(MAX_LIST_NUMBER)),
            delimiter,
            tight: None,
            items: 0,
            interrupts: first.is_none_or(|n| n == 1),
            started: false,
        });
    }

    /// A kept item when its list was kept, else its blocks join the enclosing container.
    fn open_item(&mut self) -> Frame {
        if !matches!(self.frames.last(), Some(Frame::Container)) {
            return Frame::Block;
        }
        let Some(Container::List {
            number,
            delimiter,
            items,
            ..
        }) = self.containers.last_mut()
        else {
            return Frame::Block;
        };
        *items += 1;
        let marker = match number {
            Some(n) => {
                let marker = format!("{n}{delimiter}");
                *n = (*n + 1).min(MAX_LIST_NUMBER);
                marker
            }
            None => delimiter.to_string(),
        };
        self.containers.push(Container::Item {
            marker,
            started: false,
        });
        Frame::Container
    }

    fn open_style(&mut self, style: Style, at: usize) -> Frame {
        self.with_inline(at, |i| i.open(style));
        Frame::Style(style)
    }

    /// A code block, or an HTML block shown as one.
    fn open_code(&mut self, info: String, at: usize) -> Frame {
        self.end_leaf(at);
        let parts = Vec::new();
        self.open_leaf(LeafKind::Code { info, parts }, at);
        Frame::Leaf
    }

    fn open_leaf(&mut self, kind: LeafKind, start: usize) {
        self.leaf = Some(Leaf { kind, start });
    }

    /// Writes the block being read when a new block starts or its container ends: text
    /// outside a paragraph has no end of its own.
    fn end_leaf(&mut self, at: usize) {
        if let Some(leaf) = self.leaf.take() {
            self.write_leaf(leaf, at);
        }
    }

    /// A list is tight when its items' text comes without paragraphs; the first text in one
    /// of its items tells.
    fn note_tightness(&mut self, implicit: bool) {
        let n = self.containers.len();
        if n >= 2
            && matches!(self.containers[n - 1], Container::Item { .. })
            && let Container::List { tight, .. } = &mut self.containers[n - 2]
            && tight.is_none()
        {
            *tight = Some(implicit);
        }
    }

    /// Runs `f` on the text being written, opening a paragraph for text that comes outside
    /// one (a tight list item's); nothing when the text has no place (a dropped column).
    fn with_inline(&mut self, at: usize, f: impl FnOnce(&mut Inline)) {
        if self.leaf.is_none() {
            self.note_tightness(true);
            self.open_leaf(LeafKind::Paragraph(Inline::paragraph()), at);
        }
        self.in_inline(f);
    }

    /// Runs `f` on the text being written, if any.
    fn in_inline(&mut self, f: impl FnOnce(&mut Inline)) {
        match &mut self.leaf {
            Some(Leaf {
                kind: LeafKind::Paragraph(inline) | LeafKind::Heading(inline),
                ..
            }) => f(inline),
            Some(Leaf {
                kind: LeafKind::Table(table),
                ..
            }) => {
                if let Some(inline) = &mut table.cell {
                    f(inline);
                }
            }
            _ => {}
        }
    }

    fn table(&mut self, f: impl FnOnce(&mut Table)) {
        if let Some(Leaf {
            kind: LeafKind::Table(table),
            ..
        }) = &mut self.leaf
        {
            f(table);
        }
    }

    /// Writes a block that was read; `end` is the input offset after it.
    fn write_leaf(&mut self, leaf: Leaf, end: usize) {
        match leaf.kind {
            LeafKind::Paragraph(inline) | LeafKind::Heading(inline) => {
                let lines = inline.finish();
                if !lines.is_empty() {
                    self.place(Block::Paragraph(lines), leaf.start);
                }
            }
            LeafKind::Code { info, parts } => self.place(Block::Fenced { info, parts }, leaf.start),
            LeafKind::Table(table) => {
                let hidden = table.hidden_columns;
                self.place(table.finish(), leaf.start);
                if hidden > 0 {
                    let note = format!("*… {hidden} more columns not shown.*");
                    self.place(Block::Lines(vec![note]), end);
                }
            }
        }
    }
}

/// The lines of a code block's `piece` of text, each with its offset in the input, so a
/// cut can keep the lines that fit. The parser hands a block's text over in one piece when
/// it is one run of the input (offsets exact), line by line when it is not (inside a quote
/// or a list, after a `\r\n`).
fn push_lines(parts: &mut Vec<(String, usize)>, piece: &str, at: Range<usize>) {
    let mut offset = at.start;
    for line in piece.split_inclusive('\n') {
        parts.push((line.to_string(), offset.min(at.end)));
        offset += line.len();
    }
}

/// A code block's info string cut to its first word, of letters, digits, `_`, `+` and `-`
/// only, at most [`MAX_INFO_CHARS`] long: the forges show it as the language, nothing else.
fn info_word(info: &str) -> String {
    info.split_whitespace()
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-'))
        .take(MAX_INFO_CHARS)
        .collect()
}

#[cfg(test)]
mod tests;
