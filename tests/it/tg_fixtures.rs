//! Discovery against the oracle: every fixture in `../shared/tg-fixtures`,
//! with the units, edges, waves, affected and reading sets and errors that
//! Terragrunt computes for it (expected.json and EXPECTED.md).

use crate::support;

use cascade::affected::{ReadIndex, affected};
use cascade::config::RepoConfig;
use cascade::discovery::{Discovery, UnitKind};
use cascade::graph::Graph;
use cascade::problem::{Problem, ProblemKind};
use cascade::terragrunt::{DiscoverOptions, discover};
use cascade::unit::UnitPath;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn expected() -> Json {
    let text =
        std::fs::read_to_string(support::shared().join("tg-fixtures/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

struct Found {
    discovery: Discovery,
    graph: Graph,
    problems: Vec<Problem>,
    _repo: tempfile::TempDir,
}

fn run(name: &str, working_dir: &str, features: &[(&str, &str)]) -> Found {
    let repo = support::fixture_repo(name);
    let found = run_in(repo.path(), working_dir, features);
    Found {
        _repo: repo,
        ..found
    }
}

fn run_in(root: &Path, working_dir: &str, features: &[(&str, &str)]) -> Found {
    let opts = DiscoverOptions {
        dir: root.join(working_dir),
        repo_root: root.to_path_buf(),
        config: RepoConfig::default(),
        env: BTreeMap::new(),
        features: features
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        deadline: None,
        sources: Default::default(),
    };
    let discovery = discover(&opts);
    let (graph, cycles) = discovery.graph();
    let mut problems = discovery.problems.clone();
    problems.extend(cycles);
    Found {
        discovery,
        graph,
        problems,
        _repo: tempfile::tempdir().unwrap(),
    }
}

fn strings(v: &Json) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn waves(v: &Json) -> Vec<Vec<String>> {
    v.as_array().unwrap().iter().map(strings).collect()
}

fn paths(units: &[UnitPath]) -> Vec<String> {
    units.iter().map(|u| u.to_string()).collect()
}

fn wave_strings(w: Vec<Vec<UnitPath>>) -> Vec<Vec<String>> {
    w.into_iter().map(|w| paths(&w)).collect()
}

fn edges(found: &Found) -> BTreeMap<String, Vec<String>> {
    found
        .discovery
        .units
        .iter()
        .filter(|u| !u.dependencies.is_empty())
        .map(|u| (u.path.to_string(), paths(&u.dependencies)))
        .collect()
}

fn affected_by(found: &Found, file: &str) -> Vec<String> {
    let index = ReadIndex::new(&found.discovery.units);
    let result = affected(
        &index,
        &found.discovery.units,
        &found.graph,
        &[file.to_string()],
        &[],
        None,
    );
    result.units.iter().map(|u| u.path.to_string()).collect()
}

fn reading(found: &Found, file: &str) -> Vec<String> {
    let d = &found.discovery;
    d.units
        .iter()
        .filter(|u| d.reads_of(u).iter().any(|r| r == file))
        .map(|u| u.path.to_string())
        .collect()
}

fn no_problems(found: &Found) {
    assert!(
        found.problems.is_empty(),
        "unexpected problems: {:#?}",
        found.problems
    );
}

/// Checks every expectation expected.json states for a fixture.
fn check(name: &str) -> Found {
    let all = expected();
    let exp = &all[name];
    let working_dir = exp["working_dir"].as_str().unwrap_or(".");
    let found = run(name, working_dir, &[]);
    if let Some(units) = exp.get("units") {
        let ours: Vec<String> = found
            .discovery
            .units
            .iter()
            .map(|u| u.path.to_string())
            .collect();
        assert_eq!(ours, strings(units), "{name}: units");
    }
    if let Some(expected_edges) = exp.get("edges") {
        let want: BTreeMap<String, Vec<String>> = expected_edges
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), strings(v)))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        assert_eq!(edges(&found), want, "{name}: edges");
    }
    if let Some(w) = exp.get("waves_up") {
        assert_eq!(
            wave_strings(found.graph.waves()),
            waves(w),
            "{name}: waves up"
        );
    }
    if let Some(w) = exp.get("waves_down") {
        assert_eq!(
            wave_strings(found.graph.waves_down()),
            waves(w),
            "{name}: waves down"
        );
    }
    if let Some(affected) = exp.get("affected") {
        for (file, units) in affected.as_object().unwrap() {
            assert_eq!(
                affected_by(&found, file),
                strings(units),
                "{name}: affected({file})"
            );
        }
    }
    if let Some(read) = exp.get("reading") {
        for (file, units) in read.as_object().unwrap() {
            assert_eq!(
                reading(&found, file),
                strings(units),
                "{name}: reading={file}"
            );
        }
    }
    if let Some(stacks) = exp.get("stacks") {
        let ours: Vec<String> = found
            .discovery
            .units
            .iter()
            .filter(|u| u.kind == UnitKind::Stack)
            .map(|u| u.path.to_string())
            .collect();
        assert_eq!(ours, strings(stacks), "{name}: stacks");
    }
    let flat = |w: Vec<Vec<UnitPath>>| {
        w.into_iter()
            .flatten()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
    };
    if let Some(q) = exp.get("queue_plan") {
        assert_eq!(flat(found.graph.waves()), strings(q), "{name}: plan queue");
    }
    if let Some(q) = exp.get("queue_destroy") {
        assert_eq!(
            flat(found.graph.waves_down()),
            strings(q),
            "{name}: destroy queue"
        );
    }
    if let Some(q) = exp.get("find_dag_output") {
        assert_eq!(
            flat(found.graph.waves()),
            strings(q),
            "{name}: find --dag order"
        );
    }
    if let Some(runs) = exp.get("run_graph_from") {
        for (start, want) in runs.as_object().unwrap() {
            let start = UnitPath::new(start);
            let mut got: BTreeSet<String> = found
                .graph
                .dependents_closure([&start])
                .into_keys()
                .map(|u| u.to_string())
                .collect();
            got.insert(start.to_string());
            assert_eq!(
                got.into_iter().collect::<Vec<_>>(),
                strings(want),
                "{name}: run --graph from {start}"
            );
        }
    }
    found
}

