//! Planning the units a Terragrunt stack generates: the engine runs
//! `terragrunt stack generate` once per stack and run, in the checkout it
//! plans (never in the repository the pull request is read from), before the
//! first of the stack's units plans. No terragrunt binary is installable
//! here, so a scripted executor stands in for it and records what it is asked.

mod support;

use cascade::affected::{ReadIndex, affected};
use cascade::config::{Executor as Tool, RepoConfig};
use cascade::engine::{Engine, PlanTarget};
use cascade::exec::{ExecError, Executor, Resumed, UnitJob};
use cascade::store::{SqliteStore, SystemClock, UnitStatus};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const LIVE_ONLY: &str = "environments:\n  live: live\n  other: other\n";
const DB: &str = "live/.terragrunt-stack/db";
const APP: &str = "live/.terragrunt-stack/app";

/// What the executor was asked, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Generate { dir: PathBuf, tool: Tool },
    Plan { unit: String, dir: PathBuf },
}

#[derive(Default)]
struct Scripted {
    calls: Mutex<Vec<Call>>,
    fail_generate: bool,
}

const EMPTY_PLAN: &str = r#"{"format_version":"1.2","terraform_version":"1.11.4","planned_values":{"root_module":{}},"resource_changes":[]}"#;

impl Executor for Scripted {
    async fn plan(&self, job: &UnitJob, _cancel: &CancellationToken) -> Result<Vec<u8>, ExecError> {
        self.calls.lock().unwrap().push(Call::Plan {
            unit: job.unit.to_string(),
            dir: job.dir.clone(),
        });
        Ok(EMPTY_PLAN.as_bytes().to_vec())
    }

    async fn generate_stack(
        &self,
        job: &UnitJob,
        _cancel: &CancellationToken,
    ) -> Result<(), ExecError> {
        // Let other units of the stack reach the engine meanwhile: they must wait.
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.calls.lock().unwrap().push(Call::Generate {
            dir: job.dir.clone(),
            tool: job.tool,
        });
        if self.fail_generate {
            return Err(ExecError::Failed {
                command: "terragrunt stack generate".into(),
                code: 1,
                excerpt: "Error: cannot generate".into(),
            });
        }
        Ok(())
    }

    async fn apply(&self, _job: &UnitJob, _shutdown: &CancellationToken) -> Result<(), ExecError> {
        Ok(())
    }

    async fn resume_apply(
        &self,
        _job: &UnitJob,
        _stop: &CancellationToken,
    ) -> Result<Resumed, ExecError> {
        Ok(Resumed::Nothing)
    }
}

/// The repository the pull request is read from, and a separate checkout of
/// it where the engine plans.
struct Trees {
    tmp: tempfile::TempDir,
}

impl Trees {
    fn new() -> Trees {
        let tmp = tempfile::tempdir().unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks/basic");
        support::copy_dir(&from, &tmp.path().join("repo"));
        support::copy_dir(&from, &tmp.path().join("checkout"));
        Trees { tmp }
    }

    fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn checkout(&self) -> PathBuf {
        self.tmp.path().join("checkout")
    }

    /// The targets of a change to db's unit source, planned in the checkout.
    fn targets(&self) -> Vec<PlanTarget> {
        let scan = cascade::scan::scan_with(
            &self.repo(),
            &self.repo(),
            RepoConfig::parse(LIVE_ONLY).unwrap(),
            &[],
        );
        let index = ReadIndex::new(&scan.discovery.units);
        let result = affected(
            &index,
            &scan.discovery.units,
            &scan.graph,
            &["catalog/units/db/terragrunt.hcl".to_string()],
            &[],
            None,
        );
        cascade::engine::targets(
            &scan.discovery,
            &scan.graph,
            &self.checkout(),
            &result,
            None,
        )
    }
}

