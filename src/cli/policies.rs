//! The policy sets `cascade plan` checks every planned unit (or the whole plan, for a set
//! with `input: plan`) against: `.cascade.yaml`'s `policies:`, read from the repository's
//! working tree (the server reads them from the default branch's). A set that cannot be
//! read or compiled stops the command with its reason: a policy author runs the CLI to
//! see their rules work.

use crate::config::RepoConfig;
use crate::engine::PolicyCheck;
use crate::policy::engine::{Evaluator, load_set};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;

/// Every set of `config`, compiled from `dir` (the repository root `.cascade.yaml` is in).
pub fn checks(dir: &Path, config: &RepoConfig) -> anyhow::Result<Vec<PolicyCheck>> {
    config
        .policies
        .iter()
        .map(|set| {
            let files = load_set(dir, &set.path)
                .with_context(|| format!("cannot read policy set `{}`", set.name))?;
            let evaluator = Evaluator::new(&set.name, &files, &set.namespaces)
                .with_context(|| format!("cannot compile policy set `{}`", set.name))?;
            Ok(PolicyCheck {
                evaluator: Arc::new(evaluator),
                enforcement: set.enforcement,
                scope: set.scope,
            })
        })
        .collect()
}
