//! The plan and apply rules, with a scripted executor (outcomes per unit) and
//! a real SQLite store: what is planned, what is applied, what is refused.

use cascade::config::Executor as Tool;
use cascade::engine::{ApplyError, Engine, PlanTarget};
use cascade::exec::{ExecError, Executor, UnitJob};
use cascade::plan::PlanId;
use cascade::store::{PlanStatus, SqliteStore, Store, SystemClock, UnitStatus};
use cascade::unit::UnitPath;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a unit's next plan returns.
#[derive(Clone)]
enum Plan {
    /// A plan creating `n` resources whose input is `value` (its fingerprint follows the value).
    Creates(u32, &'static str),
    Empty,
    Fails,
}

/// A scripted executor: per unit, a queue of plan results (the last repeats)
/// and whether applies fail. Counts every apply.
#[derive(Default)]
struct Scripted {
    plans: Mutex<BTreeMap<String, VecDeque<Plan>>>,
    failing_applies: Mutex<Vec<String>>,
    applies: Mutex<Vec<String>>,
    planned: Mutex<Vec<String>>,
}

impl Scripted {
    fn script(&self, unit: &str, plans: &[Plan]) {
        self.plans
            .lock()
            .unwrap()
            .insert(unit.into(), plans.iter().cloned().collect());
    }

    fn applied(&self) -> Vec<String> {
        self.applies.lock().unwrap().clone()
    }
}

fn show_json(plan: &Plan) -> Vec<u8> {
    let (n, value) = match plan {
        Plan::Creates(n, v) => (*n, *v),
        _ => (0, ""),
    };
    let changes: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "address": format!("terraform_data.r{i}"), "mode": "managed", "type": "terraform_data",
                "name": format!("r{i}"), "provider_name": "terraform.io/builtin/terraform",
                "change": {"actions": ["create"], "before": null, "after": {"input": value},
                           "after_unknown": {"id": true}, "before_sensitive": false, "after_sensitive": {}}
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"format_version": "1.2", "terraform_version": "1.11.4", "planned_values": {"root_module": {}}, "resource_changes": changes})).unwrap()
}

impl Executor for Scripted {
    async fn plan(&self, job: &UnitJob, _cancel: &CancellationToken) -> Result<Vec<u8>, ExecError> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.planned.lock().unwrap().push(job.unit.to_string());
        let next = {
            let mut plans = self.plans.lock().unwrap();
            let queue = plans.entry(job.unit.to_string()).or_default();
            if queue.len() > 1 {
                queue.pop_front().unwrap()
            } else {
                queue.front().cloned().unwrap_or(Plan::Empty)
            }
        };
        match next {
            Plan::Fails => Err(ExecError::Failed {
                command: "terraform plan".into(),
                code: 1,
                excerpt: "Error: boom".into(),
            }),
            plan => Ok(show_json(&plan)),
        }
    }

    async fn apply(&self, job: &UnitJob, _shutdown: &CancellationToken) -> Result<(), ExecError> {
        self.applies.lock().unwrap().push(job.unit.to_string());
        if self
            .failing_applies
            .lock()
            .unwrap()
            .contains(&job.unit.to_string())
        {
            return Err(ExecError::Failed {
                command: "terraform apply".into(),
                code: 1,
                excerpt: "Error: apply boom".into(),
            });
        }
        Ok(())
    }
}

struct Fixture {
    engine: Engine<Scripted, SqliteStore>,
    _dir: tempfile::TempDir,
}

async fn fixture(exec: Scripted) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("cascade.db"))
        .await
        .unwrap();
    let engine = Engine {
        executor: Arc::new(exec),
        store: Arc::new(store),
        clock: Arc::new(SystemClock),
        data_dir: dir.path().to_path_buf(),
        parallelism: 2,
        timeout: Duration::from_secs(60),
        shutdown: CancellationToken::new(),
    };
    Fixture { engine, _dir: dir }
}

fn p(s: &str) -> UnitPath {
    UnitPath::new(s)
}

/// vpc <- db <- app, and an unrelated dns.
fn targets() -> Vec<PlanTarget> {
    let t = |path: &str, wave: usize, deps: &[&str]| PlanTarget {
        path: p(path),
        wave,
        deps: deps.iter().map(|d| p(d)).collect(),
        destroy: false,
        tool: Tool::Terraform,
        dir: PathBuf::from("/nowhere").join(path),
        init_args: vec![],
    };
    vec![
        t("dns", 1, &[]),
        t("vpc", 1, &[]),
        t("db", 2, &["vpc"]),
        t("app", 3, &["db"]),
    ]
}

