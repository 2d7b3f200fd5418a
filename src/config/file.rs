//! The on-disk shape of `.cascade.yaml`: what serde reads and what schemars describes.
//!
//! These types keep every value's source location (`Spanned`) so that checks done after
//! parsing can still point at a line and column. They do no checking of their own beyond
//! shape; turning them into a `RepoConfig` is `validate`'s job. The doc comments on fields
//! are the descriptions editors show, so they are written for users.
//!
//! Lists and mappings go through `deserialize_any` visitors whose `expecting` text names
//! the key, because serde-saphyr's own "expected sequence start" cannot say which key was
//! wrong. Those texts are full sentences; `diagnose` appends what was found instead.

use super::policies::file::PolicyEntry;
use super::workflows::file::WorkflowEntry;
use super::{ApplyRequirement, ApprovalWord, OptInCommand};
use crate::unit::Tool;
use schemars::JsonSchema;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

/// Keys allowed at the top of `.cascade.yaml`, in the order serde reports them.
pub(super) const TOP_KEYS: &[&str] = &[
    "environments",
    "implicit_deps",
    "ignore",
    "modules",
    "drafts",
    "autoplan",
    "apply_requirements",
    "apply_permission",
    "approvals",
    "plan_ttl",
    "branches",
    "commands",
    "retries",
    "drift",
    "workflows",
    "policies",
    "apply",
    "prevent_destroy",
];
/// Keys allowed in `apply_permission`.
pub(super) const APPLY_PERMISSION_KEYS: &[&str] = &["users", "teams"];
/// Keys allowed in `retries`.
pub(super) const RETRIES_KEYS: &[&str] = &["attempts", "base", "factor", "transient"];
/// Keys allowed in `drift`.
pub(super) const DRIFT_KEYS: &[&str] = &["schedule", "units", "enabled"];
/// Keys allowed in the long form of an environment.
pub(super) const ENVIRONMENT_KEYS: &[&str] = &["path", "executor"];
/// Keys allowed in a `modules` entry.
pub(super) const MODULE_KEYS: &[&str] = &["path", "depends_on", "executor"];

/// Environment names and what they map to, in file order.
pub(super) type EnvironmentEntries = Vec<(Spanned<String>, Spanned<EnvironmentEntry>)>;
/// Units and the units they depend on, in file order.
pub(super) type DependencyEntries = Vec<(Spanned<String>, Vec<Spanned<String>>)>;

/// Repository configuration for cascade, read from `.cascade.yaml` at the repository root
/// on the default branch. Every key is optional; unknown keys are errors.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "cascade repository configuration (.cascade.yaml)")]
pub(super) struct ConfigFile {
    /// Environments by name. Each maps to the directory its units live in, either as a
    /// plain path (`dev: live/dev`) or as a mapping with `path` and `executor`. When any
    /// environment is configured, units outside every environment are ignored.
    #[serde(default, deserialize_with = "environments")]
    #[schemars(with = "BTreeMap<String, EnvironmentEntry>", extend("default" = {}))]
    pub environments: EnvironmentEntries,

    /// Extra dependencies, beyond what `terragrunt.hcl` declares: each unit (a directory
    /// relative to the repository root) maps to the list of units it depends on.
    #[serde(default, deserialize_with = "implicit_deps")]
    #[schemars(with = "BTreeMap<String, Vec<String>>", extend("default" = {}))]
    pub implicit_deps: DependencyEntries,

    /// Glob patterns over paths relative to the repository root (`*` stays within one
    /// directory, `**` crosses directories). A unit directory that matches, or lies under
    /// a match, is not a unit; a changed file that matches, or lies under a match,
    /// triggers nothing.
    #[serde(default, deserialize_with = "ignore")]
    #[schemars(with = "Vec<String>", example = ["sandbox/**", "**/experimental"])]
    pub ignore: Vec<Spanned<String>>,

