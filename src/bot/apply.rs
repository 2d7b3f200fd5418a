//! `/apply` and its checks in order, once `commands` has found that the commenter
//! may apply: forks, the planned head, the latest plan id (the engine's rule), the policy
//! sets that fail it and nobody approved for that id, the apply requirements (approvals
//! that count, mergeable), one apply at a time, the locks. A refusal is returned
//! (`refusal` words it), to be said in the comment's one reply.

use super::access::unapproved;
use super::ctx::PrCtx;
use super::jobs::PrComment;
use super::plan::discard_plan_files;
use super::policies::{compile_default, pull_request_facts};
use super::refusal::{DestroyRefusal, PolicyRefusal, Refusal};
use super::rules::Rules;
use super::verdict::with_failure_logs;
use crate::command::UnitGlob;
use crate::comment::Comments;
use crate::comment::apply_view;
use crate::config::{ApplyRequirement, RepoConfig};
use crate::engine::UnitDir;
use crate::forge::{CheckOutput, CheckStatus, Mergeable};
use crate::plan::PlanId;
use crate::store::{BotStore, PlanRecord, PlannedUnit, PrState, PullRequestRecord, UnitStatus};
use crate::unit::UnitPath;
use std::collections::{BTreeMap, BTreeSet};

/// Applies plan `id` of the pull request (only the units `globs` match, when there are
/// any), or says why not.
pub async fn command_apply(
    ctx: &PrCtx,
    comment: &PrComment,
    rules: &Rules,
    config: &RepoConfig,
    id: &PlanId,
    globs: &[UnitGlob],
) -> anyhow::Result<Option<Refusal>> {
    let (bot, forge, key, info) = (&ctx.bot, &ctx.forge, &ctx.key, &ctx.pr);
    let refuse = |refusal: Refusal| Ok(Some(refusal));
    let spelling = ctx.spelling;
    if info.fork && !bot.allow_forks {
        return refuse(Refusal::ForkNotApplied);
    }
    // Asked before the requirements: a stale id is told the current one first.
    let (mut record, plan) = match named_plan(ctx, config, id).await? {
        Ok(found) => found,
        Err(refusal) => return refuse(refusal),
    };
    // Whoever planned it, a plan that destroys a protected unit is not applied.
    if let Some(refusal) = protected_destroys(&plan, config, &rules.branch) {
        return refuse(refusal);
    }
    let only = match subset_of(&plan, globs, spelling) {
        Ok(only) => only,
        Err(refusal) => return refuse(*refusal),
    };
    if let Some(refusal) = super::on_merge::refuse_before_merge(ctx, config, &plan, only.as_ref()) {
        return refuse(refusal);
    }
    // A policy failure is the plan's own: said before the approvals it also needs.
    let approved = bot.store.policy_approvals(&key.plan_key(), id).await?;
    let blocking = super::policies::blocking(&plan, &approved, config);
    if !blocking.is_empty() {
        return refuse(
            PolicyRefusal::Blocked {
                id: id.clone(),
                blocking,
            }
            .into(),
        );
    }
    // Once merged, the merge settled approvals and mergeability: someone allowed to apply
    // applies what the merge left (at the merge commit, only what equals the plan).
    if info.open
        && let Some(refusal) = requirements_unmet(ctx, config, id).await?
    {
        return refuse(refusal);
    }
    if record.state == PrState::Applying {
        return refuse(Refusal::ApplyRunning);
    }
    // A unit whose fresh plan differs goes to a new plan, judged by the same policies.
    let checks = match compile_default(ctx, config, &rules.sha).await? {
        Ok(checks) => checks,
        Err(problem) => {
            return refuse(
                PolicyRefusal::SetsUnusable {
                    branch: rules.branch.clone(),
                    problem,
                    applying: Some(id.clone()),
                }
                .into(),
            );
        }
    };
    let mut run_rules = crate::engine::RunRules::from(config)
        .for_pull_request(key.number())
        .with_policies(checks);
    let at = record.head_sha.clone();
    if !info.open {
        run_rules = run_rules.at_merge_commit(&at);
    }
    if let Some(only) = only {
        run_rules = run_rules.only_units(only);
    }
    if !config.policies.is_empty() {
        let base = record.base_sha.clone();
        let changed = bot
            .workspaces
            .changes(&key.repo().stored(), &base, &record.head_sha)
            .map(|c| c.paths())
            .unwrap_or_default();
        run_rules =
            run_rules.with_pull_request_facts(pull_request_facts(ctx, config, &changed).await);
    }
    let units: Vec<_> = plan.units.iter().map(|u| u.path.clone()).collect();
    let held = bot
        .store
        .take_locks(&key.repo().stored(), key.number(), &units)
        .await?;
    if !held.is_empty() {
        return refuse(Refusal::UnitsLocked {
            locks: held.into_iter().map(|l| (l.unit, l.pr)).collect(),
        });
    }
    forge
        .acknowledge(&key.repo().stored(), key.number(), comment.comment_id)
        .await?;
    ctx.transition(&mut record, PrState::Applying).await?;
    let merge_commit = (!info.open).then_some(at.as_str());
    let said = run_and_report(ctx, &mut record, &plan, run_rules, &at, merge_commit).await?;
    if !info.open {
        // Merged: nothing releases its locks later, and a plan left here is applied only by
        // another `/apply`, which takes them again.
        bot.store
            .release_locks(&key.repo().stored(), key.number())
            .await?;
        bot.wake_waiters(&key.repo().stored(), key.number()).await?;
    }
    Ok(said)
}

