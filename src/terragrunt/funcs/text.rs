//! The functions that build or parse text: `format`, `formatlist`, `join`,
//! `split`, `replace`, `jsonencode`, `jsondecode` and `yamldecode`. Each one
//! that can make something bigger than its arguments checks the size against
//! the unit's [`Budget`] before allocating it; decoders are bounded (JSON by
//! serde_json's nesting limit, YAML by a serde-saphyr budget). Messages say
//! where text is wrong, never what it says.

use super::{arg, string_arg};
use crate::terragrunt::budget::Budget;
use crate::terragrunt::limits::{
    Limit, MAX_FORMAT_PRECISION, MAX_FORMAT_WIDTH, MAX_STRING_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES,
};
use crate::terragrunt::value::Value;

/// Trips `budget` with `limit` and returns the message, for `Err(..)`.
fn over(budget: &Budget, limit: Limit) -> String {
    budget.trip(limit).message()
}

/// `format` with the verbs configurations use: %s %d %v %q %f %t %%, with width and precision.
pub(super) fn format(args: &[Value], budget: &Budget) -> Result<Value, String> {
    let spec = string_arg(args, 0)?;
    let mut out = String::new();
    let mut next = 1;
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut flags = String::new();
        while let Some(&f) = chars.peek() {
            if f.is_ascii_digit() || f == '.' || f == '-' || f == '+' || f == '#' || f == ' ' {
                flags.push(f);
                chars.next();
            } else {
                break;
            }
        }
        let verb = chars.next().ok_or("format string ends with %")?;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let value = args
            .get(next)
            .ok_or("the format string has more verbs than there are arguments")?;
        next += 1;
        let (left, width, precision) = parse_flags(&flags);
        if width > MAX_FORMAT_WIDTH {
            return Err(over(budget, Limit::FormatWidth));
        }
        if precision.is_some_and(|p| p > MAX_FORMAT_PRECISION) {
            return Err(over(budget, Limit::FormatPrecision));
        }
        let text = match verb {
            's' | 'v' => value.to_template_string()?,
            'd' => format!("{}", value.as_number()?.trunc() as i64),
            'f' => match precision {
                Some(p) => format!("{:.*}", p, value.as_number()?),
                None => format!("{:.6}", value.as_number()?),
            },
            'q' => format!("{:?}", value.to_template_string()?),
            't' => value.as_bool()?.to_string(),
            other if other.is_ascii_alphabetic() => {
                return Err(format!("format verb %{other} is not supported"));
            }
            _ => return Err("the format string has a verb cascade does not know".into()),
        };
        let pad = width.saturating_sub(text.chars().count());
        if out.len() + text.len() + pad > MAX_STRING_BYTES {
            return Err(over(budget, Limit::StringBytes));
        }
        let zero = flags.starts_with('0') && !left;
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(if zero { '0' } else { ' ' }, pad));
            out.push_str(&text);
        }
    }
    Ok(Value::String(out))
}

/// (left-aligned, width, precision); a number too large to parse counts as `usize::MAX`.
fn parse_flags(flags: &str) -> (bool, usize, Option<usize>) {
    let left = flags.contains('-');
    let digits = flags.trim_start_matches(['-', '+', '#', ' ']);
    let number = |d: &str| {
        if d.is_empty() {
            0
        } else {
            d.parse().unwrap_or(usize::MAX)
        }
    };
    let (w, p) = match digits.split_once('.') {
        Some((w, p)) => (w, Some(number(p))),
        None => (digits, None),
    };
    (left, number(w), p)
}

pub(super) fn formatlist(args: &[Value], budget: &Budget) -> Result<Value, String> {
    let rest = args.get(1..).unwrap_or_default();
    let n = rest
        .iter()
        .filter_map(|a| {
            if let Value::List(l) = a {
                Some(l.len())
            } else {
                None
            }
        })
        .max()
        .unwrap_or(1);
    let mut out = Vec::new();
    let mut total = 0;
    for i in 0..n {
        let mut row = vec![arg(args, 0)?.clone()];
        for a in rest {
            row.push(match a {
                Value::List(l) => l
                    .get(i)
                    .cloned()
                    .ok_or("formatlist lists differ in length")?,
                other => other.clone(),
            });
        }
        let line = format(&row, budget)?;
        // The whole list is held to the size of one string.
        if let Value::String(s) = &line {
            total += s.len();
        }
        if total > MAX_STRING_BYTES {
            return Err(over(budget, Limit::StringBytes));
        }
        out.push(line);
    }
    Ok(Value::List(out))
}

