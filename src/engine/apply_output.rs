//! What an apply printed, for the apply result: of each applied unit's log, the part after
//! cascade's last `apply` command line, its last [`APPLY_OUTPUT_LINES`] lines, cleaned as a
//! failure log is (redacted once more, the server's directories replaced).
//!
//! Reads only the unit's own log, bounded like a failure log's tail; never raw output. A
//! log this process cannot read (another replica's disk) gives no output, and the result
//! says nothing rather than something else.

use super::failure_log::{cleaned, read_tail};
use super::plan_run::RunCtx;
use crate::exec::Executor;
use crate::store::RunStore;
use crate::unit::UnitPath;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// At most this many lines of one unit's apply output are shown (its last).
pub const APPLY_OUTPUT_LINES: usize = 40;
/// A longer line is cut here (the pull request's code prints what it likes).
const LINE_CHARS: usize = 300;
/// At most this many bytes of one unit's output in all: the last lines that fit.
const OUTPUT_BYTES: usize = 8 * 1024;

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// The apply output of each of `units` whose log can be read.
    pub(super) async fn apply_outputs<'a>(
        &self,
        units: impl Iterator<Item = &'a UnitPath>,
    ) -> BTreeMap<UnitPath, Vec<String>> {
        let logs: Vec<(UnitPath, PathBuf)> = units
            .filter_map(|u| Some((u.clone(), self.job(self.targets.get(u)?).log)))
            .collect();
        let redactor = self.executor.redactor();
        let paths = self.paths.clone();
        let read = move || {
            logs.into_iter()
                .filter_map(|(unit, log)| {
                    let (lines, _) = read_tail(&log).ok()?;
                    let section = apply_section(&lines);
                    let last = &section[section.len().saturating_sub(APPLY_OUTPUT_LINES)..];
                    let shown = bounded(cleaned(&redactor, &paths, last));
                    (!shown.is_empty()).then_some((unit, shown))
                })
                .collect()
        };
        tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "reading the applied units' logs stopped");
            BTreeMap::new()
        })
    }
}

/// The lines after the last command line cascade wrote for an apply (`$ terraform apply …`,
/// `$ terragrunt apply …`), up to the next command line cascade wrote (a `post_apply`
/// step's `$ [post_apply] …`, whose output the comment shows as the step's); nothing when
/// there is none.
fn apply_section(lines: &[String]) -> &[String] {
    let is_apply = |l: &String| {
        l.starts_with("$ ") && l.split_whitespace().nth(2).is_some_and(|w| w == "apply")
    };
    match lines.iter().rposition(is_apply) {
        Some(i) => {
            let rest = &lines[i + 1..];
            let end = rest
                .iter()
                .position(|l| l.starts_with("$ ["))
                .unwrap_or(rest.len());
            trim_blank(&rest[..end])
        }
        None => &[],
    }
}

/// Each line cut at [`LINE_CHARS`], then the last lines within [`OUTPUT_BYTES`].
fn bounded(lines: Vec<String>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for line in lines.into_iter().rev() {
        let line = match line.char_indices().nth(LINE_CHARS) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line,
        };
        bytes += line.len() + 1;
        if bytes > OUTPUT_BYTES {
            break;
        }
        kept.push(line);
    }
    kept.reverse();
    kept
}

fn trim_blank(lines: &[String]) -> &[String] {
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    &lines[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn the_section_starts_after_the_last_apply_command() {
        let log = lines(
            "$ terraform plan -out=p\nPlan: 1 to add\n$ terraform apply -input=false p\n\nterraform_data.a: Creating...\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n\n",
        );
        assert_eq!(
            apply_section(&log),
            [
                "terraform_data.a: Creating...",
                "Apply complete! Resources: 1 added, 0 changed, 0 destroyed."
            ]
        );
        assert!(apply_section(&lines("$ terraform plan\nPlan: 1 to add")).is_empty());
        assert_eq!(
            apply_section(&lines(
                "$ terraform apply p\nApply complete!\n$ [post_apply] sh -c x\nstep says"
            )),
            ["Apply complete!"]
        );
        // Output that only mentions apply is not a command line.
        assert!(apply_section(&lines("$ terraform plan\necho $ terraform apply")).is_empty());
    }

    #[test]
    fn output_is_bounded_in_line_length_and_in_all() {
        let long = vec!["é".repeat(10_000); 40];
        let shown = bounded(long);
        assert!(shown.iter().all(|l| l.chars().count() == LINE_CHARS + 1));
        let total: usize = shown.iter().map(|l| l.len() + 1).sum();
        assert!(total <= OUTPUT_BYTES && !shown.is_empty(), "{total}");
        let short = vec!["a".to_string(), "b".to_string()];
        assert_eq!(bounded(short.clone()), short);
    }
}
