//! Who may run the commands that change something (`/apply`, `/plan`, `/unlock`: one
//! right for all three), and which approving reviews count.
//!
//! The right: write permission on the repository, narrowed by `apply_permission` in the
//! default branch's `.cascade.yaml` to listed users and active members of listed teams
//! (checked with the forge's team or group membership; on GitHub that needs the App's
//! Organization → Members read permission). An approval the forge reports counts when its
//! author has write permission, is not the change request's author, approved the current
//! head (unless `approvals: any_head`), and did not contribute to it (unless
//! `approvals: allow_pushers`), like GitHub's "require approval of the most recent
//! reviewable push": someone who pushed to it (the pushes cascade saw, `store::Pusher`) or
//! is named as author or committer of one of its commits since the base (the forge's
//! commit listing) would otherwise push onto another's change and approve it himself. The
//! forge's own approval rules must be met too (GitLab's `approved`). Everything here fails
//! closed: an answer the forge did not give (the permission, the commits) is a refusal.
//! Every refusal names the rule that failed (`refusal` words it); nothing here posts.

use super::WorkKey;
use super::ctx::PrCtx;
use super::refusal::{Contribution, Refusal, Uncounted};
use crate::config::{ApplyPermission, ApprovalRule, RepoConfig};
use crate::forge::{Actor, Approver, Commit, CommitPerson, Forge, Membership, RepoKey};
use crate::plan::PlanId;
use crate::store::{AnyStore, BotStore, Pusher};

/// Why `actor` may not run `command` (`/apply`, `/plan`, `/unlock`), or `None` when they may.
pub async fn refuse_command(
    forge: &Forge,
    repo: &RepoKey,
    actor: &Actor,
    config: &RepoConfig,
    command: &str,
) -> Option<Refusal> {
    let user = &actor.login;
    if !forge.may_write(&repo.stored(), actor).await {
        return Some(Refusal::NoWritePermission {
            login: user.clone(),
            command: command.to_string(),
            repo: repo.clone(),
        });
    }
    let Some(allowed) = &config.apply_permission else {
        return None;
    };
    match listed(forge, actor, allowed).await {
        Listed::Yes => None,
        Listed::No { unreadable } => Some(Refusal::NotPermitted {
            login: user.clone(),
            command: command.to_string(),
            users: allowed.users.clone(),
            teams: allowed.teams.iter().map(|t| t.to_string()).collect(),
            memberships_unreadable: unreadable,
        }),
    }
}

/// Whether a list of people (`apply_permission`, a policy set's `owners`) names someone.
pub enum Listed {
    Yes,
    /// Not named; `unreadable` when the forge would not say whether they are in one of
    /// its teams (which then counts as not).
    No {
        unreadable: bool,
    },
}

/// Whether `actor` is one of `who`'s users or an active member of one of its teams.
pub async fn listed(forge: &Forge, actor: &Actor, who: &ApplyPermission) -> Listed {
    let user = &actor.login;
    if who.lists_user(user) {
        return Listed::Yes;
    }
    let mut unreadable = false;
    for team in &who.teams {
        match forge.membership(&team.to_string(), actor).await {
            Ok(Membership::Member) => return Listed::Yes,
            Ok(Membership::NotMember) => {}
            Ok(Membership::Unreadable) => unreadable = true,
            Err(error) => {
                tracing::warn!(team = %team, user, error = format!("{error:#}"), "cannot read a team membership; treating as not a member");
            }
        }
    }
    Listed::No { unreadable }
}

/// Why the change request's approvals do not allow `/apply` of `id`, or `None` when one
/// counts: an approval in force (the forge says which) counts when it is not the author's,
/// was given on the current head (unless `approvals: any_head`), its author did not push
/// to the change request or make one of its commits (unless `approvals: allow_pushers`)
/// and has write permission; then the forge's own rules must want no more approvals.
pub async fn unapproved(
    ctx: &PrCtx,
    config: &RepoConfig,
    id: &PlanId,
) -> anyhow::Result<Option<Refusal>> {
    let (forge, store, key, cr) = (&ctx.forge, ctx.bot.store.as_ref(), &ctx.key, &ctx.pr);
    let approvals = forge
        .approvals(&key.repo().stored(), key.number(), cr)
        .await?;
    let counted = approvals
        .approvers
        .iter()
        .filter(|a| !a.actor.login.eq_ignore_ascii_case(cr.author_login()));
    let mut uncounted = Uncounted::default();
    // Read once, for the first approval that gets this far.
    let mut contributors: Option<Contributors> = None;
    let on_head = config.approvals == ApprovalRule::Head;
    let login = |approver: &Approver| approver.actor.login.clone();
    for approver in counted {
        match &approver.commit {
            Some(commit) if on_head && commit != cr.head_sha.as_str() => {
                uncounted.stale.push((login(approver), commit.clone()));
                continue;
            }
            None if on_head => {
                uncounted.unpinned.push(login(approver));
                continue;
            }
            _ => {}
        }
        if !config.pushers_may_approve {
            if contributors.is_none() {
                match Contributors::read(forge, store, key).await? {
                    Ok(read) => contributors = Some(read),
                    Err(error) => {
                        return Ok(Some(Refusal::CommitsUnread {
                            id: id.clone(),
                            error,
                        }));
                    }
                }
            }
            if let Some(how) = contributors.as_ref().and_then(|c| c.how(approver)) {
                uncounted.contributed.push((login(approver), how));
                continue;
            }
        }
        if forge.may_write(&key.repo().stored(), &approver.actor).await {
            // An approval counts; the forge's own rules (GitLab's approvals required,
            // approval rules, code owners) may still want more.
            let missing = approvals.still_required;
            return Ok((missing > 0).then(|| Refusal::ForgeApprovalsMissing {
                id: id.clone(),
                missing,
            }));
        }
        uncounted.without_write.push(login(approver));
    }
    Ok(Some(if uncounted.is_empty() {
        Refusal::NoApproval {
            id: id.clone(),
            author: cr.author_login().to_string(),
        }
    } else {
        Refusal::ApprovalsUncounted {
            id: id.clone(),
            repo: key.repo().stored(),
            head: cr.head_sha.to_string(),
            uncounted,
        }
    }))
}

