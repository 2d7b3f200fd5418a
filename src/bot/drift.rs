//! Drift on a schedule: each repository whose default branch's `.cascade.yaml`
//! has `drift:` is planned on that schedule, and ONE issue per repository lists
//! the units whose real infrastructure differs from the code, with the
//! attribute-level diff and an `/apply <id>` line; it is closed once a later run
//! finds nothing. Commands on that issue: `/apply <id>` (the drift plan, with the
//! rules of a pull request: write permission, each unit planned again and
//! applied only if unchanged, locks respected), `/plan` (check again now),
//! `/help`.
//!
//! Scheduling is level-based and replica-safe: every tick, each replica adds a
//! schedule for repositories it has not seen and claims due ones in the store
//! (one replica gets each), then runs each as a job under the repository's
//! drift key, [`WorkKey::Drift`], one at a time like a pull request's jobs. A
//! drift run takes the locks of the units it plans only for as long as it
//! runs; a unit a pull request holds is not planned and is reported as locked.
//! Errors are logged and counted, never posted as a comment on an issue.

use super::access::refuse_command;
use super::jobs::{PrComment, PrJob};
use super::refusal::{DestroyRefusal, PolicyRefusal, Refusal};
use super::{Bot, WorkKey};
use crate::command::{Command, read_comment};
use crate::comment::Comments;
use crate::comment::apply_view;
use crate::config::RepoConfig;
use crate::config::drift::{DriftConfig, DriftSchedule};
use crate::drift::{DriftReport, units_to_check};
use crate::engine::head_targets;
use crate::forge::{Actor, DefaultBranch, Forge, ForgeRef, RepoKey};
use crate::plan::PlanId;
use crate::store::{BotStore, PlanRecord, PlannedUnit, RunStore};
use crate::unit::UnitPath;
use anyhow::Context;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A repository without drift (no `drift:`, off, or an unreadable configuration)
/// is looked at again this much later, in case that changed.
const RECHECK_OFF: i64 = 3600;
/// A drift run that failed (a forge or git error) is tried again this much later.
const RETRY_FAILED: i64 = 15 * 60;
/// Schedules one tick claims at most: more wait for the next tick or another replica.
const CLAIM_LIMIT: u32 = 8;
/// The marker the drift issue's body starts with.
const MARKER: &str = "<!-- cascade:drift -->";

/// What one look at a repository found.
enum Looked {
    /// No drift configured (or turned off, or the configuration is unreadable).
    Off,
    /// Not due yet: due at this time.
    NotDue(i64),
    /// Planned: the next run is due at this time.
    Checked { next: i64 },
}

impl Bot {
    /// Starts the drift scheduler: every `every`, until the server stops.
    pub(super) fn start_drift_schedule(
        self: &Arc<Self>,
        every: Duration,
        shutdown: CancellationToken,
    ) {
        let bot = self.clone();
        tokio::spawn(async move {
            // The first look one tick after start: a starting server first resumes
            // the deliveries and runs it was given.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = shutdown.cancelled() => return,
                    _ = bot.kill.cancelled() => return,
                }
                if let Err(e) = bot.drift_tick().await {
                    tracing::warn!(error = %format!("{e:#}"), "cannot look for due drift runs; the database may be unreachable");
                }
            }
        });
    }

    /// One tick: schedules for newly seen repositories, then the due ones claimed
    /// here, each queued as its repository's drift job.
    async fn drift_tick(self: &Arc<Self>) -> anyhow::Result<()> {
        let now = self.now();
        self.store.seed_drift(now).await?;
        let due = self
            .store
            .claim_due_drift(self.replica_id(), now, self.claim_until(), CLAIM_LIMIT)
            .await?;
        for schedule in due {
            self.replica.hold_drift(&schedule.repo, true);
            let forge = ForgeRef::stored(&schedule.repo, schedule.forge_id);
            self.send(
                WorkKey::Drift {
                    repo: RepoKey::from_stored(&schedule.repo),
                },
                None,
                PrJob::Drift {
                    forge,
                    claimed: true,
                },
            );
        }
        Ok(())
    }
}

