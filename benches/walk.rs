//! How close `cascade::walk` gets to the best possible makespan, next to walking wave by
//! wave.
//!
//! ```text
//! cargo bench --bench walk
//! ```
//!
//! Twenty random 200-unit DAGs (four densities, five seeds each; see `support/dags.rs`),
//! units lasting 1 to 60 seconds, pool 4. Every walk runs on a tokio runtime whose clock is
//! paused, so the makespan is exact virtual time and the run takes milliseconds. Each
//! makespan is divided by a lower bound no schedule can beat:
//! `max(critical path weighted by duration, total work / pool)`. The bound is not always
//! reachable, so a ratio above 1 is not necessarily lost time.
//!
//! Rows:
//! - `cascade::walk`: the real walk; a unit starts once its dependencies are done; among
//!   ready units, the one heading the longest chain of dependents (counted in units, as
//!   durations are unknown before a run) starts first, then the smallest path.
//! - `wave by wave`: written here; each Kahn wave runs with the same pool and the next waits
//!   for the whole wave, as a naive `run-all` does.
//! - `simulated, path order` / `simulated, longest path first`: an ideal event simulation of
//!   the greedy rule with two other priorities, for reference: plain path order (Terragrunt's
//!   rule), and the longest remaining path weighted by the true durations (which no real
//!   run knows in advance).

#[path = "support/dags.rs"]
mod dags;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cascade::unit::UnitPath;
use cascade::walk::{Outcome, UnitState, Walk, WalkUnit};
use dags::Dag;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

const UNITS: usize = 200;
const POOL: usize = 4;
const MEAN_DEPS: [u64; 4] = [0, 1, 2, 4];
const SEEDS_PER_DENSITY: u64 = 5;

fn main() {
    let mut rows: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut per_density = Vec::new();
    let mut matches_simulation = 0;
    let mut wall = Duration::ZERO;

    for mean_deps in MEAN_DEPS {
        let mut these: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for seed in 1..=SEEDS_PER_DENSITY {
            let dag = dags::generate(UNITS, mean_deps, seed * 1_000 + mean_deps);
            let work_per_worker = dag.work() as f64 / POOL as f64;
            let bound = (dag.critical_path() as f64).max(work_per_worker);

            let started = std::time::Instant::now();
            let walked = paused(real_walk(&dag, POOL));
            wall += started.elapsed();
            let waved = paused(wave_walk(&dag, POOL));
            let by_path = simulate(&dag, POOL, &path_rank(&dag));
            let longest = simulate(&dag, POOL, &longest_path_rank(&dag));
            if walked == by_path {
                matches_simulation += 1;
            }

            let ratio = |makespan: u64| makespan as f64 / bound;
            for (row, value) in [
                (WALK, ratio(walked)),
                (WAVES, ratio(waved)),
                (SIM_PATH, ratio(by_path)),
                (SIM_LONGEST, ratio(longest)),
                (CP_SHARE, dag.critical_path() as f64 / work_per_worker),
            ] {
                rows.entry(row).or_default().push(value);
                these.entry(row).or_default().push(value);
            }
        }
        per_density.push((mean_deps, these));
    }

    let runs = MEAN_DEPS.len() as u64 * SEEDS_PER_DENSITY;
    println!(
        "{runs} random DAGs of {UNITS} units, pool {POOL}, units 1-60 s (virtual time)\n\
         makespan / max(critical path, work / pool), mean and max:\n"
    );
    println!("{:<32} {:>6} {:>6}", "walker", "mean", "max");
    for name in [WALK, WAVES, SIM_PATH, SIM_LONGEST] {
        let r = &rows[name];
        println!("{name:<32} {:>6.3} {:>6.3}", mean(r), max(r));
    }

    println!("\nby density (cp/work: critical path / (work / pool), mean):\n");
    println!(
        "{:<10} {:>8} {:>13} {:>13} {:>13}",
        "mean deps", "cp/work", WALK, WAVES, "longest first"
    );
    for (mean_deps, r) in &per_density {
        let cell = |row: &str| format!("{:.3}/{:.3}", mean(&r[row]), max(&r[row]));
        println!(
            "{mean_deps:<10} {:>8.2} {:>13} {:>13} {:>13}",
            mean(&r[CP_SHARE]),
            cell(WALK),
            cell(WAVES),
            cell(SIM_LONGEST)
        );
    }
    println!(
        "\ncascade::walk matched the plain path-order simulation on {matches_simulation}/{runs} DAGs \
         (chain priority reorders the others); \
         {runs} real walks took {wall:.2?} of wall time ({:.1} us per unit)",
        wall.as_secs_f64() * 1e6 / (runs as f64 * UNITS as f64)
    );
}

