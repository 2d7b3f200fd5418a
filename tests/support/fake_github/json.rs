//! GitHub's JSON for the fake's model: the same shapes the REST API and the
//! webhook payloads use (ids, node_id, user.login, html_url, …), trimmed to
//! the fields a client could plausibly read.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{CheckRunModel, CommentModel, PullModel, RepoModel, ReviewModel};

pub const WEB: &str = "https://github.com";

/// A stable numeric id for a login or name (FNV-1a), so payloads look real.
pub fn id_of(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % 100_000_000 + 1
}

pub fn user(api: &str, login: &str) -> Value {
    let bot = login.ends_with("[bot]");
    let id = id_of(login);
    json!({
        "login": login,
        "id": id,
        "node_id": format!("{}_kgDO{id}", if bot { "BOT" } else { "U" }),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": format!("{api}/users/{login}"),
        "html_url": format!("{WEB}/{}", login.trim_end_matches("[bot]")),
        "type": if bot { "Bot" } else { "User" },
        "site_admin": false,
    })
}

pub fn repo(api: &str, repo: &RepoModel) -> Value {
    repo_named(
        api,
        &repo.full_name,
        repo.id,
        &repo
            .clone_url
            .clone()
            .unwrap_or_else(|| format!("{api}/{}.git", repo.full_name)),
        &repo.default_branch,
        false,
    )
}

pub fn repo_named(
    api: &str,
    full_name: &str,
    id: u64,
    clone_url: &str,
    default_branch: &str,
    fork: bool,
) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, full_name));
    json!({
        "id": id,
        "node_id": format!("R_kgDO{id}"),
        "name": name,
        "full_name": full_name,
        "private": true,
        "owner": user(api, owner),
        "html_url": format!("{WEB}/{full_name}"),
        "description": null,
        "fork": fork,
        "url": format!("{api}/repos/{full_name}"),
        "clone_url": clone_url,
        "default_branch": default_branch,
        "visibility": "private",
    })
}

