//! The fake's branches and issues, as GitLab's REST API (v4) documents them:
//! `GET /projects/:id/repository/branches/:branch` (the head read from the project's
//! origin git repository), `POST|GET /projects/:id/issues`, `GET|PUT
//! /projects/:id/issues/:iid` (`state_event` close or reopen), and an issue's notes
//! (`POST|GET …/issues/:iid/notes`, `POST …/notes/:note_id/award_emoji`). Issue iids
//! are counted apart from merge request iids, as on GitLab; a deleted issue is gone
//! (404) and a moved one stays behind, closed, with `moved_to_id`.
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::routes::{
    Answer, Fake, PageQuery, enter, fields, find_project, note_body, paged, refuse, reply, wrote,
};
use super::{AwardModel, FakeGitLab, Model, NoteModel, NoteSnapshot, Shared, json};

/// GitLab's limits on an issue's title and description, in characters.
pub const TITLE_LIMIT: usize = 255;
pub const DESCRIPTION_LIMIT: usize = 1_048_576;

pub(crate) struct IssueModel {
    pub id: u64,
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub author: u64,
    /// `opened` or `closed`.
    pub state: String,
    pub created_at: SystemTime,
    pub moved_to_id: Option<u64>,
    /// (title, description) before each edit, oldest first.
    pub edits: Vec<(String, String)>,
    /// The issue's notes, by id (ids from the instance-wide sequence).
    pub notes: BTreeMap<u64, NoteModel>,
}

/// An issue as the fake holds it, with its notes oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueSnapshot {
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub author: String,
    pub state: String,
    pub moved: bool,
    pub edits: Vec<(String, String)>,
    pub notes: Vec<NoteSnapshot>,
}

const ISSUE: &str = "/api/v4/projects/{id}/issues/{iid}";

pub fn routes() -> Router<std::sync::Arc<Shared>> {
    Router::new()
        .route(
            "/api/v4/projects/{id}/repository/branches/{branch}",
            get(branch),
        )
        .route(
            "/api/v4/projects/{id}/issues",
            get(list_issues).post(create_issue),
        )
        .route(ISSUE, get(issue).put(edit_issue))
        .route(
            &format!("{ISSUE}/notes"),
            get(list_issue_notes).post(create_issue_note),
        )
        .route(&format!("{ISSUE}/notes/{{note}}/award_emoji"), post(award))
}

