//! The store's contract, written once and run against both backends (the
//! `sqlite::` and `postgres::` tests): plans and runs survive a reopen (with
//! each unit's rendered plan; records stored before it still load),
//! deliveries are deduplicated by id and wait in arrival order, locks are
//! exclusive, pull request state, who pushed to it and a plan's policy findings
//! (whole-plan and per unit) round-trip, apply claims
//! are taken by one and taken over by one, leases expire by the clock. Replicas' delivery
//! claims are taken only when free or run out (oldest first, within the
//! limit, never a handled delivery) and renewed only by their owner; a pull
//! request's lease has one holder until it runs out, and its supersede mark
//! lasts until the lease is taken again. Every claim and compare-and-swap is
//! raced by eight tasks over two stores on one database, as two replicas
//! would; text a pull request writes never fails a write.
//!
//! Each test gets its own database: a SQLite file in a temporary directory,
//! or a fresh database on the binary's throwaway PostgreSQL cluster.

use crate::support::postgres as pg_cluster;

use cascade::clock::Clock;
use cascade::engine::{LEASE_SECS, owner_alive};
use cascade::event::DeliveryId;
use cascade::plan::render::{RenderOptions, RenderedPlan};
use cascade::plan::{Counts, Fingerprint, PlanId, PlanSummary};
use cascade::store::{
    AnyStore, ApplyClaim, BotStore, DeliveryRecord, DeliveryStatus, Lock, PlanKey, PlanRecord,
    PlanStatus, PlannedUnit, PolicyApproval, PolicyMessage, PolicyResult, PrState,
    PullRequestRecord, Pusher, ReplicaId, RunKind, RunRecord, RunStore, UnitRecord, UnitStatus,
};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use sqlx::{Connection, Executor};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Where one test's database is.
enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres {
        url: String,
        data: tempfile::TempDir,
    },
}

impl Backend {
    fn sqlite() -> Backend {
        Backend::Sqlite(tempfile::tempdir().unwrap())
    }

    async fn postgres() -> Backend {
        Backend::Postgres {
            url: pg_cluster::database().await,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn url(&self) -> String {
        match self {
            Backend::Sqlite(dir) => {
                format!("sqlite://{}", dir.path().join("db/cascade.db").display())
            }
            Backend::Postgres { url, .. } => url.clone(),
        }
    }

    /// A store on this database, as a replica (or a restarted server) opens it.
    async fn open(&self) -> AnyStore {
        let data = match self {
            Backend::Sqlite(dir) | Backend::Postgres { data: dir, .. } => dir.path(),
        };
        cascade::store::open(Some(&self.url()), data).await.unwrap()
    }

    /// Runs one statement as written, outside the store (rows an older cascade wrote).
    async fn execute(&self, sql: String) {
        match self {
            Backend::Sqlite(_) => {
                let mut db = sqlx::SqliteConnection::connect(&self.url()).await.unwrap();
                db.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
            }
            Backend::Postgres { url, .. } => {
                let mut db = sqlx::PgConnection::connect(url).await.unwrap();
                db.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
            }
        }
    }

    /// One number a query answers, outside the store.
    async fn number(&self, sql: &str) -> i64 {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Backend::Sqlite(_) => {
                let mut db = sqlx::SqliteConnection::connect(&self.url()).await.unwrap();
                sqlx::query_scalar(sql).fetch_one(&mut db).await.unwrap()
            }
            Backend::Postgres { url, .. } => {
                let mut db = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query_scalar(sql).fetch_one(&mut db).await.unwrap()
            }
        }
    }

    /// What a NUL in stored text reads back as: PostgreSQL text cannot hold one.
    fn stored_nul(&self) -> char {
        match self {
            Backend::Sqlite(_) => '\0',
            Backend::Postgres { .. } => '\u{FFFD}',
        }
    }
}

/// Every contract test, once per backend, on a runtime with threads enough
/// for the races to run in parallel.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::Backend::sqlite()).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::Backend::postgres().await).await
                }
            )*
        }
    };
}

contract!(
    plans_and_runs_survive_a_reopen,
    plans_and_results_stored_before_renderings_were_kept_still_load,
    runs_resume_the_newest_unfinished_one_and_units_are_replaced,
    plans_change_status_and_one_stays_current,
    plans_saved_at_once_by_two_replicas_leave_one_current,
    a_delivery_is_stored_once_whatever_the_redeliveries,
    eight_tasks_storing_one_delivery_store_it_once,
    deliveries_wait_in_arrival_order_and_drop_their_body_once_handled,
    eight_attempts_at_once_are_counted_one_each,
    locks_are_exclusive_until_released,
    locks_taken_through_two_stores_at_once_stay_consistent,
    who_waits_for_whose_locks_survives_a_reopen_and_is_replaced_at_each_plan,
    what_one_waits_for_is_replaced_whole_by_one_of_two_replicas,
    the_plan_comments_extra_parts_are_replaced_whole,
    the_plan_comments_parts_saved_at_once_are_one_list,
    who_pushed_to_a_pull_request_is_kept_once_each_across_a_reopen,
    policy_approvals_are_bound_to_their_plan_id_and_survive_a_reopen,
    a_plans_policy_findings_whole_plan_and_per_unit_survive_a_reopen,
    pull_request_state_and_installations_round_trip,
    an_apply_claim_has_one_holder_and_one_taker_over,
    eight_tasks_taking_one_apply_claim_leave_one_holder,
    an_apply_claim_lease_expires_by_the_clock,
    text_a_pull_request_writes_never_fails_a_write,
    a_gitlab_repo_key_round_trips_beside_the_same_github_path,
    deliveries_unclaimed_or_whose_claim_ran_out_are_claimed_oldest_first,
    a_replica_renews_only_its_own_claims_on_deliveries_still_to_process,
    a_pull_request_lease_has_one_holder_until_it_runs_out,
    eight_replicas_sweeping_at_once_claim_each_expired_delivery_once,
    eight_replicas_taking_one_pull_request_lease_leave_one_holder,
    eight_pull_requests_taking_overlapping_units_at_once_hold_each_unit_once,
);

