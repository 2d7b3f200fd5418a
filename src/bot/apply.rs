//! Commands in pull request comments, and `/apply` with its checks in order:
//! who may apply, forks, the planned head, the latest plan id, the apply
//! requirements, one apply at a time, the locks. Every refusal is a comment
//! that says what to do next.

use super::jobs::{PrComment, PrUpdate};
use super::plan::plan_pull_request;
use super::publish::{check, reply};
use super::{Bot, PrKey};
use crate::command::{Command, Parsed, help_text, parse_comment};
use crate::comment::{Comments, GITHUB_LIMIT};
use crate::config::{ApplyRequirement, RepoConfig};
use crate::engine::views::apply_view;
use crate::forge::github::{CheckStatus, Installation};
use crate::plan::PlanId;
use crate::store::{PlanStatus, PlannedUnit, PrState, Store};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn handle_comment(
    bot: &Arc<Bot>,
    key: &PrKey,
    comment: &PrComment,
) -> anyhow::Result<()> {
    // Never from the bot itself (its own comments quote commands).
    if comment.author_is_bot {
        return Ok(());
    }
    let parsed = parse_comment(&comment.body);
    if parsed.is_empty() {
        return Ok(());
    }
    let inst = bot.github.installation(comment.installation).await?;
    for item in parsed {
        match item {
            Parsed::Error(e) => {
                reply(
                    &inst,
                    key,
                    &format!(
                        "{}\n\n{}",
                        e.message, "Comment `/help` for the commands cascade knows."
                    ),
                )
                .await?
            }
            Parsed::Command(Command::Help) => reply(&inst, key, &help_text()).await?,
            Parsed::Command(Command::Unlock) => {
                let n = bot.store.release_locks(&key.repo, key.number).await?;
                if let Some(plan) = bot.store.current_plan(&key.plan_key()).await? {
                    bot.store
                        .set_plan_status(&key.plan_key(), &plan.id, PlanStatus::Superseded)
                        .await?;
                }
                reply(&inst, key, &format!("Released {n} lock{} and discarded this pull request's plan. Comment `/plan` to plan again.", if n == 1 { "" } else { "s" })).await?;
            }
            Parsed::Command(Command::Plan { units }) => {
                let pr = current_pr(bot, &inst, key, comment.installation).await?;
                plan_pull_request(bot, key, &pr, Some(&units), CancellationToken::new()).await?;
            }
            Parsed::Command(Command::Apply { id }) => {
                command_apply(bot, &inst, key, comment, &id).await?
            }
        }
    }
    Ok(())
}

/// The pull request as GitHub has it now.
async fn current_pr(
    bot: &Bot,
    inst: &Installation,
    key: &PrKey,
    installation: u64,
) -> anyhow::Result<PrUpdate> {
    let info = inst.pull_request(&key.repo, key.number).await?;
    let clone_url = match bot.store.pull_request(&key.repo, key.number).await? {
        Some(record) => record.clone_url,
        None => format!("https://github.com/{}.git", key.repo),
    };
    Ok(PrUpdate {
        installation,
        clone_url,
        head_sha: info.head_sha,
        head_ref: info.head_ref,
        base_sha: info.base_sha,
        base_ref: info.base_ref,
        draft: info.draft,
        fork: info.fork,
        author: info.author,
    })
}

