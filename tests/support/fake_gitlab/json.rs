//! GitLab's JSON for the fake's model: the shapes the REST API (v4) and the webhook
//! payloads use, trimmed to the fields a client could plausibly read.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{DiffFile, Model, MrModel, NoteModel, ProjectModel, StatusModel};

/// The web host in URLs the fake hands out that nothing reads (users, merge requests,
/// notes). A project's own web page and clone URL are at the fake's address, its origin,
/// as GitLab serves both at its `external_url`.
pub const WEB: &str = "https://gitlab.example.com";

/// `2026-01-05T09:00:00.000Z`, as the REST API writes times.
pub fn timestamp(at: SystemTime) -> String {
    let ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64;
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// `2026-01-05 09:00:00 UTC`, as webhook payloads write times.
pub fn hook_timestamp(at: SystemTime) -> String {
    let text = timestamp(at);
    format!("{} {} UTC", &text[..10], &text[11..19])
}

/// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

pub fn user(model: &Model, id: u64) -> Value {
    let username = model.username(id);
    json!({
        "id": id,
        "username": username,
        "name": username,
        "state": "active",
        "locked": false,
        "avatar_url": format!("https://secure.gravatar.com/avatar/{id}?s=80&d=identicon"),
        "web_url": format!("{WEB}/{username}"),
    })
}

pub fn project(api: &str, p: &ProjectModel) -> Value {
    let name = p.path.rsplit('/').next().unwrap_or(&p.path);
    let namespace = p.path.rsplit_once('/').map_or("", |(ns, _)| ns);
    json!({
        "id": p.id,
        "name": name,
        "path": name,
        "path_with_namespace": p.path,
        "name_with_namespace": p.path.replace('/', " / "),
        "description": null,
        "default_branch": (!p.default_branch.is_empty()).then_some(&p.default_branch),
        "visibility": "private",
        "web_url": format!("{api}/{}", p.path),
        "ssh_url_to_repo": format!("git@gitlab.example.com:{}.git", p.path),
        "http_url_to_repo": format!("{api}/{}.git", p.path),
        "namespace": { "id": 1, "name": namespace, "path": namespace.rsplit('/').next().unwrap_or(namespace), "kind": "group", "full_path": namespace },
        "only_allow_merge_if_pipeline_succeeds": p.pipeline_must_succeed,
        "archived": false,
    })
}

/// The project as webhook payloads describe it (`project`, `source`, `target`).
pub fn hook_project(api: &str, p: &ProjectModel) -> Value {
    let name = p.path.rsplit('/').next().unwrap_or(&p.path);
    let namespace = p.path.rsplit_once('/').map_or("", |(ns, _)| ns);
    let http = format!("{api}/{}.git", p.path);
    let ssh = format!("git@gitlab.example.com:{}.git", p.path);
    json!({
        "id": p.id,
        "name": name,
        "description": "",
        "web_url": format!("{api}/{}", p.path),
        "avatar_url": null,
        "git_ssh_url": ssh,
        "git_http_url": http,
        "namespace": namespace,
        "visibility_level": 0,
        "path_with_namespace": p.path,
        "default_branch": p.default_branch,
        "ci_config_path": null,
        "homepage": format!("{api}/{}", p.path),
        "url": ssh,
        "ssh_url": ssh,
        "http_url": http,
    })
}

pub fn merge_request(model: &Model, p: &ProjectModel, mr: &MrModel, detailed: &str) -> Value {
    let source_project = if mr.fork { p.id + 100_000 } else { p.id };
    json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": p.id,
        "title": mr.title,
        "description": "",
        "state": mr.state,
        "created_at": "2026-01-05T09:00:00.000Z",
        "updated_at": "2026-01-05T09:00:00.000Z",
        "merged_at": null,
        "closed_at": null,
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
        "user_notes_count": model.notes.values().filter(|n| n.project == p.id && n.iid == mr.iid && !n.system).count(),
        "upvotes": 0,
        "downvotes": 0,
        "author": user(model, mr.author),
        "assignees": [],
        "reviewers": [],
        "source_project_id": source_project,
        "target_project_id": p.id,
        "labels": [],
        "draft": mr.draft,
        "work_in_progress": mr.draft,
        "milestone": null,
        "merge_when_pipeline_succeeds": false,
        "merge_status": if detailed == "mergeable" { "can_be_merged" } else { "cannot_be_merged" },
        "detailed_merge_status": detailed,
        "sha": mr.head_sha,
        // https://docs.gitlab.com/api/merge_requests/#get-single-mr: the merge commit once
        // merged (null for a fast-forward or before the merge).
        "merge_commit_sha": mr.merge_commit_sha,
        "squash_commit_sha": null,
        "discussion_locked": null,
        "reference": format!("!{}", mr.iid),
        "references": { "short": format!("!{}", mr.iid), "relative": format!("!{}", mr.iid), "full": format!("{}!{}", p.path, mr.iid) },
        "web_url": format!("{WEB}/{}/-/merge_requests/{}", p.path, mr.iid),
        "squash": false,
        "has_conflicts": detailed == "conflict",
        "blocking_discussions_resolved": true,
        "diff_refs": { "base_sha": mr.base_sha, "head_sha": mr.head_sha, "start_sha": mr.base_sha },
        "first_contribution": false,
    })
}

