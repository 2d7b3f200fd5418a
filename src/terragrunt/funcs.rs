//! The plain HCL / OpenTofu functions real Terragrunt configurations use around
//! the functions that decide edges and reads. Pure: no files, no context.
//! Functions cascade does not evaluate (regex, cidr, hashing, time) return
//! unknown, which only matters if an edge or a read depends on them.
//!
//! Every function that can make something bigger than its arguments (padding,
//! joining, replacing, splitting, encoding, decoding) checks the result's size
//! against the unit's [`Budget`] *before* allocating it. Error messages name
//! kinds of values, never values: an argument may hold a file's contents.

mod text;

use super::budget::Budget;
use super::value::Value;
use std::collections::{BTreeMap, HashSet};
use text::{format, formatlist, join, jsondecode, jsonencode, replace, split, yamldecode};

/// Calls a pure function; `None` when the name is not one of them. A limit
/// error trips `budget`, which is how the caller tells it from a plain error.
pub fn call_pure(name: &str, args: Vec<Value>, budget: &Budget) -> Option<Result<Value, String>> {
    if let Some(why) = args.iter().find_map(Value::find_unknown)
        && is_pure(name)
    {
        return Some(Ok(Value::Unknown(why.clone())));
    }
    let result = match name {
        "format" => format(&args, budget),
        "formatlist" => formatlist(&args, budget),
        "join" => join(&args, budget),
        "split" => split(&args, budget),
        "replace" => replace(&args, budget),
        "lower" => string1(&args, |s| s.to_lowercase()),
        "upper" => string1(&args, |s| s.to_uppercase()),
        "title" => string1(&args, title),
        "trimspace" => string1(&args, |s| s.trim().to_string()),
        "chomp" => string1(&args, |s| s.trim_end_matches(['\n', '\r']).to_string()),
        "strrev" => string1(&args, |s| s.chars().rev().collect()),
        "trim" => string2(&args, |s, cut| {
            s.trim_matches(|c| cut.contains(c)).to_string()
        }),
        "trimprefix" => string2(&args, |s, p| s.strip_prefix(p).unwrap_or(s).to_string()),
        "trimsuffix" => string2(&args, |s, p| s.strip_suffix(p).unwrap_or(s).to_string()),
        "startswith" => string2_bool(&args, |s, p| s.starts_with(p)),
        "endswith" => string2_bool(&args, |s, p| s.ends_with(p)),
        "strcontains" => string2_bool(&args, |s, p| s.contains(p)),
        "substr" => substr(&args),
        "concat" => concat(&args),
        "merge" => merge(&args),
        "lookup" => lookup(&args),
        "coalesce" => coalesce(&args),
        "coalescelist" => coalescelist(&args),
        "element" => element(&args),
        "length" => length(&args),
        "keys" => keys(&args),
        "values" => values(&args),
        "contains" => contains(&args),
        "flatten" => arg(&args, 0).and_then(|v| Ok(Value::List(flatten(v)?))),
        "distinct" => arg(&args, 0).and_then(|v| Ok(Value::List(dedup(v.elements()?)))),
        "compact" => compact(&args),
        "reverse" => {
            arg(&args, 0).and_then(|v| Ok(Value::List(v.elements()?.into_iter().rev().collect())))
        }
        "sort" => sort(&args),
        "slice" => slice(&args),
        "index" => index(&args),
        "range" => range(&args),
        "zipmap" => zipmap(&args),
        "one" => one(&args),
        "alltrue" => {
            arg(&args, 0).and_then(|v| bools(v).map(|b| Value::Bool(b.iter().all(|x| *x))))
        }
        "anytrue" => {
            arg(&args, 0).and_then(|v| bools(v).map(|b| Value::Bool(b.iter().any(|x| *x))))
        }
        "abs" => number1(&args, f64::abs),
        "ceil" => number1(&args, f64::ceil),
        "floor" => number1(&args, f64::floor),
        "min" => numbers(&args).map(|n| Value::Number(n.into_iter().fold(f64::INFINITY, f64::min))),
        "max" => {
            numbers(&args).map(|n| Value::Number(n.into_iter().fold(f64::NEG_INFINITY, f64::max)))
        }
        "tostring" => arg(&args, 0).and_then(|v| match v {
            Value::Null => Ok(Value::Null),
            v => v.to_template_string().map(Value::String),
        }),
        "tonumber" => arg(&args, 0).and_then(|v| v.as_number().map(Value::Number)),
        "tobool" => arg(&args, 0).and_then(|v| v.as_bool().map(Value::Bool)),
        "tolist" | "toset" => arg(&args, 0).and_then(|v| {
            let mut items = v.elements()?;
            if name == "toset" {
                items = dedup(items);
            }
            Ok(Value::List(items))
        }),
        "tomap" => arg(&args, 0).and_then(|v| match v {
            Value::Map(_) => Ok(v.clone()),
            other => Err(format!(
                "tomap expects an object, found {}",
                other.type_name()
            )),
        }),
        "jsonencode" => arg(&args, 0).and_then(|v| jsonencode(v, budget)),
        "jsondecode" => string_arg(&args, 0).and_then(jsondecode),
        "yamldecode" => string_arg(&args, 0).and_then(|s| yamldecode(s, budget)),
        "dirname" => string1(&args, |s| match s.rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => s[..i].to_string(),
            None => ".".to_string(),
        }),
        "basename" => string1(&args, |s| {
            s.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string()
        }),
        _ if is_opaque(name) => Ok(Value::unknown(format!(
            "{name}() is not evaluated by cascade"
        ))),
        _ => return None,
    };
    Some(result)
}

