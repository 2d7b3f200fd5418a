//! Planning a pull request's head (and the check that says whether anything waits for
//! review), forgetting a closed one, and planning again the pull requests that waited
//! for the locks a pull request releases.

use super::config_report::{ReadAt, invalid_config};
use super::ctx::PrCtx;
use super::destroy::DestroyAsk;
use super::discover::{self, Discovered, Interrupted};
use super::policies::{compile_default, policy_edits, pull_request_facts};
use super::refusal::{PolicyRefusal, Refusal};
use super::rules::refuse_base;
use super::verdict::{plan_check, with_failure_logs, with_step_outputs};
use super::{Bot, WorkKey};
use crate::command::UnitGlob;
use crate::comment::plan_view;
use crate::comment::{Comments, Problem};
use crate::config::RepoConfig;
use crate::exec::sandbox::SandboxState;
use crate::forge::{CheckOutput, CheckStatus, CloneUrl, Forge, PullRequest};
use crate::inert::fenced;
use crate::plan::PlanId;
use crate::store::{BotStore, PlanStatus, PrState, PullRequestRecord, RunStore};
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The check and comment of a server that has no working sandbox: it runs
/// nobody's code, and says who can change that.
fn no_sandbox(why: &str, spelling: &crate::forge::Spelling) -> (CheckOutput, String) {
    let body = Refusal::NoSandbox {
        why: why.to_string(),
    }
    .message(spelling);
    let check = CheckOutput::new(
        CheckStatus::Failure,
        "cascade: no sandbox on the server",
        format!("The server has no working sandbox ({why}), so nothing was planned."),
    );
    (check, body)
}

