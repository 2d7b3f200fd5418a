//! Turns `workflows:` as written into [`Workflow`]s, or the first problem found, located
//! at the value to change: names, unit globs, environments, each phase's arguments
//! (`args`), the variables (`vars`) and every hook's `run` steps. Bounded throughout
//! ([`MAX_WORKFLOWS`], [`MAX_STEPS_PER_HOOK`], argv and timeout limits), so no file can
//! make a workflow that costs more to hold than to read.

use super::args::{self, MAX_ARG_BYTES, MAX_ARGS, Phase};
use super::file::{RunEntry, StepEntry, WorkflowEntry};
use super::{
    DEFAULT_STEP_TIMEOUT, Hook, MAX_STEP_TIMEOUT, MAX_STEPS_PER_HOOK, MAX_WORKFLOWS, RunStep,
    Stdin, Workflow, vars,
};
use crate::config::Environment;
use crate::config::diagnose::{problem_at, shortened};
use crate::config::validate::{compile_globs, duration, is_plain_name};
use crate::problem::Problem;
use serde_saphyr::Spanned;
use std::time::Duration;

/// The longest name a workflow or a step may have, in characters.
const MAX_NAME_CHARS: usize = 64;

/// `workflows:`, checked against the file's `environments`.
pub(in crate::config) fn workflows(
    entries: Vec<WorkflowEntry>,
    environments: &[Environment],
) -> Result<Vec<Workflow>, Problem> {
    if let Some(extra) = entries.get(MAX_WORKFLOWS) {
        return Err(problem_at(
            extra.name.referenced,
            format!(
                "`workflows` lists {} workflows; list at most {MAX_WORKFLOWS} (one workflow \
                 can cover many units with its globs)",
                entries.len()
            ),
        ));
    }
    let mut out: Vec<Workflow> = Vec::with_capacity(entries.len());
    let mut first_lines: Vec<u64> = Vec::with_capacity(entries.len());
    for entry in entries {
        let at = entry.name.referenced;
        let workflow = workflow(entry, environments)?;
        if let Some(i) = out.iter().position(|w| w.name == workflow.name) {
            return Err(problem_at(
                at,
                format!(
                    "workflow `{}` is already defined at line {}; give each workflow its own \
                     name",
                    workflow.name, first_lines[i]
                ),
            ));
        }
        first_lines.push(at.line());
        out.push(workflow);
    }
    Ok(out)
}