fn is_pure(name: &str) -> bool {
    call_pure_names().contains(&name) || is_opaque(name)
}

fn call_pure_names() -> &'static [&'static str] {
    &[
        "format",
        "formatlist",
        "join",
        "split",
        "replace",
        "lower",
        "upper",
        "title",
        "trimspace",
        "chomp",
        "strrev",
        "trim",
        "trimprefix",
        "trimsuffix",
        "startswith",
        "endswith",
        "strcontains",
        "substr",
        "concat",
        "merge",
        "lookup",
        "coalesce",
        "coalescelist",
        "element",
        "length",
        "keys",
        "values",
        "contains",
        "flatten",
        "distinct",
        "compact",
        "reverse",
        "sort",
        "slice",
        "index",
        "range",
        "zipmap",
        "one",
        "alltrue",
        "anytrue",
        "abs",
        "ceil",
        "floor",
        "min",
        "max",
        "tostring",
        "tonumber",
        "tobool",
        "tolist",
        "toset",
        "tomap",
        "jsonencode",
        "jsondecode",
        "yamldecode",
        "dirname",
        "basename",
    ]
}

/// Functions whose results cascade leaves unknown: they never decide an edge
/// in the configurations surveyed, and computing them faithfully is not worth
/// the risk of computing them wrongly.
fn is_opaque(name: &str) -> bool {
    matches!(
        name,
        "regex"
            | "regexall"
            | "cidrsubnet"
            | "cidrsubnets"
            | "cidrhost"
            | "cidrnetmask"
            | "base64encode"
            | "base64decode"
            | "base64gzip"
            | "md5"
            | "sha1"
            | "sha256"
            | "sha512"
            | "uuid"
            | "uuidv5"
            | "timestamp"
            | "timeadd"
            | "formatdate"
            | "bcrypt"
            | "yamlencode"
            | "urlencode"
            | "textencodebase64"
            | "textdecodebase64"
            | "timecmp"
            | "constraint_check"
            | "sum"
            | "parseint"
            | "pow"
            | "log"
            | "signum"
            | "transpose"
            | "setproduct"
            | "setunion"
            | "setintersection"
            | "setsubtract"
            | "chunklist"
            | "matchkeys"
            | "indent"
            | "deep_merge"
            | "tuple"
            | "type"
            | "sensitive"
            | "nonsensitive"
            | "issensitive"
            | "ephemeralasnull"
    )
}

