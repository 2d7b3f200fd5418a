//! One compiled policy set and its evaluation over one input document, with conftest's
//! semantics: `deny`, `violation` and `warn` rules in `package main` and in the
//! namespaces the set lists.
//!
//! Owns: compiling once (impure builtins refused, guards installed), the evaluation
//! time limit shared by all of a set's rules on one input, and turning rule values into
//! sorted [`Findings`]. Must never: decide what a finding blocks, write the input
//! anywhere, or run on the async runtime's threads ([`Evaluator::evaluate`] moves it
//! off them).

use super::limits::{CONCURRENT_EVALUATIONS, EVALUATION_TIME, TIME_CHECK_INTERVAL};
use super::load::PolicyFile;
use super::purity::{RANGE_LIMIT_MARKER, install_guards, refuse_impure};
use super::{LimitKind, PolicyError};
use regorus::utils::limits::ExecutionTimerConfig;
use regorus::{Engine, LimitError, Value};
use serde::Deserialize as _;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Evaluations running at once in the process ([`CONCURRENT_EVALUATIONS`]).
static EVALUATIONS: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(CONCURRENT_EVALUATIONS);

/// The rules conftest reads, and whether a message of each blocks (`deny`) or not.
const RULES: [(&str, Severity); 3] = [
    ("deny", Severity::Deny),
    ("violation", Severity::Deny),
    ("warn", Severity::Warn),
];

/// The full paths of the rules conftest reads in `packages` (in that order): each base
/// rule (undefined when a package lacks it), then the prefixed rules `defined` (package,
/// name) holds, by name.
fn watched_rules(packages: &[String], defined: &[(String, String)]) -> Vec<(String, Severity)> {
    let mut rules = Vec::new();
    for package in packages {
        for (base, severity) in RULES {
            rules.push((format!("data.{package}.{base}"), severity));
        }
        let mut prefixed: Vec<(String, Severity)> = defined
            .iter()
            .filter(|(p, _)| p == package)
            .filter_map(|(_, name)| {
                RULES
                    .iter()
                    .find(|(base, _)| {
                        name.strip_prefix(base)
                            .is_some_and(|rest| rest.len() > 1 && rest.starts_with('_'))
                    })
                    .map(|(_, severity)| (format!("data.{package}.{name}"), *severity))
            })
            .collect();
        prefixed.sort_by(|a, b| a.0.cmp(&b.0));
        prefixed.dedup_by(|a, b| a.0 == b.0);
        rules.extend(prefixed);
    }
    rules
}

#[derive(Clone, Copy, Debug)]
enum Severity {
    Deny,
    Warn,
}

/// One message of one rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// The rule's full path: `data.main.deny`.
    pub rule: String,
    /// The message: a string element, an object's `msg`, or else the element's JSON.
    pub message: String,
}

/// What a policy set says about one input: messages of `deny` and `violation` rules
/// (`deny`), and of `warn` rules (`warn`); each sorted and without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Findings {
    pub deny: Vec<Finding>,
    pub warn: Vec<Finding>,
}

/// A policy set compiled once, evaluated for each unit.
#[derive(Clone)]
pub struct Evaluator {
    name: String,
    engine: Engine,
    /// `data.main`, then each namespace: the packages whose rules are read.
    packages: Vec<String>,
    /// The set's files (tests left out) and namespaces, as compiled: what a child process
    /// compiles again (`exec::policy_worker`).
    files: Vec<PolicyFile>,
    namespaces: Vec<String>,
    /// The rules read in each of `packages`, as conftest reads them: `deny`, `violation`
    /// and `warn`, and every rule named with one of them and `_` (`deny_public_bucket`).
    rules: Vec<(String, Severity)>,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("name", &self.name)
            .field("packages", &self.packages)
            .finish_non_exhaustive()
    }
}

impl Evaluator {
    /// Compiles the set `name`'s policy files (its `*_test.rego` files are left out),
    /// reading rules from `package main` and from each of `namespaces` (`a.b`).
    pub fn new(
        name: &str,
        files: &[PolicyFile],
        namespaces: &[String],
    ) -> Result<Evaluator, PolicyError> {
        let mut packages = vec!["main".to_string()];
        for namespace in namespaces {
            let valid = namespace.split('.').all(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if !valid {
                return Err(PolicyError::Namespace {
                    set: name.to_string(),
                    namespace: namespace.clone(),
                });
            }
            if !packages.contains(namespace) {
                packages.push(namespace.clone());
            }
        }
        let files: Vec<&PolicyFile> = files.iter().filter(|f| !f.is_test()).collect();
        let engine = compile(name, &files)?;
        let mut defined = Vec::new();
        for file in &files {
            defined.extend(super::rego_test::rule_names(name, file)?);
        }
        let rules = watched_rules(&packages, &defined);
        Ok(Evaluator {
            name: name.to_string(),
            engine,
            packages,
            files: files.into_iter().cloned().collect(),
            namespaces: namespaces.to_vec(),
            rules,
        })
    }

    /// The policy set's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The files it was compiled from (its tests left out) and its namespaces.
    pub fn sources(&self) -> (&[PolicyFile], &[String]) {
        (&self.files, &self.namespaces)
    }

    /// The set's findings for `input`, evaluated on this thread: CPU-bound for up to
    /// [`EVALUATION_TIME`], so never call it on the async runtime (use [`Self::evaluate`]).
    pub fn evaluate_blocking(&self, input: &serde_json::Value) -> Result<Findings, PolicyError> {
        let input = Value::deserialize(input).map_err(|err| self.eval_error(err.to_string()))?;
        // A clone shares the compiled policy; evaluating mutates the interpreter's state.
        let mut engine = self.engine.clone();
        engine.set_input(input);
        let start = Instant::now();
        let mut findings = Findings::default();
        for (path, severity) in &self.rules {
            let left = EVALUATION_TIME.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(self.time_limit());
            }
            set_time_limit(&mut engine, left);
            let value = engine
                .eval_query(path.clone(), false)
                .map(first_value)
                .map_err(|err| self.classify(err))?;
            let into = match severity {
                Severity::Deny => &mut findings.deny,
                Severity::Warn => &mut findings.warn,
            };
            into.extend(messages(path, &value).into_iter().map(|message| Finding {
                rule: path.clone(),
                message,
            }));
        }
        for list in [&mut findings.deny, &mut findings.warn] {
            list.sort();
            list.dedup();
        }
        Ok(findings)
    }

