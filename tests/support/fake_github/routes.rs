//! The fake's HTTP endpoints: exactly the ones cascade calls, with GitHub's
//! authentication rules, limits, pagination and error bodies.
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    APP_ID, BOT_LOGIN, COMMENT_LIMIT, CheckRunModel, CheckRunState, CommentModel, FILES_CAP, Model,
    RequestRecord, Shared, TokenModel, json,
};

type Fake = State<Arc<Shared>>;
pub(super) type Answer = Result<Response, Response>;

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/app/installations/{id}/access_tokens", post(mint_token))
        .route("/repos/{owner}/{repo}/pulls/{number}", get(pull))
        .route("/repos/{owner}/{repo}/pulls/{number}/files", get(files))
        .route("/repos/{owner}/{repo}/pulls/{number}/reviews", get(reviews))
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(comments).post(create_comment),
        )
        // octocrab's typed update_comment sends POST; GitHub accepts both.
        .route(
            "/repos/{owner}/{repo}/issues/comments/{id}",
            patch(update_comment)
                .post(update_comment)
                .delete(delete_comment),
        )
        .route(
            "/repos/{owner}/{repo}/issues/comments/{id}/reactions",
            post(react),
        )
        .route("/repos/{owner}/{repo}/check-runs", post(create_check_run))
        .route(
            "/repos/{owner}/{repo}/check-runs/{id}",
            patch(update_check_run),
        )
        .route(
            "/repos/{owner}/{repo}/collaborators/{user}/permission",
            get(permission),
        )
        .route(
            "/orgs/{org}/teams/{team}/memberships/{user}",
            get(team_membership),
        )
        .route("/graphql", post(graphql))
        .merge(super::apps::router())
        .merge(super::issues::routes())
        .merge(super::merge_gate::routes())
        .merge(super::commits::routes())
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(shared.clone(), log_request))
        .with_state(shared)
}

/// Git's smart HTTP at the repository's `clone_url`, else GitHub's 404.
async fn fallback(State(fake): Fake, request: Request) -> Response {
    if request.uri().path().contains(".git/") {
        return super::git::serve(fake, request).await;
    }
    reply(StatusCode::NOT_FOUND, json::error("Not Found"))
}

async fn log_request(State(fake): Fake, request: Request, next: Next) -> Response {
    fake.lock().requests.push(RequestRecord {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        query: request.uri().query().map(str::to_string),
    });
    next.run(request).await
}

pub(super) fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

pub(super) fn refuse(status: u16, message: &str) -> Response {
    reply(StatusCode::from_u16(status).unwrap(), json::error(message))
}

/// The queued failure for `kind`, if any.
fn injected(model: &mut Model, kind: &str) -> Result<(), Response> {
    let failure = model.failures.get_mut(kind).and_then(|q| q.pop_front());
    answer_failure(failure)
}

/// The failure queued for `kind` after the request was carried out, if any.
pub(super) fn injected_after(model: &mut Model, kind: &str) -> Result<(), Response> {
    let failure = model
        .failures_after
        .get_mut(kind)
        .and_then(|q| q.pop_front());
    answer_failure(failure)
}

