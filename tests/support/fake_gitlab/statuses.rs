//! Commit statuses in the fake: GitLab's transition rules (a pending or running status
//! of the same name, sha and ref moves on, refusing `pending → pending`, `running →
//! pending` and `running → running` with GitLab's 400; a finished one is followed by a
//! new one), the listing, and the `detailed_merge_status` a merge request gets from
//! them.

use std::collections::BTreeMap;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::routes::{
    Answer, Fake, PageQuery, enter, fields, find_project, paged, refuse, reply, wrote,
};
use super::{Model, MrModel, ProjectModel, StatusModel, json};

/// What GitLab works out for `detailed_merge_status` (when a test set none): closed,
/// draft, the head's pipeline (every latest status, by name) when "pipelines must
/// succeed", then approvals.
pub(super) fn detailed_merge_status(model: &Model, p: &ProjectModel, mr: &MrModel) -> String {
    if let Some(set) = &mr.detailed_merge_status {
        return set.clone();
    }
    if mr.state != "opened" {
        return "not_open".into();
    }
    if mr.draft {
        return "draft_status".into();
    }
    if p.pipeline_must_succeed {
        let latest = latest_statuses(model, p.id, &mr.head_sha);
        if latest.is_empty()
            || latest
                .iter()
                .any(|s| matches!(s.current(), "created" | "pending" | "running"))
        {
            return if latest.is_empty() {
                "ci_must_pass"
            } else {
                "ci_still_running"
            }
            .into();
        }
        if latest
            .iter()
            .any(|s| matches!(s.current(), "failed" | "canceled"))
        {
            return "ci_must_pass".into();
        }
    }
    if (mr.approved_by.len() as u64) < p.approvals_required {
        return "not_approved".into();
    }
    "mergeable".into()
}

/// The newest status of each (name, ref) on `sha`.
fn latest_statuses<'m>(model: &'m Model, project: u64, sha: &str) -> Vec<&'m StatusModel> {
    let mut latest: BTreeMap<(&str, Option<&str>), &StatusModel> = BTreeMap::new();
    for s in model
        .statuses
        .values()
        .filter(|s| s.project == project && s.sha == sha)
    {
        latest.insert((&s.name, s.git_ref.as_deref()), s);
    }
    latest.into_values().collect()
}

/// GitLab's state machine event for a requested state.
fn event(state: &str) -> &'static str {
    match state {
        "pending" => "enqueue",
        "running" => "run",
        "success" => "succeed",
        "failed" => "drop",
        "canceled" => "cancel",
        _ => "skip",
    }
}

pub(super) async fn create(
    State(fake): Fake,
    Path((id, sha)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let (mut model, user) = enter(&fake, "statuses.create", &headers)?;
    let project = find_project(&model, &id)?;
    let mut params = fields(&headers, &body)?;
    let state = params.remove("state").unwrap_or_default();
    if !matches!(
        state.as_str(),
        "pending" | "running" | "success" | "failed" | "canceled" | "skipped"
    ) {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            json!({ "error": "state does not have a valid value" }),
        ));
    }
    let known = model.projects[&project].mrs.values().any(|m| {
        m.head_sha == sha
            || m.base_sha == sha
            || m.previous_head_sha.as_deref() == Some(sha.as_str())
    }) || model
        .statuses
        .values()
        .any(|s| s.project == project && s.sha == sha);
    if !known {
        return Err(refuse(404, "404 Commit Not Found"));
    }
    let name = params
        .remove("name")
        .or_else(|| params.remove("context"))
        .unwrap_or_else(|| "default".to_string());
    let git_ref = params.remove("ref");
    // GitLab moves a pending or running status of the same name, sha and ref on;
    // otherwise it makes a new one.
    let open = model
        .statuses
        .values()
        .filter(|s| s.project == project && s.sha == sha && s.name == name && s.git_ref == git_ref)
        .filter(|s| matches!(s.current(), "created" | "pending" | "running"))
        .map(|s| s.id)
        .max();
    let refused = match (
        open.map(|id| model.statuses[&id].current().to_string())
            .as_deref(),
        state.as_str(),
    ) {
        (Some(from @ ("pending" | "running")), "pending") | (Some(from @ "running"), "running") => {
            Some(from.to_string())
        }
        _ => None,
    };
    if let Some(from) = refused {
        let event = event(&state);
        return Err(refuse(
            400,
            &format!(
                "Cannot transition status via :{event} from :{from} (Reason(s): Status cannot transition via \"{event}\")"
            ),
        ));
    }
    let status_id = match open {
        Some(open) => {
            let s = model.statuses.get_mut(&open).unwrap();
            s.history.push(state);
            if let Some(d) = params.remove("description") {
                s.description = Some(d);
            }
            open
        }
        None => {
            let new = model.next_id();
            model.statuses.insert(
                new,
                StatusModel {
                    id: new,
                    project,
                    sha: sha.clone(),
                    name,
                    git_ref,
                    description: params.remove("description"),
                    target_url: params.remove("target_url"),
                    author: user,
                    history: vec![state],
                    created_at: SystemTime::now(),
                },
            );
            new
        }
    };
    wrote(&mut model, "statuses.create")?;
    Ok(reply(
        StatusCode::CREATED,
        json::status(&model, &model.statuses[&status_id]),
    ))
}

#[derive(Deserialize)]
pub(super) struct StatusQuery {
    page: Option<usize>,
    per_page: Option<usize>,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    name: Option<String>,
    all: Option<bool>,
}

pub(super) async fn list(
    State(fake): Fake,
    Path((id, sha)): Path<(String, String)>,
    Query(q): Query<StatusQuery>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "statuses.list", &headers)?;
    let project = find_project(&model, &id)?;
    let chosen: Vec<&StatusModel> = if q.all == Some(true) {
        model
            .statuses
            .values()
            .filter(|s| s.project == project && s.sha == sha)
            .collect()
    } else {
        latest_statuses(&model, project, &sha)
    };
    let mut chosen: Vec<&StatusModel> = chosen
        .into_iter()
        .filter(|s| q.git_ref.is_none() || s.git_ref == q.git_ref)
        .filter(|s| q.name.as_ref().is_none_or(|n| &s.name == n))
        .collect();
    chosen.sort_by_key(|s| s.id);
    let items = chosen.iter().map(|s| json::status(&model, s)).collect();
    let page = PageQuery {
        page: q.page,
        per_page: q.per_page,
    };
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{project}/repository/commits/{sha}/statuses"),
        items,
        &page,
    ))
}