async fn branch(
    State(fake): Fake,
    Path((id, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "branches.get", &headers)?;
    let p = &model.projects[&find_project(&model, &id)?];
    let sha = p
        .origin
        .as_deref()
        .and_then(|origin| super::git::branch_head(origin, &name))
        .ok_or_else(|| refuse(404, "404 Branch Not Found"))?;
    Ok(reply(
        StatusCode::OK,
        json!({
            "name": name,
            "merged": false,
            "protected": name == p.default_branch,
            "default": name == p.default_branch,
            "developers_can_push": false,
            "developers_can_merge": false,
            "can_push": true,
            "web_url": format!("{}/{}/-/tree/{name}", json::WEB, p.path),
            "commit": {
                "id": sha,
                "short_id": &sha[..8],
                "title": "head",
                "message": "head\n",
                "parent_ids": [],
                "created_at": "2026-01-05T09:00:00.000Z",
                "web_url": format!("{}/{}/-/commit/{sha}", json::WEB, p.path),
            },
        }),
    ))
}

fn issue_json(model: &Model, project: u64, i: &IssueModel) -> Value {
    let path = &model.projects[&project].path;
    json!({
        "id": i.id,
        "iid": i.iid,
        "project_id": project,
        "title": i.title,
        "description": i.description,
        "state": i.state,
        "created_at": json::timestamp(i.created_at),
        "updated_at": json::timestamp(i.created_at),
        "closed_at": (i.state == "closed").then(|| json::timestamp(i.created_at)),
        "labels": [],
        "milestone": null,
        "assignees": [],
        "author": json::user(model, i.author),
        "type": "ISSUE",
        "issue_type": "issue",
        "user_notes_count": i.notes.values().filter(|n| !n.system).count(),
        "upvotes": 0,
        "downvotes": 0,
        "confidential": false,
        "discussion_locked": null,
        "moved_to_id": i.moved_to_id,
        "web_url": format!("{}/{path}/-/issues/{}", json::WEB, i.iid),
        "references": { "short": format!("#{}", i.iid), "full": format!("{path}#{}", i.iid) },
    })
}

fn note_json(model: &Model, project: u64, issue: &IssueModel, n: &NoteModel) -> Value {
    let mut value = json::note(model, n);
    value["noteable_type"] = json!("Issue");
    value["noteable_id"] = json!(issue.id);
    value["noteable_iid"] = json!(issue.iid);
    value["project_id"] = json!(project);
    value
}

/// A text field, refused like GitLab when over `limit` characters.
fn bounded(found: Option<String>, field: &str, limit: usize) -> Result<Option<String>, Response> {
    match found {
        Some(text) if text.chars().count() > limit => Err(reply(
            StatusCode::BAD_REQUEST,
            json!({ "message": { field: [format!("is too long (maximum is {limit} characters)")] } }),
        )),
        other => Ok(other),
    }
}

fn find_issue<'m>(
    model: &'m mut Model,
    id: &str,
    iid: u64,
) -> Result<(u64, &'m mut IssueModel), Response> {
    let project = find_project(model, id)?;
    let issue = model
        .project(project)
        .issues
        .get_mut(&iid)
        .ok_or_else(|| refuse(404, "404 Not found"))?;
    Ok((project, issue))
}

pub(super) fn add_issue(
    model: &mut Model,
    project: u64,
    author: u64,
    title: &str,
    description: &str,
) -> u64 {
    let id = model.next_id();
    let p = model.project(project);
    let iid = p.next_issue_iid;
    p.next_issue_iid += 1;
    p.issues.insert(
        iid,
        IssueModel {
            id,
            iid,
            title: title.to_string(),
            description: description.to_string(),
            author,
            state: "opened".to_string(),
            created_at: SystemTime::now(),
            moved_to_id: None,
            edits: Vec::new(),
            notes: BTreeMap::new(),
        },
    );
    iid
}

async fn create_issue(
    State(fake): Fake,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "issues.create", &headers)?;
    let project = find_project(&model, &id)?;
    let mut fields = fields(&headers, &body)?;
    let title = bounded(fields.remove("title"), "title", TITLE_LIMIT)?
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            reply(
                StatusCode::BAD_REQUEST,
                json!({ "error": "title is missing" }),
            )
        })?;
    let description = bounded(
        fields.remove("description"),
        "description",
        DESCRIPTION_LIMIT,
    )?;
    let iid = add_issue(
        &mut model,
        project,
        user,
        &title,
        &description.unwrap_or_default(),
    );
    wrote(&mut model, "issues.create")?;
    let answer = issue_json(&model, project, &model.projects[&project].issues[&iid]);
    Ok(reply(StatusCode::CREATED, answer))
}

/// Every state unless `state` says; `author_id` filters; `order_by=created_at` and
/// `sort=desc` are GitLab's defaults.
async fn list_issues(
    State(fake): Fake,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "issues.list", &headers)?;
    let project = find_project(&model, &id)?;
    let author = q.get("author_id").and_then(|a| a.parse::<u64>().ok());
    let mut issues: Vec<&IssueModel> = model.projects[&project]
        .issues
        .values()
        .filter(|i| author.is_none_or(|a| a == i.author))
        .filter(|i| q.get("state").is_none_or(|s| s == "all" || *s == i.state))
        .collect();
    issues.sort_by_key(|i| (i.created_at, i.iid));
    if q.get("sort").map_or("desc", String::as_str) == "desc" {
        issues.reverse();
    }
    let items = issues
        .iter()
        .map(|i| issue_json(&model, project, i))
        .collect();
    let page = PageQuery {
        page: q.get("page").and_then(|v| v.parse().ok()),
        per_page: q.get("per_page").and_then(|v| v.parse().ok()),
    };
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{project}/issues"),
        items,
        &page,
    ))
}

