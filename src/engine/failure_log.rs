//! The end of each failed unit's log, for whatever shows a run's failures to reviewers
//! (the `cascade` check run): read back from the unit's log file, which `exec` wrote
//! redacted as one stream, redacted once more line by line (secrets registered since
//! then go too), and with the server's own directories replaced ([`ServerPaths`]).
//!
//! Bounded: at most [`MAX_LOG_TAILS`] units (what the check shows), and of each log its last [`TAIL_BYTES`] and
//! [`TAIL_LINES`] lines. A log this process cannot read (another replica's disk, a data
//! directory wiped since) falls back to the excerpt stored with the unit's result. Never
//! returns raw output, and never a line of a log but the unit's own.

use super::PlanTarget;
use super::plan_run::RunCtx;
use crate::exec::Executor;
use crate::redact::{Redactor, ServerPaths};
use crate::store::{RunStore, UnitStatus};
use crate::unit::UnitPath;
use serde::Serialize;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// At most this many units' logs are shown; the others are counted.
pub const MAX_LOG_TAILS: usize = 20;

/// The end of one failed unit's log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogTail {
    /// The unit's path.
    pub unit: String,
    /// Its last lines, oldest first: redacted, the server's paths replaced, not yet made
    /// safe for Markdown.
    pub lines: Vec<String>,
    /// True when the log has lines before these.
    pub earlier: bool,
}

/// How much of the end of a log is read: more than the check can show of one unit.
const TAIL_BYTES: u64 = 96 * 1024;
/// At most this many lines of it.
const TAIL_LINES: usize = 2_000;

/// The server's directories a run's output may name: the data directory, the run's own
/// directory, every unit's working tree (shown as `.`, so a file reads repo-relative)
/// and the home directory.
pub(super) fn server_paths<'a>(
    data_dir: &Path,
    run_dir: &Path,
    targets: impl Iterator<Item = &'a PlanTarget>,
) -> ServerPaths {
    let mut paths = ServerPaths::new()
        .with_home()
        .with_registered()
        .with(data_dir, "<data-dir>")
        .with(run_dir, "<run>");
    let mut roots: Vec<PathBuf> = targets.map(|t| t.root.clone()).collect();
    roots.sort();
    roots.dedup();
    for root in roots {
        paths = paths.with(&root, ".");
    }
    paths
}

impl<E: Executor, S: RunStore> RunCtx<E, S> {
    /// The last lines of the logs of the units that failed, given each unit's status and
    /// the detail stored with its result, the first [`MAX_LOG_TAILS`] of them in the order
    /// given.
    pub(super) async fn failure_logs<'a>(
        &self,
        units: impl Iterator<Item = (&'a UnitPath, UnitStatus, &'a str)>,
    ) -> Vec<LogTail> {
        let jobs: Vec<(UnitPath, Option<PathBuf>, String)> = units
            .filter(|(_, status, _)| *status == UnitStatus::Failed)
            .take(MAX_LOG_TAILS)
            .map(|(unit, _, detail)| {
                let log = self.targets.get(unit).map(|t| self.job(t).log);
                (unit.clone(), log, detail.to_string())
            })
            .collect();
        if jobs.is_empty() {
            return Vec::new();
        }
        let redactor = self.executor.redactor();
        let paths = self.paths.clone();
        let read = move || {
            jobs.into_iter()
                .map(|(unit, log, detail)| {
                    let (lines, earlier) = match log.as_deref().map(read_tail) {
                        Some(Ok((lines, earlier))) if !lines.is_empty() => (lines, earlier),
                        _ => (detail.lines().map(str::to_string).collect(), false),
                    };
                    LogTail {
                        unit: unit.to_string(),
                        lines: cleaned(&redactor, &paths, &lines),
                        earlier,
                    }
                })
                .collect()
        };
        tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "reading the failed units' logs stopped");
            Vec::new()
        })
    }
}

/// Log lines redacted once more as one stream (secrets registered since they were
/// written go too), the server's own directories replaced.
pub(super) fn cleaned(redactor: &Redactor, paths: &ServerPaths, lines: &[String]) -> Vec<String> {
    let mut stream = redactor.stream();
    let mut out: Vec<String> = lines
        .iter()
        .filter_map(|line| stream.line(line))
        .map(|line| paths.scrub(&line))
        .collect();
    out.extend(stream.finish().map(|line| paths.scrub(&line)));
    out
}

/// The last lines of the log at `path`, and whether lines before them were left out.
pub(super) fn read_tail(path: &Path) -> std::io::Result<(Vec<String>, bool)> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    let mut earlier = start > 0;
    if earlier && !lines.is_empty() {
        // Read from the middle of a line: its start is not here.
        lines.remove(0);
    }
    if lines.len() > TAIL_LINES {
        lines.drain(..lines.len() - TAIL_LINES);
        earlier = true;
    }
    Ok((lines.into_iter().map(str::to_string).collect(), earlier))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("u.log");
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, &text).unwrap();
        let (lines, earlier) = read_tail(&log).unwrap();
        assert!(earlier);
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines.last().unwrap(), "line 19999");
        assert!(lines[0].starts_with("line "));
        std::fs::write(&log, "a\nb\n").unwrap();
        assert_eq!(
            read_tail(&log).unwrap(),
            (vec!["a".into(), "b".into()], false)
        );
    }
}
