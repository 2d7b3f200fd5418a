//! The fake's repositories, branches and plain issues, as GitHub's REST API documents
//! them: `GET /repos/{o}/{r}` (`default_branch`, `clone_url`), `GET …/branches/{branch}`
//! (the head read from the origin git repository), and `POST|GET …/issues`,
//! `GET|PATCH …/issues/{n}`. Issues and pull requests share one sequence of numbers,
//! and `GET …/issues/{n}` answers a pull request's number with the pull request as an
//! issue (`pull_request` set), as GitHub does. Writes need the App's `issues: write`.
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};

use super::routes::{
    Answer, PageQuery, body_json, enter, injected_after, paged, refuse, reply, wrote,
};
use super::{
    APP_ID, BOT_LOGIN, COMMENT_LIMIT, CommentSnapshot, FakeGitHub, Model, RepoModel, Shared, json,
};

type Fake = State<Arc<Shared>>;

/// GitHub's limit on an issue title, in characters.
pub const TITLE_LIMIT: usize = 256;

pub(crate) struct IssueModel {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub author: String,
    /// `open` or `closed`.
    pub state: String,
    /// `completed`, `not_planned` or `reopened`, as GitHub keeps it.
    pub state_reason: Option<String>,
    pub created_at: String,
    /// Deleted (GitHub answers 410 Gone).
    pub deleted: bool,
    /// Titles and bodies before each edit, oldest first.
    pub edits: Vec<(String, String)>,
}

/// An issue as the fake holds it, with its comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueSnapshot {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub author: String,
    pub state: String,
    pub state_reason: Option<String>,
    /// (title, body) before each edit, oldest first.
    pub edits: Vec<(String, String)>,
    pub comments: Vec<CommentSnapshot>,
}

pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/repos/{owner}/{repo}", get(repository))
        .route("/repos/{owner}/{repo}/branches/{*branch}", get(branch))
        .route(
            "/repos/{owner}/{repo}/issues",
            get(list_issues).post(create_issue),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}",
            get(issue).patch(update_issue),
        )
}

async fn repository(
    State(fake): Fake,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "repos.get", &headers, &repo)?;
    let mut value = json::repo(&fake.url, &model.repos[&repo]);
    value["has_issues"] = json!(true);
    Ok(reply(StatusCode::OK, value))
}

