//! The on-disk shape of `workflows:` in `.cascade.yaml`: what serde reads and what
//! schemars describes, with every value's location kept (`Spanned`) for the checks in
//! `check`. No checking beyond shape here; the doc comments on fields are the
//! descriptions editors show, so they are written for users.

use super::{Format, Stdin, VisibleOn, When};
use crate::config::file::{Table, TableShape, list};
use schemars::JsonSchema;
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;
use std::marker::PhantomData;

/// Keys allowed in a workflow, in the order serde reports them.
pub(in crate::config) const WORKFLOW_KEYS: &[&str] = &[
    "name",
    "units",
    "environments",
    "init",
    "plan",
    "apply",
    "env",
    "pre_plan",
    "post_plan",
    "pre_apply",
    "post_apply",
    "pre_destroy",
];
/// Keys allowed in a workflow's `init` and `plan`.
pub(in crate::config) const PHASE_KEYS: &[&str] = &["extra_args"];
/// Keys allowed in a workflow's `apply`.
pub(in crate::config) const APPLY_KEYS: &[&str] = &["extra_args", "targets"];
/// Keys allowed in an `env` entry.
pub(in crate::config) const VAR_KEYS: &[&str] = &["name", "value", "from_server"];
/// Keys allowed in a hook's step (one kind of step so far).
pub(in crate::config) const STEP_KEYS: &[&str] = &["run"];
/// Keys allowed in a `run` step.
pub(in crate::config) const RUN_KEYS: &[&str] = &[
    "command",
    "name",
    "when",
    "visible_on",
    "format",
    "timeout",
    "ignore_errors",
    "stdin",
];

/// A workflow: the units it covers and what runs around their plan and apply. The first
/// workflow (in file order) that covers a unit is the unit's; a unit no workflow covers
/// runs the built-in steps only.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct WorkflowEntry {
    /// The workflow's name, shown in messages and the comment: lowercase letters, digits,
    /// `_` and `-`, at most 64 characters, unique in the file.
    #[schemars(with = "String", regex(pattern = r"^[a-z0-9_-]{1,64}$"), example = &"k8s")]
    pub name: Spanned<String>,
    /// The units it covers: a glob or a list of globs over unit paths, relative to the
    /// repository root (`*` within a directory, `**` across). None: every unit (that
    /// `environments` allows).
    #[serde(default, deserialize_with = "units")]
    #[schemars(with = "OneOrMany", extend("default" = []), example = ["live/*/k8s/**"])]
    pub units: Vec<Spanned<String>>,
    /// The environments (names from the top-level `environments`) it is limited to: a
    /// name or a list of names. None: any unit, in an environment or not.
    #[serde(default, deserialize_with = "environment_names")]
    #[schemars(with = "OneOrMany", extend("default" = []), example = ["prod"])]
    pub environments: Vec<Spanned<String>>,
    /// The built-in `init`: extra arguments from an allow-list.
    #[serde(default, deserialize_with = "phase")]
    #[schemars(with = "Option<PhaseEntry>")]
    pub init: Option<Spanned<PhaseEntry>>,
    /// The built-in `plan`: extra arguments from an allow-list.
    #[serde(default, deserialize_with = "phase")]
    #[schemars(with = "Option<PhaseEntry>")]
    pub plan: Option<Spanned<PhaseEntry>>,
    /// The built-in `apply`: extra arguments from an allow-list, and the resources a
    /// two-stage apply applies first.
    #[serde(default, deserialize_with = "apply")]
    #[schemars(with = "Option<ApplyEntry>")]
    pub apply: Option<Spanned<ApplyEntry>>,
    /// Variables the unit's commands and steps get: each a plain `value` (never a
    /// credential) or `from_server`, the name of the server operator's entry that holds
    /// it (credentials are selected, never defined, here).
    #[serde(default, deserialize_with = "vars")]
    #[schemars(with = "Vec<VarEntry>", extend("default" = []))]
    pub env: Vec<Spanned<VarEntry>>,
    /// Steps run before `init` and `plan` (a pull request's plan, `/plan`, drift, and the
    /// fresh plan of an apply).
    #[serde(default, deserialize_with = "steps")]
    #[schemars(with = "Vec<StepEntry>", extend("default" = []))]
    pub pre_plan: Vec<Spanned<StepEntry>>,
    /// Steps run after the plan is made; only these may take the plan JSON on their
    /// standard input (`stdin: plan_json`).
    #[serde(default, deserialize_with = "steps")]
    #[schemars(with = "Vec<StepEntry>", extend("default" = []))]
    pub post_plan: Vec<Spanned<StepEntry>>,
    /// Steps run before the apply of a unit that is not destroyed.
    #[serde(default, deserialize_with = "steps")]
    #[schemars(with = "Vec<StepEntry>", extend("default" = []))]
    pub pre_apply: Vec<Spanned<StepEntry>>,
    /// Steps run after the apply of any unit (destroyed ones included).
    #[serde(default, deserialize_with = "steps")]
    #[schemars(with = "Vec<StepEntry>", extend("default" = []))]
    pub post_apply: Vec<Spanned<StepEntry>>,
    /// Steps run before the apply of a unit the change deletes (its destroy).
    #[serde(default, deserialize_with = "steps")]
    #[schemars(with = "Vec<StepEntry>", extend("default" = []))]
    pub pre_destroy: Vec<Spanned<StepEntry>>,
}

