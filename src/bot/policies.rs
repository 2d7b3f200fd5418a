//! Policies on the server: the default branch's policy sets compiled for a plan (never
//! the pull request's own, so a pull request cannot loosen what judges it), what a policy
//! is told of the pull request, the policy files a pull request edits (the comment says
//! they did not count), and which failures still stop an `/apply` of a plan.
//!
//! Never evaluates a rule (the engine does, while each plan JSON is in memory) and never
//! words a refusal (`refusal` does).

use super::ctx::PrCtx;
use crate::config::{ApplyPermission, ApprovalRule, RepoConfig};
use crate::engine::{PolicyCheck, compile_sets};
use crate::policy::input::{Approval, PullRequestFacts};
use crate::store::{PlanRecord, PolicyApproval};
use std::collections::BTreeMap;

/// The most changed files a policy is told of: GitHub's own API lists at most 3,000 of a
/// pull request's files, and a policy that needs more is better written over the plan.
const MAX_CHANGED_FILES: usize = 3000;

/// The default branch's policy sets (`config`, read at `sha`) compiled from that commit's
/// tree, or why one of them cannot be. Only the sets' directories are written out.
pub async fn compile_default(
    ctx: &PrCtx,
    config: &RepoConfig,
    sha: &str,
) -> anyhow::Result<Result<Vec<PolicyCheck>, String>> {
    if config.policies.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let workspaces = ctx.bot.workspaces.clone();
    let (repo, sha) = (ctx.key.repo().stored(), sha.to_string());
    let sets = config.policies.clone();
    // Reading and compiling is CPU work on the default branch's files: off the runtime.
    tokio::task::spawn_blocking(move || {
        let dirs: Vec<&str> = sets.iter().map(|s| s.path.as_str()).collect();
        let tree = if dirs.contains(&".") {
            workspaces.tree(&repo, &sha)?
        } else {
            workspaces.subtree(&repo, &sha, &dirs)?
        };
        Ok(compile_sets(&tree, &sets).map_err(|e| format!("{e:#}")))
    })
    .await?
}

/// What a policy is told of the pull request: its number, author, base, head, the files
/// it changes (the first [`MAX_CHANGED_FILES`]) and the approvals in force that are not
/// its author's (on the head, unless `approvals: any_head`). Approvals the forge would not
/// list are none: a rule that wants them then fails closed. Labels come from the forge's
/// API (read again when the pull request came from a hook).
pub async fn pull_request_facts(
    ctx: &PrCtx,
    config: &RepoConfig,
    changed_files: &[String],
) -> PullRequestFacts {
    let (forge, key, pr) = (&ctx.forge, &ctx.key, &ctx.pr);
    let approvals = match forge
        .approvals(&key.repo().stored(), key.number(), pr)
        .await
    {
        Ok(approvals) => approvals.approvers,
        Err(error) => {
            tracing::warn!(pr = %key, error = format!("{error:#}"), "cannot read the approvals; policies are told of none");
            Vec::new()
        }
    };
    let on_head = config.approvals == ApprovalRule::Head;
    let approvals = approvals
        .into_iter()
        .filter(|a| !a.actor.login.eq_ignore_ascii_case(pr.author_login()))
        .filter_map(|a| {
            let commit = a.commit?;
            (!on_head || commit == pr.head_sha.as_str()).then_some(Approval {
                user: a.actor.login,
                commit,
            })
        })
        .collect();
    PullRequestFacts {
        number: key.number(),
        author: pr.author_login().to_string(),
        base_ref: pr.base_ref.clone(),
        head_sha: pr.head_sha.to_string(),
        labels: labels(ctx).await,
        changed_files: changed_files
            .iter()
            .take(MAX_CHANGED_FILES)
            .cloned()
            .collect(),
        approvals,
        draft: pr.draft,
    }
}

/// The pull request's labels as the forge's API says; none (and a warning) when it would
/// not say.
async fn labels(ctx: &PrCtx) -> Vec<String> {
    if let Some(labels) = &ctx.pr.labels {
        return labels.clone();
    }
    let (forge, key) = (&ctx.forge, &ctx.key);
    match forge
        .change_request(&key.repo().stored(), key.number())
        .await
    {
        Ok(pr) => pr.labels.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(pr = %key, error = format!("{error:#}"), "cannot read the labels; policies are told of none");
            Vec::new()
        }
    }
}

