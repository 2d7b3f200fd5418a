//! Loading, compiling and evaluating a policy set with regorus (see the parent module).
//!
//! Owns: the errors a policy set can have ([`PolicyError`]) and the parts below —
//! `load` (reading a set's `.rego` files from a tree), `purity` (the impure builtins
//! refused, the bounded ones), `evaluator` (conftest semantics over one input), `rego_test`
//! (a set's `test_*` rules) and `limits`. Must never: run a binary, touch the network, write
//! a file, or know what a plan, a unit or a pull request is: input is plain JSON.

mod evaluator;
pub mod limits;
mod load;
mod purity;
mod rego_test;
#[cfg(test)]
mod tests;

pub use evaluator::{Evaluator, Finding, Findings};
pub use load::{PolicyFile, load_set};
pub use purity::IMPURE_BUILTINS;
pub use rego_test::{TestOutcome, TestReport, TestResult, run_tests};

use std::time::Duration;

/// Why a policy set could not be loaded, compiled or evaluated. Every message names
/// the set or the file, and says what to do; none quotes a policy file beyond the
/// location regorus gives for a syntax error.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the policy directory `{dir}` does not exist")]
    MissingDir { dir: String },
    #[error("the policy file {path} {reason}")]
    File { path: String, reason: String },
    #[error("the policy directory `{dir}` holds {what}; split it into smaller policy sets")]
    TooLarge { dir: String, what: String },
    #[error("policy set `{set}` does not compile:\n{message}")]
    Parse { set: String, message: String },
    #[error(
        "policy set `{set}`: {path}:{line} calls `{builtin}`, which is not available: {advice}",
        advice = purity::IMPURE_ADVICE
    )]
    ImpureBuiltin {
        set: String,
        path: String,
        line: u32,
        builtin: String,
    },
    #[error(
        "policy set `{set}`: namespace `{namespace}` is not a package name (identifiers joined by `.`)"
    )]
    Namespace { set: String, namespace: String },
    #[error("policy set `{set}` was stopped: {what}")]
    Limit { set: String, what: LimitKind },
    #[error("policy set `{set}` failed: {message}")]
    Eval { set: String, message: String },
}

/// Which limit stopped an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The evaluation time limit: all of a set's rules on one unit's input together, or
    /// one `test_*` rule.
    Time(Duration),
    /// `numbers.range` / `numbers.range_step` asked for more than
    /// [`limits::MAX_RANGE_ELEMENTS`] numbers.
    Range,
    /// The evaluation's process passed its memory ceiling (bytes of data).
    Memory(u64),
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitKind::Time(limit) => write!(
                f,
                "it ran into the evaluation time limit ({} ms); \
                 a rule loops or builds a value without bound: make each rule's work follow \
                 the input (iterate over `input.plan.resource_changes`, not over a range)",
                limit.as_millis()
            ),
            LimitKind::Memory(ceiling) => write!(
                f,
                "it ran into the evaluation memory limit ({} MiB); a rule builds a value \
                 without bound: make each rule's work follow the input (iterate over \
                 `input.plan.resource_changes`, not over a range)",
                ceiling >> 20
            ),
            LimitKind::Range => write!(
                f,
                "`numbers.range` asked for more than {} numbers (the range limit); iterate \
                 over the input instead of a range",
                limits::MAX_RANGE_ELEMENTS
            ),
        }
    }
}
