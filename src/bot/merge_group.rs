//! GitHub merge queues: the `cascade` check on a merge group's head, so a required check
//! can pass in the queue. The group's head is planned against its base, for the units
//! the plans of the group's pull requests cover, and each unit is judged by the mode its
//! pull request is applied in (the default branch's `apply:`):
//!
//! - `on_merge`: the unit's plan at the group head must equal the pull request's approved
//!   plan (same fingerprint), and that plan must be approved as `/apply` requires;
//! - `comment`: the pull request must already be applied (its apply recorded), and the
//!   group's plan for the unit must be empty.
//!
//! Which pull requests a group holds: the one its branch names
//! (`gh-readonly-queue/<base>/pr-<n>-<sha>`), and those whose merge commits GitHub wrote
//! in the group's range ("Merge pull request #n …", or a squash's "… (#n)"). The check is
//! green only when every unit holds; anything cascade cannot judge fails it, naming why.
//! Runs on the repository's own actor, like the merges it comes before.

use super::Bot;
use super::ctx::PrCtx;
use super::jobs::WorkKey;
use super::on_merge::unapproved_for_merge;
use crate::config::RepoConfig;
use crate::forge::{CheckOutput, CheckStatus, Forge, ForgeRef, PrNumber, Sha};
use crate::inert::code;
use crate::store::{BotStore, PlanKey, PlanRecord, PrState, RunStore};
use crate::unit::UnitPath;
use anyhow::anyhow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The most commits of a group's range read for the pull requests it holds.
const COMMITS_READ: usize = 500;

/// A merge group whose checks GitHub asks for.
#[derive(Clone, Debug)]
pub struct QueuedGroup {
    pub forge: ForgeRef,
    pub head_sha: Sha,
    pub head_ref: String,
    pub base_sha: Sha,
    /// The pull request that entered the queue last (from the head branch's name).
    pub entering: Option<u64>,
}

/// One pull request of the group: its plan, and how it is applied.
struct Member {
    number: u64,
    plan: PlanRecord,
    applied: bool,
}

/// Sets the `cascade` check on the group's head.
pub async fn merge_group_job(
    bot: &Arc<Bot>,
    key: &WorkKey,
    group: QueuedGroup,
) -> anyhow::Result<()> {
    let repo = key.repo().stored();
    let forge = bot.forges.open(group.forge).await?;
    let head = group.head_sha.to_string();
    let number = group.entering.unwrap_or(0);
    let checking = CheckOutput::new(
        CheckStatus::InProgress,
        "cascade: planning the merge group",
        "cascade plans the group's head and compares it with the reviewed plans.",
    );
    let id = forge
        .set_check(&repo, number, &head, &group.head_ref, None, &checking)
        .await?;
    let verdict = match judge(bot, &forge, key, &group).await {
        Ok(verdict) => verdict,
        Err(e) => CheckOutput::new(
            CheckStatus::Failure,
            "cascade: could not check the merge group",
            format!(
                "cascade could not plan the merge group ({}); remove the pull request from \
                 the queue and add it again.",
                code(&format!("{e:#}"))
            ),
        ),
    };
    forge
        .set_check(&repo, number, &head, &group.head_ref, Some(id), &verdict)
        .await?;
    Ok(())
}