    /// Plain OpenTofu/Terraform root modules (directories without `terragrunt.hcl`) that
    /// cascade should treat as units.
    #[serde(default, deserialize_with = "modules")]
    #[schemars(with = "Vec<ModuleEntry>", extend("default" = []))]
    pub modules: Vec<ModuleEntry>,

    /// Plan draft pull requests too. By default a draft is planned once it is marked ready
    /// for review.
    #[serde(default)]
    pub drafts: bool,

    /// Plan pull requests when they are opened or pushed. When false, cascade plans only
    /// when someone comments `/plan`.
    #[serde(default = "yes")]
    #[schemars(extend("default" = true))]
    pub autoplan: bool,

    /// What must hold before `/apply` runs: `approved` (an approving review from someone
    /// other than the author) and `mergeable` (no conflicts, required checks pass). `[]`
    /// requires neither.
    #[serde(default = "default_requirements")]
    #[schemars(extend("default" = ["approved", "mergeable"]))]
    pub apply_requirements: Vec<ApplyRequirement>,

    /// Who may comment `/apply`, `/plan` and `/unlock`. By default everyone with write
    /// permission on the repository may; listing `users` and/or `teams` (`org/team-slug`)
    /// narrows that to the listed users and the active members of the listed teams (who
    /// still need write permission). Checking teams needs the App's Organization → Members
    /// read permission.
    #[serde(default, deserialize_with = "apply_permission")]
    #[schemars(with = "Option<ApplyPermissionEntry>")]
    pub apply_permission: Option<Spanned<ApplyPermissionEntry>>,

    /// Which approving reviews count for `approved`, a word or a list of words: `head`
    /// (the default) counts only a review given on the pull request's current head commit,
    /// so a push needs a new approval; `any_head` counts a review on any of its commits.
    /// Only reviews by someone with write permission count, never the author's, and never
    /// one by someone who pushed to the pull request or authored or committed one of its
    /// commits, unless `allow_pushers` is listed.
    #[serde(default, deserialize_with = "approvals")]
    #[schemars(with = "ApprovalsEntry", extend("default" = "head"))]
    pub approvals: Vec<ApprovalWord>,

    /// How long a plan may be applied after it was made, from `1s` to `365d` (`30m`,
    /// `12h`, `7d`). An older plan id is refused by `/apply`; comment `/plan` to plan
    /// again and apply the new id.
    #[serde(default)]
    #[schemars(with = "Option<String>", extend("default" = "7d"), example = "3d")]
    pub plan_ttl: Option<Spanned<String>>,

    /// Base branches, besides the default branch, whose pull requests cascade plans:
    /// globs over branch names (`release/*`, `hotfix/**`). Rules, environments and
    /// dependencies always come from the default branch's `.cascade.yaml`; a pull request
    /// into any other branch gets a comment saying it is not planned.
    #[serde(default, deserialize_with = "branches")]
    #[schemars(with = "Vec<String>", example = ["release/*"])]
    pub branches: Vec<Spanned<String>>,

    /// Commands that are off unless listed here: `import`
    /// (`/import <unit> <address> <id>`) and `state_rm` (`/state rm <unit> <address>`),
    /// which change a unit's terraform state without a plan. Read from the default branch only: a pull request
    /// that lists them does not turn them on for itself.
    #[serde(default)]
    #[schemars(extend("default" = []), example = ["import", "state_rm"])]
    pub commands: Vec<OptInCommand>,

    /// How a unit whose plan fails with a transient error (a held state lock, a timeout,
    /// a reset connection, a provider's HTTP 429 or 5xx) is tried again, with exponential
    /// backoff, while the other units go on.
    #[serde(default, deserialize_with = "retries")]
    #[schemars(with = "Option<RetriesEntry>")]
    pub retries: Option<Spanned<RetriesEntry>>,

    /// Drift detection: on this schedule the server plans the default branch (the units
    /// `units` selects, all by default) and keeps one issue listing the units whose real
    /// infrastructure differs from it, with an `/apply` line; closed once nothing drifts.
    #[serde(default, deserialize_with = "drift")]
    #[schemars(with = "Option<DriftEntry>")]
    pub drift: Option<Spanned<DriftEntry>>,