const WALK: &str = "cascade::walk";
const WAVES: &str = "wave by wave";
const SIM_PATH: &str = "simulated, path order";
const SIM_LONGEST: &str = "simulated, longest path first";
const CP_SHARE: &str = "cp/work";

/// Runs a future on a fresh single-threaded runtime whose clock is paused: time jumps to the
/// next timer whenever every task waits, so sleeps cost nothing and durations are exact.
fn paused<T>(fut: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
        .block_on(fut)
}

/// The real walk over `dag`, each unit sleeping for its duration. Returns the makespan in
/// (virtual) seconds.
async fn real_walk(dag: &Dag, pool: usize) -> u64 {
    let units = (0..dag.len())
        .map(|i| WalkUnit {
            path: UnitPath::new(&dag.names[i]),
            deps: dag.deps[i]
                .iter()
                .map(|&d| UnitPath::new(&dag.names[d]))
                .collect(),
        })
        .collect();
    let secs: Arc<BTreeMap<UnitPath, u64>> = Arc::new(
        (0..dag.len())
            .map(|i| (UnitPath::new(&dag.names[i]), dag.secs[i]))
            .collect(),
    );
    let t0 = Instant::now();
    let states = Walk::new(units, pool)
        .run(
            CancellationToken::new(),
            move |path| {
                let secs = secs[&path];
                async move {
                    sleep(Duration::from_secs(secs)).await;
                    Outcome::Done
                }
            },
            |_| {},
        )
        .await;
    assert!(states.values().all(|s| *s == UnitState::Done));
    t0.elapsed().as_secs()
}

/// Kahn waves, one after the other: each wave runs with `pool` workers, smallest path
/// first, and the next wave starts when the whole wave is done.
async fn wave_walk(dag: &Dag, pool: usize) -> u64 {
    let t0 = Instant::now();
    for mut wave in dag.waves() {
        wave.sort_by(|&a, &b| dag.names[a].cmp(&dag.names[b]));
        let mut queue = wave.into_iter();
        let mut running = JoinSet::new();
        loop {
            while running.len() < pool
                && let Some(i) = queue.next()
            {
                running.spawn(sleep(Duration::from_secs(dag.secs[i])));
            }
            if running.join_next().await.is_none() {
                break;
            }
        }
    }
    t0.elapsed().as_secs()
}

/// Rank by path: the walk's own priority.
fn path_rank(dag: &Dag) -> Vec<u64> {
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by(|&a, &b| dag.names[a].cmp(&dag.names[b]));
    let mut rank = vec![0; dag.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r as u64;
    }
    rank
}

/// Rank by longest remaining path (longest first), ties by path.
fn longest_path_rank(dag: &Dag) -> Vec<u64> {
    let rest = dag.remaining_path();
    let by_path = path_rank(dag);
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(rest[i]), by_path[i]));
    let mut rank = vec![0; dag.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r as u64;
    }
    rank
}

/// An ideal greedy list schedule: whenever a worker is free, the ready unit with the
/// smallest `rank` starts; all units finishing at the same instant are accounted before
/// anyone starts. Returns the makespan in seconds.
fn simulate(dag: &Dag, pool: usize, rank: &[u64]) -> u64 {
    let mut dependents = vec![Vec::new(); dag.len()];
    let mut waiting = vec![0; dag.len()];
    for (i, deps) in dag.deps.iter().enumerate() {
        waiting[i] = deps.len();
        for &d in deps {
            dependents[d].push(i);
        }
    }
    let mut ready: BTreeSet<(u64, usize)> = (0..dag.len())
        .filter(|&i| waiting[i] == 0)
        .map(|i| (rank[i], i))
        .collect();
    let mut running: BTreeSet<(u64, usize)> = BTreeSet::new();
    let mut now = 0;
    loop {
        while running.len() < pool
            && let Some((_, i)) = ready.pop_first()
        {
            running.insert((now + dag.secs[i], i));
        }
        let Some(&(next, _)) = running.first() else {
            return now;
        };
        now = next;
        while let Some(&(end, i)) = running.first()
            && end == now
        {
            running.pop_first();
            for &d in &dependents[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    ready.insert((rank[d], d));
                }
            }
        }
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::MIN, f64::max)
}
