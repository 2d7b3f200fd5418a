//! Terragrunt stacks expanded statically: every `unit` block of a
//! `terragrunt.stack.hcl` becomes the unit `terragrunt stack generate` would
//! write, evaluated where it would sit, with the edges and reads Terragrunt
//! gives it. Also `terragrunt.autoinclude.hcl` and `.terragrunt-excludes`.
//! Fixtures: `tests/fixtures/stacks/` (see its README).

mod support;

use cascade::affected::{ReadIndex, affected};
use cascade::config::RepoConfig;
use cascade::problem::ProblemKind;
use cascade::terragrunt::{DiscoverOptions, Discovery, Unit, UnitKind, discover, discover_files};
use cascade::unit::UnitPath;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const LIVE_ONLY: &str = "environments:\n  live: live\n  other: other\n";

struct Repo {
    tmp: tempfile::TempDir,
}

impl Repo {
    fn fixture(name: &str) -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/stacks")
            .join(name);
        support::copy_dir(&from, &tmp.path().join("repo"));
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        Repo { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.root().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn discover(&self, config: &str) -> Discovery {
        discover(&DiscoverOptions {
            dir: self.root(),
            repo_root: self.root(),
            config: RepoConfig::parse(config).unwrap(),
            env: BTreeMap::new(),
            features: BTreeMap::new(),
            deadline: None,
        })
    }
}

const VPC: &str = "live/.terragrunt-stack/vpc";
const DB: &str = "live/.terragrunt-stack/db";
const APP: &str = "live/.terragrunt-stack/app";
const QUEUE: &str = "live/.terragrunt-stack/queue";
const SERVICES: &str = "live/.terragrunt-stack/services";
const API: &str = "live/.terragrunt-stack/services/.terragrunt-stack/api";
const RDS: &str = "live/rds";

fn unit<'d>(d: &'d Discovery, path: &str) -> &'d Unit {
    d.unit(&UnitPath::new(path)).unwrap_or_else(|| {
        panic!(
            "no unit {path} in {:?}",
            d.units.iter().map(|u| u.path.as_str()).collect::<Vec<_>>()
        )
    })
}

fn deps<'d>(d: &'d Discovery, path: &str) -> Vec<&'d str> {
    unit(d, path)
        .dependencies
        .iter()
        .map(UnitPath::as_str)
        .collect()
}

fn affected_by(d: &Discovery, files: &[&str]) -> Vec<String> {
    let (graph, _) = d.graph();
    let index = ReadIndex::new(&d.units);
    let changed: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    affected(&index, &d.units, &graph, &changed, &[], None)
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect()
}

#[test]
fn a_stack_expands_into_the_units_stack_generate_writes() {
    let repo = Repo::fixture("basic");
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
    let repo = Repo::fixture("basic");
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
    let repo = Repo::fixture("basic");
    // A stale generated copy, committed by mistake, says something else.
    repo.write(
        "live/.terragrunt-stack/db/terragrunt.hcl",
        "dependency \"x\" {\n  config_path = \"../nowhere\"\n}\n",
    );
    repo.write("live/.terragrunt-stack/stale/terragrunt.hcl", "");
    let d = repo.discover(LIVE_ONLY);
    assert_eq!(deps(&d, DB), [VPC]);
    assert!(
        d.unit(&UnitPath::new("live/.terragrunt-stack/stale"))
            .is_none()
    );
}

#[test]
fn plan_targets_name_the_stack_to_generate() {
    let repo = Repo::fixture("basic");
    let scan = cascade::scan::scan_with(
        &repo.root(),
        &repo.root(),
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
    let targets =
        cascade::engine::targets(&scan.discovery, &scan.graph, &repo.root(), &result, None);
    let got: Vec<(&str, Option<PathBuf>)> = targets
        .iter()
        .map(|t| (t.path.as_str(), t.stack.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (DB, Some(repo.root().join("live"))),
            (QUEUE, Some(repo.root().join("live"))),
            (APP, Some(repo.root().join("live"))),
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