    /// A team's own steps around plan and apply, by unit: each workflow names the units
    /// it covers (globs and/or environments), extra arguments for the built-in `init`,
    /// `plan` and `apply` (from an allow-list), a two-stage apply's `targets`, variables
    /// (credentials only selected from the server, `from_server`), and `run` steps for
    /// the hooks `pre_plan`, `post_plan`, `pre_apply`, `post_apply` and `pre_destroy`. A
    /// unit's workflow is the first that covers it. Read from the default branch only, so
    /// a pull request cannot add a step to its own run.
    #[serde(default, deserialize_with = "super::workflows::file::workflows")]
    #[schemars(with = "Vec<WorkflowEntry>", extend("default" = []))]
    pub workflows: Vec<WorkflowEntry>,

    /// Policy sets: directories of Rego files (conftest semantics: `deny`, `violation`
    /// and `warn` rules in `package main` or a listed namespace) evaluated over every
    /// planned unit's plan, its place in the dependency graph and the pull request. A
    /// `block` set's failure stops the unit's apply until one of its `owners` approves it
    /// for that plan id. Read from the default branch only, policies included, so a pull
    /// request is judged by the policies it does not change.
    #[serde(default, deserialize_with = "super::policies::file::policies")]
    #[schemars(with = "Vec<PolicyEntry>", extend("default" = []))]
    pub policies: Vec<PolicyEntry>,

    /// When a reviewed plan is applied: `comment` (the default: `/apply <id>` before
    /// merge) or `on_merge` (cascade plans each unit again at the merge commit and applies
    /// it only if that plan equals the approved one). A mapping limits the mode to some
    /// units: `apply: {mode: on_merge, units: ["live/prod/**"], environments: [prod]}`.
    #[serde(default, deserialize_with = "super::apply_mode::apply")]
    #[schemars(with = "Option<super::apply_mode::ApplySchema>")]
    pub apply: Option<Spanned<super::apply_mode::ApplyModeEntry>>,
    /// Units cascade never destroys, as globs over unit paths relative to the repository
    /// root (`*` stays within one directory, `**` crosses directories). `/destroy` refuses
    /// a unit one matches, and a plan that destroys one (a unit the pull request deletes)
    /// is not applied. Read from the default branch only, so a pull request cannot lift it.
    #[serde(default, deserialize_with = "prevent_destroy")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["prod/**", "global/dns"])]
    pub prevent_destroy: Vec<Spanned<String>>,
}

/// When and where drift detection runs.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DriftEntry {
    /// An interval from `10m` to `31d` (`30m`, `6h`, `1d`), counted from the last run, or a
    /// five-field cron expression in UTC (`0 6 * * 1-5`). Default `24h`.
    #[serde(default)]
    #[schemars(with = "Option<String>", extend("default" = "24h"), example = "6h")]
    pub schedule: Option<Spanned<String>>,
    /// Globs of the units to check (repo-relative; `*` within a directory, `**` across).
    /// None: every unit.
    #[serde(default, deserialize_with = "drift_units")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["live/prod/**"])]
    pub units: Vec<Spanned<String>>,
    /// `false` keeps the settings and runs nothing. Default `true`.
    #[serde(default)]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
}

/// How transient plan failures are retried.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RetriesEntry {
    /// Tries in all, the first included (1 to 10); `1` turns retries off.
    #[serde(default)]
    #[schemars(with = "Option<u32>", extend("default" = 3, "minimum" = 1, "maximum" = 10))]
    pub attempts: Option<Spanned<u32>>,
    /// The wait before the first retry, like `5s`, `500ms` or `1m` (at most 5m).
    #[serde(default)]
    #[schemars(with = "Option<String>", extend("default" = "5s"), example = "10s")]
    pub base: Option<Spanned<String>>,
    /// Each further wait is the previous one times this (1 to 10).
    #[serde(default)]
    #[schemars(with = "Option<u32>", extend("default" = 2, "minimum" = 1, "maximum" = 10))]
    pub factor: Option<Spanned<u32>>,
    /// Extra regular expressions (Rust `regex` syntax) that mark a failure as transient,
    /// matched against the unit's error output, beside the built-in ones.
    #[serde(default, deserialize_with = "transient")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["quota exceeded"])]
    pub transient: Vec<Spanned<String>>,
}

