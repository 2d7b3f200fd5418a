//! What a unit's policy checks found, as a run keeps it: stored with the unit's result
//! (`unit_results.policies`, migration 0012) and copied into the plan record, so the
//! comment, the check and `/apply` read the same findings; a whole-plan set's findings
//! are stored with the plan (`plans.policies`, migration 0013). Messages are the policies'
//! own text, written by the default branch's authors about a pull request's plan: shown
//! only through `inert`. Never holds a plan value a policy did not put in a message.

use serde::{Deserialize, Serialize};

/// One policy set's findings for one unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// The set's name (`.cascade.yaml` `policies:`).
    pub set: String,
    /// `enforcement: block`: its `deny` findings stop the unit's apply until an owner
    /// approves them for the plan id; `warn`: they are shown and block nothing.
    pub blocking: bool,
    /// `deny` and `violation` findings.
    #[serde(default)]
    pub denies: Vec<PolicyMessage>,
    /// `warn` findings.
    #[serde(default)]
    pub warnings: Vec<PolicyMessage>,
    /// Why the set could not be evaluated (a limit, a compile error): the unit is then
    /// treated as denied by a blocking set. Empty when it was.
    #[serde(default)]
    pub error: String,
}

/// One finding: the rule that made it and its message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyMessage {
    /// `data.main.deny`
    pub rule: String,
    pub message: String,
}

impl PolicyResult {
    /// Whether it stops the unit's apply (before any approval).
    pub fn blocks(&self) -> bool {
        self.blocking && (!self.denies.is_empty() || !self.error.is_empty())
    }
}