/// The check the group's head gets.
async fn judge(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    group: &QueuedGroup,
) -> anyhow::Result<CheckOutput> {
    let repo = key.repo().stored();
    let default = forge.default_branch(&repo).await?;
    let credential = forge.git_credential().await?;
    bot.workspaces
        .fetch(
            &repo,
            &default.clone_url,
            Some(&credential),
            &[
                "+refs/heads/*:refs/heads/*".to_string(),
                group.head_sha.to_string(),
            ],
        )
        .await?;
    let config = match bot.workspaces.config_at(&repo, &default.sha)? {
        None => RepoConfig::default(),
        Some(text) => RepoConfig::parse(&text).map_err(|p| anyhow!("{p}"))?,
    };
    let numbers = members(bot, &repo, group)?;
    let mut problems: Vec<String> = Vec::new();
    let mut found: Vec<Member> = Vec::new();
    for number in &numbers {
        match member(bot, key, *number).await? {
            Some(m) => found.push(m),
            None => problems.push(format!(
                "#{number}: cascade has no plan of it; comment `/plan` on it, then queue it again"
            )),
        }
    }
    // Each unit, with the pull request whose plan covers it (the last one queued wins).
    let mut owner: BTreeMap<UnitPath, usize> = BTreeMap::new();
    for (i, m) in found.iter().enumerate() {
        for u in &m.plan.units {
            owner.insert(u.path.clone(), i);
        }
    }
    // Approval is judged once per pull request whose units apply after merge.
    let mut unapproved: BTreeMap<u64, String> = BTreeMap::new();
    for m in &found {
        if !m
            .plan
            .units
            .iter()
            .any(|u| config.applies_on_merge(&u.path))
        {
            continue;
        }
        let pr_key = WorkKey::PullRequest {
            repo: key.repo().clone(),
            number: PrNumber::new(m.number),
        };
        let ctx = PrCtx::read(bot, &pr_key, group.forge).await?;
        if let Some(refusal) = unapproved_for_merge(&ctx, &config, &m.plan).await? {
            let why = refusal.message(ctx.spelling);
            unapproved.insert(m.number, why.lines().next().unwrap_or_default().to_string());
        }
    }
    let planned = plan_group(
        bot,
        forge,
        key,
        group,
        &config,
        owner.keys().cloned().collect(),
    )
    .await?;
    let mut lines: Vec<String> = Vec::new();
    for (unit, i) in &owner {
        let m = &found[*i];
        let at_head = planned.0.get(unit);
        let verdict = if config.applies_on_merge(unit) {
            let approved = m.plan.units.iter().find(|u| &u.path == unit);
            match (
                unapproved.get(&m.number),
                approved.and_then(|u| u.fingerprint()),
                at_head,
            ) {
                (Some(why), _, _) => Err(format!("plan `{}` is not approved: {why}", m.plan.id)),
                (None, Some(want), Some(Some(got))) if want == got => {
                    Ok("equals the approved plan".to_string())
                }
                (None, _, Some(None) | None) => {
                    Err("could not be planned at the group's head".to_string())
                }
                (None, _, _) => Err(format!(
                    "its plan at the group's head differs from approved plan `{}`",
                    m.plan.id
                )),
            }
        } else if !m.applied {
            Err(format!(
                "is applied by comment, and #{}'s plan was not applied: comment `/apply {}` there first",
                m.number, m.plan.id
            ))
        } else {
            match at_head {
                Some(Some(_)) if empty(&planned, unit) => {
                    Ok("applied; no changes at the group's head".to_string())
                }
                Some(Some(_)) => Err("applied, but the group's head still changes it".to_string()),
                _ => Err("could not be planned at the group's head".to_string()),
            }
        };
        match verdict {
            Ok(why) => lines.push(format!(
                "- ✅ {} (#{}): {why}",
                code(unit.as_str()),
                m.number
            )),
            Err(why) => problems.push(format!("{} (#{}): {why}", code(unit.as_str()), m.number)),
        }
    }
    let shown: Vec<String> = numbers.iter().map(|n| format!("#{n}")).collect();
    let mut summary = format!(
        "Merge group of {} at `{}`, planned against `{}`.\n",
        shown.join(", "),
        short(group.head_sha.as_str()),
        short(group.base_sha.as_str())
    );
    for problem in &problems {
        summary.push_str(&format!("\n- ❌ {problem}"));
    }
    for line in &lines {
        summary.push('\n');
        summary.push_str(line);
    }
    Ok(if problems.is_empty() {
        CheckOutput::new(
            CheckStatus::Success,
            "cascade: the merge group matches the reviewed plans",
            summary,
        )
    } else {
        CheckOutput::new(
            CheckStatus::Failure,
            format!(
                "cascade: the merge group does not match the reviewed plans ({} problem{})",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            ),
            summary,
        )
    })
}

/// The pull requests the group holds, in queue order, the entering one last.
fn members(bot: &Bot, repo: &str, group: &QueuedGroup) -> anyhow::Result<Vec<u64>> {
    let mirror = bot.workspaces.mirror_path(repo)?;
    let messages = crate::git::messages_between(
        &mirror,
        group.base_sha.as_str(),
        group.head_sha.as_str(),
        COMMITS_READ,
    )?;
    let mut numbers: Vec<u64> = Vec::new();
    // Oldest first: the queue's order.
    for message in messages.iter().rev() {
        if let Some(n) = merged_number(message)
            && !numbers.contains(&n)
        {
            numbers.push(n);
        }
    }
    if let Some(n) = group.entering {
        numbers.retain(|m| *m != n);
        numbers.push(n);
    }
    Ok(numbers)
}

