//! Writes the synthetic Terragrunt tree the discovery benchmark uses, so it can
//! be inspected or fed to `cascade` by hand:
//!
//! ```text
//! cargo run --release --example gen_tree -- <dir> [units=10000] [seed=1]
//! ```

#[path = "../benches/support/tree.rs"]
#[allow(dead_code)]
mod tree;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_tree <dir> [units=10000] [seed=1]";
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let number = |i: usize, default: u64| -> Result<u64, String> {
        args.get(i).map_or(Ok(default), |s| {
            s.parse().map_err(|_| format!("not a number: {s}\n{usage}"))
        })
    };
    let (units, seed) = match (number(1, 10_000), number(2, 1)) {
        (Ok(units), Ok(seed)) => (units as usize, seed),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        eprintln!(
            "{} exists and is not empty; give a new or empty directory",
            dir.display()
        );
        return ExitCode::from(2);
    }

    let started = Instant::now();
    let stats = tree::generate(&dir, units, seed);
    println!(
        "{}: {} units, {} edges, {} files, {} bytes ({:.2} MiB) in {:.2?}",
        dir.display(),
        stats.units,
        stats.edges,
        stats.files,
        stats.bytes,
        stats.bytes as f64 / (1024.0 * 1024.0),
        started.elapsed()
    );
    ExitCode::SUCCESS
}
