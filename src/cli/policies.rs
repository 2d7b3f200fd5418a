//! The policy sets `cascade plan` checks every planned unit (or the whole plan, for a set
//! with `input: plan`) against: `.cascade.yaml`'s `policies:`, read from the repository's
//! working tree (the server reads them from the default branch's). A set that cannot be
//! read or compiled stops the command with its reason: a policy author runs the CLI to
//! see their rules work.

use crate::config::RepoConfig;
use crate::engine::{PolicyCheck, compile_sets};
use std::path::Path;

/// Every set of `config`, compiled from `dir` (the repository root `.cascade.yaml` is in).
pub fn checks(dir: &Path, config: &RepoConfig) -> anyhow::Result<Vec<PolicyCheck>> {
    compile_sets(dir, &config.policies)
}
