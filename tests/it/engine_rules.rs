//! The plan and apply rules, with a scripted executor (outcomes per unit) and
//! a real SQLite store: what is planned, what is applied, what is refused.

use cascade::clock::{Clock, SystemClock};
use cascade::engine::{ApplyError, Engine, PlanTarget};
use cascade::exec::{ExecError, Executor, PlanJson, Resumed, UnitJob};
use cascade::plan::PlanId;
use cascade::store::{ApplyClaim, PlanKey, PlanStatus, RunStore, SqliteStore, UnitStatus};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a unit's next plan returns.
#[derive(Clone)]
pub(crate) enum Plan {
    /// A plan creating `n` resources whose input is `value` (its fingerprint follows the value).
    Creates(u32, &'static str),
    Empty,
    Fails,
}

/// What re-attaching to a unit's earlier apply finds.
#[derive(Clone, Copy, Debug)]
enum Resume {
    Succeeded,
    Failed,
    StillRunning,
    Unknown,
}

/// A scripted executor: per unit, a queue of plan results (the last repeats),
/// whether applies fail or never end, and what re-attaching finds. Counts
/// every plan and apply.
#[derive(Default)]
pub(crate) struct Scripted {
    plans: Mutex<BTreeMap<String, VecDeque<Plan>>>,
    pub(crate) failing_applies: Mutex<Vec<String>>,
    /// Applies that never end (the process "dies" while they run).
    hanging_applies: Mutex<Vec<String>>,
    resumes: Mutex<BTreeMap<String, Resume>>,
    applies: Mutex<Vec<String>>,
    pub(crate) planned: Mutex<Vec<String>>,
    /// Failure excerpts of plans that fail.
    excerpt: Mutex<String>,
    /// What the children's environment would hold as secrets (`TF_VAR_*` values).
    child_secrets: Mutex<Vec<String>>,
}

impl Scripted {
    pub(crate) fn script(&self, unit: &str, plans: &[Plan]) {
        self.plans
            .lock()
            .unwrap()
            .insert(unit.into(), plans.iter().cloned().collect());
    }

    fn on_resume(&self, unit: &str, found: Resume) {
        self.resumes.lock().unwrap().insert(unit.into(), found);
    }

    pub(crate) fn applied(&self) -> Vec<String> {
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
    fn redactor(&self) -> cascade::redact::Redactor {
        let secrets = self.child_secrets.lock().unwrap();
        cascade::redact::Redactor::with_secrets(secrets.iter().map(String::as_str))
    }

    async fn plan(
        &self,
        job: &UnitJob,
        _cancel: &CancellationToken,
    ) -> Result<PlanJson, ExecError> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.planned.lock().unwrap().push(job.unit.to_string());
        // As terraform does: the saved plan, where the job says.
        std::fs::create_dir_all(job.plan_file.parent().unwrap()).unwrap();
        std::fs::write(&job.plan_file, b"saved plan").unwrap();
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
                excerpt: match self.excerpt.lock().unwrap().as_str() {
                    "" => "Error: boom".into(),
                    text => text.to_string(),
                },
            }),
            plan => Ok(show_json(&plan).into()),
        }
    }

    async fn apply(&self, job: &UnitJob, _shutdown: &CancellationToken) -> Result<(), ExecError> {
        self.applies.lock().unwrap().push(job.unit.to_string());
        if self
            .hanging_applies
            .lock()
            .unwrap()
            .contains(&job.unit.to_string())
        {
            std::future::pending::<()>().await;
        }
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

    async fn resume_apply(
        &self,
        job: &UnitJob,
        _stop: &CancellationToken,
    ) -> Result<Resumed, ExecError> {
        let found = self.resumes.lock().unwrap().get(job.unit.as_str()).copied();
        Ok(match found {
            None => Resumed::Nothing,
            Some(Resume::Succeeded) => Resumed::Finished(Ok(())),
            Some(Resume::Failed) => Resumed::Finished(Err(ExecError::Failed {
                command: "terraform apply".into(),
                code: 1,
                excerpt: "Error: half applied".into(),
            })),
            Some(Resume::StillRunning) => Resumed::Running,
            Some(Resume::Unknown) => Resumed::Unknown,
        })
    }
}