/// The `.rego` files among `changed_files` that lie in one of `config`'s policy
/// directories: the pull request changes a policy, which is not used until merged.
pub fn policy_edits(config: &RepoConfig, changed_files: &[String]) -> Vec<String> {
    changed_files
        .iter()
        .filter(|file| file.ends_with(".rego"))
        .filter(|file| {
            config.policies.iter().any(|set| {
                set.path == "."
                    || file
                        .strip_prefix(set.path.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        })
        .cloned()
        .collect()
}

/// One policy set whose failures stop an apply of a plan until an owner approves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocking {
    pub set: String,
    /// The units it fails; `None` for a set over the whole plan.
    pub units: Vec<Option<String>>,
    /// The rules that failed (`data.main.deny`), and "evaluation error" for a set that
    /// could not be evaluated.
    pub rules: Vec<String>,
    /// Who may approve it; `None` when the default branch no longer lists the set.
    pub owners: Option<ApplyPermission>,
}

/// The word a blocking result that could not be evaluated shows in place of a rule.
pub const EVALUATION_ERROR: &str = "evaluation error";

/// The blocking sets of `plan` that nobody approved (`approvals`, for its id), each with
/// its owners in `config` (the default branch's rules now).
pub fn blocking(
    plan: &PlanRecord,
    approvals: &[PolicyApproval],
    config: &RepoConfig,
) -> Vec<Blocking> {
    let mut by_set: BTreeMap<&str, Blocking> = BTreeMap::new();
    for (unit, result) in plan.policy_results().filter(|(_, r)| r.blocks()) {
        if approvals.iter().any(|a| a.set == result.set) {
            continue;
        }
        let entry = by_set.entry(&result.set).or_insert_with(|| Blocking {
            set: result.set.clone(),
            units: Vec::new(),
            rules: Vec::new(),
            owners: config
                .policies
                .iter()
                .find(|s| s.name == result.set)
                .map(|s| s.owners.clone()),
        });
        entry.units.push(unit.map(|path| path.to_string()));
        let mut rules: Vec<&str> = result.denies.iter().map(|m| m.rule.as_str()).collect();
        if !result.error.is_empty() {
            rules.push(EVALUATION_ERROR);
        }
        for rule in rules {
            if !entry.rules.iter().any(|r| r == rule) {
                entry.rules.push(rule.to_string());
            }
        }
    }
    by_set.into_values().collect()
}

/// The sets of `plan` with blocking failures, approved or not: what `/approve-policies`
/// may approve.
pub fn failing_sets(plan: &PlanRecord) -> Vec<String> {
    let mut sets: Vec<String> = plan
        .policy_results()
        .filter(|(_, r)| r.blocks())
        .map(|(_, r)| r.set.clone())
        .collect();
    sets.sort();
    sets.dedup();
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{PlannedUnit, PolicyMessage, PolicyResult, UnitStatus};

    fn unit(path: &str, results: Vec<PolicyResult>) -> PlannedUnit {
        PlannedUnit {
            path: crate::unit::UnitPath::new(path),
            wave: 1,
            destroy: false,
            deps: Vec::new(),
            tool: crate::unit::Tool::Terraform,
            init_args: Vec::new(),
            stack: None,
            status: UnitStatus::Planned,
            detail: String::new(),
            summary: None,
            rendered: None,
            retried: 0,
            steps: Vec::new(),
            policies: results,
        }
    }

    fn result(set: &str, blocking: bool, rule: &str, error: &str) -> PolicyResult {
        PolicyResult {
            set: set.into(),
            blocking,
            denies: (!rule.is_empty())
                .then(|| PolicyMessage {
                    rule: rule.into(),
                    message: "no".into(),
                })
                .into_iter()
                .collect(),
            warnings: Vec::new(),
            error: error.into(),
        }
    }

    fn plan(units: Vec<PlannedUnit>) -> PlanRecord {
        PlanRecord::sample(crate::plan::PlanId::parse("0123456789ab").unwrap(), units)
    }

    #[test]
    fn a_blocking_set_blocks_until_approved_and_warn_sets_never() {
        let config = RepoConfig::parse(
            "policies:\n  - name: guard\n    path: p\n    owners: {users: [carol]}\n  - name: cost\n    path: c\n    enforcement: warn\n",
        )
        .unwrap();
        let plan = plan(vec![
            unit(
                "prod/db",
                vec![
                    result("guard", true, "data.main.deny", ""),
                    result("cost", false, "data.main.deny", ""),
                ],
            ),
            unit("prod/app", vec![result("guard", true, "", "past 2 s")]),
            unit("dev/app", vec![result("guard", true, "", "")]),
        ]);
        let found = blocking(&plan, &[], &config);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].units,
            [Some("prod/db".to_string()), Some("prod/app".to_string())]
        );
        assert_eq!(found[0].rules, ["data.main.deny", EVALUATION_ERROR]);
        assert!(found[0].owners.as_ref().unwrap().lists_user("Carol"));
        let approved = PolicyApproval {
            set: "guard".into(),
            user: "carol".into(),
            at: 1,
        };
        assert!(blocking(&plan, &[approved], &config).is_empty());
        assert_eq!(failing_sets(&plan), ["guard"]);
    }

    #[test]
    fn only_rego_files_inside_a_policy_directory_are_policy_edits() {
        let config =
            RepoConfig::parse("policies:\n  - name: guard\n    path: policies/prod\n").unwrap();
        let files: Vec<String> = [
            "policies/prod/deny.rego",
            "policies/prod/README.md",
            "policies/production/x.rego",
            "live/prod/main.tf",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(policy_edits(&config, &files), ["policies/prod/deny.rego"]);
    }
}
