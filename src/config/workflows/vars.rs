//! Which variables a workflow's `env` may set, and how: the names cascade keeps for
//! itself, the names that change how the tools run, and the names that look like a
//! credential, which a repository may select from the server (`from_server:`) but never
//! define (`value:`). Only names; values are the server's business.

use super::file::VarEntry;
use super::{EnvValue, EnvVar};
use crate::config::diagnose::{problem_at, shortened};
use crate::problem::Problem;
use serde_saphyr::Spanned;

/// The longest value a workflow may write, and the longest variable name.
const MAX_VALUE_BYTES: usize = 4096;
const MAX_NAME_BYTES: usize = 128;
/// The longest name of a server entry (`from_server:`).
const MAX_ENTRY_NAME: usize = 64;

/// Variables cascade sets for every command itself (besides `CASCADE_*`): the tools'
/// search path, home, temporary and cache directories, and the switches that keep them
/// non-interactive. Kept in step with `exec::env` (which may import this; config may not
/// import exec).
pub const SET_BY_CASCADE: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "TF_PLUGIN_CACHE_DIR",
    "TF_IN_AUTOMATION",
    "CHECKPOINT_DISABLE",
    "TF_INPUT",
    "TG_NON_INTERACTIVE",
    "TERRAGRUNT_NON_INTERACTIVE",
    "NO_COLOR",
];

/// Whether cascade sets `name` itself, or never lets it through (`CASCADE_*`).
pub fn set_by_cascade(name: &str) -> bool {
    name.starts_with("CASCADE_") || SET_BY_CASCADE.contains(&name)
}

/// Name prefixes of the clouds', forges', Vault's and the tools' credentials.
const CREDENTIAL_PREFIXES: &[&str] = &[
    "AWS_",
    "GOOGLE_",
    "CLOUDSDK_",
    "ARM_",
    "AZURE_",
    "GITHUB_",
    "GITLAB_",
    "VAULT_",
    "TF_TOKEN_",
    "KUBECONFIG",
];

/// Words that make any name a credential's.
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "API_KEY",
];

/// Whether a variable (or a `-var`, or a backend setting) named `name` looks like a
/// credential: it starts with a cloud's, a forge's, Vault's or terraform's credential
/// prefix (`AWS_`, `GOOGLE_`, `CLOUDSDK_`, `ARM_`, `AZURE_`, `GITHUB_`, `GITLAB_`,
/// `VAULT_`, `TF_TOKEN_`, `KUBECONFIG`), or holds `TOKEN`, `SECRET`, `PASSWORD`,
/// `PASSWD`, `CREDENTIAL`, `PRIVATE_KEY`, `ACCESS_KEY` or `API_KEY`, in any case. Such a
/// value belongs on the server, never in a repository's file, so the rule errs wide:
/// `AWS_REGION` too is selected with `from_server:`.
pub fn looks_like_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_PREFIXES.iter().any(|p| upper.starts_with(p))
        || CREDENTIAL_WORDS.iter().any(|w| upper.contains(w))
}