const REPO: &str = "acme/infra";

async fn plan(f: &Fixture, head: &str) -> cascade::engine::PlanOutcome {
    f.engine
        .plan(
            REPO,
            head,
            "base",
            targets(),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap()
}

async fn apply(
    f: &Fixture,
    id: &PlanId,
    head: &str,
) -> Result<cascade::engine::ApplyOutcome, ApplyError> {
    let dir_for = |u: &cascade::store::PlannedUnit| PathBuf::from("/nowhere").join(u.path.as_str());
    f.engine
        .apply(REPO, id, head, &dir_for, |_| {})
        .await
        .unwrap()
}

fn statuses(outcome: &cascade::engine::ApplyOutcome) -> Vec<(String, UnitStatus)> {
    outcome
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.status))
        .collect()
}

#[tokio::test]
async fn a_plan_with_no_changes_has_the_fixed_id() {
    let f = fixture(Scripted::default()).await;
    let outcome = plan(&f, "h1").await;
    assert_eq!(outcome.plan.id.as_str(), PlanId::NO_CHANGES);
    assert!(!outcome.failed);
}

#[tokio::test]
async fn a_failed_plan_skips_dependents_and_plans_the_rest() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Fails]);
    exec.script("dns", &[Plan::Creates(1, "a")]);
    let f = fixture(exec).await;
    let outcome = plan(&f, "h1").await;
    assert!(outcome.failed);
    let status: BTreeMap<String, UnitStatus> = outcome
        .plan
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.status))
        .collect();
    assert_eq!(status["vpc"], UnitStatus::Failed);
    assert_eq!(status["db"], UnitStatus::Skipped);
    assert_eq!(status["app"], UnitStatus::Skipped);
    assert_eq!(status["dns"], UnitStatus::Planned);
    // A plan with failures is not approvable.
    let refused = apply(&f, &outcome.plan.id, "h1").await.unwrap_err();
    assert!(
        matches!(refused, ApplyError::Incomplete { .. }),
        "{refused}"
    );
}

#[tokio::test]
async fn apply_applies_exactly_the_approved_plan_and_consumes_it() {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app"] {
        exec.script(unit, &[Plan::Creates(2, "v1")]);
    }
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    assert_ne!(planned.plan.id.as_str(), PlanId::NO_CHANGES);
    let outcome = apply(&f, &planned.plan.id, "h1").await.unwrap();
    assert!(outcome.complete());
    assert_eq!(
        statuses(&outcome),
        [
            ("dns".into(), UnitStatus::Unchanged),
            ("vpc".into(), UnitStatus::Applied),
            ("db".into(), UnitStatus::Applied),
            ("app".into(), UnitStatus::Applied)
        ]
    );
    let mut applied = f.engine.executor.applied();
    applied.sort();
    assert_eq!(applied, ["app", "db", "vpc"]);
    let refused = apply(&f, &planned.plan.id, "h1").await.unwrap_err();
    assert!(matches!(refused, ApplyError::Consumed { .. }), "{refused}");
}

#[tokio::test]
async fn a_plan_that_changed_since_approval_is_not_applied_nor_its_dependents() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "v1")]);
    // db: planned v1, but after vpc's apply its fresh plan is different.
    exec.script("db", &[Plan::Creates(1, "v1"), Plan::Creates(1, "v2")]);
    exec.script("app", &[Plan::Creates(1, "v1")]);
    exec.script("dns", &[Plan::Creates(1, "d")]);
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let outcome = apply(&f, &planned.plan.id, "h1").await.unwrap();
    assert_eq!(
        statuses(&outcome),
        [
            ("dns".into(), UnitStatus::Applied),
            ("vpc".into(), UnitStatus::Applied),
            ("db".into(), UnitStatus::ChangedSinceApproval),
            ("app".into(), UnitStatus::Skipped)
        ]
    );
    // The new plan covers what is left, under a new id, and replaces the old one.
    let new_plan = outcome.new_plan.expect("a new plan");
    assert_ne!(new_plan.id, planned.plan.id);
    let left: Vec<&str> = new_plan.units.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(left, ["db", "app"]);
    assert_eq!(
        new_plan.units[0].deps,
        Vec::<UnitPath>::new(),
        "vpc is applied: no longer a dependency"
    );
    let refused = apply(&f, &planned.plan.id, "h1").await.unwrap_err();
    match refused {
        ApplyError::Superseded { current, .. } => assert_eq!(current, Some(new_plan.id.clone())),
        other => panic!("{other}"),
    }
    // Approving the new id applies the rest and nothing twice.
    let outcome = apply(&f, &new_plan.id, "h1").await.unwrap();
    assert!(outcome.complete(), "{:?}", statuses(&outcome));
    let mut applied = f.engine.executor.applied();
    applied.sort();
    assert_eq!(applied, ["app", "db", "dns", "vpc"]);
}