pub(super) fn join(args: &[Value], budget: &Budget) -> Result<Value, String> {
    let sep = string_arg(args, 0)?;
    let mut out = String::new();
    for list in &args[1..] {
        for item in list.elements()? {
            let part = item.to_template_string()?;
            let extra = if out.is_empty() { 0 } else { sep.len() };
            if out.len() + extra + part.len() > MAX_STRING_BYTES {
                return Err(over(budget, Limit::StringBytes));
            }
            if extra > 0 {
                out.push_str(sep);
            }
            out.push_str(&part);
        }
    }
    Ok(Value::String(out))
}

pub(super) fn split(args: &[Value], budget: &Budget) -> Result<Value, String> {
    let sep = string_arg(args, 0)?;
    let s = arg(args, 1)?.to_template_string()?;
    let parts = s.split(sep).count();
    budget.collection_len(parts).map_err(|l| l.message())?;
    Ok(Value::List(
        s.split(sep).map(|p| Value::String(p.to_string())).collect(),
    ))
}

pub(super) fn replace(args: &[Value], budget: &Budget) -> Result<Value, String> {
    let s = arg(args, 0)?.to_template_string()?;
    let from = string_arg(args, 1)?;
    let to = arg(args, 2)?.to_template_string()?;
    if from.len() > 1 && from.starts_with('/') && from.ends_with('/') {
        return Ok(Value::unknown(
            "replace() with a regular expression is not evaluated by cascade",
        ));
    }
    if !from.is_empty() && to.len() > from.len() {
        let grows = s
            .matches(from)
            .count()
            .saturating_mul(to.len() - from.len());
        if s.len().saturating_add(grows) > MAX_STRING_BYTES {
            return Err(over(budget, Limit::StringBytes));
        }
    } else if from.is_empty()
        && s.len()
            .saturating_add((s.len() + 1).saturating_mul(to.len()))
            > MAX_STRING_BYTES
    {
        return Err(over(budget, Limit::StringBytes));
    }
    Ok(Value::String(s.replace(from, &to)))
}

/// JSON text of a value, written through a sink that stops at the string limit.
pub(super) fn jsonencode(value: &Value, budget: &Budget) -> Result<Value, String> {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > MAX_STRING_BYTES {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let json = value.to_json()?;
    let mut sink = Capped(Vec::new());
    if serde_json::to_writer(&mut sink, &json).is_err() {
        return Err(over(budget, Limit::StringBytes));
    }
    String::from_utf8(sink.0)
        .map(Value::String)
        .map_err(|_| "jsonencode produced text that is not UTF-8".to_string())
}

/// Decodes JSON (serde_json nests at most 128 levels). The message says
/// where the text is wrong, never what it says.
pub(super) fn jsondecode(text: &str) -> Result<Value, String> {
    serde_json::from_str::<serde_json::Value>(text)
        .map(|j| Value::from_json(&j))
        .map_err(|e| {
            let what = match e.classify() {
                serde_json::error::Category::Eof => "the text ends early",
                serde_json::error::Category::Syntax => "the text is not valid JSON",
                _ => "the text cannot be decoded",
            };
            format!("{what} (line {}, column {})", e.line(), e.column())
        })
}

/// Decodes YAML within a budget that stops alias bombs, deep nesting and
/// huge documents. The message says where the text is wrong, never what it says.
pub(super) fn yamldecode(text: &str, budget: &Budget) -> Result<Value, String> {
    let options = serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_events: MAX_YAML_NODES * 2,
            max_nodes: MAX_YAML_NODES,
            max_depth: MAX_YAML_DEPTH,
            max_documents: 1,
            max_total_scalar_bytes: MAX_STRING_BYTES,
            max_recorded_anchor_bytes: MAX_STRING_BYTES,
            max_recorded_anchor_events: MAX_YAML_NODES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_YAML_NODES,
        },
    };
    match serde_saphyr::from_str_with_options::<serde_json::Value>(text, options) {
        Ok(json) => Ok(Value::from_json(&json)),
        Err(e) => {
            if over_yaml_budget(&e) {
                return Err(over(budget, Limit::Yaml));
            }
            Err(match e.location() {
                Some(at) if at != serde_saphyr::Location::UNKNOWN => format!(
                    "the text is not valid YAML (line {}, column {})",
                    at.line(),
                    at.column()
                ),
                _ => "the text is not valid YAML".to_string(),
            })
        }
    }
}

/// True when serde-saphyr stopped at one of the limits it was given.
fn over_yaml_budget(e: &serde_saphyr::Error) -> bool {
    use serde_saphyr::Error as E;
    match e.without_snippet() {
        E::Budget { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => true,
        E::AliasError { error, .. } => over_yaml_budget(error),
        _ => false,
    }
}
