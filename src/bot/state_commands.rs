//! `/import <unit> <address> <id>` and `/state rm <unit> <address>`, once `commands` has
//! found that the commenter has the right to apply: on only when the default branch's
//! `.cascade.yaml` lists them in `commands:`, never for a fork, only for a unit the
//! head has and no other pull request holds (its lock is taken, as an apply takes it).
//! The change runs in the unit's directory at the head's checkout, through the engine
//! and the executor, in the sandbox, like a plan of that unit.
//!
//! The answer is the state change as `state list` shows it before and after. A change
//! that succeeds discards the pull request's plan: it was made against the old state,
//! so applying it would no longer do what was reviewed; cascade says to comment
//! `/plan` rather than plan by itself, so several changes can be made before one plan.
//! A failure keeps the plan and shows the error, redacted, without the server's paths
//! and bounded, as a failed plan's is. Refusals are returned (`refusal` words them).

use super::ctx::PrCtx;
use super::jobs::PrComment;
use super::plan::{discard_plan_files, fetch_pull_request};
use super::refusal::{Refusal, StateRefusal};
use crate::config::{OptInCommand, RepoConfig};
use crate::discovery::UnitKind;
use crate::exec::StateDiff;
use crate::inert::{code, fenced};
use crate::store::{BotStore, PlanStatus, PrState, RunStore};
use crate::unit::{StateChange, UnitPath};
use std::collections::BTreeSet;
use tokio_util::sync::CancellationToken;

/// Addresses named in one answer; the rest are counted.
const ADDRESSES_SHOWN: usize = 20;

/// The command `commands:` must list for `change`.
fn opt_in(change: &StateChange) -> OptInCommand {
    match change {
        StateChange::Import { .. } => OptInCommand::Import,
        StateChange::Remove { .. } => OptInCommand::StateRm,
    }
}

/// Makes `change` in `unit` and answers with what changed, or says why not. `typed` is
/// the command as this forge spells it, for the answer.
pub async fn command_change_state(
    ctx: &PrCtx,
    comment: &PrComment,
    config: &RepoConfig,
    branch: &str,
    unit: &UnitPath,
    change: &StateChange,
    typed: &str,
) -> anyhow::Result<Result<String, Refusal>> {
    let (bot, forge, key, pr) = (&ctx.bot, &ctx.forge, &ctx.key, &ctx.pr);
    let refuse = |refusal: StateRefusal| Ok(Err(refusal.into()));
    let command = opt_in(change);
    if !config.commands.contains(&command) {
        return refuse(StateRefusal::Off {
            command,
            branch: branch.to_string(),
            listed: config.commands.clone(),
        });
    }
    if pr.fork && !bot.allow_forks {
        return refuse(StateRefusal::Fork);
    }
    let record = bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?;
    if record
        .as_ref()
        .is_some_and(|r| r.state == PrState::Applying)
    {
        return Ok(Err(Refusal::ApplyRunning));
    }
    // The head's commits may never have been fetched (nothing planned yet).
    let default = forge.default_branch(&key.repo().stored()).await?;
    fetch_pull_request(ctx, &default.clone_url).await?;
    let checkout = bot
        .workspaces
        .checkout(&key.repo().stored(), key.number(), pr.head_sha.as_str())
        .await?;
    // Which directory and tool the unit has, as a plan of the head finds them: the
    // discovery a plan does, within its deadline.
    let (dir, scan_config) = (checkout.clone(), config.clone());
    let catalog = bot.catalog(forge.git_credential().await?);
    let scan = match bot
        .discovery
        .run(&CancellationToken::new(), move |deadline| {
            let mut sources = Default::default();
            super::discover::scan_checkout(&catalog, &dir, scan_config, deadline, &mut sources)
        })
        .await
    {
        Ok(scan) => scan,
        Err(stop) => {
            return Ok(Ok(format!(
                "Nothing was changed: reading this {}'s units stopped ({stop}).",
                ctx.spelling.change_request
            )));
        }
    };
    let is_unit = scan
        .discovery
        .unit(unit)
        .is_some_and(|u| u.kind != UnitKind::Stack);
    if !is_unit {
        return refuse(StateRefusal::UnknownUnit {
            command: typed.to_string(),
            unit: unit.clone(),
        });
    }
    let held = bot
        .store
        .take_locks(
            &key.repo().stored(),
            key.number(),
            std::slice::from_ref(unit),
        )
        .await?;
    if let Some(lock) = held.into_iter().next() {
        return refuse(StateRefusal::Locked {
            unit: lock.unit,
            holder: lock.pr,
        });
    }
    forge
        .acknowledge(&key.repo().stored(), key.number(), comment.comment_id)
        .await?;
    let only: BTreeSet<UnitPath> = [unit.clone()].into();
    let targets = crate::engine::head_targets(&scan.discovery, &scan.graph, &checkout, &only);
    let Some(target) = targets.first() else {
        anyhow::bail!("discovery found unit {unit} but made no target of it");
    };
    let rules = crate::engine::RunRules::from(config).for_pull_request(key.number());
    tracing::info!(pr = %key, unit = %unit, by = %comment.author, command = %typed, "changing a unit's state by hand");
    let changed = bot
        .engine
        .change_state(&key.plan_key(), target, change, &rules)
        .await?;
    let diff = match changed {
        Ok(diff) => diff,
        Err(reason) => {
            return Ok(Ok(format!(
                "{} failed in {}; this {}'s plan is kept:\n\n{}",
                code(typed),
                code(unit.as_str()),
                ctx.spelling.change_request,
                fenced(&reason, "text"),
            )));
        }
    };
    let discarded = discard_plan(ctx).await?;
    Ok(Ok(answer(ctx, typed, unit, &diff, discarded.as_deref())))
}

