//! Discovery at scale: how long `cascade::terragrunt::discover` takes on a
//! generated 10,000-unit tree, next to the floor of merely reading the same
//! files, and how long the affected set of a 1,000-file change takes. Then the
//! whole `cascade graph --format json` process on the same tree: wall time and
//! peak resident memory (from `wait4`), beside the cat floor, and beside an
//! older cascade binary when one is given (runs alternate between the two).
//!
//! ```text
//! cargo bench --bench discovery                       # 10,000 units
//! CASCADE_BENCH_UNITS=1400 cargo bench --bench discovery
//! CASCADE_BENCH_BASELINE=/path/to/old/cascade cargo bench --bench discovery
//! ```
//!
//! Each figure is the median of 7 runs after one warm-up run (peak memory:
//! the largest of the runs). The tree is written to a temporary directory (see
//! `support/tree.rs`), so the files are in the page cache: the figures measure
//! CPU work, not disk. The machine's load average is printed with them.
//!
//! The processes run first, while this benchmark is still small: Linux counts
//! the resident set a child had before `exec` (a copy of its parent's) in the
//! peak `wait4` reports, so a child spawned after the in-process discovery
//! would report this process's memory, not its own. The benchmark's own peak
//! when it spawns them is printed: no figure below it means anything.

#[path = "support/tree.rs"]
#[allow(dead_code)]
mod tree;

use cascade::affected::{ReadIndex, affected};
use cascade::config::RepoConfig;
use cascade::discovery::Discovery;
use cascade::graph::Graph;
use cascade::terragrunt::{DiscoverOptions, discover};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// The allocator the cascade binary uses, so in-process figures are comparable.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: usize = 7;
const SEED: u64 = 1;
const CHANGED_FILES: usize = 1_000;

