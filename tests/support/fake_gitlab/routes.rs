//! The fake's HTTP endpoints: exactly the ones cascade calls, under `/api/v4`, with
//! GitLab's authentication, pagination, error bodies and commit-status transitions;
//! anything else under `*.git/` is git over smart HTTP (`git.rs`).
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    AwardModel, Failure, Model, MrModel, NOTE_LIMIT, NoteModel, ProjectModel, RequestRecord,
    Shared, git, json, statuses,
};

pub(super) type Fake = State<Arc<Shared>>;
pub(super) type Answer = Result<Response, Response>;
type Guard<'a> = MutexGuard<'a, Model>;

const MR: &str = "/api/v4/projects/{id}/merge_requests/{iid}";

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api/v4/user", get(current_user))
        .route("/api/v4/users", get(users))
        .route("/api/v4/projects/{id}", get(project))
        .route("/api/v4/projects/{id}/approvals", get(project_approvals))
        .route(
            "/api/v4/projects/{id}/statuses/{sha}",
            post(statuses::create),
        )
        .route(
            "/api/v4/projects/{id}/repository/commits/{sha}/statuses",
            get(statuses::list),
        )
        .route(
            "/api/v4/projects/{id}/members/all/{user}",
            get(project_member),
        )
        .route("/api/v4/groups/{id}/members/all/{user}", get(group_member))
        .route(MR, get(merge_request))
        .route(&format!("{MR}/approvals"), get(approvals))
        .route(&format!("{MR}/diffs"), get(diffs))
        .route(&format!("{MR}/notes"), get(list_notes).post(create_note))
        .route(
            &format!("{MR}/notes/{{note}}"),
            put(edit_note).delete(delete_note),
        )
        .route(&format!("{MR}/notes/{{note}}/award_emoji"), post(award))
        .merge(super::issues::routes())
        .merge(super::commits::routes())
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(shared.clone(), log_request))
        .with_state(shared)
}

async fn fallback(State(fake): Fake, request: Request) -> Response {
    if request.uri().path().contains(".git/") {
        return git::serve(fake, request).await;
    }
    reply(StatusCode::NOT_FOUND, json!({ "error": "404 Not Found" }))
}

async fn log_request(State(fake): Fake, request: Request, next: Next) -> Response {
    let authorized = {
        let model = fake.lock();
        token_user(&model, request.headers()).is_some()
    };
    fake.lock().requests.push(RequestRecord {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        query: request.uri().query().map(str::to_string),
        authorized,
    });
    next.run(request).await
}

pub(super) fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

pub(super) fn refuse(status: u16, message: &str) -> Response {
    reply(
        StatusCode::from_u16(status).unwrap(),
        json!({ "message": message }),
    )
}

pub(super) fn failure_response(failure: Failure) -> Response {
    let status = StatusCode::from_u16(failure.status).unwrap();
    let mut response = match failure.message {
        Some(message) => refuse(failure.status, &message),
        // Rack::Attack's throttle answers in plain text.
        None => (status, "Retry later\n").into_response(),
    };
    for (name, value) in &failure.headers {
        response.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    response
}

/// The queued failure for `kind` (`after`: once the request was carried out), if any.
pub(super) fn injected(model: &mut Model, kind: &str, after: bool) -> Result<(), Response> {
    match model.take_failure(kind, after) {
        Some(failure) => Err(failure_response(failure)),
        None => Ok(()),
    }
}

/// The user a request's token acts as: `PRIVATE-TOKEN`, `Authorization: Bearer`, or
/// (for git) the password of `Authorization: Basic`.
pub(super) fn token_user(model: &Model, headers: &HeaderMap) -> Option<u64> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let token = header("private-token").map(str::to_string).or_else(|| {
        let auth = header("authorization")?;
        if let Some(bearer) = auth.strip_prefix("Bearer ") {
            return Some(bearer.to_string());
        }
        use base64::Engine as _;
        let basic = auth.strip_prefix("Basic ")?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic.trim())
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        Some(decoded.split_once(':')?.1.to_string())
    })?;
    model.tokens.get(&token).copied()
}

/// Checks failure injection and the token: the model and the token's user.
pub(super) fn enter<'a>(
    fake: &'a Shared,
    kind: &str,
    headers: &HeaderMap,
) -> Result<(Guard<'a>, u64), Response> {
    let mut model = fake.lock();
    injected(&mut model, kind, false)?;
    let user = token_user(&model, headers).ok_or_else(|| refuse(401, "401 Unauthorized"))?;
    Ok((model, user))
}

