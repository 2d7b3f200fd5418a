//! A merged change request (`pull_request.closed` with `merged`, GitLab's `merge`): the
//! apply after merge of `apply: on_merge`, then what closing does.
//!
//! Runs on its repository's own actor (`adapt::merges_key`), so one repository's merges
//! are handled one at a time, in the order their events came: two quick merges apply in
//! merge order, each only its own reviewed plan.
//!
//! The rules are the default branch's as it was before the merge (the merge commit's
//! first parent, or the plan's base for a fast-forward), never the merged tree's: a pull
//! request that edits `.cascade.yaml` cannot change how its own merge is applied. The plan
//! must be approved as `/apply` requires; then each unit is planned again at the merge
//! commit and applied only if that plan equals the approved one (the engine's rule, with
//! `RunRules::merge_commit`). What differs goes to a new plan, posted on the merged change
//! request (and pointed to from the drift issue), where someone allowed to apply can
//! comment `/apply <new id>`.

use super::Bot;
use super::apply::run_and_report;
use super::ctx::PrCtx;
use super::jobs::WorkKey;
use super::on_merge::unapproved_for_merge;
use super::plan::{close_pull_request, fetch_pull_request};
use super::policies::compile_default;
use super::refusal::{AfterMergeRefusal, Refusal};
use crate::config::RepoConfig;
use crate::forge::PullRequest;
use crate::store::{BotStore, PlanRecord, PrState, RunStore};
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Handles the merge of `pr`, a change request of `repo_key`'s repository.
pub async fn merged_job(bot: &Arc<Bot>, repo_key: &WorkKey, pr: PullRequest) -> anyhow::Result<()> {
    let key = WorkKey::PullRequest {
        repo: repo_key.repo().clone(),
        number: pr.number,
    };
    if bot.owners.allows(&key.repo().stored())
        && let Some(plan) = bot.store.current_plan(&key.plan_key()).await?
        && plan.id.as_str() != crate::plan::PlanId::NO_CHANGES
    {
        let ctx = PrCtx::read(bot, &key, pr.forge).await?;
        if apply_after_merge(&ctx, &plan).await? == Left::Plan {
            // A new plan waits on the merged change request: its locks go (nothing holds
            // other work up), its plan stays for `/apply <new id>`.
            bot.store
                .release_locks(&key.repo().stored(), key.number())
                .await?;
            return bot.wake_waiters(&key.repo().stored(), key.number()).await;
        }
    }
    close_pull_request(bot, &key, &pr).await
}

/// What an apply after merge leaves on the merged change request.
#[derive(PartialEq, Eq)]
enum Left {
    /// Nothing to apply by hand: close it as usual.
    Nothing,
    /// A plan someone may still `/apply` there.
    Plan,
}

/// Applies after merge what `plan` says applies after merge, or says why not.
async fn apply_after_merge(ctx: &PrCtx, plan: &PlanRecord) -> anyhow::Result<Left> {
    let (bot, key, spelling) = (&ctx.bot, &ctx.key, ctx.spelling);
    let repo = key.repo().stored();
    let Some(merge) = ctx.pr.merge_commit.as_ref().map(|s| s.to_string()) else {
        tracing::warn!(pr = %key, "merged, but the forge names no merge commit: nothing applied after merge");
        return Ok(Left::Nothing);
    };
    let default = ctx.forge.default_branch(&repo).await?;
    fetch_pull_request(ctx, &default.clone_url).await?;
    let rules_sha = match rules_before(ctx, plan, &merge) {
        Ok(sha) => sha,
        Err(e) => {
            // Without the rules from before the merge nothing may be applied after it.
            tracing::warn!(pr = %key, error = %format!("{e:#}"), "merged, but the merge commit is not in the repository: nothing applied after merge");
            return Ok(Left::Nothing);
        }
    };
    let config = match bot.workspaces.config_at(&repo, &rules_sha)? {
        None => RepoConfig::default(),
        Some(text) => match RepoConfig::parse(&text) {
            Ok(config) => config,
            Err(problem) => {
                ctx.reply(&format!(
                    "This {} was merged, but the default branch's `.cascade.yaml` could not be \
                     read ({}), so cascade applied nothing after the merge. Fix it on the \
                     default branch, then comment `{}` here.",
                    spelling.change_request,
                    crate::inert::code(&problem.to_string()),
                    spelling.command(&format!("apply {}", plan.id))
                ))
                .await?;
                return keep(ctx, &merge).await;
            }
        },
    };
    let on_merge: BTreeSet<UnitPath> = plan
        .units
        .iter()
        .map(|u| u.path.clone())
        .filter(|p| config.applies_on_merge(p))
        .collect();
    if on_merge.is_empty() {
        return Ok(Left::Nothing);
    }
    if let Some(refusal) = unapproved_for_merge(ctx, &config, plan).await? {
        let said = Refusal::from(AfterMergeRefusal::MergedUnapproved {
            id: plan.id.clone(),
            why: refusal.message(spelling),
        });
        ctx.reply(&said.message(spelling)).await?;
        return keep(ctx, &merge).await;
    }
    let checks = match compile_default(ctx, &config, &rules_sha).await? {
        Ok(checks) => checks,
        Err(problem) => {
            let said = Refusal::from(super::refusal::PolicyRefusal::SetsUnusable {
                branch: default.name.clone(),
                problem,
                applying: Some(plan.id.clone()),
            });
            ctx.reply(&said.message(spelling)).await?;
            return keep(ctx, &merge).await;
        }
    };
    let mut run_rules = crate::engine::RunRules::from(&config)
        .for_pull_request(key.number())
        .with_policies(checks)
        .at_merge_commit(&merge);
    if on_merge.len() < plan.units.len() {
        run_rules = run_rules.only_units(on_merge);
    }
    let units: Vec<UnitPath> = plan.units.iter().map(|u| u.path.clone()).collect();
    let held = bot.store.take_locks(&repo, key.number(), &units).await?;
    if !held.is_empty() {
        let said = Refusal::UnitsLocked {
            locks: held.into_iter().map(|l| (l.unit, l.pr)).collect(),
        };
        ctx.reply(&format!(
            "Merged, but cascade applied nothing after the merge: {}",
            said.message(spelling)
        ))
        .await?;
        return keep(ctx, &merge).await;
    }
    let Some(mut record) = bot.store.pull_request(&repo, key.number()).await? else {
        return Ok(Left::Nothing);
    };
    record.head_sha = merge.clone();
    ctx.transition(&mut record, PrState::Applying).await?;
    if let Some(refusal) =
        run_and_report(ctx, &mut record, plan, run_rules, &merge, Some(&merge)).await?
    {
        ctx.reply(&refusal.message(spelling)).await?;
        return Ok(Left::Plan);
    }
    match bot.store.current_plan(&key.plan_key()).await? {
        Some(next) if next.id != plan.id => {
            point_from_drift_issue(ctx, &config, &next, &merge).await?;
            Ok(Left::Plan)
        }
        _ => Ok(Left::Nothing),
    }
}