pub fn note(model: &Model, n: &NoteModel) -> Value {
    json!({
        "id": n.id,
        "type": null,
        "body": n.body,
        "attachment": null,
        "author": user(model, n.author),
        "created_at": timestamp(n.created_at),
        "updated_at": timestamp(n.updated_at),
        "system": n.system,
        "noteable_id": model.projects.get(&n.project).and_then(|p| p.mrs.get(&n.iid)).map_or(0, |m| m.id),
        "noteable_type": "MergeRequest",
        "project_id": n.project,
        "noteable_iid": n.iid,
        "resolvable": false,
        "confidential": false,
        "internal": false,
        "imported": false,
        "imported_from": "none",
    })
}

pub fn award(model: &Model, note_id: u64, id: u64, user_id: u64, name: &str) -> Value {
    json!({
        "id": id,
        "name": name,
        "user": user(model, user_id),
        "created_at": timestamp(SystemTime::now()),
        "updated_at": timestamp(SystemTime::now()),
        "awardable_id": note_id,
        "awardable_type": "Note",
    })
}

pub fn status(model: &Model, s: &StatusModel) -> Value {
    let finished = matches!(s.current(), "success" | "failed" | "canceled" | "skipped");
    json!({
        "id": s.id,
        "sha": s.sha,
        "ref": s.git_ref,
        "status": s.current(),
        "name": s.name,
        "target_url": s.target_url,
        "description": s.description,
        "created_at": timestamp(s.created_at),
        "started_at": (s.current() != "pending").then(|| timestamp(s.created_at)),
        "finished_at": finished.then(|| timestamp(SystemTime::now())),
        "allow_failure": false,
        "coverage": null,
        "pipeline_id": s.id + 500_000,
        "author": user(model, s.author),
    })
}

pub fn member(model: &Model, user_id: u64, level: u64) -> Value {
    let mut value = user(model, user_id);
    value["access_level"] = json!(level);
    value["expires_at"] = Value::Null;
    value["created_at"] = json!("2026-01-05T09:00:00.000Z");
    value["membership_state"] = json!("active");
    value
}

pub fn diff(f: &DiffFile) -> Value {
    json!({
        "old_path": f.old_path,
        "new_path": f.new_path,
        "a_mode": if f.new_file { "0" } else { "100644" },
        "b_mode": if f.deleted_file { "0" } else { "100644" },
        "diff": "@@ -1 +1 @@\n-old\n+new\n",
        "new_file": f.new_file,
        "renamed_file": f.renamed_file,
        "deleted_file": f.deleted_file,
        "generated_file": false,
    })
}
