//! Which `cascade serve` process holds a claim or a lease: the owner the store writes on
//! deliveries, pull request leases and drift schedules (`host/pid/random`, readable in the
//! database).
//!
//! Owns: that id's text. Never: decides whether an owner is alive (claims and leases run
//! out by time), or names an apply claim's owner (a fresh id per apply, not a replica).

use std::fmt;

/// One `cascade serve` process among the replicas sharing a database.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReplicaId(String);

impl ReplicaId {
    /// The id of the process `pid` on `host`, told apart from an earlier process with the
    /// same pid by `random`.
    pub fn new(host: &str, pid: u32, random: &str) -> ReplicaId {
        ReplicaId(format!("{host}/{pid}/{random}"))
    }

    /// An id as a row holds it (an owner column).
    pub fn from_stored(text: impl Into<String>) -> ReplicaId {
        ReplicaId(text.into())
    }

    /// The text the store keeps.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::ReplicaId;

    #[test]
    fn an_id_reads_host_pid_and_random() {
        let id = ReplicaId::new("web-1", 42, "0a1b2c3d");
        assert_eq!(id.as_str(), "web-1/42/0a1b2c3d");
        assert_eq!(ReplicaId::from_stored(id.to_string()), id);
    }
}
