//! Writing text from a plan safely: quoted strings as terraform quotes them, names that need
//! quotes, and visible escapes for characters that would hide or disguise what a line says.
//!
//! Everything a plan holds is text a pull request chose. Nothing returned here contains a
//! control character other than a tab, nor a character that reorders or hides text (bidi
//! overrides, zero-width characters): those become `\x1b` / `\u202e` style escapes.

use crate::inert::hides_text;
use std::borrow::Cow;
use std::fmt::Write as _;

/// Quotes `text` the way terraform's plan renderer does (Go's `%q`): backslash escapes for
/// `"`, `\` and non-printing characters, everything else as is.
pub(super) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    push_quoted_inner(&mut out, text);
    out.push('"');
    out
}

/// The inside of [`quoted`], without the quotes.
pub(super) fn quoted_inner(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_quoted_inner(&mut out, text);
    out
}

fn push_quoted_inner(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if hides_text(c) => push_escape(out, c),
            c => out.push(c),
        }
    }
}

/// `text` with every character that `hides_text` (the characters Go's `%q` would escape that
/// cascade must never print raw) finds replaced by a visible escape; a tab
/// stays. Used for text that is printed unquoted (heredoc lines, addresses, ids).
pub(super) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\t' && hides_text(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c != '\t' && hides_text(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Go's escapes for a non-printing character: `\a`-style for the common ASCII controls,
/// `\xNN` for other ASCII, `\uNNNN` / `\UNNNNNNNN` beyond.
fn push_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    let _ = match c {
        '\u{7}' => out.write_str("\\a"),
        '\u{8}' => out.write_str("\\b"),
        '\u{c}' => out.write_str("\\f"),
        '\u{b}' => out.write_str("\\v"),
        '\t' => out.write_str("\\t"),
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        _ if code < 0x80 => write!(out, "\\x{code:02x}"),
        _ if code < 0x1_0000 => write!(out, "\\u{code:04x}"),
        _ => write!(out, "\\U{code:08x}"),
    };
}

/// An attribute or output name as terraform prints it: bare when it is an HCL identifier,
/// quoted otherwise.
pub(super) fn attribute_name(name: &str) -> Cow<'_, str> {
    if is_identifier(name) {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(quoted(name))
    }
}

/// HCL's identifier rule: a letter (Unicode ID_Start) or `_`, then ID_Continue or `-`.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first == '_' || unicode_ident::is_xid_start(first) => {}
        _ => return false,
    }
    chars.all(|c| c == '-' || unicode_ident::is_xid_continue(c))
}

/// A string value as the renderer sees it: JSON, several lines, or one line.
pub(super) enum StringForm<'a> {
    /// The string is a JSON object or array (terraform shows it as `jsonencode(…)`).
    Json(serde_json::Value),
    /// The string holds a newline; the lines of the trimmed string.
    Lines(Vec<&'a str>),
    /// A one-line string.
    Line(&'a str),
}

/// Classifies a string the way terraform does: JSON first (only objects and arrays, the
/// whole string; only when `json` allows), then multi-line (trimmed of surrounding white
/// space), then one line.
pub(super) fn string_form(text: &str, json: bool) -> StringForm<'_> {
    if json
        && (text.starts_with('{') || text.starts_with('['))
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
    {
        return StringForm::Json(value);
    }
    if text.contains('\n') {
        return StringForm::Lines(text.trim().split('\n').collect());
    }
    StringForm::Line(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(quoted("plain"), r#""plain""#);
        assert_eq!(quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quoted("tab\there\nnl\r"), r#""tab\there\nnl\r""#);
        assert_eq!(
            quoted("bell\u{7}esc\u{1b}del\u{7f}"),
            r#""bell\aesc\x1bdel\x7f""#
        );
        assert_eq!(quoted("rtl\u{202e}zw\u{200b}"), r#""rtl\u202ezw\u200b""#);
        assert_eq!(quoted("tag\u{E0041}"), r#""tag\U000e0041""#);
        assert_eq!(quoted("café ünï 日本 `x`"), "\"café ünï 日本 `x`\"");
    }

    #[test]
    fn visible_keeps_tabs_and_printable_text() {
        assert_eq!(visible("a\tb `c` é"), "a\tb `c` é");
        assert_eq!(visible("a\u{1b}[31mred\r"), "a\\x1b[31mred\\r");
        assert_eq!(visible("x\u{2066}y\u{feff}"), "x\\u2066y\\ufeff");
    }

    #[test]
    fn names_are_quoted_unless_identifiers() {
        assert_eq!(attribute_name("instance_type"), "instance_type");
        assert_eq!(attribute_name("with-dash"), "with-dash");
        assert_eq!(attribute_name("_private"), "_private");
        assert_eq!(attribute_name("Größe"), "Größe");
        assert_eq!(attribute_name("1st"), r#""1st""#);
        assert_eq!(attribute_name("a b"), r#""a b""#);
        assert_eq!(attribute_name(""), r#""""#);
        assert_eq!(
            attribute_name("kubernetes.io/name"),
            r#""kubernetes.io/name""#
        );
    }

    #[test]
    fn strings_are_classified_like_terraform() {
        assert!(matches!(
            string_form(r#"{"a":1}"#, true),
            StringForm::Json(_)
        ));
        assert!(matches!(string_form("[1,2]", true), StringForm::Json(_)));
        // Only a whole JSON document counts, and only objects and arrays.
        assert!(matches!(string_form("[1,2] x", true), StringForm::Line(_)));
        assert!(matches!(string_form("12", true), StringForm::Line(_)));
        assert!(matches!(
            string_form(" {\"a\":1}", true),
            StringForm::Line(_)
        ));
        assert!(matches!(string_form("[1,2]", false), StringForm::Line(_)));
        match string_form("\n  one\ntwo\n\n", true) {
            StringForm::Lines(lines) => assert_eq!(lines, ["one", "two"]),
            _ => panic!("multi-line"),
        }
    }
}
