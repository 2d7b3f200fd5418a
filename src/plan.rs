//! (being written) Plan summaries, fingerprints and plan ids, from `terraform show -json`.

use crate::unit::UnitPath;
use serde::{Deserialize, Serialize};

/// How many changes of each kind a plan makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
    pub replace: u32,
    pub import: u32,
    #[serde(rename = "move")]
    pub moved: u32,
    pub forget: u32,
    pub read: u32,
}

/// One resource the plan touches, with its action labels in display order:
/// the action (create, update, delete, replace, read, forget) then import, move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: String,
    pub actions: Vec<String>,
}

/// One output the plan changes: create, update or delete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputChange {
    pub name: String,
    pub action: String,
}

/// SHA-256 (hex) of the canonical form of what a plan would do.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub String);

/// The id a reviewer approves: `/apply <id>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlanId(pub String);

/// What one unit's plan would do. Holds no attribute values: sensitive or not,
/// values never leave this module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub counts: Counts,
    pub resources: Vec<ResourceChange>,
    pub outputs: Vec<OutputChange>,
    pub fingerprint: Fingerprint,
}

#[allow(dead_code)]
fn _unit(_: UnitPath) {}
