//! `workflows:` in `.cascade.yaml`: a team's own steps around a unit's plan and apply,
//! as checked data. Read from the default branch only (like every rule), so a pull
//! request cannot add a step to its own run.
//!
//! Owns the model (which units a workflow covers, the extra arguments the built-in
//! `init`, `plan` and `apply` take, the two-stage apply's `targets`, the variables a
//! workflow sets or selects from the server, and the `run` steps of each hook) and the
//! checks on it: extra arguments from an allow-list (never `-chdir`, a plugin directory
//! or anything that changes what is applied), no credential defined in the file (only
//! selected by name, `from_server:`), bounded timeouts and output. Never runs anything:
//! the executor runs the steps, the engine decides when.

mod args;
mod check;
pub(super) mod file;
mod vars;

pub(super) use check::workflows;
pub use vars::{SET_BY_CASCADE, changes_how_tools_run, looks_like_credential, set_by_cascade};

use crate::unit::UnitPath;
use std::time::Duration;

/// The longest a `run` step may be given (`timeout:`).
pub const MAX_STEP_TIMEOUT: Duration = Duration::from_secs(3600);
/// A `run` step's timeout when it names none.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(600);
/// The most workflows one file may hold, and the most steps one hook may hold.
pub const MAX_WORKFLOWS: usize = 64;
pub const MAX_STEPS_PER_HOOK: usize = 16;

/// One workflow: the units it covers and what runs around their phases. The first
/// workflow (in file order) that covers a unit is the unit's; a unit no workflow covers
/// runs the built-in steps only.
#[derive(Clone, Debug)]
pub struct Workflow {
    /// Its name, for messages and the comment (`default` style words; unique).
    pub name: String,
    /// Globs over unit paths (`*` within a directory, `**` across); empty: any unit.
    pub units: Vec<String>,
    pub(crate) unit_set: globset::GlobSet,
    /// Environment names (from `environments:`) it is limited to; empty: any.
    pub environments: Vec<String>,
    /// Extra arguments of the built-in `init`.
    pub init_args: Vec<String>,
    /// Extra arguments of the built-in `plan`.
    pub plan_args: Vec<String>,
    /// Extra arguments of the built-in `apply`.
    pub apply_args: Vec<String>,
    /// Resource addresses applied first, on their own (a two-stage apply); empty: one
    /// apply of the whole plan.
    pub targets: Vec<String>,
    /// Variables the workflow gives the unit's commands and steps.
    pub env: Vec<EnvVar>,
    /// The `run` steps of each hook.
    pub pre_plan: Vec<RunStep>,
    pub post_plan: Vec<RunStep>,
    pub pre_apply: Vec<RunStep>,
    pub post_apply: Vec<RunStep>,
    pub pre_destroy: Vec<RunStep>,
}

/// Where in a unit's run a step goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hook {
    /// Before `init` and `plan` (a pull request's plan, `/plan`, drift, and the fresh
    /// plan of an apply).
    PrePlan,
    /// After the plan is made and read (the plan JSON may go to its standard input).
    PostPlan,
    /// Before the apply of a unit that is not destroyed.
    PreApply,
    /// After the apply (of any unit, destroyed ones included).
    PostApply,
    /// Before the apply of a unit the change deletes (its destroy).
    PreDestroy,
}

impl Hook {
    pub const ALL: [Hook; 5] = [
        Hook::PrePlan,
        Hook::PostPlan,
        Hook::PreApply,
        Hook::PostApply,
        Hook::PreDestroy,
    ];

    /// The key in `.cascade.yaml` and the value of `CASCADE_PHASE`.
    pub fn name(self) -> &'static str {
        match self {
            Hook::PrePlan => "pre_plan",
            Hook::PostPlan => "post_plan",
            Hook::PreApply => "pre_apply",
            Hook::PostApply => "post_apply",
            Hook::PreDestroy => "pre_destroy",
        }
    }

    /// Whether it runs after its phase's built-in step (it may then see the results).
    pub fn is_post(self) -> bool {
        matches!(self, Hook::PostPlan | Hook::PostApply)
    }
}

/// A variable a workflow sets: a plain value written in the file (never a credential),
/// or a value the server holds, selected by name (`from_server:`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub value: EnvValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    /// Written in `.cascade.yaml` (default branch): configuration, not a secret.
    Plain(String),
    /// The operator's named entry (`--unit-env-file`, `name:`) that holds this variable;
    /// the value is the entry's for the job's phase.
    FromServer(String),
}

/// One `run` step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunStep {
    /// Its name in the comment and log: `name:`, or the command's first word.
    pub name: String,
    /// The program and its arguments, run as given (no shell unless the argv names one).
    pub command: Vec<String>,
    pub when: When,
    pub visible_on: VisibleOn,
    pub format: Format,
    pub timeout: Duration,
    /// A failure is a warning: the unit and its dependents go on.
    pub ignore_errors: bool,
    /// What goes to its standard input.
    pub stdin: Stdin,
}

/// Whether a step runs, by how the unit's run has gone so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Only while everything before it succeeded (the default).
    #[default]
    Success,
    /// Only once something before it failed.
    Failure,
    /// Whatever happened before it.
    Always,
}

/// When a step's output appears in the comment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VisibleOn {
    /// Never (the output is still in the check run and the unit's log).
    Never,
    /// Only when it failed (the default).
    #[default]
    Failure,
    /// Whether it failed or not.
    Always,
}

/// How a step's output is shown in the comment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// In a code block (the default).
    #[default]
    Code,
    /// As Markdown, made inert (no mentions, references, HTML or images).
    Markdown,
}

/// A step's standard input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stdin {
    /// Nothing (`/dev/null`).
    #[default]
    None,
    /// The unit's plan as `show -json` prints it, through a pipe (`post_plan` only):
    /// never written to disk.
    PlanJson,
}

impl Workflow {
    /// The `run` steps of `hook`.
    pub fn steps(&self, hook: Hook) -> &[RunStep] {
        match hook {
            Hook::PrePlan => &self.pre_plan,
            Hook::PostPlan => &self.post_plan,
            Hook::PreApply => &self.pre_apply,
            Hook::PostApply => &self.post_apply,
            Hook::PreDestroy => &self.pre_destroy,
        }
    }

    /// Whether it covers `unit`, which lies in `environment` (if any): it matches
    /// `units` (when given) and lies in one of `environments` (when given).
    pub fn covers(&self, unit: &UnitPath, environment: Option<&str>) -> bool {
        let by_units = self.units.is_empty() || self.unit_set.is_match(unit.as_str());
        let by_env = self.environments.is_empty()
            || environment.is_some_and(|e| self.environments.iter().any(|n| n == e));
        by_units && by_env
    }
}

impl Workflow {
    /// A workflow named `name` that covers every unit and adds nothing: no extra
    /// arguments, targets, variables or steps, to be filled in field by field (tests
    /// outside the crate cannot name its glob set).
    pub fn with_name(name: &str) -> Workflow {
        Workflow {
            name: name.to_string(),
            units: Vec::new(),
            unit_set: globset::GlobSet::empty(),
            environments: Vec::new(),
            init_args: Vec::new(),
            plan_args: Vec::new(),
            apply_args: Vec::new(),
            targets: Vec::new(),
            env: Vec::new(),
            pre_plan: Vec::new(),
            post_plan: Vec::new(),
            pre_apply: Vec::new(),
            post_apply: Vec::new(),
            pre_destroy: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