async fn issue(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
) -> Answer {
    let (mut model, _) = enter(&fake, "issues.get", &headers)?;
    let project = find_issue(&mut model, &id, iid)?.0;
    let answer = issue_json(&model, project, &model.projects[&project].issues[&iid]);
    Ok(reply(StatusCode::OK, answer))
}

async fn edit_issue(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, _) = enter(&fake, "issues.edit", &headers)?;
    let mut fields = fields(&headers, &body)?;
    let title = bounded(fields.remove("title"), "title", TITLE_LIMIT)?;
    let description = bounded(
        fields.remove("description"),
        "description",
        DESCRIPTION_LIMIT,
    )?;
    let state = match fields.remove("state_event").as_deref() {
        None => None,
        Some("close") => Some("closed"),
        Some("reopen") => Some("opened"),
        Some(_) => {
            return Err(reply(
                StatusCode::BAD_REQUEST,
                json!({ "error": "state_event does not have a valid value" }),
            ));
        }
    };
    let (project, i) = find_issue(&mut model, &id, iid)?;
    if title.is_some() || description.is_some() {
        i.edits.push((i.title.clone(), i.description.clone()));
        i.title = title.unwrap_or_else(|| i.title.clone());
        i.description = description.unwrap_or_else(|| i.description.clone());
    }
    if let Some(state) = state {
        i.state = state.to_string();
    }
    wrote(&mut model, "issues.edit")?;
    let answer = issue_json(&model, project, &model.projects[&project].issues[&iid]);
    Ok(reply(StatusCode::OK, answer))
}

pub(super) fn add_issue_note(
    model: &mut Model,
    project: u64,
    iid: u64,
    author: u64,
    body: &str,
) -> u64 {
    let id = model.next_id();
    let now = SystemTime::now();
    let issue = model
        .project(project)
        .issues
        .get_mut(&iid)
        .unwrap_or_else(|| panic!("no issue {project}#{iid}"));
    issue.notes.insert(
        id,
        NoteModel {
            id,
            project,
            iid,
            author,
            body: body.to_string(),
            system: false,
            created_at: now,
            updated_at: now,
            edits: Vec::new(),
            awards: Vec::new(),
        },
    );
    id
}

async fn create_issue_note(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "issues.notes.create", &headers)?;
    let project = find_issue(&mut model, &id, iid)?.0;
    let text = note_body(&headers, &body)?;
    let note = add_issue_note(&mut model, project, iid, user, &text);
    wrote(&mut model, "issues.notes.create")?;
    let issue = &model.projects[&project].issues[&iid];
    Ok(reply(
        StatusCode::CREATED,
        note_json(&model, project, issue, &issue.notes[&note]),
    ))
}

async fn list_issue_notes(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Answer {
    let (mut model, _) = enter(&fake, "issues.notes.list", &headers)?;
    let project = find_issue(&mut model, &id, iid)?.0;
    let issue = &model.projects[&project].issues[&iid];
    let mut notes: Vec<&NoteModel> = issue.notes.values().collect();
    notes.sort_by_key(|n| (n.created_at, n.id));
    // GitLab lists notes newest first unless asked otherwise.
    if q.get("sort").map(String::as_str) != Some("asc") {
        notes.reverse();
    }
    let items = notes
        .iter()
        .map(|n| note_json(&model, project, issue, n))
        .collect();
    let page = PageQuery {
        page: q.get("page").and_then(|v| v.parse().ok()),
        per_page: q.get("per_page").and_then(|v| v.parse().ok()),
    };
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{project}/issues/{iid}/notes"),
        items,
        &page,
    ))
}

