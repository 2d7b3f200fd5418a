//! Values of the evaluator. Unlike `hcl::Value`, a value can be *unknown*: the
//! result of anything cascade will not compute during discovery (`run_cmd`,
//! AWS lookups, dependency outputs, unset environment variables). Unknowns
//! propagate through every operation, so an edge that depends on one is
//! reported instead of guessed.
//!
//! A value never appears in a message (it may hold a file's contents): errors
//! name its kind ([`Value::type_name`]), so there is no rendering for messages.

use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
    /// A value cascade does not compute; the text says why, for messages.
    Unknown(Arc<str>),
}

impl Value {
    pub fn unknown(why: impl Into<Arc<str>>) -> Value {
        Value::Unknown(why.into())
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown(_))
    }

    /// The first unknown inside this value (deeply), if any.
    pub fn find_unknown(&self) -> Option<&Arc<str>> {
        match self {
            Value::Unknown(why) => Some(why),
            Value::List(items) => items.iter().find_map(Value::find_unknown),
            Value::Map(map) => map.values().find_map(Value::find_unknown),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "object",
            Value::Unknown(_) => "unknown",
        }
    }

    /// The value as a string, converting numbers and bools as HCL templates do.
    pub fn to_template_string(&self) -> Result<String, String> {
        match self {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(format_number(*n)),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Null => Err("cannot use a null value in a string template".into()),
            other => Err(format!(
                "cannot use a {} value in a string template",
                other.type_name()
            )),
        }
    }

    pub fn as_bool(&self) -> Result<bool, String> {
        match self {
            Value::Bool(b) => Ok(*b),
            Value::String(s) if s == "true" => Ok(true),
            Value::String(s) if s == "false" => Ok(false),
            other => Err(format!("expected a bool, found {}", other.type_name())),
        }
    }

    pub fn as_number(&self) -> Result<f64, String> {
        match self {
            Value::Number(n) => Ok(*n),
            // Never quote the string: it may be a file's contents.
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .map_err(|_| "expected a number, found a string".to_string()),
            other => Err(format!("expected a number, found {}", other.type_name())),
        }
    }

    /// Elements of a list, or the values of a map in key order (as HCL iterates).
    pub fn elements(&self) -> Result<Vec<Value>, String> {
        match self {
            Value::List(items) => Ok(items.clone()),
            Value::Map(map) => Ok(map.values().cloned().collect()),
            other => Err(format!("expected a list, found {}", other.type_name())),
        }
    }

    pub fn to_json(&self) -> Result<serde_json::Value, String> {
        Ok(match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
                serde_json::Value::from(*n as i64)
            }
            Value::Number(n) => serde_json::Number::from_f64(*n)
                .map(serde_json::Value::Number)
                .ok_or_else(|| "number is not finite".to_string())?,
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => serde_json::Value::Array(
                items.iter().map(Value::to_json).collect::<Result<_, _>>()?,
            ),
            Value::Map(map) => serde_json::Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                    .collect::<Result<_, String>>()?,
            ),
            Value::Unknown(why) => return Err(why.to_string()),
        })
    }

    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(items) => {
                Value::List(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// Numbers print as integers when they are integral, as in HCL.
pub fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