fn arg(args: &[Value], i: usize) -> Result<&Value, String> {
    args.get(i)
        .ok_or_else(|| format!("missing argument {}", i + 1))
}

fn string_arg(args: &[Value], i: usize) -> Result<&str, String> {
    match arg(args, i)? {
        Value::String(s) => Ok(s),
        other => Err(format!(
            "argument {} must be a string, found {}",
            i + 1,
            other.type_name()
        )),
    }
}

fn string1(args: &[Value], f: impl Fn(&str) -> String) -> Result<Value, String> {
    let s = arg(args, 0)?.to_template_string()?;
    Ok(Value::String(f(&s)))
}

fn string2(args: &[Value], f: impl Fn(&str, &str) -> String) -> Result<Value, String> {
    let a = arg(args, 0)?.to_template_string()?;
    let b = arg(args, 1)?.to_template_string()?;
    Ok(Value::String(f(&a, &b)))
}

fn string2_bool(args: &[Value], f: impl Fn(&str, &str) -> bool) -> Result<Value, String> {
    let a = arg(args, 0)?.to_template_string()?;
    let b = arg(args, 1)?.to_template_string()?;
    Ok(Value::Bool(f(&a, &b)))
}

fn number1(args: &[Value], f: impl Fn(f64) -> f64) -> Result<Value, String> {
    Ok(Value::Number(f(arg(args, 0)?.as_number()?)))
}

fn numbers(args: &[Value]) -> Result<Vec<f64>, String> {
    if args.is_empty() {
        return Err("expects at least one number".into());
    }
    args.iter().map(Value::as_number).collect()
}

fn bools(v: &Value) -> Result<Vec<bool>, String> {
    v.elements()?.iter().map(Value::as_bool).collect()
}

fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if start && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        start = !c.is_alphanumeric();
    }
    out
}

fn substr(args: &[Value]) -> Result<Value, String> {
    let s: Vec<char> = arg(args, 0)?.to_template_string()?.chars().collect();
    let offset = arg(args, 1)?.as_number()? as i64;
    let length = arg(args, 2)?.as_number()? as i64;
    let start = if offset < 0 {
        (s.len() as i64 + offset).max(0)
    } else {
        offset.min(s.len() as i64)
    } as usize;
    let end = if length < 0 {
        s.len()
    } else {
        (start + length as usize).min(s.len())
    };
    Ok(Value::String(s[start..end].iter().collect()))
}

fn concat(args: &[Value]) -> Result<Value, String> {
    let mut out = Vec::new();
    for a in args {
        out.extend(a.elements()?);
    }
    Ok(Value::List(out))
}

fn merge(args: &[Value]) -> Result<Value, String> {
    let mut out = BTreeMap::new();
    for a in args {
        match a {
            Value::Map(m) => out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone()))),
            Value::Null => {}
            other => {
                return Err(format!(
                    "merge expects objects, found {}",
                    other.type_name()
                ));
            }
        }
    }
    Ok(Value::Map(out))
}

fn lookup(args: &[Value]) -> Result<Value, String> {
    let key = arg(args, 1)?.to_template_string()?;
    match arg(args, 0)? {
        Value::Map(m) => match m.get(&key) {
            Some(v) => Ok(v.clone()),
            None => args
                .get(2)
                .cloned()
                .ok_or_else(|| "the object has no such key, and no default is given".to_string()),
        },
        other => Err(format!(
            "lookup expects an object, found {}",
            other.type_name()
        )),
    }
}

fn coalesce(args: &[Value]) -> Result<Value, String> {
    args.iter()
        .find(|v| !matches!(v, Value::Null) && !matches!(v, Value::String(s) if s.is_empty()))
        .cloned()
        .ok_or_else(|| "coalesce: every argument is null or empty".to_string())
}

fn coalescelist(args: &[Value]) -> Result<Value, String> {
    for a in args {
        if !a.elements()?.is_empty() {
            return Ok(a.clone());
        }
    }
    Err("coalescelist: every list is empty".into())
}