async fn award(
    State(fake): Fake,
    Path((id, iid, note)): Path<(String, u64, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "issues.notes.award", &headers)?;
    let name = fields(&headers, &body)?.remove("name").unwrap_or_default();
    if name.is_empty() {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            json!({ "error": "name is missing" }),
        ));
    }
    let award_id = model.next_id();
    let (_, issue) = find_issue(&mut model, &id, iid)?;
    let n = issue
        .notes
        .get_mut(&note)
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
    wrote(&mut model, "issues.notes.award")?;
    let answer = json::award(&model, note, award_id, user, &name);
    Ok(reply(StatusCode::CREATED, answer))
}

fn note_snapshot(model: &Model, project: u64, n: &NoteModel) -> NoteSnapshot {
    NoteSnapshot {
        id: n.id,
        project_id: project,
        iid: n.iid,
        author: model.username(n.author),
        body: n.body.clone(),
        system: n.system,
        edits: n.edits.clone(),
        awards: n
            .awards
            .iter()
            .map(|a| (model.username(a.user), a.name.clone()))
            .collect(),
    }
}

impl FakeGitLab {
    /// `username` opens an issue; its iid counts apart from merge requests'.
    pub fn open_issue(&self, project: u64, username: &str, title: &str, description: &str) -> u64 {
        let mut model = self.model();
        let author = model.user(username);
        add_issue(&mut model, project, author, title, description)
    }

    /// The issue as it is now, with its notes oldest first; `None` when there is none.
    pub fn issue(&self, project: u64, iid: u64) -> Option<IssueSnapshot> {
        let model = self.model();
        let i = model.projects[&project].issues.get(&iid)?;
        Some(IssueSnapshot {
            iid,
            title: i.title.clone(),
            description: i.description.clone(),
            author: model.username(i.author),
            state: i.state.clone(),
            moved: i.moved_to_id.is_some(),
            edits: i.edits.clone(),
            notes: i
                .notes
                .values()
                .map(|n| note_snapshot(&model, project, n))
                .collect(),
        })
    }

    /// Every issue of the project, oldest first.
    pub fn issues(&self, project: u64) -> Vec<IssueSnapshot> {
        let iids: Vec<u64> = self.model().projects[&project]
            .issues
            .keys()
            .copied()
            .collect();
        iids.into_iter()
            .filter_map(|iid| self.issue(project, iid))
            .collect()
    }

    /// `username` writes a note on the issue; the snapshot feeds `issue_note_event`.
    pub fn user_issue_note(
        &self,
        project: u64,
        iid: u64,
        username: &str,
        body: &str,
    ) -> NoteSnapshot {
        let mut model = self.model();
        let user = model.user(username);
        let id = add_issue_note(&mut model, project, iid, user, body);
        let n = &model.projects[&project].issues[&iid].notes[&id];
        note_snapshot(&model, project, n)
    }

    /// An owner deletes the issue: GitLab answers 404 for it from then on.
    pub fn delete_issue(&self, project: u64, iid: u64) {
        self.model().project(project).issues.remove(&iid);
    }

    /// Someone moves the issue to another project: it stays behind, closed, with
    /// `moved_to_id`.
    pub fn move_issue(&self, project: u64, iid: u64) {
        let mut model = self.model();
        let moved_to = model.next_id();
        let issue = model
            .project(project)
            .issues
            .get_mut(&iid)
            .expect("no such issue");
        issue.state = "closed".to_string();
        issue.moved_to_id = Some(moved_to);
    }

    /// Makes `branch` the default branch; `None` is an empty repository's `null`.
    pub fn set_default_branch(&self, project: u64, branch: Option<&str>) {
        self.model().project(project).default_branch = branch.unwrap_or_default().to_string();
    }
}

/// The issue note `note` on `project`'s issue `iid`, for the Note Hook builder.
pub(super) fn issue_note(
    model: &Model,
    project: u64,
    iid: u64,
    note: u64,
) -> (&IssueModel, &NoteModel) {
    let issue = &model.projects[&project].issues[&iid];
    (issue, &issue.notes[&note])
}