/// The pull request a queue commit's message names: `Merge pull request #12 from …`
/// (a merge commit) or a first line ending `(#12)` (a squash).
fn merged_number(message: &str) -> Option<u64> {
    let first = message.lines().next()?.trim();
    let digits = |s: &str| -> Option<u64> {
        let n: String = s.chars().take_while(char::is_ascii_digit).collect();
        n.parse().ok().filter(|n| *n > 0)
    };
    if let Some(rest) = first.strip_prefix("Merge pull request #") {
        return digits(rest);
    }
    let open = first.strip_suffix(')')?.rfind("(#")?;
    digits(&first[open + 2..])
}

/// Pull request `number`'s plan as cascade keeps it: its current plan, or the one it
/// applied.
async fn member(bot: &Bot, key: &WorkKey, number: u64) -> anyhow::Result<Option<Member>> {
    let repo = key.repo().stored();
    let Some(record) = bot.store.pull_request(&repo, number).await? else {
        return Ok(None);
    };
    let Some(id) = &record.plan_id else {
        return Ok(None);
    };
    let plan_key = PlanKey::pull_request(key.repo(), PrNumber::new(number));
    let Some(plan) = bot.store.plan(&plan_key, id).await? else {
        return Ok(None);
    };
    Ok(Some(Member {
        number,
        applied: record.state == PrState::Applied,
        plan,
    }))
}

/// Each unit's plan at the group's head: its fingerprint (`None`: it failed to plan),
/// and whether it changes nothing.
type Planned = BTreeMap<UnitPath, Option<crate::plan::Fingerprint>>;

fn empty(planned: &(Planned, BTreeSet<UnitPath>), unit: &UnitPath) -> bool {
    planned.1.contains(unit)
}

async fn plan_group(
    bot: &Arc<Bot>,
    forge: &Forge,
    key: &WorkKey,
    group: &QueuedGroup,
    config: &RepoConfig,
    units: BTreeSet<UnitPath>,
) -> anyhow::Result<(Planned, BTreeSet<UnitPath>)> {
    let repo = key.repo().stored();
    // The entering pull request's own directory: the state a local backend keeps there
    // is the one its plans saw (a remote backend is the same for every directory).
    let checkout = bot
        .workspaces
        .checkout(&repo, group.entering.unwrap_or(0), group.head_sha.as_str())
        .await?;
    let cancel = CancellationToken::new();
    let what = "the merge group's head";
    let scan = super::discover::scan_tree(bot, forge, &checkout, config, &cancel, what).await?;
    let present: BTreeSet<UnitPath> = units
        .into_iter()
        .filter(|u| scan.discovery.unit(u).is_some())
        .collect();
    let targets = crate::engine::head_targets(&scan.discovery, &scan.graph, &checkout, &present);
    let outcome = bot
        .engine
        .plan(
            &PlanKey::merge_group(key.repo()),
            group.head_sha.as_str(),
            group.base_sha.as_str(),
            targets,
            crate::engine::RunRules::from(config),
            cancel,
            |_| {},
        )
        .await?;
    let mut planned = Planned::new();
    let mut unchanged = BTreeSet::new();
    for u in &outcome.plan.units {
        let summary = u
            .summary
            .as_ref()
            .filter(|_| u.status == crate::store::UnitStatus::Planned);
        if summary.is_some_and(|s| s.is_empty()) {
            unchanged.insert(u.path.clone());
        }
        planned.insert(u.path.clone(), summary.map(|s| s.fingerprint.clone()));
    }
    Ok((planned, unchanged))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

#[cfg(test)]
mod tests {
    use super::merged_number;

    #[test]
    fn queue_commits_name_their_pull_requests() {
        assert_eq!(
            merged_number("Merge pull request #12 from acme/feature\n\nx"),
            Some(12)
        );
        assert_eq!(merged_number("Add the zone (#7)\n\nbody"), Some(7));
        assert_eq!(merged_number("Add the zone"), None);
        assert_eq!(merged_number("Fix (#0)"), None);
        assert_eq!(merged_number("Merge pull request #x"), None);
    }
}
