//! Why cascade does not do what it was asked (a command, an apply, a plan) and what to
//! do next: one [`Refusal`] per reason, holding the facts, and the one place that words
//! them, [`Refusal::message`], for the forge it is said on.
//!
//! Owns the wording of every refusal the bot posts: replies to commands, the comment on
//! a change request that is not planned, the drift issue's refusals, the reply-limit
//! notice. Never decides whether to refuse (the flows do; which plan id an apply must
//! name is the engine's rule, [`crate::engine::NotCurrent`]) and never posts. Every
//! value a change request or a commenter chose (unit paths, branch names, commands as
//! typed, team names) is placed with `crate::inert`; logins are mentioned on purpose.

mod after_merge;
mod destroy;
mod policies;
mod state;

pub use after_merge::AfterMergeRefusal;
pub use destroy::DestroyRefusal;
pub use policies::PolicyRefusal;
pub use state::StateRefusal;

use crate::config::{PlanTtl, in_words};
use crate::engine::{ApplyError, NotCurrent, Was};
use crate::forge::{ForgeKind, RepoKey, Spelling};
use crate::inert::{code, fenced, text};
use crate::plan::PlanId;
use crate::unit::UnitPath;

/// Why something asked of cascade is not done.
#[derive(Debug)]
pub enum Refusal {
    /// `command` needs write permission on `repo`, which `login` lacks.
    NoWritePermission {
        login: String,
        command: String,
        repo: RepoKey,
    },
    /// `apply_permission` lets only `users` and members of `teams` run `command`.
    NotPermitted {
        login: String,
        command: String,
        users: Vec<String>,
        teams: Vec<String>,
        /// The forge would not say whether `login` is in one of the teams.
        memberships_unreadable: bool,
    },
    /// The default branch's `.cascade.yaml` is invalid, so nobody can be let run `command`.
    RulesInvalid {
        branch: String,
        problem: String,
        command: String,
    },
    /// No approval of the change request counts, and none was even given by another.
    NoApproval { id: PlanId, author: String },
    /// Approvals were given, but none counts.
    ApprovalsUncounted {
        id: PlanId,
        repo: String,
        head: String,
        uncounted: Uncounted,
    },
    /// The forge would not list the commits, so no approval can be shown independent.
    CommitsUnread { id: PlanId, error: String },
    /// An approval counts, but the forge's own approval rules want `missing` more.
    ForgeApprovalsMissing { id: PlanId, missing: u64 },
    /// The forge says the change request cannot be merged yet, and why.
    MergeBlocked { id: PlanId, why: String },
    /// The change request is not mergeable; the forge's word for its state.
    NotMergeable { id: PlanId, state: String },
    /// A change request from a fork is not applied.
    ForkNotApplied,
    /// A change request from a fork is not planned.
    ForkNotPlanned,
    /// Nothing was ever planned for the change request.
    NoPlanYet,
    /// The change request moved on since plan `id`.
    NewCommits { id: PlanId },
    /// `id` is not the current plan, `current` is.
    NotLatestPlan { id: PlanId, current: PlanId },
    /// `id` was never a plan of the change request; `current` is its plan, which its
    /// comment shows.
    UnknownPlan { id: PlanId, current: PlanId },
    /// `id` was applied already, and there is no current plan.
    AlreadyApplied { id: PlanId },
    /// `id` is no current plan, and there is none.
    NoCurrentPlan { id: PlanId },
    /// `id` is the current plan, but it was made `age` ago, longer than `plan_ttl`.
    PlanExpired {
        id: PlanId,
        age: std::time::Duration,
        ttl: PlanTtl,
    },
    /// `/apply <id> unit…` named globs that match no unit of plan `id`.
    NoUnitMatched { id: PlanId, globs: Vec<String> },
    /// `/plan unit…` named globs that plan nothing: no unit they match, nor a dependent of
    /// one, is affected by the change request.
    PlanNoUnitMatched { globs: Vec<String> },
    /// `/apply <id> unit…` left out units of plan `id` that the named ones depend on;
    /// `instead` is the command with them added, as typed on this forge.
    DependenciesLeftOut {
        id: PlanId,
        missing: Vec<UnitPath>,
        instead: String,
    },
    /// An apply of the change request is running.
    ApplyRunning,
    /// Units of the plan are locked by other change requests.
    UnitsLocked { locks: Vec<(UnitPath, u64)> },
    /// The engine refused the apply before anything ran.
    EngineRefused(ApplyError),
    /// The base branch is not one cascade plans into.
    BaseNotPlanned(BaseRule),
    /// The base branch is not one cascade plans into, so an apply is refused too.
    BaseNotApplied(BaseRule),
    /// The server has no working sandbox, so it runs nobody's code.
    NoSandbox { why: String },
    /// The repository's owner is not one this server serves.
    NotServed { owner: String },
    /// Past the reply limit: the one notice, quiet for `minutes` more.
    ReplyLimit {
        replies: usize,
        window_minutes: u64,
        minutes: u64,
    },
    /// The drift plan's units are locked by open change requests.
    DriftUnitsLocked { locks: Vec<(UnitPath, u64)> },
    /// The engine refused the drift apply before anything ran.
    DriftApplyRefused(ApplyError),
    /// The default branch's `.cascade.yaml` is invalid: nothing is done on the issue.
    DriftRulesInvalid { branch: String, problem: String },
    /// `/plan` on the drift issue, with drift off.
    DriftOff,
    /// `/unlock` on the drift issue.
    UnlockOnDriftIssue,
    /// `/apply <id> unit…` on the drift issue: a drift plan is applied whole.
    SubsetOnDriftIssue,
    /// A refusal that comes from policies.
    Policies(PolicyRefusal),
    /// What `apply: on_merge` refuses.
    AfterMerge(AfterMergeRefusal),
    /// A refusal of `/import` or `/state rm`.
    State(StateRefusal),
    /// A refusal of `/destroy`, or of an apply that destroys a protected unit.
    Destroy(DestroyRefusal),
}