#[tokio::test]
async fn a_failed_apply_skips_dependents_while_unrelated_units_apply_and_a_retry_finishes() {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app", "dns"] {
        exec.script(unit, &[Plan::Creates(1, "v1")]);
    }
    exec.failing_applies.lock().unwrap().push("vpc".into());
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let outcome = apply(&f, &planned.plan.id, "h1").await.unwrap();
    assert_eq!(
        statuses(&outcome),
        [
            ("dns".into(), UnitStatus::Applied),
            ("vpc".into(), UnitStatus::Failed),
            ("db".into(), UnitStatus::Skipped),
            ("app".into(), UnitStatus::Skipped)
        ]
    );
    assert!(outcome.new_plan.is_none());
    // The approval is consumed only by success: the same id may be retried.
    f.engine.executor.failing_applies.lock().unwrap().clear();
    // dns was applied: its fresh plan is now empty, but it is not planned or applied again.
    f.engine.executor.script("dns", &[Plan::Empty]);
    let outcome = apply(&f, &planned.plan.id, "h1").await.unwrap();
    assert!(outcome.complete(), "{:?}", statuses(&outcome));
    let applied = f.engine.executor.applied();
    assert_eq!(applied.iter().filter(|u| *u == "dns").count(), 1);
}

#[tokio::test]
async fn unknown_and_stale_ids_are_refused_naming_the_current_plan() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "v1")]);
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let refused = apply(&f, &PlanId::parse("abcdefabcdef").unwrap(), "h1")
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains(planned.plan.id.as_str()),
        "{refused}"
    );
    let refused = apply(&f, &planned.plan.id, "h2").await.unwrap_err();
    assert!(matches!(refused, ApplyError::Stale { .. }), "{refused}");
    // A newer plan supersedes the old one.
    f.engine.executor.script("vpc", &[Plan::Creates(1, "v2")]);
    let newer = plan(&f, "h1").await;
    assert_ne!(newer.plan.id, planned.plan.id);
    let refused = apply(&f, &planned.plan.id, "h1").await.unwrap_err();
    assert!(
        refused.to_string().contains(newer.plan.id.as_str()),
        "{refused}"
    );
    let current = f.engine.store.current_plan(REPO).await.unwrap().unwrap();
    assert_eq!(
        (current.id, current.status),
        (newer.plan.id, PlanStatus::Current)
    );
}

#[tokio::test]
async fn an_interrupted_plan_resumes_without_planning_finished_units_again() {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app", "dns"] {
        exec.script(unit, &[Plan::Creates(1, "v1")]);
    }
    let f = fixture(exec).await;
    // Cancel after the first unit finishes: the rest never start.
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let first = f
        .engine
        .plan(REPO, "h1", "base", targets(), cancel, move |e| {
            if matches!(e, cascade::walk::WalkEvent::Finished(..)) {
                stop.cancel();
            }
        })
        .await
        .unwrap();
    assert!(first.failed, "an interrupted plan is incomplete");
    let planned_once: Vec<String> = first
        .plan
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Planned)
        .map(|u| u.path.to_string())
        .collect();
    assert!(
        !planned_once.is_empty() && planned_once.len() < 4,
        "{planned_once:?}"
    );
    // The same request again resumes the run: finished units are not planned twice.
    let second = plan(&f, "h1").await;
    assert!(!second.failed);
    let calls = f.engine.executor.planned.lock().unwrap().clone();
    for unit in ["vpc", "db", "app", "dns"] {
        assert_eq!(
            calls.iter().filter(|u| *u == unit).count(),
            1,
            "{unit} planned once: {calls:?}"
        );
    }
    assert_eq!(second.plan.run_id, first.plan.run_id);
}