fn summary(fp: &str) -> PlanSummary {
    PlanSummary {
        counts: Counts {
            add: 1,
            ..Counts::default()
        },
        resources: vec![],
        outputs: vec![],
        fingerprint: Fingerprint::from_stored(fp.into()),
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

fn run(id: &str, key: &str, created_at: i64) -> RunRecord {
    RunRecord {
        id: id.into(),
        repo: PlanKey::from_stored("acme/infra"),
        kind: RunKind::Apply,
        key: key.into(),
        dir: "/d".into(),
        finished: false,
        created_at,
    }
}

fn unit_record(unit: &str, status: UnitStatus, detail: &str) -> UnitRecord {
    UnitRecord {
        retried: 0,
        retry_at: None,
        unit: UnitPath::new(unit),
        status,
        detail: detail.into(),
        summary: Some(summary("f1")),
        rendered: Some(rendered()),
        steps: Vec::new(),
        policies: Vec::new(),
    }
}

fn plan(id: &str, repo: &str, created_at: i64) -> PlanRecord {
    PlanRecord {
        id: PlanId::from_stored(id.into()),
        repo: PlanKey::from_stored(repo),
        head: "h".into(),
        base: "b".into(),
        status: PlanStatus::Current,
        run_id: "r0".into(),
        units: vec![PlannedUnit {
            path: UnitPath::new("a"),
            wave: 1,
            destroy: false,
            deps: vec![],
            tool: Tool::Terraform,
            init_args: vec![],
            stack: None,
            status: UnitStatus::Planned,
            detail: String::new(),
            summary: Some(summary("f1")),
            rendered: Some(rendered()),
            // Kept in the plan's JSON: both backends must give it back.
            retried: 2,
            steps: Vec::new(),
            policies: Vec::new(),
        }],
        created_at,
        policies: Vec::new(),
    }
}

fn delivery(id: &str, received_at: i64) -> DeliveryRecord {
    DeliveryRecord {
        id: delivery_id(id),
        event: "pull_request".into(),
        body: format!("{{\"id\":\"{id}\"}}").into_bytes(),
        status: DeliveryStatus::Received,
        received_at,
        owner: None,
        claimed_until: 0,
    }
}

fn units(names: &[&str]) -> Vec<UnitPath> {
    names.iter().map(UnitPath::new).collect()
}

fn claim(owner: &str, host: &str, heartbeat_at: i64) -> ApplyClaim {
    ApplyClaim {
        repo: PlanKey::from_stored("acme/infra#7"),
        plan_id: PlanId::from_stored("abcdefabcdef".into()),
        owner: owner.into(),
        pid: 100,
        host: host.into(),
        heartbeat_at,
    }
}

/// Two stores on one database, as two replicas hold them.
async fn two_replicas(backend: &Backend) -> [Arc<AnyStore>; 2] {
    [
        Arc::new(backend.open().await),
        Arc::new(backend.open().await),
    ]
}

/// Runs `task(i, store)` for i in 0..8 at once, alternating the two stores.
async fn eight_at_once<T, F, Fut>(stores: &[Arc<AnyStore>; 2], task: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize, Arc<AnyStore>) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let work = task(i, stores[i % 2].clone());
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                work.await
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn plans_and_runs_survive_a_reopen(backend: Backend) {
    {
        let store = backend.open().await;
        store.insert_run(&run("r1", "k", 1)).await.unwrap();
        store
            .record_unit("r1", &unit_record("a", UnitStatus::Applying, ""))
            .await
            .unwrap();
        store
            .save_plan(&plan("aaaaaaaaaaaa", "acme/infra", 1))
            .await
            .unwrap();
        store
            .save_plan(&plan("bbbbbbbbbbbb", "acme/infra", 1))
            .await
            .unwrap();
    }
    let store = backend.open().await;
    let old = store
        .plan(
            &PlanKey::from_stored("acme/infra"),
            &PlanId::from_stored("aaaaaaaaaaaa".into()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        old.status,
        PlanStatus::Superseded,
        "a newer plan supersedes the older one"
    );
    let current = store
        .current_plan(&PlanKey::from_stored("acme/infra"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current, plan("bbbbbbbbbbbb", "acme/infra", 1));
    assert_eq!(current.units[0].rendered, Some(rendered()));
    let run = store
        .latest_run(&PlanKey::from_stored("acme/infra"), RunKind::Apply, "k")
        .await
        .unwrap()
        .unwrap();
    assert!(!run.finished);
    let records = store.unit_records(&run.id).await.unwrap();
    assert_eq!(records, vec![unit_record("a", UnitStatus::Applying, "")]);
    assert_eq!(
        records[0].rendered,
        Some(rendered()),
        "a resumed run keeps it"
    );
}

async fn plans_and_results_stored_before_renderings_were_kept_still_load(backend: Backend) {
    let store = backend.open().await;
    // Rows as cascade wrote them before: plan units without `rendered`, results without it.
    let old_units = serde_json::json!([{
        "path": "a", "wave": 1, "destroy": false, "deps": [], "tool": "terraform",
        "status": "planned", "detail": "",
        "summary": {"counts": {"add": 1, "change": 0, "destroy": 0, "replace": 0, "import": 0,
                               "move": 0, "forget": 0, "read": 0},
                    "resources": [], "outputs": [], "fingerprint": "f1"},
    }]);
    backend.execute(format!("INSERT INTO plans (id, repo, head, base, status, run_id, units, created_at) VALUES ('cccccccccccc', 'r', 'h', 'b', 'current', 'r0', '{old_units}', 1)")).await;
    backend.execute("INSERT INTO runs (id, repo, kind, key, dir, status, created_at) VALUES ('r0', 'r', 'plan', 'k', '/d', 'running', 1)".into()).await;
    backend.execute(format!("INSERT INTO unit_results (run_id, unit, status, detail, summary, updated_at) VALUES ('r0', 'a', 'planned', '', '{}', 1)", old_units[0]["summary"])).await;
    let plan = store
        .current_plan(&PlanKey::from_stored("r"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plan.units[0].summary, Some(summary("f1")));
    assert_eq!(plan.units[0].rendered, None);
    assert_eq!(
        plan.units[0].retried, 0,
        "plans from before retries were never retried"
    );
    assert!(
        plan.policies.is_empty(),
        "plans from before whole-plan policies have none"
    );
    let records = store.unit_records("r0").await.unwrap();
    assert_eq!(records[0].summary, Some(summary("f1")));
    assert_eq!(records[0].rendered, None);
}

async fn runs_resume_the_newest_unfinished_one_and_units_are_replaced(backend: Backend) {
    let store = backend.open().await;
    // Two runs of one key in the same second: the later one is the newest.
    store.insert_run(&run("r1", "k", 5)).await.unwrap();
    store.insert_run(&run("r2", "k", 5)).await.unwrap();
    store.insert_run(&run("other", "k2", 9)).await.unwrap();
    let found = |kind, key: &'static str| {
        let store = &store;
        async move {
            let unfinished = store
                .unfinished_run(&PlanKey::from_stored("acme/infra"), kind, key)
                .await
                .unwrap();
            let latest = store
                .latest_run(&PlanKey::from_stored("acme/infra"), kind, key)
                .await
                .unwrap();
            (unfinished.map(|r| r.id), latest.map(|r| (r.id, r.finished)))
        }
    };
    assert_eq!(
        found(RunKind::Apply, "k").await,
        (Some("r2".into()), Some(("r2".into(), false)))
    );
    assert_eq!(
        found(RunKind::Plan, "k").await,
        (None, None),
        "kinds differ"
    );
    store.finish_run("r2").await.unwrap();
    assert_eq!(
        found(RunKind::Apply, "k").await,
        (Some("r1".into()), Some(("r2".into(), true)))
    );
    store.reopen_run("r2").await.unwrap();
    assert_eq!(
        found(RunKind::Apply, "k").await,
        (Some("r2".into()), Some(("r2".into(), false)))
    );
    assert!(
        store
            .latest_run(&PlanKey::from_stored("acme/other"), RunKind::Apply, "k")
            .await
            .unwrap()
            .is_none(),
        "repositories differ"
    );

    // A unit's result is replaced, never doubled; results come back by unit name.
    store
        .record_unit("r1", &unit_record("b", UnitStatus::Planning, ""))
        .await
        .unwrap();
    store
        .record_unit("r1", &unit_record("a", UnitStatus::Planned, ""))
        .await
        .unwrap();
    let mut failed = unit_record("b", UnitStatus::Failed, "exit status 1");
    failed.summary = None;
    failed.rendered = None;
    store.record_unit("r1", &failed).await.unwrap();
    assert_eq!(
        store.unit_records("r1").await.unwrap(),
        vec![unit_record("a", UnitStatus::Planned, ""), failed]
    );
    assert!(store.unit_records("r2").await.unwrap().is_empty());
}

async fn plans_change_status_and_one_stays_current(backend: Backend) {
    let store = backend.open().await;
    let a = PlanId::from_stored("aaaaaaaaaaaa".into());
    store
        .save_plan(&plan(a.as_str(), "acme/infra", 1))
        .await
        .unwrap();
    store
        .set_plan_status(
            &PlanKey::from_stored("acme/infra"),
            &a,
            PlanStatus::Consumed,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .plan(&PlanKey::from_stored("acme/infra"), &a)
            .await
            .unwrap()
            .unwrap()
            .status,
        PlanStatus::Consumed
    );
    assert_eq!(
        store
            .current_plan(&PlanKey::from_stored("acme/infra"))
            .await
            .unwrap(),
        None
    );
    store
        .save_plan(&plan("bbbbbbbbbbbb", "acme/infra", 2))
        .await
        .unwrap();
    store
        .save_plan(&plan("cccccccccccc", "acme/web", 2))
        .await
        .unwrap();
    // Saving a plan id again makes it current again, in place.
    store
        .save_plan(&plan(a.as_str(), "acme/infra", 3))
        .await
        .unwrap();
    let current = store
        .current_plan(&PlanKey::from_stored("acme/infra"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((current.id, current.created_at), (a, 3));
    assert_eq!(
        store
            .plan(
                &PlanKey::from_stored("acme/infra"),
                &PlanId::from_stored("bbbbbbbbbbbb".into())
            )
            .await
            .unwrap()
            .unwrap()
            .status,
        PlanStatus::Superseded
    );
    assert_eq!(
        store
            .current_plan(&PlanKey::from_stored("acme/web"))
            .await
            .unwrap()
            .unwrap()
            .id,
        PlanId::from_stored("cccccccccccc".into()),
        "another repository's plan stays current"
    );
    assert_eq!(
        store
            .plan(
                &PlanKey::from_stored("acme/web"),
                &PlanId::from_stored("aaaaaaaaaaaa".into())
            )
            .await
            .unwrap(),
        None
    );
}

async fn plans_saved_at_once_by_two_replicas_leave_one_current(backend: Backend) {
    let stores = two_replicas(&backend).await;
    for round in 0..3 {
        eight_at_once(&stores, move |i, store| async move {
            store
                .save_plan(&plan(&format!("{round}{i:011}"), "acme/infra", round))
                .await
                .unwrap()
        })
        .await;
        let current = backend
            .number("SELECT count(*) FROM plans WHERE repo = 'acme/infra' AND status = 'current'")
            .await;
        assert_eq!(
            current, 1,
            "round {round}: one current plan, the others superseded"
        );
    }
}

async fn a_delivery_is_stored_once_whatever_the_redeliveries(backend: Backend) {
    let store = backend.open().await;
    let d = delivery("72d3162e", 1);
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
    assert!(
        !store.insert_delivery(&d).await.unwrap(),
        "a handled delivery's id still refuses redeliveries"
    );
}

async fn eight_tasks_storing_one_delivery_store_it_once(backend: Backend) {
    let stores = two_replicas(&backend).await;
    for round in 0..5 {
        let d = delivery(&format!("delivery-{round}"), 1);
        let stored = eight_at_once(&stores, |_, store| {
            let d = d.clone();
            async move { store.insert_delivery(&d).await.unwrap() }
        })
        .await;
        assert_eq!(
            stored.iter().filter(|s| **s).count(),
            1,
            "round {round}: one task stores it, the others see a redelivery: {stored:?}"
        );
    }
    assert_eq!(stores[0].pending_delivery_count().await.unwrap(), 5);
}

async fn deliveries_wait_in_arrival_order_and_drop_their_body_once_handled(backend: Backend) {
    let store = backend.open().await;
    let (late, early, same_second) = (delivery("c", 5), delivery("a", 4), delivery("b", 5));
    for d in [&late, &early, &same_second] {
        assert!(store.insert_delivery(d).await.unwrap());
    }
    assert_eq!(
        store.pending_deliveries().await.unwrap(),
        vec![early.clone(), late.clone(), same_second.clone()],
        "by time received, then in the order stored"
    );
    assert_eq!(store.pending_delivery_count().await.unwrap(), 3);
    store
        .set_delivery_status(&delivery_id("c"), DeliveryStatus::Failed)
        .await
        .unwrap();
    store
        .set_delivery_status(&delivery_id("a"), DeliveryStatus::Received)
        .await
        .unwrap();
    assert_eq!(
        store.pending_deliveries().await.unwrap(),
        vec![early, same_second]
    );
    assert_eq!(store.pending_delivery_count().await.unwrap(), 2);
    let body_length =
        |id| format!("SELECT CAST(length(body) AS BIGINT) FROM deliveries WHERE id = '{id}'");
    assert_eq!(backend.number(&body_length("c")).await, 0, "body dropped");
    assert_eq!(
        backend.number(&body_length("a")).await,
        late.body.len() as i64,
        "a delivery still to process keeps its body"
    );
}

async fn eight_attempts_at_once_are_counted_one_each(backend: Backend) {
    let stores = two_replicas(&backend).await;
    let d = delivery("attempted", 1);
    stores[0].insert_delivery(&d).await.unwrap();
    let mut counts = eight_at_once(&stores, |_, store| async move {
        store
            .start_delivery_attempt(&delivery_id("attempted"))
            .await
            .unwrap()
    })
    .await;
    counts.sort();
    assert_eq!(counts, (1..=8).collect::<Vec<u32>>());
    assert_eq!(
        stores[1]
            .delivery_attempts(&delivery_id("attempted"))
            .await
            .unwrap(),
        8
    );
    assert_eq!(
        stores[1]
            .delivery_attempts(&delivery_id("unknown"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        stores[1]
            .start_delivery_attempt(&delivery_id("unknown"))
            .await
            .unwrap(),
        0
    );
}

async fn locks_are_exclusive_until_released(backend: Backend) {
    let store = backend.open().await;
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
        .take_locks(
            "acme/infra",
            13,
            &units(&["live/prod/vpc", "live/dev/vpc", "live/dev/app"]),
        )
        .await
        .unwrap();
    assert_eq!(
        held,
        vec![
            Lock {
                unit: UnitPath::new("live/dev/vpc"),
                pr: 12
            },
            Lock {
                unit: UnitPath::new("live/dev/app"),
                pr: 12
            }
        ],
        "in the order asked for"
    );
    assert_eq!(
        store.locks("acme/infra").await.unwrap(),
        vec![
            Lock {
                unit: UnitPath::new("live/dev/app"),
                pr: 12
            },
            Lock {
                unit: UnitPath::new("live/dev/vpc"),
                pr: 12
            },
            Lock {
                unit: UnitPath::new("live/prod/vpc"),
                pr: 13
            },
        ]
    );
    assert_eq!(store.release_locks("acme/infra", 12).await.unwrap(), 2);
    assert_eq!(store.release_locks("acme/infra", 12).await.unwrap(), 0);
    assert!(
        store
            .take_locks("acme/infra", 13, &units(&["live/dev/vpc", "live/dev/vpc"]))
            .await
            .unwrap()
            .is_empty(),
        "a unit asked for twice is taken once"
    );
    assert_eq!(store.locks("acme/infra").await.unwrap().len(), 2);
    // Another repository's units are separate.
    assert!(
        store
            .take_locks("acme/other", 1, &units(&["live/dev/vpc"]))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .take_locks("acme/other", 2, &[])
            .await
            .unwrap()
            .is_empty()
    );
}

/// What `pr`, having asked for `asked`, must be told others hold, in the
/// order it asked, given who holds each unit now.
fn held_by_others(pr: u64, asked: &[UnitPath], owners: &BTreeMap<UnitPath, u64>) -> Vec<Lock> {
    asked
        .iter()
        .filter(|u| owners[*u] != pr)
        .map(|u| Lock {
            unit: u.clone(),
            pr: owners[u],
        })
        .collect()
}

async fn locks_taken_through_two_stores_at_once_stay_consistent(backend: Backend) {
    let [a, b] = two_replicas(&backend).await;
    // Wide enough for the two to take their first units at the same moment.
    let names: Vec<String> = (0..300).map(|i| format!("live/u{i:03}")).collect();
    let first: Vec<UnitPath> = names[..200].iter().map(UnitPath::new).collect();
    // Overlapping, and asked for in the opposite order.
    let second: Vec<UnitPath> = names[100..].iter().rev().map(UnitPath::new).collect();
    for round in 0..40 {
        let (held_by_2, held_by_1) = tokio::join!(
            a.take_locks("acme/infra", 1, &first),
            b.take_locks("acme/infra", 2, &second)
        );
        let (held_by_2, held_by_1) = (held_by_2.unwrap(), held_by_1.unwrap());
        let owners: BTreeMap<UnitPath, u64> = a
            .locks("acme/infra")
            .await
            .unwrap()
            .into_iter()
            .map(|l| (l.unit, l.pr))
            .collect();
        assert_eq!(
            owners.len(),
            300,
            "round {round}: every unit asked for is locked"
        );
        for (pr, asked, told) in [(1, &first, &held_by_2), (2, &second, &held_by_1)] {
            assert_eq!(
                told,
                &held_by_others(pr, asked, &owners),
                "round {round}: pull request {pr} is told exactly the units the other holds"
            );
        }
        let released = a.release_locks("acme/infra", 1).await.unwrap()
            + b.release_locks("acme/infra", 2).await.unwrap();
        assert_eq!(released, 300);
    }
}

async fn who_waits_for_whose_locks_survives_a_reopen_and_is_replaced_at_each_plan(
    backend: Backend,
) {
    {
        let store = backend.open().await;
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
    let store = backend.open().await;
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
    // A pull request never waits for itself.
    store
        .set_waiting("acme/infra", 5, &[5, 2, 2])
        .await
        .unwrap();
    assert_eq!(store.waiting_for("acme/infra", 2).await.unwrap(), [3, 5]);
    assert!(store.waiting_for("acme/infra", 5).await.unwrap().is_empty());
}

/// Eight lists of the same shape at once, each a different one: 10·i+1 … 10·i+20.
fn lists_of_twenty(i: usize) -> Vec<u64> {
    (1..=20).map(|n| (10 * i + n) as u64).collect()
}

async fn what_one_waits_for_is_replaced_whole_by_one_of_two_replicas(backend: Backend) {
    let stores = two_replicas(&backend).await;
    for round in 0..5 {
        eight_at_once(&stores, |i, store| async move {
            store
                .set_waiting("acme/infra", 100, &lists_of_twenty(i))
                .await
                .unwrap()
        })
        .await;
        let mut found = Vec::new();
        for holder in 1..=100 {
            if stores[0]
                .waiting_for("acme/infra", holder)
                .await
                .unwrap()
                .contains(&100)
            {
                found.push(holder);
            }
        }
        assert!(
            (0..8).any(|i| found == lists_of_twenty(i)),
            "round {round}: one replacement wins whole, not a mix: {found:?}"
        );
    }
}

/// No comment parts, no waiting pull requests.
const NONE: [u64; 0] = [];

async fn the_plan_comments_extra_parts_are_replaced_whole(backend: Backend) {
    let store = backend.open().await;
    assert_eq!(store.comment_parts("acme/infra", 7).await.unwrap(), NONE);
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
    store.set_comment_parts("acme/infra", 7, &[]).await.unwrap();
    assert_eq!(store.comment_parts("acme/infra", 7).await.unwrap(), NONE);
}

async fn the_plan_comments_parts_saved_at_once_are_one_list(backend: Backend) {
    let stores = two_replicas(&backend).await;
    for round in 0..5 {
        let saved = eight_at_once(&stores, |i, store| async move {
            // Part numbers collide between the lists: a mix would fail the primary key.
            store
                .set_comment_parts("acme/infra", 7, &lists_of_twenty(i))
                .await
        })
        .await;
        assert!(saved.iter().all(|s| s.is_ok()), "round {round}: {saved:?}");
        let parts = stores[1].comment_parts("acme/infra", 7).await.unwrap();
        assert!(
            (0..8).any(|i| parts == lists_of_twenty(i)),
            "round {round}: one list, whole: {parts:?}"
        );
    }
}

async fn who_pushed_to_a_pull_request_is_kept_once_each_across_a_reopen(backend: Backend) {
    let pusher = |login: &str, user_id: Option<u64>, head: &str| Pusher {
        login: login.into(),
        user_id,
        head_sha: head.into(),
    };
    {
        let store = backend.open().await;
        assert!(store.pushers("acme/infra", 7).await.unwrap().is_empty());
        store
            .add_pusher("acme/infra", 7, &pusher("bob", None, "h2"))
            .await
            .unwrap();
        store
            .add_pusher("acme/infra", 7, &pusher("alice", None, "h1"))
            .await
            .unwrap();
        // Pushing again keeps the first head recorded for them.
        store
            .add_pusher("acme/infra", 7, &pusher("bob", None, "h3"))
            .await
            .unwrap();
        store
            .add_pusher(
                "gitlab:acme/infra",
                7,
                &pusher("carol", Some(u64::MAX >> 1), "h4"),
            )
            .await
            .unwrap();
    }
    let store = backend.open().await;
    assert_eq!(
        store.pushers("acme/infra", 7).await.unwrap(),
        [pusher("alice", None, "h1"), pusher("bob", None, "h2")]
    );
    assert_eq!(
        store.pushers("gitlab:acme/infra", 7).await.unwrap(),
        [pusher("carol", Some(u64::MAX >> 1), "h4")]
    );
    assert!(store.pushers("acme/infra", 8).await.unwrap().is_empty());
}

async fn policy_approvals_are_bound_to_their_plan_id_and_survive_a_reopen(backend: Backend) {
    let key = PlanKey::from_stored("acme/infra#7");
    let (first, second) = (
        PlanId::from_stored("aaaaaaaaaaaa".into()),
        PlanId::from_stored("bbbbbbbbbbbb".into()),
    );
    let approval = |set: &str, user: &str, at: i64| PolicyApproval {
        set: set.into(),
        user: user.into(),
        at,
    };
    {
        let store = backend.open().await;
        assert!(
            store
                .policy_approvals(&key, &first)
                .await
                .unwrap()
                .is_empty()
        );
        for a in [
            approval("prod-guard", "carol", 10),
            approval("costs", "dave", 11),
            // The same set by the same owner again keeps the first record.
            approval("prod-guard", "carol", 12),
        ] {
            store.approve_policies(&key, &first, &a).await.unwrap();
        }
        let other = PlanKey::from_stored("acme/infra#8");
        store
            .approve_policies(&other, &first, &approval("prod-guard", "erin", 13))
            .await
            .unwrap();
    }
    let store = backend.open().await;
    assert_eq!(
        store.policy_approvals(&key, &first).await.unwrap(),
        [
            approval("costs", "dave", 11),
            approval("prod-guard", "carol", 10)
        ]
    );
    // A new plan id (a push, a changed fingerprint) has none of them.
    assert!(
        store
            .policy_approvals(&key, &second)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_plans_policy_findings_whole_plan_and_per_unit_survive_a_reopen(backend: Backend) {
    let finding = |set: &str, blocking: bool, deny: &str, error: &str| PolicyResult {
        set: set.into(),
        blocking,
        denies: vec![PolicyMessage {
            rule: "data.main.deny".into(),
            message: deny.into(),
        }],
        warnings: Vec::new(),
        error: error.into(),
    };
    let mut saved = plan("aaaaaaaaaaaa", "acme/infra#7", 1);
    saved.policies = vec![
        finding("whole", true, "3 destroys across the plan; at most 2", ""),
        finding("spread", false, "", "policy set `spread` was stopped"),
    ];
    saved.units[0].policies = vec![finding("guard", true, "a adds 1 resource in prod", "")];
    {
        let store = backend.open().await;
        store.save_plan(&saved).await.unwrap();
    }
    let store = backend.open().await;
    let key = PlanKey::from_stored("acme/infra#7");
    let found = store.plan(&key, &saved.id).await.unwrap().unwrap();
    assert_eq!(found, saved);
    let all: Vec<(Option<&str>, &str)> = found
        .policy_results()
        .map(|(unit, r)| (unit.map(UnitPath::as_str), r.set.as_str()))
        .collect();
    assert_eq!(
        all,
        [(None, "whole"), (None, "spread"), (Some("a"), "guard")],
        "the whole plan's sets first, then each unit's"
    );
    // Saved again under the same id (a resumed run): the findings are replaced, and a
    // plan without whole-plan sets stores none.
    saved.policies.clear();
    store.save_plan(&saved).await.unwrap();
    let found = store.current_plan(&key).await.unwrap().unwrap();
    assert!(found.policies.is_empty(), "{:?}", found.policies);
}

async fn pull_request_state_and_installations_round_trip(backend: Backend) {
    let store = backend.open().await;
    let mut pr = PullRequestRecord {
        repo: "acme/infra".into(),
        number: 7,
        installation_id: 77,
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
    pr.plan_id = Some(PlanId::from_stored("3f9a2c1b7d4e".into()));
    pr.comment_id = Some(u64::from(u32::MAX) + 1234);
    pr.check_run_id = Some(99);
    store.save_pull_request(&pr).await.unwrap();
    assert_eq!(
        store.pull_request("acme/infra", 7).await.unwrap(),
        Some(pr.clone())
    );
    assert_eq!(store.pull_request("acme/infra", 8).await.unwrap(), None);
    assert!(store.unfinished_pull_requests().await.unwrap().is_empty());

    store.upsert_installation(77, "acme", true).await.unwrap();
    store
        .change_installation_repos(77, &["acme/infra".into(), "acme/web".into()], &[])
        .await
        .unwrap();
    store
        .change_installation_repos(77, &["acme/infra".into()], &["acme/web".into()])
        .await
        .unwrap();
    assert_eq!(store.installation_repos(77).await.unwrap(), ["acme/infra"]);
    store.upsert_installation(77, "acme", false).await.unwrap();
    assert!(store.installation_repos(77).await.unwrap().is_empty());
    store
        .upsert_installation(77, "acme-renamed", true)
        .await
        .unwrap();
    assert!(store.installation_repos(78).await.unwrap().is_empty());
}

async fn an_apply_claim_has_one_holder_and_one_taker_over(backend: Backend) {
    let id = PlanId::from_stored("abcdefabcdef".into());
    let first = claim("first", "host-a", 10);
    {
        let store = backend.open().await;
        assert_eq!(store.insert_apply_claim(&first).await.unwrap(), None);
    }
    // It survives a restart; a second owner is told who holds it and changes nothing.
    let store = backend.open().await;
    let second = claim("second", "host-a", 20);
    assert_eq!(
        store.insert_apply_claim(&second).await.unwrap(),
        Some(first.clone())
    );
    // Only the owner heartbeats it.
    assert!(
        store
            .heartbeat_apply_claim(&PlanKey::from_stored("acme/infra#7"), &id, "first", 15)
            .await
            .unwrap()
    );
    assert!(
        !store
            .heartbeat_apply_claim(&PlanKey::from_stored("acme/infra#7"), &id, "second", 15)
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
    let third = claim("third", "host-a", 30);
    assert!(!store.take_over_apply_claim(&beaten, &third).await.unwrap());
    assert_eq!(
        store
            .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
            .await
            .unwrap(),
        Some(second.clone())
    );
    // Releasing someone else's claim does nothing; the owner's release frees it.
    store
        .release_apply_claim(&PlanKey::from_stored("acme/infra#7"), &id, "first")
        .await
        .unwrap();
    assert!(
        store
            .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
            .await
            .unwrap()
            .is_some()
    );
    store
        .release_apply_claim(&PlanKey::from_stored("acme/infra#7"), &id, "second")
        .await
        .unwrap();
    assert_eq!(
        store
            .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.insert_apply_claim(&third).await.unwrap(), None);
}

async fn eight_tasks_taking_one_apply_claim_leave_one_holder(backend: Backend) {
    let stores = two_replicas(&backend).await;
    let id = PlanId::from_stored("abcdefabcdef".into());
    let answers = eight_at_once(&stores, |i, store| async move {
        let mine = claim(&format!("owner-{i}"), "host-a", 10);
        (mine.clone(), store.insert_apply_claim(&mine).await.unwrap())
    })
    .await;
    let winners: Vec<&ApplyClaim> = answers
        .iter()
        .filter(|(_, holder)| holder.is_none())
        .map(|(mine, _)| mine)
        .collect();
    assert_eq!(winners.len(), 1, "one task takes the claim: {answers:?}");
    let stored = stores[0]
        .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&stored, winners[0]);
    for (_, holder) in answers.iter().filter(|(_, h)| h.is_some()) {
        assert_eq!(
            holder.as_ref(),
            Some(&stored),
            "the others are told who holds it"
        );
    }

    // Eight takers-over of the claim as they all read it: one wins.
    let taken = eight_at_once(&stores, |i, store| {
        let old = stored.clone();
        async move {
            let mine = claim(&format!("taker-{i}"), "host-b", 99);
            let won = store.take_over_apply_claim(&old, &mine).await.unwrap();
            (mine, won)
        }
    })
    .await;
    let won: Vec<&ApplyClaim> = taken.iter().filter(|(_, w)| *w).map(|(m, _)| m).collect();
    assert_eq!(won.len(), 1, "one takes it over: {taken:?}");
    assert_eq!(
        stores[1]
            .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
            .await
            .unwrap()
            .as_ref(),
        Some(won[0])
    );
}

/// The Clock seam, moved by hand.
struct FakeClock(AtomicI64);

impl Clock for FakeClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl FakeClock {
    fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

async fn an_apply_claim_lease_expires_by_the_clock(backend: Backend) {
    let stores = two_replicas(&backend).await;
    let clock = FakeClock(AtomicI64::new(1_000_000));
    let id = PlanId::from_stored("abcdefabcdef".into());
    // A replica on another host holds the claim: only its heartbeat says it lives.
    let holder = claim("replica-a", "another-host", clock.now());
    assert_eq!(stores[0].insert_apply_claim(&holder).await.unwrap(), None);

    clock.advance(LEASE_SECS - 10);
    assert!(
        stores[0]
            .heartbeat_apply_claim(
                &PlanKey::from_stored("acme/infra#7"),
                &id,
                "replica-a",
                clock.now()
            )
            .await
            .unwrap()
    );
    clock.advance(LEASE_SECS);
    let read = stores[1]
        .insert_apply_claim(&claim("replica-b", "host-b", clock.now()))
        .await
        .unwrap()
        .unwrap();
    assert!(
        owner_alive(&read, clock.now()),
        "a heartbeat exactly one lease old still holds"
    );

    clock.advance(1);
    assert!(!owner_alive(&read, clock.now()), "the lease has expired");
    let now = clock.now();
    let taken = eight_at_once(&stores, |i, store| {
        let old = read.clone();
        async move {
            store
                .take_over_apply_claim(&old, &claim(&format!("replica-{i}"), "host-b", now))
                .await
                .unwrap()
        }
    })
    .await;
    assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
    // The expired owner learns it lost the claim at its next heartbeat.
    assert!(
        !stores[0]
            .heartbeat_apply_claim(&PlanKey::from_stored("acme/infra#7"), &id, "replica-a", now)
            .await
            .unwrap()
    );
    let new = stores[0]
        .apply_claim(&PlanKey::from_stored("acme/infra#7"), &id)
        .await
        .unwrap()
        .unwrap();
    assert!(owner_alive(&new, clock.now()));
}

async fn text_a_pull_request_writes_never_fails_a_write(backend: Backend) {
    let store = backend.open().await;
    let hostile = "live/a\0b'; DROP TABLE locks; -- \u{202e}é\u{1F600}\"\\";
    let stored = UnitPath::new(hostile)
        .as_str()
        .replace('\0', &backend.stored_nul().to_string());
    // An error excerpt of a megabyte, NUL bytes and control characters included.
    let detail = format!("{}\0\x1b[31m\r\n", "x".repeat(1 << 20));
    store.insert_run(&run("r1", "k", 1)).await.unwrap();
    store
        .record_unit("r1", &unit_record(hostile, UnitStatus::Failed, &detail))
        .await
        .unwrap();
    let records = store.unit_records("r1").await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].unit.as_str(), stored);
    assert_eq!(
        records[0].detail,
        detail.replace('\0', &backend.stored_nul().to_string())
    );
    assert!(
        store
            .take_locks("acme/infra", 1, &units(&[hostile, "live/b"]))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .take_locks("acme/infra", 2, &units(&[hostile]))
            .await
            .unwrap(),
        vec![Lock {
            unit: UnitPath::new(&stored),
            pr: 1
        }],
        "the lock on it holds"
    );
    assert_eq!(
        store.locks("acme/infra").await.unwrap().len(),
        2,
        "the table is intact"
    );
    // A delivery body is bytes, whatever they are.
    let mut d = delivery("binary", 1);
    d.body = (0..=255u8).rev().collect();
    assert!(store.insert_delivery(&d).await.unwrap());
    assert_eq!(store.pending_deliveries().await.unwrap(), vec![d]);
}

/// A delivery as `owner` claimed it, until `until`.
fn claimed(id: &str, received_at: i64, owner: &str, until: i64) -> DeliveryRecord {
    DeliveryRecord {
        owner: Some(ReplicaId::from_stored(owner)),
        claimed_until: until,
        ..delivery(id, received_at)
    }
}

/// A test's delivery id (each is a valid `X-GitHub-Delivery`).
fn delivery_id(id: &str) -> DeliveryId {
    DeliveryId::new(id).unwrap()
}

fn ids(deliveries: &[DeliveryRecord]) -> Vec<&str> {
    deliveries.iter().map(|d| d.id.as_str()).collect()
}

async fn deliveries_unclaimed_or_whose_claim_ran_out_are_claimed_oldest_first(backend: Backend) {
    let store = backend.open().await;
    let now = 1_000;
    for d in [
        delivery("unclaimed", 3),
        claimed("dead-replica", 1, "dead", now - 1),
        claimed("live-replica", 2, "live", now + 10),
        // A claim until `now` still holds at `now`.
        claimed("runs-out-now", 2, "live", now),
        delivery("same-second", 3),
        claimed("processed", 0, "dead", now - 100),
        delivery("failed", 0),
    ] {
        assert!(store.insert_delivery(&d).await.unwrap());
    }
    for (id, handled) in [
        ("processed", DeliveryStatus::Processed),
        ("failed", DeliveryStatus::Failed),
    ] {
        store
            .set_delivery_status(&delivery_id(id), handled)
            .await
            .unwrap();
    }

    assert_eq!(
        store
            .claim_deliveries(&ReplicaId::from_stored("me"), now, now + 15, 2)
            .await
            .unwrap(),
        vec![
            claimed("dead-replica", 1, "me", now + 15),
            claimed("unclaimed", 3, "me", now + 15),
        ],
        "oldest first, at most the limit, with their bodies"
    );
    assert_eq!(
        store
            .claim_deliveries(&ReplicaId::from_stored("other"), now, now + 15, 16)
            .await
            .unwrap(),
        vec![claimed("same-second", 3, "other", now + 15)],
        "neither live claims, nor the ones just claimed, nor handled deliveries"
    );
    assert!(
        store
            .claim_deliveries(&ReplicaId::from_stored("other"), now, now + 15, 16)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .claim_deliveries(&ReplicaId::from_stored("other"), now + 1, now + 16, 0)
            .await
            .unwrap(),
        vec![],
        "a limit of none takes none"
    );
    assert_eq!(
        store
            .claim_deliveries(&ReplicaId::from_stored("other"), now + 1, now + 16, 16)
            .await
            .unwrap(),
        vec![claimed("runs-out-now", 2, "other", now + 16)],
        "a second later, the claim until then has run out"
    );

    // A lone server's start-up takes every delivery still to process, whoever
    // holds it and until when; never a handled one.
    let all = store
        .claim_deliveries(
            &ReplicaId::from_stored("lone"),
            i64::MAX,
            now + 20,
            u32::MAX,
        )
        .await
        .unwrap();
    assert_eq!(
        ids(&all),
        [
            "dead-replica",
            "live-replica",
            "runs-out-now",
            "unclaimed",
            "same-second"
        ]
    );
    assert!(
        all.iter()
            .all(|d| d.owner.as_ref().map(ReplicaId::as_str) == Some("lone")
                && d.claimed_until == now + 20),
        "{all:?}"
    );
    assert_eq!(
        store.pending_deliveries().await.unwrap(),
        all,
        "the claims are stored"
    );
}

async fn a_replica_renews_only_its_own_claims_on_deliveries_still_to_process(backend: Backend) {
    let store = backend.open().await;
    for d in [
        claimed("a1", 1, "a", 100),
        claimed("a2", 2, "a", 100),
        claimed("a3", 3, "a", 100),
        claimed("b1", 4, "b", 100),
        claimed("a-done", 5, "a", 100),
    ] {
        assert!(store.insert_delivery(&d).await.unwrap());
    }
    store
        .set_delivery_status(&delivery_id("a-done"), DeliveryStatus::Processed)
        .await
        .unwrap();
    let hand = |ids: &[&str]| ids.iter().map(|s| delivery_id(s)).collect::<Vec<_>>();
    // a has a1 and a2 in hand (a3 it no longer processes), and names b's and a done one.
    assert_eq!(
        store
            .renew_deliveries(
                &ReplicaId::from_stored("a"),
                &hand(&["a1", "a2", "b1", "a-done"]),
                300
            )
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .renew_deliveries(&ReplicaId::from_stored("nobody"), &hand(&["a1"]), 300)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .renew_deliveries(&ReplicaId::from_stored("a"), &[], 300)
            .await
            .unwrap(),
        0
    );
    // At 200, b's claim and a's unrenewed a3 have run out; a's renewed ones have not.
    let taken = store
        .claim_deliveries(&ReplicaId::from_stored("c"), 200, 400, 16)
        .await
        .unwrap();
    assert_eq!(ids(&taken), ["a3", "b1"]);
    assert_eq!(
        store
            .renew_deliveries(&ReplicaId::from_stored("b"), &hand(&["b1"]), 500)
            .await
            .unwrap(),
        0,
        "b lost its claim: nothing of its own to renew"
    );
    assert_eq!(
        store.pending_deliveries().await.unwrap(),
        vec![
            claimed("a1", 1, "a", 300),
            claimed("a2", 2, "a", 300),
            claimed("a3", 3, "c", 400),
            claimed("b1", 4, "c", 400),
        ]
    );
    store
        .set_delivery_status(&delivery_id("a1"), DeliveryStatus::Processed)
        .await
        .unwrap();
    assert_eq!(
        store
            .renew_deliveries(&ReplicaId::from_stored("a"), &hand(&["a1", "a2"]), 600)
            .await
            .unwrap(),
        1
    );
}

/// How long the pull request leases of these tests hold.
const PR_LEASE: i64 = 15;

async fn a_pull_request_lease_has_one_holder_until_it_runs_out(backend: Backend) {
    let store = backend.open().await;
    let clock = FakeClock(AtomicI64::new(1_000_000));
    let take = |owner: &'static str| {
        let (store, now) = (&store, clock.now());
        async move {
            let owner = ReplicaId::from_stored(owner);
            store
                .take_pr_lease("acme/infra", 7, &owner, now, now + PR_LEASE)
                .await
        }
    };
    let renew = |owner: &'static str| {
        let (store, until) = (&store, clock.now() + PR_LEASE);
        async move {
            let owner = ReplicaId::from_stored(owner);
            store.renew_pr_lease("acme/infra", 7, &owner, until).await
        }
    };
    assert!(take("a").await.unwrap());
    assert!(!take("b").await.unwrap(), "a holds it");
    assert!(take("a").await.unwrap(), "taking one's own lease again");
    assert_eq!(renew("a").await.unwrap(), Some(false));
    let now = clock.now();
    for (repo, number) in [("acme/infra", 8), ("acme/other", 7)] {
        assert!(
            store
                .take_pr_lease(
                    repo,
                    number,
                    &ReplicaId::from_stored("b"),
                    now,
                    now + PR_LEASE
                )
                .await
                .unwrap(),
            "{repo}#{number} has a lease of its own"
        );
    }

    clock.advance(PR_LEASE);
    assert!(!take("b").await.unwrap(), "a lease until now still holds");
    clock.advance(1);
    assert!(take("b").await.unwrap(), "a's lease ran out");
    assert_eq!(renew("a").await.unwrap(), None, "a lost it");
    store
        .release_pr_lease("acme/infra", 7, &ReplicaId::from_stored("a"))
        .await
        .unwrap();
    assert!(!take("c").await.unwrap(), "a cannot release b's lease");
    assert_eq!(renew("b").await.unwrap(), Some(false));

    // A newer head received by another replica marks the holder's lease.
    assert!(
        !store
            .supersede_pr("acme/infra", 7, &ReplicaId::from_stored("b"))
            .await
            .unwrap()
    );
    assert_eq!(renew("b").await.unwrap(), Some(false), "not by the holder");
    assert!(
        store
            .supersede_pr("acme/infra", 7, &ReplicaId::from_stored("a"))
            .await
            .unwrap()
    );
    assert_eq!(renew("b").await.unwrap(), Some(true));
    assert_eq!(
        renew("b").await.unwrap(),
        Some(true),
        "the mark stays until the lease is taken again"
    );
    assert!(take("b").await.unwrap());
    assert_eq!(
        renew("b").await.unwrap(),
        Some(false),
        "taken again: the mark is cleared"
    );
    assert!(
        store
            .supersede_pr("acme/infra", 7, &ReplicaId::from_stored("c"))
            .await
            .unwrap()
    );
    clock.advance(PR_LEASE + 1);
    assert!(take("c").await.unwrap());
    assert_eq!(
        renew("c").await.unwrap(),
        Some(false),
        "a new holder starts unmarked"
    );
    assert_eq!(renew("b").await.unwrap(), None);

    store
        .release_pr_lease("acme/infra", 7, &ReplicaId::from_stored("c"))
        .await
        .unwrap();
    assert!(take("a").await.unwrap(), "released: free at once");
    assert!(
        !store
            .supersede_pr("acme/infra", 99, &ReplicaId::from_stored("a"))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .renew_pr_lease("acme/infra", 99, &ReplicaId::from_stored("a"), clock.now())
            .await
            .unwrap(),
        None,
        "nobody holds #99"
    );
    store
        .release_pr_lease("acme/infra", 99, &ReplicaId::from_stored("a"))
        .await
        .unwrap();
}

async fn eight_replicas_sweeping_at_once_claim_each_expired_delivery_once(backend: Backend) {
    let stores = two_replicas(&backend).await;
    for round in 0..5 {
        let id = format!("orphan-{round}");
        assert!(
            stores[0]
                .insert_delivery(&claimed(&id, round, "dead", 100))
                .await
                .unwrap()
        );
        let got = eight_at_once(&stores, |i, store| async move {
            store
                .claim_deliveries(
                    &ReplicaId::from_stored(format!("replica-{i}")),
                    200,
                    300,
                    16,
                )
                .await
                .unwrap()
        })
        .await;
        let winners: Vec<(usize, &Vec<DeliveryRecord>)> = got
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: one takes it: {got:?}");
        let (i, taken) = winners[0];
        assert_eq!(
            taken,
            &vec![claimed(&id, round, &format!("replica-{i}"), 300)]
        );
    }

    // Many orphans: sweeps at once take disjoint sets, each its limit.
    for n in 0..40 {
        let d = claimed(&format!("many-{n:02}"), 10 + n, "dead", 100);
        assert!(stores[1].insert_delivery(&d).await.unwrap());
    }
    let got = eight_at_once(&stores, |i, store| async move {
        store
            .claim_deliveries(&ReplicaId::from_stored(format!("sweeper-{i}")), 200, 300, 4)
            .await
            .unwrap()
    })
    .await;
    let mut taken: Vec<&str> = got.iter().flat_map(|c| ids(c)).collect();
    assert!(got.iter().all(|c| c.len() == 4), "{got:?}");
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), 32, "no delivery taken twice: {got:?}");
    let rest = stores[0]
        .claim_deliveries(&ReplicaId::from_stored("last"), 200, 300, 16)
        .await
        .unwrap();
    assert_eq!(rest.len(), 8);
    assert!(rest.iter().all(|d| !taken.contains(&d.id.as_str())));
}

async fn eight_replicas_taking_one_pull_request_lease_leave_one_holder(backend: Backend) {
    let stores = two_replicas(&backend).await;
    let mut now = 1_000_000;
    let mut holder: Option<String> = None;
    // Round 0 races to insert the lease; the others to take over an expired one.
    for round in 0..6 {
        let taken = eight_at_once(&stores, |i, store| async move {
            let me = format!("replica-{round}-{i}");
            let won = store
                .take_pr_lease(
                    "acme/infra",
                    7,
                    &ReplicaId::from_stored(me.as_str()),
                    now,
                    now + PR_LEASE,
                )
                .await
                .unwrap();
            (me, won)
        })
        .await;
        let winners: Vec<&String> = taken.iter().filter(|(_, w)| *w).map(|(m, _)| m).collect();
        assert_eq!(winners.len(), 1, "round {round}: one holder: {taken:?}");
        let winner = winners[0].clone();
        let losers = taken.iter().filter(|(_, w)| !*w).map(|(m, _)| m.as_str());
        for owner in losers.chain(holder.as_deref()) {
            assert_eq!(
                stores[0]
                    .renew_pr_lease(
                        "acme/infra",
                        7,
                        &ReplicaId::from_stored(owner),
                        now + PR_LEASE,
                    )
                    .await
                    .unwrap(),
                None,
                "round {round}: {owner} does not hold it"
            );
        }
        assert_eq!(
            stores[1]
                .renew_pr_lease(
                    "acme/infra",
                    7,
                    &ReplicaId::from_stored(winner.as_str()),
                    now + PR_LEASE,
                )
                .await
                .unwrap(),
            Some(false)
        );
        holder = Some(winner);
        now += PR_LEASE + 1;
    }
}

async fn eight_pull_requests_taking_overlapping_units_at_once_hold_each_unit_once(
    backend: Backend,
) {
    let stores = two_replicas(&backend).await;
    let names: Vec<UnitPath> = (0..55)
        .map(|i| UnitPath::new(format!("live/u{i:02}")))
        .collect();
    // Pull request i + 1 asks for 20 units from 5 * i: each overlaps the next
    // three; every other one asks in the opposite order.
    let asked = |i: usize| {
        let mut mine = names[5 * i..5 * i + 20].to_vec();
        if i % 2 == 1 {
            mine.reverse();
        }
        mine
    };
    for round in 0..10 {
        let told = eight_at_once(&stores, |i, store| {
            let mine = asked(i);
            async move {
                let held = store
                    .take_locks("acme/infra", i as u64 + 1, &mine)
                    .await
                    .unwrap();
                (mine, held)
            }
        })
        .await;
        let locks = stores[0].locks("acme/infra").await.unwrap();
        let owners: BTreeMap<UnitPath, u64> =
            locks.iter().map(|l| (l.unit.clone(), l.pr)).collect();
        assert_eq!(
            owners.len(),
            locks.len(),
            "round {round}: a unit held twice"
        );
        assert_eq!(
            owners.keys().collect::<Vec<_>>(),
            names.iter().collect::<Vec<_>>(),
            "round {round}: every unit asked for is held"
        );
        for (unit, pr) in &owners {
            assert!(asked(*pr as usize - 1).contains(unit), "{unit:?} by #{pr}");
        }
        for (i, (mine, held)) in told.iter().enumerate() {
            let pr = i as u64 + 1;
            assert_eq!(
                held,
                &held_by_others(pr, mine, &owners),
                "round {round}: #{pr} is told exactly the units others hold"
            );
        }
        let mut released = 0;
        for pr in 1..=8 {
            released += stores[pr % 2]
                .release_locks("acme/infra", pr as u64)
                .await
                .unwrap();
        }
        assert_eq!(released, 55);
    }
}

// Not part of the contract: how replicas open one PostgreSQL database, and how
// `store::open` reads a URL.

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_opening_a_fresh_database_at_once_migrate_it_once() {
    let backend = Backend::postgres().await;
    let url = backend.url();
    let data = tempfile::tempdir().unwrap();
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let (url, data) = (url.clone(), data.path().to_path_buf());
            tokio::spawn(async move { cascade::store::open(Some(&url), &data).await })
        })
        .collect();
    for open in opens {
        let store = open.await.unwrap().unwrap();
        assert!(matches!(store, AnyStore::Postgres(_)));
    }
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count() as i64;
    assert_eq!(
        backend
            .number("SELECT count(*) FROM _sqlx_migrations WHERE success")
            .await,
        migrations
    );
    // And once more, as a restarted replica: nothing left to do.
    backend.open().await;
}

#[tokio::test]
async fn a_database_a_newer_cascade_migrated_is_refused_with_what_to_do() {
    let backend = Backend::postgres().await;
    backend.open().await;
    backend
        .execute("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'from a newer cascade', true, '\\x00'::bytea, 0)".into())
        .await;
    let data = tempfile::tempdir().unwrap();
    let Err(e) = cascade::store::open(Some(&backend.url()), data.path()).await else {
        panic!("opened a database migrated past this version");
    };
    let message = format!("{e:#}");
    assert!(
        message.contains("run that version on every replica"),
        "{message}"
    );
}

#[tokio::test]
async fn open_picks_the_backend_by_the_url_scheme() {
    let data = tempfile::tempdir().unwrap();
    let store = cascade::store::open(None, data.path()).await.unwrap();
    assert!(matches!(store, AnyStore::Sqlite(_)));
    assert!(store.single_replica(), "SQLite is one server's alone");
    assert!(
        data.path().join("cascade.db").is_file(),
        "no URL: a SQLite file in the data directory"
    );
    let file = data.path().join("elsewhere/other.db");
    let url = format!("sqlite://{}", file.display());
    assert!(matches!(
        cascade::store::open(Some(&url), data.path()).await.unwrap(),
        AnyStore::Sqlite(_)
    ));
    assert!(file.is_file());
    let postgres = pg_cluster::database().await;
    for scheme in ["postgres://", "postgresql://"] {
        let url = postgres.replacen("postgres://", scheme, 1);
        let store = cascade::store::open(Some(&url), data.path()).await.unwrap();
        assert!(matches!(store, AnyStore::Postgres(_)));
        assert!(!store.single_replica(), "replicas share PostgreSQL");
    }
}

#[tokio::test]
async fn a_refused_database_url_says_what_to_write_and_never_shows_its_password() {
    let data = tempfile::tempdir().unwrap();
    let cluster = pg_cluster::cluster();
    let refused = [
        "mysql://cascade:hunter2hunter2@db/cascade".to_string(),
        "postgres://cascade:hunter2hunter2@db:notaport/cascade".to_string(),
        // No such database on a server that is there.
        cluster
            .url("no_such_database")
            .replacen("postgres@", "postgres:hunter2hunter2@", 1),
        // No server at all.
        "postgres://cascade:hunter2hunter2@localhost/cascade?host=/nonexistent".to_string(),
    ];
    for url in refused {
        let Err(e) = cascade::store::open(Some(&url), data.path()).await else {
            panic!("{url} was accepted");
        };
        let message = format!("{e:#}");
        assert!(!message.contains("hunter2"), "{message}");
        assert!(
            message.contains("postgres://") || message.contains("PostgreSQL at"),
            "says what to write or where it tried: {message}"
        );
    }
}

/// GitLab merge requests are keyed `gitlab:<path_with_namespace>` (nested groups) with the
/// project id in `installation_id`: every table keeps them apart from GitHub's `owner/name`
/// with the same path, and the key says which forge a stored row belongs to.
async fn a_gitlab_repo_key_round_trips_beside_the_same_github_path(backend: Backend) {
    use cascade::forge::ForgeRef;
    let store = backend.open().await;
    let (gitlab, github) = ("gitlab:acme/platform/infra", "acme/platform");
    let record = |repo: &str, id: u64| PullRequestRecord {
        repo: repo.into(),
        number: 7,
        installation_id: id,
        head_sha: "h1".into(),
        base_sha: "b1".into(),
        state: PrState::Commented,
        plan_id: Some(PlanId::from_stored("3f9a2c1b7d4e".into())),
        comment_id: Some(4321),
        check_run_id: Some(u64::from(u32::MAX) + 5),
        updated_at: 1,
    };
    let (mr, pr) = (record(gitlab, 4242), record(github, 77));
    store.save_pull_request(&mr).await.unwrap();
    store.save_pull_request(&pr).await.unwrap();
    let stored = store.pull_request(gitlab, 7).await.unwrap().unwrap();
    assert_eq!(stored, mr);
    assert_eq!(
        ForgeRef::stored(&stored.repo, stored.installation_id),
        ForgeRef::GitLab { project_id: 4242 }
    );
    let stored = store.pull_request(github, 7).await.unwrap().unwrap();
    assert_eq!(
        ForgeRef::stored(&stored.repo, stored.installation_id),
        ForgeRef::GitHub { installation: 77 }
    );

    // Locks, waiting lists, comment parts and plans: one per forge's key.
    let unit = units(&["live/dev/vpc"]);
    assert!(store.take_locks(gitlab, 7, &unit).await.unwrap().is_empty());
    assert!(store.take_locks(github, 7, &unit).await.unwrap().is_empty());
    let held = store.take_locks(gitlab, 8, &unit).await.unwrap();
    assert_eq!(held.iter().map(|l| l.pr).collect::<Vec<_>>(), [7]);
    store.set_waiting(gitlab, 8, &[7]).await.unwrap();
    assert_eq!(store.waiting_for(gitlab, 7).await.unwrap(), [8]);
    assert!(store.waiting_for(github, 7).await.unwrap().is_empty());
    store.set_comment_parts(gitlab, 7, &[11, 12]).await.unwrap();
    assert_eq!(store.comment_parts(gitlab, 7).await.unwrap(), [11, 12]);
    assert_eq!(store.comment_parts(github, 7).await.unwrap(), NONE);
    let plan_key = PlanKey::from_stored(format!("{gitlab}#7"));
    store
        .save_plan(&plan("3f9a2c1b7d4e", plan_key.as_str(), 1))
        .await
        .unwrap();
    let current = store.current_plan(&plan_key).await.unwrap().unwrap();
    assert_eq!(current.repo, plan_key);
    assert_eq!(
        store
            .current_plan(&PlanKey::from_stored(format!("{github}#7")))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.release_locks(gitlab, 7).await.unwrap(), 1);
    assert_eq!(store.release_locks(github, 7).await.unwrap(), 1);
}