/// Who contributed to a change request: the pushes cascade saw, and its commits since
/// the base with their authors and committers.
pub(super) struct Contributors {
    pushers: Vec<Pusher>,
    commits: Vec<Commit>,
}

impl Contributors {
    /// The recorded pushers and the forge's commits; a store error is an error, a forge
    /// that does not list the commits a refusal (fail closed).
    pub(super) async fn read(
        forge: &Forge,
        store: &AnyStore,
        key: &WorkKey,
    ) -> anyhow::Result<Result<Contributors, String>> {
        let pushers = store.pushers(&key.repo().stored(), key.number()).await?;
        match forge.commits(&key.repo().stored(), key.number()).await {
            Ok(commits) => Ok(Ok(Contributors { pushers, commits })),
            Err(error) => {
                tracing::warn!(pr = %key, error = format!("{error:#}"), "cannot read the commits; no approval counts");
                Ok(Err(error.to_string()))
            }
        }
    }

    /// How `approver` contributed, if they did: a push first, else their first commit.
    pub(super) fn how(&self, approver: &Approver) -> Option<Contribution> {
        let actor = &approver.actor;
        if self.pushers.iter().any(|p| same_account(actor, p)) {
            return Some(Contribution::Pushed);
        }
        self.commits
            .iter()
            .find(|c| c.people.iter().any(|person| commit_names(person, approver)))
            .map(|c| Contribution::Committed(c.sha.clone()))
    }
}

/// The same account: equal ids where both are known, or equal logins (GitHub and GitLab
/// compare them ignoring case). Either is enough, so a renamed account is still caught.
fn same_account(actor: &Actor, pusher: &Pusher) -> bool {
    matches!((actor.id, pusher.user_id), (Some(a), Some(b)) if a == b)
        || actor.login.eq_ignore_ascii_case(&pusher.login)
}

/// Whether a commit's author or committer is `approver`. An account the forge linked
/// is compared by login. A name and email written in the commit (GitLab links none) are
/// matched loosely: the name equal to the approver's username or display name, or the
/// email's local part equal to their username, ignoring case and surrounding spaces.
/// This fails closed: whoever made the commit chose what it says, so a match, even a
/// coincidence or a forgery, can only stop an approval from counting, never make one
/// count; and who really pushed is caught by the push events, which the forge
/// authenticates.
fn commit_names(person: &CommitPerson, approver: &Approver) -> bool {
    let login = approver.actor.login.trim();
    let same = |written: &str, known: &str| {
        let written = written.trim();
        !written.is_empty() && written.to_lowercase() == known.trim().to_lowercase()
    };
    match person {
        CommitPerson::Account(account) => same(account, login),
        CommitPerson::Written { name, email } => {
            let local = email.rsplit_once('@').map_or(email.as_str(), |(l, _)| l);
            same(name, login)
                || approver.name.as_deref().is_some_and(|n| same(name, n))
                || same(local, login)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approver(login: &str, id: Option<u64>, name: Option<&str>) -> Approver {
        Approver {
            actor: Actor {
                id,
                login: login.into(),
            },
            name: name.map(str::to_string),
            commit: None,
        }
    }

    fn written(name: &str, email: &str) -> CommitPerson {
        CommitPerson::Written {
            name: name.into(),
            email: email.into(),
        }
    }

    #[test]
    fn a_linked_account_names_the_approver_by_login_ignoring_case() {
        let carol = approver("carol", None, None);
        assert!(commit_names(&CommitPerson::Account("Carol".into()), &carol));
        assert!(!commit_names(
            &CommitPerson::Account("carolyn".into()),
            &carol
        ));
    }

    #[test]
    fn a_written_name_or_email_names_the_approver_loosely() {
        let carol = approver("carol", Some(7), Some("Carol Émile"));
        assert!(commit_names(&written("CAROL", "x@example.com"), &carol));
        assert!(commit_names(
            &written(" carol émile ", "x@example.com"),
            &carol
        ));
        assert!(commit_names(&written("C. E.", "Carol@example.com"), &carol));
        assert!(!commit_names(
            &written("Carolyn", "carolyn@example.com"),
            &carol
        ));
        // An empty name names nobody, even an approver without a display name.
        assert!(!commit_names(
            &written("", ""),
            &approver("carol", None, None)
        ));
    }

    #[test]
    fn a_pusher_is_the_approver_by_id_or_by_login() {
        let pusher = |login: &str, user_id| Pusher {
            login: login.into(),
            user_id,
            head_sha: "h".into(),
        };
        let bob = Actor {
            id: Some(5),
            login: "bob".into(),
        };
        assert!(same_account(&bob, &pusher("BOB", None)));
        // Renamed since the push: the id still says who.
        assert!(same_account(&bob, &pusher("bobby", Some(5))));
        assert!(!same_account(&bob, &pusher("bobby", Some(6))));
        assert!(!same_account(&bob, &pusher("carol", None)));
    }
}