async fn branch(
    State(fake): Fake,
    Path((o, r, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "repos.branches.get", &headers, &repo)?;
    let sha = model.repos[&repo]
        .origin
        .as_deref()
        .and_then(|origin| crate::support::git_http::branch_head(origin, &name))
        .ok_or_else(|| refuse(404, "Branch not found"))?;
    let api = &fake.url;
    Ok(reply(
        StatusCode::OK,
        json!({
            "name": name,
            "commit": {
                "sha": sha,
                "node_id": format!("C_kwDO{sha}"),
                "url": format!("{api}/repos/{repo}/commits/{sha}"),
                "commit": { "message": "head", "tree": { "sha": sha } },
            },
            "_links": { "self": format!("{api}/repos/{repo}/branches/{name}"), "html": format!("{}/{repo}/tree/{name}", json::WEB) },
            "protected": false,
        }),
    ))
}

/// Writes to issues need the App's `issues: write` on the installation.
fn may_write_issues(model: &Model, installation: u64) -> Result<(), axum::response::Response> {
    match model.installations[&installation].permissions.get("issues") {
        Some(level) if level == "write" => Ok(()),
        _ => Err(refuse(403, "Resource not accessible by integration")),
    }
}

fn issue_json(api: &str, repo: &RepoModel, i: &IssueModel) -> Value {
    let full = &repo.full_name;
    let n = i.number;
    let mut value = json!({
        "url": format!("{api}/repos/{full}/issues/{n}"),
        "repository_url": format!("{api}/repos/{full}"),
        "html_url": format!("{}/{full}/issues/{n}", json::WEB),
        "id": json::id_of(&format!("{full}#{n}")),
        "node_id": format!("I_kwDO{}", json::id_of(&format!("{full}#{n}"))),
        "number": n,
        "title": i.title,
        "user": json::user(api, &i.author),
        "labels": [],
        "state": i.state,
        "state_reason": i.state_reason,
        "locked": false,
        "comments": repo.comments.values().filter(|c| c.number == n).count(),
        "created_at": i.created_at,
        "updated_at": i.created_at,
        "closed_at": if i.state == "closed" { json!(i.created_at) } else { Value::Null },
        "author_association": if i.author.ends_with("[bot]") { "NONE" } else { "MEMBER" },
        "body": i.body,
        "performed_via_github_app": null,
    });
    if i.author == BOT_LOGIN {
        value["performed_via_github_app"] =
            json!({ "id": APP_ID, "slug": "cascade", "name": "cascade" });
    }
    value
}

/// The pull request `n` as `GET …/issues/{n}` shows it.
fn pull_as_issue(api: &str, repo: &RepoModel, n: u64) -> Option<Value> {
    let pr = repo.pulls.get(&n)?;
    let full = &repo.full_name;
    Some(json!({
        "url": format!("{api}/repos/{full}/issues/{n}"),
        "repository_url": format!("{api}/repos/{full}"),
        "number": n,
        "title": pr.title,
        "user": json::user(api, &pr.author),
        "state": pr.state,
        "body": "",
        "created_at": "2026-01-05T10:00:00Z",
        "pull_request": { "url": format!("{api}/repos/{full}/pulls/{n}") },
    }))
}

/// The issue, or the answer GitHub gives when there is none: 410 for a deleted one.
fn live_issue(repo: &mut RepoModel, n: u64) -> Result<&mut IssueModel, axum::response::Response> {
    match repo.issues.get_mut(&n) {
        Some(i) if i.deleted => Err(refuse(410, "This issue was deleted")),
        Some(i) => Ok(i),
        None => Err(refuse(404, "Not Found")),
    }
}

fn text_field(
    body: &Value,
    field: &str,
    limit: usize,
) -> Result<Option<String>, axum::response::Response> {
    match &body[field] {
        Value::Null => Ok(None),
        Value::String(text) if text.chars().count() > limit => Err(refuse(
            422,
            &format!("Validation Failed: {field} is too long (maximum is {limit} characters)"),
        )),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(refuse(
            422,
            &format!("Invalid request.\n\nFor '{field}', it is not a string."),
        )),
    }
}

pub(super) fn add_issue(
    model: &mut Model,
    repo: &str,
    author: &str,
    title: &str,
    body: &str,
) -> u64 {
    let repo = model.repo(repo);
    let number = repo.next_number;
    repo.next_number += 1;
    repo.issues.insert(
        number,
        IssueModel {
            number,
            title: title.to_string(),
            body: body.to_string(),
            author: author.to_string(),
            state: "open".to_string(),
            state_reason: None,
            created_at: json::timestamp(SystemTime::now()),
            deleted: false,
            edits: Vec::new(),
        },
    );
    number
}

async fn create_issue(
    State(fake): Fake,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "issues.create", &headers, &repo)?;
    may_write_issues(&model, installation)?;
    let body = body_json(&body)?;
    let title = text_field(&body, "title", TITLE_LIMIT)?
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| refuse(422, "Invalid request.\n\n\"title\" wasn't supplied."))?;
    let text = text_field(&body, "body", COMMENT_LIMIT)?.unwrap_or_default();
    let number = add_issue(&mut model, &repo, BOT_LOGIN, &title, &text);
    wrote(&mut model, installation);
    injected_after(&mut model, "issues.create")?;
    let repo_model = &model.repos[&repo];
    Ok(reply(
        StatusCode::CREATED,
        issue_json(&fake.url, repo_model, &repo_model.issues[&number]),
    ))
}

/// Newest first (`sort=created&direction=desc`, GitHub's default), pull requests
/// included as GitHub lists them; `state` defaults to `open`.
async fn list_issues(
    State(fake): Fake,
    Path((o, r)): Path<(String, String)>,
    Query(q): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "issues.list", &headers, &repo)?;
    let repo_model = &model.repos[&repo];
    let state = q.get("state").map_or("open", String::as_str);
    let mut items: Vec<(u64, Value)> = repo_model
        .issues
        .values()
        .filter(|i| !i.deleted && (state == "all" || i.state == state))
        .map(|i| (i.number, issue_json(&fake.url, repo_model, i)))
        .chain(
            repo_model
                .pulls
                .values()
                .filter(|p| state == "all" || p.state == state)
                .filter_map(|p| Some((p.number, pull_as_issue(&fake.url, repo_model, p.number)?))),
        )
        .collect();
    items.sort_by_key(|(n, _)| *n);
    if q.get("direction").map_or("desc", String::as_str) == "desc" {
        items.reverse();
    }
    let page = PageQuery {
        per_page: q.get("per_page").and_then(|v| v.parse().ok()),
        page: q.get("page").and_then(|v| v.parse().ok()),
    };
    Ok(paged(
        &fake,
        &format!("/repos/{repo}/issues"),
        items.into_iter().map(|(_, v)| v).collect(),
        &page,
    ))
}

