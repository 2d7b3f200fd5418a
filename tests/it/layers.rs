//! The import graph of `src/` between top-level modules: every module sits in a layer
//! (docs/ARCHITECTURE.md lists them), nothing imports from a layer above its own, and no
//! modules import each other in a circle. Read from the `crate::…` paths of the source, so
//! a new module, or an import that runs back up, fails here with the file that has it.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first. A module imports only from its own layer or those below.
const LAYERS: &[&[&str]] = &[
    &[
        "unit",
        "problem",
        "redact",
        "backoff",
        "clock",
        "event",
        "git",
        "git_process",
        "private_dir",
        "walk",
        "inert",
    ],
    &["graph", "config"],
    &["discovery", "terragrunt"],
    &["affected", "scan", "plan", "policy"],
    &["forge", "store", "catalog"],
    &["exec", "command"],
    &["engine"],
    &["comment", "drift", "workspace"],
    &["bot"],
    &["server"],
    &["cli"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules: `src/<name>.rs` and `src/<name>/`, but the crate roots.
fn modules() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_string();
            let is_module = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
            (is_module && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

/// Every `.rs` file of `module`, without unit-test files (tests may reach anywhere).
fn files_of(module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let single = src().join(format!("{module}.rs"));
    if single.is_file() {
        files.push(single);
    }
    let mut dirs = vec![src().join(module)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.map(|e| e.unwrap().path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let test_file = |p: &PathBuf| {
        let stem = p.file_stem().unwrap().to_string_lossy();
        stem == "tests" || stem.ends_with("_tests")
    };
    files.into_iter().filter(|p| !test_file(p)).collect()
}

/// `from → to → the files that import `to``, over the code before an inline `#[cfg(test)] mod … {`
/// (a `#[cfg(test)] mod tests;` line only names a file, which [`files_of`] leaves out).
fn imports(modules: &BTreeSet<String>) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let path = Regex::new(r"\bcrate::([a-z_]+)").unwrap();
    let tests = Regex::new(r"#\[cfg\(test\)\]\s*mod [a-z_]+\s*\{").unwrap();
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for from in modules {
        for file in files_of(from) {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = tests.split(&text).next().unwrap_or_default();
            let shown = file.strip_prefix(src()).unwrap().display().to_string();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for to in path.captures_iter(line).map(|c| c[1].to_string()) {
                    if &to != from && modules.contains(&to) {
                        let to_files = edges.entry(from.clone()).or_default();
                        to_files.entry(to).or_default().insert(shown.clone());
                    }
                }
            }
        }
    }
    edges
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

#[test]
fn every_module_has_a_layer() {
    let unplaced: Vec<String> = modules()
        .into_iter()
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "{unplaced:?} are in no layer: add each to LAYERS here and to the layer table of \
         docs/ARCHITECTURE.md, above everything it imports and below everything that imports it"
    );
}

#[test]
fn nothing_imports_from_a_layer_above() {
    let modules = modules();
    let mut upward = Vec::new();
    for (from, tos) in imports(&modules) {
        for (to, files) in tos {
            if let (Some(low), Some(high)) = (layer_of(&from), layer_of(&to))
                && high > low
            {
                upward.push(format!(
                    "{from} (layer {low}) imports {to} (layer {high}) in {files:?}"
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run back up: move what is imported down, or the importer up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let modules = modules();
    let edges = imports(&modules);
    // Kahn: a module leaves once everything it imports has left; what never leaves is in
    // a circle, or imports from one.
    let mut left: BTreeSet<String> = BTreeSet::new();
    loop {
        let ready: Vec<String> = modules
            .iter()
            .filter(|m| !left.contains(*m))
            .filter(|m| {
                edges
                    .get(*m)
                    .is_none_or(|tos| tos.keys().all(|to| left.contains(to)))
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            break;
        }
        left.extend(ready);
    }
    let stuck: Vec<String> = modules
        .iter()
        .filter(|m| !left.contains(*m))
        .map(|m| {
            let tos: Vec<&String> = edges[m].keys().filter(|to| !left.contains(*to)).collect();
            format!("{m} imports {tos:?}")
        })
        .collect();
    assert!(
        stuck.is_empty(),
        "modules that import each other, directly or around a circle:\n{}",
        stuck.join("\n")
    );
}
