//! What GitHub says about a protected branch's requirements to a reader without admin
//! rights, for a pull request GitHub calls `blocked`:
//! - GraphQL `pullRequest { reviewDecision baseRef { refUpdateRule { … } } commits(last: 1)
//!   { … statusCheckRollup { contexts { … isRequired(pullRequestNumber:) } } } reviewThreads }`
//!   (<https://docs.github.com/en/graphql/reference/objects#pullrequest>,
//!   <https://docs.github.com/en/graphql/reference/objects#refupdaterule>: classic branch
//!   protection as non-admins see it; <https://docs.github.com/en/graphql/reference/objects#checkrun>);
//! - `GET /repos/{o}/{r}/rules/branches/{branch}`, the rulesets' rules in force
//!   (<https://docs.github.com/en/rest/repos/rules#get-rules-for-a-branch>).
//!
//! `reviewDecision` is `null` when no review is required, else `CHANGES_REQUESTED`,
//! `APPROVED` (enough latest approvals) or `REVIEW_REQUIRED`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};

use super::routes::{Answer, enter, reply};
use super::{APP_ID, Model, Shared};

/// One branch's protection: a classic rule, or a ruleset (`via_ruleset`).
#[derive(Clone, Debug, Default)]
pub struct Protection {
    pub required_checks: Vec<String>,
    pub required_approvals: u32,
    pub via_ruleset: bool,
}

/// Another app's id, for check runs cascade did not make.
const OTHER_APP: u64 = 999;

pub fn routes() -> Router<Arc<Shared>> {
    Router::new().route("/repos/{owner}/{repo}/rules/branches/{*branch}", get(rules))
}

async fn rules(
    State(fake): State<Arc<Shared>>,
    Path((o, r, branch)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "repos.rules.branch", &headers, &repo)?;
    let rules: Vec<Value> = match model.repos[&repo].protection.get(&branch) {
        Some(p) if p.via_ruleset => vec![
            json!({
                "type": "required_status_checks",
                "ruleset_source_type": "Repository", "ruleset_source": repo, "ruleset_id": 1,
                "parameters": {
                    "strict_required_status_checks_policy": false,
                    "required_status_checks": p.required_checks.iter().map(|c| json!({ "context": c })).collect::<Vec<_>>(),
                },
            }),
            json!({
                "type": "pull_request",
                "ruleset_source_type": "Repository", "ruleset_source": repo, "ruleset_id": 1,
                "parameters": {
                    "required_approving_review_count": p.required_approvals,
                    "dismiss_stale_reviews_on_push": false,
                    "require_code_owner_review": false,
                    "require_last_push_approval": false,
                    "required_review_thread_resolution": false,
                },
            }),
        ],
        _ => Vec::new(),
    };
    Ok(reply(StatusCode::OK, json!(rules)))
}

/// The answer to the merge-gate query (`variables`: owner, name, number).
pub fn answer(model: &Model, installation: u64, variables: &Value) -> Value {
    let full = format!(
        "{}/{}",
        variables["owner"].as_str().unwrap_or_default(),
        variables["name"].as_str().unwrap_or_default()
    );
    let number = variables["number"].as_u64().unwrap_or_default();
    let Some(repo) = model
        .repos
        .get(&full)
        .filter(|r| r.installation == installation)
    else {
        return json!({ "data": { "repository": null }, "errors": [{ "type": "NOT_FOUND", "message": format!("Could not resolve to a Repository with the name '{full}'.") }] });
    };
    let Some(pr) = repo.pulls.get(&number) else {
        return json!({ "data": { "repository": { "pullRequest": null } }, "errors": [{ "type": "NOT_FOUND", "message": format!("Could not resolve to a PullRequest with the number of {number}.") }] });
    };
    let protection = repo.protection.get(&pr.base_ref);
    let required =
        |name: &str| protection.is_some_and(|p| p.required_checks.iter().any(|c| c == name));
    let mut contexts = Vec::new();
    for run in repo
        .check_runs
        .values()
        .filter(|r| r.head_sha == pr.head_sha)
    {
        let state = run.history.last().expect("a check run has a state");
        contexts.push(json!({
            "__typename": "CheckRun",
            "name": run.name,
            "status": state.status.to_uppercase(),
            "conclusion": state.conclusion.as_ref().map(|c| c.to_uppercase()),
            "isRequired": required(&run.name),
            "checkSuite": { "app": { "databaseId": APP_ID } },
        }));
    }
    for (_, name, conclusion) in repo
        .foreign_checks
        .iter()
        .filter(|(sha, ..)| *sha == pr.head_sha)
    {
        contexts.push(json!({
            "__typename": "CheckRun",
            "name": name,
            "status": "COMPLETED",
            "conclusion": conclusion.to_uppercase(),
            "isRequired": required(name),
            "checkSuite": { "app": { "databaseId": OTHER_APP } },
        }));
    }
    let decision = protection.filter(|p| p.required_approvals > 0).map(|p| {
        // Each reviewer's latest review counts, as GitHub's review decision does.
        let mut latest: Vec<(&str, &str)> = Vec::new();
        for review in &pr.reviews {
            latest.retain(|(who, _)| *who != review.author);
            latest.push((&review.author, &review.state));
        }
        if latest.iter().any(|(_, s)| *s == "CHANGES_REQUESTED") {
            "CHANGES_REQUESTED"
        } else if latest.iter().filter(|(_, s)| *s == "APPROVED").count() as u32
            >= p.required_approvals
        {
            "APPROVED"
        } else {
            "REVIEW_REQUIRED"
        }
    });
    let rule = protection.filter(|p| !p.via_ruleset).map(|p| {
        json!({
            "requiredStatusCheckContexts": p.required_checks,
            "requiredApprovingReviewCount": p.required_approvals,
            "requiresCodeOwnerReviews": false,
            "requiresConversationResolution": false,
        })
    });
    json!({ "data": { "repository": { "pullRequest": {
        "reviewDecision": decision,
        "baseRef": { "refUpdateRule": rule },
        "reviewThreads": { "nodes": [] },
        "commits": { "nodes": [ { "commit": {
            "oid": pr.head_sha,
            "statusCheckRollup": { "contexts": { "nodes": contexts } },
        } } ] },
    } } } })
}
