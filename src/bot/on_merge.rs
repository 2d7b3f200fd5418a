//! `apply: on_merge` before the merge: which units of a plan cascade applies after merge,
//! whether the plan is approved as `/apply` would require (so the `cascade` check can be
//! green and branch protection can require it), and the refusal of an `/apply` of those
//! units before merge.
//!
//! The approval rule is `/apply`'s own, less what the merge itself settles: the approvals
//! that count (`access::unapproved`), policy sets nobody approved for this id, and no
//! conflict with the base. A merge "blocked" by the forge is not held against the plan:
//! the `cascade` check is one of the things that block it. Never applies: `merged` does.

use super::access::unapproved;
use super::ctx::PrCtx;
use super::plan::current_pr;
use super::refusal::{AfterMergeRefusal, PolicyRefusal, Refusal};
use crate::comment::MergeModeView;
use crate::config::{ApplyRequirement, RepoConfig};
use crate::forge::{CheckOutput, CheckStatus, Mergeable};
use crate::store::{BotStore, PlanRecord, RunStore};
use crate::unit::UnitPath;
use std::collections::BTreeSet;

/// Which units of `plan` apply after merge, and which by comment.
pub(super) fn merge_mode(config: &RepoConfig, plan: &PlanRecord) -> MergeModeView {
    let (on_merge, by_comment): (Vec<_>, Vec<_>) = plan
        .units
        .iter()
        .map(|u| &u.path)
        .partition(|p| config.applies_on_merge(p));
    let shown = |units: Vec<&UnitPath>| units.iter().map(|u| u.to_string()).collect();
    MergeModeView {
        on_merge: shown(on_merge),
        by_comment: shown(by_comment),
    }
}

/// Why plan `plan` is not approved as `apply: on_merge` requires, or `None`.
pub(super) async fn unapproved_for_merge(
    ctx: &PrCtx,
    config: &RepoConfig,
    plan: &PlanRecord,
) -> anyhow::Result<Option<Refusal>> {
    let approvals = ctx
        .bot
        .store
        .policy_approvals(&ctx.key.plan_key(), &plan.id)
        .await?;
    let blocking = super::policies::blocking(plan, &approvals, config);
    if !blocking.is_empty() {
        return Ok(Some(
            PolicyRefusal::Blocked {
                id: plan.id.clone(),
                blocking,
            }
            .into(),
        ));
    }
    let requirements = &config.apply_requirements;
    if requirements.contains(&ApplyRequirement::Approved)
        && let Some(refusal) = unapproved(ctx, config, &plan.id).await?
    {
        return Ok(Some(refusal));
    }
    if requirements.contains(&ApplyRequirement::Mergeable) && ctx.pr.open {
        // A hook does not say; the API does.
        let mergeable = match &ctx.pr.mergeable {
            Some(m) => m.clone(),
            None => current_pr(&ctx.forge, &ctx.key)
                .await?
                .mergeable
                .unwrap_or(Mergeable::Yes),
        };
        if let Mergeable::No { state } = mergeable {
            return Ok(Some(Refusal::NotMergeable {
                id: plan.id.clone(),
                state,
            }));
        }
    }
    Ok(None)
}

/// The `cascade` check of a plan some of whose units apply after merge, replacing
/// `verdict` when it only waited for `/apply`: green once every unit applies after merge
/// and the plan is approved; otherwise it says what is missing.
pub(super) async fn merge_check(
    ctx: &PrCtx,
    config: &RepoConfig,
    plan: &PlanRecord,
    mode: &MergeModeView,
    verdict: CheckOutput,
) -> anyhow::Result<CheckOutput> {
    let spelling = ctx.spelling;
    if !mode.any() || !super::verdict::awaits_apply(&verdict, &plan.id, spelling) {
        return Ok(verdict);
    }
    approval_check(ctx, config, plan, mode).await
}

