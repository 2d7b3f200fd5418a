//! Parsing HCL files as Go HCL does, keeping byte spans so every problem can be
//! reported as `file:line:column`.
//!
//! hcl-edit rejects an object literal that repeats a key; Go HCL accepts it and
//! keeps the last value, and real repositories rely on that (duplicate keys in
//! `mock_outputs`). We rename the later key with a marker and re-parse; the
//! evaluator strips the marker, so the later value still wins.

use hcl_edit::structure::Body;
use std::ops::Range;

/// Prefix given to a repeated object key so that hcl-edit accepts the file.
pub const DUPLICATE_KEY_MARKER: &str = "__cascade_dup__";

use super::limits::{MAX_DUPLICATE_KEYS, MAX_REPARSED_BYTES};

/// One parsed HCL file.
#[derive(Debug)]
pub struct HclFile {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    pub body: Body,
    /// Byte offset of the start of every line, for span → line conversion.
    line_starts: Vec<usize>,
    /// Names of the functions called anywhere in the file, computed on first use.
    called: std::sync::OnceLock<std::collections::HashSet<String>>,
    /// What to evaluate to find the file's reads (`reads::read_plan`), computed on first use.
    read_plan: std::sync::OnceLock<super::reads::ReadPlan>,
}

/// A file that does not parse (located at the first error), or cannot be read.
///
/// The message is hcl-edit's description of what it expected, never the
/// offending line: the file may not be configuration at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
}

impl HclFile {
    /// Parses `text` as an HCL body, tolerating repeated object keys.
    pub fn parse(path: &str, text: &str) -> Result<HclFile, ParseError> {
        let mut source = std::borrow::Cow::Borrowed(text);
        let mut parsed_bytes = 0usize;
        for _ in 0..=MAX_DUPLICATE_KEYS {
            // Each repeated key costs a parse of the whole file: bound the total.
            parsed_bytes += source.len();
            if parsed_bytes > MAX_REPARSED_BYTES {
                break;
            }
            match hcl_edit::parser::parse_body(&source) {
                Ok(body) => {
                    return Ok(HclFile {
                        path: path.to_string(),
                        body,
                        line_starts: line_starts(&source),
                        called: Default::default(),
                        read_plan: Default::default(),
                    });
                }
                Err(err) => {
                    let offset = err.location().offset();
                    let renamed = if err.message().contains("redefined object key") {
                        mark_duplicate_key(&source, offset)
                    } else {
                        None
                    };
                    match renamed {
                        Some(fixed) => source = std::borrow::Cow::Owned(fixed),
                        None => {
                            return Err(ParseError {
                                line: Some(err.location().line() as u32),
                                column: Some(err.location().column() as u32),
                                message: first_line_message(&err),
                            });
                        }
                    }
                }
            }
        }
        Err(ParseError {
            line: Some(1),
            column: Some(1),
            message: format!(
                "too many repeated object keys for cascade to re-parse (at most {MAX_DUPLICATE_KEYS}, and {} MiB of re-parsing); keep one of each key",
                MAX_REPARSED_BYTES >> 20
            ),
        })
    }

    /// The 1-based line holding the start of `span`.
    pub fn line_of(&self, span: Option<Range<usize>>) -> Option<u32> {
        let start = span?.start;
        Some(self.line_starts.partition_point(|&s| s <= start) as u32)
    }

    /// True when the file calls function `name` anywhere.
    pub fn calls(&self, name: &str) -> bool {
        self.called
            .get_or_init(|| {
                let mut names = FunctionNames::default();
                hcl_edit::visit::Visit::visit_body(&mut names, &self.body);
                names.0
            })
            .contains(name)
    }

    /// The file's read plan, computed by `compute` the first time it is asked for.
    pub fn read_plan(
        &self,
        compute: impl FnOnce(&Body) -> super::reads::ReadPlan,
    ) -> &super::reads::ReadPlan {
        self.read_plan.get_or_init(|| compute(&self.body))
    }

    /// The directory holding this file, relative to the repository root ("" for the root).
    pub fn dir(&self) -> &str {
        match self.path.rfind('/') {
            Some(i) => &self.path[..i],
            None => "",
        }
    }
}

/// Collects the names of called functions.
#[derive(Default)]
pub struct FunctionNames(pub std::collections::HashSet<String>);

impl hcl_edit::visit::Visit for FunctionNames {
    fn visit_func_call(&mut self, call: &hcl_edit::expr::FuncCall) {
        self.0.insert(call.name.name.as_str().to_string());
        hcl_edit::visit::visit_func_call(self, call);
    }
}

/// Strips the duplicate-key marker(s) from an object key.
pub fn unmark_key(key: &str) -> &str {
    let mut k = key;
    while let Some(rest) = k.strip_prefix(DUPLICATE_KEY_MARKER) {
        k = rest;
    }
    k
}

fn mark_duplicate_key(source: &str, offset: usize) -> Option<String> {
    let rest = source.get(offset..)?;
    let first = rest.chars().next()?;
    let insert_at = if first == '"' {
        offset + 1
    } else if first.is_alphabetic() || first == '_' {
        offset
    } else {
        return None;
    };
    let mut fixed = String::with_capacity(source.len() + DUPLICATE_KEY_MARKER.len());
    fixed.push_str(&source[..insert_at]);
    fixed.push_str(DUPLICATE_KEY_MARKER);
    fixed.push_str(&source[insert_at..]);
    Some(fixed)
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

fn first_line_message(err: &hcl_edit::parser::Error) -> String {
    let message = err.message().trim();
    if message.is_empty() {
        "invalid HCL".to_string()
    } else {
        message.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_object_keys_parse_and_keep_both() {
        let f = HclFile::parse("x.hcl", "a = {\n  k = 1\n  k = 2\n  \"k\" = 3\n}\n").unwrap();
        assert!(f.body.get_attribute("a").is_some());
    }

    #[test]
    fn parse_errors_carry_line_and_column() {
        let err = HclFile::parse("x.hcl", "a = 1\nbroken hcl file\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.column >= Some(1));
    }

    #[test]
    fn line_of_maps_offsets() {
        let f = HclFile::parse("x.hcl", "a = 1\n\nb = 2\n").unwrap();
        let b = f.body.get_attribute("b").unwrap();
        use hcl_edit::Span;
        assert_eq!(f.line_of(b.span()), Some(3));
    }

    #[test]
    fn unmark() {
        assert_eq!(unmark_key("__cascade_dup____cascade_dup__k"), "k");
        assert_eq!(unmark_key("k"), "k");
    }
}
