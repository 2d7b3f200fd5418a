//! How many replies cascade posts on one pull request: at most [`REPLIES_PER_WINDOW`]
//! in any [`REPLY_WINDOW`]. Every installation shares GitHub's content-write budget
//! (80 a minute), so without this one commenter repeating `/help` or a refused command
//! could spend it for every other pull request. Past the limit cascade says so once,
//! then stays quiet on that pull request until the window has room again.
//!
//! Owns the per-pull-request windows, in memory (a restart forgets them, which only
//! gives a pull request a fresh window). Never decides what to reply: the caller asks
//! before each reply and posts what it is told.

use super::WorkKey;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Replies per pull request allowed in any [`REPLY_WINDOW`].
pub const REPLIES_PER_WINDOW: usize = 10;

/// The window replies are counted in.
pub const REPLY_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Windows kept before idle ones are dropped: memory stays bounded by the pull
/// requests that got a reply in the last window.
const PRUNE_ABOVE: usize = 256;

/// What the caller may post.
#[derive(Debug, PartialEq, Eq)]
pub enum Allowance {
    /// The reply.
    Reply,
    /// Not the reply: once, the notice that cascade stops replying until `until`.
    LastWord { until: Instant },
    /// Nothing.
    Quiet,
}

#[derive(Default)]
struct Window {
    /// When the replies in the window were posted, oldest first.
    sent: VecDeque<Instant>,
    /// The notice was posted; quiet until then.
    quiet_until: Option<Instant>,
}

impl Window {
    fn forget_before(&mut self, now: Instant) {
        while self
            .sent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= REPLY_WINDOW)
        {
            self.sent.pop_front();
        }
        if self.quiet_until.is_some_and(|until| now >= until) {
            self.quiet_until = None;
        }
    }

    fn idle(&self) -> bool {
        self.sent.is_empty() && self.quiet_until.is_none()
    }
}

/// The reply windows of every pull request.
#[derive(Default)]
pub struct ReplyLimits {
    windows: Mutex<HashMap<WorkKey, Window>>,
}

impl ReplyLimits {
    /// Asks to reply on `key` now; a `Reply` is counted.
    pub fn take(&self, key: &WorkKey) -> Allowance {
        self.take_at(key, Instant::now())
    }

    fn take_at(&self, key: &WorkKey, now: Instant) -> Allowance {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() > PRUNE_ABOVE {
            windows.retain(|_, w| {
                w.forget_before(now);
                !w.idle()
            });
        }
        let window = windows.entry(key.clone()).or_default();
        window.forget_before(now);
        if window.sent.len() < REPLIES_PER_WINDOW {
            window.sent.push_back(now);
            return Allowance::Reply;
        }
        if window.quiet_until.is_some() {
            return Allowance::Quiet;
        }
        let until = window.sent[0] + REPLY_WINDOW;
        window.quiet_until = Some(until);
        Allowance::LastWord { until }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(number: u64) -> WorkKey {
        WorkKey::PullRequest {
            repo: crate::forge::RepoKey::from_stored("acme/infra"),
            number: crate::forge::PrNumber::new(number),
        }
    }

    #[test]
    fn ten_replies_then_one_notice_then_quiet_until_the_window_has_room() {
        let limits = ReplyLimits::default();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        for i in 0..10 {
            assert_eq!(limits.take_at(&pr(1), at(i)), Allowance::Reply);
        }
        assert_eq!(
            limits.take_at(&pr(1), at(20)),
            Allowance::LastWord { until: at(600) }
        );
        assert_eq!(limits.take_at(&pr(1), at(30)), Allowance::Quiet);
        assert_eq!(limits.take_at(&pr(1), at(599)), Allowance::Quiet);
        // Another pull request has its own window.
        assert_eq!(limits.take_at(&pr(2), at(30)), Allowance::Reply);
        // The first reply left the window: room for one.
        assert_eq!(limits.take_at(&pr(1), at(600)), Allowance::Reply);
        assert_eq!(
            limits.take_at(&pr(1), at(600)),
            Allowance::LastWord { until: at(601) }
        );
    }

    #[test]
    fn idle_windows_are_dropped() {
        let limits = ReplyLimits::default();
        let start = Instant::now();
        for n in 0..1000 {
            limits.take_at(&pr(n), start);
        }
        limits.take_at(&pr(5000), start + REPLY_WINDOW);
        assert_eq!(limits.windows.lock().unwrap().len(), 1);
    }
}
