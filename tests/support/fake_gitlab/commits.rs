//! A merge request's commits, as GitLab's REST API lists them
//! (<https://docs.gitlab.com/api/merge_requests/#get-single-merge-request-commits>):
//! `GET /projects/:id/merge_requests/:iid/commits`, newest first, paginated, each with
//! the author and committer names and emails written in it (GitLab links them to no
//! user here). The commits are read from the project's origin (git, from the merge
//! request's base to its head).
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::json;

use super::routes::{Answer, Fake, PageQuery, enter, find_project, paged, refuse};
use super::{Shared, json};

pub fn routes() -> Router<Arc<Shared>> {
    Router::new().route(
        "/api/v4/projects/{id}/merge_requests/{iid}/commits",
        get(commits),
    )
}

/// `git log base..head` in `origin`, newest first, as GitLab's commit JSON; none when
/// there is no origin or it lacks either commit (tests that never push).
fn git_commits(
    origin: Option<&std::path::Path>,
    base: &str,
    head: &str,
    web: &str,
) -> Vec<serde_json::Value> {
    let Some(origin) = origin.filter(|o| o.is_dir()) else {
        return Vec::new();
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(origin)
        .args([
            "log",
            "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%s%x1f%B%x1e",
        ])
        .arg(format!("{base}..{head}"))
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .split('\x1e')
        .filter_map(|record| {
            let f: Vec<&str> = record.trim_start_matches('\n').split('\x1f').collect();
            (f.len() == 10).then(|| {
                json!({
                    "id": f[0],
                    "short_id": &f[0][..11.min(f[0].len())],
                    "created_at": f[7],
                    "parent_ids": f[1].split_whitespace().collect::<Vec<_>>(),
                    "title": f[8],
                    "message": f[9].trim_end(),
                    "author_name": f[2],
                    "author_email": f[3],
                    "authored_date": f[4],
                    "committer_name": f[5],
                    "committer_email": f[6],
                    "committed_date": f[7],
                    "trailers": {},
                    "extended_trailers": {},
                    "web_url": format!("{web}/-/commit/{}", f[0]),
                })
            })
        })
        .collect()
}

async fn commits(
    State(fake): Fake,
    Path((id, iid)): Path<(String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let (model, _) = enter(&fake, "merge_requests.commits", &headers)?;
    let p = &model.projects[&find_project(&model, &id)?];
    let mr = p
        .mrs
        .get(&iid)
        .ok_or_else(|| refuse(404, "404 Not found"))?;
    let web = format!("{}/{}", json::WEB, p.path);
    let items = git_commits(p.origin.as_deref(), &mr.base_sha, &mr.head_sha, &web);
    Ok(paged(
        &fake,
        &format!("/api/v4/projects/{}/merge_requests/{iid}/commits", p.id),
        items,
        &q,
    ))
}