/// Marks the pull request's current plan superseded and deletes its saved plan files;
/// its id, if it had one.
async fn discard_plan(ctx: &PrCtx) -> anyhow::Result<Option<String>> {
    let (bot, key) = (&ctx.bot, &ctx.key);
    let plan_key = key.plan_key();
    let Some(plan) = bot.store.current_plan(&plan_key).await? else {
        return Ok(None);
    };
    bot.store
        .set_plan_status(&plan_key, &plan.id, PlanStatus::Superseded)
        .await?;
    discard_plan_files(bot, key, &plan.id).await;
    Ok(Some(plan.id.to_string()))
}

/// The answer to a state change that succeeded.
fn answer(
    ctx: &PrCtx,
    typed: &str,
    unit: &UnitPath,
    diff: &StateDiff,
    discarded: Option<&str>,
) -> String {
    let cr = ctx.spelling.change_request;
    let mut said = Vec::new();
    if !diff.added.is_empty() {
        said.push(format!("added {}", listed(&diff.added)));
    }
    if !diff.removed.is_empty() {
        said.push(format!("removed {}", listed(&diff.removed)));
    }
    let what = if said.is_empty() {
        "terraform said it succeeded, and `state list` shows the same addresses as before"
            .to_string()
    } else {
        said.join("; ")
    };
    let plan = ctx.spelling.command("plan");
    let next = match discarded {
        Some(id) => format!(
            "This {cr}'s plan `{id}` was made against the old state, so it is discarded: \
             comment `{plan}` to plan again."
        ),
        None => format!("Comment `{plan}` to plan this {cr} against the new state."),
    };
    format!(
        "{} changed the state of {}: {what}.\n\n{next}",
        code(typed),
        code(unit.as_str()),
    )
}

/// Addresses as code spans, the first [`ADDRESSES_SHOWN`] of them.
fn listed(addresses: &[String]) -> String {
    let mut shown: Vec<String> = addresses
        .iter()
        .take(ADDRESSES_SHOWN)
        .map(|a| code(a))
        .collect();
    if addresses.len() > ADDRESSES_SHOWN {
        shown.push(format!("and {} more", addresses.len() - ADDRESSES_SHOWN));
    }
    shown.join(", ")
}