fn answer_failure(failure: Option<super::Failure>) -> Result<(), Response> {
    let Some(failure) = failure else {
        return Ok(());
    };
    let mut response = refuse(failure.status, &failure.message);
    for (name, value) in &failure.headers {
        response.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    Err(response)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("authorization")?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// The installation a request's token acts for; 401 like GitHub otherwise.
fn installation(model: &Model, headers: &HeaderMap) -> Result<u64, Response> {
    let token = bearer(headers).ok_or_else(|| refuse(401, "Requires authentication"))?;
    match model.tokens.get(token) {
        Some(t) if t.expires_at > SystemTime::now() => Ok(t.installation),
        _ => Err(refuse(401, "Bad credentials")),
    }
}

/// Checks failure injection and the token, and that the token's installation
/// can see `owner/repo` (GitHub answers 404 when it cannot).
pub(super) fn enter<'a>(
    fake: &'a Shared,
    kind: &str,
    headers: &HeaderMap,
    repo: &str,
) -> Result<(std::sync::MutexGuard<'a, Model>, u64), Response> {
    let mut model = fake.lock();
    injected(&mut model, kind)?;
    let installation = installation(&model, headers)?;
    match model.repos.get(repo) {
        Some(r) if r.installation == installation => Ok((model, installation)),
        _ => Err(refuse(404, "Not Found")),
    }
}

pub(super) fn wrote(model: &mut Model, installation: u64) {
    *model.writes.entry(installation).or_default() += 1;
}

pub(super) fn body_json(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice(body).map_err(|_| refuse(400, "Problems parsing JSON"))
}

async fn mint_token(State(fake): Fake, Path(id): Path<u64>, headers: HeaderMap) -> Answer {
    let mut model = fake.lock();
    injected(&mut model, "apps.access_tokens")?;
    let jwt = bearer(&headers).ok_or_else(|| refuse(401, "Requires authentication"))?;
    check_jwt(&model, &fake.public_key, jwt)?;
    if !model.installations.contains_key(&id) {
        return Err(refuse(404, "Not Found"));
    }
    let token = format!("ghs_fake{:030}", model.next_id());
    let expires_at = SystemTime::now() + model.token_lifetime;
    model.tokens.insert(
        token.clone(),
        TokenModel {
            installation: id,
            expires_at,
        },
    );
    *model.mints.entry(id).or_default() += 1;
    Ok(reply(
        StatusCode::CREATED,
        json!({
            "token": token,
            "expires_at": json::timestamp(expires_at),
            "permissions": model.installations[&id].permissions,
            "repository_selection": "selected",
        }),
    ))
}

/// GitHub checks the App's JWT: RS256 over the App's key, `iss` the id of an App
/// that exists (the configured one, or one created from a manifest: both hold the
/// fixture key, which the manifest conversion hands out).
fn check_jwt(model: &Model, public_key: &[u8], jwt: &str) -> Result<(), Response> {
    use octocrab::jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
    #[derive(Deserialize)]
    struct Claims {
        iss: Value,
    }
    let undecodable = || refuse(401, "A JSON web token could not be decoded");
    if jwt.split('.').count() != 3 {
        return Err(undecodable());
    }
    let key = DecodingKey::from_rsa_pem(public_key).unwrap();
    let claims = decode::<Claims>(jwt, &key, &Validation::new(Algorithm::RS256))
        .map_err(|_| undecodable())?
        .claims;
    let iss = claims
        .iss
        .as_u64()
        .or_else(|| claims.iss.as_str()?.parse().ok());
    let known = |id: u64| id == APP_ID || model.created_apps.iter().any(|a| a.id == id);
    if !iss.is_some_and(known) {
        return Err(refuse(401, "Integration not found"));
    }
    Ok(())
}

async fn pull(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "pulls.get", &headers, &repo)?;
    let repo_model = &model.repos[&repo];
    let pr = repo_model
        .pulls
        .get(&n)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    Ok(reply(StatusCode::OK, json::pull(&fake.url, repo_model, pr)))
}

#[derive(Deserialize)]
pub(super) struct PageQuery {
    pub per_page: Option<usize>,
    pub page: Option<usize>,
}