#[test]
fn graph_dependencies() {
    no_problems(&check("graph-dependencies"));
}

#[test]
fn graph() {
    no_problems(&check("graph"));
}

#[test]
fn find_dag() {
    no_problems(&check("find-dag"));
}

#[test]
fn list_dag_with_stacks() {
    no_problems(&check("list-dag"));
}

#[test]
fn stack_mgmt_stage() {
    let found = check("stack-mgmt-stage");
    no_problems(&found);
    // EXPECTED.md: affected(root.hcl) = the 9 mgmt+stage units; disjoint/* do not include it.
    assert_eq!(affected_by(&found, "root.hcl").len(), 9);
    assert_eq!(affected_by(&found, "mgmt/vpc/terragrunt.hcl").len(), 8);
}

#[test]
fn find_internal_v_external() {
    no_problems(&check("find-internal-v-external"));
    // From working dir internal/, the external dependency is still discovered, named relative to it.
    let found = run("find-internal-v-external", "internal", &[]);
    no_problems(&found);
    let units: Vec<String> = found
        .discovery
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect();
    assert_eq!(
        units,
        ["../external/c-dependency", "a-dependent", "b-dependency"]
    );
}

#[test]
fn cross_env_repo_root() {
    let found = check("cross-env-repo-root");
    no_problems(&found);
}

#[test]
fn multiinclude_dependency() {
    no_problems(&check("multiinclude-dependency"));
}

#[test]
fn include_parent() {
    let found = check("include-parent");
    no_problems(&found);
    // EXPECTED.md: affected(parent.hcl) = {app}; affected(common.hcl) = {dependency, app}.
    assert_eq!(affected_by(&found, "parent.hcl"), ["app"]);
    assert_eq!(affected_by(&found, "common.hcl"), ["app", "dependency"]);
}

#[test]
fn chained_deps_exposed_include() {
    no_problems(&check("chained-deps-exposed-include"));
}

#[test]
fn tac_with_original_dir() {
    let found = check("tac-with-original-dir");
    no_problems(&found);
    // The golden when_modified: child reads ../terragrunt.hcl and ../common/terragrunt.hcl.
    let child = found.discovery.unit(&UnitPath::new("child")).unwrap();
    let reads = found.discovery.reads_of(child);
    for f in [
        "terragrunt.hcl",
        "common/terragrunt.hcl",
        "child/terragrunt.hcl",
    ] {
        assert!(reads.contains(&f.to_string()), "child reads {f}: {reads:?}");
    }
}

#[test]
fn tac_chained_dependencies() {
    no_problems(&check("tac-chained-dependencies"));
}

#[test]
fn get_output_integration() {
    no_problems(&check("get-output-integration"));
}

#[test]
fn destroy_order() {
    no_problems(&check("destroy-order"));
}

#[test]
fn infrastructure_live_example() {
    let found = check("infrastructure-live-example");
    no_problems(&found);
    assert!(affected_by(&found, "_envcommon/README.md").is_empty());
    assert_eq!(
        affected_by(
            &found,
            "prod/us-east-1/prod/webserver-cluster/terragrunt.hcl"
        ),
        ["prod/us-east-1/prod/webserver-cluster"]
    );
}

