//! `/approve-policies <id>` (GitLab: `cascade approve-policies <id>`): an owner of a
//! failing policy set approves its failures for exactly that plan id, recorded in the
//! store so every replica and a restart see it. A new push or a changed plan makes a new
//! id, which no approval names.
//!
//! Checks in order: write permission, not the change request's author nor (unless
//! `approvals: allow_pushers`) someone who pushed to it or made one of its commits, the
//! planned head, the current plan id, a blocking set that fails, and ownership of one of
//! them (`owners:`, as `apply_permission` is read). Never applies anything.

use super::access::{Contributors, Listed, listed};
use super::ctx::PrCtx;
use super::jobs::PrComment;
use super::policies::failing_sets;
use super::refusal::{PolicyRefusal, Refusal};
use crate::config::RepoConfig;
use crate::forge::{Actor, Approver};
use crate::inert::code;
use crate::plan::PlanId;
use crate::store::{BotStore, PolicyApproval};

/// Approves plan `id`'s failing sets the commenter owns; the reply to post, or why not.
pub async fn command_approve_policies(
    ctx: &PrCtx,
    comment: &PrComment,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Result<String, Refusal>> {
    let (bot, forge, key, pr) = (&ctx.bot, &ctx.forge, &ctx.key, &ctx.pr);
    let spelling = ctx.spelling;
    let actor = Actor {
        id: comment.author_id,
        login: comment.author.clone(),
    };
    let login = actor.login.clone();
    if !forge.may_write(&key.repo().stored(), &actor).await {
        return Ok(Err(Refusal::NoWritePermission {
            login,
            command: spelling.command(&format!("approve-policies {id}")),
            repo: key.repo().clone(),
        }));
    }
    if login.eq_ignore_ascii_case(pr.author_login()) {
        return Ok(Err(PolicyRefusal::OwnChange { login, how: None }.into()));
    }
    if !config.pushers_may_approve {
        let contributors = match Contributors::read(forge, bot.store.as_ref(), key).await? {
            Ok(read) => read,
            Err(error) => {
                return Ok(Err(Refusal::CommitsUnread {
                    id: id.clone(),
                    error,
                }));
            }
        };
        let approver = Approver {
            actor: actor.clone(),
            name: None,
            commit: None,
        };
        if let Some(how) = contributors.how(&approver) {
            return Ok(Err(PolicyRefusal::OwnChange {
                login,
                how: Some(how),
            }
            .into()));
        }
    }
    let plan = match super::apply::named_plan(ctx, config, id).await? {
        Ok((_, plan)) => plan,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let failing = failing_sets(&plan);
    if failing.is_empty() {
        return Ok(Err(
            PolicyRefusal::NothingToApprove { id: id.clone() }.into()
        ));
    }
    let mut owned = Vec::new();
    let mut others = Vec::new();
    let mut unreadable = false;
    for set in failing {
        let owners = config
            .policies
            .iter()
            .find(|s| s.name == set)
            .map(|s| s.owners.clone());
        match &owners {
            Some(who) => match listed(forge, &actor, who).await {
                Listed::Yes => owned.push(set),
                Listed::No { unreadable: u } => {
                    unreadable |= u;
                    others.push((set, owners));
                }
            },
            None => others.push((set, owners)),
        }
    }
    if owned.is_empty() {
        return Ok(Err(PolicyRefusal::NotOwner {
            login,
            id: id.clone(),
            sets: others,
            memberships_unreadable: unreadable,
        }
        .into()));
    }
    for set in &owned {
        let approval = PolicyApproval {
            set: set.clone(),
            user: login.clone(),
            at: bot.now(),
        };
        bot.store
            .approve_policies(&key.plan_key(), id, &approval)
            .await?;
    }
    tracing::info!(pr = %key, plan = %id, user = %login, sets = ?owned, "policies approved");
    let named: Vec<String> = owned.iter().map(|s| code(s)).collect();
    let mut reply = format!(
        "@{login} approved the failures of policy set{} {} for plan `{id}` only; a new plan needs a new approval.",
        if owned.len() == 1 { "" } else { "s" },
        named.join(", "),
    );
    let approved = bot.store.policy_approvals(&key.plan_key(), id).await?;
    let left: Vec<String> = others
        .iter()
        .filter(|(s, _)| !approved.iter().any(|a| &a.set == s))
        .map(|(s, _)| code(s))
        .collect();
    if left.is_empty() {
        reply.push_str(&format!(
            " Policies no longer stop `{}`.",
            spelling.command(&format!("apply {id}"))
        ));
    } else {
        reply.push_str(&format!(
            " Still to approve, by their owners: {}.",
            left.join(", ")
        ));
    }
    Ok(Ok(reply))
}
