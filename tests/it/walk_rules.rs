//! The rules of `cascade::walk`, pinned with a scripted fake job: each unit sleeps for a
//! scripted time and then ends the scripted way. Tokio's clock is paused, so time only moves
//! when every task is waiting, and scripted durations are exact virtual times.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use cascade::unit::UnitPath;
use cascade::walk::{Outcome, UnitState, Walk, WalkEvent, WalkUnit};
use proptest::prelude::*;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

/// How a scripted unit ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Done,
    Fail,
    Block,
    Panic,
}

/// One scripted unit: its path, its dependencies, how long it runs and how it ends.
#[derive(Clone, Debug)]
struct Job {
    path: UnitPath,
    deps: Vec<UnitPath>,
    secs: u64,
    end: End,
}

fn job(path: &str, deps: &[&str], secs: u64, end: End) -> Job {
    Job {
        path: UnitPath::new(path),
        deps: deps.iter().map(UnitPath::new).collect(),
        secs,
        end,
    }
}

/// What the walk's `observe` saw, owned, with the virtual time it saw it at.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Started(UnitPath, Duration),
    Finished(UnitPath, UnitState, Duration),
}

/// What one unit's worker did, as the fake job itself recorded it.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    start: Duration,
    end: Duration,
    /// Global order of job starts and ends, to compare events at the same virtual instant.
    start_seq: u64,
    end_seq: u64,
}

/// Everything a test may check about one walk.
#[derive(Debug)]
struct Record {
    states: BTreeMap<UnitPath, UnitState>,
    seen: Vec<Seen>,
    work: BTreeMap<UnitPath, Work>,
    /// Most units running at once, counted from `observe` (started and not finished).
    max_running: usize,
    /// Most jobs running at once, counted by the jobs themselves.
    max_working: usize,
    /// When the walk returned.
    took: Duration,
}

impl Record {
    fn state(&self, path: &str) -> &UnitState {
        &self.states[&UnitPath::new(path)]
    }

    fn started_at(&self, path: &str) -> Duration {
        self.work[&UnitPath::new(path)].start
    }

    fn started(&self) -> Vec<&str> {
        self.seen
            .iter()
            .filter_map(|s| match s {
                Seen::Started(p, _) => Some(p.as_str()),
                Seen::Finished(..) => None,
            })
            .collect()
    }

    fn finished_at(&self, path: &str) -> Duration {
        self.seen
            .iter()
            .find_map(|s| match s {
                Seen::Finished(p, _, at) if p.as_str() == path => Some(*at),
                _ => None,
            })
            .expect("the unit finished")
    }
}

/// A panic message the quiet hook swallows, so scripted panics do not flood test output.
const SCRIPTED_PANIC: &str = "scripted panic";

fn quiet_scripted_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&SCRIPTED_PANIC) {
                default(info);
            }
        }));
    });
}

