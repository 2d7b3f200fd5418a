//! Unresolved units walked in the order a plan gives them (`cascade::engine::targets`), the
//! order an apply walks again: each runs alone, after every other unit but its known
//! dependents, which run after it. Units sleep a scripted time on tokio's paused clock, so
//! the times compared are exact; a walk of the known edges alone would overlap them.

use crate::support::fixture_tree::FixtureTree;

use cascade::affected::{ReadIndex, affected};
use cascade::discovery::{Discovery, ReadSet, Unit, UnitKind};
use cascade::engine::{PlanTarget, targets};
use cascade::unit::UnitPath;
use cascade::walk::{Outcome, Walk, WalkEvent, WalkUnit};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

/// The targets of a change to `file` in `discovery`.
fn targets_of(discovery: &Discovery, file: &str) -> Vec<PlanTarget> {
    let (graph, cycles) = discovery.graph();
    assert!(cycles.is_empty(), "{cycles:?}");
    let index = ReadIndex::new(&discovery.units);
    let result = affected(
        &index,
        &discovery.units,
        &graph,
        &[file.to_string()],
        &[],
        None,
    );
    targets(discovery, &graph, Path::new("/checkout"), &result, None)
}

/// When each unit started and finished, walking `targets` four at a time; each unit runs
/// `secs(path)` seconds.
async fn walk(targets: &[PlanTarget], secs: impl Fn(&str) -> u64) -> BTreeMap<String, (u64, u64)> {
    let t0 = Instant::now();
    let script: BTreeMap<UnitPath, u64> = targets
        .iter()
        .map(|t| (t.path.clone(), secs(t.path.as_str())))
        .collect();
    let units = targets
        .iter()
        .map(|t| WalkUnit {
            path: t.path.clone(),
            deps: t.deps.clone(),
        })
        .collect();
    let mut times: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let states = Walk::new(units, 4)
        .run(
            CancellationToken::new(),
            move |path: UnitPath| {
                let secs = script[&path];
                async move {
                    sleep(Duration::from_secs(secs)).await;
                    Outcome::Done
                }
            },
            |event| {
                let at = t0.elapsed().as_secs();
                match event {
                    WalkEvent::Started(p) => {
                        times.insert(p.to_string(), (at, 0));
                    }
                    WalkEvent::Finished(p, _) => {
                        times.get_mut(p.as_str()).expect("started").1 = at;
                    }
                }
            },
        )
        .await;
    assert!(
        states
            .values()
            .all(|s| *s == cascade::walk::UnitState::Done)
    );
    times
}

/// `unit` ran alone: every other unit finished before it started or started after it ended.
fn ran_alone(times: &BTreeMap<String, (u64, u64)>, unit: &str) {
    let (start, end) = times[unit];
    for (other, &(s, e)) in times.iter().filter(|(o, _)| *o != unit) {
        assert!(
            e <= start || s >= end,
            "{other} {s}..{e} ran beside {unit} {start}..{end}"
        );
    }
}

const QUEUE: &str = "live/.terragrunt-stack/queue";

#[tokio::test(start_paused = true)]
async fn an_unresolved_unit_starts_after_the_others_finished_and_its_dependents_follow() {
    // The stacks fixture: `queue` has a remote source, so it is unresolved; `other` is known
    // to depend on every unit of the stack, `queue` included.
    let repo = FixtureTree::new("stacks", "basic");
    let discovery = repo.discover("environments:\n  live: live\n  other: other\n");
    assert!(discovery.unit(&UnitPath::new(QUEUE)).unwrap().unresolved);
    let targets = targets_of(&discovery, "live/terragrunt.stack.hcl");
    assert!(targets.len() > 3, "{targets:?}");
    // The queue is quick and the others slow: on the known edges alone it would start first.
    let times = walk(&targets, |p| if p == QUEUE { 1 } else { 3 }).await;
    let (start, end) = times[QUEUE];
    for (unit, &(s, e)) in &times {
        if unit == "other" {
            assert!(s >= end, "other starts at {s}, the queue ends at {end}");
        } else if unit != QUEUE {
            assert!(
                e <= start,
                "{unit} ends at {e}, the queue starts at {start}"
            );
        }
    }
    ran_alone(&times, QUEUE);
}

fn unit(path: &str, dependencies: &[&str], unresolved: bool) -> Unit {
    Unit {
        path: UnitPath::new(path),
        kind: UnitKind::Terragrunt,
        dependencies: dependencies.iter().map(UnitPath::new).collect(),
        reads: ReadSet::default(),
        own_files: vec![format!("{path}/terragrunt.hcl")],
        unresolved,
        excluded: None,
        executor: None,
        stack: None,
        refused: None,
        sources: Vec::new(),
    }
}

#[tokio::test(start_paused = true)]
async fn unresolved_units_never_run_at_the_same_time() {
    // Gruntwork's live-stacks layout: every unit unresolved, no edge known, so the known
    // graph puts `db`, `role` and `service` side by side. `api` is known to need `service`.
    // Sorted by path, as discovery gives them.
    let units = vec![
        unit("api", &["service"], false),
        unit("db", &[], true),
        unit("role", &[], true),
        unit("service", &[], true),
    ];
    let discovery = Discovery {
        units,
        ..Discovery::default()
    };
    let targets = targets_of(&discovery, "db/terragrunt.hcl");
    let times = walk(&targets, |_| 2).await;
    for unit in ["db", "role", "service"] {
        ran_alone(&times, unit);
    }
    // Path order, and the known dependent after its dependency.
    let started = |u: &str| times[u].0;
    assert!(started("db") < started("role") && started("role") < started("service"));
    assert!(started("api") >= times["service"].1);
}
