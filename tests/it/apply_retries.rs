//! Apply retries with a stand-in terraform: a script that fails one unit's apply with a
//! chosen message a chosen number of times (optionally changing the unit as it fails,
//! as a half-done apply would) and otherwise runs the real terraform (only
//! `terraform_data`, local state). A transient apply failure is retried only while the
//! unit's fresh plan still has the approved fingerprint.

use crate::support;

use cascade::clock::SystemClock;
use cascade::config::RepoConfig;
use cascade::config::RetryPolicy;
use cascade::engine::{ApplyOutcome, Engine, PlanTarget, UnitDir};
use cascade::exec::ProcessExecutor;
use cascade::store::{PlanKey, PlannedUnit, SqliteStore, UnitStatus};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const UNITS: [&str; 3] = ["flaky", "steady", "other"];
const REPO: &str = "acme/infra";

/// Three independent root modules and a terraform stand-in whose `apply` of `flaky`
/// fails `fails` times with `message`; with `drift`, each failure also adds a resource
/// to `flaky` (what it failed on changed the unit).
struct World {
    tmp: tempfile::TempDir,
    engine: Engine<ProcessExecutor, SqliteStore>,
    _log: support::call_log::CallLog,
}

impl World {
    async fn new(fails: u32, message: &str, drift: bool) -> World {
        let tmp = tempfile::tempdir().unwrap();
        for unit in UNITS {
            let dir = tmp.path().join("repo").join(unit);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("main.tf"),
                format!("resource \"terraform_data\" \"x\" {{\n  input = \"{unit}\"\n}}\n"),
            )
            .unwrap();
        }
        let real = support::real_terraform();
        // The stand-in runs in the sandbox: it counts inside its unit's directory
        // and logs its applies over loopback.
        let count = tmp.path().join("repo/flaky/apply.count");
        let log = support::call_log::CallLog::start(&tmp.path().join("applies"));
        let change = if drift {
            "printf 'resource \"terraform_data\" \"y%s\" {}\\n' \"$n\" >> main.tf\n"
        } else {
            ""
        };
        std::fs::write(
            tmp.path().join("terraform"),
            format!(
                "#!/bin/bash\n{log_call}\
                 if [ \"$1\" = apply ]; then\n\
                 log_call \"$(basename \"$PWD\")\"\n\
                 if [ \"$(basename \"$PWD\")\" = flaky ]; then\n\
                 n=$(cat {count} 2>/dev/null || echo 0)\n\
                 echo $((n + 1)) > {count}\n\
                 if [ \"$n\" -lt {fails} ]; then {change}echo 'Error: {message}' >&2; exit 1; fi\n\
                 fi\n\
                 fi\n\
                 exec {real} \"$@\"\n",
                count = count.display(),
                log_call = log.bash_function(),
            ),
        )
        .unwrap();
        let script = tmp.path().join("terraform");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let parent = [
            ("PATH", std::env::var("PATH").unwrap()),
            ("CHECKPOINT_DISABLE", "1".to_string()),
            ("TF_IN_AUTOMATION", "1".to_string()),
        ];
        let executor = ProcessExecutor::new(tmp.path().join("cache"))
            .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
            .with_binary(Tool::Terraform, script.display().to_string());
        let store = SqliteStore::open(&tmp.path().join("cascade.db"))
            .await
            .unwrap();
        let engine = Engine {
            executor: Arc::new(executor),
            store: Arc::new(store),
            clock: Arc::new(SystemClock),
            data_dir: tmp.path().join("data"),
            parallelism: 3,
            timeout: Duration::from_secs(120),
            init_timeout: Duration::from_secs(120),
            shutdown: CancellationToken::new(),
        };
        World {
            tmp,
            engine,
            _log: log,
        }
    }

    fn dir(&self, unit: &str) -> PathBuf {
        self.tmp.path().join("repo").join(unit)
    }

    /// Every unit's apply, in order.
    fn applies(&self) -> Vec<String> {
        std::fs::read_to_string(self.tmp.path().join("applies"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Plans every unit (no failure then: the stand-in fails applies only), then applies
    /// the plan with `retries`.
    async fn plan_and_apply(&self, retries: &RetryPolicy) -> ApplyOutcome {
        let targets = UNITS
            .iter()
            .map(|unit| PlanTarget {
                path: UnitPath::new(unit),
                wave: 1,
                deps: vec![],
                destroy: false,
                tool: Tool::Terraform,
                dir: self.dir(unit),
                root: self.tmp.path().join("repo"),
                sources: vec![],
                init_args: vec![],
                stack: None,
                refused: None,
            })
            .collect();
        let planned = self
            .engine
            .plan(
                &PlanKey::from_stored(REPO),
                "head",
                "base",
                targets,
                retries,
                CancellationToken::new(),
                |_| {},
            )
            .await
            .unwrap();
        assert!(!planned.failed, "{:?}", planned.plan.units);
        let repo = self.tmp.path().join("repo");
        let dir_for = |u: &PlannedUnit| UnitDir::of(&repo, &repo, &u.path);
        self.engine
            .apply(
                &PlanKey::from_stored(REPO),
                &planned.plan.id,
                "head",
                &dir_for,
                retries,
                |_| {},
            )
            .await
            .unwrap()
            .expect("the approved plan is applied")
    }
}

fn retries(yaml: &str) -> RetryPolicy {
    RepoConfig::parse(&format!("retries: {yaml}\n"))
        .unwrap()
        .retries
}

fn unit<'a>(outcome: &'a ApplyOutcome, path: &str) -> &'a cascade::engine::UnitApply {
    outcome
        .units
        .iter()
        .find(|u| u.path.as_str() == path)
        .unwrap()
}