/// Runs `jobs` through a real `Walk` with the scripted fake job. `cancel_at` fires the
/// cancellation token at that virtual time.
async fn walk(jobs: &[Job], pool: usize, cancel_at: Option<Duration>) -> Record {
    quiet_scripted_panics();
    let t0 = Instant::now();
    let script: Arc<BTreeMap<UnitPath, (u64, End)>> = Arc::new(
        jobs.iter()
            .map(|j| (j.path.clone(), (j.secs, j.end)))
            .collect(),
    );
    let work = Arc::new(Mutex::new((
        BTreeMap::<UnitPath, Work>::new(),
        0usize,
        0usize,
    )));
    let seq = Arc::new(AtomicU64::new(0));

    let cancel = CancellationToken::new();
    if let Some(at) = cancel_at {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            sleep(at).await;
            cancel.cancel();
        });
    }

    let fake_job = {
        let work = Arc::clone(&work);
        move |path: UnitPath| {
            let (secs, end) = script[&path];
            let work = Arc::clone(&work);
            let seq = Arc::clone(&seq);
            async move {
                {
                    let mut w = work.lock().unwrap();
                    let entry = w.0.entry(path.clone()).or_default();
                    entry.start = t0.elapsed();
                    entry.start_seq = seq.fetch_add(1, Ordering::SeqCst);
                    w.1 += 1;
                    w.2 = w.2.max(w.1);
                }
                sleep(Duration::from_secs(secs)).await;
                {
                    let mut w = work.lock().unwrap();
                    let entry = w.0.get_mut(&path).expect("started");
                    entry.end = t0.elapsed();
                    entry.end_seq = seq.fetch_add(1, Ordering::SeqCst);
                    w.1 -= 1;
                }
                match end {
                    End::Done => Outcome::Done,
                    End::Fail => Outcome::Failed(format!("{path} failed")),
                    End::Block => Outcome::Blocked("plan changed since approval".to_string()),
                    End::Panic => panic!("{}", SCRIPTED_PANIC),
                }
            }
        }
    };

    let mut seen = Vec::new();
    let mut running = 0usize;
    let mut max_running = 0usize;
    let units = jobs
        .iter()
        .map(|j| WalkUnit {
            path: j.path.clone(),
            deps: j.deps.clone(),
        })
        .collect();
    let states = Walk::new(units, pool)
        .run(cancel, fake_job, |event| match event {
            WalkEvent::Started(p) => {
                running += 1;
                max_running = max_running.max(running);
                seen.push(Seen::Started(p.clone(), t0.elapsed()));
            }
            WalkEvent::Finished(p, state) => {
                if seen
                    .iter()
                    .any(|s| matches!(s, Seen::Started(q, _) if q == p))
                {
                    running -= 1;
                }
                seen.push(Seen::Finished(p.clone(), state.clone(), t0.elapsed()));
            }
        })
        .await;
    let took = t0.elapsed();
    let (work, _, max_working) = Arc::try_unwrap(work)
        .expect("every worker has finished")
        .into_inner()
        .unwrap();
    Record {
        states,
        seen,
        work,
        max_running,
        max_working,
        took,
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn skipped(because: &str) -> UnitState {
    UnitState::Skipped {
        because: UnitPath::new(because),
    }
}

#[tokio::test(start_paused = true)]
async fn a_unit_starts_the_moment_its_dependencies_finish() {
    let r = walk(
        &[
            job("a", &[], 10, End::Done),
            job("b", &[], 1, End::Done),
            job("c", &["a"], 1, End::Done),
            job("d", &["b"], 1, End::Done),
        ],
        4,
        None,
    )
    .await;
    assert_eq!(r.started_at("a"), secs(0));
    assert_eq!(r.started_at("b"), secs(0));
    assert_eq!(
        r.started_at("d"),
        secs(1),
        "d waits for b only, not for a's wave"
    );
    assert_eq!(r.started_at("c"), secs(10));
    assert_eq!(r.took, secs(11));
    assert!(r.states.values().all(|s| *s == UnitState::Done));
}

#[tokio::test(start_paused = true)]
async fn a_unit_waits_for_its_slowest_dependency() {
    let r = walk(
        &[
            job("a", &[], 3, End::Done),
            job("b", &[], 7, End::Done),
            job("c", &["a", "b"], 1, End::Done),
        ],
        4,
        None,
    )
    .await;
    assert_eq!(r.started_at("c"), secs(7));
}

#[tokio::test(start_paused = true)]
async fn no_more_than_pool_units_run_at_once() {
    let jobs: Vec<Job> = (0..10)
        .map(|i| job(&format!("u{i}"), &[], 5, End::Done))
        .collect();
    let r = walk(&jobs, 3, None).await;
    assert_eq!(r.max_running, 3);
    assert_eq!(r.max_working, 3);
    // Four rounds of five seconds: 3 + 3 + 3 + 1.
    assert_eq!(r.took, secs(20));
}

#[tokio::test(start_paused = true)]
async fn a_freed_slot_is_taken_at_once() {
    let r = walk(
        &[
            job("a", &[], 2, End::Done),
            job("b", &[], 9, End::Done),
            job("c", &[], 1, End::Done),
        ],
        2,
        None,
    )
    .await;
    assert_eq!(r.started_at("c"), secs(2), "c takes a's slot, not b's");
}

#[tokio::test(start_paused = true)]
async fn ready_units_start_in_path_order() {
    let r = walk(
        &[
            job("live/prod/vpc", &[], 1, End::Done),
            job("live/dev/vpc", &[], 1, End::Done),
            job("live/dev/eks", &[], 1, End::Done),
            job("live/dev", &[], 1, End::Done),
        ],
        1,
        None,
    )
    .await;
    assert_eq!(
        r.started(),
        ["live/dev", "live/dev/eks", "live/dev/vpc", "live/prod/vpc"]
    );
}

#[tokio::test(start_paused = true)]
async fn among_ready_units_the_one_with_the_longest_chain_of_dependents_starts_first() {
    // z heads a chain of three; a and m have nothing waiting on them. Once z2 is the last of
    // its chain, it is one unit among equals and waits for its turn by path.
    let r = walk(
        &[
            job("a", &[], 1, End::Done),
            job("m", &[], 1, End::Done),
            job("z", &[], 1, End::Done),
            job("z1", &["z"], 1, End::Done),
            job("z2", &["z1"], 1, End::Done),
        ],
        1,
        None,
    )
    .await;
    assert_eq!(r.started(), ["z", "z1", "a", "m", "z2"]);
}

#[tokio::test(start_paused = true)]
async fn a_newly_ready_unit_with_a_smaller_path_goes_first() {
    let r = walk(
        &[
            job("b", &[], 1, End::Done),
            job("c", &[], 1, End::Done),
            job("d", &[], 1, End::Done),
            job("a", &["b"], 1, End::Done),
        ],
        1,
        None,
    )
    .await;
    assert_eq!(r.started(), ["b", "a", "c", "d"]);
}

#[tokio::test(start_paused = true)]
async fn units_freed_at_the_same_moment_compete_by_chain_then_path() {
    // Pool 2: b (which c and d wait on) starts before a; e waits for a slot. Both end at 1s;
    // b frees c and d, which take both slots ahead of e (same chain length, smaller paths):
    // the walk reads every report already in before it starts anyone (on the current-thread
    // runtime both are in when it wakes).
    let r = walk(
        &[
            job("a", &[], 1, End::Done),
            job("b", &[], 1, End::Done),
            job("c", &["b"], 1, End::Done),
            job("d", &["b"], 1, End::Done),
            job("e", &[], 1, End::Done),
        ],
        2,
        None,
    )
    .await;
    assert_eq!(r.started(), ["b", "a", "c", "d", "e"]);
    assert_eq!(r.started_at("c"), secs(1));
    assert_eq!(r.started_at("d"), secs(1));
    assert_eq!(r.started_at("e"), secs(2));
}

/// `net` ends badly at 2s while its sibling `dns` is still running; everything downstream of
/// `net` is skipped, `dns` and the unrelated `other` branch carry on.
fn failing_tree(end: End) -> Vec<Job> {
    vec![
        job("net", &[], 2, end),
        job("eks", &["net"], 1, End::Done),
        job("addons", &["eks"], 1, End::Done),
        job("apps", &["addons", "dns"], 1, End::Done),
        job("dns", &[], 5, End::Done),
        job("mail", &["dns"], 1, End::Done),
        job("other", &[], 1, End::Done),
        job("other/child", &["other"], 1, End::Done),
    ]
}

#[tokio::test(start_paused = true)]
async fn a_failure_skips_its_transitive_dependents_and_nothing_else() {
    let r = walk(&failing_tree(End::Fail), 4, None).await;
    assert_eq!(*r.state("net"), UnitState::Failed("net failed".into()));
    for downstream in ["eks", "addons", "apps"] {
        assert_eq!(*r.state(downstream), skipped("net"), "{downstream}");
        assert!(!r.work.contains_key(&UnitPath::new(downstream)));
        assert_eq!(
            r.finished_at(downstream),
            secs(2),
            "skipped when net failed"
        );
    }
    assert_eq!(
        *r.state("dns"),
        UnitState::Done,
        "a running sibling finishes"
    );
    assert_eq!(r.work[&UnitPath::new("dns")].end, secs(5));
    assert_eq!(*r.state("mail"), UnitState::Done);
    assert_eq!(r.started_at("mail"), secs(5));
    assert_eq!(*r.state("other"), UnitState::Done);
    assert_eq!(*r.state("other/child"), UnitState::Done);
    assert_eq!(r.took, secs(6));
}

#[tokio::test(start_paused = true)]
async fn a_blocked_unit_stops_its_dependents_like_a_failure() {
    let r = walk(&failing_tree(End::Block), 4, None).await;
    assert_eq!(
        *r.state("net"),
        UnitState::Blocked("plan changed since approval".into())
    );
    for downstream in ["eks", "addons", "apps"] {
        assert_eq!(*r.state(downstream), skipped("net"), "{downstream}");
    }
    for fine in ["dns", "mail", "other", "other/child"] {
        assert_eq!(*r.state(fine), UnitState::Done, "{fine}");
    }
}

#[tokio::test(start_paused = true)]
async fn skipped_names_the_first_failure_upstream() {
    // `b` fails at 3s; `c`, waiting on both, was already skipped because `a` failed at 1s.
    let r = walk(
        &[
            job("a", &[], 1, End::Fail),
            job("b", &[], 3, End::Fail),
            job("c", &["a", "b"], 1, End::Done),
            job("d", &["b"], 1, End::Done),
        ],
        4,
        None,
    )
    .await;
    assert_eq!(*r.state("c"), skipped("a"));
    assert_eq!(*r.state("d"), skipped("b"));
    let finishes = r
        .seen
        .iter()
        .filter(|s| matches!(s, Seen::Finished(p, ..) if p.as_str() == "c"))
        .count();
    assert_eq!(finishes, 1);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_worker_counts_as_failed() {
    let r = walk(
        &[
            job("a", &[], 1, End::Panic),
            job("b", &["a"], 1, End::Done),
            job("c", &[], 2, End::Done),
        ],
        2,
        None,
    )
    .await;
    assert_eq!(
        *r.state("a"),
        UnitState::Failed(format!("panicked: {SCRIPTED_PANIC}"))
    );
    assert_eq!(*r.state("b"), skipped("a"));
    assert_eq!(*r.state("c"), UnitState::Done);
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_panics_before_returning_a_future_counts_as_failed() {
    let walk = Walk::new(
        vec![WalkUnit {
            path: UnitPath::new("a"),
            deps: vec![],
        }],
        1,
    );
    quiet_scripted_panics();
    let states = walk
        .run(
            CancellationToken::new(),
            |_| -> std::future::Ready<Outcome> { panic!("{}", SCRIPTED_PANIC) },
            |_| {},
        )
        .await;
    assert_eq!(
        states[&UnitPath::new("a")],
        UnitState::Failed(format!("panicked: {SCRIPTED_PANIC}"))
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_lets_running_units_finish_and_starts_nothing_new() {
    // Pool 2. At 0s a and b start; at 5s a is done and c takes its slot. Cancelled at 7s:
    // b (until 20s) and c (until 10s) finish, d and e never start.
    let r = walk(
        &[
            job("a", &[], 5, End::Done),
            job("b", &[], 20, End::Done),
            job("c", &["a"], 5, End::Done),
            job("d", &[], 5, End::Done),
            job("e", &["c"], 5, End::Done),
        ],
        2,
        Some(secs(7)),
    )
    .await;
    assert_eq!(r.started(), ["a", "b", "c"]);
    assert_eq!(*r.state("b"), UnitState::Done);
    assert_eq!(*r.state("c"), UnitState::Done);
    assert_eq!(*r.state("d"), UnitState::Cancelled);
    assert_eq!(*r.state("e"), UnitState::Cancelled);
    assert_eq!(
        r.finished_at("d"),
        secs(7),
        "reported when the walk is cancelled"
    );
    assert_eq!(r.finished_at("e"), secs(7));
    assert_eq!(
        r.took,
        secs(20),
        "the walk returns when running units are done"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failure_after_cancelling_still_reports_its_own_state() {
    let r = walk(
        &[job("a", &[], 5, End::Fail), job("b", &["a"], 1, End::Done)],
        2,
        Some(secs(1)),
    )
    .await;
    assert_eq!(*r.state("a"), UnitState::Failed("a failed".into()));
    assert_eq!(
        *r.state("b"),
        UnitState::Cancelled,
        "already final when a failed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_walk_cancelled_before_it_starts_runs_nothing() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let mut started = 0;
    let states = Walk::new(
        vec![
            WalkUnit {
                path: UnitPath::new("a"),
                deps: vec![],
            },
            WalkUnit {
                path: UnitPath::new("b"),
                deps: vec![UnitPath::new("a")],
            },
        ],
        2,
    )
    .run(
        cancel,
        |_| async { Outcome::Done },
        |e| {
            if matches!(e, WalkEvent::Started(_)) {
                started += 1;
            }
        },
    )
    .await;
    assert_eq!(started, 0);
    assert!(states.values().all(|s| *s == UnitState::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn dependencies_outside_the_walk_are_ignored() {
    let r = walk(
        &[
            job(
                "live/app",
                &["live/vpc", "modules/not-walked"],
                1,
                End::Done,
            ),
            job("live/vpc", &[], 2, End::Done),
            job("live/dns", &["live/already-applied"], 1, End::Done),
        ],
        4,
        None,
    )
    .await;
    assert_eq!(r.started_at("live/dns"), secs(0));
    assert_eq!(r.started_at("live/app"), secs(2));
    assert!(r.states.values().all(|s| *s == UnitState::Done));
}

#[tokio::test(start_paused = true)]
async fn an_empty_walk_returns_at_once() {
    let r = walk(&[], 4, None).await;
    assert!(r.states.is_empty());
    assert!(r.seen.is_empty());
    assert_eq!(r.took, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn every_event_comes_in_order_from_start_to_finish() {
    let r = walk(
        &[
            job("a", &[], 1, End::Done),
            job("b", &["a"], 1, End::Fail),
            job("c", &["b"], 1, End::Done),
        ],
        1,
        None,
    )
    .await;
    let b_failed = UnitState::Failed("b failed".into());
    assert_eq!(
        r.seen,
        [
            Seen::Started(UnitPath::new("a"), secs(0)),
            Seen::Finished(UnitPath::new("a"), UnitState::Done, secs(1)),
            Seen::Started(UnitPath::new("b"), secs(1)),
            Seen::Finished(UnitPath::new("b"), b_failed, secs(2)),
            Seen::Finished(UnitPath::new("c"), skipped("b"), secs(2)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_rules_hold_on_a_multi_threaded_runtime() {
    // Real time here, so the jobs only yield: a layered DAG of 120 units, each layer
    // depending on the whole layer before, checked by the jobs themselves.
    let layers = 6;
    let width = 20;
    let name = |layer: usize, i: usize| UnitPath::new(format!("l{layer}/u{i:02}"));
    let mut units = Vec::new();
    for layer in 0..layers {
        for i in 0..width {
            let deps = match layer {
                0 => vec![],
                _ => (0..width).map(|j| name(layer - 1, j)).collect(),
            };
            units.push(WalkUnit {
                path: name(layer, i),
                deps,
            });
        }
    }
    let done = Arc::new(Mutex::new(BTreeSet::<UnitPath>::new()));
    let running = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let job = {
        let (done, running, most) = (done.clone(), running.clone(), most.clone());
        move |path: UnitPath| {
            let (done, running, most) = (done.clone(), running.clone(), most.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let layer: usize = path.as_str()[1..2].parse().unwrap();
                let ready = layer == 0 || {
                    let done = done.lock().unwrap();
                    (0..width).all(|j| done.contains(&name(layer - 1, j)))
                };
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                running.fetch_sub(1, Ordering::SeqCst);
                done.lock().unwrap().insert(path);
                if ready {
                    Outcome::Done
                } else {
                    Outcome::Failed("started before its dependencies".into())
                }
            }
        }
    };
    let states = tokio::spawn(Walk::new(units, 3).run(CancellationToken::new(), job, |_| {}))
        .await
        .unwrap();
    assert_eq!(states.len(), layers * width);
    assert!(states.values().all(|s| *s == UnitState::Done), "{states:?}");
    assert!(most.load(Ordering::SeqCst) <= 3);
}

// ---- Properties on random DAGs ---------------------------------------------------------

/// A random walk: unit `i` depends only on units `< i`, and its name is a permutation of
/// its index (`(i * k + c) mod 41`), so path order is unrelated to topological order.
#[derive(Clone, Debug)]
struct Case {
    jobs: Vec<Job>,
    pool: usize,
    cancel_at: Option<u64>,
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        16 => Just(End::Done),
        2 => Just(End::Fail),
        1 => Just(End::Block),
        1 => Just(End::Panic),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let unit = (
        prop::collection::vec(0usize..40, 0..4),
        any::<bool>(),
        0u64..6,
        end(),
    );
    (
        prop::collection::vec(unit, 0..=40),
        1usize..41,
        0usize..41,
        1usize..=5,
        prop::option::weighted(0.25, 0u64..30),
    )
        .prop_map(|(units, k, c, pool, cancel_at)| {
            let name = |i: usize| UnitPath::new(format!("u/{:02}", (i * k + c) % 41));
            let jobs = units
                .iter()
                .enumerate()
                .map(|(i, (picks, outside, secs, end))| {
                    let mut deps: Vec<UnitPath> = picks
                        .iter()
                        .filter(|_| i > 0)
                        .map(|&p| name(p % i))
                        .collect();
                    if *outside {
                        deps.push(UnitPath::new("outside/applied"));
                    }
                    Job {
                        path: name(i),
                        deps,
                        secs: *secs,
                        end: *end,
                    }
                })
                .collect();
            Case {
                jobs,
                pool,
                cancel_at,
            }
        })
}

fn run_case(case: &Case) -> Record {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(walk(&case.jobs, case.pool, case.cancel_at.map(secs)))
}

fn scripted_state(j: &Job) -> UnitState {
    match j.end {
        End::Done => UnitState::Done,
        End::Fail => UnitState::Failed(format!("{} failed", j.path)),
        End::Block => UnitState::Blocked("plan changed since approval".into()),
        End::Panic => UnitState::Failed(format!("panicked: {SCRIPTED_PANIC}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn walks_keep_their_rules(case in case()) {
        let r = run_case(&case);
        let jobs: BTreeMap<&UnitPath, &Job> = case.jobs.iter().map(|j| (&j.path, j)).collect();
        let in_walk = |d: &&UnitPath| jobs.contains_key(d);
        let position = |wanted: &dyn Fn(&Seen) -> bool| r.seen.iter().position(wanted);

        // Every unit gets exactly one final state, and one Finished event carrying it.
        let names: BTreeSet<&UnitPath> = jobs.keys().copied().collect();
        prop_assert_eq!(r.states.keys().collect::<BTreeSet<_>>(), names);
        for (path, state) in &r.states {
            let finished: Vec<&UnitState> = r.seen.iter().filter_map(|s| match s {
                Seen::Finished(p, st, _) if p == path => Some(st),
                _ => None,
            }).collect();
            prop_assert_eq!(finished, vec![state], "{}", path);
        }

        // Concurrency never exceeds the pool, as the walk or the jobs count it.
        prop_assert!(r.max_running <= case.pool);
        prop_assert!(r.max_working <= case.pool);

        for (path, job) in &jobs {
            let state = &r.states[*path];
            let started = r.work.get(*path);
            let deps: BTreeSet<&UnitPath> = job.deps.iter().filter(in_walk).collect();

            // A unit runs at most once, and ends with what its job scripted.
            match state {
                UnitState::Skipped { .. } | UnitState::Cancelled => {
                    prop_assert!(started.is_none(), "{} ran but ended {:?}", path, state)
                }
                _ => {
                    prop_assert!(started.is_some(), "{} never ran but ended {:?}", path, state);
                    prop_assert_eq!(state, &scripted_state(job));
                }
            }

            if let Some(work) = started {
                // No unit starts before all its dependencies finished: by the jobs' own
                // clock, and in the events the walk reported.
                let started_event = position(&|s| matches!(s, Seen::Started(p, _) if p == *path));
                for d in &deps {
                    prop_assert_eq!(&r.states[*d], &UnitState::Done, "{} ran after {}", path, d);
                    prop_assert!(r.work[*d].end_seq < work.start_seq, "{} overlapped {}", path, d);
                    prop_assert!(r.work[*d].end <= work.start);
                    let dep_finished =
                        position(&|s| matches!(s, Seen::Finished(p, ..) if p == *d));
                    prop_assert!(dep_finished < started_event);
                }
                if let Some(at) = case.cancel_at {
                    prop_assert!(work.start <= secs(at), "{} started after the cancel", path);
                }
            }

            // A Done unit's dependencies are all Done.
            if *state == UnitState::Done {
                for d in &deps {
                    prop_assert_eq!(&r.states[*d], &UnitState::Done);
                }
            }

            // A skipped unit has a failed or blocked transitive dependency, named in `because`.
            if let UnitState::Skipped { because } = state {
                prop_assert!(
                    matches!(r.states[because], UnitState::Failed(_) | UnitState::Blocked(_)),
                    "{} skipped because of {:?}", path, r.states[because]
                );
                prop_assert!(depends_on(&jobs, path, because), "{} does not wait on {}", path, because);
            }

            // Without a cancellation nothing is cancelled, and a unit whose dependencies
            // are all Done has run.
            if case.cancel_at.is_none() {
                prop_assert_ne!(state, &UnitState::Cancelled);
                if deps.iter().all(|d| r.states[*d] == UnitState::Done) {
                    prop_assert!(started.is_some(), "{} was ready but never ran", path);
                }
            }
        }
    }
}

/// True when `unit` waits, directly or not, on `upstream` inside the walk.
fn depends_on(jobs: &BTreeMap<&UnitPath, &Job>, unit: &UnitPath, upstream: &UnitPath) -> bool {
    let mut stack = vec![unit];
    let mut seen = BTreeSet::new();
    while let Some(u) = stack.pop() {
        for d in &jobs[u].deps {
            if d == upstream {
                return true;
            }
            if jobs.contains_key(d) && seen.insert(d) {
                stack.push(d);
            }
        }
    }
    false
}