#[test]
fn units_reading() {
    let found = check("units-reading");
    // `indirect` marks files read from run_cmd output: cascade cannot know them and says so.
    let indirect = found.discovery.unit(&UnitPath::new("indirect")).unwrap();
    assert!(indirect.unresolved);
    assert!(found.problems.iter().all(|p| p.kind == ProblemKind::Unresolved && p.unit == Some(UnitPath::new("indirect"))), "{:#?}", found.problems);
    assert_eq!(found.problems.len(), 1, "{:#?}", found.problems);
    assert_eq!(
        found.problems[0].file.as_deref(),
        Some("indirect/terragrunt.hcl")
    );
    assert_eq!(found.problems[0].line, Some(3));
    // ... so any change affects it, and only it beyond the units that read the file.
    assert_eq!(
        affected_by(&found, "shared.hcl"),
        [
            "including",
            "indirect",
            "reading-hcl",
            "reading-hcl-and-tfvars"
        ]
    );
}

#[test]
fn missing_dependencies() {
    let found = run("missing-dependencies", ".", &[]);
    let missing: Vec<&Problem> = found
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::MissingDependency)
        .collect();
    assert_eq!(missing.len(), 1, "{:#?}", found.problems);
    let p = missing[0];
    assert_eq!(p.unit, Some(UnitPath::new("main")));
    assert_eq!(p.file.as_deref(), Some("main/terragrunt.hcl"));
    assert!(
        p.message.contains("hl3-release") && p.message.contains("DependencyDirNotFoundError"),
        "{}",
        p.message
    );
    // The dependency that exists is still an edge.
    assert_eq!(edges(&found)["main"], ["module-a"]);
}

#[test]
fn disabled_dependencies() {
    // From app/, as the Terragrunt test runs: the broken unit-disabled is never parsed.
    let found = run("disabled", "app", &[]);
    no_problems(&found);
    assert_eq!(
        edges(&found)["."],
        ["../unit-enabled", "../unit-without-enabled"]
    );
    // From the fixture root the walk reaches the broken file: one parse error, everything else discovered.
    let found = run("disabled", ".", &[]);
    assert_eq!(
        edges(&found)["app"],
        ["unit-enabled", "unit-without-enabled"]
    );
    assert_eq!(found.problems.len(), 1, "{:#?}", found.problems);
    let p = &found.problems[0];
    assert_eq!(
        (p.kind, p.file.as_deref(), p.line),
        (
            ProblemKind::Parse,
            Some("unit-disabled/terragrunt.hcl"),
            Some(1)
        )
    );
    assert!(p.column.is_some());
}

#[test]
fn dynamic_dependency_config_path() {
    let found = check("dynamic-dependency-config-path");
    let unit = found.discovery.unit(&UnitPath::new("unit")).unwrap();
    assert!(unit.unresolved);
    assert_eq!(found.problems.len(), 1, "{:#?}", found.problems);
    let p = &found.problems[0];
    assert_eq!(
        (p.kind, p.file.as_deref(), p.line),
        (
            ProblemKind::Unresolved,
            Some("unit/terragrunt.hcl"),
            Some(2)
        )
    );
    assert!(p.message.contains("dependency.target"), "{}", p.message);
}

#[test]
fn cycles_are_refused_and_named() {
    let all = expected();
    let cases = all["cycle"]["cases"].as_object().unwrap();
    let repo = support::fixture_repo("cycle");
    let messages = [
        ("aa", "foo -> foo"),
        ("aba", "bar -> foo -> bar"),
        ("abca", "bar -> foo -> bar"),
        ("abcda", "bar -> baz -> car -> foo -> bar"),
    ];
    for (case, cycle) in messages {
        let found = run_in(repo.path(), case, &[]);
        let want: BTreeMap<String, Vec<String>> = cases[case]["edges"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), strings(v)))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        assert_eq!(edges(&found), want, "{case}: edges");
        let cycles: Vec<&Problem> = found
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::Cycle)
            .collect();
        assert_eq!(cycles.len(), 1, "{case}: {:#?}", found.problems);
        assert!(
            cycles[0].message.contains(cycle),
            "{case}: {}",
            cycles[0].message
        );
        // Nothing on the cycle can be planned; baz (depended on, not on the cycle) still can.
        let planned: Vec<String> = found
            .graph
            .waves()
            .into_iter()
            .flatten()
            .map(|u| u.to_string())
            .collect();
        assert_eq!(
            planned,
            if case == "abca" {
                vec!["baz".to_string()]
            } else {
                vec![]
            },
            "{case}"
        );
    }
}

