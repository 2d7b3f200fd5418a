//! Text from a pull request made inert wherever cascade shows it: the plan and apply
//! comments, replies to commands, the check run's text and drift issues, on GitHub and on
//! GitLab.
//!
//! A pull request chooses much of what cascade shows: unit paths (a directory name may hold
//! backticks, `|`, `<`, `@`, even a newline), file names, branch names, error messages that
//! quote names, terraform's output (a precondition's `error_message` is the author's own
//! sentence), resource addresses and values, the arguments of a command echoed back. Each
//! must show as the characters it is and do nothing else: no link, image, HTML element,
//! mention (`@team`), reference (`#12`, `GH-12`, `!12`, `~label`, `%milestone`, `$snippet`,
//! `&epic`, `owner/repo#1`), autolink, code span or table cell of its own, no line
//! structure, and no character that hides or reorders text. One function per place text
//! lands:
//!
//! - [`text`] — Markdown outside code: paragraphs, list items, table cells, and the text of
//!   an HTML block. Markdown punctuation is backslash-escaped, `<`, `>` and `&` become
//!   entities, and a word joiner (U+2060, invisible) follows every sigil a forge turns into
//!   a mention or reference, sits inside `://` and after `www`, `GH-`: the forges find
//!   those in the rendered text, where a backslash escape is already gone.
//! - [`code`] — a code span (forges neither link nor mention inside code), with a backtick
//!   fence longer than any backtick run in the text; [`cell`] is the same inside a GFM
//!   table row, where `|` must be escaped even in code.
//! - [`html_code`] — `<code>` in an HTML block (`<summary>`), HTML-escaped.
//! - [`fenced`] — a fenced code block whose fence no line can close.
//! - [`markdown`] — a workflow step's Markdown output, read and written back as the few
//!   blocks cascade writes itself, each piece of text through the functions above.
//!
//! [`register`] gives the comment templates (which a repository may override) the same
//! functions as helpers — `{{code x}}`, `{{cell x}}`, `{{html_code x}}`,
//! `{{fenced x "info"}}` — and makes [`text`] their escape function, so a plain `{{x}}`
//! prints inert text whatever the template. Only triple braces (`{{{x}}}`) print a value as
//! it is; the built-in templates use them for cascade's own Markdown, never for a pull
//! request's text.
//!
//! It never shortens text (callers decide what fits; [`markdown`] is given its limit),
//! never decides what is shown, and its results contain no control character (but the
//! newlines of a fenced block or of [`markdown`]'s blocks) and no character that hides or
//! reorders text.

use handlebars::{
    Context, Handlebars, Helper, HelperDef, HelperResult, Output, RenderContext, RenderError,
    RenderErrorReason,
};
use std::borrow::Cow;

mod markdown;
pub use markdown::markdown;

/// Invisible, and not a word character: `@⁠team` is no mention, `#⁠12` no reference,
/// `https:⁠//x` no autolink. Unlike a zero-width space it allows no line break.
const WORD_JOINER: char = '\u{2060}';

/// True for characters that must never be printed raw because they hide or disguise what
/// a line says: control characters, separators other than the ASCII space, format
/// characters (bidi overrides, zero-width characters, the byte order mark) and
/// private-use characters. Unassigned code points are left alone (that needs Unicode
/// tables; they render as a replacement glyph).
pub(crate) fn hides_text(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            // Space separators other than U+0020, line and paragraph separators.
            0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000
            // Format characters: soft hyphen, Arabic marks, zero-width and bidi controls,
            // invisible operators, BOM, interlinear annotations, tags.
            | 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
            | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
            | 0x110BD | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F
            // Private use.
            | 0xE000..=0xF8FF | 0xF_0000..=0xF_FFFD | 0x10_0000..=0x10_FFFD
        )
}

/// `raw` on one line with every character visible: ASCII control characters (newline,
/// tab, escape) as their control pictures (`␊`, `␉`, `␛`, DEL as `␡`), anything else
/// [`hides_text`] finds as U+FFFD. A directory named with a newline shows where it is.
pub fn visible_line(raw: &str) -> Cow<'_, str> {
    if !raw.chars().any(hides_text) {
        return Cow::Borrowed(raw);
    }
    Cow::Owned(raw.chars().map(visible_char).collect())
}

fn visible_char(c: char) -> char {
    match u32::from(c) {
        code @ 0..=0x1F => char::from_u32(0x2400 + code).unwrap_or('\u{FFFD}'),
        0x7F => '\u{2421}',
        _ if hides_text(c) => '\u{FFFD}',
        _ => c,
    }
}

/// `raw` as inert Markdown text, for anywhere outside code: a paragraph, a list item, a
/// table cell, and also the text of an HTML block such as `<summary>` (where the backslash
/// escapes show, but nothing acts). One line (see [`visible_line`]). Shows the same
/// characters, plus invisible word joiners.
pub fn text(raw: &str) -> String {
    let chars: Vec<char> = visible_line(raw).chars().collect();
    let mut out = String::with_capacity(raw.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // Emphasis, links and images, code, headings, strikethrough, tables, math,
            // escapes; `!` for tidiness (`[` already stops an image).
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '#' | '~' | '|' | '$' => {
                out.push('\\');
                out.push(c);
            }
            // A list item or a setext underline, were the text at the start of a line.
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
        if joins_after(&chars, i) {
            out.push(WORD_JOINER);
        }
    }
    out
}