pub(crate) struct Fixture {
    pub(crate) engine: Engine<Scripted, SqliteStore>,
    _dir: tempfile::TempDir,
}

pub(crate) async fn fixture(exec: Scripted) -> Fixture {
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
        init_timeout: Duration::from_secs(60),
        shutdown: CancellationToken::new(),
    };
    Fixture { engine, _dir: dir }
}

fn p(s: &str) -> UnitPath {
    UnitPath::new(s)
}

/// vpc <- db <- app, and an unrelated dns.
pub(crate) fn targets() -> Vec<PlanTarget> {
    let t = |path: &str, wave: usize, deps: &[&str]| PlanTarget {
        path: p(path),
        wave,
        deps: deps.iter().map(|d| p(d)).collect(),
        destroy: false,
        tool: Tool::Terraform,
        dir: PathBuf::from("/nowhere").join(path),
        root: PathBuf::from("/nowhere"),
        sources: vec![],
        init_args: vec![],
        stack: None,
        refused: None,
    };
    vec![
        t("dns", 1, &[]),
        t("vpc", 1, &[]),
        t("db", 2, &["vpc"]),
        t("app", 3, &["db"]),
    ]
}

pub(crate) const REPO: &str = "acme/infra";

pub(crate) async fn plan(f: &Fixture, head: &str) -> cascade::engine::PlanOutcome {
    f.engine
        .plan(
            &PlanKey::from_stored(REPO),
            head,
            "base",
            targets(),
            cascade::engine::RunRules::default(),
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
    let dir_for = |u: &cascade::store::PlannedUnit| {
        cascade::engine::UnitDir::of(Path::new("/nowhere"), Path::new("/nowhere"), &u.path)
    };
    f.engine
        .apply(
            &PlanKey::from_stored(REPO),
            id,
            head,
            &dir_for,
            cascade::engine::RunRules::default(),
            |_| {},
        )
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
    let detail = |unit: &str| {
        let u = outcome.plan.units.iter().find(|u| u.path.as_str() == unit);
        u.unwrap().detail.clone()
    };
    assert_eq!(detail("db"), "vpc failed to plan");
    assert_eq!(
        detail("app"),
        "vpc failed to plan",
        "named by the unit that failed"
    );
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
    let details: Vec<&str> = outcome.units.iter().map(|u| u.detail.as_str()).collect();
    assert_eq!(details[3], "db's plan changed since approval");
    assert!(
        details[2].starts_with("approved ") && !details[2].contains("plan changed"),
        "the reason does not repeat what the status says: {}",
        details[2]
    );
    // The new plan covers what is left, under a new id, and replaces the old one.
    let new_plan = outcome.new_plan.expect("a new plan");
    assert_ne!(new_plan.id, planned.plan.id);
    let left: Vec<&str> = new_plan.units.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(left, ["db", "app"]);
    assert_eq!(
        rendered(&new_plan, "db"),
        "  # terraform_data.r0 will be created\n  + resource \"terraform_data\" \"r0\" {\n      + id    = (known after apply)\n      + input = \"v2\"\n    }",
        "the new plan shows the fresh plan, as the apply re-planned it"
    );
    assert!(rendered(&new_plan, "app").contains(r#"+ input = "v1""#));
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
async fn a_plan_that_comes_back_empty_after_an_approved_change_is_a_change_too() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "v1")]);
    // db: approved to create something; at apply time someone else has made it.
    exec.script("db", &[Plan::Creates(1, "v1"), Plan::Empty]);
    exec.script("app", &[Plan::Creates(1, "v1")]);
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let outcome = apply(&f, &planned.plan.id, "h1").await.unwrap();
    assert_eq!(
        statuses(&outcome),
        [
            ("dns".into(), UnitStatus::Unchanged),
            ("vpc".into(), UnitStatus::Applied),
            ("db".into(), UnitStatus::ChangedSinceApproval),
            ("app".into(), UnitStatus::Skipped)
        ]
    );
    assert!(
        outcome.units[2].detail.contains("now it changes nothing"),
        "{}",
        outcome.units[2].detail
    );
    assert_eq!(outcome.units[3].detail, "db's plan changed since approval");
    assert!(!outcome.complete());
    let mut applied = f.engine.executor.applied();
    applied.sort();
    assert_eq!(applied, ["vpc"], "neither db nor its dependent was applied");
    // The new plan shows db changing nothing and app still to review, under a new id.
    let new_plan = outcome.new_plan.expect("a new plan");
    assert_ne!(new_plan.id.as_str(), PlanId::NO_CHANGES);
    let left: Vec<(&str, bool)> = new_plan
        .units
        .iter()
        .map(|u| (u.path.as_str(), u.summary.as_ref().unwrap().is_empty()))
        .collect();
    assert_eq!(left, [("db", true), ("app", false)]);
}

