//! The one exponential backoff schedule: GitHub's and GitLab's clients waiting out a 5xx or
//! a rate limit that names no time, and the engine waiting before it plans a unit again
//! after a transient failure.
//!
//! It owns the arithmetic only (`first × factor^(n-1)`, saturating, capped). It never
//! sleeps and never decides whether to retry: each loop does, because each also waits for
//! times the server names (`Retry-After`, a rate limit's reset), counts its own attempts
//! and checks whether a failed create was stored after all. That is why this is a value
//! and not a retry crate's loop (`backon`, `backoff`): those drive a closure and compute
//! the delays themselves, in floating point.

use std::time::Duration;

/// Waits that grow by `factor` from `first`, none longer than `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    factor: u32,
    max: Duration,
}

impl Backoff {
    /// `first`, `first × factor`, `first × factor²`, …, each at most `max`.
    pub const fn new(first: Duration, factor: u32, max: Duration) -> Backoff {
        Backoff { first, factor, max }
    }

    /// `first`, then twice the previous wait, each at most `max`.
    pub const fn doubling(first: Duration, max: Duration) -> Backoff {
        Backoff::new(first, 2, max)
    }

    /// The wait before retry `n` (1 for the first retry; 0 counts as 1):
    /// `first × factor^(n-1)`, at most `max`. It saturates instead of overflowing.
    pub fn wait_before(&self, n: u32) -> Duration {
        let growth = self.factor.saturating_pow(n.saturating_sub(1));
        self.first.saturating_mul(growth).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_first_wait_up_to_the_cap() {
        let backoff = Backoff::doubling(Duration::from_secs(1), Duration::from_secs(60));
        let waits: Vec<u64> = (1..=8).map(|n| backoff.wait_before(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(backoff.wait_before(0), Duration::from_secs(1));
    }

    #[test]
    fn grows_by_any_factor_and_saturates() {
        let backoff = Backoff::new(Duration::from_secs(5), 3, Duration::from_secs(1000));
        assert_eq!(backoff.wait_before(3), Duration::from_secs(45));
        assert_eq!(backoff.wait_before(u32::MAX), Duration::from_secs(1000));
        let huge = Backoff::new(Duration::MAX, u32::MAX, Duration::MAX);
        assert_eq!(huge.wait_before(40), Duration::MAX);
    }

    #[test]
    fn a_factor_of_one_waits_the_same_each_time() {
        let backoff = Backoff::new(Duration::from_secs(7), 1, Duration::from_secs(60));
        assert_eq!(backoff.wait_before(9), Duration::from_secs(7));
    }
}