/// Who may apply: users and teams.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ApplyPermissionEntry {
    /// GitHub logins or GitLab usernames that may apply.
    #[serde(default, deserialize_with = "logins")]
    #[schemars(with = "Vec<String>", extend("default" = []))]
    pub users: Vec<Spanned<String>>,
    /// Teams, as `org/team-slug` (GitHub) or a group's full path (GitLab, subgroups
    /// included), whose active members may apply.
    #[serde(default, deserialize_with = "teams")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["acme/platform"])]
    pub teams: Vec<Spanned<String>>,
}

/// What an empty file means: the same defaults as each missing key.
impl Default for ConfigFile {
    fn default() -> ConfigFile {
        ConfigFile {
            environments: Vec::new(),
            implicit_deps: Vec::new(),
            ignore: Vec::new(),
            modules: Vec::new(),
            drafts: false,
            autoplan: yes(),
            apply_requirements: default_requirements(),
            apply_permission: None,
            approvals: Vec::new(),
            plan_ttl: None,
            branches: Vec::new(),
            commands: Vec::new(),
            retries: None,
            drift: None,
            workflows: Vec::new(),
            policies: Vec::new(),
            apply: None,
            prevent_destroy: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_requirements() -> Vec<ApplyRequirement> {
    vec![ApplyRequirement::Approved, ApplyRequirement::Mergeable]
}

impl ConfigFile {
    /// Reads one YAML document. An empty document (or only comments) is the default.
    pub(super) fn from_yaml(text: &str) -> Result<ConfigFile, serde_saphyr::Error> {
        serde_saphyr::from_str_with_options::<Table<ConfigFile>>(text, yaml_options()).map(|t| t.0)
    }
}

/// How cascade reads a YAML file it is given (`.cascade.yaml`, the operator's
/// `--unit-env-file`).
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    // Snippets would be rendered into our messages twice; we print locations ourselves.
    // The budget stops alias bombs and absurd nesting long before they cost anything.
    serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_nodes: 100_000,
            max_events: 200_000,
            max_depth: 32,
            max_total_scalar_bytes: 1 << 20,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 100_000,
        },
    }
}

/// One environment: a plain path, or a mapping with `path` and `executor`.
#[derive(Debug, JsonSchema)]
#[schemars(untagged)]
pub(super) enum EnvironmentEntry {
    /// The directory, relative to the repository root, that holds this environment's units.
    Path(String),
    /// The long form, for setting an executor.
    Table(EnvironmentTable),
}

/// The long form of an environment.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EnvironmentTable {
    /// The directory, relative to the repository root, that holds this environment's units.
    #[schemars(with = "String")]
    pub path: Spanned<String>,
    /// Which binary runs this environment's units. When unset, units with a
    /// `terragrunt.hcl` run with terragrunt.
    #[serde(default)]
    pub executor: Option<Tool>,
}

/// A plain root module treated as a unit.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ModuleEntry {
    /// The module's directory, relative to the repository root.
    #[schemars(with = "String")]
    pub path: Spanned<String>,
    /// Units this module depends on (directories relative to the repository root).
    #[serde(default, deserialize_with = "depends_on")]
    #[schemars(with = "Vec<String>")]
    pub depends_on: Vec<Spanned<String>>,
    /// Which binary runs this module.
    #[serde(default)]
    #[schemars(extend("default" = "terraform"))]
    pub executor: Option<Tool>,
}

