//! A unit's log: each command line, then the command's output read back from
//! the raw output file, redacted as one stream (so a PEM block spanning lines
//! goes whole) before anything is written. Terraform's `Error:` blocks (see
//! `diagnostics.rs`) and the last lines are kept for the failure excerpt, and, for a
//! workflow's step, the end of its redacted output. Bounded: lines are cut at 64 KiB and a log stops growing
//! at 64 MiB per command.

use super::ExecError;
use crate::redact::Redactor;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// How many output lines a failure message quotes.
const EXCERPT_LINES: usize = 12;
/// The longest line kept whole; longer ones are split.
const MAX_LINE: u64 = 64 * 1024;
/// How much of one command's output reaches the log.
const MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;

/// The open log of one unit.
pub(super) struct LogSink {
    file: std::fs::File,
    tail: VecDeque<String>,
    errors: super::diagnostics::ErrorBlocks,
    refusals: super::denied::RefusalWatch,
    kept: Option<Kept>,
}

/// The last lines of redacted output, at least `bytes` of them when there were as many.
struct Kept {
    bytes: usize,
    lines: VecDeque<String>,
    /// What `lines` holds, newlines included.
    held: usize,
    /// Some line was let go.
    dropped: bool,
}

impl Kept {
    fn push(&mut self, line: &str) {
        self.lines.push_back(line.to_string());
        self.held += line.len() + 1;
        while self
            .lines
            .front()
            .is_some_and(|first| self.held - (first.len() + 1) >= self.bytes)
        {
            let first = self.lines.pop_front().unwrap_or_default();
            self.held -= first.len() + 1;
            self.dropped = true;
        }
    }
}

impl LogSink {
    /// Opens (appending) the log at `path`, creating its directory.
    pub fn open(path: &Path) -> Result<LogSink, ExecError> {
        if let Some(dir) = path.parent() {
            super::step_process::private_dir(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| ExecError::Log { source })?;
        Ok(LogSink {
            file,
            tail: VecDeque::new(),
            errors: Default::default(),
            refusals: Default::default(),
            kept: None,
        })
    }

    /// From now on, also keeps the last lines of the output (redacted) that make up at
    /// least `bytes` bytes, for [`LogSink::kept`].
    pub fn keep(&mut self, bytes: usize) {
        self.kept = Some(Kept {
            bytes,
            lines: VecDeque::new(),
            held: 0,
            dropped: false,
        });
    }

    /// The kept output, each line ended by a newline, and whether earlier lines were let go.
    pub fn kept(&self) -> Option<(String, bool)> {
        self.kept.as_ref().map(|kept| {
            let mut text = String::with_capacity(kept.held);
            for line in &kept.lines {
                text.push_str(line);
                text.push('\n');
            }
            (text, kept.dropped)
        })
    }

    /// A line of cascade's own (the command line, a note), redacted too.
    pub fn note(&mut self, line: &str) {
        let clean = crate::redact::redact(line);
        let _ = writeln!(self.file, "{clean}");
    }

    /// Appends the raw output in `raw`, redacted, and remembers its last lines.
    pub fn output(&mut self, raw: &Path, redactor: &Redactor) -> Result<(), ExecError> {
        let file = match std::fs::File::open(raw) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(ExecError::Log { source }),
        };
        let mut reader = BufReader::new(file);
        let mut stream = redactor.stream();
        let mut written = 0u64;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(MAX_LINE)
                .read_until(b'\n', &mut buf)
                .map_err(|source| ExecError::Log { source })?;
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&buf);
            let line = text.strip_suffix('\n').unwrap_or(&text);
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.refusals.line(line);
            let Some(clean) = stream.line(line) else {
                continue;
            };
            written += clean.len() as u64 + 1;
            if written <= MAX_LOG_BYTES {
                let _ = writeln!(self.file, "{clean}");
            } else if written - (clean.len() as u64 + 1) <= MAX_LOG_BYTES {
                let _ = writeln!(self.file, "[output cut at {} MiB]", MAX_LOG_BYTES >> 20);
            }
            self.errors.line(&clean);
            self.remember(clean);
        }
        if let Some(note) = stream.finish() {
            let _ = writeln!(self.file, "{note}");
            self.remember(note);
        }
        Ok(())
    }

    fn remember(&mut self, line: String) {
        if let Some(kept) = &mut self.kept {
            kept.push(&line);
        }
        if line.trim().is_empty() {
            return;
        }
        if self.tail.len() == EXCERPT_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    /// The first access the sandbox refused, as the output reported it.
    pub fn refused(&self) -> Option<(&'static str, &Path)> {
        self.refusals.found()
    }

    /// What a failure message quotes: terraform's error blocks, the cause on the first
    /// line; without any, the last lines of output, the last one first.
    pub fn excerpt(&self) -> String {
        self.errors.reason().unwrap_or_else(|| {
            super::diagnostics::last_lines(&self.tail.iter().cloned().collect::<Vec<_>>())
        })
    }
}