pub(super) fn find_project(model: &Model, id: &str) -> Result<u64, Response> {
    model
        .find_project(id)
        .ok_or_else(|| refuse(404, "404 Project Not Found"))
}

fn find_mr<'m>(
    model: &'m Model,
    id: &str,
    iid: u64,
) -> Result<(&'m ProjectModel, &'m MrModel), Response> {
    let project = &model.projects[&find_project(model, id)?];
    let mr = project
        .mrs
        .get(&iid)
        .ok_or_else(|| refuse(404, "404 Not found"))?;
    Ok((project, mr))
}

pub(super) fn wrote(model: &mut Model, kind: &str) -> Result<(), Response> {
    model.writes += 1;
    injected(model, kind, true)
}

/// The request's parameters: a form (what the `gitlab` crate sends) or JSON.
pub(super) fn fields(
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<HashMap<String, String>, Response> {
    let json_body = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json_body {
        return Ok(url::form_urlencoded::parse(body).into_owned().collect());
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| refuse(400, "400 Bad request - JSON parse error"))?;
    let object = value
        .as_object()
        .ok_or_else(|| refuse(400, "400 Bad request"))?;
    Ok(object
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_string),
            )
        })
        .collect())
}

#[derive(Deserialize, Default)]
pub(super) struct PageQuery {
    pub page: Option<usize>,
    pub per_page: Option<usize>,
}

/// One page of `items` (GitLab: 20 by default, at most 100) with GitLab's pagination
/// headers (`X-Page`, `X-Next-Page`, `X-Total`, …) and `Link`.
pub(super) fn paged(fake: &Shared, path: &str, items: Vec<Value>, q: &PageQuery) -> Response {
    let per_page = q.per_page.unwrap_or(20).clamp(1, 100);
    let page = q.page.unwrap_or(1).max(1);
    let pages = items.len().div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(items.len());
    let total = items.len();
    let chunk: Vec<Value> = items.into_iter().skip(start).take(per_page).collect();
    let mut response = reply(StatusCode::OK, Value::Array(chunk));
    let next = if page < pages {
        (page + 1).to_string()
    } else {
        String::new()
    };
    let prev = if page > 1 {
        (page - 1).to_string()
    } else {
        String::new()
    };
    let link = |p: usize, rel: &str| {
        format!(
            "<{}{path}?page={p}&per_page={per_page}>; rel=\"{rel}\"",
            fake.url
        )
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < pages {
        links.push(link(page + 1, "next"));
    }
    links.push(link(1, "first"));
    links.push(link(pages, "last"));
    let headers = response.headers_mut();
    for (name, value) in [
        ("x-page", page.to_string()),
        ("x-per-page", per_page.to_string()),
        ("x-next-page", next),
        ("x-prev-page", prev),
        ("x-total", total.to_string()),
        ("x-total-pages", pages.to_string()),
        ("link", links.join(", ")),
    ] {
        headers.insert(name, HeaderValue::from_str(&value).unwrap());
    }
    response
}

async fn current_user(State(fake): Fake, headers: HeaderMap) -> Answer {
    let (model, user) = enter(&fake, "user", &headers)?;
    let mut value = json::user(&model, user);
    value["bot"] = json!(model.username(user).contains("_bot"));
    value["created_at"] = json!("2026-01-05T09:00:00.000Z");
    Ok(reply(StatusCode::OK, value))
}

#[derive(Deserialize)]
struct UsersQuery {
    username: Option<String>,
}

async fn users(State(fake): Fake, Query(q): Query<UsersQuery>, headers: HeaderMap) -> Answer {
    let (model, _) = enter(&fake, "users", &headers)?;
    let found: Vec<Value> = model
        .users
        .values()
        .filter(|u| {
            q.username
                .as_ref()
                .is_none_or(|name| u.username.eq_ignore_ascii_case(name))
        })
        .map(|u| json::user(&model, u.id))
        .collect();
    Ok(reply(StatusCode::OK, Value::Array(found)))
}

async fn project(State(fake): Fake, Path(id): Path<String>, headers: HeaderMap) -> Answer {
    let (model, _) = enter(&fake, "projects.get", &headers)?;
    let project = find_project(&model, &id)?;
    Ok(reply(
        StatusCode::OK,
        json::project(&fake.url, &model.projects[&project]),
    ))
}

async fn project_approvals(
    State(fake): Fake,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "project_approvals", &headers)?;
    let p = &model.projects[&find_project(&model, &id)?];
    Ok(reply(
        StatusCode::OK,
        json!({
            "approvers": [],
            "approver_groups": [],
            "approvals_before_merge": p.approvals_required,
            "reset_approvals_on_push": p.reset_approvals_on_push,
            "selective_code_owner_removals": false,
            "disable_overriding_approvers_per_merge_request": false,
            "merge_requests_author_approval": false,
            "merge_requests_disable_committers_approval": false,
            "require_password_to_approve": false,
            "require_reauthentication_to_approve": false,
        }),
    ))
}

