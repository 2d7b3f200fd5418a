use super::*;

/// A graph from `(unit, [dependencies])` rows; every unit named anywhere is a node.
fn graph(rows: &[(&str, &[&str])]) -> Graph {
    let nodes = rows
        .iter()
        .flat_map(|&(u, deps)| std::iter::once(u).chain(deps.iter().copied()));
    let edges = rows.iter().flat_map(|&(u, deps)| {
        deps.iter()
            .map(move |&d| (UnitPath::new(u), UnitPath::new(d)))
    });
    Graph::new(nodes.map(UnitPath::new), edges)
}

fn names(waves: &[Vec<UnitPath>]) -> Vec<Vec<&str>> {
    waves
        .iter()
        .map(|w| w.iter().map(UnitPath::as_str).collect())
        .collect()
}

fn set(units: &[&str]) -> BTreeSet<UnitPath> {
    units.iter().map(UnitPath::new).collect()
}

fn graph_dependencies() -> Graph {
    graph(&[
        ("backend-app", &["mysql", "redis", "vpc"]),
        ("frontend-app", &["backend-app", "vpc"]),
        ("mysql", &["vpc"]),
        ("redis", &["vpc"]),
    ])
}

/// Terragrunt's `test/fixtures/graph`, `services/` prefixes included.
fn graph_fixture() -> Graph {
    graph(&[
        ("services/eks-service-1", &["eks"]),
        ("services/eks-service-2", &["eks"]),
        ("services/eks-service-2-v2", &["services/eks-service-2"]),
        (
            "services/eks-service-3",
            &["services/eks-service-1", "services/eks-service-2"],
        ),
        ("services/eks-service-3-v2", &["services/eks-service-3"]),
        ("services/eks-service-3-v3", &["services/eks-service-3-v2"]),
        ("services/eks-service-4", &["services/eks-service-3"]),
        ("services/eks-service-5", &["eks", "services/eks-service-2"]),
        ("services/lambda-service-1", &["lambda"]),
        ("services/lambda-service-2", &["services/lambda-service-1"]),
    ])
}

#[test]
fn graph_dependencies_waves_up_and_down() {
    let g = graph_dependencies();
    assert_eq!(
        names(&g.waves()),
        [
            vec!["vpc"],
            vec!["mysql", "redis"],
            vec!["backend-app"],
            vec!["frontend-app"]
        ]
    );
    assert_eq!(
        names(&g.waves_down()),
        [
            vec!["frontend-app"],
            vec!["backend-app"],
            vec!["mysql", "redis"],
            vec!["vpc"]
        ]
    );
}

#[test]
fn find_dag_waves_up_and_down() {
    let g = graph(&[
        ("a-dependent", &["b-dependency"]),
        ("c-mixed-deps", &["a-dependent", "d-dependencies-only"]),
        ("d-dependencies-only", &["a-dependent"]),
    ]);
    assert_eq!(
        names(&g.waves()),
        [
            vec!["b-dependency"],
            vec!["a-dependent"],
            vec!["d-dependencies-only"],
            vec!["c-mixed-deps"]
        ]
    );
    assert_eq!(
        names(&g.waves_down()),
        [
            vec!["c-mixed-deps"],
            vec!["d-dependencies-only"],
            vec!["a-dependent"],
            vec!["b-dependency"]
        ]
    );
}

#[test]
fn every_fixture_in_expected_json_has_its_waves() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/tg-fixtures/expected.json"
    );
    let text = std::fs::read_to_string(path).expect("the shared fixture oracle is readable");
    let fixtures: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (name, fixture) in &fixtures {
        let (Some(units), Some(edges), Some(up), Some(down)) = (
            fixture.get("units"),
            fixture.get("edges"),
            fixture.get("waves_up"),
            fixture.get("waves_down"),
        ) else {
            continue;
        };
        let units: Vec<UnitPath> = serde_json::from_value(units.clone()).unwrap();
        let edges: BTreeMap<UnitPath, Vec<UnitPath>> =
            serde_json::from_value(edges.clone()).unwrap();
        let edges = edges
            .into_iter()
            .flat_map(|(u, deps)| deps.into_iter().map(move |d| (u.clone(), d)));
        let g = Graph::new(units, edges);
        let up: Vec<Vec<UnitPath>> = serde_json::from_value(up.clone()).unwrap();
        let down: Vec<Vec<UnitPath>> = serde_json::from_value(down.clone()).unwrap();
        assert_eq!(g.waves(), up, "{name}: waves up");
        assert_eq!(g.waves_down(), down, "{name}: waves down");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} fixtures had waves");
}