fn main() {
    let units: usize = std::env::var("CASCADE_BENCH_UNITS")
        .ok()
        .map(|s| s.parse().expect("CASCADE_BENCH_UNITS must be a number"))
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().expect("temporary directory");
    let root = tmp.path().join("repo");

    let started = Instant::now();
    let stats = tree::generate(&root, units, SEED);
    eprintln!(
        "generated {} units, {} edges, {} files in {:.2?} under {}",
        stats.units,
        stats.edges,
        stats.files,
        started.elapsed(),
        root.display()
    );
    // Written back before anything is timed: the kernel flushing the fresh
    // tree would otherwise share the cores with whatever runs first.
    let synced = Instant::now();
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    eprintln!("synced in {:.2?}", synced.elapsed());

    // The whole process, as a user runs it (first: see the module header).
    let spawned_at_kib = own_peak_kib();
    let cascade = PathBuf::from(env!("CARGO_BIN_EXE_cascade"));
    let baseline = std::env::var_os("CASCADE_BENCH_BASELINE").map(PathBuf::from);
    let mut binaries = vec![("cascade graph --format json", cascade)];
    if let Some(old) = baseline {
        binaries.push(("baseline graph --format json", old));
    }
    let processes = process_figures(&binaries, &root);

    let opts = DiscoverOptions {
        dir: root.clone(),
        repo_root: root.clone(),
        config: RepoConfig::default(),
        env: BTreeMap::new(),
        features: BTreeMap::new(),
        deadline: None,
        sources: Default::default(),
    };
    let (discovery_ms, discovery) = median_ms(|| discover(&opts));

    let seq_ms = median_ms(|| read_all_sequential(&root)).0;
    let par_ms = median_ms(|| read_all_parallel(&root)).0;
    let sh_ms = median_ms(|| cat_with_shell(&root)).0;

    let (graph_ms, graph) = median_ms(|| graph_of(&discovery));
    let (index_ms, index) = median_ms(|| ReadIndex::new(&discovery.units));
    let changed = pick_changed_files(&root, CHANGED_FILES, SEED);
    let (affected_ms, result) =
        median_ms(|| affected(&index, &discovery.units, &graph, &changed, &[], None));

    let edges: usize = discovery.units.iter().map(|u| u.dependencies.len()).sum();
    let mib = stats.bytes as f64 / (1024.0 * 1024.0);
    let threads = rayon::current_num_threads();
    println!();
    println!(
        "discovery benchmark (median of {RUNS} runs after 1 warm-up; {threads} rayon threads)"
    );
    let units_found = discovery.units.len();
    row(
        "units (generated / discovered)",
        format!("{} / {units_found}", stats.units),
    );
    row(
        "edges (generated / discovered)",
        format!("{} / {edges}", stats.edges),
    );
    row("files", stats.files);
    row("MiB", format!("{mib:.2}"));
    row("discovery problems", discovery.problems.len());
    row("discover() ms", format!("{discovery_ms:.1}"));
    row(
        "cat floor ms: walk + std::fs::read, 1 thread",
        format!("{seq_ms:.1}"),
    );
    row(
        "cat floor ms: walk + std::fs::read, rayon",
        format!("{par_ms:.1}"),
    );
    row("cat floor ms: sh find | xargs cat", format!("{sh_ms:.1}"));
    row(
        "ratio discover / cat floor (1 thread)",
        format!("{:.1}", discovery_ms / seq_ms),
    );
    row(
        "ratio discover / cat floor (rayon)",
        format!("{:.1}", discovery_ms / par_ms),
    );
    row("Graph::new ms", format!("{graph_ms:.2}"));
    row("ReadIndex::new ms", format!("{index_ms:.2}"));
    row(
        &format!("affected() ms, {} changed files", changed.len()),
        format!("{affected_ms:.2}"),
    );
    row("affected units", result.units.len());
    row("affected waves", result.waves.len());

    row(
        "benchmark's own peak RSS MiB when spawning",
        format!("{:.1}", spawned_at_kib as f64 / 1024.0),
    );
    for (label, ms, peak_kib) in processes {
        row(&format!("{label}: wall ms"), format!("{ms:.1}"));
        row(
            &format!("{label}: peak RSS MiB"),
            format!("{:.1}", peak_kib as f64 / 1024.0),
        );
        row(
            &format!("{label}: / cat floor (rayon)"),
            format!("{:.1}", ms / par_ms),
        );
    }
    row("load average (1 / 5 / 15 min)", load_average());

    // Timing a wrong answer is meaningless: say so, after the figures.
    let mut wrong = Vec::new();
    if discovery.units.len() != stats.units {
        wrong.push(format!(
            "discovered {} units, generated {}",
            discovery.units.len(),
            stats.units
        ));
    }
    if edges != stats.edges {
        wrong.push(format!(
            "discovered {edges} edges, generated {}",
            stats.edges
        ));
    }
    if !discovery.problems.is_empty() {
        wrong.push(format!(
            "{} problems on a clean tree",
            discovery.problems.len()
        ));
    }
    if !wrong.is_empty() {
        for problem in discovery.problems.iter().take(5) {
            eprintln!("problem: {problem}");
        }
        eprintln!(
            "discovery is wrong on the generated tree: {}",
            wrong.join("; ")
        );
        std::process::exit(1);
    }
}

fn row(label: &str, value: impl std::fmt::Display) {
    println!("  {label:<44} {value:>12}");
}

/// Runs `f` once to warm up, then `RUNS` times; returns the median in
/// milliseconds and the last result.
fn median_ms<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut last = black_box(f());
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let value = black_box(f());
        times.push(started.elapsed());
        last = value;
    }
    times.sort_unstable();
    (times[RUNS / 2].as_secs_f64() * 1e3, last)
}

fn graph_of(discovery: &Discovery) -> Graph {
    Graph::new(
        discovery.units.iter().map(|u| u.path.clone()),
        discovery.units.iter().flat_map(|u| {
            u.dependencies
                .iter()
                .map(move |dep| (u.path.clone(), dep.clone()))
        }),
    )
}

/// Every regular file under `dir`, recursively, in directory order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

fn read_all_sequential(root: &Path) -> u64 {
    let mut files = Vec::new();
    walk(root, &mut files);
    files
        .iter()
        .map(|f| std::fs::read(f).expect("read").len() as u64)
        .sum()
}

