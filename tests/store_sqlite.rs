//! The SQLite store, for real: plans and runs survive a reopen (with each
//! unit's rendered plan; records stored before it still load), deliveries
//! are deduplicated by id, locks are exclusive, pull request state round-trips,
//! apply claims are taken by one process and taken over by one.

use cascade::config::Executor as Tool;
use cascade::plan::render::{RenderOptions, RenderedPlan};
use cascade::plan::{Counts, Fingerprint, PlanId, PlanSummary};
use cascade::store::{
    ApplyClaim, DeliveryRecord, DeliveryStatus, Lock, PlanRecord, PlanStatus, PlannedUnit, PrState,
    PullRequestRecord, RunKind, RunRecord, SqliteStore, Store, UnitRecord, UnitStatus,
};
use cascade::unit::UnitPath;

async fn open(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("db/cascade.db"))
        .await
        .unwrap()
}

fn summary(fp: &str) -> PlanSummary {
    PlanSummary {
        counts: Counts {
            add: 1,
            ..Counts::default()
        },
        resources: vec![],
        outputs: vec![],
        fingerprint: Fingerprint(fp.into()),
    }
}

/// A real rendering: one `terraform_data` created.
fn rendered() -> RenderedPlan {
    let doc = serde_json::json!({
        "format_version": "1.2",
        "planned_values": {"root_module": {}},
        "resource_changes": [{
            "address": "terraform_data.a", "mode": "managed", "type": "terraform_data",
            "name": "a", "provider_name": "terraform.io/builtin/terraform",
            "change": {"actions": ["create"], "before": null, "after": {"input": "x"},
                       "after_unknown": {"id": true}, "before_sensitive": false,
                       "after_sensitive": {}},
        }],
        "output_changes": {},
    });
    let r = RenderedPlan::from_show_json(
        &serde_json::to_vec(&doc).unwrap(),
        &RenderOptions::default(),
    )
    .unwrap();
    assert!(r.text().contains("+ input = \"x\""), "{}", r.text());
    r
}

#[tokio::test]
async fn plans_and_runs_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(&dir).await;
        let run = RunRecord {
            id: "r1".into(),
            repo: "acme/infra".into(),
            kind: RunKind::Apply,
            key: "k".into(),
            dir: "/d".into(),
            finished: false,
            created_at: 1,
        };
        store.insert_run(&run).await.unwrap();
        let record = UnitRecord {
            unit: UnitPath::new("a"),
            status: UnitStatus::Applying,
            detail: String::new(),
            summary: Some(summary("f1")),
            rendered: Some(rendered()),
        };
        store.record_unit("r1", &record).await.unwrap();
        let unit = PlannedUnit {
            path: UnitPath::new("a"),
            wave: 1,
            destroy: false,
            deps: vec![],
            tool: Tool::Terraform,
            init_args: vec![],
            status: UnitStatus::Planned,
            detail: String::new(),
            summary: Some(summary("f1")),
            rendered: Some(rendered()),
        };
        let plan = |id: &str| PlanRecord {
            id: PlanId(id.into()),
            repo: "acme/infra".into(),
            head: "h".into(),
            base: "b".into(),
            status: PlanStatus::Current,
            run_id: "r0".into(),
            units: vec![unit.clone()],
            created_at: 1,
        };
        store.save_plan(&plan("aaaaaaaaaaaa")).await.unwrap();
        store.save_plan(&plan("bbbbbbbbbbbb")).await.unwrap();
    }
    let store = open(&dir).await;
    let old = store
        .plan("acme/infra", &PlanId("aaaaaaaaaaaa".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        old.status,
        PlanStatus::Superseded,
        "a newer plan supersedes the older one"
    );
    let current = store.current_plan("acme/infra").await.unwrap().unwrap();
    assert_eq!(current.id, PlanId("bbbbbbbbbbbb".into()));
    assert_eq!(current.units[0].summary, Some(summary("f1")));
    assert_eq!(current.units[0].rendered, Some(rendered()));
    let run = store
        .latest_run("acme/infra", RunKind::Apply, "k")
        .await
        .unwrap()
        .unwrap();
    assert!(!run.finished);
    let records = store.unit_records(&run.id).await.unwrap();
    assert_eq!(records[0].status, UnitStatus::Applying);
    assert_eq!(
        records[0].rendered,
        Some(rendered()),
        "a resumed run keeps it"
    );
}

