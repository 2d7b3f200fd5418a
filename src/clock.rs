//! The time seam: seconds since the epoch, as the bot and the engine read
//! them. Owns the trait and the wall clock; tests supply their own clock to
//! move time by hand. Never sleeps or schedules anything.

/// Where the time comes from.
pub trait Clock: Send + Sync + 'static {
    /// Seconds since the epoch.
    fn now(&self) -> i64;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}
