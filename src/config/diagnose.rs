//! Turns serde-saphyr's errors (syntax, unknown keys, wrong shapes) into the messages
//! users see. The location always comes from serde-saphyr; only the wording is ours.

use super::FILE_NAME;
use super::file::{
    APPLY_PERMISSION_KEYS, DRIFT_KEYS, ENVIRONMENT_KEYS, MODULE_KEYS, RETRIES_KEYS, TOP_KEYS,
};
use super::policies::file::{OWNERS_KEYS, POLICY_KEYS};
use super::workflows::file::{
    APPLY_KEYS, PHASE_KEYS, RUN_KEYS, STEP_KEYS, VAR_KEYS, WORKFLOW_KEYS,
};
use crate::problem::{Problem, ProblemKind};
use serde_saphyr::{Error, Location, MessageFormatter, UserMessageFormatter};
use std::borrow::Cow;

/// The executor names, as serde reports them for an unknown variant.
const EXECUTORS: &[&str] = &["terragrunt", "tofu", "terraform"];

/// A YAML or shape error as a located `Problem`. Errors that belong to the whole document
/// (it is a list, not a mapping) carry no location and are put at its start.
pub(super) fn yaml_problem(err: &Error) -> Problem {
    let err = err.without_snippet();
    match err.location() {
        Some(at) => problem_at(at, message(err)),
        None => Problem::new(ProblemKind::Config, message(err)).at(FILE_NAME, Some(1), Some(1)),
    }
}

/// The longest piece of the file a message quotes, in characters.
const MAX_QUOTED_CHARS: usize = 80;

/// `text` from the file, cut to [`MAX_QUOTED_CHARS`] for a message: the start of a value is
/// enough to find it, and a message must stay short however long the file's values are.
pub(super) fn shortened(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

/// A `Config` problem in `.cascade.yaml` at `at` (at no line if `at` is unknown).
pub(super) fn problem_at(at: Location, message: impl Into<String>) -> Problem {
    let known = at != Location::UNKNOWN;
    let line = known.then(|| u32::try_from(at.line()).unwrap_or(u32::MAX));
    let column = known.then(|| u32::try_from(at.column()).unwrap_or(u32::MAX));
    Problem::new(ProblemKind::Config, message).at(FILE_NAME, line, column)
}

fn message(err: &Error) -> String {
    match err {
        Error::SerdeUnknownField {
            field, expected, ..
        } => format!(
            "unknown key `{}` in {}; expected one of {}",
            shortened(field),
            key_owner(expected),
            expected.join(", ")
        ),
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } if expected == EXECUTORS => {
            format!(
                "`executor: {}` is not an executor; use terragrunt, tofu or terraform",
                shortened(variant)
            )
        }
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            format!(
                "`{}` is not allowed here; use one of {}",
                shortened(variant),
                expected.join(", ")
            )
        }
        // `expected` is one of the sentences in `file`, which name the key.
        Error::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => {
            format!("{expected}; found {}", found(unexpected))
        }
        Error::SerdeMissingField { field: "path", .. } => {
            "this entry has no `path`; add `path: <directory relative to the repository root>`"
                .to_string()
        }
        Error::SerdeMissingField { field, .. } => format!("this entry has no `{field}`; add it"),
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            format!(
                "`{}` appears twice in this mapping; keep one of them",
                shortened(key)
            )
        }
        Error::Unexpected {
            expected: "string scalar",
            ..
        } => "expected a single value here (a path or a glob), not a list or a mapping".to_string(),
        Error::MultipleDocuments { .. } => {
            format!("{FILE_NAME} must hold a single YAML document; remove the `---` separators")
        }
        Error::AliasError { error, .. } => message(error),
        Error::ExternalMessage { .. } | Error::Eof { .. } => format!(
            "invalid YAML: {}; fix the syntax here (indentation, quotes, brackets)",
            shortened(&UserMessageFormatter.format_message(err))
        ),
        _ => shortened(&UserMessageFormatter.format_message(err)).into_owned(),
    }
}

/// Which mapping an unknown key was found in, told apart by the keys it allows.
fn key_owner(expected: &[&str]) -> &'static str {
    if expected == TOP_KEYS {
        FILE_NAME
    } else if expected == MODULE_KEYS {
        "a `modules` entry"
    } else if expected == ENVIRONMENT_KEYS {
        "an environment"
    } else if expected == APPLY_PERMISSION_KEYS {
        "`apply_permission`"
    } else if expected == RETRIES_KEYS {
        "`retries`"
    } else if expected == DRIFT_KEYS {
        "`drift`"
    } else if expected == WORKFLOW_KEYS {
        "a workflow"
    } else if expected == PHASE_KEYS {
        "a workflow's `init` or `plan`"
    } else if expected == APPLY_KEYS {
        "a workflow's `apply`"
    } else if expected == VAR_KEYS {
        "an `env` entry"
    } else if expected == STEP_KEYS {
        "a hook's step (the one kind of step is `run`)"
    } else if expected == RUN_KEYS {
        "a `run` step"
    } else if expected == POLICY_KEYS {
        "a policy set"
    } else if expected == OWNERS_KEYS {
        "a policy set's `owners`"
    } else {
        "this mapping"
    }
}

/// serde's name for what was found, in the words of the file.
fn found(unexpected: &str) -> Cow<'_, str> {
    match unexpected {
        "unit value" => Cow::Borrowed("an empty value"),
        "map" => Cow::Borrowed("a mapping"),
        "sequence" => Cow::Borrowed("a list"),
        // `string "…"` quotes the value.
        other => shortened(other),
    }
}