/// Whether `name` changes how cascade runs the tools (their arguments, which binary,
/// where plans, state and providers come from, what a library loader loads), which
/// `extra_args` keeps to an allow-list: terraform's `TF_CLI_ARGS*`, `TF_CLI_CONFIG_FILE`,
/// `TF_DATA_DIR`, `TF_WORKSPACE`, `TF_REATTACH_PROVIDERS`, `TF_PLUGIN_*`, terragrunt's
/// flags (`TG_*`, `TERRAGRUNT_*`) and the loader's (`LD_*`, `DYLD_*`).
pub fn changes_how_tools_run(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "TF_CLI_CONFIG_FILE",
        "TERRAFORM_CONFIG",
        "TF_DATA_DIR",
        "TF_WORKSPACE",
        "TF_REATTACH_PROVIDERS",
    ];
    const PREFIXES: &[&str] = &[
        "TF_CLI_ARGS",
        "TF_PLUGIN_",
        "TG_",
        "TERRAGRUNT_",
        "LD_",
        "DYLD_",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A plain variable name: letters, digits and `_`, not starting with a digit.
pub(super) fn is_variable_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A workflow's `env`, checked: every name plain, allowed and listed once.
pub(super) fn env(entries: Vec<Spanned<VarEntry>>) -> Result<Vec<EnvVar>, Problem> {
    let mut out: Vec<EnvVar> = Vec::with_capacity(entries.len());
    for entry in entries {
        let at = entry.referenced;
        let entry = entry.value;
        let name = variable_name(&entry.name)?;
        if out.iter().any(|v| v.name == name) {
            return Err(problem_at(
                entry.name.referenced,
                format!(
                    "`env` sets `{}` twice in this workflow; keep one entry",
                    shortened(&name)
                ),
            ));
        }
        let value = match (entry.value, entry.from_server) {
            (Some(value), None) => EnvValue::Plain(plain_value(&name, value)?),
            (None, Some(server)) => EnvValue::FromServer(server_entry(&server)?),
            (Some(_), Some(server)) => {
                return Err(problem_at(
                    server.referenced,
                    format!(
                        "`env` entry `{}` has both `value` and `from_server`; keep one",
                        shortened(&name)
                    ),
                ));
            }
            (None, None) => {
                return Err(problem_at(
                    at,
                    format!(
                        "`env` entry `{}` has no value; add `value: …` (not a credential) or \
                         `from_server: ENTRY` (the server's entry that holds it)",
                        shortened(&name)
                    ),
                ));
            }
        };
        out.push(EnvVar { name, value });
    }
    Ok(out)
}

fn variable_name(name: &Spanned<String>) -> Result<String, Problem> {
    let text = name.value.as_str();
    let shown = shortened(text);
    let refuse = |why: String| Err(problem_at(name.referenced, why));
    if text.len() > MAX_NAME_BYTES || !is_variable_name(text) {
        return refuse(format!(
            "`{shown}` in `env` is not a variable name; use letters, digits and `_`, not \
             starting with a digit, like `TF_VAR_region`"
        ));
    }
    if text.starts_with("CASCADE_") {
        return refuse(format!(
            "`{shown}` in `env` is refused: `CASCADE_*` variables are cascade's own; pick \
             another name"
        ));
    }
    if set_by_cascade(text) {
        return refuse(format!(
            "`{shown}` in `env` is refused: cascade sets it itself for every command; \
             remove it"
        ));
    }
    Ok(text.to_string())
}

fn plain_value(name: &str, value: Spanned<String>) -> Result<String, Problem> {
    let shown = shortened(name);
    let refuse = |why: String| Err(problem_at(value.referenced, why));
    if looks_like_credential(name) {
        return refuse(format!(
            "`{shown}` looks like a credential, and a repository may select the server's \
             credentials by name (`from_server: NAME`), never define them; write \
             `from_server:` with the name of the server's entry that holds it"
        ));
    }
    if changes_how_tools_run(name) {
        return refuse(format!(
            "`{shown}` in `env` is refused: it changes how cascade runs terraform or \
             terragrunt (arguments, binary, state, providers); use the allow-listed \
             `extra_args` of `init`, `plan` and `apply`"
        ));
    }
    if value.value.len() > MAX_VALUE_BYTES || value.value.contains('\0') {
        return refuse(format!(
            "the value of `{shown}` is longer than {MAX_VALUE_BYTES} bytes or holds a NUL \
             byte; shorten it"
        ));
    }
    Ok(value.value)
}

fn server_entry(entry: &Spanned<String>) -> Result<String, Problem> {
    let text = entry.value.as_str();
    let plain = !text.is_empty()
        && text.len() <= MAX_ENTRY_NAME
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !plain {
        return Err(problem_at(
            entry.referenced,
            format!(
                "`from_server: {}` is not an entry name; write the `name` of the server \
                 operator's entry: letters, digits, `_`, `.` and `-`, at most \
                 {MAX_ENTRY_NAME} characters",
                shortened(text)
            ),
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_by_prefix_and_word_in_any_case() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION",
            "aws_profile",
            "GOOGLE_CREDENTIALS",
            "CLOUDSDK_AUTH_ACCESS_TOKEN",
            "ARM_CLIENT_SECRET",
            "AZURE_CLIENT_ID",
            "GITHUB_TOKEN",
            "GITLAB_TOKEN",
            "VAULT_ADDR",
            "TF_TOKEN_app_terraform_io",
            "KUBECONFIG",
            "TF_VAR_db_password",
            "TF_VAR_api_key",
            "MY_PASSWD",
            "SSH_PRIVATE_KEY",
            "TF_VAR_github_token",
            "credentials_file",
        ] {
            assert!(looks_like_credential(name), "{name}");
        }
        for name in [
            "TF_VAR_region",
            "TF_LOG",
            "TZ",
            "INFRACOST_CURRENCY",
            "TOKE",
        ] {
            assert!(!looks_like_credential(name), "{name}");
        }
    }

    #[test]
    fn tool_switches_and_cascades_own_names() {
        for name in [
            "TF_CLI_ARGS",
            "TF_CLI_ARGS_plan",
            "TF_DATA_DIR",
            "TG_TF_PATH",
            "TERRAGRUNT_WORKING_DIR",
            "LD_PRELOAD",
        ] {
            assert!(changes_how_tools_run(name), "{name}");
        }
        assert!(!changes_how_tools_run("TF_VAR_region"));
        assert!(set_by_cascade("CASCADE_UNIT") && set_by_cascade("TF_INPUT"));
        assert!(!set_by_cascade("TF_VAR_region"));
    }
}