fn count(applies: &[String], unit: &str) -> usize {
    applies.iter().filter(|a| *a == unit).count()
}

#[tokio::test]
async fn a_transient_apply_failure_is_retried_while_the_plan_is_the_approved_one() {
    let world = World::new(2, "Error acquiring the state lock", false).await;
    let outcome = world
        .plan_and_apply(&retries("{attempts: 3, base: 10ms}"))
        .await;
    assert!(outcome.complete(), "{:?}", outcome.units);
    let flaky = unit(&outcome, "flaky");
    assert_eq!((flaky.status, flaky.retried), (UnitStatus::Applied, 2));
    let applies = world.applies();
    assert_eq!(count(&applies, "flaky"), 3, "{applies:?}");
    for other in ["steady", "other"] {
        assert_eq!(count(&applies, other), 1, "{applies:?}");
        assert_eq!(unit(&outcome, other).retried, 0);
    }
}

#[tokio::test]
async fn a_failure_that_is_not_transient_is_not_retried() {
    let world = World::new(5, "Unsupported argument", false).await;
    let outcome = world
        .plan_and_apply(&retries("{attempts: 3, base: 10ms}"))
        .await;
    let flaky = unit(&outcome, "flaky");
    assert_eq!((flaky.status, flaky.retried), (UnitStatus::Failed, 0));
    assert!(
        flaky.detail.contains("Unsupported argument"),
        "{}",
        flaky.detail
    );
    assert_eq!(count(&world.applies(), "flaky"), 1);
    for other in ["steady", "other"] {
        assert_eq!(unit(&outcome, other).status, UnitStatus::Applied);
    }
}

#[tokio::test]
async fn a_transient_failure_that_changed_the_plan_stops_and_asks() {
    let world = World::new(5, "Error acquiring the state lock", true).await;
    let outcome = world
        .plan_and_apply(&retries("{attempts: 3, base: 10ms}"))
        .await;
    let flaky = unit(&outcome, "flaky");
    assert_eq!(flaky.status, UnitStatus::Failed);
    assert!(
        flaky.detail.contains("plan changed since approval"),
        "{}",
        flaky.detail
    );
    assert_eq!(
        count(&world.applies(), "flaky"),
        1,
        "never applied unapproved"
    );
    assert!(!outcome.complete());
}

#[tokio::test]
async fn past_the_last_try_the_unit_fails_with_the_last_reason() {
    let world = World::new(10, "Error acquiring the state lock", false).await;
    let outcome = world
        .plan_and_apply(&retries("{attempts: 2, base: 10ms}"))
        .await;
    let flaky = unit(&outcome, "flaky");
    assert_eq!((flaky.status, flaky.retried), (UnitStatus::Failed, 1));
    assert!(
        flaky.detail.starts_with("retried 1×, then:"),
        "{}",
        flaky.detail
    );
    assert!(flaky.detail.contains("state lock"), "{}", flaky.detail);
    assert_eq!(count(&world.applies(), "flaky"), 2);
}

#[tokio::test]
async fn an_apply_stopped_while_waiting_to_retry_goes_on_counting_when_resumed() {
    let world = World::new(10, "Error acquiring the state lock", false).await;
    let policy = retries("{attempts: 3, base: 1s}");
    // Stopped (a shutdown) during the wait after the first failed apply.
    let engine = &world.engine;
    let shutdown = engine.shutdown.clone();
    let log = world.tmp.path().join("repo/flaky/apply.count");
    tokio::spawn(async move {
        while !log.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        shutdown.cancel();
    });
    let first = world.plan_and_apply(&policy).await;
    assert_eq!(unit(&first, "flaky").status, UnitStatus::Failed);
    assert_eq!(unit(&first, "flaky").retried, 1);
    // A new process applies the same plan id: the stored count and due time carry on.
    let resumed = Engine {
        executor: engine.executor.clone(),
        store: engine.store.clone(),
        clock: engine.clock.clone(),
        data_dir: engine.data_dir.clone(),
        parallelism: 3,
        timeout: Duration::from_secs(120),
        init_timeout: Duration::from_secs(120),
        shutdown: CancellationToken::new(),
    };
    let repo = world.tmp.path().join("repo");
    let dir_for = |u: &PlannedUnit| UnitDir::of(&repo, &repo, &u.path);
    let outcome = resumed
        .apply(
            &PlanKey::from_stored(REPO),
            &first.plan_id,
            "head",
            &dir_for,
            &policy,
            |_| {},
        )
        .await
        .unwrap()
        .expect("the same plan id is applied again");
    let flaky = unit(&outcome, "flaky");
    assert_eq!((flaky.status, flaky.retried), (UnitStatus::Failed, 2));
    assert_eq!(count(&world.applies(), "flaky"), 3, "three tries in all");
    for other in ["steady", "other"] {
        assert_eq!(count(&world.applies(), other), 1, "applied once, not again");
    }
}
