//! `mergeable_state: "blocked"`: GitHub would not merge, and says only that. cascade's
//! own check blocks too while it waits for `/apply` when a branch rule requires it, so
//! `blocked` alone cannot refuse; nor can it be taken as mergeable (a failed required
//! check, or a missing code owner's review, is `blocked` as well). So cascade reads what
//! the base branch requires, as a reader without admin rights can:
//! - GraphQL: the pull request's `reviewDecision` (every review requirement, code owners
//!   included), the classic rule on its base (`refUpdateRule`), unresolved review
//!   threads, and the head's checks with `isRequired`;
//! - REST `GET /repos/{o}/{r}/rules/branches/{branch}`: rulesets' required checks, which
//!   `isRequired` shows only once they have reported.
//!
//! The pull request counts as mergeable only when cascade's own check is among the
//! required ones (or GitHub's `blocked` would have another cause) and every other
//! requirement seen is met; anything else is a refusal naming what is missing.

use super::transport::{Call, Method};
use super::{Installation, issues::branch_path, repo_path};
use crate::forge::Mergeable;
use crate::inert::code;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeSet;

/// The name of cascade's check run.
const OWN_CHECK: &str = "cascade";

const QUERY: &str = "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewDecision baseRef { refUpdateRule { requiredStatusCheckContexts requiresConversationResolution } } reviewThreads(first: 100) { nodes { isResolved } } commits(last: 1) { nodes { commit { oid statusCheckRollup { contexts(first: 100) { nodes { __typename ... on CheckRun { name status conclusion isRequired(pullRequestNumber: $number) checkSuite { app { databaseId } } } ... on StatusContext { context state isRequired(pullRequestNumber: $number) } } } } } } } } } }";

#[derive(Deserialize)]
struct Answer {
    data: Option<Data>,
    #[serde(default)]
    errors: Vec<super::types::WireGraphqlError>,
}

