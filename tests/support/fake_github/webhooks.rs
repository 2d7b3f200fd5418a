//! Signed webhook deliveries built from the fake's state, in the shapes of
//! GitHub's real payloads (../shared/webhooks/github): `pull_request.*`,
//! `issue_comment.created` on a pull request or a plain issue, `installation.*` and
//! `installation_repositories.*`.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::{APP_ID, CommentSnapshot, FakeGitHub, json};

/// One webhook delivery: what GitHub would POST to cascade.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `X-GitHub-Event`.
    pub event: String,
    /// `X-GitHub-Delivery`; a redelivery keeps it.
    pub id: String,
    pub body: Vec<u8>,
    /// `X-Hub-Signature-256`.
    pub signature: String,
}

impl Delivery {
    fn new(event: &str, payload: &Value, secret: &str) -> Delivery {
        let body = serde_json::to_vec(payload).unwrap();
        Delivery {
            event: event.to_string(),
            id: uuid::Uuid::new_v4().to_string(),
            signature: signature(secret, &body),
            body,
        }
    }

    /// The same delivery under a new `X-GitHub-Delivery` (a new event with
    /// the same body, as a flood would send).
    pub fn renewed(&self) -> Delivery {
        Delivery {
            id: uuid::Uuid::new_v4().to_string(),
            ..self.clone()
        }
    }

    /// The same delivery signed with another secret (to test rejection).
    pub fn signed_with(mut self, secret: &str) -> Delivery {
        self.signature = signature(secret, &self.body);
        self
    }

    pub fn payload(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The headers GitHub sends with it.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("content-type", "application/json".to_string()),
            ("user-agent", "GitHub-Hookshot/044aadd".to_string()),
            ("x-github-event", self.event.clone()),
            ("x-github-delivery", self.id.clone()),
            ("x-github-hook-id", "292430182".to_string()),
            (
                "x-github-hook-installation-target-type",
                "integration".to_string(),
            ),
            ("x-github-hook-installation-target-id", APP_ID.to_string()),
            ("x-hub-signature-256", self.signature.clone()),
        ]
    }

    /// POSTs it to `url` (cascade's webhook endpoint).
    pub async fn post(&self, url: &str) -> reqwest::Response {
        let mut request = reqwest::Client::new().post(url).body(self.body.clone());
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        request.send().await.expect("the webhook endpoint answers")
    }
}

/// `sha256=<hex HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn installation_stub(id: u64) -> Value {
    json!({ "id": id, "node_id": format!("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{id}") })
}

impl FakeGitHub {
    /// `ping`, as GitHub sends it to an App's hook when the App is registered.
    pub fn ping_event(&self) -> Delivery {
        let model = self.model();
        let payload = json!({
            "zen": "Anything added dilutes everything else.",
            "hook_id": 292430182,
            "hook": {
                "type": "App",
                "id": 292430182,
                "name": "web",
                "active": true,
                "app_id": model.app_id,
                "events": ["issue_comment", "pull_request"],
                "config": { "content_type": "json", "insecure_ssl": "0", "url": "https://cascade.example/webhooks/github" },
                "updated_at": "2026-01-05T09:00:00Z",
                "created_at": "2026-01-05T09:00:00Z",
            },
        });
        Delivery::new("ping", &payload, &model.webhook_secret)
    }

    /// Any event under any name, signed with the hook's secret (events
    /// cascade does not handle, and names GitHub never sends).
    pub fn event(&self, name: &str, payload: &Value) -> Delivery {
        Delivery::new(name, payload, &self.model().webhook_secret)
    }

    /// `pull_request` with `action` (`opened`, `synchronize`, `reopened`,
    /// `ready_for_review`, `converted_to_draft`, `closed`, `edited`) for the
    /// pull request as it is now, sent by its author; `synchronize` carries
    /// `before`/`after`.
    pub fn pull_request_event(&self, repo: &str, number: u64, action: &str) -> Delivery {
        let author = self.model().repos[repo].pulls[&number].author.clone();
        self.pull_request_event_by(repo, number, action, &author)
    }

    /// [`FakeGitHub::pull_request_event`] with `sender` as who did it: on `synchronize`,
    /// whoever pushed the new head.
    pub fn pull_request_event_by(
        &self,
        repo: &str,
        number: u64,
        action: &str,
        sender: &str,
    ) -> Delivery {
        let model = self.model();
        let repo_model = &model.repos[repo];
        let pr = &repo_model.pulls[&number];
        let mut payload = json!({
            "action": action,
            "number": number,
            "pull_request": json::pull(&self.shared.url, repo_model, pr),
            "repository": json::repo(&self.shared.url, repo_model),
            "installation": installation_stub(repo_model.installation),
            "sender": json::user(&self.shared.url, sender),
        });
        if action == "synchronize" {
            payload["before"] = json!(
                pr.previous_head_sha
                    .clone()
                    .unwrap_or_else(|| pr.base_sha.clone())
            );
            payload["after"] = json!(pr.head_sha);
        }
        // `edited` names what changed with its old value: `changes.base.ref.from` and
        // `changes.base.sha.from` for a new base
        // (https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request).
        if action == "edited"
            && let Some((old_ref, old_sha)) = &pr.previous_base
        {
            payload["changes"] = json!({
                "base": { "ref": { "from": old_ref }, "sha": { "from": old_sha } },
            });
        }
        Delivery::new("pull_request", &payload, &model.webhook_secret)
    }