#[tokio::test]
async fn saved_plans_are_deleted_once_the_plan_is_consumed_or_superseded() {
    let exec = Scripted::default();
    for unit in ["vpc", "db", "app"] {
        exec.script(unit, &[Plan::Creates(1, "v1")]);
    }
    let f = fixture(exec).await;
    let saved = |f: &Fixture| -> usize {
        walkdir(f._dir.path())
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "tfplan"))
            .count()
    };
    let first = plan(&f, "h1").await;
    assert_eq!(saved(&f), 4);
    let second = plan(&f, "h2").await;
    assert_eq!(saved(&f), 8);
    // h1's plan was superseded: its files go, h2's stay.
    f.engine
        .discard_plan_files(&PlanKey::from_stored(REPO), &first.plan.id)
        .await
        .unwrap();
    assert_eq!(saved(&f), 4);
    let outcome = apply(&f, &second.plan.id, "h2").await.unwrap();
    assert!(outcome.complete());
    assert_eq!(saved(&f), 8, "the apply planned each unit afresh");
    // Consumed: the plan run's and the apply run's files go.
    f.engine
        .discard_plan_files(&PlanKey::from_stored(REPO), &second.plan.id)
        .await
        .unwrap();
    assert_eq!(saved(&f), 0);
    // Twice, or for a plan that never was: nothing to do.
    f.engine
        .discard_plan_files(&PlanKey::from_stored(REPO), &second.plan.id)
        .await
        .unwrap();
    f.engine
        .discard_plan_files(
            &PlanKey::from_stored(REPO),
            &PlanId::from_stored("0123456789ab".into()),
        )
        .await
        .unwrap();
}

