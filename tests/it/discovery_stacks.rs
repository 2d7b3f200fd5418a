//! Terragrunt stacks expanded statically: every `unit` block of a
//! `terragrunt.stack.hcl` becomes the unit `terragrunt stack generate` would
//! write, evaluated where it would sit, with the edges and reads Terragrunt
//! gives it. Also `terragrunt.autoinclude.hcl` and `.terragrunt-excludes`.
//! And planning those units: the engine runs `terragrunt stack generate` once
//! per stack and run, in the checkout it plans (never in the repository the
//! pull request is read from), before the first of the stack's units plans;
//! no terragrunt binary is installable here, so a scripted executor stands in
//! for it and records what it is asked.
//! Fixtures: `tests/fixtures/stacks/` (see its README).

use crate::support;

use cascade::affected::{ReadIndex, affected};
use cascade::clock::SystemClock;
use cascade::config::RepoConfig;
use cascade::discovery::UnitKind;
use cascade::engine::Engine;
use cascade::exec::{ExecError, Executor, PlanJson, Resumed, UnitJob};
use cascade::problem::ProblemKind;
use cascade::store::{PlanKey, SqliteStore, UnitStatus};
use cascade::terragrunt::discover_files;
use cascade::unit::Tool;
use cascade::unit::UnitPath;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const LIVE_ONLY: &str = "environments:\n  live: live\n  other: other\n";

use support::fixture_tree::{FixtureTree, affected_by, deps, unit};

/// A copy of `tests/fixtures/stacks/<name>`.
fn fixture(name: &str) -> FixtureTree {
    FixtureTree::new("stacks", name)
}

/// The plan targets, in `head_dir`, of a change to db's unit source in the
/// `basic` fixture at `repo`.
fn db_change_targets(repo: &Path, head_dir: &Path) -> Vec<cascade::engine::PlanTarget> {
    let scan = cascade::scan::scan_with(repo, repo, RepoConfig::parse(LIVE_ONLY).unwrap(), &[]);
    let index = ReadIndex::new(&scan.discovery.units);
    let result = affected(
        &index,
        &scan.discovery.units,
        &scan.graph,
        &["catalog/units/db/terragrunt.hcl".to_string()],
        &[],
        None,
    );
    cascade::engine::targets(&scan.discovery, &scan.graph, head_dir, &result, None)
}

const VPC: &str = "live/.terragrunt-stack/vpc";
const DB: &str = "live/.terragrunt-stack/db";
const APP: &str = "live/.terragrunt-stack/app";
const QUEUE: &str = "live/.terragrunt-stack/queue";
const SERVICES: &str = "live/.terragrunt-stack/services";
const API: &str = "live/.terragrunt-stack/services/.terragrunt-stack/api";
const RDS: &str = "live/rds";

#[test]
fn a_stack_expands_into_the_units_stack_generate_writes() {
    let repo = fixture("basic");
    let d = repo.discover(LIVE_ONLY);
    let listed: Vec<(&str, UnitKind)> = d.units.iter().map(|u| (u.path.as_str(), u.kind)).collect();
    assert_eq!(
        listed,
        [
            ("live", UnitKind::Stack),
            (APP, UnitKind::Terragrunt),
            (DB, UnitKind::Terragrunt),
            (QUEUE, UnitKind::Terragrunt),
            (SERVICES, UnitKind::Stack),
            (API, UnitKind::Terragrunt),
            (VPC, UnitKind::Terragrunt),
            (RDS, UnitKind::Terragrunt),
            ("other", UnitKind::Terragrunt),
        ]
    );
    assert_eq!(deps(&d, VPC), Vec::<&str>::new());
    assert_eq!(deps(&d, DB), [VPC]);
    assert_eq!(deps(&d, APP), [DB]);
    assert_eq!(deps(&d, API), [VPC]);
    assert_eq!(deps(&d, RDS), [VPC]);
    // A dependency on a stack directory is one on every unit it generates.
    assert_eq!(deps(&d, "other"), [APP, DB, QUEUE, API, VPC, RDS]);
    // Every generated unit is written by `terragrunt stack generate` in `live`.
    for path in [VPC, DB, APP, QUEUE, API, RDS] {
        assert_eq!(
            unit(&d, path).stack.as_ref().map(UnitPath::as_str),
            Some("live"),
            "{path}"
        );
    }
    assert_eq!(unit(&d, "other").stack, None);
    // A remote source cannot be expanded: that unit alone is unresolved, at its block.
    assert!(unit(&d, QUEUE).unresolved);
    let queue: Vec<_> = d
        .problems
        .iter()
        .filter(|p| p.unit.as_ref().is_some_and(|u| u.as_str() == QUEUE))
        .collect();
    assert_eq!(queue.len(), 1, "{:#?}", d.problems);
    assert_eq!(queue[0].kind, ProblemKind::Unresolved);
    assert_eq!(
        (queue[0].file.as_deref(), queue[0].line),
        (Some("live/terragrunt.stack.hcl"), Some(50))
    );
    assert_eq!(d.problems.len(), 1, "{:#?}", d.problems);
    for path in [VPC, DB, APP, API, RDS] {
        assert!(!unit(&d, path).unresolved, "{path}");
    }
}

