//! `cascade::affected`: example tests for each reason, and properties checked on
//! random graphs against a naive, obviously-correct model.

use cascade::affected::{self, Affected, AffectedUnit, ReadIndex, Reason};
use cascade::discovery::{ReadSet, Unit, UnitKind};
use cascade::graph::Graph;
use cascade::unit::UnitPath;
use globset::{GlobBuilder, GlobMatcher};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

fn p(s: &str) -> UnitPath {
    UnitPath::new(s)
}

fn unit(path: &str) -> Unit {
    Unit {
        path: p(path),
        kind: UnitKind::Terragrunt,
        dependencies: Vec::new(),
        reads: ReadSet::default(),
        own_files: Vec::new(),
        unresolved: false,
        excluded: None,
        executor: None,
        stack: None,
        refused: None,
        sources: Vec::new(),
    }
}

fn deps(mut u: Unit, on: &[&str]) -> Unit {
    u.dependencies = on.iter().map(|d| p(d)).collect();
    u.dependencies.sort();
    u
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn graph(units: &[Unit]) -> Graph {
    Graph::new(
        units.iter().map(|u| u.path.clone()),
        units
            .iter()
            .flat_map(|u| u.dependencies.iter().map(|d| (u.path.clone(), d.clone()))),
    )
}

fn files(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Runs `affected` for the head `units` with no deletions.
fn run(units: &[Unit], changed: &[&str]) -> Affected {
    let index = ReadIndex::new(units);
    affected::affected(&index, units, &graph(units), &files(changed), &[], None)
}

fn reasons(a: &Affected) -> Vec<(String, String)> {
    a.units
        .iter()
        .map(|u| (u.path.to_string(), u.reason.to_string()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn waves(list: &[&[&str]]) -> Vec<Vec<UnitPath>> {
    list.iter()
        .map(|w| w.iter().map(|u| p(u)).collect())
        .collect()
}

// ---------------------------------------------------------------- examples

#[test]
fn own_file_changes_the_unit_and_its_dependents_follow() {
    let units = [
        unit("vpc"),
        deps(unit("app"), &["vpc"]),
        deps(unit("dns"), &["app"]),
        unit("other"),
    ];
    let a = run(&units, &["vpc/main.tf"]);
    assert_eq!(
        reasons(&a),
        pairs(&[
            ("app", "depends on vpc"),
            ("dns", "depends on app"),
            ("vpc", "changed vpc/main.tf")
        ])
    );
    assert_eq!(a.waves, waves(&[&["vpc"], &["app"], &["dns"]]));
    assert!(a.destroy_waves.is_empty());
}

#[test]
fn nested_units_own_their_files_and_the_root_owns_the_rest() {
    let units = [
        unit("."),
        unit("live"),
        unit("live/vpc"),
        unit("live/vpc/sub"),
    ];
    let check = |file: &str, owner: &str| {
        let a = run(&units, &[file]);
        assert_eq!(
            reasons(&a),
            pairs(&[(owner, &format!("changed {file}"))]),
            "{file}"
        );
    };
    check("live/vpc/main.tf", "live/vpc");
    check("live/vpc/sub/main.tf", "live/vpc/sub");
    check("live/vpc/sub/deeper/x.json", "live/vpc/sub");
    check("live/vpc2/main.tf", "live");
    check("live/x.hcl", "live");
    check("root.hcl", ".");
    check("modules/net/main.tf", ".");
}

#[test]
fn without_a_root_unit_files_outside_units_affect_nobody() {
    let units = [unit("live/vpc")];
    assert!(
        run(&units, &["README.md", "live/other.hcl"])
            .units
            .is_empty()
    );
}

#[test]
fn reads_a_file_a_directory_and_a_glob() {
    let mut by_file = unit("by-file");
    by_file.reads.files = set(&["root.hcl", "./env/dev.hcl"]);
    let mut by_dir = unit("by-dir");
    by_dir.reads.dirs = set(&["modules/net/"]);
    let mut by_glob = unit("by-glob");
    by_glob.reads.globs = set(&["config/*.yaml"]);
    let units = [by_file, by_dir, by_glob];

    assert_eq!(
        reasons(&run(&units, &["root.hcl"])),
        pairs(&[("by-file", "reads root.hcl")])
    );
    assert_eq!(
        reasons(&run(&units, &["env/dev.hcl"])),
        pairs(&[("by-file", "reads env/dev.hcl")])
    );
    assert_eq!(
        reasons(&run(&units, &["modules/net/x/y.tf"])),
        pairs(&[("by-dir", "reads modules/net/x/y.tf")])
    );
    assert!(run(&units, &["modules/network/main.tf"]).units.is_empty());
    // A submodule bump is one path named like the directory.
    assert_eq!(
        reasons(&run(&units, &["modules/net"])),
        pairs(&[("by-dir", "reads modules/net")])
    );
    assert_eq!(
        reasons(&run(&units, &["config/a.yaml"])),
        pairs(&[("by-glob", "reads config/a.yaml")])
    );
    // `*` stays inside one path component.
    assert!(run(&units, &["config/sub/a.yaml"]).units.is_empty());
}

#[test]
fn a_read_directory_of_dot_is_the_whole_repository() {
    let mut all = unit("all");
    all.reads.dirs = set(&["."]);
    assert_eq!(
        reasons(&run(&[all], &["x/y/z"])),
        pairs(&[("all", "reads x/y/z")])
    );
}

#[test]
fn the_smallest_file_names_the_reason() {
    let mut u = unit("u");
    u.reads.files = set(&["b.hcl", "a.hcl"]);
    let a = run(&[u], &["b.hcl", "u/z.tf", "a.hcl", "u/b.tf", "a.hcl"]);
    assert_eq!(reasons(&a), pairs(&[("u", "changed u/b.tf")]));
    assert_eq!(a.changed, files(&["a.hcl", "b.hcl", "u/b.tf", "u/z.tf"]));

    let mut u = unit("u");
    u.reads.files = set(&["b.hcl", "a.hcl"]);
    assert_eq!(
        reasons(&run(&[u], &["b.hcl", "a.hcl"])),
        pairs(&[("u", "reads a.hcl")])
    );
}

#[test]
fn precedence_is_changed_then_reads_then_unresolved_then_depends_on() {
    let mut top = deps(unit("top"), &["base"]);
    top.reads.files = set(&["a.hcl"]);
    top.unresolved = true;
    let units = [unit("base"), top];
    assert_eq!(
        reasons(&run(&units, &["a.hcl", "base/x", "top/z"])),
        pairs(&[("base", "changed base/x"), ("top", "changed top/z")])
    );
    assert_eq!(
        reasons(&run(&units, &["a.hcl", "base/x"])),
        pairs(&[("base", "changed base/x"), ("top", "reads a.hcl")])
    );
    assert_eq!(
        reasons(&run(&units, &["base/x"])),
        pairs(&[("base", "changed base/x"), ("top", "unresolved")])
    );
}

#[test]
fn unresolved_units_are_affected_by_any_change_but_not_by_none() {
    let mut u = unit("mystery");
    u.unresolved = true;
    let units = [u, deps(unit("after"), &["mystery"])];
    assert_eq!(
        reasons(&run(&units, &["anything/at/all"])),
        pairs(&[("after", "depends on mystery"), ("mystery", "unresolved")])
    );
    assert!(run(&units, &[]).units.is_empty());
}

#[test]
fn an_uncompilable_glob_makes_its_unit_unresolved() {
    let mut u = unit("u");
    u.reads.globs = set(&["config/[oops"]);
    assert_eq!(
        reasons(&run(&[u], &["elsewhere.txt"])),
        pairs(&[("u", "unresolved")])
    );
}

#[test]
fn excluded_units_are_never_affected_and_do_not_propagate() {
    let mut gate = deps(unit("gate"), &["base"]);
    gate.excluded = Some("exclude block".into());
    gate.reads.files = set(&["shared.hcl"]);
    gate.unresolved = true;
    let units = [
        unit("base"),
        gate,
        deps(unit("behind"), &["gate"]),
        deps(unit("beside"), &["base"]),
        unit("gate/nested"),
    ];
    assert_eq!(
        reasons(&run(&units, &["base/main.tf", "shared.hcl", "gate/x.tf"])),
        pairs(&[
            ("base", "changed base/main.tf"),
            ("beside", "depends on base")
        ])
    );
    // A file in the excluded unit's directory belongs to it, not to some parent.
    let mut with_root = units.to_vec();
    with_root.push(unit("."));
    assert_eq!(
        reasons(&run(&with_root, &["gate/x.tf"])),
        Vec::<(String, String)>::new()
    );
    // A nested unit inside an excluded one is still its own unit.
    assert_eq!(
        reasons(&run(&units, &["gate/nested/a"])),
        pairs(&[("gate/nested", "changed gate/nested/a")])
    );
}

#[test]
fn depends_on_names_the_smallest_affected_dependency() {
    let units = [
        unit("a"),
        unit("b"),
        unit("c"),
        deps(unit("d"), &["a", "b", "c"]),
        deps(unit("e"), &["d"]),
    ];
    assert_eq!(
        reasons(&run(&units, &["c/x", "b/x"])),
        pairs(&[
            ("b", "changed b/x"),
            ("c", "changed c/x"),
            ("d", "depends on b"),
            ("e", "depends on d")
        ])
    );
    assert_eq!(
        run(&units, &["c/x", "b/x"]).waves,
        waves(&[&["b", "c"], &["d"], &["e"]])
    );
}

#[test]
fn deleted_units_are_destroyed_dependents_first_from_the_base_graph() {
    let base = [
        unit("net"),
        deps(unit("db"), &["net"]),
        deps(unit("app"), &["db", "net"]),
        deps(unit("keep"), &["net"]),
    ];
    let mut keep = deps(unit("keep"), &["net"]);
    keep.reads.files = set(&["versions.hcl"]);
    let head = [unit("net"), keep];
    let deleted = affected::deleted_units(&base, &head);
    assert_eq!(deleted, vec![p("app"), p("db")]);

    let index = ReadIndex::new(&head);
    let changed = files(&["app/terragrunt.hcl", "db/terragrunt.hcl", "versions.hcl"]);
    let base_graph = graph(&base);
    let a = affected::affected(
        &index,
        &head,
        &graph(&head),
        &changed,
        &deleted,
        Some(&base_graph),
    );
    assert_eq!(
        reasons(&a),
        pairs(&[
            ("app", "deleted"),
            ("db", "deleted"),
            ("keep", "reads versions.hcl")
        ])
    );
    assert_eq!(a.waves, waves(&[&["keep"]]));
    assert_eq!(a.destroy_waves, waves(&[&["app"], &["db"]]));

    // Without a base graph the order is unknown: one wave.
    let a = affected::affected(&index, &head, &graph(&head), &changed, &deleted, None);
    assert_eq!(a.destroy_waves, waves(&[&["app", "db"]]));
    // A deleted unit the base graph does not know is still destroyed.
    let extra = [p("app"), p("db"), p("ghost")];
    let a = affected::affected(
        &index,
        &head,
        &graph(&head),
        &changed,
        &extra,
        Some(&base_graph),
    );
    assert_eq!(a.destroy_waves, waves(&[&["app", "ghost"], &["db"]]));
}

#[test]
fn deleted_units_compares_paths() {
    assert_eq!(
        affected::deleted_units(&[unit("a"), unit("b")], &[unit("b"), unit("c")]),
        vec![p("a")]
    );
    assert!(affected::deleted_units(&[], &[unit("x")]).is_empty());
}

#[test]
fn units_reading_answers_for_one_file() {
    let mut reader = unit("reader");
    reader.reads.globs = set(&["**/*.hcl"]);
    let mut mystery = unit("mystery");
    mystery.unresolved = true;
    let mut off = unit("off");
    off.excluded = Some("skip".into());
    off.reads.files = set(&["live/root.hcl"]);
    let index = ReadIndex::new(&[unit("live"), reader, mystery, off]);
    assert_eq!(
        index.units_reading("live/root.hcl"),
        vec![
            (p("live"), Reason::Changed("live/root.hcl".into())),
            (p("mystery"), Reason::Unresolved),
            (p("reader"), Reason::Reads("live/root.hcl".into())),
        ]
    );
}

#[test]
fn reasons_print_and_serialize_as_sentences() {
    let a = AffectedUnit {
        path: p("live/app"),
        reason: Reason::DependsOn(p("live/vpc")),
    };
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"path":"live/app","reason":"depends on live/vpc"}"#
    );
    let all = [
        (Reason::Changed("a/b.tf".into()), "changed a/b.tf"),
        (Reason::Reads("root.hcl".into()), "reads root.hcl"),
        (Reason::DependsOn(p("x")), "depends on x"),
        (Reason::Deleted, "deleted"),
        (Reason::Unresolved, "unresolved"),
    ];
    for (reason, text) in all {
        assert_eq!(reason.to_string(), text);
        assert_eq!(
            serde_json::to_value(&reason).unwrap(),
            serde_json::json!(text)
        );
    }
    let a = run(&[unit("u")], &["u/x"]);
    assert_eq!(a.reason(&p("u")), Some(&Reason::Changed("u/x".into())));
    assert_eq!(a.reason(&p("v")), None);
}

/// 10,000 units in 100 stacks of 100 (each depending on the one before), each
/// reading a shared file, a module directory and a glob; 1,000 changed files.
#[test]
fn a_thousand_files_on_ten_thousand_units() {
    let mut units = Vec::new();
    for s in 0..100 {
        for i in 0..100 {
            let mut u = unit(&format!("live/s{s:03}/u{i:03}"));
            if i > 0 {
                u.dependencies = vec![p(&format!("live/s{s:03}/u{:03}", i - 1))];
            }
            u.reads.files = set(&[&format!("live/s{s:03}/env.hcl"), "root.hcl"]);
            u.reads.dirs = set(&[&format!("modules/m{:03}", (s * 100 + i) % 500)]);
            u.reads.globs = set(&[&format!("config/s{s:03}/*.yaml")]);
            units.push(u);
        }
    }
    let head_graph = graph(&units);
    let index = ReadIndex::new(&units);
    // Touch the last unit of every stack, so only those 100 are affected, plus
    // files nobody reads: the cost is in the lookups, not in the result.
    let changed: Vec<String> = (0..1000)
        .map(|n| match n % 10 {
            0 => format!("live/s{:03}/u099/main.tf", n / 10),
            _ => format!("docs/page{n}/readme.md"),
        })
        .collect();
    // Speed is measured by `cargo bench --bench discovery`, not here; this pins the result.
    let timed =
        |changed: &[String]| affected::affected(&index, &units, &head_graph, changed, &[], None);
    let few = timed(&changed);
    assert_eq!(few.units.len(), 100);
    assert_eq!(few.waves.len(), 1);
    // Worst case: a file every unit reads, so all 10,000 are affected and waved.
    let mut everything = changed.clone();
    everything[1] = "root.hcl".to_string();
    let all = timed(&everything);
    assert_eq!(all.units.len(), 10_000);
    assert_eq!(all.waves.len(), 100);
}

// ---------------------------------------------------------------- properties

/// Directories units may live in; nesting is deliberate.
const DIRS: &[&str] = &[
    ".", "a", "a/b", "a/b/c", "a/d", "b", "b/e", "m", "m/n", "m/n/o",
];
const NAMES: &[&str] = &["terragrunt.hcl", "x.tf", "v.yaml"];
const GLOBS: &[&str] = &[
    "**/*.tf",
    "a/*.hcl",
    "m/**",
    "*.yaml",
    "b/*/x.tf",
    "a/b/c/v.yaml",
];

fn file_pool() -> Vec<String> {
    DIRS.iter()
        .flat_map(|d| {
            NAMES.iter().map(move |n| {
                if *d == "." {
                    n.to_string()
                } else {
                    format!("{d}/{n}")
                }
            })
        })
        .collect()
}

#[derive(Clone, Debug)]
struct Case {
    units: Vec<Unit>,
    changed: Vec<String>,
}

fn case() -> impl Strategy<Value = Case> {
    let pool = file_pool();
    let n_files = pool.len();
    // Each directory is a unit or not; per unit: edges to earlier units (a DAG),
    // read files, read dirs, globs, and the unresolved/excluded flags.
    let per_unit = (
        proptest::collection::vec(any::<bool>(), DIRS.len()),
        proptest::collection::vec(proptest::bits::u16::masked(0x3ff), DIRS.len()),
        proptest::collection::vec(
            proptest::collection::btree_set(0..n_files, 0..3),
            DIRS.len(),
        ),
        proptest::collection::vec(
            proptest::collection::btree_set(0..DIRS.len(), 0..2),
            DIRS.len(),
        ),
        proptest::collection::vec(
            proptest::collection::btree_set(0..GLOBS.len(), 0..2),
            DIRS.len(),
        ),
        proptest::collection::vec(0u8..20, DIRS.len()),
        proptest::collection::vec(0u8..20, DIRS.len()),
    );
    let changed = proptest::collection::vec(0..n_files, 0..6);
    (per_unit, changed).prop_map(
        move |((present, edges, rfiles, rdirs, rglobs, unres, excl), changed)| {
            let mut units = Vec::new();
            for i in 0..DIRS.len() {
                if !present[i] {
                    continue;
                }
                let mut u = unit(DIRS[i]);
                u.dependencies = (0..i)
                    .filter(|&j| present[j] && edges[i] & (1 << j) != 0)
                    .map(|j| p(DIRS[j]))
                    .collect();
                u.dependencies.sort();
                u.reads.files = rfiles[i].iter().map(|&f| pool[f].clone()).collect();
                u.reads.dirs = rdirs[i].iter().map(|&d| DIRS[d].to_string()).collect();
                u.reads.globs = rglobs[i].iter().map(|&g| GLOBS[g].to_string()).collect();
                u.unresolved = unres[i] == 0;
                u.excluded = (excl[i] < 3).then(|| "excluded".to_string());
                units.push(u);
            }
            units.sort_by(|a, b| a.path.cmp(&b.path));
            Case {
                units,
                changed: changed.into_iter().map(|f| pool[f].clone()).collect(),
            }
        },
    )
}

/// Whether `unit` owns `file`: it contains it and no deeper unit does.
fn owns(units: &[Unit], unit: &Unit, file: &str) -> bool {
    let depth = |u: &Unit| {
        if u.path.as_str() == "." {
            0
        } else {
            1 + u.path.as_str().matches('/').count()
        }
    };
    unit.path.contains_file(file)
        && !units
            .iter()
            .any(|o| o.path.contains_file(file) && depth(o) > depth(unit))
}

fn reads(unit: &Unit, file: &str) -> bool {
    unit.reads.files.contains(file)
        || unit
            .reads
            .dirs
            .iter()
            .any(|d| d == "." || file == d || file.starts_with(&format!("{d}/")))
        || unit
            .reads
            .globs
            .iter()
            .any(|g| MATCHERS[g.as_str()].is_match(file))
}

/// One matcher per glob, each compiled on its own (the index uses one `GlobSet`).
static MATCHERS: LazyLock<HashMap<&'static str, GlobMatcher>> = LazyLock::new(|| {
    GLOBS
        .iter()
        .map(|g| {
            (
                *g,
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .unwrap()
                    .compile_matcher(),
            )
        })
        .collect()
});

/// The naive model: every unit against every file, then a fixed point over edges.
fn model(units: &[Unit], changed: &[String]) -> BTreeMap<UnitPath, Reason> {
    let mut changed = changed.to_vec();
    changed.sort();
    changed.dedup();
    let mut out = BTreeMap::new();
    for u in units.iter().filter(|u| u.excluded.is_none()) {
        let own = changed
            .iter()
            .find(|f| owns(units, u, f))
            .map(|f| Reason::Changed(f.clone()));
        let read = changed
            .iter()
            .find(|f| reads(u, f))
            .map(|f| Reason::Reads(f.clone()));
        let unresolved = (u.unresolved && !changed.is_empty()).then_some(Reason::Unresolved);
        if let Some(r) = own.or(read).or(unresolved) {
            out.insert(u.path.clone(), r);
        }
    }
    loop {
        let mut grew = false;
        for u in units.iter().filter(|u| u.excluded.is_none()) {
            if out.contains_key(&u.path) {
                continue;
            }
            if let Some(d) = u.dependencies.iter().find(|d| out.contains_key(*d)) {
                out.insert(u.path.clone(), Reason::DependsOn(d.clone()));
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    // The smallest affected dependency, now that the set is final.
    for u in units {
        if let Some(Reason::DependsOn(_)) = out.get(&u.path) {
            let via = u
                .dependencies
                .iter()
                .find(|d| out.contains_key(*d))
                .unwrap()
                .clone();
            out.insert(u.path.clone(), Reason::DependsOn(via));
        }
    }
    out
}

proptest! {
    // No regression files: the failing case prints in full, and tests/ stays clean.
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn affected_matches_the_naive_model(case in case()) {
        let Case { units, changed } = case;
        let a = run_owned(&units, &changed);
        let got: BTreeMap<UnitPath, Reason> = a.units.iter().map(|u| (u.path.clone(), u.reason.clone())).collect();
        let by_path: BTreeMap<&UnitPath, &Unit> = units.iter().map(|u| (&u.path, u)).collect();

        // Every unit whose own directory or read set holds a changed file is in.
        for u in units.iter().filter(|u| u.excluded.is_none()) {
            if changed.iter().any(|f| owns(&units, u, f) || reads(u, f)) {
                prop_assert!(got.contains_key(&u.path), "{} missing", u.path);
            }
        }
        // Closed under dependents, except through excluded units.
        for u in units.iter().filter(|u| u.excluded.is_none()) {
            if u.dependencies.iter().any(|d| got.contains_key(d)) {
                prop_assert!(got.contains_key(&u.path), "{} not closed", u.path);
            }
        }
        // Nothing unrelated: every reason checks out.
        for (path, reason) in &got {
            let u = by_path[path];
            prop_assert!(u.excluded.is_none(), "{path} is excluded");
            match reason {
                Reason::Changed(f) => prop_assert!(changed.contains(f) && owns(&units, u, f)),
                Reason::Reads(f) => prop_assert!(changed.contains(f) && reads(u, f)),
                Reason::Unresolved => prop_assert!(u.unresolved),
                Reason::DependsOn(d) => prop_assert!(u.dependencies.contains(d) && got.contains_key(d)),
                Reason::Deleted => prop_assert!(false, "nothing was deleted"),
            }
        }
        // And exactly the model, reasons included.
        prop_assert_eq!(&got, &model(&units, &changed));
        // Waves hold every affected unit once, dependencies first.
        let in_waves: Vec<&UnitPath> = a.waves.iter().flatten().collect();
        prop_assert_eq!(in_waves.len(), got.len());
        let wave_of: BTreeMap<&UnitPath, usize> =
            a.waves.iter().enumerate().flat_map(|(i, w)| w.iter().map(move |u| (u, i))).collect();
        for (u, &w) in &wave_of {
            for d in &by_path[*u].dependencies {
                if let Some(&dw) = wave_of.get(d) {
                    prop_assert!(dw < w);
                }
            }
        }
    }

    #[test]
    fn units_reading_agrees_with_affected_for_one_file(case in case()) {
        let index = ReadIndex::new(&case.units);
        for file in file_pool() {
            let direct: BTreeMap<UnitPath, Reason> = index.units_reading(&file).into_iter().collect();
            let mut want = model(&case.units, std::slice::from_ref(&file));
            want.retain(|_, r| !matches!(r, Reason::DependsOn(_)));
            prop_assert_eq!(direct, want);
        }
    }
}

fn run_owned(units: &[Unit], changed: &[String]) -> Affected {
    let index = ReadIndex::new(units);
    affected::affected(&index, units, &graph(units), changed, &[], None)
}
