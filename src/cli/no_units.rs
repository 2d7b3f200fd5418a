//! The error for a directory in which discovery found no unit. `cascade graph`, `affected`,
//! `plan` and `drift` refuse to go on there: "0 units" and "No changes" with exit status 0
//! read as "nothing to do" when cascade was most likely pointed at the wrong directory, or
//! `.cascade.yaml` left every unit out.
//!
//! Owns: telling those two apart and saying what to do next. Never: reads a file (it looks
//! only at what discovery already listed), or quotes one; names are shown inert.

use super::graph_cmd::write_problems;
use super::repo::{Location, Scan};
use crate::inert::visible_line;
use crate::terragrunt::paths;
use crate::terragrunt::{STACK_CONFIG_NAME, UNIT_CONFIG_NAMES};
use crate::unit::UnitPath;
use std::collections::BTreeSet;

/// How many directories a message names before it says "…".
const NAMED: usize = 3;

/// Nothing when discovery found a unit; otherwise the error saying why there is none.
pub(super) fn require_units(scan: &Scan, at: &Location) -> anyhow::Result<()> {
    if scan.discovery.units.is_empty() {
        Err(anyhow::Error::msg(message(scan, at)))
    } else {
        Ok(())
    }
}

fn message(scan: &Scan, at: &Location) -> String {
    let dir = at.dir.display();
    let config = &scan.config;
    let unit_dirs = dirs_holding(&scan.discovery.files, |name| {
        UNIT_CONFIG_NAMES.contains(&name) || name == STACK_CONFIG_NAME
    });
    let ignored: Vec<&str> = unit_dirs
        .iter()
        .filter(|d| config.is_ignored(d))
        .map(String::as_str)
        .collect();
    let outside: Vec<&str> = unit_dirs
        .iter()
        .filter(|d| !config.is_ignored(d) && config.outside_environments(&UnitPath::new(d)))
        .map(String::as_str)
        .collect();
    let mut out = if ignored.is_empty() && outside.is_empty() {
        let mut out = format!(
            "no unit in {dir}: a unit is a directory holding terragrunt.hcl (or \
             terragrunt.hcl.json), a stack's terragrunt.stack.hcl, or a plain \
             OpenTofu/Terraform root module listed under `modules:` in .cascade.yaml"
        );
        let modules: BTreeSet<&str> = config.modules.iter().map(|m| m.path.as_str()).collect();
        let plain = dirs_holding(&scan.discovery.files, |name| {
            [".tf", ".tf.json", ".tofu"]
                .iter()
                .any(|ext| name.ends_with(ext))
        });
        let plain: Vec<&str> = plain
            .iter()
            .map(String::as_str)
            .filter(|d| !modules.contains(d))
            .collect();
        if !plain.is_empty() {
            out.push_str(&format!(
                "\n{} .tf files without being a unit ({}): list a root module under \
                 `modules:` in .cascade.yaml to plan it with terraform or tofu",
                match plain.len() {
                    1 => "1 directory holds".to_string(),
                    n => format!("{n} directories hold"),
                },
                named(&plain)
            ));
        }
        out.push('\n');
        out.push_str(if at.explicit {
            "pass --repo the directory holding the units (the repository's root, where \
             .cascade.yaml is)"
        } else {
            "run cascade inside the repository that holds the units, or pass --repo DIR"
        });
        out
    } else {
        let mut out = format!(
            "no unit in {dir}: {}/.cascade.yaml leaves out every one discovery found:",
            dir
        );
        if !ignored.is_empty() {
            out.push_str(&format!(
                "\n`ignore` matches {} ({})",
                count_dirs(ignored.len()),
                named(&ignored)
            ));
        }
        if !outside.is_empty() {
            out.push_str(&format!(
                "\n`environments` covers none of {} ({})",
                count_dirs(outside.len()),
                named(&outside)
            ));
        }
        out.push_str("\nchange `ignore` or `environments` in .cascade.yaml to plan them");
        out
    };
    let mut problems = String::new();
    write_problems(&mut problems, &scan.problems);
    out.push_str(problems.trim_end());
    out
}

/// The directories (relative to the discovery directory, `.` for itself) holding a file
/// whose name `wanted` takes.
fn dirs_holding(files: &[String], wanted: impl Fn(&str) -> bool) -> BTreeSet<String> {
    files
        .iter()
        .filter_map(|f| {
            let (dir, name) = f.rsplit_once('/').unwrap_or(("", f));
            wanted(name).then(|| UnitPath::new(paths::clean(dir).unwrap_or_default()))
        })
        .map(|u| u.as_str().to_string())
        .collect()
}

/// "1 directory", "3 directories".
fn count_dirs(n: usize) -> String {
    if n == 1 {
        "1 directory".to_string()
    } else {
        format!("{n} directories")
    }
}

/// The first few of `dirs`, shown inert, and "…" when there are more.
fn named(dirs: &[&str]) -> String {
    let mut shown: Vec<String> = dirs
        .iter()
        .take(NAMED)
        .map(|d| visible_line(d).into_owned())
        .collect();
    if dirs.len() > NAMED {
        shown.push("…".to_string());
    }
    shown.join(", ")
}