/// A built-in `init` or `plan`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct PhaseEntry {
    /// Extra arguments, each a list item written `-name` or `-name=value`, from cascade's
    /// allow-list. `init`: `-upgrade`, `-reconfigure`, `-backend-config=FILE|KEY=VALUE`,
    /// `-get=true|false`, `-lockfile=readonly`. `plan`: `-parallelism=N`,
    /// `-refresh=true|false`, `-var=NAME=VALUE`, `-var-file=FILE`, `-compact-warnings`,
    /// `-lock=true|false`, `-lock-timeout=DURATION`. Files are relative to the unit,
    /// without `..`.
    #[serde(default, deserialize_with = "extra_args")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["-parallelism=4"])]
    pub extra_args: Vec<Spanned<String>>,
}

/// The built-in `apply`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct ApplyEntry {
    /// Extra arguments, each a list item, from cascade's allow-list: `-parallelism=N`,
    /// `-compact-warnings`, `-lock-timeout=DURATION`.
    #[serde(default, deserialize_with = "extra_args")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["-parallelism=4"])]
    pub extra_args: Vec<Spanned<String>>,
    /// Resource addresses applied first, on their own, before the rest of the reviewed
    /// plan (a two-stage apply, at most 32): `type.name`, with `module.NAME.` prefixes and
    /// `[index]` as terraform writes them. None: one apply of the whole plan.
    #[serde(default, deserialize_with = "targets")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["helm_release.crds"])]
    pub targets: Vec<Spanned<String>>,
}

/// A variable: `name` and exactly one of `value` and `from_server`.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct VarEntry {
    /// The variable's name: letters, digits and `_`, not starting with a digit; never
    /// `CASCADE_*` nor one cascade sets itself.
    #[schemars(with = "String", example = &"TF_VAR_region")]
    pub name: Spanned<String>,
    /// A plain value, written here. Refused for a name that looks like a credential
    /// (`AWS_*`, `GOOGLE_*`, `ARM_*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`…): select those
    /// with `from_server`.
    #[serde(default)]
    #[schemars(with = "Option<String>", example = "eu-west-1")]
    pub value: Option<Spanned<String>>,
    /// The name of the server operator's entry (`--unit-env-file`) that holds this
    /// variable; the value is the entry's for the phase (plan or apply).
    #[serde(default)]
    #[schemars(
        with = "Option<String>",
        regex(pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        example = "prod-deployer"
    )]
    pub from_server: Option<Spanned<String>>,
}