#[test]
fn changes_to_what_a_stack_reads_plan_its_units() {
    let repo = fixture("basic");
    let d = repo.discover(LIVE_ONLY);
    // queue (a remote source) is unresolved: planned on every change.
    let all = [APP, DB, QUEUE, API, VPC, RDS, "other"];
    // The stack file, its values, and a file its locals read: every unit.
    // The stack itself is listed too (it is never planned: see
    // `plan_targets_name_the_stack_to_generate`).
    for file in [
        "live/terragrunt.stack.hcl",
        "live/terragrunt.values.hcl",
        "live/env.hcl",
    ] {
        let mut expected = vec!["live"];
        expected.extend(all);
        assert_eq!(affected_by(&d, &[file]), expected, "{file}");
    }
    // A unit's source directory, and the module it runs.
    assert_eq!(
        affected_by(&d, &["catalog/units/db/terragrunt.hcl"]),
        [APP, DB, QUEUE, "other"]
    );
    assert_eq!(
        affected_by(&d, &["catalog/modules/db/main.tf"]),
        [APP, DB, QUEUE, "other"]
    );
    // vpc's module is its own source directory (`source = "."`, copied by generation).
    assert_eq!(
        affected_by(&d, &["catalog/units/vpc/main.tf"]),
        [APP, DB, QUEUE, API, VPC, RDS, "other"]
    );
    // The nested stack's file and the unit source it names.
    assert_eq!(
        affected_by(&d, &["catalog/stacks/services/terragrunt.stack.hcl"]),
        [QUEUE, API, "other"]
    );
    assert_eq!(
        affected_by(&d, &["catalog/units/api/terragrunt.hcl"]),
        [QUEUE, API, "other"]
    );
    // root.hcl, found from where app is generated.
    assert_eq!(affected_by(&d, &["root.hcl"]), [APP, QUEUE, "other"]);
    let app = unit(&d, APP);
    assert!(app.reads.files.contains("root.hcl"), "{:?}", app.reads);
}

#[test]
fn generated_copies_on_disk_are_not_units() {
    let repo = fixture("basic");
    // A stale generated copy, committed by mistake, says something else.
    repo.write(
        "repo/live/.terragrunt-stack/db/terragrunt.hcl",
        "dependency \"x\" {\n  config_path = \"../nowhere\"\n}\n",
    );
    repo.write("repo/live/.terragrunt-stack/stale/terragrunt.hcl", "");
    let d = repo.discover(LIVE_ONLY);
    assert_eq!(deps(&d, DB), [VPC]);
    assert!(
        d.unit(&UnitPath::new("live/.terragrunt-stack/stale"))
            .is_none()
    );
}

#[test]
fn plan_targets_name_the_stack_to_generate() {
    let repo = fixture("basic");
    let targets = db_change_targets(&repo.root(), &repo.root());
    let got: Vec<(&str, Option<PathBuf>)> = targets
        .iter()
        .map(|t| (t.path.as_str(), t.stack.clone()))
        .collect();
    // In wave order: the queue (unresolved) after the units it might depend on, before
    // `other`, which is known to depend on it.
    assert_eq!(
        got,
        [
            (DB, Some(repo.root().join("live"))),
            (APP, Some(repo.root().join("live"))),
            (QUEUE, Some(repo.root().join("live"))),
            ("other", None),
        ]
    );
    assert_eq!(targets[0].dir, repo.root().join(DB));
}

