//! Planning a pull request's head, and forgetting a closed one.

use super::jobs::PrUpdate;
use super::publish::{check, reply, upsert_comment};
use super::{Bot, PrKey};
use crate::affected::{ReadIndex, affected, deleted_units};
use crate::comment::{Comments, GITHUB_LIMIT, Problem};
use crate::config::RepoConfig;
use crate::engine::targets;
use crate::engine::views::plan_view;
use crate::forge::github::CheckStatus;
use crate::problem::ProblemKind;
use crate::scan::scan_with;
use crate::store::{PlanStatus, PrState, PullRequestRecord, Store};
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const FORK_REFUSAL: &str = "cascade does not plan pull requests from forks: planning runs the pull request's code \
with this server's credentials. A maintainer can push the branch to this repository to have it planned.";

fn record_for(
    bot: &Bot,
    key: &PrKey,
    pr: &PrUpdate,
    existing: Option<PullRequestRecord>,
) -> PullRequestRecord {
    let same_head = existing.as_ref().is_some_and(|r| r.head_sha == pr.head_sha);
    let mut record = existing.unwrap_or(PullRequestRecord {
        repo: key.repo.clone(),
        number: key.number,
        installation_id: pr.installation,
        clone_url: pr.clone_url.clone(),
        head_sha: pr.head_sha.clone(),
        base_sha: pr.base_sha.clone(),
        state: PrState::Discovering,
        plan_id: None,
        comment_id: None,
        check_run_id: None,
        updated_at: bot.now(),
    });
    if !same_head {
        // One check run per head.
        record.check_run_id = None;
    }
    record.installation_id = pr.installation;
    record.clone_url = pr.clone_url.clone();
    record.head_sha = pr.head_sha.clone();
    record.base_sha = pr.base_sha.clone();
    record.updated_at = bot.now();
    record
}