    /// [`Self::evaluate_blocking`] on tokio's blocking pool, off the async runtime.
    pub async fn evaluate(
        self: Arc<Self>,
        input: Arc<serde_json::Value>,
    ) -> Result<Findings, PolicyError> {
        let name = self.name.clone();
        // One at a time in the process: what an evaluation may allocate in its time is
        // not multiplied by the units that finish planning together.
        let _turn = EVALUATIONS.acquire().await;
        tokio::task::spawn_blocking(move || self.evaluate_blocking(&input))
            .await
            .unwrap_or_else(|err| {
                Err(PolicyError::Eval {
                    set: name,
                    message: format!("the evaluation stopped: {err}"),
                })
            })
    }

    fn time_limit(&self) -> PolicyError {
        PolicyError::Limit {
            set: self.name.clone(),
            what: LimitKind::Time(EVALUATION_TIME),
        }
    }

    fn eval_error(&self, message: String) -> PolicyError {
        PolicyError::Eval {
            set: self.name.clone(),
            message,
        }
    }

    /// A limit reached, told as such; any other failure as regorus words it.
    fn classify(&self, err: anyhow::Error) -> PolicyError {
        classify(&self.name, err, EVALUATION_TIME)
    }
}

/// Builds an engine from `files`: impure builtins refused, guards installed, compiled.
pub(super) fn compile(set: &str, files: &[&PolicyFile]) -> Result<Engine, PolicyError> {
    let mut engine = Engine::new();
    let parse_error = |err: anyhow::Error| PolicyError::Parse {
        set: set.to_string(),
        message: format!("{err:#}").trim().to_string(),
    };
    for file in files {
        refuse_impure(set, file)?;
        engine
            .add_policy(file.path.clone(), file.text.clone())
            .map_err(parse_error)?;
    }
    install_guards(&mut engine).map_err(parse_error)?;
    // Compiling happens on the first evaluation: do it now, once, for every clone.
    engine
        .eval_query("true".to_string(), false)
        .map_err(parse_error)?;
    Ok(engine)
}

/// The value of a one-expression query; undefined when it had no result.
pub(super) fn first_value(results: regorus::QueryResults) -> Value {
    results
        .result
        .into_iter()
        .next()
        .and_then(|r| r.expressions.into_iter().next())
        .map(|e| e.value)
        .unwrap_or(Value::Undefined)
}

/// Sets the time `engine`'s next evaluation may take.
pub(super) fn set_time_limit(engine: &mut Engine, limit: Duration) {
    engine.set_execution_timer_config(ExecutionTimerConfig {
        limit,
        check_interval: NonZeroU32::new(TIME_CHECK_INTERVAL).unwrap_or(NonZeroU32::MIN),
    });
}

/// `err` as a [`PolicyError`]: a limit reached (time, a range's size), or else
/// regorus's own words.
pub(super) fn classify(set: &str, err: anyhow::Error, time: Duration) -> PolicyError {
    let limit = |what| PolicyError::Limit {
        set: set.to_string(),
        what,
    };
    if err.chain().any(|e| {
        matches!(
            e.downcast_ref::<LimitError>(),
            Some(LimitError::TimeLimitExceeded { .. })
        )
    }) {
        return limit(LimitKind::Time(time));
    }
    let message = format!("{err:#}").trim().to_string();
    if message.contains(RANGE_LIMIT_MARKER) {
        return limit(LimitKind::Range);
    }
    PolicyError::Eval {
        set: set.to_string(),
        message,
    }
}

/// The messages of a rule's value, conftest's way: each element of a set or array (a
/// string, an object's `msg`, or else its JSON); a lone string; `true` as one message
/// naming the rule; `false` and undefined as none.
fn messages(rule: &str, value: &Value) -> Vec<String> {
    match value {
        Value::Undefined | Value::Null | Value::Bool(false) => Vec::new(),
        Value::Bool(true) => vec![format!("{rule} is true")],
        Value::Set(set) => set.iter().map(message).collect(),
        Value::Array(items) => items.iter().map(message).collect(),
        other => vec![message(other)],
    }
}

fn message(value: &Value) -> String {
    match value {
        Value::String(text) => text.to_string(),
        Value::Object(fields) => match fields.get(&Value::from("msg")) {
            Some(Value::String(text)) => text.to_string(),
            Some(other) => json(other),
            None => json(value),
        },
        other => json(other),
    }
}

fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "(a value that has no JSON form)".to_string())
}