async fn merge_request(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "merge_requests.get", &headers)?;
    let (p, mr) = find_mr(&model, &id, iid)?;
    let detailed = statuses::detailed_merge_status(&model, p, mr);
    Ok(reply(
        StatusCode::OK,
        json::merge_request(&model, p, mr, &detailed),
    ))
}

async fn approvals(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "approvals", &headers)?;
    let (p, mr) = find_mr(&model, &id, iid)?;
    let approved_by: Vec<Value> = mr
        .approved_by
        .iter()
        .map(|u| json!({ "user": json::user(&model, *u) }))
        .collect();
    let left = p
        .approvals_required
        .saturating_sub(mr.approved_by.len() as u64);
    Ok(reply(
        StatusCode::OK,
        json!({
            "id": mr.id,
            "iid": mr.iid,
            "project_id": p.id,
            "title": mr.title,
            "state": mr.state,
            "merge_status": "can_be_merged",
            "approved": left == 0,
            "approvals_required": p.approvals_required,
            "approvals_left": left,
            "approved_by": approved_by,
            "user_has_approved": false,
            "user_can_approve": true,
        }),
    ))
}

async fn diffs(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "diffs", &headers)?;
    let (p, mr) = find_mr(&model, &id, iid)?;
    let items = mr.files.iter().map(json::diff).collect();
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{}/merge_requests/{iid}/diffs", p.id),
        items,
        &q,
    ))
}

#[derive(Deserialize)]
struct NotesQuery {
    page: Option<usize>,
    per_page: Option<usize>,
    sort: Option<String>,
    order_by: Option<String>,
}

async fn list_notes(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    Query(q): Query<NotesQuery>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "notes.list", &headers)?;
    let (p, _) = find_mr(&model, &id, iid)?;
    let mut notes: Vec<&NoteModel> = model
        .notes
        .values()
        .filter(|n| n.project == p.id && n.iid == iid)
        .collect();
    let by_updated = q.order_by.as_deref() == Some("updated_at");
    notes.sort_by_key(|n| {
        (
            if by_updated {
                n.updated_at
            } else {
                n.created_at
            },
            n.id,
        )
    });
    // GitLab lists notes newest first unless asked otherwise.
    if q.sort.as_deref() != Some("asc") {
        notes.reverse();
    }
    let items = notes.iter().map(|n| json::note(&model, n)).collect();
    let page = PageQuery {
        page: q.page,
        per_page: q.per_page,
    };
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{}/merge_requests/{iid}/notes", p.id),
        items,
        &page,
    ))
}

/// A note on `project`!`iid` by `author`; returns its id.
pub(super) fn add_note(
    model: &mut Model,
    project: u64,
    iid: u64,
    author: u64,
    body: &str,
    system: bool,
) -> u64 {
    assert!(
        model.projects[&project].mrs.contains_key(&iid),
        "no merge request {project}!{iid}"
    );
    let id = model.next_id();
    let now = SystemTime::now();
    model.notes.insert(
        id,
        NoteModel {
            id,
            project,
            iid,
            author,
            body: body.to_string(),
            system,
            created_at: now,
            updated_at: now,
            edits: Vec::new(),
            awards: Vec::new(),
        },
    );
    id
}

pub(super) fn note_body(headers: &HeaderMap, body: &Bytes) -> Result<String, Response> {
    let text = fields(headers, body)?
        .remove("body")
        .filter(|b| !b.is_empty())
        .ok_or_else(|| {
            reply(
                StatusCode::BAD_REQUEST,
                json!({ "error": "body is missing" }),
            )
        })?;
    if text.chars().count() > NOTE_LIMIT {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            json!({ "message": { "note": [format!("is too long (maximum is {NOTE_LIMIT} characters)")] } }),
        ));
    }
    Ok(text)
}

