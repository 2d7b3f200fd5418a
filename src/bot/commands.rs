//! Commands in pull request comments: each at most once per comment (see
//! `command::read_comment`), `/help` for anyone, `/plan`, `/unlock`, `/apply`, `/import`
//! and `/state rm` only for whoever has the right to apply (`access`), and `/approve-policies` for the owners of a
//! failing policy set (`approve_policies`). Everything a comment makes cascade
//! say, refusals and mistakes alike, goes out as one reply, counted against the pull
//! request's reply limit.

use super::access::refuse_command;
use super::apply::command_apply;
use super::approve_policies::command_approve_policies;
use super::ctx::PrCtx;
use super::destroy::DestroyAsk;
use super::jobs::PrComment;
use super::plan::{current_pr, plan_destroy, plan_pull_request, release_and_discard};
use super::publish::reply;
use super::refusal::Refusal;
use super::rules::{Rules, rules};
use super::state_commands::command_change_state;
use super::{Bot, WorkKey};
use crate::command::{Command, help_text, read_comment};
use crate::forge::{Actor, Spelling};
use crate::store::BotStore;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Mistakes named in one reply; the rest are counted, so a comment of thousands of wrong
/// lines still gets one reply of a size GitHub accepts.
const MISTAKES_SHOWN: usize = 5;

/// The pull request and the rules it is held to (the default branch's), read once per
/// comment.
struct Context {
    pub ctx: PrCtx,
    pub rules: Rules,
}

pub async fn handle_comment(
    bot: &Arc<Bot>,
    key: &WorkKey,
    comment: &PrComment,
) -> anyhow::Result<()> {
    // Never from the bot itself (its own comments quote commands).
    if comment.author_is_bot {
        return Ok(());
    }
    let spelling: &Spelling = comment.forge.kind().spelling();
    let read = read_comment(&comment.body, spelling);
    if read.commands.is_empty() && read.mistakes.is_empty() {
        return Ok(());
    }
    let forge = bot.forges.open(comment.forge).await?;
    let actor = Actor {
        id: comment.author_id,
        login: comment.author.clone(),
    };
    if forge.is_self(&actor).await {
        return Ok(());
    }
    let mut replies: Vec<String> = read
        .mistakes
        .iter()
        .take(MISTAKES_SHOWN)
        .map(|m| m.message.clone())
        .collect();
    if let Some(more) = read.mistakes.len().checked_sub(MISTAKES_SHOWN)
        && more > 0
    {
        replies.push(format!(
            "This comment has {more} more line{} cascade could not read; fix them too.",
            if more == 1 { "" } else { "s" }
        ));
    }
    if !replies.is_empty() {
        replies.push(format!(
            "Comment `{}` for the commands cascade knows.",
            spelling.command("help")
        ));
    }
    let mut context: Option<Context> = None;
    for command in read.commands {
        if command == Command::Help {
            replies.push(help_text(spelling));
            continue;
        }
        let context = match &mut context {
            Some(context) => context,
            None => {
                let pr = current_pr(&forge, key).await?;
                let ctx = PrCtx::new(bot, key, pr, forge.clone());
                let rules = rules(&ctx).await?;
                context.insert(Context { ctx, rules })
            }
        };
        let typed = command.spelled(spelling);
        let config = match &context.rules.config {
            Ok(config) => config,
            Err(problem) => {
                let refusal = Refusal::RulesInvalid {
                    branch: context.rules.branch.clone(),
                    problem: problem.to_string(),
                    command: typed,
                };
                replies.push(refusal.message(spelling));
                continue;
            }
        };
        if let Command::ApprovePolicies { id } = &command {
            // Owners of a policy set need not have the right to apply: its own checks.
            match command_approve_policies(&context.ctx, comment, config, id).await? {
                Ok(said) => replies.push(said),
                Err(refusal) => replies.push(refusal.message(spelling)),
            }
            continue;
        }
        let actor = Actor {
            id: comment.author_id,
            login: comment.author.clone(),
        };
        if let Some(refusal) = refuse_command(&forge, key.repo(), &actor, config, &typed).await {
            replies.push(refusal.message(spelling));
            continue;
        }
        match command {
            Command::Help | Command::ApprovePolicies { .. } => {}
            Command::Unlock => {
                let n = release_and_discard(bot, key).await?;
                bot.store
                    .set_waiting(&key.repo().stored(), key.number(), &[])
                    .await?;
                replies.push(format!(
                    "Released {n} lock{} and discarded this {}'s plan. Comment `{}` to plan again.",
                    if n == 1 { "" } else { "s" },
                    spelling.change_request,
                    spelling.command("plan"),
                ));
            }
            Command::Plan { units } => {
                let refused =
                    plan_pull_request(&context.ctx, Some(&units), CancellationToken::new()).await?;
                replies.extend(refused.map(|refusal| refusal.message(spelling)));
            }
            Command::Destroy { units } => {
                let ask = DestroyAsk {
                    globs: units,
                    branch: context.rules.branch.clone(),
                };
                let refused = plan_destroy(&context.ctx, ask).await?;
                replies.extend(refused.map(|refusal| refusal.message(spelling)));
            }
            Command::ChangeState { unit, change } => {
                let branch = &context.rules.branch;
                match command_change_state(
                    &context.ctx,
                    comment,
                    config,
                    branch,
                    &unit,
                    &change,
                    &typed,
                )
                .await?
                {
                    Ok(said) => replies.push(said),
                    Err(refusal) => replies.push(refusal.message(spelling)),
                }
            }
            Command::Apply { id, units } => {
                // The base may have changed since the plan (an edit cascade missed, too).
                if let Some(rule) = context.rules.refuse_base(&context.ctx.pr.base_ref) {
                    replies.push(Refusal::BaseNotApplied(rule).message(spelling));
                    continue;
                }
                if let Some(refusal) =
                    command_apply(&context.ctx, comment, &context.rules, config, &id, &units)
                        .await?
                {
                    replies.push(refusal.message(spelling));
                }
            }
        }
    }
    if replies.is_empty() {
        return Ok(());
    }
    reply(bot, &forge, key, &replies.join("\n\n---\n\n")).await
}
