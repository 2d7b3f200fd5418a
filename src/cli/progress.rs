//! A run's progress on stderr, for `cascade plan`, `apply` and `drift`: a bar on a
//! terminal; otherwise (CI logs, a pipe) one line when a unit starts and one when it
//! ends, with how long it took, so a silent minute in a log says which unit it is.
//!
//! Owns: what the walk's events look like to a person. Never: writes to stdout (that is
//! the comment or the JSON, byte for byte), or shows a unit's name or a reason with its
//! control characters (a pull request can name a directory with an escape sequence).

use crate::inert::visible_line;
use crate::unit::UnitPath;
use crate::walk::{UnitState, WalkEvent};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// What the run does to a unit, as its progress lines say it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Verb {
    /// While it runs: "planning".
    pub doing: &'static str,
    /// When it ends well: "planned".
    pub done: &'static str,
}

/// `cascade plan` and `cascade drift`.
pub(super) const PLAN: Verb = Verb {
    doing: "planning",
    done: "planned",
};

/// `cascade apply`: each unit is planned again and applied when unchanged.
pub(super) const APPLY: Verb = Verb {
    doing: "applying",
    done: "applied",
};

/// The longest reason a progress line shows; the report on stdout has it whole.
const REASON_CHARS: usize = 200;

/// The observer a run's walk reports to: a bar on a terminal, lines otherwise.
pub(super) fn progress(total: usize, verb: Verb) -> impl FnMut(WalkEvent<'_>) {
    let mut shown = if std::io::stderr().is_terminal() {
        Shown::Bar(bar(total))
    } else {
        Shown::Lines(Lines::new(total, verb))
    };
    move |event| match &mut shown {
        Shown::Bar(bar) => {
            match event {
                WalkEvent::Started(unit) => {
                    bar.set_message(visible_line(unit.as_str()).into_owned())
                }
                WalkEvent::Finished(..) => bar.inc(1),
            }
            if bar.position() == bar.length().unwrap_or(0) {
                bar.finish_and_clear();
            }
        }
        Shown::Lines(lines) => eprintln!("{}", lines.line(event, Instant::now())),
    }
}

enum Shown {
    Bar(indicatif::ProgressBar),
    Lines(Lines),
}

fn bar(total: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// The line-per-event form: each unit gets its number (`[3/8]`) when first seen, and
/// keeps it for its last line.
struct Lines {
    total: usize,
    verb: Verb,
    /// Units seen so far: their number, and when they started (none for a unit that
    /// never ran: skipped or cancelled).
    seen: HashMap<UnitPath, (usize, Option<Instant>)>,
}

impl Lines {
    fn new(total: usize, verb: Verb) -> Lines {
        Lines {
            total,
            verb,
            seen: HashMap::new(),
        }
    }

    /// The line for `event`, happening at `now`.
    fn line(&mut self, event: WalkEvent<'_>, now: Instant) -> String {
        let next = self.seen.len() + 1;
        match event {
            WalkEvent::Started(unit) => {
                self.seen.insert(unit.clone(), (next, Some(now)));
                format!("{}: {}…", self.head(next, unit), self.verb.doing)
            }
            WalkEvent::Finished(unit, state) => {
                let (number, started) = *self.seen.entry(unit.clone()).or_insert((next, None));
                let took = started.map(|s| took(now.saturating_duration_since(s)));
                let head = self.head(number, unit);
                let took = took.as_deref().unwrap_or("");
                match state {
                    UnitState::Done => format!("{head}: {} in {took}", self.verb.done),
                    UnitState::Failed(why) => {
                        format!("{head}: failed after {took}: {}", reason(why))
                    }
                    UnitState::Blocked(why) => format!(
                        "{head}: not {} after {took}, its plan changed since approval: {}",
                        self.verb.done,
                        reason(why)
                    ),
                    UnitState::Skipped { because } => format!(
                        "{head}: skipped, {} did not finish",
                        visible_line(because.as_str())
                    ),
                    UnitState::Cancelled => format!("{head}: cancelled"),
                }
            }
        }
    }

    /// `[3/8] dev/app`, the name made visible.
    fn head(&self, number: usize, unit: &UnitPath) -> String {
        format!("[{number}/{}] {}", self.total, visible_line(unit.as_str()))
    }
}

/// A duration as a person reads it in a log: `4.2s`, `3m07s`.
fn took(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

/// A failure's reason on one visible line: its first line, cut short.
fn reason(why: &str) -> String {
    let first = why.lines().next().unwrap_or_default();
    let mut out: String = visible_line(first).chars().take(REASON_CHARS).collect();
    if first.chars().count() > REASON_CHARS || why.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(p: &str) -> UnitPath {
        UnitPath::new(p)
    }

    #[test]
    fn a_unit_keeps_its_number_from_start_to_end_with_the_time_it_took() {
        let t0 = Instant::now();
        let mut lines = Lines::new(3, PLAN);
        let (app, db, web) = (unit("dev/app"), unit("dev/db"), unit("dev/web"));
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(
            lines.line(WalkEvent::Started(&db), t0),
            "[1/3] dev/db: planning…"
        );
        assert_eq!(
            lines.line(WalkEvent::Started(&app), at(100)),
            "[2/3] dev/app: planning…"
        );
        assert_eq!(
            lines.line(WalkEvent::Finished(&db, &UnitState::Done), at(4_200)),
            "[1/3] dev/db: planned in 4.2s"
        );
        assert_eq!(
            lines.line(
                WalkEvent::Finished(&app, &UnitState::Failed("boom\nmore".into())),
                at(187_100)
            ),
            "[2/3] dev/app: failed after 3m07s: boom…"
        );
        assert_eq!(
            lines.line(
                WalkEvent::Finished(
                    &web,
                    &UnitState::Skipped {
                        because: app.clone()
                    }
                ),
                at(187_100)
            ),
            "[3/3] dev/web: skipped, dev/app did not finish"
        );
    }

    #[test]
    fn an_apply_says_applied_and_names_a_changed_plan() {
        let t0 = Instant::now();
        let mut lines = Lines::new(1, APPLY);
        let app = unit("app");
        lines.line(WalkEvent::Started(&app), t0);
        assert_eq!(
            lines.line(
                WalkEvent::Finished(&app, &UnitState::Blocked("approved 1a2b, now 3c4d".into())),
                t0 + Duration::from_millis(60)
            ),
            "[1/1] app: not applied after 0.1s, its plan changed since approval: approved 1a2b, now 3c4d"
        );
    }

    #[test]
    fn control_characters_in_a_name_or_a_reason_never_reach_the_terminal() {
        let t0 = Instant::now();
        let mut lines = Lines::new(1, PLAN);
        let evil = unit("live/a\u{1b}[2J\u{7}x");
        let started = lines.line(WalkEvent::Started(&evil), t0);
        let failed = lines.line(
            WalkEvent::Finished(&evil, &UnitState::Failed("\u{1b}]0;title\u{7}".into())),
            t0,
        );
        for line in [&started, &failed] {
            assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        }
        assert_eq!(started, "[1/1] live/a␛[2J␇x: planning…");
    }
}