pub fn pull(api: &str, repo_model: &RepoModel, pr: &PullModel) -> Value {
    let full = &repo_model.full_name;
    let n = pr.number;
    let base_repo = repo(api, repo_model);
    let head_repo = if pr.fork {
        let name = full.split_once('/').map_or(full.as_str(), |(_, name)| name);
        let fork_name = format!("{}/{name}", pr.author);
        repo_named(
            api,
            &fork_name,
            id_of(&fork_name),
            &format!("{api}/{fork_name}.git"),
            &repo_model.default_branch,
            true,
        )
    } else {
        base_repo.clone()
    };
    let head_owner = head_repo["owner"]["login"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let base_owner = base_repo["owner"]["login"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    json!({
        "url": format!("{api}/repos/{full}/pulls/{n}"),
        "id": id_of(&format!("{full}#{n}")),
        "node_id": format!("PR_kwDO{}", id_of(&format!("{full}#{n}"))),
        "html_url": format!("{WEB}/{full}/pull/{n}"),
        "diff_url": format!("{WEB}/{full}/pull/{n}.diff"),
        "issue_url": format!("{api}/repos/{full}/issues/{n}"),
        "number": n,
        "state": pr.state,
        "locked": false,
        "title": pr.title,
        "user": user(api, &pr.author),
        "body": "",
        "created_at": "2026-01-05T10:00:00Z",
        "updated_at": "2026-01-05T10:00:00Z",
        "closed_at": if pr.state == "closed" { json!("2026-01-05T11:00:00Z") } else { Value::Null },
        "merged_at": if pr.merged { json!("2026-01-05T11:00:00Z") } else { Value::Null },
        // Each label as "Get a pull request" shows it:
        // https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request
        "labels": pr.labels.iter().map(|name| json!({
            "id": id_of(&format!("label:{name}")),
            "node_id": format!("LA_kwDO{}", id_of(&format!("label:{name}"))),
            "url": format!("{api}/repos/{full}/labels/{name}"),
            "name": name,
            "description": Value::Null,
            "color": "ededed",
            "default": false,
        })).collect::<Vec<_>>(),
        // Before the merge, the test merge commit GitHub made (when it could); after, the
        // merge, squash or rebase commit on the base
        // (https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request).
        "merge_commit_sha": match &pr.merge_commit_sha {
            Some(sha) => json!(sha),
            None if pr.mergeable == Some(true) => json!(format!("{:0>40}", format!("{n}"))),
            None => Value::Null,
        },
        "head": {
            "label": format!("{head_owner}:{}", pr.head_ref),
            "ref": pr.head_ref,
            "sha": pr.head_sha,
            "user": user(api, &head_owner),
            "repo": head_repo,
        },
        "base": {
            "label": format!("{base_owner}:{}", pr.base_ref),
            "ref": pr.base_ref,
            "sha": pr.base_sha,
            "user": user(api, &base_owner),
            "repo": base_repo,
        },
        "author_association": if pr.fork { "CONTRIBUTOR" } else { "MEMBER" },
        "draft": pr.draft,
        "merged": pr.merged,
        "mergeable": pr.mergeable,
        "rebaseable": pr.mergeable,
        "mergeable_state": pr.mergeable_state,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": false,
        "commits": 1,
        "additions": pr.files.len(),
        "deletions": 0,
        "changed_files": pr.files.len(),
    })
}

pub fn file(repo: &str, head_sha: &str, f: &super::FileChange) -> Value {
    let mut value = json!({
        "sha": format!("{:0>40}", id_of(&f.path)),
        "filename": f.path,
        "status": f.status,
        "additions": 1,
        "deletions": 0,
        "changes": 1,
        "blob_url": format!("{WEB}/{repo}/blob/{head_sha}/{}", f.path),
        "raw_url": format!("{WEB}/{repo}/raw/{head_sha}/{}", f.path),
        "patch": "@@ -0,0 +1 @@\n+changed",
    });
    if let Some(previous) = &f.previous_path {
        value["previous_filename"] = json!(previous);
    }
    value
}

pub fn comment(api: &str, repo: &str, app_id: u64, c: &CommentModel) -> Value {
    let mut value = json!({
        "url": format!("{api}/repos/{repo}/issues/comments/{}", c.id),
        "html_url": format!("{WEB}/{repo}/pull/{}#issuecomment-{}", c.number, c.id),
        "issue_url": format!("{api}/repos/{repo}/issues/{}", c.number),
        "id": c.id,
        "node_id": c.node_id,
        "user": user(api, &c.author),
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "author_association": if c.author.ends_with("[bot]") { "NONE" } else { "MEMBER" },
        "body": c.body,
        "reactions": { "url": format!("{api}/repos/{repo}/issues/comments/{}/reactions", c.id), "total_count": c.reactions.len() },
        "performed_via_github_app": null,
    });
    if c.author.ends_with("[bot]") {
        value["performed_via_github_app"] =
            json!({ "id": app_id, "slug": c.author.trim_end_matches("[bot]"), "name": "cascade" });
    }
    value
}

pub fn review(api: &str, repo: &str, number: u64, r: &ReviewModel) -> Value {
    json!({
        "id": r.id,
        "node_id": format!("PRR_kwDO{}", r.id),
        "user": user(api, &r.author),
        "body": "",
        "state": r.state,
        "html_url": format!("{WEB}/{repo}/pull/{number}#pullrequestreview-{}", r.id),
        "pull_request_url": format!("{api}/repos/{repo}/pulls/{number}"),
        "author_association": "MEMBER",
        "submitted_at": "2026-01-05T10:30:00Z",
        "commit_id": r.commit_id,
    })
}

pub fn check_run(api: &str, repo: &str, app_id: u64, run: &CheckRunModel) -> Value {
    let now = run.history.last().expect("a check run has a state");
    json!({
        "id": run.id,
        "node_id": format!("CR_kwDO{}", run.id),
        "head_sha": run.head_sha,
        "external_id": "",
        "url": format!("{api}/repos/{repo}/check-runs/{}", run.id),
        "html_url": format!("{WEB}/{repo}/runs/{}", run.id),
        "details_url": now.details_url.clone().unwrap_or_else(|| format!("{WEB}/{repo}/runs/{}", run.id)),
        "status": now.status,
        "conclusion": now.conclusion,
        "started_at": "2026-01-05T10:00:00Z",
        "completed_at": if now.status == "completed" { json!("2026-01-05T10:05:00Z") } else { Value::Null },
        "output": { "title": now.title, "summary": now.summary, "text": if now.text.is_empty() { Value::Null } else { json!(now.text) }, "annotations_count": 0 },
        "name": run.name,
        "check_suite": { "id": id_of(&run.head_sha) },
        "app": { "id": app_id, "slug": "cascade", "name": "cascade" },
        "pull_requests": [],
    })
}

pub fn error(message: &str) -> Value {
    json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
    })
}

/// `2026-01-05T10:00:00Z`, GitHub's timestamp form.
pub fn timestamp(at: SystemTime) -> String {
    let secs = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
