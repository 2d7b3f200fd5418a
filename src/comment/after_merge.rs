//! What the plan and apply comments say about `apply: on_merge`: which units of a plan
//! cascade applies after the merge (so nobody comments `/apply` for them), the exact
//! `/apply` line for the others, and, on an apply after merge, the merge commit it ran at.
//!
//! Owns the template fields of that part (flattened into the plan's and the apply's
//! context, as `policies::PolicySection` is). Never decides which units apply after
//! merge: the bot reads that from the default branch's `apply:` and hands the lists in.

use crate::forge::Spelling;
use serde::Serialize;

/// How a plan is applied, as the bot decided from `apply:`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeModeView {
    /// Units of the plan cascade applies after merge, if the plan made at the merge commit
    /// equals this one.
    pub on_merge: Vec<String>,
    /// The other units of the plan: applied by `/apply <id> <units>` before merge.
    pub by_comment: Vec<String>,
}

impl MergeModeView {
    /// Some unit is applied after merge.
    pub fn any(&self) -> bool {
        !self.on_merge.is_empty()
    }
}

/// The plan template's fields for it.
#[derive(Serialize)]
pub(super) struct AfterMergeSection {
    /// Every unit of the plan applies after merge: no `/apply` line is shown.
    on_merge_only: bool,
    /// The units applied after merge, when only some are.
    on_merge: Vec<String>,
    /// `/apply <id> <units applied by comment>`, when only some units apply after merge.
    apply_others_command: String,
}

impl AfterMergeSection {
    pub(super) fn new(
        view: &MergeModeView,
        plan_id: &str,
        spelling: &Spelling,
    ) -> AfterMergeSection {
        let mixed = view.any() && !view.by_comment.is_empty();
        AfterMergeSection {
            on_merge_only: view.any() && view.by_comment.is_empty(),
            on_merge: if mixed {
                view.on_merge.iter().map(|u| super::view::line(u)).collect()
            } else {
                Vec::new()
            },
            apply_others_command: if mixed {
                let units: Vec<String> = view
                    .by_comment
                    .iter()
                    .map(|u| super::view::line(u))
                    .collect();
                spelling.command(&format!("apply {plan_id} {}", units.join(" ")))
            } else {
                String::new()
            },
        }
    }
}