#[test]
fn a_unit_block_autoinclude_and_a_sibling_autoinclude_file_add_edges() {
    let d = discover_files(&[
        ("vpc/terragrunt.hcl", b""),
        ("db/terragrunt.hcl", b""),
        // An autoinclude file next to an ordinary unit is merged into it, and wins.
        (
            "app/terragrunt.hcl",
            b"dependency \"x\" {\n  config_path = \"../vpc\"\n}\n",
        ),
        (
            "app/terragrunt.autoinclude.hcl",
            b"dependency \"x\" {\n  config_path = \"../db\"\n}\n",
        ),
    ]);
    assert!(d.problems.is_empty(), "{:#?}", d.problems);
    assert_eq!(deps(&d, "app"), ["db"]);
    assert!(
        unit(&d, "app")
            .reads
            .files
            .contains("app/terragrunt.autoinclude.hcl")
            || d.reads_of(unit(&d, "app"))
                .contains(&"app/terragrunt.autoinclude.hcl".to_string())
    );
}

#[test]
fn stack_blocks_that_cannot_be_expanded_are_reported_at_their_line() {
    let d = discover_files(&[
        ("src/terragrunt.hcl", b""),
        (
            "s/terragrunt.stack.hcl",
            b"unit \"up\" {\n  source = \"../src\"\n  path   = \"../../escape\"\n}\n\nunit \"unknown\" {\n  source = \"../${get_env(\"SRC\")}\"\n  path   = \"u\"\n}\n\nunit \"iter\" {\n  source = \"../src\"\n  path   = \"i\"\n  expansion {\n    for_each = [\"a\"]\n  }\n}\n\nunit \"off\" {\n  source  = \"../src\"\n  path    = \"off\"\n  enabled = false\n}\n",
        ),
    ]);
    let mut lines: Vec<(Option<u32>, ProblemKind)> = d
        .problems
        .iter()
        .filter(|p| p.file.as_deref() == Some("s/terragrunt.stack.hcl"))
        .map(|p| (p.line, p.kind))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            (Some(3), ProblemKind::Parse),
            (Some(7), ProblemKind::Unresolved),
            (Some(14), ProblemKind::Unresolved),
        ],
        "{:#?}",
        d.problems
    );
    assert!(d.unit(&UnitPath::new("s/.terragrunt-stack/off")).is_none());
    assert!(unit(&d, "s/.terragrunt-stack/u").unresolved);
}

#[test]
fn a_stack_that_generates_itself_stops_at_the_depth_limit() {
    let d = discover_files(&[(
        "s/terragrunt.stack.hcl",
        b"stack \"again\" {\n  source = \".\"\n  path   = \"again\"\n}\n\nunit \"u\" {\n  source = \"../u\"\n  path = \"u\"\n}\n",
    ), ("u/terragrunt.hcl", b"")]);
    let deep = d
        .problems
        .iter()
        .find(|p| p.message.contains("nest deeper"))
        .unwrap_or_else(|| panic!("{:#?}", d.problems));
    assert_eq!(deep.kind, ProblemKind::Unresolved);
    assert!(d.units.len() < 100, "{}", d.units.len());
}