    /// `pull_request_review` `submitted` of the newest review on the pull request, sent by
    /// its reviewer: `review` and a `pull_request` shaped as in `pull_request`
    /// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request_review).
    pub fn pull_request_review_event(&self, repo: &str, number: u64) -> Delivery {
        let model = self.model();
        let repo_model = &model.repos[repo];
        let pr = &repo_model.pulls[&number];
        let review = pr.reviews.last().expect("a review to announce");
        let payload = json!({
            "action": "submitted",
            "review": {
                "id": review.id,
                "node_id": format!("PRR_kwDO{}", review.id),
                "user": json::user(&self.shared.url, &review.author),
                "body": Value::Null,
                "commit_id": review.commit_id,
                "submitted_at": "2026-01-05T10:30:00Z",
                "state": review.state.to_lowercase(),
                "author_association": "MEMBER",
            },
            "pull_request": json::pull(&self.shared.url, repo_model, pr),
            "repository": json::repo(&self.shared.url, repo_model),
            "installation": installation_stub(repo_model.installation),
            "sender": json::user(&self.shared.url, &review.author),
        });
        Delivery::new("pull_request_review", &payload, &model.webhook_secret)
    }

    /// `merge_group` `checks_requested` for a group whose head `head_sha` is on the queue
    /// branch `gh-readonly-queue/<base>/pr-<number>-<base_sha>`, shaped as
    /// https://docs.github.com/en/webhooks/webhook-events-and-payloads#merge_group shows it.
    pub fn merge_group_event(
        &self,
        repo: &str,
        number: u64,
        head_sha: &str,
        base_sha: &str,
    ) -> Delivery {
        let model = self.model();
        let repo_model = &model.repos[repo];
        let payload = json!({
            "action": "checks_requested",
            "merge_group": {
                "head_sha": head_sha,
                "head_ref": format!("refs/heads/{}", queue_branch(number, base_sha)),
                "base_sha": base_sha,
                "base_ref": "refs/heads/main",
                "head_commit": {
                    "id": head_sha,
                    "tree_id": head_sha,
                    "message": format!("Merge pull request #{number}"),
                    "timestamp": "2026-01-05T10:40:00Z",
                    "author": { "name": "GitHub", "email": "noreply@github.com" },
                    "committer": { "name": "GitHub", "email": "noreply@github.com" },
                },
            },
            "repository": json::repo(&self.shared.url, repo_model),
            "installation": installation_stub(repo_model.installation),
            "sender": json::user(&self.shared.url, "github-merge-queue[bot]"),
        });
        Delivery::new("merge_group", &payload, &model.webhook_secret)
    }