#[test]
fn exclude_comprehensive() {
    let excluded = |found: &Found| -> Vec<String> {
        found
            .discovery
            .units
            .iter()
            .filter(|u| u.excluded.is_some())
            .map(|u| u.path.to_string())
            .collect()
    };
    let found = run("exclude-comprehensive", ".", &[]);
    no_problems(&found);
    // cascade plans in order to apply: a unit excluded from plan or from apply is kept out.
    assert_eq!(
        excluded(&found),
        [
            "action-mismatch",
            "always-excluded",
            "conditional-no-run",
            "exclude-all-except-output",
            "exclude-apply-only",
            "exclude-plan-only",
            "no-run-false",
            "no-run-not-set",
            "no-run-true"
        ]
    );
    let planned: BTreeSet<String> = found
        .graph
        .waves()
        .into_iter()
        .flatten()
        .map(|u| u.to_string())
        .collect();
    for unit in [
        "never-excluded",
        "normal-unit",
        "conditional-flag",
        "with-dep",
        "dep-unit",
    ] {
        assert!(planned.contains(unit), "{unit} is planned");
    }
    let found = run("exclude-comprehensive", ".", &[("exclude", "true")]);
    let ex = excluded(&found);
    assert!(
        ex.contains(&"conditional-flag".into())
            && ex.contains(&"with-dep".into())
            && !ex.contains(&"dep-unit".into())
    );
    let found = run(
        "exclude-comprehensive",
        ".",
        &[("exclude", "true"), ("exclude_deps", "true")],
    );
    assert!(excluded(&found).contains(&"dep-unit".into()));
    let found = run("exclude-comprehensive", ".", &[("enable_unit", "true")]);
    assert!(!excluded(&found).contains(&"conditional-no-run".into()));
}

#[test]
fn skip_inherited_through_exclude() {
    let found = run("skip-inherited", ".", &[]);
    no_problems(&found);
    let units: Vec<(String, bool)> = found
        .discovery
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.excluded.is_some()))
        .collect();
    assert_eq!(
        units,
        [
            ("skip-false/resource1".to_string(), false),
            ("skip-false/resource2".to_string(), false),
            ("skip-true/resource1".to_string(), false),
            ("skip-true/resource2".to_string(), true),
        ]
    );
}

#[test]
fn legacy_skip_v0_68() {
    let found = run("skip-legacy-v0.68", ".", &[]);
    no_problems(&found);
    // The root terragrunt.hcl files set terraform.source, so they are units (Terragrunt agrees),
    // skip is inherited through include (0.68 – 0.92) and a child's own skip wins.
    let units: Vec<(String, bool)> = found
        .discovery
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.excluded.is_some()))
        .collect();
    assert_eq!(
        units,
        [
            ("skip-false".to_string(), false),
            ("skip-false/resource1".to_string(), false),
            ("skip-false/resource2".to_string(), false),
            ("skip-true".to_string(), true),
            ("skip-true/resource1".to_string(), false),
            ("skip-true/resource2".to_string(), true),
        ]
    );
}

#[test]
fn tac_extra_arguments() {
    let found = run("tac-extra-arguments", ".", &[]);
    no_problems(&found);
    let units: Vec<String> = found
        .discovery
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect();
    assert_eq!(
        units,
        [
            "child",
            "no_files_at_all",
            "only_optional_files",
            "only_required_files",
            "var_file"
        ]
    );
    // extraArguments.yaml: child = ../terragrunt.hcl ../terraform.tfvars ../dev.tfvars ../us-east-1.tfvars dev.tfvars us-east-1.tfvars
    let child = found.discovery.unit(&UnitPath::new("child")).unwrap();
    let reads = found.discovery.reads_of(child);
    for f in [
        "terragrunt.hcl",
        "terraform.tfvars",
        "dev.tfvars",
        "us-east-1.tfvars",
        "child/dev.tfvars",
        "child/us-east-1.tfvars",
    ] {
        assert!(reads.contains(&f.to_string()), "child reads {f}: {reads:?}");
    }
    let var_file = found
        .discovery
        .reads_of(found.discovery.unit(&UnitPath::new("var_file")).unwrap());
    assert!(
        var_file.contains(&"var_file/main.tfvars".to_string()),
        "{var_file:?}"
    );
    assert_eq!(
        affected_by(&found, "dev.tfvars"),
        ["child", "only_optional_files"]
    );
}

#[test]
fn tac_local_tf_module_source() {
    let found = run("tac-local-tf-module-source", ".", &[]);
    no_problems(&found);
    let units: Vec<String> = found
        .discovery
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect();
    assert_eq!(units, ["terraform"]);
    for file in [
        "terragrunt.hcl",
        "terraform-module/main.tf",
        "terraform-module/nested-module/main.tf",
        "terraform-another-module/main.tf",
    ] {
        assert_eq!(affected_by(&found, file), ["terraform"], "{file}");
    }
}
