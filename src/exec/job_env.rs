//! The variables of one unit's job: what every command of the unit gets on top of
//! the allowed part of the server's environment (`init`, `plan`, `show`, `apply`,
//! `stack generate` and its workflow's `run` steps alike).
//!
//! In order: the operator's entry the unit matches for the job's phase
//! (`--unit-env-file`); the named entries its workflow selects, one variable at a
//! time (`from_server:`), over those; then the workflow's plain values, which may
//! only add a variable, never replace one the server gives (its environment or its
//! file). Everything is checked before anything runs: a selection the operator's
//! file does not grant refuses the unit with what to ask the operator for. Never
//! quotes a value, and never lets the workflow set a variable cascade sets itself
//! or a `CASCADE_*` one.

use super::env::{ChildEnv, set_by_cascade};
use super::unit_env::{NotSelected, UnitEnv};
use super::{ExecError, Phase, UnitJob};
use crate::config::workflows::EnvValue;
use secrecy::ExposeSecret;
use std::collections::BTreeMap;

/// One variable of the job's own.
#[derive(Clone, Copy, Debug)]
pub(super) struct JobVar<'a> {
    pub name: &'a str,
    /// Exposed only to go into a child's environment.
    pub value: &'a str,
    /// The operator's (a secret, and a path it names is opened to the sandbox); false: the
    /// workflow's plain value, written in the repository.
    pub from_server: bool,
}

/// The job's variables, by name, or why the job may not run.
pub(super) fn job_vars<'a>(
    unit_env: &'a UnitEnv,
    parent: &ChildEnv,
    job: &'a UnitJob,
) -> Result<Vec<JobVar<'a>>, ExecError> {
    let mut vars: BTreeMap<&str, JobVar> = unit_env
        .vars(&job.repo, &job.unit, job.phase)
        .map(|(name, value)| {
            let value = value.expose_secret();
            (name, server(name, value))
        })
        .collect();
    let Some(workflow) = job.workflow.as_deref() else {
        return Ok(vars.into_values().collect());
    };
    for var in &workflow.env {
        let name = var.name.as_str();
        if set_by_cascade(name) {
            return Err(refused(format!(
                "the workflow `{}` sets `{name}`, which cascade sets itself (or never passes) for every command; remove it from the workflow's `env`",
                workflow.name
            )));
        }
        if let EnvValue::FromServer(entry) = &var.value {
            let value = unit_env
                .selected(entry, &job.repo, &job.unit, job.phase, name)
                .map_err(|not| not_selected(not, entry, name, job))?;
            vars.insert(name, server(name, value.expose_secret()));
        }
    }
    for var in &workflow.env {
        let (name, EnvValue::Plain(value)) = (var.name.as_str(), &var.value) else {
            continue;
        };
        let from_parent = parent.vars().any(|(k, _)| k.to_str() == Some(name));
        if from_parent || vars.contains_key(name) {
            return Err(refused(format!(
                "the workflow `{}` sets `{name}`, which the server gives this unit; a repository may select the server's values (`from_server:`) but not replace them, so remove it from the workflow's `env`",
                workflow.name
            )));
        }
        vars.insert(
            name,
            JobVar {
                name,
                value,
                from_server: false,
            },
        );
    }
    Ok(vars.into_values().collect())
}

fn server<'a>(name: &'a str, value: &'a str) -> JobVar<'a> {
    JobVar {
        name,
        value,
        from_server: true,
    }
}

fn refused(reason: String) -> ExecError {
    ExecError::Refused { reason }
}

/// What the unit is told of a selection the operator's file does not grant.
fn not_selected(not: NotSelected, entry: &str, name: &str, job: &UnitJob) -> ExecError {
    refused(match not {
        NotSelected::NoEntry => format!(
            "the server has no credentials `{entry}` for `{}`; ask the operator to add an entry named `{entry}` covering it to --unit-env-file",
            job.unit
        ),
        NotSelected::NoVariable => format!(
            "the server's credentials `{entry}` give `{}` no `{name}` for {}; ask the operator to add `{name}` to the entry named `{entry}` in --unit-env-file",
            job.unit,
            match job.phase {
                Phase::Plan => "a plan",
                Phase::Apply => "an apply",
            }
        ),
    })
}
