//! The wording of the refusals that come from `apply: on_merge`: an `/apply` before merge
//! that names units cascade applies after merge, and an apply after merge that cannot run
//! (the plan was not approved, or its rules cannot be read). Part of `refusal`, the one
//! place that words what cascade refuses; units are placed in code spans with `inert`.

use super::Refusal;
use crate::forge::Spelling;
use crate::inert::code;
use crate::plan::PlanId;
use crate::unit::UnitPath;

/// Why an apply by comment or after merge is refused, with its facts.
#[derive(Debug)]
pub enum AfterMergeRefusal {
    /// `/apply id` before merge, for units the default branch applies after merge;
    /// `others`: the command that applies the rest of the plan now, if any is left.
    AppliesAfterMerge {
        id: PlanId,
        units: Vec<UnitPath>,
        others: Option<String>,
    },
    /// Merged, but plan `id` was not approved as `/apply` requires: nothing was applied.
    /// `why` is the refusal `/apply` would have given, said whole.
    MergedUnapproved { id: PlanId, why: String },
}

impl From<AfterMergeRefusal> for Refusal {
    fn from(refusal: AfterMergeRefusal) -> Refusal {
        Refusal::AfterMerge(refusal)
    }
}

impl AfterMergeRefusal {
    pub(super) fn message(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        match self {
            AfterMergeRefusal::AppliesAfterMerge { id, units, others } => {
                let units: Vec<String> = units.iter().map(|u| code(u.as_str())).collect();
                let next = match others {
                    Some(others) => {
                        format!("Comment {} to apply the other units now.", code(others))
                    }
                    None => format!(
                        "Get this {cr} approved and merge it; the `cascade` check turns green once \
                         the plan is approved."
                    ),
                };
                format!(
                    "Nothing was applied: {} of plan `{id}` {} applied by cascade after merge \
                     (`apply: on_merge` in the default branch's `.cascade.yaml`), if the plan made \
                     at the merge commit equals this one. {next}",
                    units.join(", "),
                    if units.len() == 1 { "is" } else { "are" },
                )
            }
            AfterMergeRefusal::MergedUnapproved { id, why } => format!(
                "This {cr} was merged, but plan `{id}` was not approved as `apply: on_merge` \
                 requires, so cascade applied nothing after the merge. What `{}` would have \
                 said:\n\n> {}\n\nSomeone allowed to apply can still apply it: comment `{}` here \
                 (it is planned again at the merge commit first, and applied only where it \
                 equals this plan).",
                spelling.command(&format!("apply {id}")),
                why.lines().collect::<Vec<_>>().join("\n> "),
                spelling.command(&format!("apply {id}")),
            ),
        }
    }
}