async fn plan(trees: &Trees, exec: Scripted) -> (cascade::engine::PlanOutcome, Vec<Call>) {
    let data = trees.tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = SqliteStore::open(&data.join("cascade.db")).await.unwrap();
    let exec = Arc::new(exec);
    let engine = Engine {
        executor: exec.clone(),
        store: Arc::new(store),
        clock: Arc::new(SystemClock),
        data_dir: data,
        parallelism: 4,
        timeout: Duration::from_secs(60),
        shutdown: CancellationToken::new(),
    };
    let outcome = engine
        .plan(
            "acme/infra",
            "head",
            "base",
            trees.targets(),
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    let calls = exec.calls.lock().unwrap().clone();
    (outcome, calls)
}

fn status(outcome: &cascade::engine::PlanOutcome, unit: &str) -> (UnitStatus, String) {
    let u = outcome
        .plan
        .units
        .iter()
        .find(|u| u.path.as_str() == unit)
        .unwrap_or_else(|| panic!("{unit} not in the plan"));
    (u.status, u.detail.clone())
}

#[tokio::test]
async fn the_stack_is_generated_once_in_the_checkout_before_its_units_plan() {
    let trees = Trees::new();
    let (outcome, calls) = plan(&trees, Scripted::default()).await;
    assert!(!outcome.failed, "{:#?}", outcome.plan.units);

    let generates: Vec<&Call> = calls
        .iter()
        .filter(|c| matches!(c, Call::Generate { .. }))
        .collect();
    assert_eq!(
        generates,
        [&Call::Generate {
            dir: trees.checkout().join("live"),
            tool: Tool::Terragrunt,
        }],
        "{calls:#?}"
    );
    // Generation comes before every plan of a unit the stack generates, and
    // each unit is planned where generation writes it, in the checkout.
    let first_generate = calls
        .iter()
        .position(|c| matches!(c, Call::Generate { .. }))
        .unwrap();
    for unit in [DB, APP] {
        let at = calls
            .iter()
            .position(|c| matches!(c, Call::Plan { unit: u, .. } if u == unit))
            .unwrap_or_else(|| panic!("{unit} never planned: {calls:#?}"));
        assert!(
            at > first_generate,
            "{unit} planned before generation: {calls:#?}"
        );
        assert!(calls.contains(&Call::Plan {
            unit: unit.to_string(),
            dir: trees.checkout().join(unit),
        }));
    }
    // Nothing runs in the repository the pull request is read from.
    for call in &calls {
        let (Call::Generate { dir, .. } | Call::Plan { dir, .. }) = call;
        assert!(dir.starts_with(trees.checkout()), "{call:?}");
    }
    // The plan remembers each unit's stack, relative, for the apply's re-plan.
    let db = outcome
        .plan
        .units
        .iter()
        .find(|u| u.path.as_str() == DB)
        .unwrap();
    assert_eq!(db.stack.as_ref().map(|s| s.as_str()), Some("live"));
    let other = outcome
        .plan
        .units
        .iter()
        .find(|u| u.path.as_str() == "other")
        .unwrap();
    assert_eq!(other.stack, None);
}

#[tokio::test]
async fn a_failed_generation_fails_the_stacks_units_without_planning_them() {
    let trees = Trees::new();
    let exec = Scripted {
        fail_generate: true,
        ..Scripted::default()
    };
    let (outcome, calls) = plan(&trees, exec).await;
    assert!(outcome.failed);
    // Tried once for the run, not once per unit.
    let generates = calls
        .iter()
        .filter(|c| matches!(c, Call::Generate { .. }))
        .count();
    assert_eq!(generates, 1, "{calls:#?}");
    for unit in [DB, APP] {
        assert!(
            !calls
                .iter()
                .any(|c| matches!(c, Call::Plan { unit: u, .. } if u == unit)),
            "{unit} planned although its stack was not generated: {calls:#?}"
        );
    }
    let (db, why) = status(&outcome, DB);
    assert_eq!(db, UnitStatus::Failed);
    assert!(
        why.contains("generating the stack this unit belongs to failed")
            && why.contains("terragrunt stack generate"),
        "{why}"
    );
    assert!(
        !why.contains(&trees.tmp.path().display().to_string()),
        "{why}"
    );
    // What depends on the stack's units is not planned either.
    assert_ne!(status(&outcome, "other").0, UnitStatus::Planned);
}