/// The commit whose rules judge the merge: the default branch just before it (the merge
/// or squash commit's first parent), or the plan's base after a fast-forward, where the
/// merge commit is the change request's own head and its parent one of its commits.
fn rules_before(ctx: &PrCtx, plan: &PlanRecord, merge: &str) -> anyhow::Result<String> {
    if merge == ctx.pr.head_sha.as_str() {
        return Ok(plan.base.clone());
    }
    let mirror = ctx.bot.workspaces.mirror_path(&ctx.key.repo().stored())?;
    crate::git::resolve(&mirror, &format!("{merge}^1"))
}

/// Says on the drift issue, when drift detection is on and its issue is open, that a
/// merge left plan `next` unapplied, and where to apply it: the infrastructure now differs
/// from the default branch, which is what that issue tracks.
async fn point_from_drift_issue(
    ctx: &PrCtx,
    config: &RepoConfig,
    next: &PlanRecord,
    merge: &str,
) -> anyhow::Result<()> {
    let repo = ctx.key.repo().stored();
    if config.drift.as_ref().is_none_or(|d| !d.enabled) {
        return Ok(());
    }
    let Some(issue) = ctx
        .bot
        .store
        .drift_schedule(&repo)
        .await?
        .and_then(|r| r.issue_number)
    else {
        return Ok(());
    };
    if ctx.forge.issue_open(&repo, issue).await? != Some(true) {
        return Ok(());
    }
    let spelling = ctx.spelling;
    let units: Vec<String> = next
        .units
        .iter()
        .map(|u| crate::inert::code(u.path.as_str()))
        .collect();
    let body = format!(
        "{}{} was merged, but at merge commit `{}` the plan of {} differs from the approved \
         one, so cascade did not apply {}. The new plan `{}` is on {}{}: someone allowed to \
         apply can review it and comment `{}` there.",
        spelling.ref_sigil,
        ctx.key.number(),
        merge.chars().take(7).collect::<String>(),
        units.join(", "),
        if units.len() == 1 { "it" } else { "them" },
        next.id,
        spelling.ref_sigil,
        ctx.key.number(),
        spelling.command(&format!("apply {}", next.id)),
    );
    ctx.forge.create_comment(&repo, issue, &body).await?;
    Ok(())
}

/// Keeps the plan for `/apply <id>` on the merged change request, at the merge commit.
async fn keep(ctx: &PrCtx, merge: &str) -> anyhow::Result<Left> {
    if let Some(mut record) = ctx
        .bot
        .store
        .pull_request(&ctx.key.repo().stored(), ctx.key.number())
        .await?
    {
        record.head_sha = merge.to_string();
        ctx.transition(&mut record, PrState::Commented).await?;
    }
    Ok(Left::Plan)
}
