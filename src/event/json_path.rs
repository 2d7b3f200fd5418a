//! Names the place in a JSON body where a typed decode failed, so that a 400
//! says `pull_request.head.sha: missing field` rather than `line 1 column 9731`.
//!
//! serde_json reports a byte position: just after the value it rejected, or just
//! after the `}` of an object that lacks a field. Scanning the body up to that
//! position and keeping a stack of the keys and indices passed is enough to
//! name the path; nothing is decoded twice and the body is known to be valid JSON.

use std::fmt::Write as _;

/// The path (`pull_request.head.sha`, `repositories_added[1].id`, `(root)`) that
/// an error from `serde_json::from_slice(body)` is about, and the error's
/// message without serde_json's ` at line L column C` suffix.
pub(super) fn locate(body: &[u8], error: &serde_json::Error) -> (String, String) {
    let message = error.to_string();
    let reason = match message.rfind(" at line ") {
        Some(at) if error.line() > 0 => message[..at].to_owned(),
        _ => message,
    };
    let Some(offset) = byte_offset(body, error.line(), error.column()) else {
        return ("(root)".to_owned(), reason);
    };
    let scan = Scan::run(&body[..offset]);
    let path = match missing_field(&reason) {
        Some(field) => {
            let object = scan.just_closed.unwrap_or_else(|| render(&scan.stack));
            if object.is_empty() {
                field.to_owned()
            } else {
                format!("{object}.{field}")
            }
        }
        None => render(&scan.stack),
    };
    let path = if path.is_empty() {
        "(root)".to_owned()
    } else {
        path
    };
    (path, reason)
}

/// The field serde's derive names in "missing field `x`".
fn missing_field(reason: &str) -> Option<&str> {
    reason.strip_prefix("missing field `")?.strip_suffix('`')
}

/// serde_json counts lines from 1 and columns in bytes from the line's start.
fn byte_offset(body: &[u8], line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let line_start = if line == 1 {
        0
    } else {
        body.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(line - 2)
            .map(|(i, _)| i + 1)?
    };
    Some((line_start + column).min(body.len()))
}

enum Frame {
    /// `key` is the member being read; `expect_key` is true between `{` or `,`
    /// and the next member name.
    Object {
        key: Option<String>,
        expect_key: bool,
    },
    Array {
        index: usize,
    },
}

struct Scan {
    stack: Vec<Frame>,
    /// The path of the container whose closing bracket was the last token.
    just_closed: Option<String>,
}

impl Scan {
    fn run(prefix: &[u8]) -> Scan {
        let mut scan = Scan {
            stack: Vec::new(),
            just_closed: None,
        };
        let mut i = 0;
        while i < prefix.len() {
            let byte = prefix[i];
            if byte.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            scan.just_closed = None;
            match byte {
                b'{' => scan.stack.push(Frame::Object {
                    key: None,
                    expect_key: true,
                }),
                b'[' => scan.stack.push(Frame::Array { index: 0 }),
                b'}' | b']' => {
                    scan.stack.pop();
                    scan.just_closed = Some(render(&scan.stack));
                }
                b',' => match scan.stack.last_mut() {
                    Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                    Some(Frame::Array { index }) => *index += 1,
                    None => {}
                },
                b'"' => {
                    let end = string_end(prefix, i);
                    if let Some(Frame::Object { key, expect_key }) = scan.stack.last_mut()
                        && *expect_key
                    {
                        *key = Some(decode_key(&prefix[i..end]));
                        *expect_key = false;
                    }
                    i = end;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        scan
    }
}

/// The index just past the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn decode_key(token: &[u8]) -> String {
    serde_json::from_slice(token)
        .unwrap_or_else(|_| String::from_utf8_lossy(token).trim_matches('"').to_owned())
}

fn render(stack: &[Frame]) -> String {
    let mut out = String::new();
    for frame in stack {
        match frame {
            Frame::Object { key: Some(key), .. } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Frame::Object { key: None, .. } => {}
            Frame::Array { index } => {
                let _ = write!(out, "[{index}]");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::locate;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        x: Inner,
        n: u64,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        s: String,
        v: Vec<Leaf>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Leaf {
        k: u32,
    }

    fn path_of(body: &str) -> (String, String) {
        let error = serde_json::from_str::<Outer>(body).expect_err("the body must not decode");
        locate(body.as_bytes(), &error)
    }

    #[test]
    fn names_a_missing_field_in_a_nested_object() {
        let (path, reason) = path_of(r#"{"x": {"v": []}, "n": 1}"#);
        assert_eq!(path, "x.s");
        assert_eq!(reason, "missing field `s`");
    }

    #[test]
    fn names_a_missing_field_at_the_root() {
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}}"#).0, "n");
    }

    #[test]
    fn names_a_missing_field_inside_an_array_element() {
        let (path, _) = path_of(r#"{"x": {"s": "a", "v": [{"k": 1}, {"j": {"k": 2}}]}, "n": 1}"#);
        assert_eq!(path, "x.v[1].k");
    }

    #[test]
    fn names_a_value_of_the_wrong_type() {
        assert_eq!(path_of(r#"{"x": {"s": null, "v": []}, "n": 1}"#).0, "x.s");
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}, "n": -1}"#).0, "n");
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}, "n": 1.5}"#).0, "n");
        assert_eq!(path_of(r#"{"x": "flat", "n": 1}"#).0, "x");
        assert_eq!(
            path_of(r#"{"x": {"s": {"a": [1]}, "v": []}, "n": 1}"#).0,
            "x.s"
        );
        assert_eq!(path_of(r#"{"x": {"s": [], "v": []}, "n": 1}"#).0, "x.s");
    }

    #[test]
    fn names_an_array_element_of_the_wrong_type() {
        let (path, reason) =
            path_of(r#"{"x": {"s": "", "v": [{"k": 1}, {"k": 2}, {"k": "3"}]}, "n": 1}"#);
        assert_eq!(path, "x.v[2].k");
        assert_eq!(reason, r#"invalid type: string "3", expected u32"#);
    }

    #[test]
    fn counts_columns_in_bytes_across_lines_and_escapes() {
        let body =
            "{\n  \"x\": {\"s\": \"é \\\" } ]\",\n \"v\": [ {\"k\": true} ]},\n  \"n\": 1\n}";
        assert_eq!(path_of(body).0, "x.v[0].k");
    }

    #[test]
    fn a_root_of_the_wrong_type_is_the_root() {
        let (path, reason) = path_of(r#""a string""#);
        assert_eq!(path, "(root)");
        assert!(reason.starts_with("invalid type: string"), "{reason}");
    }

    #[test]
    fn a_struct_given_as_an_array_is_read_by_position() {
        // serde's derive accepts `[x, n]` for a struct; the first element is wrong.
        assert_eq!(path_of("[1, 2]").0, "[0]");
    }

    #[test]
    fn keys_with_escapes_are_decoded() {
        let (path, _) = path_of(r#"{"x": {"s": "", "v": []}, "\u006e": "one"}"#);
        assert_eq!(path, "n");
    }
}
