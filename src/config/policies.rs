//! `policies:` in `.cascade.yaml`: the policy sets (directories of Rego files) every
//! planned unit is checked against, as checked data. Read from the default branch only
//! (like every rule), so a pull request cannot loosen the policies it is judged by.
//!
//! Owns the model (each set's name, directory, enforcement, owners, extra Rego packages
//! and whether it sees one unit or the whole plan) and the checks on it: plain unique names, directories inside the
//! repository, owners as `apply_permission` takes them, package names Rego accepts,
//! at most [`MAX_POLICY_SETS`] sets. Never reads a policy file nor evaluates anything:
//! `crate::policy` does.

pub(super) mod file;
#[cfg(test)]
mod tests;

use super::ApplyPermission;
use super::diagnose::{problem_at, shortened};
use super::validate::{is_plain_name, people, unit_path};
use crate::problem::Problem;
use file::PolicyEntry;
use schemars::JsonSchema;
use serde_saphyr::Spanned;

/// The most policy sets one file may hold.
pub const MAX_POLICY_SETS: usize = 32;
/// The most `namespaces` one set may list.
pub const MAX_NAMESPACES: usize = 32;
/// The longest name a set may have, in characters.
const MAX_NAME_CHARS: usize = 64;
/// The longest package name `namespaces` may hold, in bytes.
const MAX_NAMESPACE_BYTES: usize = 256;
/// The package whose rules always count, as in conftest.
pub const MAIN_NAMESPACE: &str = "main";

/// One policy set, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySet {
    /// Its name, for the comment and `/approve-policies` (`[a-z0-9_-]+`; unique).
    pub name: String,
    /// The directory of its `.rego` files: repo-relative, `/`-separated, no trailing
    /// slash, never `..`; `.` for the root.
    pub path: String,
    /// What its `deny` and `violation` messages do.
    pub enforcement: Enforcement,
    /// Who may approve its failures for one plan id; empty: nobody.
    pub owners: ApplyPermission,
    /// The Rego packages whose rules count: `main` first, then those listed, without
    /// repeats.
    pub namespaces: Vec<String>,
    /// `input:`: whether its rules see each unit's document or the whole plan's.
    pub scope: PolicyScope,
}

/// What a policy set's `deny` and `violation` messages do.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// They stop the unit's apply until one of the set's owners approves them for the
    /// plan id (the default).
    #[default]
    Block,
    /// They are shown and block nothing.
    Warn,
}

/// What a policy set's rules see as `input` (`input:` in `.cascade.yaml`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PolicyScope {
    /// One document per planned unit, evaluated as the unit plans (the default).
    #[default]
    Unit,
    /// One document for the whole plan, `input.units[]` holding every planned unit's
    /// document, evaluated once every unit has planned: for rules across units.
    Plan,
}

/// `policies:`, checked.
pub(super) fn policies(entries: Vec<PolicyEntry>) -> Result<Vec<PolicySet>, Problem> {
    if let Some(extra) = entries.get(MAX_POLICY_SETS) {
        return Err(problem_at(
            extra.name.referenced,
            format!(
                "`policies` lists {} policy sets; list at most {MAX_POLICY_SETS} (one set's \
                 directory can hold many rules)",
                entries.len()
            ),
        ));
    }
    let mut out: Vec<PolicySet> = Vec::with_capacity(entries.len());
    let mut first_lines: Vec<u64> = Vec::with_capacity(entries.len());
    for entry in entries {
        let at = entry.name.referenced;
        let set = policy_set(entry)?;
        if let Some(i) = out.iter().position(|s| s.name == set.name) {
            return Err(problem_at(
                at,
                format!(
                    "policy set `{}` is already defined at line {}; give each policy set its \
                     own name",
                    set.name, first_lines[i]
                ),
            ));
        }
        first_lines.push(at.line());
        out.push(set);
    }
    Ok(out)
}

fn policy_set(entry: PolicyEntry) -> Result<PolicySet, Problem> {
    let name = set_name(&entry.name)?;
    let path = unit_path(&entry.path, &format!("policy set `{name}`"))?;
    let owners = match entry.owners {
        None => ApplyPermission::default(),
        Some(owners) => {
            let found = people(&owners.value.users, &owners.value.teams, "policies.owners")?;
            if found.users.is_empty() && found.teams.is_empty() {
                return Err(problem_at(
                    owners.referenced,
                    format!(
                        "`owners` of policy set `{name}` lists no users and no teams; list \
                         `users` and/or `teams`, or remove the key if nobody may approve \
                         its failures"
                    ),
                ));
            }
            found
        }
    };
    Ok(PolicySet {
        name,
        path: path.as_str().to_string(),
        enforcement: entry.enforcement.unwrap_or_default(),
        owners,
        namespaces: namespaces(&entry.namespaces)?,
        scope: entry.input.unwrap_or_default(),
    })
}

/// `[a-z0-9_-]+`, at most [`MAX_NAME_CHARS`]: it goes into the comment and commands.
fn set_name(name: &Spanned<String>) -> Result<String, Problem> {
    let text = name.value.as_str();
    if !is_plain_name(text, MAX_NAME_CHARS) {
        return Err(problem_at(
            name.referenced,
            format!(
                "`{}` is not a policy set name; use lowercase letters, digits, `_` and `-`, \
                 at most {MAX_NAME_CHARS} characters, like `prod-safety`",
                shortened(text)
            ),
        ));
    }
    Ok(text.to_string())
}

/// `main`, then each listed package once.
fn namespaces(listed: &[Spanned<String>]) -> Result<Vec<String>, Problem> {
    if let Some(extra) = listed.get(MAX_NAMESPACES) {
        return Err(problem_at(
            extra.referenced,
            format!(
                "`namespaces` lists {} packages; list at most {MAX_NAMESPACES}",
                listed.len()
            ),
        ));
    }
    let mut out = vec![MAIN_NAMESPACE.to_string()];
    for package in listed {
        let text = package.value.trim();
        if !is_package_name(text) {
            return Err(problem_at(
                package.referenced,
                format!(
                    "`{}` in `namespaces` is not a Rego package name; write it as after \
                     `package`, identifiers joined by dots, like `terraform.aws`",
                    shortened(text)
                ),
            ));
        }
        if !out.iter().any(|n| n == text) {
            out.push(text.to_string());
        }
    }
    Ok(out)
}

/// Identifiers (`[A-Za-z_][A-Za-z0-9_]*`) joined by dots, as a `package` line names them.
fn is_package_name(text: &str) -> bool {
    let identifier = |part: &str| {
        part.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    !text.is_empty() && text.len() <= MAX_NAMESPACE_BYTES && text.split('.').all(identifier)
}
