//! `cascade graph`: the whole graph, as text, JSON, DOT or mermaid.

use super::repo::{Scan, locate, scan};
use super::{GraphArgs, GraphFormat};
use crate::discovery::{Discovery, SourceCommit, Unit, UnitKind};
use crate::inert::visible_line;
use crate::problem::Problem;
use crate::unit::UnitPath;
use rayon::prelude::*;
use serde::{Serialize, Serializer};
use std::fmt::Write;
use std::io::Write as _;
use std::process::ExitCode;

/// What `cascade graph --format json` writes after the units.
#[derive(Serialize)]
struct RestJson<'a> {
    waves: Vec<Vec<UnitPath>>,
    waves_down: Vec<Vec<UnitPath>>,
    critical_path: Vec<UnitPath>,
    errors: &'a [Problem],
}

/// What one unit reads, listed when written.
struct ReadsJson<'a>(&'a Discovery, &'a Unit);

impl Serialize for ReadsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.reads_of(self.1))
    }
}

#[derive(Serialize)]
struct UnitJson<'a> {
    path: &'a UnitPath,
    kind: UnitKind,
    dependencies: &'a [UnitPath],
    reads: ReadsJson<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unresolved: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    excluded: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<&'a str>,
    /// The remote sources a generated unit came from, each at its resolved commit.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    sources: &'a [SourceCommit],
}

fn unit_json<'a>(d: &'a Discovery, u: &'a Unit) -> UnitJson<'a> {
    UnitJson {
        path: &u.path,
        kind: u.kind,
        dependencies: &u.dependencies,
        reads: ReadsJson(d, u),
        unresolved: u.unresolved,
        excluded: u.excluded.as_deref(),
        refused: u.refused.as_deref(),
        sources: &u.sources,
    }
}

/// Units made into JSON at once: enough to keep both cores busy, few enough
/// that a large repository's JSON is never held whole (its read lists are
/// most of it).
const UNITS_PER_BATCH: usize = 1024;

/// Writes `{"units": [...], "waves": ..., ...}` exactly as
/// `serde_json::to_writer_pretty` writes it, with the units (nearly all of
/// the document) made in parallel, a batch at a time, while the waves are
/// worked out. A unit is an object two levels deep: each of its lines is
/// indented by four more spaces (a JSON string holds no raw newline, so
/// every newline is serde_json's own).
fn write_graph_json(
    out: &mut impl std::io::Write,
    scan: &Scan,
    batch_size: usize,
) -> std::io::Result<()> {
    let d = &scan.discovery;
    let mut rest = None;
    rayon::in_place_scope(|scope| -> std::io::Result<()> {
        scope.spawn(|_| {
            rest = Some(serde_json::to_vec_pretty(&RestJson {
                waves: scan.graph.waves(),
                waves_down: scan.graph.waves_down(),
                critical_path: scan.graph.critical_path(),
                errors: &scan.problems,
            }));
        });
        out.write_all(b"{\n  \"units\": [")?;
        for (batch, units) in d.units.chunks(batch_size).enumerate() {
            let made: Vec<Vec<u8>> = units
                .par_iter()
                .map(|u| serde_json::to_vec_pretty(&unit_json(d, u)).map(|json| indented(&json)))
                .collect::<Result<_, _>>()?;
            for (i, json) in made.iter().enumerate() {
                out.write_all(if batch == 0 && i == 0 {
                    b"\n    "
                } else {
                    b",\n    "
                })?;
                out.write_all(json)?;
            }
        }
        out.write_all(if d.units.is_empty() {
            b"],\n"
        } else {
            b"\n  ],\n"
        })
    })?;
    let rest = rest.expect("the scope ran the task")?;
    // `{\n  "waves": ...}`: its members continue the document's.
    out.write_all(rest.strip_prefix(b"{\n").unwrap_or(&rest))?;
    out.write_all(b"\n")
}

/// `json` with four spaces after each newline.
fn indented(json: &[u8]) -> Vec<u8> {
    let newlines = json.iter().filter(|&&b| b == b'\n').count();
    let mut out = Vec::with_capacity(json.len() + 4 * newlines);
    for line in json.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(line);
        if line.ends_with(b"\n") {
            out.extend_from_slice(b"    ");
        }
    }
    out
}

pub fn run(args: &GraphArgs) -> anyhow::Result<ExitCode> {
    let at = locate(args.repo.as_deref())?;
    let scan = scan(&at.dir, &at.root, &args.features, &mut Default::default())?;
    super::no_units::require_units(&scan, &at)?;
    let out = match args.format {
        GraphFormat::Json => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            write_graph_json(&mut stdout, &scan, UNITS_PER_BATCH)?;
            stdout.flush()?;
            String::new()
        }
        GraphFormat::Dot => scan.graph.to_dot(args.full),
        GraphFormat::Mermaid => scan.graph.to_mermaid(),
        GraphFormat::Text => graph_text(&scan),
    };
    print!("{out}");
    if matches!(args.format, GraphFormat::Dot | GraphFormat::Mermaid) {
        for problem in &scan.problems {
            eprintln!("{problem}");
        }
    }
    let code = if scan.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    // The process ends next: freeing every unit's read set one allocation at
    // a time would take longer than the kernel reclaiming the pages at once.
    std::mem::forget(scan);
    Ok(code)
}