#[derive(Deserialize)]
struct Data {
    repository: Option<Repository>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Repository {
    pull_request: Option<PullRequest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequest {
    review_decision: Option<String>,
    base_ref: Option<BaseRef>,
    review_threads: Nodes<Thread>,
    commits: Nodes<CommitNode>,
}

#[derive(Deserialize)]
struct Nodes<T> {
    #[serde(default = "Vec::new")]
    nodes: Vec<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BaseRef {
    ref_update_rule: Option<RefUpdateRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RefUpdateRule {
    #[serde(default)]
    required_status_check_contexts: Vec<String>,
    #[serde(default)]
    requires_conversation_resolution: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Thread {
    is_resolved: bool,
}

#[derive(Deserialize)]
struct CommitNode {
    commit: Commit,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Commit {
    status_check_rollup: Option<Rollup>,
}

#[derive(Deserialize)]
struct Rollup {
    contexts: Nodes<Context>,
}

/// A check run or a commit status on the head, as the rollup lists them (the latest of
/// each name).
#[derive(Deserialize)]
#[serde(tag = "__typename")]
enum Context {
    CheckRun {
        name: String,
        status: String,
        conclusion: Option<String>,
        #[serde(rename = "isRequired", default)]
        is_required: bool,
        #[serde(rename = "checkSuite")]
        check_suite: Option<CheckSuite>,
    },
    StatusContext {
        context: String,
        state: String,
        #[serde(rename = "isRequired", default)]
        is_required: bool,
    },
}

#[derive(Deserialize)]
struct CheckSuite {
    app: Option<App>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct App {
    database_id: Option<u64>,
}

#[derive(Deserialize)]
struct Rule {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    parameters: Option<RuleParameters>,
}

#[derive(Deserialize)]
struct RuleParameters {
    #[serde(default)]
    required_status_checks: Vec<RequiredCheck>,
    #[serde(default)]
    required_review_thread_resolution: bool,
}

#[derive(Deserialize)]
struct RequiredCheck {
    context: String,
}

/// One named check's latest result on the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub name: String,
    /// cascade's own check run (by name and by the App that made it).
    pub own: bool,
    /// Passed, as GitHub counts it for a required check: success, neutral or skipped.
    pub passed: bool,
    /// GitHub's word for its state, lower case.
    pub state: String,
}

/// What the base branch requires, and where the pull request stands.
#[derive(Debug, Default)]
pub(super) struct Gate {
    pub review_decision: Option<String>,
    pub required: BTreeSet<String>,
    pub seen: Vec<Seen>,
    pub threads_must_be_resolved: bool,
    pub unresolved_threads: usize,
}

/// Whether only cascade's own check keeps a `blocked` pull request from merging.
pub(super) fn verdict(gate: &Gate) -> Mergeable {
    let blocked = |why: String| Mergeable::Blocked { why };
    if !gate.required.contains(OWN_CHECK) {
        return blocked(
            "GitHub says it is blocked, and cascade's own check is not one the branch requires, \
             so something else is missing (a required check, a review, a resolved conversation, \
             a signed commit); see the merge box"
                .to_string(),
        );
    }
    match gate.review_decision.as_deref() {
        None | Some("APPROVED") => {}
        Some("CHANGES_REQUESTED") => {
            return blocked("a reviewer requested changes".to_string());
        }
        Some(_) => {
            return blocked(
                "the reviews the branch requires are missing (more approvals, or a code \
                 owner's)"
                    .to_string(),
            );
        }
    }
    if gate.threads_must_be_resolved && gate.unresolved_threads > 0 {
        return blocked(format!(
            "the branch requires conversations to be resolved, and {} are not",
            gate.unresolved_threads
        ));
    }
    for name in gate.required.iter().filter(|n| *n != OWN_CHECK) {
        let latest = gate.seen.iter().rev().find(|s| s.name == *name && !s.own);
        match latest {
            Some(seen) if seen.passed => {}
            Some(seen) => {
                return blocked(format!(
                    "the required check {} is {}",
                    code(name),
                    code(&seen.state)
                ));
            }
            None => {
                return blocked(format!(
                    "the required check {} has not reported on the head",
                    code(name)
                ));
            }
        }
    }
    Mergeable::Yes
}

impl Installation {
    /// What the base branch of `number` requires and where the pull request stands
    /// (one GraphQL query and one REST read), judged by [`verdict`].
    pub(super) async fn merge_gate(
        &self,
        repo: &str,
        number: u64,
        base: &str,
    ) -> anyhow::Result<Mergeable> {
        let (owner, name) = repo
            .split_once('/')
            .ok_or_else(|| anyhow::anyhow!("{repo:?} is not owner/name"))?;
        let kind = "graphql.merge_gate";
        let body = json!({ "query": QUERY, "variables": { "owner": owner, "name": name, "number": number } });
        let call = Call {
            kind,
            method: Method::Post,
            path: "/graphql".to_string(),
            body: Some(body),
            write: false,
            graphql: true,
            retry_server_errors: true,
        };
        let answer: Answer = self.send(call).await?.json(kind)?;
        let pull = answer
            .data
            .and_then(|d| d.repository)
            .and_then(|r| r.pull_request);
        let Some(pull) = pull else {
            let messages: Vec<_> = answer.errors.into_iter().map(|e| e.message).collect();
            anyhow::bail!(
                "GitHub did not say what {repo}#{number}'s base branch requires: {}",
                messages.join("; ")
            );
        };
        let kind = "repos.rules.branch";
        let path = format!("{}/rules/branches/{}", repo_path(repo)?, branch_path(base)?);
        let rules: Vec<Rule> = self.send(Call::get(kind, path)).await?.json(kind)?;
        Ok(verdict(&gate(pull, rules, self.app_id())))
    }
}

fn gate(pull: PullRequest, rules: Vec<Rule>, app_id: u64) -> Gate {
    let mut gate = Gate {
        review_decision: pull.review_decision,
        unresolved_threads: pull
            .review_threads
            .nodes
            .iter()
            .filter(|t| !t.is_resolved)
            .count(),
        ..Gate::default()
    };
    if let Some(rule) = pull.base_ref.and_then(|b| b.ref_update_rule) {
        gate.required.extend(rule.required_status_check_contexts);
        gate.threads_must_be_resolved |= rule.requires_conversation_resolution;
    }
    for rule in rules {
        let Some(parameters) = rule.parameters else {
            continue;
        };
        match rule.kind.as_str() {
            "required_status_checks" => gate.required.extend(
                parameters
                    .required_status_checks
                    .into_iter()
                    .map(|c| c.context),
            ),
            "pull_request" => {
                gate.threads_must_be_resolved |= parameters.required_review_thread_resolution
            }
            _ => {}
        }
    }
    let contexts = pull
        .commits
        .nodes
        .into_iter()
        .last()
        .and_then(|c| c.commit.status_check_rollup)
        .map(|r| r.contexts.nodes)
        .unwrap_or_default();
    for context in contexts {
        let (seen, required) = match context {
            Context::CheckRun {
                name,
                status,
                conclusion,
                is_required,
                check_suite,
            } => {
                let app = check_suite.and_then(|s| s.app).and_then(|a| a.database_id);
                let state = conclusion.unwrap_or(status).to_ascii_lowercase();
                let passed = matches!(state.as_str(), "success" | "neutral" | "skipped");
                let own = name == OWN_CHECK && app == Some(app_id);
                (
                    Seen {
                        name,
                        own,
                        passed,
                        state,
                    },
                    is_required,
                )
            }
            Context::StatusContext {
                context,
                state,
                is_required,
            } => {
                let state = state.to_ascii_lowercase();
                let passed = state == "success";
                let seen = Seen {
                    name: context,
                    own: false,
                    passed,
                    state,
                };
                (seen, is_required)
            }
        };
        if required {
            gate.required.insert(seen.name.clone());
        }
        gate.seen.push(seen);
    }
    gate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, own: bool, state: &str) -> Seen {
        Seen {
            name: name.into(),
            own,
            passed: matches!(state, "success" | "neutral" | "skipped"),
            state: state.into(),
        }
    }

    fn required(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn only_cascades_own_check_pending_is_mergeable() {
        let gate = Gate {
            required: required(&["cascade", "ci"]),
            seen: vec![
                seen("cascade", true, "action_required"),
                seen("ci", false, "success"),
            ],
            ..Gate::default()
        };
        assert_eq!(verdict(&gate), Mergeable::Yes);
    }

    #[test]
    fn a_failed_or_missing_required_check_is_blocked() {
        let mut gate = Gate {
            required: required(&["cascade", "ci"]),
            seen: vec![
                seen("cascade", true, "action_required"),
                seen("ci", false, "failure"),
            ],
            ..Gate::default()
        };
        assert!(
            matches!(verdict(&gate), Mergeable::Blocked { why } if why.contains("`ci` is `failure`"))
        );
        gate.seen.pop();
        assert!(
            matches!(verdict(&gate), Mergeable::Blocked { why } if why.contains("has not reported"))
        );
        // A "ci" check made to look like cascade's does not stand in for it.
        gate.seen.push(seen("ci", true, "success"));
        assert!(matches!(verdict(&gate), Mergeable::Blocked { .. }));
    }

    #[test]
    fn blocked_without_cascade_required_or_with_reviews_missing_is_blocked() {
        let mut gate = Gate {
            required: required(&["ci"]),
            seen: vec![seen("ci", false, "success")],
            ..Gate::default()
        };
        assert!(matches!(verdict(&gate), Mergeable::Blocked { .. }));
        gate.required.insert("cascade".into());
        gate.review_decision = Some("REVIEW_REQUIRED".into());
        assert!(matches!(verdict(&gate), Mergeable::Blocked { why } if why.contains("code owner")));
        gate.review_decision = Some("APPROVED".into());
        gate.threads_must_be_resolved = true;
        gate.unresolved_threads = 2;
        assert!(matches!(verdict(&gate), Mergeable::Blocked { why } if why.contains("resolved")));
        gate.unresolved_threads = 0;
        assert_eq!(verdict(&gate), Mergeable::Yes);
    }
}