impl<'de> Deserialize<'de> for EnvironmentEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = EnvironmentEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "an environment must be a path, like `dev: live/dev`, \
                     or a mapping with `path` and `executor`",
                )
            }
            fn visit_str<E: de::Error>(self, path: &str) -> Result<Self::Value, E> {
                Ok(EnvironmentEntry::Path(path.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                EnvironmentTable::deserialize(MapAccessDeserializer::new(map))
                    .map(EnvironmentEntry::Table)
            }
        }
        deserializer.deserialize_any(EntryVisitor)
    }
}

/// A struct that must be written as a mapping; says so by name when it is not.
pub(super) struct Table<T>(pub(super) T);

/// What a [`Table`] is when written as nothing, and what a user is told when it is
/// written as something other than a mapping.
pub(super) trait TableShape: Sized {
    const EXPECTING: &'static str;
    /// The value of an empty node, when that is allowed.
    fn empty() -> Option<Self>;
}

impl TableShape for ConfigFile {
    const EXPECTING: &'static str = ".cascade.yaml must be a mapping with the keys \
        environments, implicit_deps, ignore and modules";
    fn empty() -> Option<Self> {
        Some(ConfigFile::default())
    }
}

impl TableShape for ApplyPermissionEntry {
    const EXPECTING: &'static str = "`apply_permission` must be a mapping with `users` and/or \
        `teams`, like `apply_permission: {teams: [acme/platform]}`";
    fn empty() -> Option<Self> {
        None
    }
}

impl TableShape for RetriesEntry {
    const EXPECTING: &'static str = "`retries` must be a mapping with `attempts`, `base`, \
        `factor` and/or `transient`, like `retries: {attempts: 3, base: 5s}`";
    fn empty() -> Option<Self> {
        None
    }
}

impl TableShape for DriftEntry {
    const EXPECTING: &'static str = "`drift` must be a mapping with `schedule`, `units` and/or \
        `enabled`, like `drift: {schedule: 6h}`";
    fn empty() -> Option<Self> {
        Some(DriftEntry {
            schedule: None,
            units: Vec::new(),
            enabled: None,
        })
    }
}

impl TableShape for ModuleEntry {
    const EXPECTING: &'static str = "a `modules` entry must be a mapping like `path: global/dns`";
    fn empty() -> Option<Self> {
        None
    }
}

impl<'de, T: Deserialize<'de> + TableShape> Deserialize<'de> for Table<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TableVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + TableShape> Visitor<'de> for TableVisitor<T> {
            type Value = Table<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                T::empty()
                    .map(Table)
                    .ok_or_else(|| E::invalid_type(de::Unexpected::Unit, &self))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Table)
            }
        }
        deserializer.deserialize_any(TableVisitor(PhantomData))
    }
}

/// Visits a sequence (or nothing, for an empty key) into a `Vec`.
struct ListVisitor<T> {
    expecting: &'static str,
    item: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(items)
    }
}

pub(super) fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
    expecting: &'static str,
) -> Result<Vec<T>, D::Error> {
    deserializer.deserialize_any(ListVisitor {
        expecting,
        item: PhantomData,
    })
}

/// Visits a mapping (or nothing, for an empty key) into entries in file order; duplicate
/// keys never get here because serde-saphyr rejects them with their location.
struct EntriesVisitor<K, V> {
    expecting: &'static str,
    entry: PhantomData<(K, V)>,
}

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<K, V> {
    type Value = Vec<(K, V)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

fn entries<'de, D: Deserializer<'de>, K: Deserialize<'de>, V: Deserialize<'de>>(
    deserializer: D,
    expecting: &'static str,
) -> Result<Vec<(K, V)>, D::Error> {
    deserializer.deserialize_any(EntriesVisitor {
        expecting,
        entry: PhantomData,
    })
}

/// A `Vec<String>` with its locations whose item-level error says "a list of units".
struct UnitList(Vec<Spanned<String>>);

impl<'de> Deserialize<'de> for UnitList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        list(
            deserializer,
            "each unit in `implicit_deps` must map to a list of units, like \
             `live/prod/app: [live/dev/app]`",
        )
        .map(UnitList)
    }
}