fn walkdir(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
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
    let current = f
        .engine
        .store
        .current_plan(&PlanKey::from_stored(REPO))
        .await
        .unwrap()
        .unwrap();
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
    let first = interrupted_plan(&f, cascade::engine::RunRules::default()).await;
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
    for unit in ["vpc", "db", "app", "dns"] {
        assert!(
            rendered(&second.plan, unit).contains(r#"+ input = "v1""#),
            "{unit}'s rendering survives the resume"
        );
    }
}

/// Plans [`targets`] at `h1` under `rules`, cancelled as soon as the first unit finishes:
/// the rest never start and the run stays open for the same request to resume.
pub(crate) async fn interrupted_plan(
    f: &Fixture,
    rules: cascade::engine::RunRules,
) -> cascade::engine::PlanOutcome {
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    f.engine
        .plan(
            &PlanKey::from_stored(REPO),
            "h1",
            "base",
            targets(),
            rules,
            cancel,
            move |e| {
                if matches!(e, cascade::walk::WalkEvent::Finished(..)) {
                    stop.cancel();
                }
            },
        )
        .await
        .unwrap()
}

/// A unit's rendered plan text in `plan` (panics when it has none).
fn rendered(plan: &cascade::store::PlanRecord, unit: &str) -> String {
    let unit = plan.units.iter().find(|u| u.path.as_str() == unit).unwrap();
    unit.rendered
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no rendering", unit.path))
        .text()
        .to_string()
}

#[tokio::test]
async fn each_unit_is_rendered_with_the_executors_redaction_and_stored_with_its_result() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(2, "vpc-input-from-a-tf-var")]);
    exec.script("dns", &[Plan::Creates(1, "t3.2xlarge")]);
    exec.child_secrets
        .lock()
        .unwrap()
        .push("vpc-input-from-a-tf-var".into());
    let f = fixture(exec).await;
    let outcome = plan(&f, "h1").await;
    let vpc = rendered(&outcome.plan, "vpc");
    assert!(!vpc.contains("vpc-input-from-a-tf-var"), "{vpc}");
    assert_eq!(vpc.matches(r#"+ input = "[redacted]""#).count(), 2, "{vpc}");
    assert!(rendered(&outcome.plan, "dns").contains(r#"+ input = "t3.2xlarge""#));
    assert_eq!(
        rendered(&outcome.plan, "db"),
        "",
        "an empty plan draws nothing"
    );
    // The same text is in the unit results (a resumed run) and the stored plan (a restart).
    let stored = f
        .engine
        .store
        .unit_records(&outcome.plan.run_id)
        .await
        .unwrap();
    for record in &stored {
        let unit = outcome
            .plan
            .units
            .iter()
            .find(|u| u.path == record.unit)
            .unwrap();
        assert_eq!(record.rendered, unit.rendered, "{}", record.unit);
    }
    let current = f
        .engine
        .store
        .current_plan(&PlanKey::from_stored(REPO))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(current, outcome.plan);
}

/// Plans vpc <- db <- app (and dns) to apply, then "kills" an apply while db's
/// terraform runs: its future is dropped with db recorded `applying`.
async fn apply_killed_while_db_applies(f: &Fixture) -> PlanId {
    for unit in ["vpc", "db", "app", "dns"] {
        f.engine.executor.script(unit, &[Plan::Creates(1, "v1")]);
    }
    let planned = plan(f, "h1").await;
    f.engine
        .executor
        .hanging_applies
        .lock()
        .unwrap()
        .push("db".into());
    let killed =
        tokio::time::timeout(Duration::from_millis(500), apply(f, &planned.plan.id, "h1")).await;
    assert!(killed.is_err(), "the apply was still running");
    f.engine.executor.hanging_applies.lock().unwrap().clear();
    planned.plan.id
}

async fn db_status(f: &Fixture) -> UnitStatus {
    let plan = f
        .engine
        .store
        .current_plan(&PlanKey::from_stored(REPO))
        .await
        .unwrap()
        .unwrap();
    let run = f
        .engine
        .store
        .latest_run(
            &PlanKey::from_stored(REPO),
            cascade::store::RunKind::Apply,
            plan.id.as_str(),
        )
        .await
        .unwrap()
        .unwrap();
    f.engine
        .store
        .unit_records(&run.id)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.unit.as_str() == "db")
        .unwrap()
        .status
}

fn count(list: &[String], unit: &str) -> usize {
    list.iter().filter(|u| *u == unit).count()
}

#[tokio::test]
async fn a_unit_left_applying_is_re_attached_before_anything_else_and_never_applied_twice() {
    let f = fixture(Scripted::default()).await;
    let id = apply_killed_while_db_applies(&f).await;
    assert_eq!(db_status(&f).await, UnitStatus::Applying);
    let plans_before = count(&f.engine.executor.planned.lock().unwrap(), "db");
    // The terraform the dead process started finished applying db.
    f.engine.executor.on_resume("db", Resume::Succeeded);
    let outcome = apply(&f, &id, "h1").await.unwrap();
    assert!(outcome.complete(), "{:?}", statuses(&outcome));
    let db = outcome
        .units
        .iter()
        .find(|u| u.path.as_str() == "db")
        .unwrap();
    assert_eq!(db.status, UnitStatus::Applied);
    assert!(
        db.detail.contains("earlier cascade process"),
        "{}",
        db.detail
    );
    // Re-attached, not re-planned over the running apply's plan file, not applied again.
    assert_eq!(
        count(&f.engine.executor.planned.lock().unwrap(), "db"),
        plans_before
    );
    let applies = f.engine.executor.applied();
    assert_eq!(count(&applies, "db"), 1, "{applies:?}");
    assert_eq!(count(&applies, "app"), 1, "{applies:?}");
}

#[tokio::test]
async fn a_unit_whose_apply_still_runs_is_left_alone_and_one_that_failed_fails() {
    let f = fixture(Scripted::default()).await;
    let id = apply_killed_while_db_applies(&f).await;
    let plans_before = count(&f.engine.executor.planned.lock().unwrap(), "db");
    f.engine.executor.on_resume("db", Resume::StillRunning);
    let outcome = apply(&f, &id, "h1").await.unwrap();
    let s = statuses(&outcome);
    assert!(s.contains(&("db".into(), UnitStatus::Applying)), "{s:?}");
    assert!(s.contains(&("app".into(), UnitStatus::Skipped)), "{s:?}");
    assert_eq!(
        count(&f.engine.executor.planned.lock().unwrap(), "db"),
        plans_before,
        "never re-planned while its apply may run"
    );
    // It ended in failure: recorded failed, its dependents skipped, nothing re-applied.
    f.engine.executor.on_resume("db", Resume::Failed);
    let outcome = apply(&f, &id, "h1").await.unwrap();
    let s = statuses(&outcome);
    assert!(s.contains(&("db".into(), UnitStatus::Failed)), "{s:?}");
    assert!(s.contains(&("app".into(), UnitStatus::Skipped)), "{s:?}");
    assert_eq!(count(&f.engine.executor.applied(), "db"), 1);
}

#[tokio::test]
async fn an_apply_whose_end_is_unknown_is_judged_by_a_fresh_plan() {
    let f = fixture(Scripted::default()).await;
    let id = apply_killed_while_db_applies(&f).await;
    f.engine.executor.on_resume("db", Resume::Unknown);
    // It did apply before it was killed: its fresh plan is empty.
    f.engine.executor.script("db", &[Plan::Empty]);
    let outcome = apply(&f, &id, "h1").await.unwrap();
    assert!(outcome.complete(), "{:?}", statuses(&outcome));
    assert_eq!(count(&f.engine.executor.applied(), "db"), 1);
    // cascade's own interrupted apply explains the empty plan: not a change since approval.
    let db = outcome.units.iter().find(|u| u.path.as_str() == "db");
    assert_eq!(db.unwrap().status, UnitStatus::Applied);
}

#[tokio::test]
async fn recovery_at_start_records_finished_applies_without_waiting_for_running_ones() {
    let f = fixture(Scripted::default()).await;
    let id = apply_killed_while_db_applies(&f).await;
    f.engine.executor.on_resume("db", Resume::StillRunning);
    match f
        .engine
        .recover_apply(&PlanKey::from_stored(REPO), &id)
        .await
        .unwrap()
    {
        cascade::engine::ApplyRecovery::Recovered { running } => {
            assert_eq!(running, [p("db")])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(db_status(&f).await, UnitStatus::Applying);
    f.engine.executor.on_resume("db", Resume::Succeeded);
    let found = f
        .engine
        .recover_apply(&PlanKey::from_stored(REPO), &id)
        .await
        .unwrap();
    assert!(
        matches!(found, cascade::engine::ApplyRecovery::Recovered { ref running } if running.is_empty()),
        "{found:?}"
    );
    assert_eq!(db_status(&f).await, UnitStatus::Applied);
    // Recovery released its claim: the apply goes on, and db is not applied again.
    let outcome = apply(&f, &id, "h1").await.unwrap();
    assert!(outcome.complete(), "{:?}", statuses(&outcome));
    assert_eq!(count(&f.engine.executor.applied(), "db"), 1);
    // cascade's own interrupted apply explains the empty plan: not a change since approval.
    let db = outcome.units.iter().find(|u| u.path.as_str() == "db");
    assert_eq!(db.unwrap().status, UnitStatus::Applied);
}

#[tokio::test]
async fn one_plan_id_is_applied_by_one_apply_at_a_time() {
    let f = fixture(Scripted::default()).await;
    for unit in ["vpc", "db", "app", "dns"] {
        f.engine.executor.script(unit, &[Plan::Creates(1, "v1")]);
    }
    let planned = plan(&f, "h1").await;
    let id = planned.plan.id.clone();
    f.engine
        .executor
        .hanging_applies
        .lock()
        .unwrap()
        .push("vpc".into());
    let first = tokio::time::timeout(Duration::from_millis(800), apply(&f, &id, "h1"));
    let second = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        apply(&f, &id, "h1").await.unwrap_err()
    };
    let (first, refused) = tokio::join!(first, second);
    // The hanging apply never returns by itself: it was still running when refused.
    assert!(first.is_err());
    match &refused {
        ApplyError::Busy { pid, host, .. } => {
            assert_eq!(*pid, std::process::id());
            assert_eq!(host, &cascade::engine::this_host());
        }
        other => panic!("{other}"),
    }
    assert!(
        refused.to_string().contains(&format!(
            "is being applied by pid {} on",
            std::process::id()
        )),
        "{refused}"
    );
}

#[tokio::test]
async fn a_dead_owners_claim_is_taken_over_and_a_live_ones_is_not() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "v1")]);
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let id = planned.plan.id.clone();
    let now = SystemClock.now();
    let claim = |pid: u32, host: &str, heartbeat_at: i64| ApplyClaim {
        repo: PlanKey::from_stored(REPO),
        plan_id: id.clone(),
        owner: format!("owner-{pid}-{host}-{heartbeat_at}"),
        pid,
        host: host.into(),
        heartbeat_at,
    };
    // A live process on another host, heartbeating: refused, naming it.
    let live = claim(4242, "build-7", now);
    assert!(
        f.engine
            .store
            .insert_apply_claim(&live)
            .await
            .unwrap()
            .is_none()
    );
    let refused = apply(&f, &id, "h1").await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("is being applied by pid 4242 on build-7; wait for it"),
        "{refused}"
    );
    // The same owner, silent for longer than the lease: taken over.
    let stale = claim(4242, "build-7", now - cascade::engine::LEASE_SECS - 5);
    f.engine
        .store
        .release_apply_claim(&PlanKey::from_stored(REPO), &id, &live.owner)
        .await
        .unwrap();
    f.engine.store.insert_apply_claim(&stale).await.unwrap();
    assert!(apply(&f, &id, "h1").await.unwrap().complete());
    assert!(
        f.engine
            .store
            .apply_claim(&PlanKey::from_stored(REPO), &id)
            .await
            .unwrap()
            .is_none()
    );
    // On this host, a process that is gone: taken over at once.
    let gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let dead = claim(gone_pid, &cascade::engine::this_host(), now);
    assert!(!cascade::engine::owner_alive(&dead, now));
    // And one still running on this host is alive.
    let me = claim(1, &cascade::engine::this_host(), now);
    assert!(cascade::engine::owner_alive(&me, now));
}