async fn command_apply(
    bot: &Arc<Bot>,
    inst: &Installation,
    key: &PrKey,
    comment: &PrComment,
    id: &PlanId,
) -> anyhow::Result<()> {
    let who = &comment.author;
    if !inst.permission(&key.repo, who).await.can_write() {
        return reply(inst, key, &format!("@{who} cannot apply: applying needs write permission on {}. Ask a maintainer to comment `/apply {id}`.", key.repo)).await;
    }
    let info = inst.pull_request(&key.repo, key.number).await?;
    if info.fork && !bot.allow_forks {
        return reply(inst, key, "cascade does not apply pull requests from forks. Push the branch to this repository and open a pull request from it.").await;
    }
    let Some(mut record) = bot.store.pull_request(&key.repo, key.number).await? else {
        return reply(
            inst,
            key,
            "There is no plan for this pull request yet. Comment `/plan` first.",
        )
        .await;
    };
    if record.head_sha != info.head_sha {
        return reply(inst, key, &format!("The pull request has new commits since plan {id} was made. Wait for the new plan comment and apply its id.")).await;
    }
    let current = bot.store.current_plan(&key.plan_key()).await?;
    match &current {
        Some(plan) if plan.id == *id => {}
        Some(plan) => {
            return reply(inst, key, &format!("`{id}` is not this pull request's latest plan. The current plan is `{0}`: review it, then comment `/apply {0}`.", plan.id)).await;
        }
        None => {
            let consumed = bot
                .store
                .plan(&key.plan_key(), id)
                .await?
                .is_some_and(|p| p.status == PlanStatus::Consumed);
            let text = if consumed {
                format!(
                    "Plan `{id}` was already applied. Comment `/plan` to see if anything is left."
                )
            } else {
                format!(
                    "There is no current plan `{id}` for this pull request. Comment `/plan` to plan again."
                )
            };
            return reply(inst, key, &text).await;
        }
    }
    let requirements = match bot
        .workspaces
        .config_at(&key.repo, &record.base_sha)?
        .map(|t| RepoConfig::parse(&t))
    {
        None => RepoConfig::default().apply_requirements,
        Some(Ok(config)) => config.apply_requirements,
        Some(Err(problem)) => {
            let text = format!(
                "Not applied: `.cascade.yaml` on the base branch is invalid ({problem}). Fix it there first."
            );
            return reply(inst, key, &text).await;
        }
    };
    if let Some(why) = requirements_unmet(inst, key, &info, &requirements).await? {
        return reply(inst, key, &why).await;
    }
    if record.state == PrState::Applying {
        return reply(
            inst,
            key,
            "An apply is already running for this pull request; wait for its result.",
        )
        .await;
    }
    let plan = current.expect("checked above");
    let units: Vec<_> = plan.units.iter().map(|u| u.path.clone()).collect();
    let held = bot.store.take_locks(&key.repo, key.number, &units).await?;
    if !held.is_empty() {
        let list: Vec<String> = held
            .iter()
            .map(|l| format!("`{}` is locked by #{}", l.unit, l.pr))
            .collect();
        return reply(
            inst,
            key,
            &format!(
                "Cannot apply: {}. Merge or close those pull requests, or comment `/unlock` there.",
                list.join(", ")
            ),
        )
        .await;
    }
    inst.react(&key.repo, comment.comment_id, "eyes").await?;
    record.state = PrState::Applying;
    bot.store.save_pull_request(&record).await?;

    let checkout = bot
        .workspaces
        .checkout(&key.repo, key.number, &record.head_sha)
        .await?;
    let base_tree = if plan.units.iter().any(|u| u.destroy) {
        Some(bot.workspaces.tree(&key.repo, &plan.base)?)
    } else {
        None
    };
    let dirs: BTreeMap<String, PathBuf> = plan
        .units
        .iter()
        .map(|u: &PlannedUnit| {
            let top = if u.destroy {
                base_tree.clone().unwrap_or_else(|| checkout.clone())
            } else {
                checkout.clone()
            };
            let dir = if u.path.as_str() == "." {
                top
            } else {
                top.join(u.path.as_str())
            };
            (u.path.to_string(), dir)
        })
        .collect();
    let dir_for = |u: &PlannedUnit| dirs[u.path.as_str()].clone();
    let outcome = match bot
        .engine
        .apply(&key.plan_key(), id, &record.head_sha, &dir_for, |_| {})
        .await?
    {
        Ok(outcome) => outcome,
        Err(refusal) => {
            record.state = PrState::Commented;
            bot.store.save_pull_request(&record).await?;
            return reply(inst, key, &format!("Not applied: {refusal}.")).await;
        }
    };
    let view = apply_view(&outcome, &[]);
    let parts = Comments::new().apply_comment(&view, GITHUB_LIMIT)?;
    for part in &parts {
        inst.create_comment(&key.repo, key.number, part).await?;
    }
    let (status, title, state) = if outcome.complete() {
        (
            CheckStatus::Success,
            format!("cascade: plan {id} applied"),
            PrState::Applied,
        )
    } else if let Some(new_plan) = &outcome.new_plan {
        record.plan_id = Some(new_plan.id.clone());
        (
            CheckStatus::ActionRequired,
            format!("cascade: plan changed; comment /apply {}", new_plan.id),
            PrState::Commented,
        )
    } else {
        (
            CheckStatus::Failure,
            format!("cascade: apply of {id} failed"),
            PrState::Failed,
        )
    };
    let outcome_label = match state {
        PrState::Applied => "applied",
        PrState::Commented => "plan-changed",
        _ => "failed",
    };
    metrics::counter!("cascade_runs_total", "kind" => "apply", "outcome" => outcome_label)
        .increment(1);
    record.state = state;
    check(
        inst,
        key,
        &mut record,
        status,
        &title,
        &format!("Apply of plan `{id}`."),
    )
    .await?;
    bot.store.save_pull_request(&record).await
}

/// The repository's apply requirements (the default: approved by someone other
/// than the author, and mergeable), or why they do not hold.
async fn requirements_unmet(
    inst: &Installation,
    key: &PrKey,
    info: &crate::forge::github::PullRequestInfo,
    requirements: &[ApplyRequirement],
) -> anyhow::Result<Option<String>> {
    if requirements.contains(&ApplyRequirement::Approved) {
        let reviews = inst.reviews(&key.repo, key.number).await?;
        // The latest review of each reviewer counts.
        let mut latest: BTreeMap<&str, &str> = BTreeMap::new();
        for r in &reviews {
            if r.state != "COMMENTED" {
                latest.insert(r.author.as_str(), r.state.as_str());
            }
        }
        let approved = latest
            .iter()
            .any(|(who, state)| *state == "APPROVED" && *who != info.author);
        if !approved {
            return Ok(Some(format!(
                "Not applied: this pull request needs an approving review from someone other than @{}. Ask for a review, then comment `/apply` again.",
                info.author
            )));
        }
    }
    let mergeable = info.mergeable == Some(true)
        || matches!(
            info.mergeable_state.as_str(),
            "clean" | "unstable" | "has_hooks"
        );
    if requirements.contains(&ApplyRequirement::Mergeable) && !mergeable {
        return Ok(Some(format!(
            "Not applied: the pull request is not mergeable (state `{}`). Resolve conflicts and required checks, then comment `/apply` again.",
            info.mergeable_state
        )));
    }
    Ok(None)
}
