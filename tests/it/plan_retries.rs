//! Plan retries with a stand-in terraform: a script that fails one unit's plan with a
//! chosen message a chosen number of times and otherwise runs the real terraform (only
//! `terraform_data`, local state). Checks which failures are retried, that the other
//! units go on, and what the plan comment says.

use crate::support;

use cascade::clock::SystemClock;
use cascade::comment::{Comments, plan_view};
use cascade::config::RepoConfig;
use cascade::config::RetryPolicy;
use cascade::engine::{Engine, PlanOutcome, PlanTarget};
use cascade::exec::ProcessExecutor;
use cascade::forge::github::COMMENT_LIMIT;
use cascade::store::{PlanKey, SqliteStore, UnitStatus};
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::os::unix::fs::PermissionsExt;

use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const UNITS: [&str; 3] = ["flaky", "steady", "other"];

/// Three independent root modules, a terraform stand-in whose `plan` of `flaky` fails
/// `fails` times with `message`, and an engine over them.
struct World {
    tmp: tempfile::TempDir,
    engine: Engine<ProcessExecutor, SqliteStore>,
}

impl World {
    async fn new(fails: u32, message: &str) -> World {
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
        let count = tmp.path().join("repo/flaky/plan.count");
        let script = tmp.path().join("terraform");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n\
                 if [ \"$1\" = plan ] && [ \"$(basename \"$PWD\")\" = flaky ]; then\n\
                 n=$(cat {count} 2>/dev/null || echo 0)\n\
                 echo $((n + 1)) > {count}\n\
                 if [ \"$n\" -lt {fails} ]; then echo 'Error: {message}' >&2; exit 1; fi\n\
                 fi\n\
                 exec {real} \"$@\"\n",
                count = count.display(),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let parent = [
            ("PATH", std::env::var("PATH").unwrap()),
            ("CHECKPOINT_DISABLE", "1".to_string()),
            ("TF_IN_AUTOMATION", "1".to_string()),
        ];
        let executor = ProcessExecutor::new(tmp.path().join("cache"))
            .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
            .with_binary(Tool::Terraform, script.display().to_string());
        let data = tmp.path().join("data");
        let store = SqliteStore::open(&tmp.path().join("cascade.db"))
            .await
            .unwrap();
        let engine = Engine {
            executor: Arc::new(executor),
            store: Arc::new(store),
            clock: Arc::new(SystemClock),
            data_dir: data,
            parallelism: 3,
            timeout: Duration::from_secs(120),
            init_timeout: Duration::from_secs(120),
            shutdown: CancellationToken::new(),
        };
        World { tmp, engine }
    }

    /// How many times `flaky` was planned.
    fn flaky_tries(&self) -> u32 {
        std::fs::read_to_string(self.tmp.path().join("repo/flaky/plan.count"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    async fn plan(&self, retries: &RetryPolicy) -> PlanOutcome {
        let targets = UNITS
            .iter()
            .map(|unit| PlanTarget {
                path: UnitPath::new(unit),
                wave: 1,
                deps: vec![],
                destroy: false,
                tool: Tool::Terraform,
                dir: self.tmp.path().join("repo").join(unit),
                root: self.tmp.path().join("repo"),
                sources: vec![],
                init_args: vec![],
                stack: None,
                refused: None,
            })
            .collect();
        self.engine
            .plan(
                &PlanKey::from_stored("acme/infra"),
                "head",
                "base",
                targets,
                retries,
                CancellationToken::new(),
                |_| {},
            )
            .await
            .unwrap()
    }
}

/// The retry settings a `.cascade.yaml` with `retries:` `yaml` gives.
fn retries(yaml: &str) -> RetryPolicy {
    RepoConfig::parse(&format!("retries: {yaml}\n"))
        .unwrap()
        .retries
}

fn status(outcome: &PlanOutcome, unit: &str) -> (UnitStatus, u32, String) {
    let u = outcome
        .plan
        .units
        .iter()
        .find(|u| u.path.as_str() == unit)
        .unwrap();
    (u.status, u.retried, u.detail.clone())
}

fn comment(outcome: &PlanOutcome) -> String {
    Comments::new()
        .plan_comment(&plan_view(&outcome.plan, &[]), COMMENT_LIMIT)
        .unwrap()
        .concat()
}

#[tokio::test]
async fn a_held_state_lock_is_retried_until_the_plan_succeeds_and_the_comment_says_so() {
    let world = World::new(2, "Error acquiring the state lock").await;
    let outcome = world.plan(&retries("{attempts: 3, base: 10ms}")).await;
    assert_eq!(world.flaky_tries(), 3);
    assert!(!outcome.failed, "{:?}", outcome.plan.units);
    assert_eq!(status(&outcome, "flaky").0, UnitStatus::Planned);
    assert_eq!(status(&outcome, "flaky").1, 2);
    for unit in ["steady", "other"] {
        assert_eq!(status(&outcome, unit).0, UnitStatus::Planned);
        assert_eq!(status(&outcome, unit).1, 0, "{unit} was never retried");
    }
    let comment = comment(&outcome);
    assert!(comment.contains("| `flaky` *retried 2×* |"), "{comment}");
    assert_eq!(comment.matches("retried").count(), 1, "{comment}");
}

#[tokio::test]
async fn a_failure_that_is_not_transient_fails_at_once() {
    let world = World::new(5, "Unsupported argument").await;
    let outcome = world.plan(&retries("{attempts: 3, base: 10ms}")).await;
    assert_eq!(world.flaky_tries(), 1);
    let (state, retried, detail) = status(&outcome, "flaky");
    assert_eq!((state, retried), (UnitStatus::Failed, 0));
    assert!(detail.contains("Unsupported argument"), "{detail}");
    assert!(!comment(&outcome).contains("retried"));
    for unit in ["steady", "other"] {
        assert_eq!(status(&outcome, unit).0, UnitStatus::Planned);
    }
}

#[tokio::test]
async fn a_repository_pattern_makes_its_own_errors_transient() {
    let world = World::new(1, "quota exceeded for project").await;
    let outcome = world
        .plan(&retries(r#"{base: 10ms, transient: ["quota exceeded"]}"#))
        .await;
    assert_eq!(world.flaky_tries(), 2);
    assert_eq!(status(&outcome, "flaky").0, UnitStatus::Planned);
    assert_eq!(status(&outcome, "flaky").1, 1);
}

#[tokio::test]
async fn past_the_last_try_the_unit_fails_with_the_last_reason_and_the_way_out() {
    let world = World::new(10, "Error acquiring the state lock").await;
    let outcome = world
        .plan(&retries("{attempts: 3, base: 10ms, factor: 3}"))
        .await;
    assert_eq!(world.flaky_tries(), 3);
    let (state, retried, detail) = status(&outcome, "flaky");
    assert_eq!((state, retried), (UnitStatus::Failed, 2));
    assert!(
        detail.contains("Error acquiring the state lock"),
        "{detail}"
    );
    assert!(outcome.failed);
    for unit in ["steady", "other"] {
        assert_eq!(status(&outcome, unit).0, UnitStatus::Planned);
    }
    let comment = comment(&outcome);
    assert!(
        comment.contains("(retried 2×; comment `/plan` to try again)"),
        "{comment}"
    );
}

#[tokio::test]
async fn one_attempt_turns_retries_off() {
    let world = World::new(1, "Error acquiring the state lock").await;
    let outcome = world.plan(&retries("{attempts: 1}")).await;
    assert_eq!(world.flaky_tries(), 1);
    assert_eq!(status(&outcome, "flaky").0, UnitStatus::Failed);
}

#[tokio::test]
async fn a_new_push_ends_the_wait_at_once() {
    let world = World::new(10, "Error acquiring the state lock").await;
    // A wait of ten minutes, cut short by the cancellation.
    let policy = retries("{attempts: 3, base: 5m}");
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let targets = vec![PlanTarget {
        path: UnitPath::new("flaky"),
        wave: 1,
        deps: vec![],
        destroy: false,
        tool: Tool::Terraform,
        dir: world.tmp.path().join("repo/flaky"),
        root: world.tmp.path().join("repo"),
        sources: vec![],
        init_args: vec![],
        stack: None,
        refused: None,
    }];
    let count = world.tmp.path().join("repo/flaky/plan.count");
    tokio::spawn(async move {
        while !count.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        world.engine.plan(
            &PlanKey::from_stored("acme/infra"),
            "h",
            "b",
            targets,
            &policy,
            cancel,
            |_| {},
        ),
    )
    .await
    .expect("the wait ends with the cancellation")
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(world.flaky_tries(), 1);
    assert_eq!(status(&outcome, "flaky").0, UnitStatus::Cancelled);
}

#[test]
fn retry_settings_are_checked_with_their_line() {
    for (yaml, says) in [
        ("retries:\n  attempts: 0\n", ":2:"),
        ("retries:\n  attempts: 11\n", "from 1"),
        ("retries:\n  factor: 0\n", "`retries.factor`"),
        ("retries:\n  base: soon\n", "`retries.base`"),
        ("retries:\n  base: 0s\n", "`retries.base`"),
        ("retries:\n  base: 1h\n", "`retries.base`"),
        (
            "retries:\n  transient: [\"(unclosed\"]\n",
            "not a valid regular expression",
        ),
        ("retries:\n  transient: [\"\"]\n", "empty pattern"),
        ("retries:\n  max: 3\n", "max"),
        ("retries: 3\n", "`retries` must be a mapping"),
    ] {
        let problem = RepoConfig::parse(yaml).unwrap_err().to_string();
        assert!(problem.contains(says), "{yaml}: {problem}");
        assert!(problem.contains(".cascade.yaml"), "{yaml}: {problem}");
    }
}

#[test]
fn hostile_patterns_are_refused_not_compiled_without_bound() {
    let huge = format!("retries:\n  transient: [\"{}\"]\n", "a".repeat(600));
    let problem = RepoConfig::parse(&huge).unwrap_err().to_string();
    assert!(problem.contains("512 bytes"), "{problem}");
    // Small to write, enormous once compiled.
    let blowup = "retries:\n  transient: [\"\\\\w{1000}\\\\w{1000}\\\\w{100}\"]\n";
    let problem = RepoConfig::parse(blowup).unwrap_err().to_string();
    assert!(problem.contains("compiles too big"), "{problem}");
    let many = format!("retries:\n  transient: [{}]\n", vec!["x"; 33].join(", "));
    let problem = RepoConfig::parse(&many).unwrap_err().to_string();
    assert!(problem.contains("at most 32"), "{problem}");
}

#[test]
fn defaults_hold_without_the_key() {
    let policy = RepoConfig::parse("").unwrap().retries;
    assert_eq!(
        (policy.attempts, policy.base, policy.factor),
        (3, Duration::from_secs(5), 2)
    );
    let policy = retries("{base: 500ms, factor: 3}");
    assert_eq!(policy.wait_before(2), Duration::from_millis(1500));
}

#[tokio::test]
async fn a_wait_cut_short_is_resumed_with_its_count_and_due_time() {
    let world = World::new(10, "Error acquiring the state lock").await;
    let policy = retries("{attempts: 3, base: 1s}");
    let targets = || {
        vec![PlanTarget {
            path: UnitPath::new("flaky"),
            wave: 1,
            deps: vec![],
            destroy: false,
            tool: Tool::Terraform,
            dir: world.tmp.path().join("repo/flaky"),
            root: world.tmp.path().join("repo"),
            sources: vec![],
            init_args: vec![],
            stack: None,
            refused: None,
        }]
    };
    // The first try fails; the process "stops" (a new push) while it waits for the retry.
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let count = world.tmp.path().join("repo/flaky/plan.count");
    tokio::spawn(async move {
        while !count.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let first = world
        .engine
        .plan(
            &PlanKey::from_stored("acme/infra"),
            "h",
            "b",
            targets(),
            &policy,
            cancel,
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(status(&first, "flaky").0, UnitStatus::Cancelled);
    assert_eq!(
        status(&first, "flaky").1,
        1,
        "the retry it waited for is stored"
    );
    // The same request again resumes the run: it goes on counting from 1, so two
    // more tries use up the three attempts (without the stored count it would try three).
    let resumed = world
        .engine
        .plan(
            &PlanKey::from_stored("acme/infra"),
            "h",
            "b",
            targets(),
            &policy,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(world.flaky_tries(), 3);
    let (state, retried, detail) = status(&resumed, "flaky");
    assert_eq!((state, retried), (UnitStatus::Failed, 2));
    assert!(detail.contains("state lock"), "{detail}");
}