async fn issue(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, _) = enter(&fake, "issues.get", &headers, &repo)?;
    if let Some(pull) = pull_as_issue(&fake.url, &model.repos[&repo], n) {
        return Ok(reply(StatusCode::OK, pull));
    }
    live_issue(model.repo(&repo), n)?;
    let repo_model = &model.repos[&repo];
    Ok(reply(
        StatusCode::OK,
        issue_json(&fake.url, repo_model, &repo_model.issues[&n]),
    ))
}

async fn update_issue(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "issues.update", &headers, &repo)?;
    may_write_issues(&model, installation)?;
    let body = body_json(&body)?;
    let title = text_field(&body, "title", TITLE_LIMIT)?;
    let text = text_field(&body, "body", COMMENT_LIMIT)?;
    let state = match body["state"].as_str() {
        None => None,
        Some(s @ ("open" | "closed")) => Some(s.to_string()),
        Some(_) => {
            return Err(refuse(
                422,
                "Validation Failed: state is not included in the list",
            ));
        }
    };
    let reason = match body["state_reason"].as_str() {
        None => None,
        Some(s @ ("completed" | "not_planned" | "reopened")) => Some(s.to_string()),
        Some(_) => {
            return Err(refuse(
                422,
                "Validation Failed: state_reason is not included in the list",
            ));
        }
    };
    let i = live_issue(model.repo(&repo), n)?;
    if title.is_some() || text.is_some() {
        i.edits.push((i.title.clone(), i.body.clone()));
        i.title = title.unwrap_or_else(|| i.title.clone());
        i.body = text.unwrap_or_else(|| i.body.clone());
    }
    // `state_reason` is ignored unless the state changes.
    if let Some(state) = state
        && state != i.state
    {
        i.state_reason = match state.as_str() {
            "closed" => Some(reason.unwrap_or_else(|| "completed".to_string())),
            _ => Some("reopened".to_string()),
        };
        i.state = state;
    }
    wrote(&mut model, installation);
    let repo_model = &model.repos[&repo];
    Ok(reply(
        StatusCode::OK,
        issue_json(&fake.url, repo_model, &repo_model.issues[&n]),
    ))
}

impl FakeGitHub {
    /// `author` opens an issue on `repo`; its number comes from the sequence pull
    /// requests use too.
    pub fn open_issue(&self, repo: &str, author: &str, title: &str, body: &str) -> u64 {
        add_issue(&mut self.model(), repo, author, title, body)
    }

    /// The issue as it is now, with its comments oldest first; `None` when there is none.
    pub fn issue(&self, repo: &str, number: u64) -> Option<IssueSnapshot> {
        let model = self.model();
        let repo_model = &model.repos[repo];
        let i = repo_model.issues.get(&number).filter(|i| !i.deleted)?;
        Some(IssueSnapshot {
            number,
            title: i.title.clone(),
            body: i.body.clone(),
            author: i.author.clone(),
            state: i.state.clone(),
            state_reason: i.state_reason.clone(),
            edits: i.edits.clone(),
            comments: repo_model
                .comments
                .values()
                .filter(|c| c.number == number)
                .map(|c| super::snapshot(repo_model, c.id))
                .collect(),
        })
    }

    /// Every issue on `repo` (not pull requests, not deleted ones), oldest first.
    pub fn issues(&self, repo: &str) -> Vec<IssueSnapshot> {
        let numbers: Vec<u64> = self.model().repos[repo].issues.keys().copied().collect();
        numbers
            .into_iter()
            .filter_map(|n| self.issue(repo, n))
            .collect()
    }

    /// An administrator deletes the issue: GitHub answers 410 Gone for it from then on.
    pub fn delete_issue(&self, repo: &str, number: u64) {
        let mut model = self.model();
        let issue = model
            .repo(repo)
            .issues
            .get_mut(&number)
            .expect("no such issue");
        issue.deleted = true;
    }

    /// Makes `branch` the repository's default branch (GitHub's default: `main`).
    pub fn set_default_branch(&self, repo: &str, branch: &str) {
        self.model().repo(repo).default_branch = branch.to_string();
    }

    /// Makes the API (and payloads) name `url` as `repo`'s `clone_url` instead of the
    /// fake's own: what cascade must refuse to send its token to.
    pub fn answer_clone_url(&self, repo: &str, url: &str) {
        self.model().repo(repo).clone_url = Some(url.to_string());
    }
}