#[tokio::test]
async fn a_failure_stored_for_a_unit_is_redacted() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Fails]);
    cascade::redact::register_secret("engine-rules-webhook-secret");
    *exec.excerpt.lock().unwrap() = "Error: dial postgres://app:db-pass-4711@db:5432 with engine-rules-webhook-secret\n-----BEGIN RSA PRIVATE KEY-----\nMIIEkeymaterial\n-----END RSA PRIVATE KEY-----".into();
    let f = fixture(exec).await;
    let outcome = plan(&f, "h1").await;
    let run = outcome.plan.run_id.clone();
    let stored = f.engine.store.unit_records(&run).await.unwrap();
    let view = cascade::comment::plan_view(&outcome.plan, &[]);
    let texts = [
        stored
            .iter()
            .find(|r| r.unit.as_str() == "vpc")
            .unwrap()
            .detail
            .clone(),
        outcome
            .plan
            .units
            .iter()
            .find(|u| u.path.as_str() == "vpc")
            .unwrap()
            .detail
            .clone(),
        serde_json::to_string(&view).unwrap(),
    ];
    for text in texts {
        for secret in ["db-pass-4711", "engine-rules-webhook-secret", "keymaterial"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("postgres://[redacted]@db:5432"), "{text}");
    }
}

/// A unit whose path holds a `..` (between `/` or backslashes), and one discovery
/// refused: recorded failed with what to rename, and nothing runs for them.
#[tokio::test]
async fn a_unit_whose_path_leaves_its_directory_is_refused_and_never_run() {
    let exec = Scripted::default();
    exec.script("dns", &[Plan::Creates(1, "a")]);
    let f = fixture(exec).await;
    let mut targets = targets();
    let mut odd = |path: &str, refused: Option<&str>| {
        let mut t = targets[0].clone();
        t.path = p(path);
        t.dir = PathBuf::from("/nowhere").join(path);
        t.refused = refused.map(str::to_string);
        targets.push(t);
    };
    odd("live/x/../../../pr-2/live/victim", None);
    odd("live/x\\..\\..\\..\\pr-2\\live\\victim", None);
    odd("live/./vpc", None);
    odd("global/dns", Some("two units share this path; rename one"));
    let outcome = f
        .engine
        .plan(
            &PlanKey::from_stored(REPO),
            "h1",
            "base",
            targets,
            cascade::engine::RunRules::default(),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert!(outcome.failed);
    let unit = |path: &str| {
        let u = outcome.plan.units.iter().find(|u| u.path.as_str() == path);
        u.unwrap().clone()
    };
    for path in [
        "live/x/../../../pr-2/live/victim",
        "live/x\\..\\..\\..\\pr-2\\live\\victim",
        "live/./vpc",
    ] {
        let u = unit(path);
        assert_eq!(u.status, UnitStatus::Failed, "{path}");
        assert!(u.detail.contains("rename the directory"), "{}", u.detail);
    }
    assert!(unit("live/./vpc").detail.contains("a `.` part"));
    assert_eq!(unit("global/dns").status, UnitStatus::Failed);
    assert_eq!(
        unit("global/dns").detail,
        "two units share this path; rename one"
    );
    assert_eq!(unit("dns").status, UnitStatus::Planned);
    let mut planned = f.engine.executor.planned.lock().unwrap().clone();
    planned.sort();
    assert_eq!(planned, ["app", "db", "dns", "vpc"], "nothing ran for them");
}

/// A plan stored with a unit whose path climbs out (an older cascade turned
/// backslashes into `/`) is not applied: the unit is refused before its re-plan.
#[tokio::test]
async fn a_stored_unit_whose_path_leaves_its_directory_is_never_applied() {
    let exec = Scripted::default();
    exec.script("vpc", &[Plan::Creates(1, "a")]);
    let f = fixture(exec).await;
    let planned = plan(&f, "h1").await;
    let mut stored = planned.plan.clone();
    for u in &mut stored.units {
        if u.path.as_str() == "vpc" {
            u.path = p("live/x/../../../pr-2/live/victim");
        }
    }
    stored.id = PlanId::from_stored("0123456789ab".into());
    f.engine.store.save_plan(&stored).await.unwrap();
    let outcome = apply(&f, &stored.id, "h1").await.unwrap();
    let victim = outcome
        .units
        .iter()
        .find(|u| u.path.as_str() == "live/x/../../../pr-2/live/victim")
        .unwrap();
    assert_eq!(victim.status, UnitStatus::Failed);
    assert!(victim.detail.contains("a `..` part"), "{}", victim.detail);
    assert!(f.engine.executor.applied().is_empty());
    let planned = f.engine.executor.planned.lock().unwrap().clone();
    assert!(!planned.iter().any(|u| u.contains("victim")), "{planned:?}");
}
