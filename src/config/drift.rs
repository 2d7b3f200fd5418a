//! `drift:` in `.cascade.yaml`: when the server plans the default branch to find
//! infrastructure that drifted from it, and which units it looks at.
//!
//! Owns the schedule (an interval like `6h`, or a five-field cron expression in
//! UTC) and when it next fires; the server decides what firing does. Bounded
//! like the rest of the file: an interval of at least [`MIN_INTERVAL`] (each
//! run plans every unit it covers), a cron expression that fires at all.

use super::CompiledGlobs;
use super::diagnose::{problem_at, shortened};
use super::file::DriftEntry;
use crate::problem::Problem;
use chrono::{DateTime, Utc};
use serde_saphyr::Spanned;
use std::str::FromStr;
use std::time::Duration;

/// The shortest interval a schedule may ask for.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// The longest interval a schedule may ask for.
pub const MAX_INTERVAL: Duration = Duration::from_secs(31 * 24 * 3600);
/// The schedule of a `drift:` that names none.
pub const DEFAULT_SCHEDULE: &str = "24h";

/// When drift runs.
#[derive(Clone, Debug)]
pub enum DriftSchedule {
    /// Every this long, counted from the last run (the first run as soon as the
    /// server sees the repository's configuration).
    Every(Duration),
    /// At the times a cron expression names (UTC).
    Cron(Box<croner::Cron>),
}

impl DriftSchedule {
    /// When a run due after one at `last` fires (seconds since the epoch); `None`
    /// for a never-run repository on an interval: at once.
    pub fn next_after(&self, last: Option<i64>, now: i64) -> i64 {
        match self {
            DriftSchedule::Every(every) => match last {
                Some(last) => last + every.as_secs() as i64,
                None => now,
            },
            DriftSchedule::Cron(cron) => {
                let from = last.unwrap_or(now);
                DateTime::<Utc>::from_timestamp(from, 0)
                    .and_then(|at| cron.find_next_occurrence(&at, false).ok())
                    .map(|next| next.timestamp())
                    // Checked to fire when the file was read; a year out if it stops.
                    .unwrap_or(from + 365 * 24 * 3600)
            }
        }
    }
}

/// `drift:` as checked.
#[derive(Clone, Debug)]
pub struct DriftConfig {
    pub schedule: DriftSchedule,
    /// As written in the file, for messages and the drift issue.
    pub schedule_text: String,
    /// Off (`enabled: false`): the section stays, nothing runs.
    pub enabled: bool,
    /// Which units drift runs plan (none listed: every unit).
    units: CompiledGlobs,
}

impl DriftConfig {
    /// Whether drift runs plan `unit` (a repo-relative unit path).
    pub fn covers(&self, unit: &str) -> bool {
        self.units.patterns.is_empty() || self.units.set.is_match(unit)
    }

    /// The `units` globs as written.
    pub fn unit_globs(&self) -> &[String] {
        &self.units.patterns
    }
}

/// Checks `drift:`.
pub(super) fn drift(spanned: Spanned<DriftEntry>) -> Result<DriftConfig, Problem> {
    let entry = spanned.value;
    let (text, at) = match &entry.schedule {
        Some(s) => (s.value.trim().to_string(), s.referenced),
        None => (DEFAULT_SCHEDULE.to_string(), spanned.referenced),
    };
    let schedule = schedule(&text).map_err(|why| problem_at(at, why))?;
    Ok(DriftConfig {
        schedule,
        schedule_text: text,
        enabled: entry.enabled.unwrap_or(true),
        units: super::validate::compile_globs("drift.units", &entry.units)?,
    })
}

/// An interval (`30m`, `6h`, `1d`) or a cron expression (`0 6 * * 1-5`).
fn schedule(text: &str) -> Result<DriftSchedule, String> {
    if text.contains(char::is_whitespace) {
        let cron = croner::Cron::from_str(text).map_err(|e| {
            format!(
                "`drift.schedule` `{}` is not a cron expression ({e}); write five fields \
                 (minute hour day-of-month month day-of-week, UTC) like `0 6 * * 1-5`, or an \
                 interval like `6h`",
                shortened(text)
            )
        })?;
        let now = Utc::now();
        if cron.find_next_occurrence(&now, false).is_err() {
            return Err(format!(
                "`drift.schedule` `{}` never fires; write a cron expression that names a real \
                 time, like `0 6 * * 1-5`",
                shortened(text)
            ));
        }
        return Ok(DriftSchedule::Cron(Box::new(cron)));
    }
    match interval(text) {
        Some(every) if (MIN_INTERVAL..=MAX_INTERVAL).contains(&every) => {
            Ok(DriftSchedule::Every(every))
        }
        _ => Err(format!(
            "`drift.schedule` `{}` is not an interval from 10m to 31d nor a cron expression; \
             write it like `6h`, `1d` or `0 6 * * 1-5`",
            shortened(text)
        )),
    }
}

fn interval(text: &str) -> Option<Duration> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "m" => 60,
        "h" => 3600,
        "d" => 24 * 3600,
        _ => return None,
    };
    number.checked_mul(seconds).map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    #[test]
    fn an_interval_counts_from_the_last_run_and_fires_at_once_the_first_time() {
        let every = schedule("6h").unwrap();
        let now = at("2026-12-01T10:00:00Z");
        assert_eq!(every.next_after(None, now), now);
        assert_eq!(every.next_after(Some(now), now), at("2026-12-01T16:00:00Z"));
        assert!(matches!(schedule("1d").unwrap(), DriftSchedule::Every(d) if d.as_secs() == 86400));
    }

    #[test]
    fn a_cron_expression_fires_at_the_next_time_it_names_in_utc() {
        let weekdays = schedule("0 6 * * 1-5").unwrap();
        // Friday 2026-12-04 07:00 → Monday 06:00.
        let friday = at("2026-12-04T07:00:00Z");
        assert_eq!(
            weekdays.next_after(Some(friday), friday),
            at("2026-12-07T06:00:00Z")
        );
        let hourly = schedule("15 * * * *").unwrap();
        let now = at("2026-12-01T10:20:00Z");
        assert_eq!(hourly.next_after(None, now), at("2026-12-01T11:15:00Z"));
    }

    #[test]
    fn bad_schedules_say_what_to_write() {
        for (text, says) in [
            ("5m", "from 10m to 31d"),
            ("40d", "from 10m to 31d"),
            ("soon", "nor a cron expression"),
            ("6 h", "not a cron expression"),
            ("0 0 31 2 *", "never fires"),
            ("61 * * * *", "not a cron expression"),
        ] {
            let why = match schedule(text) {
                Err(why) => why,
                Ok(s) => panic!("{text} was accepted as {s:?}"),
            };
            assert!(why.contains(says), "{text}: {why}");
        }
    }
}
