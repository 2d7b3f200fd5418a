//! Replays every committed fuzz input through the function its fuzz target runs, under
//! stable `cargo test`: the corpora (`fuzz/corpus/<target>/`) and the crashes found and
//! fixed (`fuzz/regressions/<target>/`) must pass; a crash that comes back fails here.
//!
//! Crashes found in code owned elsewhere and not fixed yet are kept apart, in
//! `fuzz/regressions/terragrunt/` (replayed through `hcl_discover`) and
//! `fuzz/regressions/event/` (through `webhook`), each listed with its symptom in that
//! directory's README.md. `known_open_crashes_are_fixed` replays them (ignored while any is
//! open), and `known_open_crashes_are_listed` keeps the lists true meanwhile.

#[path = "../fuzz/src/lib.rs"]
mod fuzz_targets;

use std::path::{Path, PathBuf};

type Target = fn(&[u8]);

/// The fuzz targets, by name: the directory names under `fuzz/corpus` and `fuzz/regressions`.
const TARGETS: &[(&str, Target)] = &[
    ("hcl_discover", fuzz_targets::hcl_discover),
    ("cascade_yaml", fuzz_targets::cascade_yaml),
    ("command", fuzz_targets::command),
    ("webhook", fuzz_targets::webhook),
    ("inert_markdown", fuzz_targets::inert_markdown),
];

/// Known-open crashes: the directory under `fuzz/regressions` and the target that replays it.
const KNOWN_OPEN: &[(&str, Target)] = &[
    ("terragrunt", fuzz_targets::hcl_discover),
    ("event", fuzz_targets::webhook),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Runs every input of `dir` through `target`; returns how many there were.
fn replay(dir: &Path, target: Target) -> usize {
    let inputs = fuzz_targets::inputs_in(dir);
    for input in &inputs {
        let data = std::fs::read(input).expect("a readable fuzz input");
        let name = input.strip_prefix(fuzz_dir()).unwrap_or(input).display();
        eprintln!("replaying fuzz/{name}");
        target(&data);
    }
    inputs.len()
}

#[test]
fn corpora_pass() {
    for (name, target) in TARGETS {
        let count = replay(&fuzz_dir().join("corpus").join(name), *target);
        assert!(count > 0, "fuzz/corpus/{name} holds no inputs");
    }
}

#[test]
fn fixed_crashes_stay_fixed() {
    cap_address_space();
    for (name, target) in TARGETS {
        replay(&fuzz_dir().join("regressions").join(name), *target);
    }
}

/// Some inputs once allocated without bound (`out-of-memory-doubling-string`): with
/// the address space capped the allocation fails and the test with it, instead of the
/// machine running out of memory. libFuzzer's own limit is 2 GiB of resident memory.
fn cap_address_space() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    const CAP: u64 = 4 << 30;
    let (soft, hard) = getrlimit(Resource::RLIMIT_AS).expect("read RLIMIT_AS");
    setrlimit(Resource::RLIMIT_AS, soft.min(CAP), hard).expect("lower RLIMIT_AS");
}

/// Empty while nothing is open; `#[ignore]` it while a found crash waits for its fix.
#[test]
fn known_open_crashes_are_fixed() {
    cap_address_space();
    for (dir, target) in KNOWN_OPEN {
        replay(&fuzz_dir().join("regressions").join(dir), *target);
    }
}

/// Every known-open input is named in its directory's README.md with its symptom, and every
/// name there is an input, so the list the lead reads is the list the ignored test replays.
#[test]
fn known_open_crashes_are_listed() {
    for (dir, _) in KNOWN_OPEN {
        let dir = fuzz_dir().join("regressions").join(dir);
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
        let listed: Vec<&str> = readme
            .lines()
            .filter_map(|line| line.strip_prefix("- `"))
            .filter_map(|line| line.split_once('`'))
            .map(|(name, _)| name)
            .collect();
        let present: Vec<String> = fuzz_targets::inputs_in(&dir)
            .iter()
            .map(|input| input.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let mut listed_sorted: Vec<&str> = listed.clone();
        listed_sorted.sort_unstable();
        let present_refs: Vec<&str> = present.iter().map(String::as_str).collect();
        assert_eq!(
            listed_sorted,
            present_refs,
            "{}/README.md must list every input there as \"- `NAME` — symptom\"",
            dir.display()
        );
        for name in &present {
            eprintln!("known-open: {}/{name}", dir.display());
        }
    }
}