#[test]
fn graph_fixture_run_graph_from_eks_plans_dependents_in_documented_groups() {
    let g = graph_fixture();
    let eks = UnitPath::new("eks");
    let closure = g.dependents_closure([&eks]);
    let mut scope: BTreeSet<UnitPath> = closure.keys().cloned().collect();
    scope.insert(eks);
    let svc = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("services/eks-service-{n}"))
            .collect::<Vec<_>>()
    };
    let expected_up = [
        vec!["eks".to_string()],
        svc(&["1", "2"]),
        svc(&["2-v2", "3", "5"]),
        svc(&["3-v2", "4"]),
        svc(&["3-v3"]),
    ];
    let expected_down = [
        svc(&["2-v2", "3-v3", "4", "5"]),
        svc(&["3-v2"]),
        svc(&["3"]),
        svc(&["1", "2"]),
        vec!["eks".to_string()],
    ];
    let as_strings = |waves: Vec<Vec<UnitPath>>| -> Vec<Vec<String>> {
        waves
            .into_iter()
            .map(|w| w.into_iter().map(|u| u.to_string()).collect())
            .collect()
    };
    assert_eq!(as_strings(g.waves_of(&scope)), expected_up);
    assert_eq!(as_strings(g.waves_down_of(&scope)), expected_down);
}

#[test]
fn dependents_closure_names_the_first_dependency_reached() {
    let g = graph_fixture();
    let closure = g.dependents_closure([
        &UnitPath::new("services/eks-service-2"),
        &UnitPath::new("eks"),
    ]);
    let rows: Vec<(&str, &str)> = closure
        .iter()
        .map(|(u, from)| (u.as_str(), from.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("services/eks-service-1", "eks"),
            // A seed reachable from another seed is included.
            ("services/eks-service-2", "eks"),
            ("services/eks-service-2-v2", "services/eks-service-2"),
            ("services/eks-service-3", "services/eks-service-2"),
            ("services/eks-service-3-v2", "services/eks-service-3"),
            ("services/eks-service-3-v3", "services/eks-service-3-v2"),
            ("services/eks-service-4", "services/eks-service-3"),
            ("services/eks-service-5", "eks"),
        ]
    );
    let lambda = g.dependents_closure([&UnitPath::new("services/lambda-service-2")]);
    assert!(
        lambda.is_empty(),
        "a seed with no dependents closes over nothing"
    );
}

#[test]
fn waves_of_ignores_dependencies_outside_the_scope() {
    let g = graph_dependencies();
    let scope = set(&["backend-app", "frontend-app", "redis"]);
    assert_eq!(
        names(&g.waves_of(&scope)),
        [vec!["redis"], vec!["backend-app"], vec!["frontend-app"]]
    );
    assert_eq!(
        names(&g.waves_down_of(&scope)),
        [vec!["frontend-app"], vec!["backend-app"], vec!["redis"]]
    );
    let apart = set(&["frontend-app", "mysql", "not-a-unit"]);
    assert_eq!(names(&g.waves_of(&apart)), [vec!["frontend-app", "mysql"]]);
    assert!(g.waves_of(&BTreeSet::new()).is_empty());
}

#[test]
fn neighbours_are_direct_and_sorted_and_duplicates_collapse() {
    let g = Graph::new(
        ["vpc", "app", "db", "vpc"].map(UnitPath::new),
        [("app", "vpc"), ("app", "db"), ("app", "vpc"), ("db", "vpc")]
            .map(|(a, b)| (UnitPath::new(a), UnitPath::new(b))),
    );
    assert_eq!(g.len(), 3);
    assert_eq!(
        g.units(),
        [
            &UnitPath::new("app"),
            &UnitPath::new("db"),
            &UnitPath::new("vpc")
        ]
    );
    assert_eq!(
        g.dependencies(&UnitPath::new("app")),
        [&UnitPath::new("db"), &UnitPath::new("vpc")]
    );
    assert_eq!(
        g.dependents(&UnitPath::new("vpc")),
        [&UnitPath::new("app"), &UnitPath::new("db")]
    );
    assert!(g.dependents(&UnitPath::new("nope")).is_empty());
    assert!(g.contains(&UnitPath::new("db")) && !g.contains(&UnitPath::new("nope")));
    assert!(g.to_dot(true).matches("\"app\" -> \"vpc\"").count() == 1);
}

#[test]
fn empty_graph_has_no_waves_cycles_or_path() {
    let g = Graph::new([], []);
    assert!(g.is_empty());
    assert!(g.waves().is_empty() && g.waves_down().is_empty() && g.cycles().is_empty());
    assert!(g.critical_path().is_empty());
    assert_eq!(g.to_dot(false), "digraph {\n}\n");
    assert_eq!(g.to_mermaid(), "flowchart LR\n");
}

fn cycle_messages(g: &Graph) -> Vec<String> {
    g.cycles().iter().map(|c| Graph::cycle_message(c)).collect()
}

#[test]
fn cycle_fixture_aa_self_loop() {
    let g = graph(&[("foo", &["foo"])]);
    assert_eq!(g.cycles(), [vec![UnitPath::new("foo")]]);
    assert_eq!(cycle_messages(&g), ["foo -> foo"]);
    assert!(g.waves().is_empty() && g.waves_down().is_empty());
}

