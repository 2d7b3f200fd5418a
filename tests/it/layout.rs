//! The shape of the test suite: one integration test binary (`tests/it/`) and the
//! binaries that must run alone. Cargo makes a binary of every `tests/<name>.rs`, and
//! runs no file of `tests/it/` that `main.rs` does not declare: both would happen
//! without a word, so they are checked here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Test binaries of their own, and why each must be one.
const ALONE: &[(&str, &str)] = &[(
    "fuzz_replay.rs",
    "caps its own address space (RLIMIT_AS), which would cap every other test's",
)];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The `.rs` files directly in `dir`, by name.
fn rust_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs"))
        .collect()
}

#[test]
fn no_other_file_is_a_test_binary_of_its_own() {
    let alone: BTreeSet<String> = ALONE.iter().map(|(f, _)| f.to_string()).collect();
    let extra: Vec<String> = rust_files(&tests_dir())
        .into_iter()
        .filter(|f| !alone.contains(f))
        .collect();
    assert!(
        extra.is_empty(),
        "{extra:?} would each link cascade into a test binary of their own: move each to \
         tests/it/ (`git mv`), declare it as `mod <name>;` in tests/it/main.rs and use the \
         helpers as `crate::support::…`; or, if it must run alone, list it in ALONE with why"
    );
}

#[test]
fn every_file_of_the_binary_is_declared_in_main() {
    let main = std::fs::read_to_string(tests_dir().join("it/main.rs")).unwrap();
    let declared: BTreeSet<String> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(|m| format!("{m}.rs"))
        .collect();
    let missing: Vec<String> = rust_files(&tests_dir().join("it"))
        .into_iter()
        .filter(|f| f != "main.rs" && !declared.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "{missing:?} in tests/it/ are not declared in tests/it/main.rs: cargo would not \
         run their tests; add `mod <name>;` for each"
    );
}
