//! Whose repositories cascade serves and where its credentials go, end to end through
//! the real server and the fake forges (git fetched over smart HTTP from the fakes'
//! own addresses, with the token): a webhook naming a stranger's clone URL never makes
//! cascade send it a request (GitHub: the payload's URL is not even read; GitLab: the
//! hook is refused); a repository of an owner `--allow-owner` does not list gets one
//! refusal and nothing else; `--metrics-repo-labels` names repositories in `/metrics`
//! (without it they are named nowhere: `tests/it/bot_drift.rs`).

use crate::support;
use crate::support::bot_world;
use crate::support::gitlab_world;

use cascade::bot::AllowedOwners;
use std::path::Path;
use std::time::Duration;
use support::recorder::Recorder;

/// Deliveries the server stored and has not finished with.
async fn unprocessed(data: &Path) -> i64 {
    let url = format!("sqlite://{}?mode=ro", data.join("cascade.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM deliveries WHERE status NOT IN ('processed', 'failed', 'ignored')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    n
}

/// Waits until every stored delivery is handled.
async fn settled(data: &Path) {
    for _ in 0..600 {
        if unprocessed(data).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("deliveries still unprocessed after a minute");
}

fn allow(owners: &[&str]) -> AllowedOwners {
    AllowedOwners::parse(&owners.iter().map(|o| o.to_string()).collect::<Vec<_>>()).unwrap()
}

mod github {
    use super::*;
    use bot_world::{REPO, world, world_configured};

    /// Requests the fake GitHub received for the repository's git.
    fn git_requests(w: &bot_world::World) -> usize {
        w.fake
            .requests()
            .iter()
            .filter(|r| r.path.starts_with(&format!("/{REPO}.git/")))
            .count()
    }

    /// A `pull_request` delivery naming a stranger's clone URL (as a forged or confused
    /// payload would) is planned from the repository GitHub's API names, at the
    /// configured origin: the stranger never hears from cascade.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_payloads_clone_url_is_never_fetched() {
        let w = world().await;
        let stranger = Recorder::not_found();
        let n = w.open_pr("alice", "feature", &w.head_sha, false);
        let mut payload = w.fake.pull_request_event(REPO, n, "opened").payload();
        let elsewhere = format!("{}/{REPO}.git", stranger.url);
        payload["repository"]["clone_url"] = elsewhere.clone().into();
        for side in ["base", "head"] {
            payload["pull_request"][side]["repo"]["clone_url"] = elsewhere.clone().into();
        }
        let delivery = w.fake.event("pull_request", &payload);
        assert_eq!(delivery.post(&w.hook()).await.status(), 202);
        w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
        assert!(w.plan_id(n).len() == 12, "{:#?}", w.bot_texts(n));
        assert!(git_requests(&w) > 0, "fetched from the fake GitHub");
        assert!(stranger.heads().is_empty(), "{:#?}", stranger.heads());
    }

    /// A pull request in a repository of an owner not allowed: one comment saying so
    /// and what the operator must do, and nothing else, however many events and
    /// commands follow; drift does not look at it either.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repository_of_an_owner_not_allowed_gets_one_refusal() {
        let drift = "drift:\n  schedule: 10m\n";
        let w = world_configured(drift, |c| {
            c.allowed_owners = allow(&["globex", "gitlab:acme"]);
            c.drift_tick = Duration::from_secs(1);
        })
        .await;
        let installed = w.fake.installation_event(77, "created");
        assert!(installed.post(&w.hook()).await.status().is_success());
        let n = w.open_pr("alice", "feature", &w.head_sha, false);
        assert_eq!(w.send_pr(n, "opened").await, 202);
        let refusal = w.nth_reply(n, 1).await;
        assert!(
            refusal.contains("does not serve repositories of `acme`"),
            "{refusal}"
        );
        assert!(refusal.contains("--allow-owner"), "{refusal}");
        assert!(
            !refusal.contains("globex"),
            "the list is the operator's: {refusal}"
        );
        // More events and commands: still that one comment.
        w.fake.set_permission(REPO, "bob", "write");
        let head = bot_world::push_change(&w, "feature", "global/dns/main.tf", "more");
        w.synchronize(n, &head, "global/dns/main.tf").await;
        assert_eq!(w.comment(n, "bob", "/plan").await, 202);
        assert_eq!(w.comment(n, "bob", "/apply 0123456789ab").await, 202);
        settled(w.data.path()).await;
        // Some drift ticks pass.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(w.bot_texts(n), [refusal]);
        assert!(w.fake.check_runs(REPO, &w.head_sha).is_empty());
        assert!(w.fake.check_runs(REPO, &head).is_empty());
        assert_eq!(git_requests(&w), 0, "nothing fetched");
        assert!(w.fake.issues(REPO).is_empty(), "no drift issue");
        let checkouts = w.data.path().join("workspaces/checkouts");
        assert!(!checkouts.exists(), "nothing checked out");
    }

    /// With `--metrics-repo-labels`, the drift gauges name the repository.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn metrics_name_repositories_only_when_asked() {
        let drift = "drift:\n  schedule: 10m\n  units: [\"global/*\"]\n";
        let w = world_configured(drift, |c| {
            c.metrics_repo_labels = true;
            c.drift_tick = Duration::from_secs(1);
        })
        .await;
        let installed = w.fake.installation_event(77, "created");
        assert!(installed.post(&w.hook()).await.status().is_success());
        let metrics = || async {
            let addr = w.server.as_ref().unwrap().addr;
            reqwest::get(format!("http://{addr}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        };
        for _ in 0..2400 {
            if metrics()
                .await
                .contains(r#"cascade_drifted_units{repo="acme/infra"} 1"#)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no labelled drift gauge: {}", metrics().await);
    }
}

mod gitlab {
    use super::*;
    use gitlab_world::{AUTHOR, PROJECT, World, world, world_configured};

    /// Requests the fake GitLab received for any repository's git.
    fn git_requests(w: &World) -> usize {
        w.fake
            .requests()
            .iter()
            .filter(|r| r.path.contains(".git/"))
            .count()
    }

    /// A Merge Request Hook whose project's clone URL is a stranger's is refused (403),
    /// nothing is stored, fetched or posted, and the stranger never hears from cascade.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hook_naming_a_foreign_clone_url_fetches_nothing() {
        let w = world().await;
        let stranger = Recorder::not_found();
        let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
        let mut payload = w.fake.merge_request_event(w.project, iid, "open").payload();
        payload["project"]["git_http_url"] = format!("{}/{PROJECT}.git", stranger.url).into();
        let delivery = w.fake.event("Merge Request Hook", &payload);
        assert_eq!(delivery.post(&w.hook()).await.status(), 403);
        // What a normal hook would have started has had time to happen.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(unprocessed(w.data.path()).await, 0);
        assert!(w.bot_texts(iid).is_empty());
        assert!(w.cascade_statuses(&w.head_sha).is_empty());
        assert_eq!(git_requests(&w), 0, "nothing fetched");
        assert!(stranger.heads().is_empty(), "{:#?}", stranger.heads());
        assert!(!stranger.saw_credentials());
    }

    /// A merge request in a group not allowed: one note, no status, no fetch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_project_of_a_group_not_allowed_gets_one_refusal() {
        // The project is `acme/platform/infra`: `acme/platformx` and `github:acme` do not
        // serve it.
        let w = world_configured("", |c| {
            c.allowed_owners = allow(&["gitlab:acme/platformx", "github:acme"]);
        })
        .await;
        let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
        assert_eq!(w.send_mr(iid, "open").await, 202);
        w.until("the refusal", |w| !w.bot_texts(iid).is_empty())
            .await;
        assert_eq!(
            w.note(iid, gitlab_world::REVIEWER, "cascade plan").await,
            202
        );
        settled(w.data.path()).await;
        let notes = w.bot_texts(iid);
        assert_eq!(notes.len(), 1, "{notes:#?}");
        assert!(
            notes[0].contains("does not serve projects in `acme/platform`"),
            "{}",
            notes[0]
        );
        assert!(w.cascade_statuses(&w.head_sha).is_empty());
        assert_eq!(git_requests(&w), 0, "nothing fetched");
    }
}
