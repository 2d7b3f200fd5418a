//! HCL's JSON syntax (`terragrunt.hcl.json`, and included or read `.json`
//! files), written out in the native syntax the evaluator knows.
//!
//! The HCL JSON specification: the document is one object; a property whose
//! name is a block type of the schema is a block (one nested object level per
//! label, and an array where blocks repeat), every other property is an
//! attribute whose value is an expression; strings are templates (`${…}`,
//! decoded from JSON first, so `"${f(\"x\")}"` calls `f("x")`), and a property
//! named `//` is a comment. This module finds the document's structure and
//! where each value is (serde_json gives no positions; it decodes each string
//! and checks each number here), writes the native body (`key = value`,
//! `ident "label" { … }`) and records where each written piece came from, so
//! every line a problem reports is the line of the JSON file.
//!
//! Must never: guess a block from an attribute or the other way round beyond
//! the schema, or report a position in the text it writes instead of the
//! JSON file's.

use super::ParseError;
use std::ops::Range;

/// How deeply a JSON document may nest (the native parser bounds itself too).
const MAX_JSON_DEPTH: usize = 64;

/// Where one piece of the written text came from.
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    /// Offset in the written text.
    pub written: usize,
    /// Offset in the JSON text the piece stands for (every offset inside it maps there).
    pub original: usize,
}

/// The native text for the JSON `text`, and where its pieces came from.
pub fn to_native(text: &str) -> Result<(String, Vec<Piece>), ParseError> {
    let mut scanner = Scanner { text, pos: 0 };
    let document = scanner.value(0)?;
    scanner.whitespace();
    if scanner.pos < text.len() {
        return Err(at(
            text,
            scanner.pos,
            "invalid JSON: unexpected text after the document",
        ));
    }
    let Node::Object(_, properties) = document else {
        return Err(at(
            text,
            document.span().start,
            "a Terragrunt JSON configuration must be one JSON object",
        ));
    };
    let mut out = Writer {
        text,
        native: String::with_capacity(text.len() + 64),
        pieces: Vec::new(),
    };
    out.body(&properties, None)?;
    Ok((out.native, out.pieces))
}

/// How many labels a block type takes inside `parent` (`None`: the top
/// level), or `None` when the name is an attribute there. Terragrunt's
/// configuration schema, stack files included.
fn block_labels(parent: Option<&str>, name: &str) -> Option<usize> {
    match (parent, name) {
        (None, "include" | "dependency" | "generate" | "feature" | "unit" | "stack") => Some(1),
        (
            None,
            "locals" | "dependencies" | "terraform" | "remote_state" | "exclude" | "errors"
            | "engine" | "catalog",
        ) => Some(0),
        (Some("terraform"), "extra_arguments" | "before_hook" | "after_hook" | "error_hook") => {
            Some(1)
        }
        (Some("errors"), "retry" | "ignore") => Some(1),
        _ => None,
    }
}

/// One JSON value and where it is.
enum Node {
    String(Range<usize>),
    Array(Range<usize>, Vec<Node>),
    /// Properties in the order written (repeats kept: blocks may repeat).
    Object(Range<usize>, Vec<(Range<usize>, Node)>),
    /// A number, `true`, `false` or `null`.
    Scalar(Range<usize>),
}

impl Node {
    fn span(&self) -> Range<usize> {
        match self {
            Node::String(s) | Node::Scalar(s) | Node::Array(s, _) | Node::Object(s, _) => s.clone(),
        }
    }
}

/// Finds the structure of a JSON document and where each value is.
struct Scanner<'t> {
    text: &'t str,
    pos: usize,
}

