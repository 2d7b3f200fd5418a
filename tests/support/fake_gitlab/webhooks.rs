//! Webhook deliveries built from the fake's state, in the shapes of GitLab's real
//! payloads (../shared/webhooks/gitlab): `Merge Request Hook` (open, reopen, close,
//! merge, update with and without new commits, draft → ready) and `Note Hook` on a
//! merge request or an issue, with GitLab's delivery headers (`X-Gitlab-Token` verbatim,
//! `Idempotency-Key` kept across retries, `X-Gitlab-Event-UUID`) and, when a signing
//! token is set, the Standard-Webhooks signature.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::{FakeGitLab, Model, MrModel, NoteSnapshot, ProjectModel, json, statuses};

/// One webhook delivery: what GitLab would POST to cascade.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `X-Gitlab-Event` (`Merge Request Hook`, `Note Hook`).
    pub event: String,
    pub body: Vec<u8>,
    /// `X-Gitlab-Token`: the hook's secret, verbatim; None sends no header.
    pub token: Option<String>,
    /// `Idempotency-Key`: the same on GitLab's retries (17.4+); None sends no header.
    pub idempotency_key: Option<String>,
    /// `X-Gitlab-Event-UUID`.
    pub event_uuid: String,
    /// The Standard-Webhooks signing token (`whsec_…`) the delivery is signed with.
    pub signing_token: Option<String>,
    /// `webhook-timestamp` (Unix seconds) when signed.
    pub timestamp: u64,
}

impl Delivery {
    fn new(event: &str, payload: &Value, model: &Model) -> Delivery {
        Delivery {
            event: event.to_string(),
            body: serde_json::to_vec(payload).unwrap(),
            token: Some(model.webhook_secret.clone()),
            idempotency_key: Some(uuid::Uuid::new_v4().to_string()),
            event_uuid: uuid::Uuid::new_v4().to_string(),
            signing_token: model.signing_token.clone(),
            timestamp: now(),
        }
    }

    /// GitLab retrying the same delivery: every header the same.
    pub fn redelivered(&self) -> Delivery {
        self.clone()
    }

    /// The same body as a new delivery (new `Idempotency-Key` and event UUID).
    pub fn renewed(&self) -> Delivery {
        Delivery {
            idempotency_key: Some(uuid::Uuid::new_v4().to_string()),
            event_uuid: uuid::Uuid::new_v4().to_string(),
            timestamp: now(),
            ..self.clone()
        }
    }

    /// The same delivery with another `X-Gitlab-Token` (None: no header).
    pub fn with_token(mut self, token: Option<&str>) -> Delivery {
        self.token = token.map(str::to_string);
        self
    }

    pub fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// `webhook-id`: the Idempotency-Key (or the event UUID without one).
    pub fn webhook_id(&self) -> String {
        self.idempotency_key
            .clone()
            .unwrap_or_else(|| self.event_uuid.clone())
    }