    /// `issue_comment` `created` for a comment from `user_comment`: on a pull request
    /// (`issue.pull_request` set), or on a plain issue (no `pull_request`), as GitHub
    /// sends each.
    pub fn issue_comment_event(&self, comment: &CommentSnapshot) -> Delivery {
        let model = self.model();
        let api = &self.shared.url;
        let repo_model = &model.repos[&comment.repo];
        let c = &repo_model.comments[&comment.id];
        let full = &repo_model.full_name;
        let n = comment.number;
        let issue = match repo_model.pulls.get(&n) {
            Some(pr) => json!({
                "url": format!("{api}/repos/{full}/issues/{n}"),
                "html_url": format!("{}/{full}/pull/{n}", json::WEB),
                "id": json::id_of(&format!("{full}#{n}")),
                "node_id": format!("PR_kwDO{}", json::id_of(&format!("{full}#{n}"))),
                "number": n,
                "title": pr.title,
                "user": json::user(api, &pr.author),
                "labels": [],
                "state": pr.state,
                "locked": false,
                "draft": pr.draft,
                "comments": repo_model.comments.values().filter(|c| c.number == n).count(),
                "author_association": "MEMBER",
                "pull_request": {
                    "url": format!("{api}/repos/{full}/pulls/{n}"),
                    "html_url": format!("{}/{full}/pull/{n}", json::WEB),
                    "diff_url": format!("{}/{full}/pull/{n}.diff", json::WEB),
                    "patch_url": format!("{}/{full}/pull/{n}.patch", json::WEB),
                    "merged_at": null,
                },
                "body": "",
            }),
            None => {
                let issue = &repo_model.issues[&n];
                json!({
                    "url": format!("{api}/repos/{full}/issues/{n}"),
                    "repository_url": format!("{api}/repos/{full}"),
                    "html_url": format!("{}/{full}/issues/{n}", json::WEB),
                    "id": json::id_of(&format!("{full}#{n}")),
                    "node_id": format!("I_kwDO{}", json::id_of(&format!("{full}#{n}"))),
                    "number": n,
                    "title": issue.title,
                    "user": json::user(api, &issue.author),
                    "labels": [],
                    "state": issue.state,
                    "locked": false,
                    "assignee": null,
                    "assignees": [],
                    "milestone": null,
                    "comments": repo_model.comments.values().filter(|c| c.number == n).count(),
                    "created_at": issue.created_at,
                    "updated_at": issue.created_at,
                    "closed_at": null,
                    "author_association": "NONE",
                    "active_lock_reason": null,
                    "body": issue.body,
                    "state_reason": issue.state_reason,
                })
            }
        };
        let mut comment_json = json::comment(api, full, model.app_id, c);
        if !repo_model.pulls.contains_key(&n) {
            comment_json["html_url"] = json!(format!(
                "{}/{full}/issues/{n}#issuecomment-{}",
                json::WEB,
                c.id
            ));
        }
        let payload = json!({
            "action": "created",
            "issue": issue,
            "comment": comment_json,
            "repository": json::repo(api, repo_model),
            "installation": installation_stub(repo_model.installation),
            "sender": json::user(api, &c.author),
        });
        Delivery::new("issue_comment", &payload, &model.webhook_secret)
    }

    /// `installation` with `action` (`created`, `deleted`, `suspend`, …),
    /// listing the installation's repositories.
    pub fn installation_event(&self, id: u64, action: &str) -> Delivery {
        let model = self.model();
        let account = &model.installations[&id].account;
        let repositories: Vec<Value> = model
            .repos
            .values()
            .filter(|r| r.installation == id)
            .map(repo_stub)
            .collect();
        let payload = json!({
            "action": action,
            "installation": installation_object(&self.shared.url, id, account),
            "repositories": repositories,
            "requester": null,
            "sender": json::user(&self.shared.url, account),
        });
        Delivery::new("installation", &payload, &model.webhook_secret)
    }

    /// `installation_repositories` `added` or `removed` for `repos` (owner/name).
    #[allow(dead_code, reason = "benches/server.rs")]
    pub fn installation_repositories_event(
        &self,
        id: u64,
        action: &str,
        repos: &[&str],
    ) -> Delivery {
        let model = self.model();
        let account = &model.installations[&id].account;
        let listed: Vec<Value> = repos
            .iter()
            .map(|full| {
                let name = full.split_once('/').map_or(*full, |(_, n)| n);
                json!({ "id": json::id_of(full), "node_id": format!("R_kgDO{}", json::id_of(full)), "name": name, "full_name": full, "private": true })
            })
            .collect();
        let (added, removed) = if action == "added" {
            (listed, vec![])
        } else {
            (vec![], listed)
        };
        let payload = json!({
            "action": action,
            "installation": installation_object(&self.shared.url, id, account),
            "repository_selection": "selected",
            "repositories_added": added,
            "repositories_removed": removed,
            "requester": null,
            "sender": json::user(&self.shared.url, account),
        });
        Delivery::new("installation_repositories", &payload, &model.webhook_secret)
    }
}

fn repo_stub(r: &super::RepoModel) -> Value {
    let name = r
        .full_name
        .split_once('/')
        .map_or(r.full_name.as_str(), |(_, n)| n);
    json!({ "id": r.id, "node_id": format!("R_kgDO{}", r.id), "name": name, "full_name": r.full_name, "private": true })
}

fn installation_object(api: &str, id: u64, account: &str) -> Value {
    json!({
        "id": id,
        "account": json::user(api, account),
        "repository_selection": "selected",
        "html_url": format!("{}/settings/installations/{id}", json::WEB),
        "app_id": APP_ID,
        "app_slug": "cascade",
        "target_id": json::id_of(account),
        "target_type": "Organization",
        "permissions": { "checks": "write", "contents": "read", "issues": "write", "metadata": "read", "pull_requests": "write" },
        "events": ["issue_comment", "pull_request", "pull_request_review"],
        "created_at": "2026-01-05T09:00:00Z",
        "updated_at": "2026-01-05T09:00:00Z",
        "single_file_name": null,
        "suspended_at": null,
        "suspended_by": null,
    })
}

/// The branch GitHub's merge queue makes for pull request `number` entering on `base_sha`.
pub fn queue_branch(number: u64, base_sha: &str) -> String {
    format!("gh-readonly-queue/main/pr-{number}-{base_sha}")
}