impl Scanner<'_> {
    fn whitespace(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), ParseError> {
        self.whitespace();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(at(
                self.text,
                self.pos,
                &format!("invalid JSON: expected {what}"),
            ))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        if depth > MAX_JSON_DEPTH {
            return Err(at(
                self.text,
                self.pos,
                &format!("the JSON nests deeper than cascade's limit of {MAX_JSON_DEPTH} levels"),
            ));
        }
        self.whitespace();
        let start = self.pos;
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let mut properties = Vec::new();
                self.whitespace();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Node::Object(start..self.pos, properties));
                }
                loop {
                    self.whitespace();
                    if self.peek() != Some(b'"') {
                        return Err(at(
                            self.text,
                            self.pos,
                            "invalid JSON: expected a property name",
                        ));
                    }
                    let key = self.string()?;
                    self.expect(b':', "`:`")?;
                    let value = self.value(depth + 1)?;
                    properties.push((key, value));
                    self.whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Node::Object(start..self.pos, properties));
                        }
                        _ => {
                            return Err(at(
                                self.text,
                                self.pos,
                                "invalid JSON: expected `,` or `}`",
                            ));
                        }
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.whitespace();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Node::Array(start..self.pos, items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Node::Array(start..self.pos, items));
                        }
                        _ => {
                            return Err(at(
                                self.text,
                                self.pos,
                                "invalid JSON: expected `,` or `]`",
                            ));
                        }
                    }
                }
            }
            Some(b'"') => self.string().map(Node::String),
            Some(_) => {
                let rest = &self.text[self.pos..];
                let len = rest
                    .find([',', '}', ']', ' ', '\t', '\n', '\r'])
                    .unwrap_or(rest.len());
                self.pos += len;
                let token = &self.text[start..self.pos];
                match serde_json::from_str::<serde_json::Value>(token) {
                    Ok(serde_json::Value::Number(_) | serde_json::Value::Bool(_))
                    | Ok(serde_json::Value::Null) => Ok(Node::Scalar(start..self.pos)),
                    _ => Err(at(self.text, start, "invalid JSON: expected a value")),
                }
            }
            None => Err(at(
                self.text,
                start,
                "invalid JSON: the document ends too early",
            )),
        }
    }

    /// A string token, quotes included; its escapes are serde_json's to check.
    fn string(&mut self) -> Result<Range<usize>, ParseError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(start..self.pos);
                }
                Some(b'\\') => self.pos += 2,
                Some(c) if c < 0x20 => {
                    return Err(at(
                        self.text,
                        self.pos,
                        "invalid JSON: a string holds a control character",
                    ));
                }
                Some(_) => self.pos += 1,
                None => return Err(at(self.text, start, "invalid JSON: a string is not closed")),
            }
        }
    }
}

struct Writer<'t> {
    text: &'t str,
    native: String,
    pieces: Vec<Piece>,
}

