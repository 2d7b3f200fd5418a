//! `/apply` and its checks in order, once `commands` has found that the commenter
//! may apply: forks, the planned head, the latest plan id, the apply requirements
//! (approvals that count, mergeable), one apply at a time, the locks. A refusal is
//! returned, to be said in the comment's one reply, with what to do next.

use super::access::unapproved;
use super::jobs::PrComment;
use super::plan::discard_plan_files;
use super::publish::check;
use super::verdict::with_failure_logs;
use super::{Bot, PrKey};
use crate::comment::Comments;
use crate::comment::inert::code;
use crate::config::{ApplyRequirement, RepoConfig};
use crate::engine::UnitDir;
use crate::engine::views::apply_view;
use crate::forge::{ChangeRequest, CheckOutput, CheckStatus, Forge, Mergeable};
use crate::plan::PlanId;
use crate::store::{AnyStore, BotStore, PlanStatus, PlannedUnit, PrState, RunStore, UnitStatus};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Applies plan `id` of the pull request, or says why not.
pub async fn command_apply(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &PrKey,
    comment: &PrComment,
    info: &ChangeRequest,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Option<String>> {
    let refuse = |text: String| Ok(Some(text));
    let spelling = forge.spelling();
    let (cr, cmd) = (spelling.change_request, |c: &str| spelling.command(c));
    if info.fork && !bot.allow_forks {
        return refuse(format!(
            "cascade does not apply {cr}s from forks. Push the branch to this repository and open a {cr} from it."
        ));
    }
    let Some(mut record) = bot.store.pull_request(&key.repo, key.number).await? else {
        return refuse(format!(
            "There is no plan for this {cr} yet. Comment `{}` first.",
            cmd("plan")
        ));
    };
    if record.head_sha != info.head_sha {
        return refuse(format!(
            "The {cr} has new commits since plan {id} was made. Wait for the new plan comment and apply its id."
        ));
    }
    let current = bot.store.current_plan(&key.plan_key()).await?;
    let plan = match current {
        Some(plan) if plan.id == *id => plan,
        Some(plan) => {
            return refuse(format!(
                "`{id}` is not this {cr}'s latest plan. The current plan is `{}`: review it, then comment `{}`.",
                plan.id,
                cmd(&format!("apply {}", plan.id))
            ));
        }
        None => {
            let consumed = bot
                .store
                .plan(&key.plan_key(), id)
                .await?
                .is_some_and(|p| p.status == PlanStatus::Consumed);
            return refuse(if consumed {
                format!(
                    "Plan `{id}` was already applied. Comment `{}` to see if anything is left.",
                    cmd("plan")
                )
            } else {
                format!(
                    "There is no current plan `{id}` for this {cr}. Comment `{}` to plan again.",
                    cmd("plan")
                )
            });
        }
    };
    if let Some(why) = requirements_unmet(forge, &bot.store, key, info, config, id).await? {
        return refuse(why);
    }
    if record.state == PrState::Applying {
        return refuse(format!(
            "An apply is already running for this {cr}; wait for its result."
        ));
    }
    let units: Vec<_> = plan.units.iter().map(|u| u.path.clone()).collect();
    let held = bot.store.take_locks(&key.repo, key.number, &units).await?;
    if !held.is_empty() {
        let list: Vec<String> = held
            .iter()
            .map(|l| {
                format!(
                    "{} is locked by {}{}",
                    code(l.unit.as_str()),
                    spelling.ref_sigil,
                    l.pr
                )
            })
            .collect();
        return refuse(format!(
            "Cannot apply: {}. Merge or close those {cr}s, or comment `{}` there.",
            list.join(", "),
            cmd("unlock")
        ));
    }
    forge
        .acknowledge(&key.repo, key.number, comment.comment_id)
        .await?;
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
    let dirs: BTreeMap<String, UnitDir> = plan
        .units
        .iter()
        .map(|u: &PlannedUnit| {
            let top = match &base_tree {
                Some(base) if u.destroy => base,
                _ => &checkout,
            };
            (u.path.to_string(), UnitDir::of(top, top, &u.path))
        })
        .collect();
    let dir_for = |u: &PlannedUnit| dirs[u.path.as_str()].clone();
    let outcome = match bot
        .engine
        .apply(
            &key.plan_key(),
            id,
            &record.head_sha,
            &dir_for,
            &config.retries,
            |_| {},
        )
        .await?
    {
        Ok(outcome) => outcome,
        Err(refusal) => {
            record.state = PrState::Commented;
            bot.store.save_pull_request(&record).await?;
            return refuse(format!("Not applied: {refusal}."));
        }
    };
    let view = apply_view(&outcome, &[]);
    // As for a plan: failed units' logs in the check where it shows them.
    let logs_in_check = forge.kind().check_shows_text() && !outcome.failure_logs.is_empty();
    let parts = Comments::new()
        .spelled(spelling)
        .logs_in_check(logs_in_check)
        .apply_comment(&view, forge.comment_limit())?;
    for part in &parts {
        forge.create_comment(&key.repo, key.number, part).await?;
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
            format!(
                "cascade: plan changed; comment {}",
                cmd(&format!("apply {}", new_plan.id))
            ),
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
    let mut result = CheckOutput::new(status, title, format!("Apply of plan `{id}`."));
    if logs_in_check {
        let failed = outcome
            .units
            .iter()
            .filter(|u| u.status == UnitStatus::Failed)
            .count();
        with_failure_logs(&mut result, &outcome.failure_logs, failed, "failed");
    }
    check(forge, key, &mut record, &info.head_ref, &result).await?;
    bot.store.save_pull_request(&record).await?;
    // Consumed, or replaced by the plan of what is left: nothing applies it again.
    if outcome.complete() || outcome.new_plan.is_some() {
        discard_plan_files(bot, key, id).await;
    }
    Ok(None)
}

/// The repository's apply requirements (the default: approved, and mergeable), or
/// why they do not hold.
async fn requirements_unmet(
    forge: &Forge,
    store: &AnyStore,
    key: &PrKey,
    info: &ChangeRequest,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Option<String>> {
    let requirements = &config.apply_requirements;
    if requirements.contains(&ApplyRequirement::Approved)
        && let Some(why) = unapproved(forge, store, key, info, config, id.as_str()).await?
    {
        return Ok(Some(why));
    }
    if !requirements.contains(&ApplyRequirement::Mergeable) {
        return Ok(None);
    }
    // Still being worked out reads the same as blocked: either way, try again later.
    let spelling = forge.spelling();
    let state = match &info.mergeable {
        Mergeable::Yes => return Ok(None),
        Mergeable::No { state } | Mergeable::Unknown { state } => state,
        Mergeable::Blocked { why } => {
            return Ok(Some(format!(
                "Not applied: the {} cannot be merged yet: {why}. Only cascade's own check may \
                 be missing; once the rest is done, comment `{}` again.",
                spelling.change_request,
                spelling.command(&format!("apply {id}")),
            )));
        }
    };
    Ok(Some(format!(
        "Not applied: the {} is not mergeable (state `{state}`). Resolve conflicts and required checks, then comment `{}` again.",
        spelling.change_request,
        spelling.command(&format!("apply {id}")),
    )))
}