#[tokio::test]
async fn plans_and_results_stored_before_renderings_were_kept_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    // Rows as cascade wrote them before: plan units without `rendered`, results without it.
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("db/cascade.db").display()
    ))
    .await
    .unwrap();
    let old_units = serde_json::json!([{
        "path": "a", "wave": 1, "destroy": false, "deps": [], "tool": "terraform",
        "status": "planned", "detail": "",
        "summary": {"counts": {"add": 1, "change": 0, "destroy": 0, "replace": 0, "import": 0,
                               "move": 0, "forget": 0, "read": 0},
                    "resources": [], "outputs": [], "fingerprint": "f1"},
    }]);
    sqlx::query("INSERT INTO plans (id, repo, head, base, status, run_id, units, created_at) VALUES ('cccccccccccc', 'r', 'h', 'b', 'current', 'r0', ?, 1)")
        .bind(old_units.to_string())
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO runs (id, repo, kind, key, dir, status, created_at) VALUES ('r0', 'r', 'plan', 'k', '/d', 'running', 1)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO unit_results (run_id, unit, status, detail, summary, updated_at) VALUES ('r0', 'a', 'planned', '', ?, 1)")
        .bind(old_units[0]["summary"].to_string())
        .execute(&pool)
        .await
        .unwrap();
    let plan = store.current_plan("r").await.unwrap().unwrap();
    assert_eq!(plan.units[0].summary, Some(summary("f1")));
    assert_eq!(plan.units[0].rendered, None);
    let records = store.unit_records("r0").await.unwrap();
    assert_eq!(records[0].summary, Some(summary("f1")));
    assert_eq!(records[0].rendered, None);
}

#[tokio::test]
async fn a_delivery_is_stored_once_whatever_the_redeliveries() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let d = DeliveryRecord {
        id: "72d3162e".into(),
        event: "pull_request".into(),
        body: b"{}".to_vec(),
        status: DeliveryStatus::Received,
        received_at: 1,
    };
    assert!(store.insert_delivery(&d).await.unwrap());
    for _ in 0..49 {
        assert!(!store.insert_delivery(&d).await.unwrap());
    }
    assert_eq!(store.pending_deliveries().await.unwrap(), vec![d.clone()]);
    store
        .set_delivery_status(&d.id, DeliveryStatus::Processed)
        .await
        .unwrap();
    assert!(store.pending_deliveries().await.unwrap().is_empty());
}

#[tokio::test]
async fn locks_are_exclusive_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let units = |names: &[&str]| names.iter().map(UnitPath::new).collect::<Vec<_>>();
    assert!(
        store
            .take_locks("acme/infra", 12, &units(&["live/dev/vpc", "live/dev/app"]))
            .await
            .unwrap()
            .is_empty()
    );
    // Taking your own lock again is fine; a second pull request is told who holds it.
    assert!(
        store
            .take_locks("acme/infra", 12, &units(&["live/dev/vpc"]))
            .await
            .unwrap()
            .is_empty()
    );
    let held = store
        .take_locks("acme/infra", 13, &units(&["live/dev/vpc", "live/prod/vpc"]))
        .await
        .unwrap();
    assert_eq!(
        held,
        vec![Lock {
            unit: UnitPath::new("live/dev/vpc"),
            pr: 12
        }]
    );
    assert_eq!(store.locks("acme/infra").await.unwrap().len(), 3);
    assert_eq!(store.release_locks("acme/infra", 12).await.unwrap(), 2);
    assert!(
        store
            .take_locks("acme/infra", 13, &units(&["live/dev/vpc"]))
            .await
            .unwrap()
            .is_empty()
    );
    // Another repository's units are separate.
    assert!(
        store
            .take_locks("acme/other", 1, &units(&["live/dev/vpc"]))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn who_waits_for_whose_locks_survives_a_reopen_and_is_replaced_at_each_plan() {
    let dir = tempfile::tempdir().unwrap();
    let units = |names: &[&str]| names.iter().map(UnitPath::new).collect::<Vec<_>>();
    {
        let store = open(&dir).await;
        store
            .take_locks("acme/infra", 1, &units(&["a"]))
            .await
            .unwrap();
        store
            .take_locks("acme/infra", 2, &units(&["b"]))
            .await
            .unwrap();
        store.set_waiting("acme/infra", 3, &[1, 2]).await.unwrap();
        store.set_waiting("acme/infra", 4, &[1]).await.unwrap();
        store.set_waiting("acme/other", 3, &[1]).await.unwrap();
        assert_eq!(store.waiting_for("acme/infra", 1).await.unwrap(), [3, 4]);
        // Holders still hold their locks: nobody is to be planned again yet.
        assert_eq!(
            store.released_waiters().await.unwrap(),
            [("acme/other".to_string(), 3)]
        );
    }
    let store = open(&dir).await;
    store.release_locks("acme/infra", 1).await.unwrap();
    assert_eq!(
        store.released_waiters().await.unwrap(),
        [
            ("acme/infra".to_string(), 3),
            ("acme/infra".to_string(), 4),
            ("acme/other".to_string(), 3)
        ]
    );
    // Planned again: 3 now waits for 2 only, 4 for nobody.
    store.set_waiting("acme/infra", 3, &[2]).await.unwrap();
    store.set_waiting("acme/infra", 4, &[]).await.unwrap();
    store.set_waiting("acme/other", 3, &[]).await.unwrap();
    assert!(store.released_waiters().await.unwrap().is_empty());
    assert_eq!(store.waiting_for("acme/infra", 2).await.unwrap(), [3]);
}

#[tokio::test]
async fn the_plan_comments_extra_parts_are_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    assert!(
        store
            .comment_parts("acme/infra", 7)
            .await
            .unwrap()
            .is_empty()
    );
    store
        .set_comment_parts("acme/infra", 7, &[501, 502, 503])
        .await
        .unwrap();
    store
        .set_comment_parts("acme/infra", 8, &[9])
        .await
        .unwrap();
    assert_eq!(
        store.comment_parts("acme/infra", 7).await.unwrap(),
        [501, 502, 503]
    );
    store
        .set_comment_parts("acme/infra", 7, &[501])
        .await
        .unwrap();
    assert_eq!(store.comment_parts("acme/infra", 7).await.unwrap(), [501]);
    assert_eq!(store.comment_parts("acme/infra", 8).await.unwrap(), [9]);
}