/// Applies `plan` at commit `at` (the planned head, or the merge commit an apply after
/// merge runs at, `merge_commit`) under `run_rules`, with the change request already in
/// `Applying` and its units locked; then posts the result and sets the check and state.
pub(super) async fn run_and_report(
    ctx: &PrCtx,
    record: &mut PullRequestRecord,
    plan: &PlanRecord,
    run_rules: crate::engine::RunRules,
    at: &str,
    merge_commit: Option<&str>,
) -> anyhow::Result<Option<Refusal>> {
    let (bot, forge, key) = (&ctx.bot, &ctx.forge, &ctx.key);
    let spelling = ctx.spelling;
    let cmd = |c: &str| spelling.command(c);
    let id = &plan.id;
    let checkout = bot
        .workspaces
        .checkout(&key.repo().stored(), key.number(), at)
        .await?;
    // Units the pull request deletes are destroyed from the base's tree; a `/destroy`
    // plan (made against its own head) destroys units that are still in the checkout.
    let base_tree = if plan.base != plan.head && plan.units.iter().any(|u| u.destroy) {
        Some(bot.workspaces.tree(&key.repo().stored(), &plan.base)?)
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
        .apply(&key.plan_key(), id, at, &dir_for, run_rules, |_| {})
        .await?
    {
        Ok(outcome) => outcome,
        Err(refusal) => {
            ctx.transition(record, PrState::Commented).await?;
            return Ok(Some(Refusal::engine_refused(
                refusal,
                Refusal::EngineRefused,
            )));
        }
    };
    let mut view = apply_view(&outcome, &[]);
    view.merge_commit = merge_commit.map(str::to_string);
    // As for a plan: failed units' logs in the check where it shows them.
    let logs_in_check = forge.kind().check_shows_text() && !outcome.failure_logs.is_empty();
    let parts = Comments::new()
        .spelled(spelling)
        .logs_in_check(logs_in_check)
        .apply_comment(&view, forge.comment_limit())?;
    for part in &parts {
        forge
            .create_comment(&key.repo().stored(), key.number(), part)
            .await?;
    }
    if let Some(new_plan) = &outcome.new_plan {
        record.plan_id = Some(new_plan.id.clone());
    }
    let failed = outcome.units.iter().any(|u| u.status == UnitStatus::Failed);
    let (status, title, state) = if outcome.complete() {
        (
            CheckStatus::Success,
            format!("cascade: plan {id} applied"),
            PrState::Applied,
        )
    } else if failed {
        // A failure is the headline even when another unit's plan changed too; the new
        // plan, if any, leaves the failed units out.
        let rest = match &outcome.new_plan {
            Some(new_plan) => format!(
                "; fix it, or comment {} for the rest",
                cmd(&format!("apply {}", new_plan.id))
            ),
            None => String::new(),
        };
        (
            CheckStatus::Failure,
            format!("cascade: apply of {id} failed{rest}"),
            PrState::Failed,
        )
    } else if let Some(new_plan) = &outcome.new_plan
        && !outcome.left_out.is_empty()
        && !outcome
            .units
            .iter()
            .any(|u| u.status == UnitStatus::ChangedSinceApproval)
    {
        (
            CheckStatus::ActionRequired,
            format!(
                "cascade: part of plan {id} applied; comment {} for the rest",
                cmd(&format!("apply {}", new_plan.id))
            ),
            PrState::Commented,
        )
    } else if let Some(new_plan) = &outcome.new_plan {
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
    let mut result = CheckOutput::new(status, title, format!("Apply of plan `{id}`."));
    if logs_in_check {
        let failed = outcome
            .units
            .iter()
            .filter(|u| u.status == UnitStatus::Failed)
            .count();
        with_failure_logs(&mut result, &outcome.failure_logs, failed, "failed");
    }
    if forge.kind().check_shows_text() {
        super::verdict::with_step_outputs(
            &mut result,
            outcome.units.iter().map(|u| (&u.path, u.steps.as_slice())),
        );
    }
    ctx.set_check(record, &result).await?;
    ctx.transition(record, state).await?;
    // Consumed, or replaced by the plan of what is left: nothing applies it again.
    if outcome.complete() || outcome.new_plan.is_some() {
        discard_plan_files(bot, key, id).await;
    }
    Ok(None)
}

/// The units `plan` destroys that the default branch's `prevent_destroy` protects, as a
/// refusal; `None` when it destroys none.
fn protected_destroys(plan: &PlanRecord, config: &RepoConfig, branch: &str) -> Option<Refusal> {
    let units: Vec<_> = plan
        .units
        .iter()
        .filter(|u| u.destroy)
        .filter_map(|u| {
            config
                .prevent_destroy
                .protecting(&u.path)
                .map(|why| (u.path.clone(), why))
        })
        .collect();
    (!units.is_empty()).then(|| {
        DestroyRefusal::Protected {
            branch: branch.to_string(),
            units,
            applying: Some(plan.id.clone()),
        }
        .into()
    })
}

/// The units of `plan` that `globs` name, or why they cannot be applied alone: a glob
/// that matches none of its units, or a dependency left out (the refusal says the command
/// with it added). `None`: the whole plan (no globs, or globs that name every unit).
fn subset_of(
    plan: &PlanRecord,
    globs: &[UnitGlob],
    spelling: &crate::forge::Spelling,
) -> Result<Option<BTreeSet<UnitPath>>, Box<Refusal>> {
    if globs.is_empty() {
        return Ok(None);
    }
    let unmatched: Vec<String> = globs
        .iter()
        .filter(|glob| !plan.units.iter().any(|u| glob.matches(&u.path)))
        .map(|glob| glob.to_string())
        .collect();
    if !unmatched.is_empty() {
        return Err(Box::new(Refusal::NoUnitMatched {
            id: plan.id.clone(),
            globs: unmatched,
        }));
    }
    let only: BTreeSet<UnitPath> = plan
        .units
        .iter()
        .filter(|u| globs.iter().any(|glob| glob.matches(&u.path)))
        .map(|u| u.path.clone())
        .collect();
    let missing = crate::engine::missing_dependencies(plan, &only);
    if !missing.is_empty() {
        let mut units: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
        units.extend(missing.iter().map(|u| u.to_string()));
        let instead = spelling.command(&format!("apply {} {}", plan.id, units.join(" ")));
        return Err(Box::new(Refusal::DependenciesLeftOut {
            id: plan.id.clone(),
            missing: missing.into_iter().collect(),
            instead,
        }));
    }
    Ok((only.len() < plan.units.len()).then_some(only))
}

/// The pull request's record and its current plan `id`, or why `id` cannot be acted on:
/// nothing planned, new commits since, or not the current plan (which is named only when
/// this pull request shows it: never an id nobody here reviewed).
pub(super) async fn named_plan(
    ctx: &PrCtx,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Result<(PullRequestRecord, PlanRecord), Refusal>> {
    let (bot, key) = (&ctx.bot, &ctx.key);
    let Some(record) = bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?
    else {
        return Ok(Err(Refusal::NoPlanYet));
    };
    // Merged: the record names the merge commit an apply after merge ran at.
    let head = match (ctx.pr.open, &ctx.pr.merge_commit) {
        (true, _) => ctx.pr.head_sha.as_str(),
        (false, Some(merge)) => merge.as_str(),
        (false, None) => return Ok(Err(Refusal::NoPlanYet)),
    };
    if record.head_sha != head {
        return Ok(Err(Refusal::NewCommits { id: id.clone() }));
    }
    match bot
        .engine
        .current_plan_named(&key.plan_key(), id, config.plan_ttl)
        .await?
    {
        Ok(plan) => Ok(Ok((record, plan))),
        Err(mut not) => {
            if not.current.is_some() && not.current != record.plan_id {
                not.current = None;
            }
            Ok(Err(not.into()))
        }
    }
}

/// The repository's apply requirements (the default: approved, and mergeable), or
/// why they do not hold.
async fn requirements_unmet(
    ctx: &PrCtx,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Option<Refusal>> {
    let requirements = &config.apply_requirements;
    if requirements.contains(&ApplyRequirement::Approved)
        && let Some(refusal) = unapproved(ctx, config, id).await?
    {
        return Ok(Some(refusal));
    }
    if !requirements.contains(&ApplyRequirement::Mergeable) {
        return Ok(None);
    }
    // Still being worked out reads the same as blocked: either way, try again later.
    let id = id.clone();
    // Read from the forge's API, which always says; no hook does.
    let unread = Mergeable::Unknown {
        state: "unknown".into(),
    };
    Ok(match ctx.pr.mergeable.as_ref().unwrap_or(&unread) {
        Mergeable::Yes => None,
        Mergeable::No { state } | Mergeable::Unknown { state } => Some(Refusal::NotMergeable {
            id,
            state: state.clone(),
        }),
        Mergeable::Blocked { why } => Some(Refusal::MergeBlocked {
            id,
            why: why.clone(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(units: &[(&str, bool)]) -> PlanRecord {
        let units = units
            .iter()
            .map(|(path, destroy)| {
                serde_json::from_value(serde_json::json!({
                    "path": path, "wave": 1, "destroy": destroy, "deps": [],
                    "tool": "terraform", "status": "planned", "detail": "", "summary": null,
                }))
                .unwrap()
            })
            .collect();
        PlanRecord::sample(PlanId::parse("3f9a2c1b7d4e").unwrap(), units)
    }

    #[test]
    fn a_plan_destroying_a_protected_unit_is_refused_whoever_made_it() {
        let config = RepoConfig::parse("prevent_destroy:\n  - prod/*\n").unwrap();
        // A change to a protected unit is no destroy.
        assert!(protected_destroys(&plan(&[("prod/dns", false)]), &config, "main").is_none());
        let refusal = protected_destroys(
            &plan(&[("dev/dns", true), ("prod/dns", true), ("prod/app", false)]),
            &config,
            "main",
        )
        .expect("prod/dns is protected");
        match refusal {
            Refusal::Destroy(DestroyRefusal::Protected {
                branch,
                units,
                applying,
            }) => {
                assert_eq!(branch, "main");
                assert_eq!(applying.unwrap().as_str(), "3f9a2c1b7d4e");
                let named: Vec<(&str, u64)> = units
                    .iter()
                    .map(|(u, why)| (u.as_str(), why.line))
                    .collect();
                assert_eq!(named, [("prod/dns", 2)]);
            }
            other => panic!("{other:?}"),
        }
    }
}
