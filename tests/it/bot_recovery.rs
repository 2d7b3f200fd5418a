//! The bot's start after a crash mid-apply: a pull request left `applying` by
//! a dead process is put back (so the re-processed `/apply` resumes the run
//! instead of answering that an apply is already running), while one a live
//! process is applying is left alone. The engine's re-attaching itself is
//! pinned in tests/it/engine_rules.rs and, with the real terraform, in
//! tests/plan_apply_e2e.rs.

use cascade::bot::{Bot, BotConfig};
use cascade::clock::SystemClock;
use cascade::exec::ProcessExecutor;
use cascade::forge::Forges;
use cascade::forge::github::GitHubApp;
use cascade::plan::PlanId;
use cascade::store::{ApplyClaim, BotStore, PlanKey, PrState, PullRequestRecord, RunStore};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn pr(number: u64, plan: &str) -> PullRequestRecord {
    PullRequestRecord {
        repo: "acme/infra".into(),
        number,
        installation_id: 77,
        head_sha: "h".into(),
        base_sha: "b".into(),
        state: PrState::Applying,
        plan_id: Some(PlanId::from_stored(plan.into())),
        comment_id: None,
        check_run_id: None,
        updated_at: 1,
    }
}

#[tokio::test]
async fn a_pull_request_left_applying_by_a_dead_process_is_put_back_and_a_live_ones_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(cascade::store::open(None, dir.path()).await.unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // #1: its server died (a pid on this host that is gone).
    let gone = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    // #2: another server, heartbeating, is applying it right now.
    for (number, plan, pid, host) in [
        (1, "aaaaaaaaaaaa", gone, cascade::engine::this_host()),
        (2, "bbbbbbbbbbbb", 4242, "other-server".to_string()),
    ] {
        store.save_pull_request(&pr(number, plan)).await.unwrap();
        let claim = ApplyClaim {
            repo: PlanKey::from_stored(format!("acme/infra#{number}")),
            plan_id: PlanId::from_stored(plan.into()),
            owner: format!("owner-{number}"),
            pid,
            host,
            heartbeat_at: now,
        };
        assert!(store.insert_apply_claim(&claim).await.unwrap().is_none());
    }
    // Nothing here talks to GitHub: the App only has to load.
    let key = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/test-app-key.pem"),
    )
    .unwrap();
    let github = GitHubApp::new("http://127.0.0.1:9", 4242, &key).unwrap();
    let bot = Bot::start(BotConfig {
        forges: Forges::new(Some(Arc::new(github)), None),
        store: store.clone(),
        executor: Arc::new(ProcessExecutor::new(dir.path().join("plugin-cache"))),
        data_dir: dir.path().to_path_buf(),
        parallelism: 1,
        allow_forks: false,
        unit_timeout: Duration::from_secs(60),
        init_timeout: Duration::from_secs(60),
        discovery_timeout: Duration::from_secs(60),
        replica_lease: Duration::from_secs(15),
        drift_tick: Duration::from_secs(60),
        owners: Default::default(),
        metrics_repo_labels: false,
        sources: Default::default(),
        clock: Arc::new(SystemClock),
        shutdown: CancellationToken::new(),
    })
    .await
    .unwrap();
    let state = |n| {
        let store = store.clone();
        async move {
            store
                .pull_request("acme/infra", n)
                .await
                .unwrap()
                .unwrap()
                .state
        }
    };
    assert_eq!(
        state(1).await,
        PrState::Commented,
        "a dead apply does not block /apply forever"
    );
    assert!(
        store
            .apply_claim(
                &PlanKey::from_stored("acme/infra#1"),
                &PlanId::from_stored("aaaaaaaaaaaa".into())
            )
            .await
            .unwrap()
            .is_none(),
        "the dead owner's claim is gone"
    );
    assert_eq!(
        state(2).await,
        PrState::Applying,
        "a live apply is left alone"
    );
    bot.abort();
}
