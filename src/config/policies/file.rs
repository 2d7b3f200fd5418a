//! The on-disk shape of `policies:` in `.cascade.yaml`: what serde reads and what
//! schemars describes, with every value's location kept (`Spanned`) for the checks in
//! the parent module. No checking beyond shape here; the doc comments on fields are the
//! descriptions editors show, so they are written for users.

use super::{Enforcement, PolicyScope};
use crate::config::file::{Table, TableShape, list, logins, teams};
use schemars::JsonSchema;
use serde::de::{Deserialize, Deserializer};
use serde_saphyr::Spanned;

/// Keys allowed in a policy set, in the order serde reports them.
pub(in crate::config) const POLICY_KEYS: &[&str] = &[
    "name",
    "path",
    "enforcement",
    "owners",
    "namespaces",
    "input",
];
/// Keys allowed in a policy set's `owners`: `teams` before `users`, unlike
/// `apply_permission`, so that an unknown key's message can tell the two mappings apart
/// by the list of keys serde reports.
pub(in crate::config) const OWNERS_KEYS: &[&str] = &["teams", "users"];

/// A policy set: a directory of Rego files (conftest semantics) evaluated over every
/// planned unit. Read from the default branch only, so a pull request cannot change the
/// policies it is judged by.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct PolicyEntry {
    /// The set's name, shown in the comment and used by `/approve-policies`: lowercase
    /// letters, digits, `_` and `-`, at most 64 characters, unique in the file.
    #[schemars(with = "String", regex(pattern = r"^[a-z0-9_-]{1,64}$"), example = &"prod-safety")]
    pub name: Spanned<String>,
    /// The directory holding the set's `.rego` files, relative to the repository root
    /// (no `..`), read from the default branch's tree.
    #[schemars(with = "String", example = &"policies/prod")]
    pub path: Spanned<String>,
    /// What a `deny` or `violation` message does: `block` stops the unit's apply until an
    /// owner approves it; `warn` only shows it. `warn` rules never block. Default `block`.
    #[serde(default)]
    #[schemars(extend("default" = "block"))]
    pub enforcement: Option<Enforcement>,
    /// Who may approve this set's failures for one plan id (`/approve-policies <id>`):
    /// `users` and/or `teams`, as in `apply_permission`. None: nobody can.
    #[serde(default, deserialize_with = "owners")]
    #[schemars(with = "Option<OwnersEntry>")]
    pub owners: Option<Spanned<OwnersEntry>>,
    /// Rego packages whose `deny`, `violation` and `warn` rules count, beside `main`
    /// (always), like conftest's `--namespace`: dotted names such as `terraform.aws`.
    #[serde(default, deserialize_with = "namespaces")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["terraform.aws"])]
    pub namespaces: Vec<Spanned<String>>,
    /// What the set's rules see as `input`: `unit` evaluates them once per planned unit
    /// (`input.plan`, `input.unit`, `input.change`, …); `plan` once per plan, after every
    /// unit has planned, with `input.units[]` holding each planned unit's document, for
    /// rules across units. Default `unit`.
    #[serde(default)]
    #[schemars(extend("default" = "unit"))]
    pub input: Option<PolicyScope>,
}

/// Who may approve a policy set's failures.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct OwnersEntry {
    /// Teams, as `org/team-slug` (GitHub) or a group's full path (GitLab), whose active
    /// members may approve.
    #[serde(default, deserialize_with = "teams")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["acme/security"])]
    pub teams: Vec<Spanned<String>>,
    /// GitHub logins or GitLab usernames that may approve.
    #[serde(default, deserialize_with = "logins")]
    #[schemars(with = "Vec<String>", extend("default" = []))]
    pub users: Vec<Spanned<String>>,
}

impl TableShape for PolicyEntry {
    const EXPECTING: &'static str = "each policy set must be a mapping with a `name` and a \
        `path`, like `- {name: prod-safety, path: policies/prod}`";
    fn empty() -> Option<Self> {
        None
    }
}

impl TableShape for OwnersEntry {
    const EXPECTING: &'static str = "a policy set's `owners` must be a mapping with `users` \
        and/or `teams`, like `owners: {teams: [acme/security]}`";
    fn empty() -> Option<Self> {
        None
    }
}

/// `policies:`, a list of mappings.
pub(in crate::config) fn policies<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<PolicyEntry>, D::Error> {
    let tables: Vec<Table<PolicyEntry>> = list(
        deserializer,
        "`policies` must be a list of mappings, like \
         `- {name: prod-safety, path: policies/prod}`",
    )?;
    Ok(tables.into_iter().map(|t| t.0).collect())
}

fn owners<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<OwnersEntry>>, D::Error> {
    let table = Spanned::<Table<OwnersEntry>>::deserialize(deserializer)?;
    Ok(Some(Spanned::new(
        table.value.0,
        table.referenced,
        table.defined,
    )))
}

fn namespaces<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`namespaces` must be a list of Rego package names, like \
         `namespaces: [terraform.aws]`",
    )
}