/// Plans the head of a pull request (all affected units, or `only` and their
/// dependents) and posts the plan comment and the check run.
pub async fn plan_pull_request(
    bot: &Arc<Bot>,
    key: &PrKey,
    pr: &PrUpdate,
    only: Option<&[UnitPath]>,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let inst = bot.github.installation(pr.installation).await?;
    let existing = bot.store.pull_request(&key.repo, key.number).await?;
    let mut record = record_for(bot, key, pr, existing);
    if pr.fork && !bot.allow_forks {
        record.state = PrState::Failed;
        bot.store.save_pull_request(&record).await?;
        return reply(&inst, key, FORK_REFUSAL).await;
    }
    let token = bot.github.installation_token(pr.installation).await?;
    let refspecs = vec!["+refs/heads/*:refs/heads/*".to_string()];
    bot.workspaces
        .fetch(&key.repo, &pr.clone_url, Some(&token), &refspecs)
        .await?;
    let checkout = bot
        .workspaces
        .checkout(&key.repo, key.number, &pr.head_sha)
        .await?;
    // The base branch's configuration: a pull request cannot change its own.
    let config = match bot.workspaces.config_at(&key.repo, &pr.base_sha)? {
        None => RepoConfig::default(),
        Some(text) => match RepoConfig::parse(&text) {
            Ok(c) => c,
            Err(problem) => {
                record.state = PrState::Failed;
                check(
                    &inst,
                    key,
                    &mut record,
                    CheckStatus::Failure,
                    "cascade: .cascade.yaml is invalid",
                    &problem.to_string(),
                )
                .await?;
                bot.store.save_pull_request(&record).await?;
                let body = format!(
                    "{}\n`.cascade.yaml` on the base branch is invalid, so nothing was planned:\n\n```\n{problem}\n```\nFix it on the base branch, then comment `/plan`.",
                    crate::comment::PLAN_MARKER
                );
                return upsert_comment(&inst, key, &mut record, &[body])
                    .await
                    .and(bot.store.save_pull_request(&record).await);
            }
        },
    };
    // A command (`/plan`) plans whatever the configuration says about events.
    if only.is_none() && ((pr.draft && !config.drafts) || !config.autoplan) {
        tracing::info!(pr = %key, draft = pr.draft, "not planned on this event (draft, or autoplan is off)");
        return Ok(());
    }
    record.state = PrState::Discovering;
    bot.store.save_pull_request(&record).await?;
    let head = scan_with(&checkout, &checkout, config.clone(), &[]);
    if let Some(cycle) = head.problems.iter().find(|p| p.kind == ProblemKind::Cycle) {
        record.state = PrState::Failed;
        check(
            &inst,
            key,
            &mut record,
            CheckStatus::Failure,
            "cascade: dependency cycle",
            &cycle.to_string(),
        )
        .await?;
        let body = format!(
            "{}\nThe unit graph has a cycle, so nothing was planned:\n\n```\n{cycle}\n```",
            crate::comment::PLAN_MARKER
        );
        upsert_comment(&inst, key, &mut record, &[body]).await?;
        return bot.store.save_pull_request(&record).await;
    }
    let changes = bot
        .workspaces
        .changes(&key.repo, &pr.base_sha, &pr.head_sha)?;
    let changed: Vec<String> = changes
        .paths()
        .into_iter()
        .filter(|f| !config.is_ignored(f))
        .collect();
    let deletes = changes.changes.iter().any(|c| {
        matches!(c, crate::git::Change::Deleted(p) | crate::git::Change::Renamed { from: p, .. } if p.ends_with("terragrunt.hcl"))
    });
    let base = if deletes {
        let tree = bot.workspaces.tree(&key.repo, &changes.base)?;
        Some((scan_with(&tree, &tree, config.clone(), &[]), tree))
    } else {
        None
    };
    let deleted = base
        .as_ref()
        .map(|(b, _)| deleted_units(&b.discovery.units, &head.discovery.units))
        .unwrap_or_default();
    let index = ReadIndex::new(&head.discovery.units);
    let mut result = affected(
        &index,
        &head.discovery.units,
        &head.graph,
        &changed,
        &deleted,
        base.as_ref().map(|(b, _)| &b.graph),
    );
    if let Some(only) = only.filter(|o| !o.is_empty()) {
        let mut keep: BTreeSet<UnitPath> = only.iter().cloned().collect();
        keep.extend(head.graph.dependents_closure(only.iter()).into_keys());
        result.units.retain(|u| keep.contains(&u.path));
    }
    let mut plan_targets = targets(
        &head.discovery,
        &head.graph,
        &checkout,
        &result,
        base.as_ref()
            .map(|(b, t)| (&b.discovery, &b.graph, t.as_path())),
    );
    // Units another pull request holds are not planned here; the comment names the holder.
    let wanted: Vec<UnitPath> = plan_targets.iter().map(|t| t.path.clone()).collect();
    let held = bot.store.take_locks(&key.repo, key.number, &wanted).await?;
    let held_units: BTreeSet<&UnitPath> = held.iter().map(|l| &l.unit).collect();
    plan_targets.retain(|t| !held_units.contains(&t.path));
    for t in &mut plan_targets {
        t.deps.retain(|d| !held_units.contains(d));
    }

    record.state = PrState::Planning;
    check(
        &inst,
        key,
        &mut record,
        CheckStatus::InProgress,
        "cascade is planning",
        "Planning the affected units in dependency order.",
    )
    .await?;
    bot.store.save_pull_request(&record).await?;
    let outcome = bot
        .engine
        .plan(
            &key.plan_key(),
            &pr.head_sha,
            &changes.base,
            plan_targets,
            cancel.clone(),
            |_| {},
        )
        .await?;
    if cancel.is_cancelled() {
        tracing::info!(pr = %key, "plan superseded by a newer push");
        return Ok(());
    }
    let mut view = plan_view(&outcome.plan, &head.unresolved());
    view.locked = held
        .iter()
        .map(|l| Problem {
            unit: l.unit.to_string(),
            reason: format!(
                "`{}` is locked by #{} — merge or close it, or comment `/unlock` there",
                l.unit, l.pr
            ),
        })
        .collect();
    let parts = Comments::new().plan_comment(&view, GITHUB_LIMIT)?;
    upsert_comment(&inst, key, &mut record, &parts).await?;
    let (status, title) = if outcome.failed {
        (
            CheckStatus::Failure,
            format!("cascade: plan {} has failures", outcome.plan.id),
        )
    } else if view.needs_approval {
        (
            CheckStatus::ActionRequired,
            format!("cascade: comment /apply {} to apply", outcome.plan.id),
        )
    } else {
        (CheckStatus::Success, "cascade: no changes".to_string())
    };
    let summary = format!(
        "Plan `{}`: {} units planned.",
        outcome.plan.id,
        outcome.plan.units.len()
    );
    check(&inst, key, &mut record, status, &title, &summary).await?;
    record.state = PrState::Commented;
    record.plan_id = Some(outcome.plan.id.clone());
    bot.store.save_pull_request(&record).await
}

/// Merged or closed: locks released, workspace forgotten, plan dead.
pub async fn close_pull_request(bot: &Arc<Bot>, key: &PrKey, pr: &PrUpdate) -> anyhow::Result<()> {
    bot.store.release_locks(&key.repo, key.number).await?;
    if let Some(plan) = bot.store.current_plan(&key.plan_key()).await? {
        bot.store
            .set_plan_status(&key.plan_key(), &plan.id, PlanStatus::Superseded)
            .await?;
    }
    bot.workspaces.forget(&key.repo, key.number).await?;
    let existing = bot.store.pull_request(&key.repo, key.number).await?;
    let mut record = record_for(bot, key, pr, existing);
    record.state = PrState::Closed;
    bot.store.save_pull_request(&record).await
}
