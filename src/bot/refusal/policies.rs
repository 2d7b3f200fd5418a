//! The wording of the refusals that come from policies: an `/apply` that policies stop,
//! and an `/approve-policies` that is not taken. Part of `refusal`, the one place that
//! words what cascade refuses; set names, rule names and units are placed with `inert`,
//! and owners are named in code spans, never mentioned (a refusal must not notify a team).

use super::{Contribution, Refusal};
use crate::bot::policies::Blocking;
use crate::config::ApplyPermission;
use crate::forge::Spelling;
use crate::inert::code;
use crate::plan::PlanId;

/// Why a policy refusal is made, with its facts.
#[derive(Debug)]
pub enum PolicyRefusal {
    /// `/apply id`: these sets' failures stop it until an owner approves them.
    Blocked { id: PlanId, blocking: Vec<Blocking> },
    /// `/approve-policies id` by someone who owns none of the failing sets.
    NotOwner {
        login: String,
        id: PlanId,
        /// The failing sets, each with its owners (`None`: no longer listed).
        sets: Vec<(String, Option<ApplyPermission>)>,
        memberships_unreadable: bool,
    },
    /// `/approve-policies id` by the pull request's author (`how` is `None`), or by
    /// someone who pushed to it or made one of its commits.
    OwnChange {
        login: String,
        how: Option<Contribution>,
    },
    /// `/approve-policies id` of a plan no blocking set fails.
    NothingToApprove { id: PlanId },
    /// `/approve-policies` on the drift issue, whose plans no policy checks.
    OnDriftIssue,
    /// The default branch's policy sets cannot be read or compiled: nothing is planned,
    /// or plan `applying` is not applied.
    SetsUnusable {
        branch: String,
        problem: String,
        applying: Option<PlanId>,
    },
}

impl From<PolicyRefusal> for Refusal {
    fn from(refusal: PolicyRefusal) -> Refusal {
        Refusal::Policies(refusal)
    }
}

/// A list of people as a refusal names them: users and teams in code spans.
pub(super) fn people(who: &ApplyPermission) -> String {
    let mut named: Vec<String> = who.users.iter().map(|u| code(u)).collect();
    named.extend(
        who.teams
            .iter()
            .map(|t| format!("members of {}", code(&t.to_string()))),
    );
    match named.len() {
        0 => "nobody (the set lists no `owners`)".to_string(),
        _ => named.join(", "),
    }
}

impl PolicyRefusal {
    pub(super) fn message(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        let cmd = |c: &str| spelling.command(c);
        match self {
            PolicyRefusal::Blocked { id, blocking } => {
                let lines: Vec<String> = blocking
                    .iter()
                    .map(|b| {
                        let units: Vec<String> = b
                            .units
                            .iter()
                            .map(|u| u.as_deref().map_or("the whole plan".to_string(), code))
                            .collect();
                        let rules: Vec<String> = b.rules.iter().map(|r| code(r)).collect();
                        let who = match &b.owners {
                            Some(owners) => format!("can be approved by {}", people(owners)),
                            None => format!(
                                "is no longer in the default branch's `.cascade.yaml`; comment `{}` to plan again",
                                cmd("plan")
                            ),
                        };
                        format!(
                            "- policy set {} ({}) fails {}; it {who}",
                            code(&b.set),
                            rules.join(", "),
                            units.join(", "),
                        )
                    })
                    .collect();
                format!(
                    "Not applied: policies block plan `{id}`.\n\n{}\n\nThe plan comment shows each \
                     failing rule's message. Change the {cr} so the policies pass, or ask an owner \
                     of each set to comment `{}`; then comment `{}` again.",
                    lines.join("\n"),
                    cmd(&format!("approve-policies {id}")),
                    cmd(&format!("apply {id}")),
                )
            }
            PolicyRefusal::NotOwner {
                login,
                id,
                sets,
                memberships_unreadable,
            } => {
                let lines: Vec<String> = sets
                    .iter()
                    .map(|(set, owners)| {
                        format!(
                            "- {}: {}",
                            code(set),
                            owners.as_ref().map_or_else(
                                || "no longer listed; nobody can approve it".to_string(),
                                people
                            )
                        )
                    })
                    .collect();
                let mut text = format!(
                    "@{login} cannot approve the policies of plan `{id}`: only an owner of a failing \
                     set can, and its owners are:\n\n{}",
                    lines.join("\n")
                );
                if *memberships_unreadable {
                    text.push_str(
                        "\n\ncascade could not read some team memberships, which counts as not a member; \
                         whoever administers cascade can grant it that permission.",
                    );
                }
                text
            }
            PolicyRefusal::OwnChange { login, how } => format!(
                "@{login} cannot approve this {cr}'s policies: they {}, and nobody approves \
                 their own change. Ask another owner of the failing sets.",
                match how {
                    None => format!("opened this {cr}"),
                    Some(how) => how.said(spelling),
                }
            ),
            PolicyRefusal::NothingToApprove { id } => format!(
                "Plan `{id}` fails no blocking policy set, so there is nothing to approve. \
                 Comment `{}` when it is reviewed.",
                cmd(&format!("apply {id}"))
            ),
            PolicyRefusal::OnDriftIssue => format!(
                "`{}` is for {cr}s: drift plans make the infrastructure match the default branch, \
                 which was reviewed, and are not checked against policies.",
                cmd("approve-policies")
            ),
            PolicyRefusal::SetsUnusable {
                branch,
                problem,
                applying,
            } => format!(
                "{}: the policy sets of `.cascade.yaml` on the default branch {} cannot be used \
                 ({}). Someone who can change the default branch must fix them; then comment `{}`.",
                match applying {
                    None => format!("cascade did not plan this {cr}"),
                    Some(id) => format!("Plan `{id}` was not applied"),
                },
                code(branch),
                code(problem),
                match applying {
                    None => cmd("plan"),
                    Some(id) => cmd(&format!("apply {id}")),
                }
            ),
        }
    }
}