    /// The headers GitLab sends with it.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("content-type", "application/json".to_string()),
            ("user-agent", "GitLab/18.5.0".to_string()),
            ("x-gitlab-event", self.event.clone()),
            ("x-gitlab-event-uuid", self.event_uuid.clone()),
            (
                "x-gitlab-webhook-uuid",
                "02affd2d-2cba-4033-917d-ec22d5dc4b38".to_string(),
            ),
            ("x-gitlab-instance", json::WEB.to_string()),
        ];
        if let Some(token) = &self.token {
            headers.push(("x-gitlab-token", token.clone()));
        }
        if let Some(key) = &self.idempotency_key {
            headers.push(("idempotency-key", key.clone()));
        }
        if let Some(signing) = &self.signing_token {
            let id = self.webhook_id();
            headers.push(("webhook-id", id.clone()));
            headers.push(("webhook-timestamp", self.timestamp.to_string()));
            headers.push((
                "webhook-signature",
                standard_webhooks_signature(signing, &id, self.timestamp, &self.body),
            ));
        }
        headers
    }

    /// POSTs it to `url` (cascade's `/webhooks/gitlab`).
    pub async fn post(&self, url: &str) -> reqwest::Response {
        let mut request = reqwest::Client::new().post(url).body(self.body.clone());
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        request.send().await.expect("the webhook endpoint answers")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A new Standard-Webhooks signing token: `whsec_` and 32 random bytes in base64.
pub fn signing_token() -> String {
    let bytes: Vec<u8> = uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .chain(uuid::Uuid::new_v4().as_bytes())
        .copied()
        .collect();
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, the key being the token's
/// base64 after `whsec_`.
pub fn standard_webhooks_signature(
    signing_token: &str,
    id: &str,
    timestamp: u64,
    body: &[u8],
) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(signing_token.trim_start_matches("whsec_"))
        .expect("a whsec_ token holds base64");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// A user as webhook payloads describe it.
fn hook_user(model: &Model, id: u64) -> Value {
    let username = model.username(id);
    json!({
        "id": id,
        "name": username,
        "username": username,
        "avatar_url": format!("https://secure.gravatar.com/avatar/{id}?s=80&d=identicon"),
        "email": "[REDACTED]",
    })
}

/// The project a fork's merge request comes from: `<author>/<name>`.
fn fork_project(api: &str, model: &Model, p: &ProjectModel, mr: &MrModel) -> Value {
    let name = p.path.rsplit('/').next().unwrap_or(&p.path);
    let mut value = json::hook_project(api, p);
    let path = format!("{}/{name}", model.username(mr.author));
    value["id"] = json!(p.id + 100_000);
    value["path_with_namespace"] = json!(path);
    value["namespace"] = json!(model.username(mr.author));
    value["web_url"] = json!(format!("{api}/{path}"));
    value["git_http_url"] = json!(format!("{api}/{path}.git"));
    value["http_url"] = value["git_http_url"].clone();
    value
}

/// `object_attributes` of a Merge Request Hook (and, without `action`, the Note Hook's
/// `merge_request`).
fn mr_attributes(api: &str, model: &Model, p: &ProjectModel, mr: &MrModel) -> Value {
    let detailed = statuses::detailed_merge_status(model, p, mr);
    let source = if mr.fork {
        fork_project(api, model, p, mr)
    } else {
        json::hook_project(api, p)
    };
    let now = json::hook_timestamp(SystemTime::now());
    let attributes = json!({
        "assignee_id": null,
        "author_id": mr.author,
        "created_at": "2026-01-05 09:00:00 UTC",
        "description": "",
        "draft": mr.draft,
        "head_pipeline_id": null,
        "id": mr.id,
        "iid": mr.iid,
        "last_edited_at": null,
        "last_edited_by_id": null,
        "merge_commit_sha": mr.merge_commit_sha,
        "merge_error": null,
        "merge_params": { "force_remove_source_branch": "1" },
        "merge_status": if detailed == "mergeable" { "can_be_merged" } else { "unchecked" },
        "merge_user_id": null,
        "merge_when_pipeline_succeeds": false,
        "milestone_id": null,
        "source_branch": mr.source_branch,
        "source_project_id": source["id"],
        "state_id": match mr.state.as_str() { "opened" => 1, "closed" => 2, "merged" => 3, _ => 4 },
        "target_branch": mr.target_branch,
        "target_project_id": p.id,
        "time_estimate": 0,
        "title": mr.title,
        "updated_at": now,
        "updated_by_id": mr.author,
        "url": format!("{}/{}/-/merge_requests/{}", json::WEB, p.path, mr.iid),
    });
    // Two halves: one `json!` this size exceeds the macro recursion limit.
    let rest = json!({
        "source": source,
        "target": json::hook_project(api, p),
        "last_commit": {
            "id": mr.head_sha,
            "message": "Change infrastructure\n",
            "title": "Change infrastructure",
            "timestamp": "2026-01-05T09:00:00+00:00",
            "url": format!("{}/{}/-/commit/{}", json::WEB, p.path, mr.head_sha),
            "author": { "name": model.username(mr.author), "email": "[REDACTED]" },
        },
        "work_in_progress": mr.draft,
        "total_time_spent": 0,
        "time_change": 0,
        "human_total_time_spent": null,
        "human_time_change": null,
        "human_time_estimate": null,
        "assignee_ids": [],
        "reviewer_ids": [],
        "labels": [],
        "state": mr.state,
        "blocking_discussions_resolved": true,
        "first_contribution": false,
        "detailed_merge_status": detailed,
    });
    let mut attributes = attributes;
    attributes
        .as_object_mut()
        .unwrap()
        .extend(rest.as_object().unwrap().clone());
    attributes
}

fn repository(p: &ProjectModel) -> Value {
    json!({
        "name": p.path.rsplit('/').next().unwrap_or(&p.path),
        "url": format!("git@gitlab.example.com:{}.git", p.path),
        "description": "",
        "homepage": format!("{}/{}", json::WEB, p.path),
    })
}

fn change<T: serde::Serialize>(previous: T, current: T) -> Value {
    json!({ "previous": previous, "current": current })
}

impl FakeGitLab {
    /// Any event under any name, with the hook's secret (events cascade does not
    /// handle, and names GitLab never sends).
    pub fn event(&self, name: &str, payload: &Value) -> Delivery {
        Delivery::new(name, payload, &self.model())
    }

    /// A Merge Request Hook for the merge request as it is now, with `action`
    /// (`open`, `reopen`, `close`, `merge`, `approved`, `unapproved`, `update`),
    /// `changes` as given and `oldrev` when `oldrev` is set. The sender is `by`, or the
    /// author.
    fn merge_request_hook(
        &self,
        project: u64,
        iid: u64,
        action: &str,
        changes: Value,
        oldrev: Option<String>,
        by: Option<&str>,
    ) -> Delivery {
        let mut model = self.model();
        let sender = by.map(|username| model.user(username));
        let api = &self.shared.url;
        let p = &model.projects[&project];
        let mr = &p.mrs[&iid];
        let mut attributes = mr_attributes(api, &model, p, mr);
        attributes["action"] = json!(action);
        if let Some(oldrev) = oldrev {
            attributes["oldrev"] = json!(oldrev);
        }
        let payload = json!({
            "object_kind": "merge_request",
            "event_type": "merge_request",
            "user": hook_user(&model, sender.unwrap_or(mr.author)),
            "project": json::hook_project(api, p),
            "object_attributes": attributes,
            "labels": [],
            "changes": changes,
            "repository": repository(p),
            "assignees": [],
            "reviewers": [],
        });
        Delivery::new("Merge Request Hook", &payload, &model)
    }

    /// `open`, `reopen`, `close`, `merge`, `approved`, `unapproved`, …, with the
    /// `changes` GitLab sends for each.
    pub fn merge_request_event(&self, project: u64, iid: u64, action: &str) -> Delivery {
        let now = json::hook_timestamp(SystemTime::now());
        let changes = match action {
            "close" => json!({ "state_id": change(1, 2), "updated_at": change(now.clone(), now) }),
            "merge" => json!({ "state_id": change(1, 3), "updated_at": change(now.clone(), now) }),
            "reopen" => json!({ "state_id": change(2, 1), "updated_at": change(now.clone(), now) }),
            "open" => {
                json!({ "state_id": change(Value::Null, json!(1)), "updated_at": change(Value::Null, json!(now)) })
            }
            _ => json!({}),
        };
        self.merge_request_hook(project, iid, action, changes, None, None)
    }

    /// `update` after `push` by the author: `oldrev` is the head before it.
    pub fn merge_request_pushed_event(&self, project: u64, iid: u64) -> Delivery {
        self.merge_request_pushed_event_by(project, iid, None)
    }

    /// `update` after `push` by `pusher` (the author when `None`): GitLab's `user` is who
    /// pushed.
    pub fn merge_request_pushed_event_by(
        &self,
        project: u64,
        iid: u64,
        pusher: Option<&str>,
    ) -> Delivery {
        let oldrev = {
            let model = self.model();
            let mr = &model.projects[&project].mrs[&iid];
            mr.previous_head_sha
                .clone()
                .unwrap_or_else(|| mr.base_sha.clone())
        };
        let now = json::hook_timestamp(SystemTime::now());
        self.merge_request_hook(
            project,
            iid,
            "update",
            json!({ "updated_at": change(now.clone(), now) }),
            Some(oldrev),
            pusher,
        )
    }

    /// `update` without new commits, with `changes` (e.g. a title:
    /// `{"title": {"previous": "a", "current": "b"}}`).
    pub fn merge_request_updated_event(&self, project: u64, iid: u64, changes: Value) -> Delivery {
        self.merge_request_hook(project, iid, "update", changes, None, None)
    }

    /// `update` marking a draft ready (`changes.draft` true → false); call after
    /// `set_draft(.., false)`.
    pub fn merge_request_ready_event(&self, project: u64, iid: u64) -> Delivery {
        let title = self.model().projects[&project].mrs[&iid].title.clone();
        let changes = json!({
            "draft": change(true, false),
            "title": change(format!("Draft: {title}"), title),
        });
        self.merge_request_hook(project, iid, "update", changes, None, None)
    }

    /// A Note Hook for a note from `user_note` (or `system_note`).
    pub fn note_event(&self, note: &NoteSnapshot) -> Delivery {
        let model = self.model();
        let api = &self.shared.url;
        let p = &model.projects[&note.project_id];
        let mr = &p.mrs[&note.iid];
        let n = &model.notes[&note.id];
        let created = json::hook_timestamp(n.created_at);
        let mut payload = json!({
            "object_kind": "note",
            "event_type": "note",
            "user": hook_user(&model, n.author),
            "project_id": p.id,
            "project": json::hook_project(api, p),
            "object_attributes": {
                "attachment": null,
                "author_id": n.author,
                "change_position": null,
                "commit_id": null,
                "created_at": created,
                "discussion_id": format!("{:040x}", n.id),
                "id": n.id,
                "internal": false,
                "line_code": null,
                "note": n.body,
                "noteable_id": mr.id,
                "noteable_type": "MergeRequest",
                "original_position": null,
                "position": null,
                "project_id": p.id,
                "resolved_at": null,
                "resolved_by_id": null,
                "resolved_by_push": null,
                "st_diff": null,
                "system": n.system,
                "type": null,
                "updated_at": json::hook_timestamp(n.updated_at),
                "updated_by_id": null,
                "description": n.body,
                "url": format!("{}/{}/-/merge_requests/{}#note_{}", json::WEB, p.path, mr.iid, n.id),
                "action": if n.edits.is_empty() { "create" } else { "update" },
            },
            "repository": repository(p),
            "merge_request": mr_attributes(api, &model, p, mr),
        });
        // Older payloads also carry these on the merge request.
        payload["merge_request"]["assignee"] = Value::Null;
        payload["merge_request"]["position"] = json!(0);
        Delivery::new("Note Hook", &payload, &model)
    }

    /// A Note Hook for a note on an issue, from `user_issue_note`, as GitLab's "Comment on
    /// an issue" example has it (`noteable_type: Issue`, the issue in `issue`).
    pub fn issue_note_event(&self, note: &NoteSnapshot) -> Delivery {
        let model = self.model();
        let api = &self.shared.url;
        let p = &model.projects[&note.project_id];
        let (issue, n) = super::issues::issue_note(&model, p.id, note.iid, note.id);
        let payload = json!({
            "object_kind": "note",
            "event_type": "note",
            "user": hook_user(&model, n.author),
            "project_id": p.id,
            "project": json::hook_project(api, p),
            "object_attributes": {
                "attachment": null,
                "author_id": n.author,
                "change_position": null,
                "commit_id": null,
                "created_at": json::hook_timestamp(n.created_at),
                "discussion_id": format!("{:040x}", n.id),
                "id": n.id,
                "internal": false,
                "line_code": null,
                "note": n.body,
                "noteable_id": issue.id,
                "noteable_type": "Issue",
                "position": null,
                "project_id": p.id,
                "st_diff": null,
                "system": n.system,
                "type": null,
                "updated_at": json::hook_timestamp(n.updated_at),
                "updated_by_id": null,
                "description": n.body,
                "url": format!("{}/{}/-/issues/{}#note_{}", json::WEB, p.path, issue.iid, n.id),
                "action": if n.edits.is_empty() { "create" } else { "update" },
            },
            "repository": repository(p),
            "issue": {
                "id": issue.id,
                "iid": issue.iid,
                "title": issue.title,
                "description": issue.description,
                "state": issue.state,
                "author_id": issue.author,
                "project_id": p.id,
                "assignee_ids": [],
                "assignee_id": null,
                "labels": [],
                "confidential": false,
                "created_at": json::hook_timestamp(issue.created_at),
                "updated_at": json::hook_timestamp(issue.created_at),
                "url": format!("{}/{}/-/issues/{}", json::WEB, p.path, issue.iid),
            },
        });
        Delivery::new("Note Hook", &payload, &model)
    }
}