#[tokio::test]
async fn pull_request_state_and_installations_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut pr = PullRequestRecord {
        repo: "acme/infra".into(),
        number: 7,
        installation_id: 77,
        clone_url: "/tmp/origin.git".into(),
        head_sha: "h1".into(),
        base_sha: "b1".into(),
        state: PrState::Planning,
        plan_id: None,
        comment_id: None,
        check_run_id: None,
        updated_at: 1,
    };
    store.save_pull_request(&pr).await.unwrap();
    assert_eq!(
        store.unfinished_pull_requests().await.unwrap(),
        vec![pr.clone()]
    );
    pr.state = PrState::Commented;
    pr.plan_id = Some(PlanId("3f9a2c1b7d4e".into()));
    pr.comment_id = Some(1234);
    store.save_pull_request(&pr).await.unwrap();
    assert_eq!(store.pull_request("acme/infra", 7).await.unwrap(), Some(pr));
    assert!(store.unfinished_pull_requests().await.unwrap().is_empty());

    store.upsert_installation(77, "acme", true).await.unwrap();
    store
        .change_installation_repos(77, &["acme/infra".into(), "acme/web".into()], &[])
        .await
        .unwrap();
    store
        .change_installation_repos(77, &[], &["acme/web".into()])
        .await
        .unwrap();
    assert_eq!(store.installation_repos(77).await.unwrap(), ["acme/infra"]);
    store.upsert_installation(77, "acme", false).await.unwrap();
    assert!(store.installation_repos(77).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_apply_claim_has_one_holder_and_one_taker_over() {
    let dir = tempfile::tempdir().unwrap();
    let id = PlanId("abcdefabcdef".into());
    let claim = |owner: &str, pid: u32, heartbeat_at: i64| ApplyClaim {
        repo: "acme/infra#7".into(),
        plan_id: id.clone(),
        owner: owner.into(),
        pid,
        host: "host-a".into(),
        heartbeat_at,
    };
    let first = claim("first", 100, 10);
    {
        let store = open(&dir).await;
        assert_eq!(store.insert_apply_claim(&first).await.unwrap(), None);
    }
    // It survives a restart; a second owner is told who holds it and changes nothing.
    let store = open(&dir).await;
    let second = claim("second", 200, 20);
    assert_eq!(
        store.insert_apply_claim(&second).await.unwrap(),
        Some(first.clone())
    );
    // Only the owner heartbeats it.
    assert!(
        store
            .heartbeat_apply_claim("acme/infra#7", &id, "first", 15)
            .await
            .unwrap()
    );
    assert!(
        !store
            .heartbeat_apply_claim("acme/infra#7", &id, "second", 15)
            .await
            .unwrap()
    );
    let beaten = ApplyClaim {
        heartbeat_at: 15,
        ..first.clone()
    };
    // Two takers-over of the claim as read: one wins.
    assert!(
        !store.take_over_apply_claim(&first, &second).await.unwrap(),
        "stale read"
    );
    assert!(store.take_over_apply_claim(&beaten, &second).await.unwrap());
    let third = claim("third", 300, 30);
    assert!(!store.take_over_apply_claim(&beaten, &third).await.unwrap());
    assert_eq!(
        store.apply_claim("acme/infra#7", &id).await.unwrap(),
        Some(second.clone())
    );
    // Releasing someone else's claim does nothing; the owner's release frees it.
    store
        .release_apply_claim("acme/infra#7", &id, "first")
        .await
        .unwrap();
    assert!(
        store
            .apply_claim("acme/infra#7", &id)
            .await
            .unwrap()
            .is_some()
    );
    store
        .release_apply_claim("acme/infra#7", &id, "second")
        .await
        .unwrap();
    assert_eq!(store.apply_claim("acme/infra#7", &id).await.unwrap(), None);
    assert_eq!(store.insert_apply_claim(&third).await.unwrap(), None);
}