fn read_all_parallel(root: &Path) -> u64 {
    let mut files = Vec::new();
    walk(root, &mut files);
    files
        .par_iter()
        .map(|f| std::fs::read(f).expect("read").len() as u64)
        .sum()
}

fn cat_with_shell(root: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg("find . -type f -print0 | xargs -0 cat > /dev/null")
        .current_dir(root)
        .status()
        .expect("run sh");
    assert!(status.success(), "find | xargs cat failed: {status}");
}

/// `count` existing files of the tree, repo-relative, chosen deterministically:
/// mostly unit `terragrunt.hcl` files, plus a few module files and `region.hcl`
/// files (each of which reaches hundreds of units), as a large PR would.
fn pick_changed_files(root: &Path, count: usize, seed: u64) -> Vec<String> {
    let mut files = Vec::new();
    walk(root, &mut files);
    let mut rel: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    rel.sort();
    let of = |pred: &dyn Fn(&str) -> bool| -> Vec<String> {
        rel.iter().filter(|f| pred(f)).cloned().collect()
    };
    let unit_files = of(&|f| f.ends_with("/terragrunt.hcl"));
    let module_files = of(&|f| f.starts_with("modules/"));
    let region_files = of(&|f| f.ends_with("/region.hcl"));

    let mut rng = tree::Rng::new(seed ^ 0xC4A5_CADE);
    let mut changed = Vec::with_capacity(count);
    changed.extend(sample(&mut rng, &module_files, 8));
    changed.extend(sample(&mut rng, &region_files, 2));
    let rest = count.saturating_sub(changed.len());
    changed.extend(sample(&mut rng, &unit_files, rest));
    changed.sort();
    changed
}

/// `n` distinct items of `from` (all of them when it is shorter): a partial
/// Fisher–Yates shuffle.
fn sample(rng: &mut tree::Rng, from: &[String], n: usize) -> Vec<String> {
    let mut pool: Vec<&String> = from.iter().collect();
    let n = n.min(pool.len());
    for i in 0..n {
        let j = i + rng.below(pool.len() - i);
        pool.swap(i, j);
    }
    pool[..n].iter().map(|s| (*s).clone()).collect()
}

/// Each binary's `graph --format json` on `root`: the median wall time in
/// milliseconds and the largest peak RSS in KiB, over `RUNS` runs after one
/// warm-up, the binaries taking turns so that load changes hit them alike.
fn process_figures(
    binaries: &[(&'static str, PathBuf)],
    root: &Path,
) -> Vec<(&'static str, f64, u64)> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    let mut peaks = vec![0u64; binaries.len()];
    for run in 0..=RUNS {
        for (i, (_, bin)) in binaries.iter().enumerate() {
            let (elapsed, peak) = run_graph(bin, root);
            if run > 0 {
                times[i].push(elapsed);
                peaks[i] = peaks[i].max(peak);
            }
        }
    }
    binaries
        .iter()
        .zip(times.iter_mut().zip(peaks))
        .map(|((label, _), (t, peak))| {
            t.sort_unstable();
            (*label, t[RUNS / 2].as_secs_f64() * 1e3, peak)
        })
        .collect()
}

/// Runs `bin graph --format json --repo root` (output discarded) and returns
/// its wall time and peak resident set in KiB, read from `wait4`'s usage.
// `wait4` reaps the child (std's `wait` cannot return its resource usage).
#[allow(clippy::zombie_processes)]
fn run_graph(bin: &Path, root: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let child = Command::new(bin)
        .args(["graph", "--format", "json", "--repo"])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data, zero is a valid value; wait4 fills it for
    // our own child, which nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} graph failed on the generated tree",
        bin.display()
    );
    // Linux reports ru_maxrss in KiB.
    (elapsed, usage.ru_maxrss as u64)
}

/// This process's peak resident set in KiB (`VmHWM`), 0 if unknown.
fn own_peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" / "))
        .unwrap_or_else(|_| "unknown".into())
}