async fn create_note(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "notes.create", &headers)?;
    let project = find_mr(&model, &id, iid)?.0.id;
    let text = note_body(&headers, &body)?;
    let note = add_note(&mut model, project, iid, user, &text, false);
    wrote(&mut model, "notes.create")?;
    Ok(reply(
        StatusCode::CREATED,
        json::note(&model, &model.notes[&note]),
    ))
}

/// The note `note` on the merge request, which the token's user must have written.
fn own_note<'m>(
    model: &'m mut Model,
    id: &str,
    iid: u64,
    note: u64,
    user: u64,
) -> Result<&'m mut NoteModel, Response> {
    let project = find_mr(model, id, iid)?.0.id;
    let n = model
        .notes
        .get_mut(&note)
        .filter(|n| n.project == project && n.iid == iid)
        .ok_or_else(|| refuse(404, "404 Note Not Found"))?;
    if n.author != user {
        return Err(refuse(403, "403 Forbidden"));
    }
    Ok(n)
}

async fn edit_note(
    State(fake): Fake,
    Path((id, iid, note)): Path<(String, u64, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "notes.edit", &headers)?;
    let text = note_body(&headers, &body)?;
    let n = own_note(&mut model, &id, iid, note, user)?;
    n.edits.push(std::mem::replace(&mut n.body, text));
    n.updated_at = SystemTime::now();
    wrote(&mut model, "notes.edit")?;
    Ok(reply(
        StatusCode::OK,
        json::note(&model, &model.notes[&note]),
    ))
}

async fn delete_note(
    State(fake): Fake,
    Path((id, iid, note)): Path<(String, u64, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (mut model, user) = enter(&fake, "notes.delete", &headers)?;
    own_note(&mut model, &id, iid, note, user)?;
    model.notes.remove(&note);
    wrote(&mut model, "notes.delete")?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn award(
    State(fake): Fake,
    Path((id, iid, note)): Path<(String, u64, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "notes.award", &headers)?;
    let name = fields(&headers, &body)?.remove("name").unwrap_or_default();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '+')
    {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            json!({ "error": "name is missing" }),
        ));
    }
    let project = find_mr(&model, &id, iid)?.0.id;
    let award_id = model.next_id();
    let n = model
        .notes
        .get_mut(&note)
        .filter(|n| n.project == project && n.iid == iid)
        .ok_or_else(|| refuse(404, "404 Note Not Found"))?;
    if n.awards.iter().any(|a| a.user == user && a.name == name) {
        // GitLab's own wording for a repeated award.
        return Err(refuse(
            404,
            "404 Award Emoji Name has already been taken Not Found",
        ));
    }
    n.awards.push(AwardModel {
        user,
        name: name.clone(),
    });
    wrote(&mut model, "notes.award")?;
    Ok(reply(
        StatusCode::CREATED,
        json::award(&model, note, award_id, user, &name),
    ))
}

/// `path` and every group above it (`acme/platform/infra` → `acme/platform/infra`,
/// `acme/platform`, `acme`).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(path), |p| p.rsplit_once('/').map(|(up, _)| up))
}

/// The highest access level `user` has in group `path`, directly or inherited.
fn group_level(model: &Model, path: &str, user: u64) -> Option<u64> {
    ancestors(path)
        .filter_map(|g| model.groups.get(g)?.1.get(&user).copied())
        .max()
}

async fn project_member(
    State(fake): Fake,
    Path((id, user)): Path<(String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "members.project", &headers)?;
    let p = &model.projects[&find_project(&model, &id)?];
    let namespace = p.path.rsplit_once('/').map(|(ns, _)| ns);
    let level = p
        .members
        .get(&user)
        .copied()
        .into_iter()
        .chain(namespace.and_then(|ns| group_level(&model, ns, user)))
        .max()
        .ok_or_else(|| refuse(404, "404 Not found"))?;
    Ok(reply(StatusCode::OK, json::member(&model, user, level)))
}

async fn group_member(
    State(fake): Fake,
    Path((id, user)): Path<(String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "members.group", &headers)?;
    let path = match id.parse::<u64>() {
        Ok(gid) => model
            .groups
            .iter()
            .find(|(_, (g, _))| *g == gid)
            .map(|(p, _)| p.clone()),
        Err(_) => model
            .groups
            .keys()
            .find(|p| p.eq_ignore_ascii_case(&id))
            .cloned(),
    }
    .ok_or_else(|| refuse(404, "404 Group Not Found"))?;
    let level = group_level(&model, &path, user).ok_or_else(|| refuse(404, "404 Not found"))?;
    Ok(reply(StatusCode::OK, json::member(&model, user, level)))
}
