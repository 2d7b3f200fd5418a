//! The rules a pull request is held to, read from the repository's default branch and
//! never from the pull request's base: a writer can push any branch and open a pull
//! request into it, so a base branch's `.cascade.yaml` is as much the author's as the
//! head's. `apply_requirements`, `apply_permission`, `approvals`, environments and
//! implicit dependencies all come from the default branch's head, as drift's do; a
//! base other than the default branch is planned only when `branches:` there lists it.

use super::ctx::PrCtx;
use super::plan::fetch_pull_request;
use super::refusal::BaseRule;
use crate::config::RepoConfig;
use crate::problem::Problem;

/// The default branch's `.cascade.yaml` as it is now.
pub struct Rules {
    /// The default branch's name.
    pub branch: String,
    /// Its head commit, whose `.cascade.yaml` and policy sets these are.
    pub sha: String,
    /// The configuration, or why it is invalid.
    pub config: Result<RepoConfig, Problem>,
}

impl Rules {
    /// Why a pull request into `base` is not planned or applied, or `None` when the
    /// rules allow that base. `None` too when the rules are invalid: that is said
    /// elsewhere, with its line.
    pub fn refuse_base(&self, base: &str) -> Option<BaseRule> {
        let config = self.config.as_ref().ok()?;
        refuse_base(config, &self.branch, base)
    }
}

/// Why a pull request into `base` is not planned or applied under `config`, read from
/// `default` (the default branch), or `None` when `base` is `default` or `branches:`
/// lists it.
pub fn refuse_base(config: &RepoConfig, default: &str, base: &str) -> Option<BaseRule> {
    (!config.plans_into(base, default)).then(|| BaseRule {
        default: default.to_string(),
        branches: config.branches().to_vec(),
        base: base.to_string(),
    })
}

/// Reads the default branch's `.cascade.yaml` (the branch as the forge's API says, never
/// a payload), fetching the repository first when the mirror lacks that commit.
pub async fn rules(ctx: &PrCtx) -> anyhow::Result<Rules> {
    let (bot, forge, key) = (&ctx.bot, &ctx.forge, &ctx.key);
    let branch = forge.default_branch(&key.repo().stored()).await?;
    let text = match bot.workspaces.config_at(&key.repo().stored(), &branch.sha) {
        Ok(text) => text,
        Err(_) => {
            fetch_pull_request(ctx, &branch.clone_url).await?;
            bot.workspaces
                .config_at(&key.repo().stored(), &branch.sha)?
        }
    };
    let config = match text {
        None => Ok(RepoConfig::default()),
        Some(text) => RepoConfig::parse(&text),
    };
    Ok(Rules {
        branch: branch.name,
        sha: branch.sha,
        config,
    })
}