fn environments<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<EnvironmentEntries, D::Error> {
    entries(
        deserializer,
        "`environments` must map names to paths, like `dev: live/dev`",
    )
}

fn implicit_deps<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<DependencyEntries, D::Error> {
    let entries: Vec<(Spanned<String>, UnitList)> = entries(
        deserializer,
        "`implicit_deps` must map units to lists of units, like \
         `live/prod/app: [live/dev/app]`",
    )?;
    Ok(entries
        .into_iter()
        .map(|(unit, deps)| (unit, deps.0))
        .collect())
}

fn ignore<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`ignore` must be a list of globs, like `ignore: [\"sandbox/**\"]`",
    )
}

fn prevent_destroy<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`prevent_destroy` must be a list of unit globs, like `prevent_destroy: [\"prod/**\"]`",
    )
}

fn branches<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`branches` must be a list of branch globs, like `branches: [\"release/*\"]`",
    )
}

/// `approvals` as written: one word, or a list of words.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // The schema's shape only; `approvals` reads the file.
enum ApprovalsEntry {
    One(ApprovalWord),
    Many(Vec<ApprovalWord>),
}

fn approvals<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ApprovalWord>, D::Error> {
    struct WordsVisitor;
    impl<'de> Visitor<'de> for WordsVisitor {
        type Value = Vec<ApprovalWord>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(
                "`approvals` must be `head`, `any_head` or `allow_pushers`, or a list of them, \
                 like `approvals: [any_head, allow_pushers]`",
            )
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_str<E: de::Error>(self, word: &str) -> Result<Self::Value, E> {
            use serde::de::IntoDeserializer;
            ApprovalWord::deserialize(word.into_deserializer()).map(|w| vec![w])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            ListVisitor {
                expecting: "",
                item: PhantomData,
            }
            .visit_seq(seq)
        }
    }
    deserializer.deserialize_any(WordsVisitor)
}

fn modules<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ModuleEntry>, D::Error> {
    let tables: Vec<Table<ModuleEntry>> = list(
        deserializer,
        "`modules` must be a list of mappings, like `- path: global/dns`",
    )?;
    Ok(tables.into_iter().map(|t| t.0).collect())
}

fn depends_on<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`depends_on` must be a list of units, like `depends_on: [live/prod/vpc]`",
    )
}

fn apply_permission<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<ApplyPermissionEntry>>, D::Error> {
    let table = Spanned::<Table<ApplyPermissionEntry>>::deserialize(deserializer)?;
    Ok(Some(Spanned::new(
        table.value.0,
        table.referenced,
        table.defined,
    )))
}

fn retries<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<RetriesEntry>>, D::Error> {
    let table = Spanned::<Table<RetriesEntry>>::deserialize(deserializer)?;
    Ok(Some(Spanned::new(
        table.value.0,
        table.referenced,
        table.defined,
    )))
}

fn drift<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<DriftEntry>>, D::Error> {
    let table = Spanned::<Table<DriftEntry>>::deserialize(deserializer)?;
    Ok(Some(Spanned::new(
        table.value.0,
        table.referenced,
        table.defined,
    )))
}

fn drift_units<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`units` must be a list of globs, like `units: [\"live/prod/**\"]`",
    )
}

fn transient<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`transient` must be a list of regular expressions, like `transient: [\"quota exceeded\"]`",
    )
}

pub(super) fn logins<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`users` must be a list of GitHub logins, like `users: [alice, bob]`",
    )
}

pub(super) fn teams<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`teams` must be a list of teams, like `teams: [acme/platform]`",
    )
}

/// The JSON schema of `.cascade.yaml`, pretty-printed.
pub(super) fn schema_json() -> String {
    let schema = schemars::schema_for!(ConfigFile);
    serde_json::to_string_pretty(&schema).expect("a JSON schema always serializes")
}