/// A drift job: looks at the repository (running drift when due) and, when the
/// schedule fired here, gives its claim back with the next due time.
pub(super) async fn drift_job(
    bot: &Arc<Bot>,
    key: &WorkKey,
    forge: ForgeRef,
    claimed: bool,
) -> anyhow::Result<()> {
    let looked = look(bot, key, forge, false).await;
    let now = bot.now();
    let next = match &looked {
        Ok(Looked::Off) => now + RECHECK_OFF,
        Ok(Looked::NotDue(at)) => *at,
        Ok(Looked::Checked { next }) => *next,
        Err(e) => {
            tracing::error!(repo = %key.repo().stored(), error = %format!("{e:#}"), "drift run failed; trying again later");
            metrics::counter!("cascade_drift_failures_total").increment(1);
            now + RETRY_FAILED
        }
    };
    if claimed {
        bot.replica.hold_drift(&key.repo().stored(), false);
        bot.store
            .release_drift(&key.repo().stored(), bot.replica_id(), next)
            .await?;
    }
    Ok(())
}

/// The default branch, fetched, and its configuration.
async fn default_branch(
    bot: &Arc<Bot>,
    forge: &Forge,
    repo: &str,
) -> anyhow::Result<(DefaultBranch, Result<RepoConfig, String>)> {
    let branch = forge.default_branch(repo).await?;
    let credential = forge.git_credential().await?;
    bot.workspaces
        .fetch(
            repo,
            &branch.clone_url,
            Some(&credential),
            &["+refs/heads/*:refs/heads/*".to_string()],
        )
        .await?;
    let (workspaces, repo, sha) = (bot.workspaces.clone(), repo.to_string(), branch.sha.clone());
    let text = tokio::task::spawn_blocking(move || workspaces.config_at(&repo, &sha))
        .await
        .context("reading .cascade.yaml stopped")??;
    let config = match text {
        None => Ok(RepoConfig::default()),
        Some(text) => RepoConfig::parse(&text).map_err(|p| p.to_string()),
    };
    Ok((branch, config))
}

/// When a run is due: after the last run as the schedule says; never run, an
/// interval at once and a cron expression at its first time after the schedule
/// was made (`scheduled`, the row's due time).
fn due_at(schedule: &DriftSchedule, last_run: Option<i64>, scheduled: i64, now: i64) -> i64 {
    match (schedule, last_run) {
        (_, Some(last)) => schedule.next_after(Some(last), now),
        (DriftSchedule::Every(_), None) => now,
        (DriftSchedule::Cron(_), None) => schedule.next_after(Some(scheduled - 1), now),
    }
}

/// Looks at `key`'s repository and runs drift when due (always when `forced`).
async fn look(bot: &Arc<Bot>, key: &WorkKey, at: ForgeRef, forced: bool) -> anyhow::Result<Looked> {
    if !super::owners::drift_allowed(bot, &key.repo().stored()) {
        return Ok(Looked::Off);
    }
    let forge = bot.forges.open(at).await?;
    let (branch, config) = default_branch(bot, &forge, &key.repo().stored()).await?;
    let config = match config {
        Ok(config) => config,
        Err(problem) => {
            tracing::warn!(repo = %key.repo().stored(), %problem, "drift not run: the default branch's .cascade.yaml is invalid");
            return Ok(Looked::Off);
        }
    };
    let Some(drift) = config.drift.clone().filter(|d| d.enabled) else {
        return Ok(Looked::Off);
    };
    let record = bot.store.drift_schedule(&key.repo().stored()).await?;
    let now = bot.now();
    if !forced {
        let last = record.as_ref().and_then(|r| r.last_run_at);
        let scheduled = record.as_ref().map_or(now, |r| r.next_at);
        let due = due_at(&drift.schedule, last, scheduled, now);
        if due > now {
            return Ok(Looked::NotDue(due));
        }
    }
    run(bot, &forge, key, at, &branch, &config, &drift).await?;
    Ok(Looked::Checked {
        next: drift.schedule.next_after(Some(bot.now()), bot.now()),
    })
}