/// Whether a word joiner follows `chars[i]`: after a mention or reference sigil (GitHub:
/// `@user`, `#12`, `GH-12`; GitLab also `!12`, `~label`, `%milestone`, `$12`, `&12`), and
/// inside `://` and `www.` (autolinks).
fn joins_after(chars: &[char], i: usize) -> bool {
    // A word starts after anything but an ASCII letter or digit: a forge's pattern may see
    // a boundary between `é` and `GH-12` (a regex `\b` over ASCII words), and a joiner too
    // many is invisible where one too few is a link.
    let word_start = |at: usize| at == 0 || !chars[at - 1].is_ascii_alphanumeric();
    let lower = |at: usize| chars[at].to_ascii_lowercase();
    match chars[i] {
        '@' | '#' | '!' | '~' | '%' | '$' | '&' => true,
        ':' => chars.get(i + 1) == Some(&'/') && chars.get(i + 2) == Some(&'/'),
        '-' => i >= 2 && lower(i - 2) == 'g' && lower(i - 1) == 'h' && word_start(i - 2),
        'w' | 'W' => {
            i >= 2
                && lower(i - 2) == 'w'
                && lower(i - 1) == 'w'
                && word_start(i - 2)
                && chars.get(i + 1) == Some(&'.')
        }
        _ => false,
    }
}

/// `raw` as a code span, outside a table: one line ([`visible_line`]), whole, between
/// backtick fences longer than any run of backticks in it (padded with a space where it
/// starts or ends with a backtick or a space, which CommonMark would otherwise eat).
pub fn code(raw: &str) -> String {
    span(&visible_line(raw), false)
}

/// [`code`] for a GFM table cell: `|` is escaped (a table row is split at every unescaped
/// `|`, even inside code); the forge shows the code span without the backslash.
pub fn cell(raw: &str) -> String {
    span(&visible_line(raw), true)
}