/// Where change requests are planned: the default branch, and the branches `branches:`
/// lists; `base` is neither.
#[derive(Debug)]
pub struct BaseRule {
    pub default: String,
    pub branches: Vec<String>,
    pub base: String,
}

/// The approvals that did not count, by why (logins as the forge names them).
#[derive(Debug, Default)]
pub struct Uncounted {
    /// Given on an earlier commit than the head: the login and that commit.
    pub stale: Vec<(String, String)>,
    /// Given on a commit GitLab did not record.
    pub unpinned: Vec<String>,
    /// Given by someone who contributed to the change request.
    pub contributed: Vec<(String, Contribution)>,
    /// Given by someone without write permission.
    pub without_write: Vec<String>,
}

impl Uncounted {
    pub fn is_empty(&self) -> bool {
        self.stale.is_empty()
            && self.unpinned.is_empty()
            && self.contributed.is_empty()
            && self.without_write.is_empty()
    }
}

/// How an approver contributed to the change request they approved.
#[derive(Debug)]
pub enum Contribution {
    Pushed,
    /// Made this commit (its sha).
    Committed(String),
}

/// The engine's answer for a plan id that is not the current plan, said as the bot says
/// it: the current plan when there is one, else whether `id` was applied.
impl From<NotCurrent> for Refusal {
    fn from(not: NotCurrent) -> Refusal {
        match (not.current, not.was) {
            (_, Was::Expired { age, ttl }) => Refusal::PlanExpired {
                id: not.id,
                age,
                ttl,
            },
            (Some(current), Was::Unknown) => Refusal::UnknownPlan {
                id: not.id,
                current,
            },
            (Some(current), _) => Refusal::NotLatestPlan {
                id: not.id,
                current,
            },
            (None, Was::Consumed) => Refusal::AlreadyApplied { id: not.id },
            (None, _) => Refusal::NoCurrentPlan { id: not.id },
        }
    }
}

impl Refusal {
    /// The engine's refusal of an apply: an expired plan said as the bot says it (it
    /// expired between the bot's check and the engine's), anything else in the engine's
    /// words, as `said` wraps them.
    pub fn engine_refused(error: ApplyError, said: fn(ApplyError) -> Refusal) -> Refusal {
        match error {
            ApplyError::Expired { id, age, ttl } => Refusal::PlanExpired { id, age, ttl },
            other => said(other),
        }
    }