#[test]
fn terragrunt_excludes_keeps_units_out_of_plans() {
    let d = discover_files(&[
        (
            ".terragrunt-excludes",
            b"# comments and blank lines are skipped\n\nlegacy\n./prod/*\n",
        ),
        ("vpc/terragrunt.hcl", b""),
        ("legacy/terragrunt.hcl", b""),
        ("apps/legacy/terragrunt.hcl", b""),
        (
            "prod/app/terragrunt.hcl",
            b"dependency \"v\" {\n  config_path = \"../../vpc\"\n}\n",
        ),
        ("prod/app/deep/terragrunt.hcl", b""),
    ]);
    let excluded: Vec<&str> = d
        .units
        .iter()
        .filter(|u| u.excluded.is_some())
        .map(|u| u.path.as_str())
        .collect();
    // A name matches every unit of that directory name; a path glob does not recurse without **.
    assert_eq!(excluded, ["apps/legacy", "legacy", "prod/app"]);
    // Editing the file can bring a unit back: every unit reads it.
    let vpc = unit(&d, "vpc");
    assert!(vpc.reads.files.contains(".terragrunt-excludes"));
}

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
    async fn plan(
        &self,
        job: &UnitJob,
        _cancel: &CancellationToken,
    ) -> Result<PlanJson, ExecError> {
        self.calls.lock().unwrap().push(Call::Plan {
            unit: job.unit.to_string(),
            dir: job.dir.clone(),
        });
        Ok(EMPTY_PLAN.as_bytes().to_vec().into())
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

async fn plan_in_checkout(
    repo: &FixtureTree,
    checkout: &Path,
    exec: Scripted,
) -> (cascade::engine::PlanOutcome, Vec<Call>) {
    let data = repo.tmp.path().join("data");
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
        init_timeout: Duration::from_secs(60),
        shutdown: CancellationToken::new(),
    };
    let outcome = engine
        .plan(
            &PlanKey::from_stored("acme/infra"),
            "head",
            "base",
            db_change_targets(&repo.root(), checkout),
            cascade::engine::RunRules::default(),
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
    let repo = fixture("basic");
    let checkout = repo.copy("checkout");
    let (outcome, calls) = plan_in_checkout(&repo, &checkout, Scripted::default()).await;
    assert!(!outcome.failed, "{:#?}", outcome.plan.units);

    let generates: Vec<&Call> = calls
        .iter()
        .filter(|c| matches!(c, Call::Generate { .. }))
        .collect();
    assert_eq!(
        generates,
        [&Call::Generate {
            dir: checkout.join("live"),
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
            dir: checkout.join(unit),
        }));
    }
    // Nothing runs in the repository the pull request is read from.
    for call in &calls {
        let (Call::Generate { dir, .. } | Call::Plan { dir, .. }) = call;
        assert!(dir.starts_with(&checkout), "{call:?}");
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
    let repo = fixture("basic");
    let checkout = repo.copy("checkout");
    let exec = Scripted {
        fail_generate: true,
        ..Scripted::default()
    };
    let (outcome, calls) = plan_in_checkout(&repo, &checkout, exec).await;
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
        !why.contains(&repo.tmp.path().display().to_string()),
        "{why}"
    );
    // What depends on the stack's units is not planned either.
    assert_ne!(status(&outcome, "other").0, UnitStatus::Planned);
}

#[test]
fn a_stack_source_through_a_link_out_of_the_repository_is_never_read() {
    let repo = fixture("basic");
    repo.write(
        "outside/unit/terragrunt.hcl",
        "dependency \"secret\" {\n  config_path = \"../../repo/other\"\n}\ninputs = { token = \"hunter2\" }\n",
    );
    repo.link("catalog/units/evil", "../../../outside/unit");
    repo.write(
        "repo/s/terragrunt.stack.hcl",
        "unit \"evil\" {\n  source = \"../catalog/units/evil\"\n  path   = \"evil\"\n}\n",
    );
    let d = repo.discover("environments:\n  live: live\n  other: other\n  s: s\n");
    let evil = unit(&d, "s/.terragrunt-stack/evil");
    assert!(evil.unresolved);
    // Nothing it says outside is taken: no edge, and nothing quoted.
    assert!(evil.dependencies.is_empty(), "{:?}", evil.dependencies);
    let problems: Vec<_> = d
        .problems
        .iter()
        .filter(|p| {
            p.unit
                .as_ref()
                .is_some_and(|u| u.as_str() == "s/.terragrunt-stack/evil")
        })
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.message.contains("outside the repository")
                && p.file.as_deref() == Some("s/terragrunt.stack.hcl")
                && p.line == Some(2)),
        "{:#?}",
        d.problems
    );
    for p in &d.problems {
        assert!(!p.message.contains("hunter2"), "{p}");
        assert!(
            !p.to_string()
                .contains(&repo.tmp.path().display().to_string()),
            "{p}"
        );
    }
    // The rest of the repository is unaffected.
    assert!(!unit(&d, DB).unresolved);
}