/// Plans the default branch's units and keeps the drift issue up to date.
async fn run(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    at: ForgeRef,
    branch: &DefaultBranch,
    config: &RepoConfig,
    drift: &DriftConfig,
) -> anyhow::Result<()> {
    let repo = &key.repo().stored();
    if let crate::exec::sandbox::SandboxState::Refusing { why } = bot.sandbox().state() {
        anyhow::bail!("the server has no working sandbox ({why}); drift is not checked");
    }
    metrics::counter!("cascade_runs_total", "kind" => "drift").increment(1);
    let checkout = bot
        .workspaces
        .checkout(repo, key.number(), &branch.sha)
        .await?;
    let cancel = CancellationToken::new();
    let what = format!("{} of {repo}", branch.name);
    let scan = super::discover::scan_tree(bot, forge, &checkout, config, &cancel, &what).await?;
    if scan
        .problems
        .iter()
        .any(|p| p.kind == crate::problem::ProblemKind::Cycle)
    {
        anyhow::bail!(
            "the unit graph of {} has a cycle; drift is not checked",
            branch.name
        );
    }
    let wanted: Vec<UnitPath> = units_to_check(&scan, |u| drift.covers(u.as_str()))
        .into_iter()
        .collect();
    // The locks of what it plans, for as long as it runs; what a pull request holds
    // is left alone and reported.
    let held = bot.store.take_locks(repo, key.number(), &wanted).await?;
    let locked: BTreeMap<UnitPath, u64> = held.into_iter().map(|l| (l.unit, l.pr)).collect();
    let planned = wanted
        .into_iter()
        .filter(|u| !locked.contains_key(u))
        .collect();
    let targets = head_targets(&scan.discovery, &scan.graph, &checkout, &planned);
    let outcome = bot
        .engine
        .plan(
            &key.plan_key(),
            &branch.sha,
            &branch.sha,
            targets,
            crate::engine::RunRules::from(config),
            cancel,
            |_| {},
        )
        .await;
    bot.store.release_locks(repo, key.number()).await?;
    let outcome = outcome?;
    let report = DriftReport::of_plan(&outcome.plan);
    let issue = publish(
        bot,
        forge,
        key,
        branch,
        drift,
        &report,
        &outcome.plan,
        &locked,
    )
    .await?;
    let now = bot.now();
    bot.store
        .record_drift_run(repo, at.id(), now, issue, report.drifted.len() as u64)
        .await?;
    drift_gauges(bot, repo, report.drifted.len() as u64, now);
    tracing::info!(repo = %repo, drifted = report.drifted.len(), failed = report.failed.len(), "drift checked");
    Ok(())
}

/// Sets the drift gauges after a run of `repo`: per repository with
/// `--metrics-repo-labels`; otherwise totals over the repositories this replica checked
/// (`cascade_drifted_units`, `cascade_drifted_repositories`) and the last run's time, so
/// `/metrics` names no repository.
fn drift_gauges(bot: &Bot, repo: &str, drifted: u64, now: i64) {
    if bot.metrics_repo_labels {
        let repo = repo.to_string();
        metrics::gauge!("cascade_drifted_units", "repo" => repo.clone()).set(drifted as f64);
        metrics::gauge!("cascade_drift_last_run_timestamp_seconds", "repo" => repo).set(now as f64);
        return;
    }
    let (units, repos) = {
        let mut known = bot.drifted_units.lock().unwrap_or_else(|p| p.into_inner());
        known.insert(repo.to_string(), drifted);
        let units: u64 = known.values().sum();
        (units, known.values().filter(|n| **n > 0).count())
    };
    metrics::gauge!("cascade_drifted_units").set(units as f64);
    metrics::gauge!("cascade_drifted_repositories").set(repos as f64);
    metrics::gauge!("cascade_drift_last_run_timestamp_seconds").set(now as f64);
}

