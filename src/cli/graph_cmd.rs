//! `cascade graph`: the whole graph, as text, JSON, DOT or mermaid.

use super::repo::{Scan, locate, scan};
use super::{GraphArgs, GraphFormat};
use crate::problem::Problem;
use crate::terragrunt::{Discovery, Unit, UnitKind};
use crate::unit::UnitPath;
use serde::{Serialize, Serializer};
use std::fmt::Write;
use std::io::Write as _;
use std::process::ExitCode;

#[derive(Serialize)]
struct GraphJson<'a> {
    units: UnitsJson<'a>,
    waves: Vec<Vec<UnitPath>>,
    waves_down: Vec<Vec<UnitPath>>,
    critical_path: Vec<UnitPath>,
    errors: &'a [Problem],
}

/// The units, each made as it is written: the JSON of a large repository is
/// streamed to stdout, never held whole (its read lists are most of it).
struct UnitsJson<'a>(&'a Discovery);

impl Serialize for UnitsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        serializer.collect_seq(d.units.iter().map(|u| UnitJson {
            path: &u.path,
            kind: u.kind,
            dependencies: &u.dependencies,
            reads: ReadsJson(d, u),
            unresolved: u.unresolved,
            excluded: u.excluded.as_deref(),
        }))
    }
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
}

pub fn run(args: &GraphArgs) -> anyhow::Result<ExitCode> {
    let (dir, root) = locate(&args.repo)?;
    let scan = scan(&dir, &root, &args.features);
    let out = match args.format {
        GraphFormat::Json => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            serde_json::to_writer_pretty(&mut stdout, &graph_json(&scan))?;
            writeln!(stdout)?;
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
    Ok(if scan.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn graph_json(scan: &Scan) -> GraphJson<'_> {
    GraphJson {
        units: UnitsJson(&scan.discovery),
        waves: scan.graph.waves(),
        waves_down: scan.graph.waves_down(),
        critical_path: scan.graph.critical_path(),
        errors: &scan.problems,
    }
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
        let _ = writeln!(out, "\nwave {} ({} units)", i + 1, wave.len());
        for unit in wave {
            let deps = scan.graph.dependencies(unit);
            if deps.is_empty() {
                let _ = writeln!(out, "  {unit}");
            } else {
                let list: Vec<&str> = deps.iter().map(|d| d.as_str()).collect();
                let _ = writeln!(out, "  {unit}  <- {}", list.join(", "));
            }
        }
    }
    let critical = scan.graph.critical_path();
    if critical.len() > 1 {
        let chain: Vec<&str> = critical.iter().map(UnitPath::as_str).collect();
        let _ = writeln!(
            out,
            "\ncritical path ({} units): {}",
            critical.len(),
            chain.join(" -> ")
        );
    }
    if !excluded.is_empty() {
        let _ = writeln!(out, "\nexcluded ({}):", excluded.len());
        for u in excluded {
            let _ = writeln!(
                out,
                "  {}: {}",
                u.path,
                u.excluded.as_deref().unwrap_or_default()
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
        let _ = writeln!(out, "  {problem}");
    }
}