/// One step of a hook: a mapping with one key, the kind of step.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct StepEntry {
    /// Runs a program in the unit's directory, inside cascade's sandbox, with an
    /// allow-listed environment (`CASCADE_UNIT`, `CASCADE_PHASE`, … and the workflow's
    /// `env`).
    #[schemars(with = "RunEntry")]
    pub run: Spanned<RunEntry>,
}

/// A `run` step.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct RunEntry {
    /// The program and its arguments, as a list (run as given: no shell unless the list
    /// names one, like `[sh, -c, "…"]`). At most 64 items of 4 KiB each.
    #[schemars(with = "Vec<String>", extend("minItems" = 1, "maxItems" = 64),
        example = ["tflint", "--format", "compact"])]
    pub command: Spanned<Words>,
    /// Its name in the comment and the log (at most 64 characters). Default: the
    /// program's file name.
    #[serde(default)]
    #[schemars(with = "Option<String>", example = &"tflint")]
    pub name: Option<Spanned<String>>,
    /// When it runs, by how the unit's run has gone so far. Default `success`.
    #[serde(default)]
    #[schemars(extend("default" = "success"))]
    pub when: Option<When>,
    /// When its output appears in the unit's section of the comment (it is always in the
    /// check run and the unit's log). Default `failure`.
    #[serde(default)]
    #[schemars(extend("default" = "failure"))]
    pub visible_on: Option<VisibleOn>,
    /// How its output is shown in the comment. Default `code`.
    #[serde(default)]
    #[schemars(extend("default" = "code"))]
    pub format: Option<Format>,
    /// How long it may run, like `30s`, `5m` or `1h` (at most 1h). Default `10m`.
    #[serde(default)]
    #[schemars(with = "Option<String>", extend("default" = "10m"), example = "5m")]
    pub timeout: Option<Spanned<String>>,
    /// When true, its failure is a warning: the unit and its dependents go on.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    pub ignore_errors: bool,
    /// What it reads on its standard input: `none`, or `plan_json` (the unit's plan as
    /// `show -json` prints it, through a pipe; `post_plan` only). Default `none`.
    #[serde(default)]
    #[schemars(with = "Option<Stdin>", extend("default" = "none"))]
    pub stdin: Option<Spanned<Stdin>>,
}

/// A list of strings, each with its location (a `run` step's `command`).
#[derive(Debug)]
pub(in crate::config) struct Words(pub Vec<Spanned<String>>);

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        list(
            deserializer,
            "`command` must be a list of words: the program and its arguments, like \
             `command: [tflint, --format, compact]` (no shell runs unless you name one: \
             `[sh, -c, \"…\"]`)",
        )
        .map(Words)
    }
}

/// A single string, or a list of strings. (The schema's shape only; `Strings` reads the
/// file.)
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl TableShape for WorkflowEntry {
    const EXPECTING: &'static str = "each workflow must be a mapping with a `name`, like \
        `- name: k8s`";
    fn empty() -> Option<Self> {
        None
    }
}

impl TableShape for PhaseEntry {
    const EXPECTING: &'static str = "a workflow's `init` and `plan` must be mappings, like \
        `plan: {extra_args: [-parallelism=4]}`";
    fn empty() -> Option<Self> {
        Some(PhaseEntry::default())
    }
}

impl TableShape for ApplyEntry {
    const EXPECTING: &'static str = "a workflow's `apply` must be a mapping, like \
        `apply: {targets: [helm_release.crds]}`";
    fn empty() -> Option<Self> {
        Some(ApplyEntry::default())
    }
}

impl TableShape for VarEntry {
    const EXPECTING: &'static str = "each `env` entry must be a mapping, like \
        `- {name: TF_VAR_region, value: eu-west-1}`";
    fn empty() -> Option<Self> {
        None
    }
}

impl TableShape for StepEntry {
    const EXPECTING: &'static str = "each step of a hook must be a mapping with one key, \
        `run`, like `- run: {command: [tflint]}`";
    fn empty() -> Option<Self> {
        None
    }
}