/// The check of a plan some of whose units apply after merge: green once every unit
/// applies after merge and the plan is approved as `/apply` requires.
async fn approval_check(
    ctx: &PrCtx,
    config: &RepoConfig,
    plan: &PlanRecord,
    mode: &MergeModeView,
) -> anyhow::Result<CheckOutput> {
    let spelling = ctx.spelling;
    let id = &plan.id;
    let mut summary = format!(
        "Plan `{id}`: {} of its {} units are applied by cascade after merge, if the plan made \
         at the merge commit equals this one.",
        mode.on_merge.len(),
        plan.units.len()
    );
    if !mode.by_comment.is_empty() {
        let units: Vec<&str> = mode.by_comment.iter().map(String::as_str).collect();
        let command = spelling.command(&format!("apply {id} {}", units.join(" ")));
        summary.push_str("\n\nThe others are applied by comment before merge.");
        return Ok(CheckOutput::new(
            CheckStatus::ActionRequired,
            format!("cascade: comment {command} before merge"),
            summary,
        ));
    }
    Ok(match unapproved_for_merge(ctx, config, plan).await? {
        None => {
            summary.push_str("\n\nThe plan is approved as `apply` requires.");
            CheckOutput::new(
                CheckStatus::Success,
                format!("cascade: plan {id} approved; applied after merge"),
                summary,
            )
        }
        Some(refusal) => {
            // `/apply`'s own words, since its rule is the one that holds; its advice to
            // comment `/apply` again does not apply here: the merge applies it.
            summary.push_str(&format!(
                "\n\nNot approved yet. What holds it, as `{}` would say it:\n\n> {}",
                spelling.command("apply"),
                refusal
                    .message(spelling)
                    .lines()
                    .collect::<Vec<_>>()
                    .join("\n> ")
            ));
            CheckOutput::new(
                CheckStatus::ActionRequired,
                format!("cascade: plan {id} waits for approval; applied after merge"),
                summary,
            )
        }
    })
}

/// The refusal of an `/apply` before merge that would apply units the default branch
/// applies after merge (`only`: the units named, or none for the whole plan).
pub(super) fn refuse_before_merge(
    ctx: &PrCtx,
    config: &RepoConfig,
    plan: &PlanRecord,
    only: Option<&BTreeSet<UnitPath>>,
) -> Option<Refusal> {
    if !ctx.pr.open {
        // The merged change request's own path: an apply of what the merge left.
        return None;
    }
    let taken = |p: &UnitPath| only.is_none_or(|only| only.contains(p));
    let units: Vec<UnitPath> = plan
        .units
        .iter()
        .map(|u| &u.path)
        .filter(|p| taken(p) && config.applies_on_merge(p))
        .cloned()
        .collect();
    if units.is_empty() {
        return None;
    }
    let others: Vec<&str> = plan
        .units
        .iter()
        .map(|u| u.path.as_str())
        .filter(|p| !config.applies_on_merge(&UnitPath::new(p)))
        .collect();
    let others = (!others.is_empty()).then(|| {
        ctx.spelling
            .command(&format!("apply {} {}", plan.id, others.join(" ")))
    });
    Some(
        AfterMergeRefusal::AppliesAfterMerge {
            id: plan.id.clone(),
            units,
            others,
        }
        .into(),
    )
}

/// After a review: sets the check of the change request's current plan again, when it
/// is one whose units apply after merge and was planned at the head it has now.
pub(super) async fn recheck(
    bot: &std::sync::Arc<super::Bot>,
    key: &super::WorkKey,
    at: crate::forge::ForgeRef,
) -> anyhow::Result<()> {
    let ctx = PrCtx::read(bot, key, at).await?;
    if !ctx.pr.open {
        return Ok(());
    }
    let rules = super::rules::rules(&ctx).await?;
    let Ok(config) = &rules.config else {
        return Ok(());
    };
    if !config.apply.any_on_merge() {
        return Ok(());
    }
    let repo = key.repo().stored();
    let Some(mut record) = bot.store.pull_request(&repo, key.number()).await? else {
        return Ok(());
    };
    let Some(plan) = bot.store.current_plan(&key.plan_key()).await? else {
        return Ok(());
    };
    let planned = plan
        .units
        .iter()
        .all(|u| u.status == crate::store::UnitStatus::Planned);
    if record.head_sha != ctx.pr.head_sha.as_str()
        || record.plan_id.as_ref() != Some(&plan.id)
        || record.state != crate::store::PrState::Commented
        || plan.id.as_str() == crate::plan::PlanId::NO_CHANGES
        || !planned
    {
        return Ok(());
    }
    let mode = merge_mode(config, &plan);
    if !mode.any() {
        return Ok(());
    }
    let check = approval_check(&ctx, config, &plan, &mode).await?;
    ctx.set_check(&mut record, &check).await
}