/// The graph for people: counts, waves, the critical path, then problems with file:line.
fn graph_text(scan: &Scan) -> String {
    let d = &scan.discovery;
    let waves = scan.graph.waves();
    let mut out = String::new();
    let stacks = d.units.iter().filter(|u| u.kind == UnitKind::Stack).count();
    let excluded: Vec<_> = d.units.iter().filter(|u| u.excluded.is_some()).collect();
    let edges: usize = d.units.iter().map(|u| u.dependencies.len()).sum();
    let _ = write!(
        out,
        "{} units, {} edges, {} waves",
        d.units.len(),
        edges,
        waves.len()
    );
    if stacks > 0 {
        let _ = write!(out, " ({stacks} stacks)");
    }
    out.push('\n');
    for (i, wave) in waves.iter().enumerate() {
        let _ = writeln!(out, "\nwave {} ({})", i + 1, count(wave.len(), "unit"));
        for unit in wave {
            let deps = scan.graph.dependencies(unit);
            if deps.is_empty() {
                let _ = writeln!(out, "  {}", shown(unit));
            } else {
                let list: Vec<_> = deps.iter().map(|d| shown(d)).collect();
                let _ = writeln!(out, "  {}  <- {}", shown(unit), list.join(", "));
            }
        }
    }
    let critical = scan.graph.critical_path();
    if critical.len() > 1 {
        let chain: Vec<_> = critical.iter().map(shown).collect();
        let _ = writeln!(
            out,
            "\ncritical path ({}): {}",
            count(critical.len(), "unit"),
            chain.join(" -> ")
        );
    }
    if !excluded.is_empty() {
        let _ = writeln!(out, "\nexcluded ({}):", excluded.len());
        for u in excluded {
            let _ = writeln!(
                out,
                "  {}: {}",
                shown(&u.path),
                visible_line(u.excluded.as_deref().unwrap_or_default())
            );
        }
    }
    write_problems(&mut out, &scan.problems);
    out
}

pub fn write_problems(out: &mut String, problems: &[Problem]) {
    if problems.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n{} problem{}:",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for problem in problems {
        let _ = writeln!(out, "  {}", visible_line(&problem.to_string()));
    }
}

/// A unit's path for a terminal, on one line: a directory named with a newline or an
/// escape sequence (a pull request's branch can hold one) shows its control characters
/// as pictures rather than acting on the terminal.
pub fn shown(unit: &UnitPath) -> std::borrow::Cow<'_, str> {
    visible_line(unit.as_str())
}

/// `n` things, in the singular for one: "1 unit", "3 units".
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The document as one serde value writes it: what the parallel writer must match.
    #[derive(Serialize)]
    struct Whole<'a> {
        units: Vec<UnitJson<'a>>,
        #[serde(flatten)]
        rest: RestJson<'a>,
    }

    fn both(dir: &Path) -> (String, String) {
        let scan = crate::scan::scan(dir, dir, &[]);
        let mut parallel = Vec::new();
        write_graph_json(&mut parallel, &scan, UNITS_PER_BATCH).unwrap();
        // Batches of one and of three: every way units meet across a batch.
        for batch_size in [1, 3] {
            let mut small = Vec::new();
            write_graph_json(&mut small, &scan, batch_size).unwrap();
            assert_eq!(small, parallel, "batches of {batch_size}");
        }
        let d = &scan.discovery;
        let whole = Whole {
            units: d.units.iter().map(|u| unit_json(d, u)).collect(),
            rest: RestJson {
                waves: scan.graph.waves(),
                waves_down: scan.graph.waves_down(),
                critical_path: scan.graph.critical_path(),
                errors: &scan.problems,
            },
        };
        let mut expected = serde_json::to_string_pretty(&whole).unwrap();
        expected.push('\n');
        (String::from_utf8(parallel).unwrap(), expected)
    }

    #[test]
    fn parallel_json_is_byte_for_byte_the_pretty_document() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let (parallel, expected) = both(&root.join("examples/live"));
        assert!(expected.matches("\"path\"").count() > 3, "{expected}");
        assert_eq!(parallel, expected);
        // Units and problems, then no units at all (`"units": []`).
        let (parallel, expected) = both(&root.join("tests/fixtures/discovery/include-failures"));
        assert!(expected.contains("\"errors\": [\n    {"), "{expected}");
        assert_eq!(parallel, expected);
        let empty = tempfile::tempdir().unwrap();
        let (parallel, expected) = both(empty.path());
        assert!(expected.starts_with("{\n  \"units\": [],\n"), "{expected}");
        assert_eq!(parallel, expected);
    }
}