    /// The refusal as said on the forge `spelling` is for.
    pub fn message(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        let cmd = |c: &str| spelling.command(c);
        let apply = |id: &PlanId| cmd(&format!("apply {id}"));
        match self {
            Refusal::NoWritePermission {
                login,
                command,
                repo,
            } => {
                let command = code(command);
                format!(
                    "@{login} cannot run {command}: `{}`, `{}` and `{}` need write permission \
                     on {}. Ask someone with write permission to comment {command}.",
                    cmd("apply"),
                    cmd("plan"),
                    cmd("unlock"),
                    repo.path(),
                )
            }
            Refusal::NotPermitted {
                login,
                command,
                users,
                teams,
                memberships_unreadable,
            } => {
                let command = code(command);
                // Named in code spans, not mentioned: a refusal must not notify a whole team.
                let mut who: Vec<String> = users.iter().map(|u| code(u)).collect();
                who.extend(teams.iter().map(|t| format!("members of {}", code(t))));
                let mut text = format!(
                    "@{login} cannot run {command}: `.cascade.yaml` on the default branch lets only {} \
                     (with write permission) apply, plan and unlock here. Ask one of them to comment {command}.",
                    who.join(", ")
                );
                if *memberships_unreadable {
                    text.push_str(match spelling.forge {
                        ForgeKind::GitHub => {
                            " cascade could not read team memberships: the GitHub App needs the Organization → \
                             Members (read) permission for that; ask whoever administers the App to grant it."
                        }
                        ForgeKind::GitLab => {
                            " cascade could not read group memberships: its token's user must be able to see \
                             those groups' members; ask whoever runs cascade to give it access."
                        }
                    });
                }
                text
            }
            Refusal::RulesInvalid {
                branch,
                problem,
                command,
            } => format!(
                "Not run: `.cascade.yaml` on the default branch {} is invalid ({}), so \
                 cascade cannot tell who may run {}. Fix it there first.",
                code(branch),
                code(problem),
                code(command),
            ),
            Refusal::NoApproval { id, author } => format!(
                "Not applied: this {cr} needs an approving review from someone with write \
                 permission other than @{author}. Ask for a review, then comment `{}` again.",
                apply(id)
            ),
            Refusal::ApprovalsUncounted {
                id,
                repo,
                head,
                uncounted,
            } => format!(
                "Not applied: no approval counts yet. {}. Then comment `{}` again.",
                uncounted.why(repo, head, spelling).join("; "),
                apply(id)
            ),
            Refusal::CommitsUnread { id, error } => format!(
                "Not applied: cascade could not read this {cr}'s commits ({error}), and an approval \
                 counts only from someone who did not push to it or make one of its commits. \
                 Comment `{}` again later, or set `approvals: allow_pushers` in `.cascade.yaml`.",
                apply(id)
            ),
            Refusal::ForgeApprovalsMissing { id, missing } => format!(
                "Not applied: the project's approval rules still want {missing} more approval{} \
                 on this {cr}. Ask for {}, then comment `{}` again.",
                if *missing == 1 { "" } else { "s" },
                if *missing == 1 {
                    "another review"
                } else {
                    "more reviews"
                },
                apply(id)
            ),
            Refusal::MergeBlocked { id, why } => format!(
                "Not applied: the {cr} cannot be merged yet: {why}. Only cascade's own check may \
                 be missing; once the rest is done, comment `{}` again.",
                apply(id)
            ),
            Refusal::NotMergeable { id, state } => format!(
                "Not applied: the {cr} is not mergeable (state `{state}`). Resolve conflicts and required checks, then comment `{}` again.",
                apply(id)
            ),
            Refusal::ForkNotApplied => format!(
                "cascade does not apply {cr}s from forks. Push the branch to this repository and open a {cr} from it."
            ),
            Refusal::ForkNotPlanned => format!(
                "cascade does not plan {cr}s from forks: planning runs the {cr}'s code \
                 with this server's credentials. A maintainer can push the branch to this repository to have it planned."
            ),
            Refusal::NoPlanYet => format!(
                "There is no plan for this {cr} yet. Comment `{}` first.",
                cmd("plan")
            ),
            Refusal::NewCommits { id } => format!(
                "The {cr} has new commits since plan {id} was made. Wait for the new plan comment and apply its id."
            ),
            Refusal::NotLatestPlan { id, current } => format!(
                "`{id}` is not this {cr}'s latest plan. The current plan is `{current}`: review it, then comment `{}`.",
                apply(current)
            ),
            Refusal::UnknownPlan { id, current } => format!(
                "`{id}` is no plan of this {cr}: check the id. This {cr}'s plan is `{current}`, \
                 in cascade's comment above: review it there, then comment `{}`.",
                apply(current)
            ),
            Refusal::AlreadyApplied { id } => format!(
                "Plan `{id}` was already applied. Comment `{}` to see if anything is left.",
                cmd("plan")
            ),
            Refusal::NoCurrentPlan { id } => format!(
                "There is no current plan `{id}` for this {cr}. Comment `{}` to plan again.",
                cmd("plan")
            ),
            Refusal::PlanExpired { id, age, ttl } => format!(
                "Plan `{id}` is {} old, older than `plan_ttl` ({ttl}) in the default branch's \
                 `.cascade.yaml`: comment `{}` to plan again, then apply the new id.",
                in_words(*age),
                cmd("plan")
            ),
            Refusal::NoUnitMatched { id, globs } => {
                let globs: Vec<String> = globs.iter().map(|g| code(g)).collect();
                format!(
                    "Nothing was applied: {} {} no unit of plan {id}. Name units as the plan \
                     comment lists them (a path, or a glob like `live/dev/**`), or comment `{}` \
                     to apply the whole plan.",
                    globs.join(", "),
                    if globs.len() == 1 { "matches" } else { "match" },
                    apply(id),
                )
            }
            Refusal::PlanNoUnitMatched { globs } => {
                let globs: Vec<String> = globs.iter().map(|g| code(g)).collect();
                format!(
                    "Nothing was planned: {} {} no unit this {cr} affects, nor a unit that one \
                     it affects depends on. Comment `{}` to re-plan every unit it affects, or \
                     name units as the plan comment lists them (a path, or a glob like \
                     `live/dev/**`).",
                    globs.join(", "),
                    if globs.len() == 1 { "matches" } else { "match" },
                    cmd("plan"),
                )
            }
            Refusal::DependenciesLeftOut {
                id,
                missing,
                instead,
            } => {
                let missing: Vec<String> = missing.iter().map(|u| code(u.as_str())).collect();
                format!(
                    "Nothing was applied: the units named depend on {} in plan {id}, which \
                     must be applied with them. Comment {} instead, or `{}` to apply the whole \
                     plan.",
                    missing.join(", "),
                    code(instead),
                    apply(id),
                )
            }
            Refusal::ApplyRunning => {
                format!("An apply is already running for this {cr}; wait for its result.")
            }
            Refusal::UnitsLocked { locks } => {
                let list: Vec<String> = locks
                    .iter()
                    .map(|(unit, pr)| {
                        format!(
                            "{} is locked by {}{pr}",
                            code(unit.as_str()),
                            spelling.ref_sigil
                        )
                    })
                    .collect();
                format!(
                    "Cannot apply: {}. Merge or close those {cr}s, or comment `{}` there.",
                    list.join(", "),
                    cmd("unlock")
                )
            }
            Refusal::EngineRefused(error) => format!("Not applied: {}.", engine_reason(error)),
            Refusal::BaseNotPlanned(rule) => rule.said(spelling),
            Refusal::BaseNotApplied(rule) => format!("Not applied: {}", rule.said(spelling)),
            Refusal::NoSandbox { why } => format!(
                "cascade did not plan this {cr}: the server has no working sandbox ({why}), and planning \
                 runs the {cr}'s code. Whoever runs cascade can start it on a Linux kernel with Landlock \
                 (5.13 or later, with `lsm=` listing landlock), or choose `--sandbox off` to plan without \
                 one; then comment `{}`.",
                cmd("plan")
            ),
            Refusal::NotServed { owner } => {
                let owner = code(owner);
                match spelling.forge {
                    ForgeKind::GitHub => format!(
                        "This cascade server does not serve repositories of {owner}, so nothing here is \
                         planned or applied. If it should, whoever runs the server can add {owner} to \
                         `--allow-owner` (`CASCADE_ALLOW_OWNERS`) and restart it; otherwise uninstall its \
                         GitHub App from this account."
                    ),
                    ForgeKind::GitLab => format!(
                        "This cascade server does not serve projects in {owner}, so nothing here is \
                         planned or applied. If it should, whoever runs the server can add the group to \
                         `--allow-owner` (`CASCADE_ALLOW_OWNERS`) and restart it; otherwise remove this \
                         project's webhook to cascade."
                    ),
                }
            }
            Refusal::ReplyLimit {
                replies,
                window_minutes,
                minutes,
            } => {
                let forge_name = match spelling.forge {
                    ForgeKind::GitHub => "GitHub",
                    ForgeKind::GitLab => "GitLab",
                };
                format!(
                    "cascade has replied {replies} times on this {cr} in the last {window_minutes} minutes, so it \
                     will not reply to commands here for the next {minutes} minute{}: replies on one \
                     {cr} must not use up the {forge_name} write budget every {cr} shares. \
                     Plans and apply results are still posted. Wait, then comment again.",
                    if *minutes == 1 { "" } else { "s" },
                )
            }
            Refusal::DriftUnitsLocked { locks } => {
                let list: Vec<String> = locks
                    .iter()
                    .map(|(unit, pr)| {
                        format!("{} ({}{pr})", code(unit.as_str()), spelling.ref_sigil)
                    })
                    .collect();
                let holders: std::collections::BTreeSet<u64> =
                    locks.iter().map(|(_, pr)| *pr).collect();
                let (by, until) = match holders.len() {
                    1 => (format!("an open {cr}"), "it is"),
                    _ => (format!("open {cr}s"), "they are"),
                };
                format!(
                    "Not applied: {} {} locked by {by}; apply once {until} merged or closed, or \
                     ask for `{}` there.",
                    list.join(", "),
                    if locks.len() == 1 { "is" } else { "are" },
                    cmd("unlock")
                )
            }
            Refusal::DriftApplyRefused(error) => format!(
                "Not applied: {}. Comment `{}` to check for drift again.",
                engine_reason(error),
                cmd("plan")
            ),
            Refusal::DriftRulesInvalid { branch, problem } => format!(
                "`.cascade.yaml` on {} is invalid, so cascade does not act on this \
                 issue:\n\n{}",
                code(branch),
                fenced(problem.trim_end(), "")
            ),
            Refusal::DriftOff => "Drift is not configured (or is off) in the default branch's \
                 `.cascade.yaml`; nothing was checked."
                .to_string(),
            Refusal::SubsetOnDriftIssue => format!(
                "A drift plan is applied whole: comment `{}` with its id and no units.",
                cmd("apply")
            ),
            Refusal::UnlockOnDriftIssue => format!(
                "`{}` is for {cr}s; the drift run holds no locks between runs.",
                cmd("unlock")
            ),
            Refusal::Policies(refusal) => refusal.message(spelling),
            Refusal::AfterMerge(refusal) => refusal.message(spelling),
            Refusal::State(refusal) => refusal.message(spelling),
            Refusal::Destroy(refusal) => refusal.message(spelling),
        }
    }
}