/// `workflows:`, a list of mappings.
pub(in crate::config) fn workflows<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<WorkflowEntry>, D::Error> {
    let tables: Vec<Table<WorkflowEntry>> = list(
        deserializer,
        "`workflows` must be a list of mappings, like `- name: k8s`",
    )?;
    Ok(tables.into_iter().map(|t| t.0).collect())
}

/// A list of `T` written as mappings, each with its location.
fn tables<'de, D: Deserializer<'de>, T: Deserialize<'de> + TableShape>(
    deserializer: D,
    expecting: &'static str,
) -> Result<Vec<Spanned<T>>, D::Error> {
    let tables: Vec<Spanned<Table<T>>> = list(deserializer, expecting)?;
    Ok(tables.into_iter().map(spanned_table).collect())
}

fn spanned_table<T>(table: Spanned<Table<T>>) -> Spanned<T> {
    Spanned::new(table.value.0, table.referenced, table.defined)
}

fn phase<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<PhaseEntry>>, D::Error> {
    Spanned::<Table<PhaseEntry>>::deserialize(deserializer).map(|t| Some(spanned_table(t)))
}

fn apply<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<ApplyEntry>>, D::Error> {
    Spanned::<Table<ApplyEntry>>::deserialize(deserializer).map(|t| Some(spanned_table(t)))
}

fn vars<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<VarEntry>>, D::Error> {
    tables(
        deserializer,
        "a workflow's `env` must be a list of mappings, like \
         `env: [{name: TF_VAR_region, value: eu-west-1}]`",
    )
}

fn steps<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<StepEntry>>, D::Error> {
    tables(
        deserializer,
        "a hook must be a list of steps, like `pre_plan: [{run: {command: [tflint]}}]`",
    )
}

fn extra_args<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`extra_args` must be a list of arguments, one item each, like \
         `extra_args: [-parallelism=4, -refresh=false]`",
    )
}

fn targets<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        deserializer,
        "`targets` must be a list of resource addresses, like \
         `targets: [helm_release.crds]`",
    )
}

fn units<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Spanned<String>>, D::Error> {
    Spanned::<Strings<UnitGlobs>>::deserialize(deserializer).map(Strings::located)
}

fn environment_names<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Spanned<String>>, D::Error> {
    Spanned::<Strings<EnvironmentNames>>::deserialize(deserializer).map(Strings::located)
}

/// What a [`Strings`] holds, and what a user is told when it is something else.
trait StringsKey {
    const EXPECTING: &'static str;
}

struct UnitGlobs;
impl StringsKey for UnitGlobs {
    const EXPECTING: &'static str = "a workflow's `units` must be a glob or a list of globs, \
        like `units: [\"live/*/k8s/**\"]`";
}

struct EnvironmentNames;
impl StringsKey for EnvironmentNames {
    const EXPECTING: &'static str = "a workflow's `environments` must be an environment's name \
        or a list of them, like `environments: [prod]`";
}

/// One string or a list of strings (nothing: none).
enum Strings<K> {
    /// One string; its location is the whole value's.
    One(String, PhantomData<K>),
    Many(Vec<Spanned<String>>),
}

impl<K> Strings<K> {
    fn located(spanned: Spanned<Strings<K>>) -> Vec<Spanned<String>> {
        match spanned.value {
            Strings::One(text, _) => vec![Spanned::new(text, spanned.referenced, spanned.defined)],
            Strings::Many(items) => items,
        }
    }
}

impl<'de, K: StringsKey> Deserialize<'de> for Strings<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringsVisitor<K>(PhantomData<K>);
        impl<'de, K: StringsKey> Visitor<'de> for StringsVisitor<K> {
            type Value = Strings<K>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Strings::Many(Vec::new()))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Strings::One(text.to_string(), PhantomData))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Strings::Many(items))
            }
        }
        deserializer.deserialize_any(StringsVisitor(PhantomData))
    }
}