impl Writer<'_> {
    /// Writes `s`, which stands for the JSON text at `original`.
    fn write(&mut self, s: &str, original: usize) {
        self.pieces.push(Piece {
            written: self.native.len(),
            original,
        });
        self.native.push_str(s);
    }

    /// The decoded text of a JSON string token.
    fn decoded(&self, span: &Range<usize>) -> Result<String, ParseError> {
        serde_json::from_str::<String>(&self.text[span.clone()]).map_err(|_| {
            at(
                self.text,
                span.start,
                "invalid JSON: a string has an invalid escape",
            )
        })
    }

    fn body(
        &mut self,
        properties: &[(Range<usize>, Node)],
        parent: Option<&str>,
    ) -> Result<(), ParseError> {
        for (key, value) in properties {
            let name = self.decoded(key)?;
            if name == "//" {
                continue;
            }
            match block_labels(parent, &name) {
                Some(labels) => self.blocks(&name, value, labels, &mut Vec::new())?,
                None => {
                    if !is_identifier(&name) {
                        return Err(at(
                            self.text,
                            key.start,
                            "a JSON property name must be an identifier (letters, digits, `_` and `-`)",
                        ));
                    }
                    self.write(&format!("{name} = "), key.start);
                    self.value(value)?;
                    self.write("\n", key.start);
                }
            }
        }
        Ok(())
    }

    /// The blocks of type `ident` that `value` holds, `labels` levels deep.
    fn blocks(
        &mut self,
        ident: &str,
        value: &Node,
        labels: usize,
        found: &mut Vec<(String, usize)>,
    ) -> Result<(), ParseError> {
        match value {
            Node::Array(_, items) => {
                for item in items {
                    self.blocks(ident, item, labels, found)?;
                }
                Ok(())
            }
            // A bare include (no label): its object holds `path` itself.
            Node::Object(span, properties)
                if labels == 0
                    || (ident == "include" && found.is_empty() && self.has_path(properties)) =>
            {
                self.write(ident, span.start);
                for (label, label_at) in found.iter() {
                    self.write(&format!(" {}", literal(label)), *label_at);
                }
                self.write(" {\n", span.start);
                self.body(properties, Some(ident))?;
                self.write("}\n", span.end.saturating_sub(1));
                Ok(())
            }
            Node::Object(_, properties) => {
                for (key, inner) in properties {
                    let label = self.decoded(key)?;
                    if label == "//" {
                        continue;
                    }
                    found.push((label, key.start));
                    self.blocks(ident, inner, labels - 1, found)?;
                    found.pop();
                }
                Ok(())
            }
            other => Err(at(
                self.text,
                other.span().start,
                &format!(
                    "`{ident}` is a block: its value must be a JSON object (or an array of them)"
                ),
            )),
        }
    }

    fn has_path(&self, properties: &[(Range<usize>, Node)]) -> bool {
        properties.iter().any(|(k, v)| {
            self.decoded(k).is_ok_and(|k| k == "path") && !matches!(v, Node::Object(..))
        })
    }

    /// An expression: strings are templates, objects and arrays are constructors.
    fn value(&mut self, node: &Node) -> Result<(), ParseError> {
        match node {
            Node::Scalar(span) => {
                let token = &self.text[span.clone()];
                self.write(token, span.start);
            }
            Node::String(span) => {
                let template = self.template(span)?;
                self.write(&template, span.start);
            }
            Node::Array(span, items) => {
                self.write("[", span.start);
                for item in items {
                    self.value(item)?;
                    self.write(", ", item.span().end);
                }
                self.write("]", span.end.saturating_sub(1));
            }
            Node::Object(span, properties) => {
                self.write("{\n", span.start);
                for (key, value) in properties {
                    let key_text = self.template(key)?;
                    self.write(&format!("{key_text} = "), key.start);
                    self.value(value)?;
                    self.write("\n", value.span().end);
                }
                self.write("}", span.end.saturating_sub(1));
            }
        }
        Ok(())
    }

    /// A JSON string, decoded, as a native quoted template: its
    /// interpolations and directives as written, its literal text escaped.
    fn template(&self, span: &Range<usize>) -> Result<String, ParseError> {
        let decoded = self.decoded(span)?;
        let parsed = hcl_edit::parser::parse_template(&decoded).map_err(|e| {
            at(
                self.text,
                span.start,
                &format!("invalid template in a JSON string: {}", e.message().trim()),
            )
        })?;
        let mut out = String::with_capacity(decoded.len() + 2);
        out.push('"');
        for element in parsed.iter() {
            let Some(part) = hcl_edit::Span::span(element) else {
                continue;
            };
            let raw = &decoded[part];
            match element {
                hcl_edit::template::Element::Literal(_) => out.push_str(&escaped(raw)),
                _ => out.push_str(raw),
            }
        }
        out.push('"');
        Ok(out)
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// Raw template text for a native quoted string: quotes, backslashes and
/// control characters escaped (template sequences stay as written).
fn escaped(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A block label as a native quoted string, taken literally.
fn literal(label: &str) -> String {
    let mut out = escaped(label);
    out = out.replace("${", "$${").replace("%{", "%%{");
    format!("\"{out}\"")
}

/// An error at offset `offset` of the JSON `text`.
fn at(text: &str, offset: usize, message: &str) -> ParseError {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.chars().count()
        - before
            .rfind('\n')
            .map_or(0, |i| before[..=i].chars().count())
        + 1;
    ParseError {
        line: Some(line as u32),
        column: Some(column as u32),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native(json: &str) -> String {
        to_native(json).unwrap().0
    }

    #[test]
    fn blocks_labels_and_attributes_follow_the_schema() {
        let json = r#"{
  "include": {"root": {"path": "${find_in_parent_folders(\"root.hcl\")}"}},
  "locals": {"a": [1, "x"], "n": -1.5e3},
  "dependency": [{"vpc": {"config_path": "../vpc"}}],
  "inputs": {"k": "v\"q\\"},
  "//": "a comment"
}"#;
        let text = native(json);
        let body = hcl_edit::parser::parse_body(&text).unwrap();
        let include = body.get_blocks("include").next().unwrap();
        assert_eq!(include.labels[0].as_str(), "root");
        assert!(include.body.has_attribute("path"));
        assert!(
            text.contains(r#"path = "${find_in_parent_folders("root.hcl")}""#),
            "{text}"
        );
        assert!(
            body.get_blocks("locals")
                .next()
                .unwrap()
                .body
                .has_attribute("a")
        );
        assert_eq!(body.get_blocks("dependency").count(), 1);
        assert!(body.has_attribute("inputs"));
        assert!(!text.contains("comment"));
    }

    #[test]
    fn a_bare_include_holds_its_path() {
        let text = native(r#"{"include": {"path": "../root.hcl"}}"#);
        let body = hcl_edit::parser::parse_body(&text).unwrap();
        let include = body.get_blocks("include").next().unwrap();
        assert!(include.labels.is_empty());
    }

    #[test]
    fn labels_that_look_like_templates_stay_literal() {
        let text = native(r#"{"dependency": {"${x}\"": {"config_path": "a"}}}"#);
        assert!(text.contains(r#"dependency "$${x}\"""#), "{text}");
    }

    #[test]
    fn errors_point_into_the_json() {
        let e = to_native("{\n  \"dependency\": 42\n}\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(17)));
        let e = to_native("[1]").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert_eq!(to_native("{\n  \"a b\": 1\n}").unwrap_err().line, Some(2));
        assert_eq!(to_native("{\n  \"a\": \n}").unwrap_err().line, Some(3));
        assert!(to_native(&"[".repeat(1000)).is_err());
    }

    #[test]
    fn every_written_piece_maps_back_to_its_line() {
        let json = "{\n  \"locals\": {\n    \"a\": 1,\n    \"b\": \"x\"\n  }\n}\n";
        let (text, pieces) = to_native(json).unwrap();
        let b = text.find("b = ").unwrap();
        let piece = pieces.iter().rev().find(|p| p.written <= b).unwrap();
        assert_eq!(json[..piece.original].matches('\n').count() + 1, 4);
    }
}