#[test]
fn cycle_fixture_aba() {
    let g = graph(&[("foo", &["bar"]), ("bar", &["foo"])]);
    assert_eq!(cycle_messages(&g), ["bar -> foo -> bar"]);
}

#[test]
fn cycle_fixture_abca_leaves_baz_out_of_the_cycle_but_in_the_waves() {
    let g = graph(&[("foo", &["bar", "baz"]), ("bar", &["foo"]), ("baz", &[])]);
    assert_eq!(cycle_messages(&g), ["bar -> foo -> bar"]);
    assert_eq!(names(&g.waves()), [vec!["baz"]]);
    assert!(
        g.waves_down().is_empty(),
        "baz waits for foo, which never goes"
    );
}

#[test]
fn cycle_fixture_abcda_starts_at_the_smallest_path() {
    let g = graph(&[
        ("foo", &["bar"]),
        ("bar", &["baz"]),
        ("baz", &["car"]),
        ("car", &["foo"]),
    ]);
    assert_eq!(cycle_messages(&g), ["bar -> baz -> car -> foo -> bar"]);
}

#[test]
fn one_cycle_per_component_sorted_and_dependents_of_cycles_left_out() {
    let g = graph(&[
        ("x", &["z"]),
        ("z", &["y"]),
        ("y", &["x"]),
        ("b", &["a"]),
        ("a", &["c", "b"]),
        ("c", &["a"]),
        ("app", &["y", "vpc"]),
        ("vpc", &[]),
    ]);
    // The shortest loop through "a" is taken, and "b" sorts before "c".
    assert_eq!(cycle_messages(&g), ["a -> b -> a", "x -> z -> y -> x"]);
    assert_eq!(names(&g.waves()), [vec!["vpc"]]);
    // vpc waits only for app; what the cycles depend on would wait forever, but nothing does.
    assert_eq!(names(&g.waves_down()), [vec!["app"], vec!["vpc"]]);
    assert_eq!(
        g.critical_path(),
        [UnitPath::new("vpc"), UnitPath::new("app")]
    );
    // No reduction exists with a cycle: every edge is drawn.
    assert_eq!(g.to_dot(false), g.to_dot(true));
}

#[test]
fn cycle_message_of_nothing_is_empty() {
    assert_eq!(Graph::cycle_message(&[]), "");
}

#[test]
fn graph_dependencies_full_dot_is_terragrunts() {
    let expected = "digraph {
\t\"backend-app\" ;
\t\"backend-app\" -> \"mysql\";
\t\"backend-app\" -> \"redis\";
\t\"backend-app\" -> \"vpc\";
\t\"frontend-app\" ;
\t\"frontend-app\" -> \"backend-app\";
\t\"frontend-app\" -> \"vpc\";
\t\"mysql\" ;
\t\"mysql\" -> \"vpc\";
\t\"redis\" ;
\t\"redis\" -> \"vpc\";
\t\"vpc\" ;
}
";
    assert_eq!(graph_dependencies().to_dot(true), expected);
}

#[test]
fn reduced_dot_drops_edges_implied_by_others() {
    let expected = "digraph {
\t\"backend-app\" ;
\t\"backend-app\" -> \"mysql\";
\t\"backend-app\" -> \"redis\";
\t\"frontend-app\" ;
\t\"frontend-app\" -> \"backend-app\";
\t\"mysql\" ;
\t\"mysql\" -> \"vpc\";
\t\"redis\" ;
\t\"redis\" -> \"vpc\";
\t\"vpc\" ;
}
";
    assert_eq!(graph_dependencies().to_dot(false), expected);
}

#[test]
fn dot_escapes_quotes_in_paths() {
    let g = graph(&[("we\"ird", &["plain"])]);
    assert!(g.to_dot(true).contains("\t\"we\\\"ird\" -> \"plain\";\n"));
}

#[test]
fn mermaid_is_reduced_and_uses_path_ordered_ids() {
    insta::assert_snapshot!(graph_dependencies().to_mermaid(), @r#"
    flowchart LR
      n0["backend-app"]
      n1["frontend-app"]
      n2["mysql"]
      n3["redis"]
      n4["vpc"]
      n0 --> n2
      n0 --> n3
      n1 --> n0
      n2 --> n4
      n3 --> n4
    "#);
}

#[test]
fn critical_path_is_the_longest_chain_with_smallest_paths_on_ties() {
    let g = graph_dependencies();
    let path: Vec<String> = g.critical_path().iter().map(ToString::to_string).collect();
    // mysql and redis tie; mysql is the smaller path.
    assert_eq!(path, ["vpc", "mysql", "backend-app", "frontend-app"]);
    let g = graph_fixture();
    let path: Vec<String> = g.critical_path().iter().map(ToString::to_string).collect();
    assert_eq!(
        path,
        [
            "eks",
            "services/eks-service-1",
            "services/eks-service-3",
            "services/eks-service-3-v2",
            "services/eks-service-3-v3"
        ]
    );
    let lone = graph(&[("solo", &[])]);
    assert_eq!(lone.critical_path(), [UnitPath::new("solo")]);
}
