//! Records of the GitHub App: deliveries, installations, pull requests, locks.

use super::ReplicaId;
use crate::event::DeliveryId;
use crate::plan::PlanId;
use crate::unit::UnitPath;

/// Where a delivery stands. A delivery is stored before it is acknowledged and
/// processed afterwards, so a restart finds the ones still `Received`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum DeliveryStatus {
    Received,
    Processed,
    Ignored,
    Failed,
}

impl DeliveryStatus {
    /// The text `deliveries.status` holds.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Read from `deliveries.status`; text no version wrote counts as `Received`, so the
    /// delivery is processed again rather than lost.
    pub fn parse(text: &str) -> DeliveryStatus {
        text.parse().unwrap_or(DeliveryStatus::Received)
    }
}

/// One webhook delivery, verified, as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// `X-GitHub-Delivery`: the same for every redelivery of one event.
    pub id: DeliveryId,
    pub event: String,
    pub body: Vec<u8>,
    pub status: DeliveryStatus,
    pub received_at: i64,
    /// The replica processing it (`None`: nobody yet) ...
    pub owner: Option<ReplicaId>,
    /// ... until when, unless it renews the claim (seconds since the epoch; 0 with no owner).
    pub claimed_until: i64,
}

/// The state of a pull request, per head: level-based, recomputed and saved
/// after every step so a restarted server knows where each one stood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum PrState {
    Discovering,
    Planning,
    Commented,
    Applying,
    Applied,
    Failed,
    Closed,
    /// Its repository's owner is not in `--allow-owner`: told so once, nothing run.
    NotServed,
}

impl PrState {
    /// The text `pull_requests.state` holds.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Read from `pull_requests.state`.
    pub fn parse(text: &str) -> Option<PrState> {
        text.parse().ok()
    }

    /// Work that was under way when the server stopped, and must resume.
    pub fn unfinished(self) -> bool {
        matches!(
            self,
            PrState::Discovering | PrState::Planning | PrState::Applying
        )
    }
}

/// One pull request as cascade tracks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestRecord {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub installation_id: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub state: PrState,
    pub plan_id: Option<PlanId>,
    /// The cascade comment, edited in place.
    pub comment_id: Option<u64>,
    pub check_run_id: Option<u64>,
    pub updated_at: i64,
}

/// A unit held by a pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    pub unit: UnitPath,
    pub pr: u64,
}
