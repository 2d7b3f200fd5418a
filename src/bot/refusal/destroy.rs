//! The wording of the refusals of `/destroy` and of an apply that would destroy a
//! protected unit. Part of `refusal`, the one place that words what cascade refuses;
//! unit paths and globs, which a pull request or a commenter chose, are placed with
//! `inert`.

use super::Refusal;
use crate::config::Protection;
use crate::forge::Spelling;
use crate::inert::code;
use crate::plan::PlanId;
use crate::unit::UnitPath;

/// Why a destroy is not planned or applied, with its facts.
#[derive(Debug)]
pub enum DestroyRefusal {
    /// `/destroy unit…` named globs that match no unit at the head.
    NoUnitMatched { globs: Vec<String> },
    /// Units that depend on a named unit and are not named themselves: each dependent with
    /// the named unit it depends on. `globs` are the command's own, as typed.
    DependentsLeftOut {
        globs: Vec<String>,
        dependents: Vec<(UnitPath, UnitPath)>,
    },
    /// `prevent_destroy` in `branch`'s `.cascade.yaml` protects these units: nothing is
    /// planned (`applying` is `None`) or plan `applying` is not applied.
    Protected {
        branch: String,
        units: Vec<(UnitPath, Protection)>,
        applying: Option<PlanId>,
    },
    /// `/destroy` on the drift issue: destroys are planned on a change request.
    OnDriftIssue,
}

impl From<DestroyRefusal> for Refusal {
    fn from(refusal: DestroyRefusal) -> Refusal {
        Refusal::Destroy(refusal)
    }
}

/// At most this many units are listed in a refusal; the rest are counted.
const LISTED: usize = 10;

fn listed(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(LISTED);
    let mut shown: Vec<String> = items.into_iter().take(LISTED).collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    shown.join(", ")
}

impl DestroyRefusal {
    pub(super) fn message(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        let cmd = |c: &str| spelling.command(c);
        match self {
            DestroyRefusal::NoUnitMatched { globs } => {
                let shown: Vec<String> = globs.iter().map(|g| code(g)).collect();
                format!(
                    "Nothing was planned to destroy: {} {} no unit at this {cr}'s head. Name \
                     units by their path from the repository root or a glob like \
                     `live/dev/**`, in a new `{}` comment.",
                    listed(shown),
                    if globs.len() == 1 { "matches" } else { "match" },
                    cmd("destroy"),
                )
            }
            DestroyRefusal::DependentsLeftOut { globs, dependents } => {
                let list = listed(
                    dependents
                        .iter()
                        .map(|(dependent, on)| {
                            format!(
                                "{} (depends on {})",
                                code(dependent.as_str()),
                                code(on.as_str())
                            )
                        })
                        .collect(),
                );
                let mut units: Vec<String> = globs.clone();
                for (dependent, _) in dependents {
                    if !units.iter().any(|u| u == dependent.as_str()) {
                        units.push(dependent.to_string());
                    }
                }
                let instead = cmd(&format!("destroy {}", units.join(" ")));
                format!(
                    "Nothing was planned to destroy: units that depend on the named ones would \
                     be left behind without them: {list}. Comment {} to destroy them too (each \
                     before the units it depends on), or name fewer units.",
                    code(&instead),
                )
            }
            DestroyRefusal::Protected {
                branch,
                units,
                applying,
            } => {
                let list = listed(
                    units
                        .iter()
                        .map(|(unit, why)| {
                            format!(
                                "{} (`prevent_destroy` glob {}, {})",
                                code(unit.as_str()),
                                code(&why.glob),
                                why.place()
                            )
                        })
                        .collect(),
                );
                let branch = code(branch);
                let lift = format!(
                    "to destroy {}, first remove {} from `prevent_destroy` in `.cascade.yaml` \
                     on {branch}: a change on this {cr}'s branch does not count.",
                    if units.len() == 1 { "it" } else { "them" },
                    if units.len() == 1 {
                        "its glob"
                    } else {
                        "their globs"
                    },
                );
                match applying {
                    None => format!(
                        "Nothing was planned to destroy: `.cascade.yaml` on {branch} protects \
                         {list}. T{}",
                        &lift[1..]
                    ),
                    Some(id) => format!(
                        "Plan {id} was not applied: it destroys {list}, which `.cascade.yaml` \
                         on {branch} protects. Keep {} in this {cr}; {lift}",
                        if units.len() == 1 { "it" } else { "them" },
                    ),
                }
            }
            DestroyRefusal::OnDriftIssue => format!(
                "`{}` is for {cr}s: comment it on one, where its plan is reviewed and applied \
                 like any other.",
                cmd("destroy"),
            ),
        }
    }
}
