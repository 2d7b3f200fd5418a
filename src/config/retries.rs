//! Which plan failures are transient, and how long to wait before trying again
//! (`retries:` in `.cascade.yaml`, as plain data the engine reads).
//!
//! Owns the one list of built-in transient patterns (terraform's state-lock error,
//! timeouts, reset connections, providers' HTTP 429 and 5xx answers) and the backoff
//! schedule. A repository adds its own patterns in `.cascade.yaml` (`retries.transient`);
//! `config::validate` checks and compiles them, bounded, and this module only matches. It
//! never runs anything and never sleeps: the engine's plan run does, cancellably.

use crate::backoff::Backoff;
use regex::{Regex, RegexSet};
use std::sync::LazyLock;
use std::time::Duration;

/// The default number of tries, the first included.
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// The default wait before the first retry.
pub const DEFAULT_BASE: Duration = Duration::from_secs(5);
/// The default growth of each further wait.
pub const DEFAULT_FACTOR: u32 = 2;
/// No single wait is longer than this, whatever `base` and `factor` say.
pub const MAX_WAIT: Duration = Duration::from_secs(30 * 60);

/// What terraform, terragrunt and the common providers print when a failure is worth
/// trying again: matched case-insensitively against the unit's error output.
const BUILT_IN: &[&str] = &[
    // Another run holds the state lock.
    r"error acquiring the state lock",
    r"error locking state",
    // Timeouts, at any layer.
    r"\btimeout\b",
    r"\btimed out\b",
    r"i/o timeout",
    r"tls handshake timeout",
    r"context deadline exceeded",
    // The network dropped the connection.
    r"connection reset by peer",
    r"connection refused",
    r"unexpected eof",
    // Providers' rate limits and server errors.
    r"statuscode:\s*(429|5\d\d)\b",
    r"status code:?\s*(429|5\d\d)\b",
    r"\b429 too many requests\b",
    r"\b50[0234] (internal server error|bad gateway|service unavailable|gateway time-?out)\b",
    r"\bthrottl(ing|ed)\b",
    r"requestlimitexceeded",
    r"toomanyrequests",
    r"slowdown",
];

static BUILT_IN_SET: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(BUILT_IN.iter().map(|p| format!("(?i){p}")))
        .expect("the built-in transient patterns compile")
});

/// How a repository retries transient plan failures (`retries:` in `.cascade.yaml`).
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Tries in all, the first included; 1 means no retry.
    pub attempts: u32,
    /// The wait before the first retry.
    pub base: Duration,
    /// Each further wait is the previous one times this.
    pub factor: u32,
    /// The repository's own transient patterns, compiled with bounded size.
    pub extra: Vec<Regex>,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            attempts: DEFAULT_ATTEMPTS,
            base: DEFAULT_BASE,
            factor: DEFAULT_FACTOR,
            extra: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// True when `reason` (a unit's failure, as the engine records it) is worth trying
    /// again: a built-in pattern or one of the repository's matches it.
    pub fn is_transient(&self, reason: &str) -> bool {
        BUILT_IN_SET.is_match(reason) || self.extra.iter().any(|re| re.is_match(reason))
    }

    /// The wait before retry `n` (1 for the first retry): `base * factor^(n-1)`, at most
    /// [`MAX_WAIT`].
    pub fn wait_before(&self, n: u32) -> Duration {
        Backoff::new(self.base, self.factor, MAX_WAIT).wait_before(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_patterns_match_what_terraform_and_providers_print() {
        let policy = RetryPolicy::default();
        for text in [
            "Error: Error acquiring the state lock\n\nLock Info: ...",
            "dial tcp 10.0.0.1:443: i/o timeout",
            "net/http: TLS handshake timeout",
            "context deadline exceeded",
            "read tcp: connection reset by peer",
            "api error: StatusCode: 429, RequestID: x",
            "503 Service Unavailable",
            "Throttling: Rate exceeded",
            "RequestLimitExceeded: Request limit exceeded.",
            "operation timeout after 30s",
        ] {
            assert!(policy.is_transient(text), "{text}");
        }
        for text in [
            "Error: Unsupported argument",
            "Error: Invalid reference",
            "StatusCode: 403, AccessDenied",
            "exit status 1",
        ] {
            assert!(!policy.is_transient(text), "{text}");
        }
    }

    #[test]
    fn extra_patterns_extend_the_built_in_ones() {
        let policy = RetryPolicy {
            extra: vec![Regex::new("quota exceeded").unwrap()],
            ..RetryPolicy::default()
        };
        assert!(policy.is_transient("Error: quota exceeded for project"));
        assert!(!RetryPolicy::default().is_transient("Error: quota exceeded for project"));
    }

    #[test]
    fn waits_grow_by_the_factor_and_stay_bounded() {
        let policy = RetryPolicy {
            base: Duration::from_secs(5),
            factor: 2,
            ..RetryPolicy::default()
        };
        assert_eq!(policy.wait_before(1), Duration::from_secs(5));
        assert_eq!(policy.wait_before(2), Duration::from_secs(10));
        assert_eq!(policy.wait_before(3), Duration::from_secs(20));
        let huge = RetryPolicy {
            base: Duration::from_secs(300),
            factor: 10,
            ..RetryPolicy::default()
        };
        assert_eq!(huge.wait_before(9), MAX_WAIT);
    }
}