fn workflow(entry: WorkflowEntry, environments: &[Environment]) -> Result<Workflow, Problem> {
    let name = workflow_name(&entry.name)?;
    let units = compile_globs("workflows.units", &entry.units)?;
    let environments = environment_names(&entry.environments, environments)?;
    let init_args = phase_args(Phase::Init, entry.init.map(|p| p.value.extra_args))?;
    let plan_args = phase_args(Phase::Plan, entry.plan.map(|p| p.value.extra_args))?;
    let (apply_args, targets) = match entry.apply {
        Some(apply) => (
            args::extra_args(Phase::Apply, &apply.value.extra_args)?,
            args::targets(apply.referenced, &apply.value.targets)?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    Ok(Workflow {
        name,
        units: units.patterns,
        unit_set: units.set,
        environments,
        init_args,
        plan_args,
        apply_args,
        targets,
        env: vars::env(entry.env)?,
        pre_plan: steps(Hook::PrePlan, entry.pre_plan)?,
        post_plan: steps(Hook::PostPlan, entry.post_plan)?,
        pre_apply: steps(Hook::PreApply, entry.pre_apply)?,
        post_apply: steps(Hook::PostApply, entry.post_apply)?,
        pre_destroy: steps(Hook::PreDestroy, entry.pre_destroy)?,
    })
}

fn phase_args(phase: Phase, args: Option<Vec<Spanned<String>>>) -> Result<Vec<String>, Problem> {
    args::extra_args(phase, &args.unwrap_or_default())
}

/// `[a-z0-9_-]+`, at most [`MAX_NAME_CHARS`]: it goes into messages and the comment.
fn workflow_name(name: &Spanned<String>) -> Result<String, Problem> {
    let text = name.value.as_str();
    if !is_plain_name(text, MAX_NAME_CHARS) {
        return Err(problem_at(
            name.referenced,
            format!(
                "`{}` is not a workflow name; use lowercase letters, digits, `_` and `-`, at \
                 most {MAX_NAME_CHARS} characters, like `k8s`",
                shortened(text)
            ),
        ));
    }
    Ok(text.to_string())
}

/// The workflow's `environments`: each one of the file's, listed once.
fn environment_names(
    names: &[Spanned<String>],
    environments: &[Environment],
) -> Result<Vec<String>, Problem> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let text = name.value.trim();
        if !environments.iter().any(|e| e.name == text) {
            let known: Vec<String> = environments
                .iter()
                .map(|e| format!("`{}`", shortened(&e.name)))
                .collect();
            let known = if known.is_empty() {
                "the file names none under `environments`".to_string()
            } else {
                format!("the file's environments are {}", known.join(", "))
            };
            return Err(problem_at(
                name.referenced,
                format!(
                    "a workflow names environment `{}`, which `environments` does not list; \
                     {known}",
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

/// One hook's steps, at most [`MAX_STEPS_PER_HOOK`].
fn steps(hook: Hook, entries: Vec<Spanned<StepEntry>>) -> Result<Vec<RunStep>, Problem> {
    if let Some(extra) = entries.get(MAX_STEPS_PER_HOOK) {
        return Err(problem_at(
            extra.referenced,
            format!(
                "`{}` lists {} steps; list at most {MAX_STEPS_PER_HOOK} (one step can run a \
                 script that does several things)",
                hook.name(),
                entries.len()
            ),
        ));
    }
    entries
        .into_iter()
        .map(|entry| run_step(hook, entry.value.run))
        .collect()
}

fn run_step(hook: Hook, run: Spanned<RunEntry>) -> Result<RunStep, Problem> {
    let run = run.value;
    let command = command(hook, run.command)?;
    let name = match &run.name {
        Some(name) => step_name(name)?,
        // The program's file name, cut to fit (`command` made sure it is printable).
        None => {
            let program = &command[0];
            let base = program
                .rsplit('/')
                .find(|s| !s.is_empty())
                .unwrap_or(program);
            base.chars().take(MAX_NAME_CHARS).collect()
        }
    };
    let timeout = match &run.timeout {
        Some(text) => step_timeout(text)?,
        None => DEFAULT_STEP_TIMEOUT,
    };
    let stdin = match run.stdin {
        Some(stdin) if stdin.value == Stdin::PlanJson && hook != Hook::PostPlan => {
            return Err(problem_at(
                stdin.referenced,
                format!(
                    "`stdin: plan_json` in `{}` is refused: the plan JSON exists only after the \
                     plan; move the step to `post_plan`",
                    hook.name()
                ),
            ));
        }
        Some(stdin) => stdin.value,
        None => Stdin::default(),
    };
    Ok(RunStep {
        name,
        command,
        when: run.when.unwrap_or_default(),
        visible_on: run.visible_on.unwrap_or_default(),
        format: run.format.unwrap_or_default(),
        timeout,
        ignore_errors: run.ignore_errors,
        stdin,
    })
}

/// `run.command`: a program and at most [`MAX_ARGS`] - 1 arguments, each at most
/// [`MAX_ARG_BYTES`] and without NUL (no process could be given one).
fn command(hook: Hook, words: Spanned<super::file::Words>) -> Result<Vec<String>, Problem> {
    let items = words.value.0;
    let Some(program) = items.first() else {
        return Err(problem_at(
            words.referenced,
            format!(
                "a `run` step in `{}` has an empty `command`; write the program and its \
                 arguments, like `command: [tflint, --format, compact]`",
                hook.name()
            ),
        ));
    };
    if let Some(extra) = items.get(MAX_ARGS) {
        return Err(problem_at(
            extra.referenced,
            format!(
                "a `run` command in `{}` has {} words; keep it to {MAX_ARGS} (a longer one \
                 belongs in a script in the repository)",
                hook.name(),
                items.len()
            ),
        ));
    }
    for word in &items {
        if word.value.len() > MAX_ARG_BYTES {
            return Err(problem_at(
                word.referenced,
                format!(
                    "a word of this `run` command is {} bytes long; keep each under \
                     {MAX_ARG_BYTES} bytes (a longer one belongs in a script in the repository)",
                    word.value.len()
                ),
            ));
        }
        if word.value.contains('\0') {
            return Err(problem_at(
                word.referenced,
                "a word of this `run` command holds a NUL byte, which no program can be \
                 given; remove it",
            ));
        }
    }
    if program.value.trim().is_empty() || program.value.chars().any(char::is_control) {
        return Err(problem_at(
            program.referenced,
            "a `run` command's first word must name the program, like `tflint` or \
             `scripts/check.sh`, without control characters",
        ));
    }
    Ok(items.into_iter().map(|w| w.value).collect())
}

/// `run.name`: printable, at most [`MAX_NAME_CHARS`] characters.
fn step_name(name: &Spanned<String>) -> Result<String, Problem> {
    let text = name.value.trim();
    if text.is_empty()
        || text.chars().count() > MAX_NAME_CHARS
        || text.chars().any(char::is_control)
    {
        return Err(problem_at(
            name.referenced,
            format!(
                "`name: {}` is not a step name; write one line of at most {MAX_NAME_CHARS} \
                 characters, like `tflint`, or leave it out to use the program's name",
                shortened(text)
            ),
        ));
    }
    Ok(text.to_string())
}

/// `run.timeout`: from a second to [`MAX_STEP_TIMEOUT`].
fn step_timeout(text: &Spanned<String>) -> Result<Duration, Problem> {
    match duration(text.value.trim()) {
        Some(wait) if wait >= Duration::from_secs(1) && wait <= MAX_STEP_TIMEOUT => Ok(wait),
        _ => Err(problem_at(
            text.referenced,
            format!(
                "`timeout: {}` is not a time from 1s to 1h; write it like `30s`, `5m` or `1h`",
                shortened(&text.value)
            ),
        )),
    }
}
