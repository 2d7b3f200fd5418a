//! Keeping policies pure: a result depends on the input document and nothing else.
//!
//! Owns: the builtins a policy may not call (clock, network, randomness, the engine's
//! own environment), refused when a policy set is loaded, naming the file, the line and
//! the builtin; the same builtins replaced at evaluation by ones that fail (a second
//! lock, should a call slip past the scan); and the bounded `numbers.range`. Must never:
//! let a policy read the clock, the network or the process, or allocate in one builtin
//! call more than [`MAX_RANGE_ELEMENTS`] numbers.
//!
//! `http`, `opa-runtime` and `uuid` are not compiled into regorus at all (Cargo.toml);
//! `time.now_ns` and `rand.intn` are, with the pure `time.*` and number builtins.

use super::PolicyError;
use super::limits::MAX_RANGE_ELEMENTS;
use super::load::PolicyFile;
use regorus::unstable::{Lexer, TokenKind};
use regorus::{Engine, Value};

/// The builtins a policy may not call. OPA has all of them; regorus some.
pub const IMPURE_BUILTINS: &[&str] = &[
    "http.send",
    "net.lookup_ip_addr",
    "opa.runtime",
    "rand.intn",
    "rego.parse_module",
    "time.now_ns",
    "uuid.rfc4122",
];

/// The words every refusal of an impure builtin ends with (at load and at evaluation).
pub const IMPURE_ADVICE: &str = "cascade's policies see only their input, so a result depends on nothing else (no clock, network or randomness); use `input.now` for the evaluation time, and `input` for everything else";

/// The text an evaluation error carries when `numbers.range` went over its limit.
pub(super) const RANGE_LIMIT_MARKER: &str = "cascade range limit:";

/// Refuses `file` if it calls an impure builtin: the first call, by line.
///
/// The scan reads the file's tokens, so a name in a comment or a string is not a call;
/// a text that does not lex is left to the parser, which reports it with its location.
pub fn refuse_impure(set: &str, file: &PolicyFile) -> Result<(), PolicyError> {
    let Ok(source) = regorus::Source::from_contents(file.path.clone(), file.text.clone()) else {
        return Ok(());
    };
    let mut lexer = Lexer::new(&source);
    // The dotted name being read (`http`, `http.send`), its line, and whether a `.` ended it.
    let mut name = String::new();
    let mut line = 0;
    let mut after_dot = false;
    loop {
        let Ok(token) = lexer.next_token() else {
            return Ok(());
        };
        let text = token.1.text();
        match token.0 {
            TokenKind::Eof => return Ok(()),
            TokenKind::Ident if after_dot => {
                name.push('.');
                name.push_str(text);
                after_dot = false;
            }
            TokenKind::Ident => {
                name = text.to_string();
                line = token.1.line;
            }
            TokenKind::Symbol if text == "." && !name.is_empty() && !after_dot => {
                after_dot = true;
            }
            TokenKind::Symbol if text == "(" && !after_dot => {
                if let Some(builtin) = IMPURE_BUILTINS.iter().find(|b| **b == name) {
                    return Err(PolicyError::ImpureBuiltin {
                        set: set.to_string(),
                        path: file.path.clone(),
                        line,
                        builtin: (*builtin).to_string(),
                    });
                }
                name.clear();
            }
            _ => {
                name.clear();
                after_dot = false;
            }
        }
    }
}

/// Replaces, in `engine`, the impure builtins regorus has by ones that fail, and
/// `numbers.range` / `numbers.range_step` by bounded ones.
pub fn install_guards(engine: &mut Engine) -> anyhow::Result<()> {
    for (name, nargs) in [("time.now_ns", 0u8), ("rand.intn", 2)] {
        let message = format!("`{name}` is not available: {IMPURE_ADVICE}");
        engine.add_extension(
            name.to_string(),
            nargs,
            Box::new(move |_: Vec<Value>| -> anyhow::Result<Value> {
                Err(anyhow::anyhow!("{message}"))
            }),
        )?;
    }
    engine.add_extension(
        "numbers.range".to_string(),
        2,
        Box::new(|args: Vec<Value>| bounded_range("numbers.range", &args[0], &args[1], 1)),
    )?;
    engine.add_extension(
        "numbers.range_step".to_string(),
        3,
        Box::new(|args: Vec<Value>| {
            let Ok(step) = args[2].as_i64() else {
                return Ok(Value::Undefined);
            };
            if step <= 0 {
                anyhow::bail!("numbers.range_step: step must be a positive integer");
            }
            bounded_range("numbers.range_step", &args[0], &args[1], step)
        }),
    )?;
    Ok(())
}

/// OPA's `numbers.range` (from `a` to `b`, both included, by `step`), refused past
/// [`MAX_RANGE_ELEMENTS`] numbers; not integers: undefined, as regorus's own.
fn bounded_range(name: &str, a: &Value, b: &Value, step: i64) -> anyhow::Result<Value> {
    let (Ok(a), Ok(b)) = (a.as_i64(), b.as_i64()) else {
        return Ok(Value::Undefined);
    };
    let count = (i128::from(b) - i128::from(a)).unsigned_abs() / step.unsigned_abs() as u128 + 1;
    if count > u128::from(MAX_RANGE_ELEMENTS) {
        anyhow::bail!(
            "{RANGE_LIMIT_MARKER} {name} would make {count} numbers, more than {MAX_RANGE_ELEMENTS}"
        );
    }
    let step = if b >= a { step } else { -step };
    let mut values = Vec::with_capacity(count as usize);
    let mut n = a;
    for _ in 0..count {
        values.push(Value::from(n));
        n = n.saturating_add(step);
    }
    Ok(Value::from(values))
}