impl BaseRule {
    fn said(&self, spelling: &Spelling) -> String {
        let cr = spelling.change_request;
        let listed = if self.branches.is_empty() {
            "lists no other branches".to_string()
        } else {
            let globs: Vec<String> = self.branches.iter().map(|g| code(g)).collect();
            format!("lists only {}", globs.join(", "))
        };
        let default = code(&self.default);
        format!(
            "cascade plans {cr}s into the default branch {default} and into the branches \
             `branches:` in its `.cascade.yaml` lists; it {listed}, so this {cr} into {} is not \
             planned. Change its base to {default}, or add the branch to `branches:` on {default} \
             (review rules are always the default branch's).",
            code(&self.base),
        )
    }
}

impl Uncounted {
    /// Why each kind of approval did not count, in the order they are said.
    fn why(&self, repo: &str, head: &str, spelling: &Spelling) -> Vec<String> {
        let mentions =
            |logins: &[String]| -> Vec<String> { logins.iter().map(|l| format!("@{l}")).collect() };
        let mut why = Vec::new();
        if !self.stale.is_empty() {
            let names: Vec<String> = self
                .stale
                .iter()
                .map(|(login, commit)| format!("@{login} approved `{}`", short(commit)))
                .collect();
            why.push(format!(
                "{}, an earlier commit: approvals count only on the current head `{}`, so ask for a \
                 new review of it",
                names.join(", "),
                short(head)
            ));
        }
        if !self.unpinned.is_empty() {
            why.push(format!(
                "{} approved, but GitLab does not record on which commit, and approvals count only \
                 on the current head: turn on \"Remove all approvals when commits are added to the \
                 source branch\" in the project's merge request approval settings, or set \
                 `approvals: any_head` in `.cascade.yaml`",
                mentions(&self.unpinned).join(", ")
            ));
        }
        if !self.contributed.is_empty() {
            let names: Vec<String> = self
                .contributed
                .iter()
                .map(|(login, how)| format!("@{login} {}", how.said(spelling)))
                .collect();
            why.push(format!(
                "{}: an approval counts only from someone who did not push to it; ask another \
                 writer, or set `approvals: allow_pushers` in `.cascade.yaml`",
                names.join(", ")
            ));
        }
        if !self.without_write.is_empty() {
            why.push(format!(
                "{} approved without write permission on {repo}: only approvals from people with write \
                 permission count",
                mentions(&self.without_write).join(", "),
            ));
        }
        why
    }
}

impl Contribution {
    fn said(&self, spelling: &Spelling) -> String {
        match self {
            Contribution::Pushed => format!("pushed to this {}", spelling.change_request),
            Contribution::Committed(sha) => format!("committed `{}`", short(sha)),
        }
    }
}

/// A commit's short form, as the forges show it.
fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// The engine's reason in the engine's words, with the unit paths it names (a pull
/// request's directory names) made inert: `dev/@acme/team` must not ping the team.
fn engine_reason(error: &ApplyError) -> String {
    match error {
        ApplyError::Incomplete { id, units } => ApplyError::Incomplete {
            id: id.clone(),
            units: text(units),
        }
        .to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "refusal_tests.rs"]
mod tests;
