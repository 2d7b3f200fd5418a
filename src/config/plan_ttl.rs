//! How long a plan may still be applied (`plan_ttl:` in `.cascade.yaml`): its bounds,
//! its default, and how a span of time is said in a message.
//!
//! Owns [`PlanTtl`] and the check of the written value (located, like every config
//! error). Never decides that a plan is too old: which plan an apply may name is the
//! engine's rule (`engine::current_plan`), and the bot and the CLI word the refusal.

use super::diagnose::{problem_at, shortened};
use super::validate::duration;
use crate::problem::Problem;
use serde_saphyr::Spanned;
use std::time::Duration;

const DAY: u64 = 24 * 3600;

/// A reviewed plan older than this is not applied; one that was not applied within it is
/// planned again (`/plan`) and reviewed again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanTtl(Duration);

impl PlanTtl {
    /// The default: a week.
    pub const DEFAULT: PlanTtl = PlanTtl(Duration::from_secs(7 * DAY));
    /// The shortest `plan_ttl` (a second, so a test can outlive it).
    pub const MIN: Duration = Duration::from_secs(1);
    /// The longest `plan_ttl`: a year.
    pub const MAX: Duration = Duration::from_secs(365 * DAY);

    /// `ttl` when it lies within [`PlanTtl::MIN`] and [`PlanTtl::MAX`].
    pub fn new(ttl: Duration) -> Option<PlanTtl> {
        (PlanTtl::MIN..=PlanTtl::MAX)
            .contains(&ttl)
            .then_some(PlanTtl(ttl))
    }

    pub fn get(self) -> Duration {
        self.0
    }

    /// True when a plan `age` old is past it (the ttl itself is not).
    pub fn expired(self, age: Duration) -> bool {
        age > self.0
    }
}

impl Default for PlanTtl {
    fn default() -> PlanTtl {
        PlanTtl::DEFAULT
    }
}

impl std::fmt::Display for PlanTtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&in_words(self.0))
    }
}

/// `span` in words, in at most its two largest units that are not zero: `7 days`,
/// `8 days 3 hours`, `7 days 30 seconds`. A plan's age is said beside its ttl, so an age
/// just past a ttl of `7 days` must not read as `7 days` too.
pub fn in_words(span: Duration) -> String {
    let units = [(DAY, "day"), (3600, "hour"), (60, "minute"), (1, "second")];
    let mut left = span.as_secs();
    let mut said = Vec::new();
    for (size, name) in units {
        let n = left / size;
        left %= size;
        if n > 0 && said.len() < 2 {
            said.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
        }
    }
    if said.is_empty() {
        return "0 seconds".to_string();
    }
    said.join(" ")
}

/// `plan_ttl`, as written: `30m`, `12h`, `7d`, from [`PlanTtl::MIN`] to [`PlanTtl::MAX`].
/// Days are the config's durations (`validate::duration`) in hours, times 24.
pub(super) fn plan_ttl(text: &Spanned<String>) -> Result<PlanTtl, Problem> {
    let written = text.value.trim();
    let span = match written.strip_suffix('d') {
        Some(days) => duration(&format!("{days}h")).and_then(|hours| hours.checked_mul(24)),
        None => duration(written),
    };
    span.and_then(PlanTtl::new).ok_or_else(|| {
        problem_at(
            text.referenced,
            format!(
                "`plan_ttl: {}` is not a time from 1s to 365d; write it like `7d`, `12h` or \
                 `30m`",
                shortened(&text.value)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_said_in_its_two_largest_adjacent_units() {
        let said = |secs| in_words(Duration::from_secs(secs));
        assert_eq!(said(7 * DAY), "7 days");
        assert_eq!(said(8 * DAY + 3 * 3600 + 59), "8 days 3 hours");
        assert_eq!(said(DAY + 5), "1 day 5 seconds");
        assert_eq!(said(65), "1 minute 5 seconds");
        assert_eq!(said(1), "1 second");
        assert_eq!(said(0), "0 seconds");
    }

    #[test]
    fn the_ttl_itself_has_not_expired() {
        let ttl = PlanTtl::new(Duration::from_secs(60)).unwrap();
        assert!(!ttl.expired(Duration::from_secs(60)));
        assert!(ttl.expired(Duration::from_secs(61)));
        assert_eq!(PlanTtl::new(Duration::from_millis(500)), None);
        assert_eq!(PlanTtl::new(Duration::from_secs(366 * DAY)), None);
    }
}