/// One page of `items` (GitHub: 30 by default, at most 100) with its `Link` header.
pub(super) fn paged(fake: &Shared, path: &str, items: Vec<Value>, q: &PageQuery) -> Response {
    let per_page = q.per_page.unwrap_or(30).clamp(1, 100);
    let page = q.page.unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(items.len());
    let chunk: Vec<Value> = items[start..].iter().take(per_page).cloned().collect();
    let mut response = reply(StatusCode::OK, Value::Array(chunk));
    let link = |p: usize, rel: &str| {
        format!(
            "<{}{path}?per_page={per_page}&page={p}>; rel=\"{rel}\"",
            fake.url
        )
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < last {
        links.push(link(page + 1, "next"));
        links.push(link(last, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    if !links.is_empty() {
        let value = HeaderValue::from_str(&links.join(", ")).unwrap();
        response.headers_mut().insert("link", value);
    }
    response
}

async fn files(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "pulls.files", &headers, &repo)?;
    let pr = model.repos[&repo]
        .pulls
        .get(&n)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    // "Responses include a maximum of 3000 files."
    let items = pr
        .files
        .iter()
        .take(FILES_CAP)
        .map(|f| json::file(&repo, &pr.head_sha, f))
        .collect();
    Ok(paged(
        &fake,
        &format!("/repos/{repo}/pulls/{n}/files"),
        items,
        &q,
    ))
}

async fn reviews(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "pulls.reviews", &headers, &repo)?;
    let pr = model.repos[&repo]
        .pulls
        .get(&n)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    let items = pr
        .reviews
        .iter()
        .map(|rv| json::review(&fake.url, &repo, n, rv))
        .collect();
    Ok(paged(
        &fake,
        &format!("/repos/{repo}/pulls/{n}/reviews"),
        items,
        &q,
    ))
}

async fn comments(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "issues.comments.list", &headers, &repo)?;
    let repo_model = &model.repos[&repo];
    if !has_conversation(repo_model, n) {
        return Err(refuse(404, "Not Found"));
    }
    let items = repo_model
        .comments
        .values()
        .filter(|c| c.number == n)
        .map(|c| json::comment(&fake.url, &repo, model.app_id, c))
        .collect();
    Ok(paged(
        &fake,
        &format!("/repos/{repo}/issues/{n}/comments"),
        items,
        &q,
    ))
}

/// A pull request or a live issue: what comments go on.
fn has_conversation(repo: &super::RepoModel, number: u64) -> bool {
    repo.pulls.contains_key(&number) || repo.issues.get(&number).is_some_and(|i| !i.deleted)
}

/// A comment on `repo`#`number` by `author`; returns its id.
pub(super) fn add_comment(
    model: &mut Model,
    repo: &str,
    number: u64,
    author: &str,
    body: &str,
) -> u64 {
    let id = model.next_id();
    let now = json::timestamp(SystemTime::now());
    let repo_model = model.repo(repo);
    assert!(
        has_conversation(repo_model, number),
        "no pull request or issue {repo}#{number}"
    );
    repo_model.comments.insert(
        id,
        CommentModel {
            id,
            node_id: format!("IC_kwDOFake{id}"),
            number,
            author: author.to_string(),
            body: body.to_string(),
            created_at: now.clone(),
            updated_at: now,
            minimized_reason: None,
            edits: Vec::new(),
            reactions: Vec::new(),
        },
    );
    id
}

fn comment_body(body: &Bytes) -> Result<String, Response> {
    let body = body_json(body)?;
    let text = body["body"]
        .as_str()
        .ok_or_else(|| refuse(422, "Invalid request.\n\n\"body\" wasn't supplied."))?;
    if text.chars().count() > COMMENT_LIMIT {
        return Err(refuse(
            422,
            "Validation Failed: Body is too long (maximum is 65536 characters)",
        ));
    }
    Ok(text.to_string())
}

async fn create_comment(
    State(fake): Fake,
    Path((o, r, n)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "issues.comments.create", &headers, &repo)?;
    let text = comment_body(&body)?;
    if !has_conversation(&model.repos[&repo], n) {
        return Err(refuse(404, "Not Found"));
    }
    let id = add_comment(&mut model, &repo, n, BOT_LOGIN, &text);
    wrote(&mut model, installation);
    injected_after(&mut model, "issues.comments.create")?;
    let c = &model.repos[&repo].comments[&id];
    Ok(reply(
        StatusCode::CREATED,
        json::comment(&fake.url, &repo, model.app_id, c),
    ))
}

async fn update_comment(
    State(fake): Fake,
    Path((o, r, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "issues.comments.update", &headers, &repo)?;
    let text = comment_body(&body)?;
    let c = model
        .repo(&repo)
        .comments
        .get_mut(&id)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    if c.author != BOT_LOGIN {
        // An App may only edit its own comments without admin rights.
        return Err(refuse(403, "Resource not accessible by integration"));
    }
    c.edits.push(std::mem::replace(&mut c.body, text));
    c.updated_at = json::timestamp(SystemTime::now());
    wrote(&mut model, installation);
    let c = &model.repos[&repo].comments[&id];
    Ok(reply(
        StatusCode::OK,
        json::comment(&fake.url, &repo, model.app_id, c),
    ))
}

async fn delete_comment(
    State(fake): Fake,
    Path((o, r, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "issues.comments.delete", &headers, &repo)?;
    let comments = &mut model.repo(&repo).comments;
    let c = comments.get(&id).ok_or_else(|| refuse(404, "Not Found"))?;
    if c.author != BOT_LOGIN {
        return Err(refuse(403, "Resource not accessible by integration"));
    }
    comments.remove(&id);
    wrote(&mut model, installation);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /orgs/{org}/teams/{team_slug}/memberships/{username}`: 200 with the membership
/// (`state` active or pending) for a member or invitee, 404 for anyone else and for a
/// team the installation cannot see, 403 when the App has no Organization → Members
/// permission on the installation.
async fn team_membership(
    State(fake): Fake,
    Path((org, team, user)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Answer {
    let mut model = fake.lock();
    injected(&mut model, "teams.membership")?;
    let installation = installation(&model, &headers)?;
    let account = &model.installations[&installation];
    if !account.account.eq_ignore_ascii_case(&org) {
        return Err(refuse(404, "Not Found"));
    }
    if !account.permissions.contains_key("members") {
        return Err(refuse(403, "Resource not accessible by integration"));
    }
    let state = model
        .teams
        .get(&(org.clone(), team.clone()))
        .and_then(|members| members.get(&user))
        .ok_or_else(|| refuse(404, "Not Found"))?;
    Ok(reply(
        StatusCode::OK,
        json!({
            "url": format!("{}/organizations/{}/team/{}/memberships/{user}", fake.url, json::id_of(&org), json::id_of(&team)),
            "role": "member",
            "state": state,
        }),
    ))
}

const REACTIONS: [&str; 8] = [
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

async fn react(
    State(fake): Fake,
    Path((o, r, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "reactions.create", &headers, &repo)?;
    let content = body_json(&body)?["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !REACTIONS.contains(&content.as_str()) {
        return Err(refuse(
            422,
            "Validation Failed: content is not included in the list",
        ));
    }
    let reaction_id = model.next_id();
    let c = model
        .repo(&repo)
        .comments
        .get_mut(&id)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    let mine = (BOT_LOGIN.to_string(), content.clone());
    // Reacting twice with the same content answers 200 with the existing reaction.
    let status = if c.reactions.contains(&mine) {
        StatusCode::OK
    } else {
        c.reactions.push(mine);
        StatusCode::CREATED
    };
    wrote(&mut model, installation);
    Ok(reply(
        status,
        json!({
            "id": reaction_id,
            "node_id": format!("REA_lADOFake{reaction_id}"),
            "user": json::user(&fake.url, BOT_LOGIN),
            "content": content,
            "created_at": json::timestamp(SystemTime::now()),
        }),
    ))
}

/// A check run's state from a create or update body; `current` fills what an
/// update leaves out.
fn check_state(body: &Value, current: Option<&CheckRunState>) -> Result<CheckRunState, Response> {
    let conclusion = body["conclusion"].as_str().map(str::to_string);
    let status = match (body["status"].as_str(), &conclusion) {
        (_, Some(_)) => "completed".to_string(),
        (Some("completed"), None) => {
            return Err(refuse(
                422,
                "Invalid request.\n\nconclusion is required when status is completed.",
            ));
        }
        (Some(s @ ("queued" | "in_progress")), None) => s.to_string(),
        (Some(_), None) => {
            return Err(refuse(
                422,
                "Invalid request.\n\nstatus is not included in the list.",
            ));
        }
        (None, None) => current.map_or("queued".to_string(), |c| c.status.clone()),
    };
    let output = &body["output"];
    let text = |field: &str, old: Option<&String>| {
        output[field]
            .as_str()
            .map(str::to_string)
            .or(old.cloned())
            .unwrap_or_default()
    };
    let summary = text("summary", current.map(|c| &c.summary));
    let output_text = text("text", current.map(|c| &c.text));
    for field in [&summary, &output_text] {
        if field.chars().count() > 65_535 {
            return Err(refuse(
                422,
                "Invalid request.\n\nOnly 65535 characters are allowed; 65536 were supplied.",
            ));
        }
    }
    let details_url = body["details_url"]
        .as_str()
        .map(str::to_string)
        .or_else(|| current.and_then(|c| c.details_url.clone()));
    Ok(CheckRunState {
        conclusion: conclusion.or_else(|| {
            current
                .and_then(|c| c.conclusion.clone())
                .filter(|_| status == "completed")
        }),
        status,
        title: text("title", current.map(|c| &c.title)),
        summary,
        text: output_text,
        details_url,
    })
}

async fn create_check_run(
    State(fake): Fake,
    Path((o, r)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "checks.create", &headers, &repo)?;
    let body = body_json(&body)?;
    let (Some(name), Some(head_sha)) = (body["name"].as_str(), body["head_sha"].as_str()) else {
        return Err(refuse(
            422,
            "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.",
        ));
    };
    // Any commit of the repository, as GitHub takes it (a merge queue's group head is
    // on no pull request): https://docs.github.com/en/rest/checks/runs#create-a-check-run
    let known = model.repos[&repo].pulls.values().any(|p| {
        p.head_sha == head_sha
            || p.base_sha == head_sha
            || p.previous_head_sha.as_deref() == Some(head_sha)
    }) || model.repos[&repo]
        .origin
        .as_deref()
        .is_some_and(|o| crate::support::git_http::has_commit(o, head_sha));
    if !known {
        return Err(refuse(422, &format!("No commit found for SHA: {head_sha}")));
    }
    let state = check_state(&body, None)?;
    let id = model.next_id();
    let run = CheckRunModel {
        id,
        name: name.to_string(),
        head_sha: head_sha.to_string(),
        history: vec![state],
    };
    let answer = json::check_run(&fake.url, &repo, model.app_id, &run);
    model.repo(&repo).check_runs.insert(id, run);
    wrote(&mut model, installation);
    Ok(reply(StatusCode::CREATED, answer))
}

async fn update_check_run(
    State(fake): Fake,
    Path((o, r, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (mut model, installation) = enter(&fake, "checks.update", &headers, &repo)?;
    let body = body_json(&body)?;
    let app_id = model.app_id;
    let run = model
        .repo(&repo)
        .check_runs
        .get_mut(&id)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    let state = check_state(&body, run.history.last())?;
    run.history.push(state);
    let answer = json::check_run(&fake.url, &repo, app_id, run);
    wrote(&mut model, installation);
    Ok(reply(StatusCode::OK, answer))
}

async fn permission(
    State(fake): Fake,
    Path((o, r, user)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "collaborators.permission", &headers, &repo)?;
    let role = model.repos[&repo]
        .permissions
        .get(&user)
        .cloned()
        .unwrap_or_else(|| "read".to_string());
    // The legacy field folds maintain into write and triage into read.
    let legacy = match role.as_str() {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "none" => "none",
        _ => "read",
    };
    Ok(reply(
        StatusCode::OK,
        json!({ "permission": legacy, "role_name": role, "user": json::user(&fake.url, &user) }),
    ))
}

const CLASSIFIERS: [&str; 6] = [
    "ABUSE",
    "DUPLICATE",
    "OFF_TOPIC",
    "OUTDATED",
    "RESOLVED",
    "SPAM",
];

async fn graphql(State(fake): Fake, headers: HeaderMap, body: Bytes) -> Answer {
    let mut model = fake.lock();
    injected(&mut model, "graphql")?;
    let installation = installation(&model, &headers)?;
    let body = body_json(&body)?;
    let query = body["query"].as_str().unwrap_or_default();
    let graphql_error = |message: String| {
        reply(
            StatusCode::OK,
            json!({ "data": { "minimizeComment": null }, "errors": [{ "type": "NOT_FOUND", "path": ["minimizeComment"], "message": message }] }),
        )
    };
    if query.contains("statusCheckRollup") {
        return Ok(reply(
            StatusCode::OK,
            super::merge_gate::answer(&model, installation, &body["variables"]),
        ));
    }
    if !query.contains("minimizeComment") {
        return Ok(graphql_error(
            "the fake GitHub only knows the minimizeComment mutation".into(),
        ));
    }
    let classifier = query
        .split_once("classifier:")
        .map(|(_, rest)| {
            rest.trim_start()
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect::<String>()
        })
        .unwrap_or_default();
    if !CLASSIFIERS.contains(&classifier.as_str()) {
        return Ok(graphql_error(format!(
            "Argument 'classifier' has an invalid value ({classifier})."
        )));
    }
    let node_id = body["variables"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let comment = model
        .repos
        .values_mut()
        .filter(|r| r.installation == installation)
        .find_map(|r| r.comments.values_mut().find(|c| c.node_id == node_id));
    let Some(comment) = comment else {
        return Ok(graphql_error(format!(
            "Could not resolve to a node with the global id of '{node_id}'"
        )));
    };
    comment.minimized_reason = Some(classifier.clone());
    wrote(&mut model, installation);
    Ok(reply(
        StatusCode::OK,
        json!({ "data": { "minimizeComment": { "minimizedComment": { "isMinimized": true, "minimizedReason": classifier.to_lowercase() } } } }),
    ))
}