fn span(content: &str, in_table: bool) -> String {
    if content.is_empty() {
        return "` `".to_string();
    }
    let fence = "`".repeat(longest_run(content, '`') + 1);
    let spaced = content.starts_with(' ') && content.ends_with(' ') && content.trim() != "";
    let pad = if content.starts_with('`') || content.ends_with('`') || spaced {
        " "
    } else {
        ""
    };
    let body = if in_table {
        Cow::Owned(content.replace('|', "\\|"))
    } else {
        Cow::Borrowed(content)
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// `raw` as `<code>…</code>` inside an HTML block (a `<summary>` line), HTML-escaped and on
/// one line: the forges neither link nor mention inside `<code>`, and the line cannot end
/// the block.
pub fn html_code(raw: &str) -> String {
    let line = visible_line(raw);
    let mut out = String::with_capacity(line.len() + 16);
    out.push_str("<code>");
    for c in line.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out.push_str("</code>");
    out
}

/// A backtick fence longer than any run of backticks in `text` (at least three), so no line
/// of it can close the block early.
pub fn fence_for(text: &str) -> String {
    "`".repeat((longest_run(text, '`') + 1).max(3))
}

/// `text` as a fenced code block with `info` (`text`, `diff`) after the opening fence: the
/// fence from [`fence_for`], `\r\n` and lone `\r` read as line ends, other control
/// characters but tabs as their control pictures, characters that hide or reorder text as
/// U+FFFD. No trailing newline.
pub fn fenced(text: &str, info: &str) -> String {
    let body: String = text
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .map(|c| {
            if c == '\n' || c == '\t' {
                c
            } else {
                visible_char(c)
            }
        })
        .collect();
    let fence = fence_for(&body);
    format!("{fence}{info}\n{body}\n{fence}")
}

fn longest_run(text: &str, of: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == of { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// Makes `registry` print every plain `{{value}}` as [`text`], and gives it the helpers
/// `code`, `cell`, `html_code` (one argument each) and `fenced` (the text and the info
/// string).
pub fn register(registry: &mut Handlebars<'_>) {
    registry.register_escape_fn(text);
    registry.register_helper(
        "code",
        Box::new(Placed(|h| Ok(code(&argument(h, "code", 0)?)))),
    );
    registry.register_helper(
        "cell",
        Box::new(Placed(|h| Ok(cell(&argument(h, "cell", 0)?)))),
    );
    registry.register_helper(
        "html_code",
        Box::new(Placed(|h| Ok(html_code(&argument(h, "html_code", 0)?)))),
    );
    registry.register_helper(
        "fenced",
        Box::new(Placed(|h| {
            // The info string is the template's own word: one word, whatever it holds.
            let info: String = argument(h, "fenced", 1)?
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '+'))
                .collect();
            Ok(fenced(&argument(h, "fenced", 0)?, &info))
        })),
    );
}

/// A helper that prints what a function of this module makes of its arguments; its output
/// is not escaped again.
struct Placed(fn(&Helper<'_>) -> Result<String, RenderError>);

impl HelperDef for Placed {
    fn call<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
        out: &mut dyn Output,
    ) -> HelperResult {
        out.write(&(self.0)(h)?)?;
        Ok(())
    }
}

/// Argument `index` of a helper as text; a field that does not exist is the same error as
/// it is in a plain `{{field}}` (the templates run in strict mode).
fn argument(h: &Helper<'_>, name: &'static str, index: usize) -> Result<String, RenderError> {
    let param = h
        .param(index)
        .ok_or(RenderErrorReason::ParamNotFoundForIndex(name, index))?;
    if param.is_value_missing() {
        return Err(RenderError::strict_error(param.relative_path()));
    }
    Ok(match param.value() {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const J: char = WORD_JOINER;

    #[test]
    fn text_escapes_markdown_and_breaks_mentions_references_and_links() {
        assert_eq!(
            text("notify @acme/platform-team"),
            format!("notify @{J}acme/platform-team")
        );
        assert_eq!(
            text("[x](https://evil) ![i](y)"),
            format!("\\[x\\]\\(https:{J}//evil\\) \\!{J}\\[i\\]\\(y\\)")
        );
        assert_eq!(
            text("see #12, GH-7, acme/infra#1, !3 ~bug %v1 $4 &5"),
            format!(
                "see \\#{J}12, GH-{J}7, acme/infra\\#{J}1, \\!{J}3 \\~{J}bug %{J}v1 \\${J}4 &amp;{J}5"
            )
        );
        assert_eq!(
            text("<img src=x> a|b `c` *d* _e_ \\"),
            "&lt;img src=x&gt; a\\|b \\`c\\` \\*d\\* \\_e\\_ \\\\"
        );
        assert_eq!(
            text("www.evil.com awww.x WWW.y"),
            format!("www{J}.evil.com awww.x WWW{J}.y")
        );
        assert_eq!(
            text("éGH-7 éwww.x xGH-8"),
            format!("éGH-{J}7 éwww{J}.x xGH-8")
        );
        assert_eq!(text("- item"), "\\- item");
        assert_eq!(
            text("live/prod/app-1 3f9a2c 12 units"),
            "live/prod/app-1 3f9a2c 12 units"
        );
    }

    #[test]
    fn text_is_one_visible_line() {
        assert_eq!(text("a\nb\tc\u{1b}[1m"), "a␊b␉c␛\\[1m");
        assert_eq!(text("x\u{202e}y\u{2060}z"), "x\u{FFFD}y\u{FFFD}z");
    }

    #[test]
    fn code_spans_hold_the_whole_text() {
        assert_eq!(code("live/a"), "`live/a`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("``x"), "``` ``x ```");
        assert_eq!(code(" a "), "`  a  `");
        assert_eq!(code("  "), "`  `");
        assert_eq!(code(""), "` `");
        assert_eq!(code("a|b @t\nc"), "`a|b @t␊c`");
        assert_eq!(cell("a|b\\|c"), "`a\\|b\\\\|c`");
    }

    #[test]
    fn html_code_escapes_html() {
        assert_eq!(
            html_code("</summary><img src=x onerror='a'>&\"\n"),
            "<code>&lt;/summary&gt;&lt;img src=x onerror=&#39;a&#39;&gt;&amp;&quot;␊</code>"
        );
    }

    #[test]
    fn fenced_blocks_cannot_be_closed_from_inside() {
        assert_eq!(
            fenced("a\r\n```\r\nb\u{7}\tc", "text"),
            "````text\na\n```\nb␇\tc\n````"
        );
        assert_eq!(fenced("x", "diff"), "```diff\nx\n```");
    }

    #[test]
    fn templates_escape_plain_values_and_place_them_with_helpers() {
        let mut registry = Handlebars::new();
        registry.set_strict_mode(true);
        register(&mut registry);
        registry
            .register_template_string(
                "t",
                "{{v}}|{{code v}}|{{cell v}}|{{html_code v}}|{{{v}}}\n{{fenced v \"text\"}}",
            )
            .unwrap();
        let out = registry
            .render("t", &serde_json::json!({"v": "@a|`b`"}))
            .unwrap();
        assert_eq!(
            out,
            format!(
                "@{J}a\\|\\`b\\`|`` @a|`b` ``|`` @a\\|`b` ``|<code>@a|`b`</code>|@a|`b`\n```text\n@a|`b`\n```"
            )
        );
        registry
            .register_template_string("missing", "{{code nope}}")
            .unwrap();
        let err = registry
            .render("missing", &serde_json::json!({}))
            .unwrap_err();
        assert!(
            matches!(err.reason(), RenderErrorReason::MissingVariable(Some(name)) if name == "nope"),
            "{err:?}"
        );
    }
}