/// Opens, updates, reopens or closes the drift issue; answers its number.
#[allow(clippy::too_many_arguments)]
async fn publish(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    branch: &DefaultBranch,
    drift: &DriftConfig,
    report: &DriftReport,
    plan: &PlanRecord,
    locked: &BTreeMap<UnitPath, u64>,
) -> anyhow::Result<Option<u64>> {
    let repo = &key.repo().stored();
    let known = bot
        .store
        .drift_schedule(repo)
        .await?
        .and_then(|r| r.issue_number);
    let existing = match known {
        Some(n) => forge.issue_open(repo, n).await?.map(|open| (n, open)),
        None => None,
    };
    if report.drifted.is_empty() && report.failed.is_empty() {
        if let Some((n, true)) = existing {
            let body = format!(
                "No drift on {} at `{}`: every unit checked matches the code. Closing.",
                crate::inert::code(&branch.name),
                short(&branch.sha)
            );
            forge.comment_on_issue(repo, n, &body).await?;
            forge.set_issue_open(repo, n, false).await?;
        }
        return Ok(known);
    }
    let title = format!("cascade: drift on {}", branch.name);
    let spelling = forge.spelling();
    let mut body = issue_body(branch, drift, report, plan, locked, spelling, true);
    if body.chars().count() > forge.comment_limit() {
        // Too long with every diff: the units and their counts only.
        body = issue_body(branch, drift, report, plan, locked, spelling, false);
    }
    Ok(Some(match existing {
        Some((n, open)) => {
            forge.edit_issue(repo, n, &title, &body).await?;
            if !open {
                forge.set_issue_open(repo, n, true).await?;
            }
            n
        }
        None => forge.create_issue(repo, &title, &body).await?,
    }))
}

/// The most step output the drift issue shows (its body has GitHub's 65,536 characters).
const DRIFT_STEPS: usize = 16 << 10;

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

/// The drift issue's text: what differs, what was not checked, and what to do.
fn issue_body(
    branch: &DefaultBranch,
    drift: &DriftConfig,
    report: &DriftReport,
    plan: &PlanRecord,
    locked: &BTreeMap<UnitPath, u64>,
    spelling: &crate::forge::Spelling,
    diffs: bool,
) -> String {
    use crate::inert::code;
    let mut shown = DriftReport {
        drifted: Vec::new(),
        clean: report.clean.clone(),
        failed: Vec::new(),
    };
    for unit in &report.drifted {
        shown.drifted.push(crate::drift::DriftedUnit {
            path: unit.path.clone(),
            counts: unit.counts,
            fingerprint: unit.fingerprint.clone(),
            rendered: if diffs { unit.rendered.clone() } else { None },
        });
    }
    for unit in &report.failed {
        shown.failed.push(crate::drift::FailedUnit {
            path: unit.path.clone(),
            reason: unit.reason.clone(),
        });
    }
    let mut out = format!(
        "{MARKER}\nThe real infrastructure of these units differs from the code on {} at `{}` \
         (drift schedule {}).\n\n",
        code(&branch.name),
        short(&branch.sha),
        code(&drift.schedule_text)
    );
    out.push_str(&shown.markdown());
    // The plan-phase workflow steps that show (`visible_on`), bounded like a comment's.
    let steps: Vec<crate::comment::UnitSteps> = plan
        .units
        .iter()
        .filter_map(|u| crate::comment::unit_steps(u.path.as_str(), &u.steps))
        .collect();
    if !steps.is_empty() {
        out.push('\n');
        out.push_str(&crate::comment::steps_markdown(&steps, DRIFT_STEPS));
    }
    if !locked.is_empty() {
        out.push_str("\n**Not checked** (locked by a pull request):");
        for (unit, pr) in locked {
            out.push_str(&format!(
                " {} ({}{pr})",
                code(unit.as_str()),
                spelling.ref_sigil
            ));
        }
        out.push('\n');
    }
    out.push('\n');
    if report.failed.is_empty() {
        out.push_str(&format!(
            "To make the drifted units match the code again, comment `{}` (each unit is \
             planned again first and applied only if its plan is unchanged). ",
            spelling.command(&format!("apply {}", plan.id))
        ));
    } else {
        out.push_str("Some units could not be planned, so this plan cannot be applied. ");
    }
    out.push_str(&format!(
        "To check again now, comment `{}`.\n",
        spelling.command("plan")
    ));
    out
}

