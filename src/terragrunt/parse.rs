//! Parsing HCL files as Go HCL does, keeping byte spans so every problem can be
//! reported as `file:line:column`.
//!
//! hcl-edit rejects an object literal that repeats a key; Go HCL accepts it and
//! keeps the last value, and real repositories rely on that (duplicate keys in
//! `mock_outputs`). We rename the later key with a marker and re-parse; the
//! evaluator strips the marker, so the later value still wins.

mod json;

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
    /// For a file written in HCL's JSON syntax: where the pieces of the native
    /// text that was parsed came from in the file (spans point into the former).
    origin: Option<Vec<json::Piece>>,
    /// Names of the functions called and the variables referred to anywhere
    /// in the file, computed on first use.
    called: std::sync::OnceLock<Names>,
    /// Expressions evaluated before dependencies that refer to `dependency`,
    /// computed on first use.
    early_refs: std::sync::OnceLock<EarlyRefs>,
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
    /// Parses `text` as an HCL body, tolerating repeated object keys; a
    /// `.json` file in HCL's JSON syntax.
    pub fn parse(path: &str, text: &str) -> Result<HclFile, ParseError> {
        if !path.ends_with(".json") {
            return HclFile::parse_native(path, text, line_starts(text), None);
        }
        let (native, origin) = json::to_native(text)?;
        HclFile::parse_native(path, &native, line_starts(text), Some(origin)).map_err(|mut e| {
            // The native text is ours: say where in the JSON file it went wrong.
            (e.line, e.column) = HclFile::locate_in(text, e.line, e.column, &native);
            e
        })
    }

    /// The line and column in `original` of a line and column in `native`
    /// (the text [`json::to_native`] wrote for it), as near as the pieces tell.
    fn locate_in(
        original: &str,
        line: Option<u32>,
        column: Option<u32>,
        native: &str,
    ) -> (Option<u32>, Option<u32>) {
        let (Some(line), Some(column)) = (line, column) else {
            return (line, column);
        };
        let starts = line_starts(native);
        let offset = starts.get(line as usize - 1).copied().unwrap_or(0) + column as usize - 1;
        let Ok((_, pieces)) = json::to_native(original) else {
            return (Some(line), Some(column));
        };
        let at = original_offset(&pieces, offset).min(original.len());
        let before = &original[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (Some(line as u32), Some(column as u32))
    }

    fn parse_native(
        path: &str,
        text: &str,
        line_starts: Vec<usize>,
        origin: Option<Vec<json::Piece>>,
    ) -> Result<HclFile, ParseError> {
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
                        line_starts,
                        origin,
                        called: Default::default(),
                        early_refs: Default::default(),
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
        let mut start = span?.start;
        if let Some(pieces) = &self.origin {
            start = original_offset(pieces, start);
        }
        Some(self.line_starts.partition_point(|&s| s <= start) as u32)
    }

    fn names(&self) -> &Names {
        self.called.get_or_init(|| {
            let mut names = Names::default();
            hcl_edit::visit::Visit::visit_body(&mut names, &self.body);
            names
        })
    }

    /// True when the file calls function `name` anywhere.
    pub fn calls(&self, name: &str) -> bool {
        self.names().functions.contains(name)
    }

    /// True when the file refers to the variable (namespace) `name` anywhere.
    pub fn refers_to(&self, name: &str) -> bool {
        self.names().variables.contains(name)
    }

    /// The early references to `dependency`, computed by `compute` the first time.
    pub fn early_dependency_refs(&self, compute: impl FnOnce(&Body) -> EarlyRefs) -> EarlyRefs {
        self.early_refs.get_or_init(|| compute(&self.body)).clone()
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

/// The expressions of a file evaluated before dependencies that refer to `dependency`.
pub type EarlyRefs = Vec<EarlyRef>;

/// One expression evaluated before dependencies that refers to `dependency`.
#[derive(Clone, Debug)]
pub struct EarlyRef {
    /// What it is: `local.x`, `terraform.source`, `include.path`…
    pub what: String,
    pub span: Option<Range<usize>>,
    /// True when every reference sits inside an argument of `try()` or
    /// `can()`, which catch the missing variable where Terragrunt evaluates
    /// the expression (not where it checks references before evaluating).
    pub only_in_try: bool,
}

/// Collects the names of called functions and of root variables.
#[derive(Debug, Default)]
pub struct Names {
    pub functions: std::collections::HashSet<String>,
    pub variables: std::collections::HashSet<String>,
}

impl hcl_edit::visit::Visit for Names {
    fn visit_func_call(&mut self, call: &hcl_edit::expr::FuncCall) {
        self.functions.insert(call.name.name.as_str().to_string());
        hcl_edit::visit::visit_func_call(self, call);
    }

    fn visit_expr(&mut self, expr: &hcl_edit::expr::Expression) {
        if let hcl_edit::expr::Expression::Variable(v) = expr {
            self.variables.insert(v.as_str().to_string());
        }
        hcl_edit::visit::visit_expr(self, expr);
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

/// The offset in a JSON file of `offset` in the native text written for it.
fn original_offset(pieces: &[json::Piece], offset: usize) -> usize {
    match pieces.partition_point(|p| p.written <= offset) {
        0 => 0,
        i => pieces[i - 1].original,
    }
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