fn element(args: &[Value]) -> Result<Value, String> {
    let items = arg(args, 0)?.elements()?;
    if items.is_empty() {
        return Err("element: the list is empty".into());
    }
    let i = arg(args, 1)?.as_number()? as usize;
    Ok(items[i % items.len()].clone())
}

fn length(args: &[Value]) -> Result<Value, String> {
    Ok(Value::Number(match arg(args, 0)? {
        Value::String(s) => s.chars().count(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        other => return Err(format!("length of a {}", other.type_name())),
    } as f64))
}

fn keys(args: &[Value]) -> Result<Value, String> {
    match arg(args, 0)? {
        Value::Map(m) => Ok(Value::List(
            m.keys().map(|k| Value::String(k.clone())).collect(),
        )),
        other => Err(format!(
            "keys expects an object, found {}",
            other.type_name()
        )),
    }
}

fn values(args: &[Value]) -> Result<Value, String> {
    match arg(args, 0)? {
        Value::Map(m) => Ok(Value::List(m.values().cloned().collect())),
        other => Err(format!(
            "values expects an object, found {}",
            other.type_name()
        )),
    }
}

fn contains(args: &[Value]) -> Result<Value, String> {
    let needle = arg(args, 1)?;
    Ok(Value::Bool(
        arg(args, 0)?.elements()?.iter().any(|v| v == needle),
    ))
}

fn flatten(v: &Value) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for item in v.elements()? {
        match item {
            Value::List(_) => out.extend(flatten(&item)?),
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Drops repeated elements, keeping the first: linear, by each element's JSON
/// text (values with no JSON form, such as NaN, are never equal to anything).
fn dedup(items: Vec<Value>) -> Vec<Value> {
    let mut seen = HashSet::with_capacity(items.len());
    items
        .into_iter()
        .filter(|item| match item.to_json() {
            Ok(json) => seen.insert(json.to_string()),
            Err(_) => true,
        })
        .collect()
}

fn compact(args: &[Value]) -> Result<Value, String> {
    Ok(Value::List(
        arg(args, 0)?
            .elements()?
            .into_iter()
            .filter(|v| !matches!(v, Value::Null) && !matches!(v, Value::String(s) if s.is_empty()))
            .collect(),
    ))
}

fn sort(args: &[Value]) -> Result<Value, String> {
    let mut items: Vec<String> = arg(args, 0)?
        .elements()?
        .iter()
        .map(Value::to_template_string)
        .collect::<Result<_, _>>()?;
    items.sort();
    Ok(Value::List(items.into_iter().map(Value::String).collect()))
}

fn slice(args: &[Value]) -> Result<Value, String> {
    let items = arg(args, 0)?.elements()?;
    let start = arg(args, 1)?.as_number()? as usize;
    let end = arg(args, 2)?.as_number()? as usize;
    if start > end || end > items.len() {
        return Err(format!(
            "the start and end are not a range inside the list (it has {} elements)",
            items.len()
        ));
    }
    Ok(Value::List(items[start..end].to_vec()))
}

fn index(args: &[Value]) -> Result<Value, String> {
    let needle = arg(args, 1)?;
    arg(args, 0)?
        .elements()?
        .iter()
        .position(|v| v == needle)
        .map(|i| Value::Number(i as f64))
        .ok_or_else(|| "the value is not in the list".to_string())
}

fn range(args: &[Value]) -> Result<Value, String> {
    let n: Vec<f64> = args
        .iter()
        .map(Value::as_number)
        .collect::<Result<_, _>>()?;
    let (start, end, step) = match n.as_slice() {
        [end] => (0.0, *end, 1.0),
        [start, end] => (*start, *end, if end >= start { 1.0 } else { -1.0 }),
        [start, end, step] => (*start, *end, *step),
        _ => return Err("range takes 1 to 3 numbers".into()),
    };
    if step == 0.0 {
        return Err("range step must not be zero".into());
    }
    let mut out = Vec::new();
    let mut x = start;
    while (step > 0.0 && x < end) || (step < 0.0 && x > end) {
        out.push(Value::Number(x));
        x += step;
        if out.len() > 1024 {
            return Err("range is too long".into());
        }
    }
    Ok(Value::List(out))
}

fn zipmap(args: &[Value]) -> Result<Value, String> {
    let keys = arg(args, 0)?.elements()?;
    let values = arg(args, 1)?.elements()?;
    keys.iter()
        .zip(values)
        .map(|(k, v)| Ok((k.to_template_string()?, v)))
        .collect::<Result<_, String>>()
        .map(Value::Map)
}

fn one(args: &[Value]) -> Result<Value, String> {
    let items = arg(args, 0)?.elements()?;
    match items.len() {
        0 => Ok(Value::Null),
        1 => Ok(items[0].clone()),
        n => Err(format!("one() expects at most one element, found {n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn call(name: &str, args: Vec<Value>) -> Value {
        call_pure(name, args, &Budget::new(None))
            .expect("known function")
            .expect("no error")
    }

    #[test]
    fn strings() {
        assert_eq!(
            call(
                "format",
                vec![s("%s-%03d|%-4s|%%"), s("a"), Value::Number(7.0), s("b")]
            ),
            s("a-007|b   |%")
        );
        assert_eq!(
            call("join", vec![s(","), Value::List(vec![s("a"), s("b")])]),
            s("a,b")
        );
        assert_eq!(
            call("split", vec![s("/"), s("a/b")]),
            Value::List(vec![s("a"), s("b")])
        );
        assert_eq!(call("replace", vec![s("a-b"), s("-"), s("_")]), s("a_b"));
        assert_eq!(call("title", vec![s("hello world")]), s("Hello World"));
        assert_eq!(call("dirname", vec![s("/a/b/c.hcl")]), s("/a/b"));
        assert_eq!(call("basename", vec![s("/a/b/c.hcl")]), s("c.hcl"));
    }

    #[test]
    fn collections() {
        let m = |pairs: &[(&str, Value)]| {
            Value::Map(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            )
        };
        assert_eq!(
            call("merge", vec![m(&[("a", s("1"))]), m(&[("a", s("2"))])]),
            m(&[("a", s("2"))])
        );
        assert_eq!(call("lookup", vec![m(&[]), s("x"), s("d")]), s("d"));
        assert_eq!(call("coalesce", vec![Value::Null, s(""), s("x")]), s("x"));
        assert_eq!(
            call("length", vec![Value::List(vec![Value::Null; 3])]),
            Value::Number(3.0)
        );
        assert_eq!(
            call(
                "element",
                vec![Value::List(vec![s("a"), s("b")]), Value::Number(3.0)]
            ),
            s("b")
        );
        assert_eq!(
            call(
                "concat",
                vec![Value::List(vec![s("a")]), Value::List(vec![s("b")])]
            ),
            Value::List(vec![s("a"), s("b")])
        );
    }

    #[test]
    fn unknown_propagates() {
        assert!(call("upper", vec![Value::unknown("x")]).is_unknown());
        assert!(
            call(
                "cidrsubnet",
                vec![s("10.0.0.0/16"), Value::Number(8.0), Value::Number(1.0)]
            )
            .is_unknown()
        );
        assert!(call_pure("no_such_function", vec![], &Budget::new(None)).is_none());
    }

    #[test]
    fn decoding() {
        let v = call("yamldecode", vec![s("a: [1, 2]\nb: x\n")]);
        assert_eq!(
            v,
            Value::Map(
                [
                    (
                        "a".into(),
                        Value::List(vec![Value::Number(1.0), Value::Number(2.0)])
                    ),
                    ("b".into(), s("x"))
                ]
                .into()
            )
        );
        assert_eq!(call("jsonencode", vec![v]), s("{\"a\":[1,2],\"b\":\"x\"}"));
    }
}