fn record_for(
    bot: &Bot,
    key: &WorkKey,
    pr: &PullRequest,
    existing: Option<PullRequestRecord>,
) -> PullRequestRecord {
    let same_head = existing
        .as_ref()
        .is_some_and(|r| r.head_sha == pr.head_sha.as_str());
    let mut record = existing.unwrap_or(PullRequestRecord {
        repo: key.repo().stored(),
        number: key.number(),
        installation_id: pr.forge.id(),
        head_sha: pr.head_sha.to_string(),
        base_sha: pr.base_sha_text().to_string(),
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
    record.installation_id = pr.forge.id();
    record.head_sha = pr.head_sha.to_string();
    // A hook that did not say the base leaves the stored one.
    if let Some(base) = &pr.base_sha {
        record.base_sha = base.to_string();
    }
    record.updated_at = bot.now();
    record
}

/// The pull request as its forge has it now.
pub async fn current_pr(forge: &Forge, key: &WorkKey) -> anyhow::Result<PullRequest> {
    forge
        .change_request(&key.repo().stored(), key.number())
        .await
}

/// Brings the repository's branches into the mirror, and for a fork the head too: a
/// fork's commits are in the base repository only under the forge's own ref for it
/// (`refs/pull/<n>/head` on GitHub). `from` is the clone URL the forge's API answered
/// (`DefaultBranch::clone_url`), never one a webhook named.
pub(super) async fn fetch_pull_request(ctx: &PrCtx, from: &CloneUrl) -> anyhow::Result<()> {
    let (bot, forge, key) = (&ctx.bot, &ctx.forge, &ctx.key);
    let credential = forge.git_credential().await?;
    let mut refspecs = vec!["+refs/heads/*:refs/heads/*".to_string()];
    if ctx.pr.fork {
        let head = forge.fork_head_ref(key.number());
        refspecs.push(format!("+{head}:{head}"));
    }
    bot.workspaces
        .fetch(&key.repo().stored(), from, Some(&credential), &refspecs)
        .await?;
    Ok(())
}

/// Plans the head of a pull request (all affected units, or those the globs `only` match
/// and their dependents) and posts the plan comment and the check run.
/// A glob of `only` that plans nothing is refused (returned, for the comment's one reply),
/// and nothing is planned.
pub async fn plan_pull_request(
    ctx: &PrCtx,
    only: Option<&[UnitGlob]>,
    cancel: CancellationToken,
) -> anyhow::Result<Option<Refusal>> {
    let mut refused = None;
    plan_head(ctx, only, None, cancel, &mut refused).await?;
    Ok(refused)
}

/// `/destroy unit…`: plans a destroy of the units `ask` names at the head (see
/// `super::destroy`) and posts it as the pull request's plan, or returns why not.
pub async fn plan_destroy(ctx: &PrCtx, ask: DestroyAsk) -> anyhow::Result<Option<Refusal>> {
    let mut refused = None;
    plan_head(ctx, None, Some(ask), CancellationToken::new(), &mut refused).await?;
    Ok(refused)
}

/// Plans the head: what the pull request affects (or `only` and their dependents), or
/// the destroy `destroy` asks for; a refusal of either before anything ran goes to
/// `refused`.
async fn plan_head(
    ctx: &PrCtx,
    only: Option<&[UnitGlob]>,
    destroy: Option<DestroyAsk>,
    cancel: CancellationToken,
    refused: &mut Option<Refusal>,
) -> anyhow::Result<()> {
    let (bot, key, pr, forge, spelling) = (&ctx.bot, &ctx.key, &ctx.pr, &ctx.forge, ctx.spelling);
    let existing = bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?;
    let mut record = record_for(bot, key, pr, existing);
    if pr.fork && !bot.allow_forks {
        ctx.transition(&mut record, PrState::Failed).await?;
        bot.store
            .set_waiting(&key.repo().stored(), key.number(), &[])
            .await?;
        return ctx.reply(&Refusal::ForkNotPlanned.message(spelling)).await;
    }
    if let SandboxState::Refusing { why } = bot.sandbox().state() {
        let (check, body) = no_sandbox(why, spelling);
        return nothing_planned(ctx, &mut record, &check, &body).await;
    }
    // The rules are the default branch's: neither the head nor a base its author picked
    // can change them (the branch from the API, with the clone URL the fetch uses).
    let default = forge.default_branch(&key.repo().stored()).await?;
    fetch_pull_request(ctx, &default.clone_url).await?;
    let checkout = bot
        .workspaces
        .checkout(&key.repo().stored(), key.number(), pr.head_sha.as_str())
        .await?;
    // From here on the work reads what a writer wrote: off the runtime, within a deadline.
    let (workspaces, repo, rules_sha) = (
        bot.workspaces.clone(),
        key.repo().stored(),
        default.sha.clone(),
    );
    let read_config = move |_| -> anyhow::Result<Result<RepoConfig, crate::problem::Problem>> {
        Ok(match workspaces.config_at(&repo, &rules_sha)? {
            None => Ok(RepoConfig::default()),
            Some(text) => RepoConfig::parse(&text),
        })
    };
    let config = match bot.discovery.run(&cancel, read_config).await {
        Err(stop) => return interrupted(ctx, &mut record, stop).await,
        Ok(read) => match read? {
            Ok(config) => config,
            Err(problem) => {
                let at = ReadAt {
                    branch: &default.name,
                    sha: &default.sha,
                    web_url: pr.web_url.as_deref(),
                };
                let (check, body) = invalid_config(&problem, &at, forge.kind());
                return nothing_planned(ctx, &mut record, &check, &body).await;
            }
        },
    };
    if let Some(rule) = refuse_base(&config, &default.name, &pr.base_ref) {
        // A plan made before the base changed must not be applied under it either.
        release_and_discard(bot, key).await?;
        let why = Refusal::BaseNotPlanned(rule).message(spelling);
        let check = CheckOutput::new(
            CheckStatus::Failure,
            "cascade: base branch not planned",
            why.clone(),
        );
        return nothing_planned(ctx, &mut record, &check, &why).await;
    }
    // A command (`/plan`) plans whatever the configuration says about events.
    if only.is_none() && destroy.is_none() && ((pr.draft && !config.drafts) || !config.autoplan) {
        tracing::info!(pr = %key, draft = pr.draft, "not planned on this event (draft, or autoplan is off)");
        return Ok(());
    }
    // A destroy may yet be refused, leaving the pull request as it was.
    if destroy.is_none() {
        ctx.transition(&mut record, PrState::Discovering).await?;
    }
    // The default branch's policies, as its `.cascade.yaml`: never the head's own.
    let checks = match compile_default(ctx, &config, &default.sha).await? {
        Ok(checks) => checks,
        Err(problem) => {
            let why = Refusal::from(PolicyRefusal::SetsUnusable {
                branch: default.name.clone(),
                problem,
                applying: None,
            })
            .message(spelling);
            let check = CheckOutput::new(
                CheckStatus::Failure,
                "cascade: the default branch's policies cannot be used",
                why.clone(),
            );
            return nothing_planned(ctx, &mut record, &check, &why).await;
        }
    };
    let rules = crate::engine::RunRules::from(&config)
        .for_pull_request(key.number())
        .with_policies(checks);
    let policy_config = (!config.policies.is_empty()).then(|| config.clone());
    let merge_config = config.apply.any_on_merge().then(|| config.clone());
    let catalog = bot.catalog(forge.git_credential().await?);
    let destroying = destroy.is_some();
    let mut input = discover::input(ctx, checkout.clone(), config, only, catalog);
    input.destroy = destroy;
    let (mut plan_targets, unresolved, merge_base, sources, changed_files) = match bot
        .discovery
        .run(&cancel, move |deadline| discover::discover(input, deadline))
        .await
    {
        Err(stop) => return interrupted(ctx, &mut record, stop).await,
        Ok(found) => match found? {
            Discovered::Refused(refusal) => {
                *refused = Some(refusal);
                return Ok(());
            }
            Discovered::Cycle(cycle) => {
                // It names units, whose paths the pull request chose: in a block they
                // cannot close.
                let cycle = fenced(&cycle.to_string(), "");
                let body =
                    format!("The unit graph has a cycle, so nothing was planned:\n\n{cycle}");
                let check =
                    CheckOutput::new(CheckStatus::Failure, "cascade: dependency cycle", cycle);
                return nothing_planned(ctx, &mut record, &check, &body).await;
            }
            Discovered::Targets {
                targets,
                unresolved,
                merge_base,
                sources,
                changed_files,
            } => (targets, unresolved, merge_base, sources, changed_files),
        },
    };
    // Units another pull request holds are not planned here; the comment names the holder.
    let wanted: Vec<UnitPath> = plan_targets.iter().map(|t| t.path.clone()).collect();
    let held = bot
        .store
        .take_locks(&key.repo().stored(), key.number(), &wanted)
        .await?;
    // Stored, not remembered: whoever releases these locks (even after a restart) finds
    // this pull request waiting and plans it again.
    let holders: BTreeSet<u64> = held.iter().map(|l| l.pr).collect();
    let holders: Vec<u64> = holders.into_iter().collect();
    bot.store
        .set_waiting(&key.repo().stored(), key.number(), &holders)
        .await?;
    let held_units: BTreeSet<&UnitPath> = held.iter().map(|l| &l.unit).collect();
    plan_targets.retain(|t| !held_units.contains(&t.path));
    for t in &mut plan_targets {
        t.deps.retain(|d| !held_units.contains(d));
    }

    // What policies are told of the pull request, read only when there are policies.
    let (rules, policy_edits) = match &policy_config {
        Some(config) => (
            rules.with_pull_request_facts(pull_request_facts(ctx, config, &changed_files).await),
            policy_edits(config, &changed_files),
        ),
        None => (rules, Vec::new()),
    };
    record.state = PrState::Planning;
    let planning = CheckOutput::new(
        CheckStatus::InProgress,
        "cascade is planning",
        "Planning the affected units in dependency order.",
    );
    ctx.set_check(&mut record, &planning).await?;
    ctx.save(&record).await?;
    let outcome = bot
        .engine
        .plan(
            &key.plan_key(),
            pr.head_sha.as_str(),
            &merge_base,
            plan_targets,
            rules,
            cancel.clone(),
            |_| {},
        )
        .await?;
    if cancel.is_cancelled() {
        tracing::info!(pr = %key, "plan superseded by a newer push");
        return Ok(());
    }
    let mut view = plan_view(&outcome.plan, &unresolved);
    view.destroy_command = destroying;
    view.sources = sources;
    view.policy_edits = policy_edits;
    if let Some(config) = &merge_config {
        view.merge_mode = super::on_merge::merge_mode(config, &outcome.plan);
    }
    if !view.policies.is_empty() {
        // Approvals are bound to the plan id: a plan made again with the same id keeps them.
        let approvals = bot
            .store
            .policy_approvals(&key.plan_key(), &outcome.plan.id)
            .await?;
        view.policies = crate::comment::plan_policy_views(&outcome.plan, &approvals);
    }
    view.locked = held
        .iter()
        .map(|l| Problem {
            unit: l.unit.to_string(),
            reason: format!(
                "locked by {}{}: merge or close it, or comment {} there",
                spelling.ref_sigil,
                l.pr,
                spelling.command("unlock")
            ),
            retried: 0,
        })
        .collect();
    // Failed units' logs go in the check where it can show them; the comment points there.
    let logs_in_check = forge.kind().check_shows_text() && !outcome.failure_logs.is_empty();
    let parts = Comments::new()
        .spelled(spelling)
        .logs_in_check(logs_in_check)
        .plan_comment(&view, forge.comment_limit())?;
    ctx.upsert_comment(&mut record, &parts).await?;
    let mut verdict = plan_check(&outcome.plan, &view, &held, &unresolved, spelling);
    if let Some(config) = &merge_config {
        verdict =
            super::on_merge::merge_check(ctx, config, &outcome.plan, &view.merge_mode, verdict)
                .await?;
    }
    if logs_in_check {
        with_failure_logs(
            &mut verdict,
            &outcome.failure_logs,
            view.failed.len(),
            "failed to plan",
        );
    }
    if forge.kind().check_shows_text() {
        with_step_outputs(
            &mut verdict,
            outcome
                .plan
                .units
                .iter()
                .map(|u| (&u.path, u.steps.as_slice())),
        );
    }
    ctx.set_check(&mut record, &verdict).await?;
    let previous = record.plan_id.replace(outcome.plan.id.clone());
    ctx.transition(&mut record, PrState::Commented).await?;
    if let Some(old) = previous.filter(|old| *old != outcome.plan.id) {
        discard_plan_files(bot, key, &old).await;
    }
    Ok(())
}

/// Deletes a plan's saved plan files (they hold sensitive values) once it can no
/// longer be applied. A failure is logged: it must not fail the work that replaced it.
pub async fn discard_plan_files(bot: &Bot, key: &WorkKey, id: &PlanId) {
    if let Err(e) = bot.engine.discard_plan_files(&key.plan_key(), id).await {
        tracing::error!(pr = %key, plan = %id, error = format!("{e:#}"), "cannot delete saved plan files");
    }
}

/// Nothing could be planned, for a reason the pull request's authors can fix:
/// a failed check and the cascade comment saying why and what to do.
async fn nothing_planned(
    ctx: &PrCtx,
    record: &mut PullRequestRecord,
    failed: &CheckOutput,
    body: &str,
) -> anyhow::Result<()> {
    // Failing for its own reasons, it waits for nobody's locks.
    let key = &ctx.key;
    ctx.bot
        .store
        .set_waiting(&key.repo().stored(), key.number(), &[])
        .await?;
    ctx.set_check(record, failed).await?;
    let body = format!("{}\n{body}", crate::comment::PLAN_MARKER);
    ctx.upsert_comment(record, &[body]).await?;
    ctx.transition(record, PrState::Failed).await
}

/// Discovery gave no result: past its deadline (the pull request is told),
/// superseded (nothing to say), or panicked (an internal error).
async fn interrupted(
    ctx: &PrCtx,
    record: &mut PullRequestRecord,
    stop: Interrupted,
) -> anyhow::Result<()> {
    let key = &ctx.key;
    match stop {
        Interrupted::Superseded => {
            tracing::info!(pr = %key, "discovery superseded by a newer push");
            Ok(())
        }
        Interrupted::Panicked(_) => Err(stop.into()),
        Interrupted::TimedOut(limit) => {
            // Whole seconds from the flag print as `60`; shorter limits as `0.5`.
            let secs = limit.as_secs_f64();
            tracing::warn!(pr = %key, limit_secs = secs, "discovery timed out");
            let spelling = ctx.spelling;
            let body = format!(
                "Discovering this {}'s units took longer than {secs} s, so nothing was planned. \
                 Simplify the Terragrunt configuration it changes (large `for` expressions or `range()`s, \
                 long chains of `read_terragrunt_config` or includes), or ask whoever runs cascade to raise \
                 `--discovery-timeout`; then push again or comment `{}`.",
                spelling.change_request,
                spelling.command("plan"),
            );
            let failed = CheckOutput::new(
                CheckStatus::Failure,
                format!("cascade: discovery took longer than {secs} s"),
                format!(
                    "Discovery took longer than {secs} s; simplify the configuration or raise --discovery-timeout."
                ),
            );
            nothing_planned(ctx, record, &failed, &body).await
        }
    }
}

/// Merged or closed: locks released (and the pull requests waiting for them planned
/// again), workspace forgotten, plan dead and its saved plan files deleted.
pub async fn close_pull_request(
    bot: &Arc<Bot>,
    key: &WorkKey,
    pr: &PullRequest,
) -> anyhow::Result<()> {
    bot.store
        .set_waiting(&key.repo().stored(), key.number(), &[])
        .await?;
    release_and_discard(bot, key).await?;
    bot.workspaces
        .forget(&key.repo().stored(), key.number())
        .await?;
    let existing = bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?;
    let mut record = record_for(bot, key, pr, existing);
    record.state = PrState::Closed;
    bot.store.save_pull_request(&record).await
}

/// Releases the pull request's locks, wakes the pull requests that waited for them,
/// and discards its plan (superseded, its saved plan files deleted). Returns how many
/// locks were released.
pub async fn release_and_discard(bot: &Arc<Bot>, key: &WorkKey) -> anyhow::Result<u64> {
    let released = bot
        .store
        .release_locks(&key.repo().stored(), key.number())
        .await?;
    let plan_key = key.plan_key();
    if let Some(plan) = bot.store.current_plan(&plan_key).await? {
        bot.store
            .set_plan_status(&plan_key, &plan.id, PlanStatus::Superseded)
            .await?;
        discard_plan_files(bot, key, &plan.id).await;
    }
    bot.wake_waiters(&key.repo().stored(), key.number()).await?;
    Ok(released)
}
