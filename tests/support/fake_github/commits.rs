//! A pull request's commits, as GitHub's REST API lists them
//! (<https://docs.github.com/en/rest/pulls/pulls#list-commits-on-a-pull-request>):
//! `GET /repos/{o}/{r}/pulls/{n}/commits`, oldest first, paginated, at most 250. The
//! commits are read from the repository's origin (git, from the pull request's base to
//! its head), and GitHub links an author or committer to an account by the commit's
//! email: `null` when no account has it. The fake knows the emails tests link
//! (`FakeGitHub::link_email`), and `noreply@github.com`, which GitHub commits from its
//! web interface with and links to `web-flow`.
// A refusal is the HTTP answer itself, carried as the error the way axum handlers do.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::{Value, json};

use super::routes::{Answer, PageQuery, enter, paged, refuse};
use super::{FakeGitHub, Shared, json};

/// "Lists a maximum of 250 commits for a pull request."
pub const COMMITS_CAP: usize = 250;

/// The email GitHub's web interface commits with, linked to the `web-flow` account.
pub const WEB_FLOW_EMAIL: &str = "noreply@github.com";

pub fn routes() -> Router<Arc<Shared>> {
    Router::new().route("/repos/{owner}/{repo}/pulls/{number}/commits", get(commits))
}

/// One commit as `git log` in the origin has it.
struct GitCommit {
    sha: String,
    parents: Vec<String>,
    author: (String, String, String),
    committer: (String, String, String),
    message: String,
}

/// The commits on `head` that `base` lacks, oldest first; none when the origin is no
/// local repository or lacks either commit (tests that never push).
fn git_commits(origin: Option<&std::path::Path>, base: &str, head: &str) -> Vec<GitCommit> {
    let Some(origin) = origin.filter(|o| o.is_dir()) else {
        return Vec::new();
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(origin)
        .args([
            "log",
            "--reverse",
            "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1e",
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
            (f.len() == 9).then(|| GitCommit {
                sha: f[0].to_string(),
                parents: f[1].split_whitespace().map(str::to_string).collect(),
                author: (f[2].into(), f[3].into(), f[4].into()),
                committer: (f[5].into(), f[6].into(), f[7].into()),
                message: f[8].trim_end().to_string(),
            })
        })
        .collect()
}

async fn commits(
    State(fake): State<Arc<Shared>>,
    Path((o, r, n)): Path<(String, String, u64)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Answer {
    let repo = format!("{o}/{r}");
    let (model, _) = enter(&fake, "pulls.commits", &headers, &repo)?;
    let repo_model = &model.repos[&repo];
    let pr = repo_model
        .pulls
        .get(&n)
        .ok_or_else(|| refuse(404, "Not Found"))?;
    let api = &fake.url;
    let account = |email: &str| -> Value {
        match model.linked_emails.get(&email.to_ascii_lowercase()) {
            Some(login) => json::user(api, login),
            None => Value::Null,
        }
    };
    let person = |(name, email, date): &(String, String, String)| json!({ "name": name, "email": email, "date": date });
    let items = git_commits(repo_model.origin.as_deref(), &pr.base_sha, &pr.head_sha)
        .into_iter()
        .take(COMMITS_CAP)
        .map(|c| {
            let sha = &c.sha;
            json!({
                "url": format!("{api}/repos/{repo}/commits/{sha}"),
                "sha": sha,
                "node_id": format!("C_kwDO{sha}"),
                "html_url": format!("{}/{repo}/commit/{sha}", json::WEB),
                "comments_url": format!("{api}/repos/{repo}/commits/{sha}/comments"),
                "commit": {
                    "url": format!("{api}/repos/{repo}/git/commits/{sha}"),
                    "author": person(&c.author),
                    "committer": person(&c.committer),
                    "message": c.message,
                    "tree": { "url": format!("{api}/repos/{repo}/git/trees/{sha}"), "sha": sha },
                    "comment_count": 0,
                    "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null },
                },
                "author": account(&c.author.1),
                "committer": account(&c.committer.1),
                "parents": c.parents.iter().map(|p| json!({
                    "url": format!("{api}/repos/{repo}/commits/{p}"),
                    "sha": p,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(paged(
        &fake,
        &format!("/repos/{repo}/pulls/{n}/commits"),
        items,
        &q,
    ))
}

impl FakeGitHub {
    /// GitHub links commits with `email` (author or committer) to `login`, as when the
    /// account has that email verified.
    pub fn link_email(&self, email: &str, login: &str) {
        self.model()
            .linked_emails
            .insert(email.to_ascii_lowercase(), login.to_string());
    }
}