/// A new comment on an issue of `key`'s repository: acted on only on its drift issue.
pub(super) async fn drift_comment(
    bot: &Arc<Bot>,
    key: &WorkKey,
    issue: u64,
    comment: &PrComment,
) -> anyhow::Result<()> {
    if comment.author_is_bot {
        return Ok(());
    }
    let spelling = comment.forge.kind().spelling();
    let read = read_comment(&comment.body, spelling);
    if read.commands.is_empty() {
        return Ok(());
    }
    let record = bot.store.drift_schedule(&key.repo().stored()).await?;
    if record.and_then(|r| r.issue_number) != Some(issue) {
        // Any other issue: not cascade's, and no request is made for it.
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
    forge
        .acknowledge_issue_comment(&key.repo().stored(), issue, comment.comment_id)
        .await?;
    let result = drift_commands(
        bot,
        &forge,
        key,
        issue,
        &actor,
        comment.forge,
        read.commands,
    )
    .await;
    if let Err(e) = &result {
        tracing::error!(repo = %key.repo().stored(), error = %format!("{e:#}"), "a drift issue command failed");
        answer(
            bot,
            &forge,
            key,
            issue,
            "cascade could not finish this command (an internal error; the details are in \
             the server's log). Try again later.",
        )
        .await?;
    }
    Ok(())
}

/// A reply on the drift issue (a refusal, help, what went wrong): counted against the
/// repository's drift reply limit like replies on a pull request, so one commenter
/// cannot spend the App's write budget.
async fn answer(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    issue: u64,
    text: &str,
) -> anyhow::Result<()> {
    match super::publish::limited(bot, forge, key, text) {
        Some(text) => forge
            .comment_on_issue(&key.repo().stored(), issue, &text)
            .await
            .map(|_| ()),
        None => Ok(()),
    }
}

async fn drift_commands(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    issue: u64,
    actor: &Actor,
    at: ForgeRef,
    commands: Vec<Command>,
) -> anyhow::Result<()> {
    let spelling = forge.spelling();
    // The default branch and its configuration, read once, and only for a command from
    // someone with write permission: a reader's comment costs no fetch.
    let mut read: Option<(DefaultBranch, RepoConfig)> = None;
    for command in commands {
        let shown = match &command {
            Command::Help => {
                let text = format!(
                    "On this drift issue: `{}` makes the drifted units match the code again, \
                     `{}` checks for drift now.",
                    spelling.command("apply <id>"),
                    spelling.command("plan")
                );
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::Unlock => {
                let text = Refusal::UnlockOnDriftIssue.message(spelling);
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::ChangeState { .. } => {
                let text =
                    Refusal::from(super::refusal::StateRefusal::OnDriftIssue).message(spelling);
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::Destroy { .. } => {
                let text = Refusal::from(DestroyRefusal::OnDriftIssue).message(spelling);
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::ApprovePolicies { .. } => {
                let text = Refusal::from(PolicyRefusal::OnDriftIssue).message(spelling);
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::Apply { units, .. } if !units.is_empty() => {
                let text = Refusal::SubsetOnDriftIssue.message(spelling);
                answer(bot, forge, key, issue, &text).await?;
                continue;
            }
            Command::Plan { .. } => spelling.command("plan"),
            Command::Apply { id, .. } => spelling.command(&format!("apply {id}")),
        };
        let unconfigured = RepoConfig::default();
        if let Some(refusal) = refuse_command(forge, key.repo(), actor, &unconfigured, &shown).await
        {
            answer(bot, forge, key, issue, &refusal.message(spelling)).await?;
            continue;
        }
        if read.is_none() {
            let (branch, config) = default_branch(bot, forge, &key.repo().stored()).await?;
            match config {
                Ok(config) => read = Some((branch, config)),
                Err(problem) => {
                    let text = Refusal::DriftRulesInvalid {
                        branch: branch.name.clone(),
                        problem,
                    }
                    .message(spelling);
                    answer(bot, forge, key, issue, &text).await?;
                    return Ok(());
                }
            }
        }
        let Some((branch, config)) = &read else {
            continue;
        };
        // `apply_permission` narrows write permission further.
        if let Some(refusal) = refuse_command(forge, key.repo(), actor, config, &shown).await {
            answer(bot, forge, key, issue, &refusal.message(spelling)).await?;
            continue;
        }
        match command {
            Command::Apply { id, .. } => {
                apply(bot, forge, key, issue, at, branch, config, &id).await?;
            }
            _ => match config.drift.clone().filter(|d| d.enabled) {
                Some(drift) => run(bot, forge, key, at, branch, config, &drift).await?,
                None => {
                    let text = Refusal::DriftOff.message(spelling);
                    answer(bot, forge, key, issue, &text).await?;
                }
            },
        }
    }
    Ok(())
}

/// Applies the drift plan `id` with a pull request's rules, then checks again.
#[allow(clippy::too_many_arguments)]
async fn apply(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    issue: u64,
    at: ForgeRef,
    branch: &DefaultBranch,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<()> {
    let repo = &key.repo().stored();
    let spelling = forge.spelling();
    let units: Vec<UnitPath> = bot
        .store
        .plan(&key.plan_key(), id)
        .await?
        .map(|p| p.units.iter().map(|u| u.path.clone()).collect())
        .unwrap_or_default();
    let held = bot.store.take_locks(repo, key.number(), &units).await?;
    if !held.is_empty() {
        bot.store.release_locks(repo, key.number()).await?;
        let text = Refusal::DriftUnitsLocked {
            locks: held.into_iter().map(|l| (l.unit, l.pr)).collect(),
        }
        .message(spelling);
        answer(bot, forge, key, issue, &text).await?;
        return Ok(());
    }
    let applied = apply_locked(bot, key, branch, config, id).await;
    bot.store.release_locks(repo, key.number()).await?;
    let text = match applied? {
        Err(refusal) => {
            vec![Refusal::engine_refused(refusal, Refusal::DriftApplyRefused).message(spelling)]
        }
        Ok(outcome) => Comments::new()
            .spelled(spelling)
            .apply_comment(&apply_view(&outcome, &[]), forge.comment_limit())?,
    };
    for part in &text {
        forge.comment_on_issue(repo, issue, part).await?;
    }
    // What the apply changed: the issue shows it (and closes when nothing drifts).
    if let Some(drift) = config.drift.clone().filter(|d| d.enabled) {
        run(bot, forge, key, at, branch, config, &drift).await?;
    }
    Ok(())
}

/// The apply itself, in the default branch's checkout, while holding the locks.
async fn apply_locked(
    bot: &Arc<Bot>,
    key: &WorkKey,
    branch: &DefaultBranch,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Result<crate::engine::ApplyOutcome, crate::engine::ApplyError>> {
    let checkout = bot
        .workspaces
        .checkout(&key.repo().stored(), key.number(), &branch.sha)
        .await?;
    let dir_for = |u: &PlannedUnit| crate::engine::UnitDir::of(&checkout, &checkout, &u.path);
    bot.engine
        .apply(
            &key.plan_key(),
            id,
            &branch.sha,
            &dir_for,
            crate::engine::RunRules::from(config),
            |_| {},
        )
        .await
}
