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
//! Every refusal names the rule that failed and what to do; nothing here posts.

use super::PrKey;
use crate::comment::inert::code;
use crate::config::{ApprovalRule, RepoConfig};
use crate::forge::{
    Actor, Approver, ChangeRequest, Commit, CommitPerson, Forge, ForgeKind, Membership, Spelling,
};
use crate::store::{AnyStore, BotStore, Pusher};

/// Why `actor` may not run `command` (`/apply`, `/plan`, `/unlock`), or `None` when they may.
pub async fn refuse_command(
    forge: &Forge,
    repo: &str,
    actor: &Actor,
    config: &RepoConfig,
    command: &str,
) -> Option<String> {
    let user = &actor.login;
    let spelling = forge.spelling();
    // The command as typed may name units: it is quoted inert (`/plan @team.` pings no one).
    let command = code(command);
    if !forge.may_write(repo, actor).await {
        return Some(format!(
            "@{user} cannot run {command}: `{}`, `{}` and `{}` need write permission \
             on {repo}. Ask someone with write permission to comment {command}.",
            spelling.command("apply"),
            spelling.command("plan"),
            spelling.command("unlock"),
        ));
    }
    let Some(allowed) = &config.apply_permission else {
        return None;
    };
    if allowed.lists_user(user) {
        return None;
    }
    let mut unreadable = false;
    for team in &allowed.teams {
        match forge.membership(&team.to_string(), actor).await {
            Ok(Membership::Member) => return None,
            Ok(Membership::NotMember) => {}
            Ok(Membership::Unreadable) => unreadable = true,
            Err(error) => {
                tracing::warn!(team = %team, user, error = format!("{error:#}"), "cannot read a team membership; treating as not a member");
            }
        }
    }
    // Named in code spans, not mentioned: a refusal must not notify a whole team.
    let mut who: Vec<String> = allowed.users.iter().map(|u| code(u)).collect();
    who.extend(
        allowed
            .teams
            .iter()
            .map(|t| format!("members of {}", code(&t.to_string()))),
    );
    let mut text = format!(
        "@{user} cannot run {command}: `.cascade.yaml` on the default branch lets only {} \
         (with write permission) apply, plan and unlock here. Ask one of them to comment {command}.",
        who.join(", ")
    );
    if unreadable {
        text.push_str(match forge.kind() {
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
    Some(text)
}

/// Why the change request's approvals do not allow `/apply` of `id`, or `None` when one
/// counts: an approval in force (the forge says which) counts when it is not the author's,
/// was given on the current head (unless `approvals: any_head`), its author did not push
/// to the change request or make one of its commits (unless `approvals: allow_pushers`)
/// and has write permission; then the forge's own rules must want no more approvals.
pub async fn unapproved(
    forge: &Forge,
    store: &AnyStore,
    key: &PrKey,
    cr: &ChangeRequest,
    config: &RepoConfig,
    id: &str,
) -> anyhow::Result<Option<String>> {
    let approvals = forge.approvals(&key.repo, key.number, cr).await?;
    let spelling = forge.spelling();
    let apply = spelling.command(&format!("apply {id}"));
    let counted = approvals
        .approvers
        .iter()
        .filter(|a| !a.actor.login.eq_ignore_ascii_case(&cr.author));
    let (mut stale, mut unpinned, mut without_write) = (Vec::new(), Vec::new(), Vec::new());
    let mut contributed = Vec::new();
    // Read once, for the first approval that gets this far.
    let mut contributors: Option<Contributors> = None;
    let on_head = config.approvals == ApprovalRule::Head;
    for approver in counted {
        match &approver.commit {
            Some(commit) if on_head && *commit != cr.head_sha => {
                stale.push((approver, commit));
                continue;
            }
            None if on_head => {
                unpinned.push(approver);
                continue;
            }
            _ => {}
        }
        if !config.pushers_may_approve {
            if contributors.is_none() {
                match Contributors::read(forge, store, key).await? {
                    Ok(read) => contributors = Some(read),
                    Err(refusal) => return Ok(Some(refusal.text(spelling, &apply))),
                }
            }
            if let Some(how) = contributors.as_ref().and_then(|c| c.how(approver)) {
                contributed.push((approver, how));
                continue;
            }
        }
        if forge.may_write(&key.repo, &approver.actor).await {
            return Ok(forge_rules_unmet(
                approvals.still_required,
                spelling,
                &apply,
            ));
        }
        without_write.push(approver);
    }
    let names = |list: &[&Approver]| -> Vec<String> {
        list.iter().map(|a| format!("@{}", a.actor.login)).collect()
    };
    let mut why = Vec::new();
    if !stale.is_empty() {
        let names: Vec<String> = stale
            .iter()
            .map(|(a, commit)| format!("@{} approved `{}`", a.actor.login, short(commit)))
            .collect();
        why.push(format!(
            "{}, an earlier commit: approvals count only on the current head `{}`, so ask for a \
             new review of it",
            names.join(", "),
            short(&cr.head_sha)
        ));
    }
    if !unpinned.is_empty() {
        why.push(format!(
            "{} approved, but GitLab does not record on which commit, and approvals count only \
             on the current head: turn on \"Remove all approvals when commits are added to the \
             source branch\" in the project's merge request approval settings, or set \
             `approvals: any_head` in `.cascade.yaml`",
            names(&unpinned).join(", ")
        ));
    }
    if !contributed.is_empty() {
        let names: Vec<String> = contributed
            .iter()
            .map(|(a, how)| format!("@{} {}", a.actor.login, how.said(spelling)))
            .collect();
        why.push(format!(
            "{}: an approval counts only from someone who did not push to it; ask another \
             writer, or set `approvals: allow_pushers` in `.cascade.yaml`",
            names.join(", ")
        ));
    }
    if !without_write.is_empty() {
        why.push(format!(
            "{} approved without write permission on {}: only approvals from people with write \
             permission count",
            names(&without_write).join(", "),
            key.repo
        ));
    }
    Ok(Some(if why.is_empty() {
        format!(
            "Not applied: this {} needs an approving review from someone with write \
             permission other than @{}. Ask for a review, then comment `{apply}` again.",
            spelling.change_request, cr.author
        )
    } else {
        format!(
            "Not applied: no approval counts yet. {}. Then comment `{apply}` again.",
            why.join("; ")
        )
    }))
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// Who contributed to a change request: the pushes cascade saw, and its commits since
/// the base with their authors and committers.
struct Contributors {
    pushers: Vec<Pusher>,
    commits: Vec<Commit>,
}

/// How an approver contributed.
enum Contribution {
    Pushed,
    Committed(String),
}

impl Contribution {
    fn said(&self, spelling: &Spelling) -> String {
        match self {
            Contribution::Pushed => format!("pushed to this {}", spelling.change_request),
            Contribution::Committed(sha) => format!("committed `{}`", short(sha)),
        }
    }
}

/// The forge would not list the commits: no approval can be shown to be independent.
struct CommitsUnread(String);

impl CommitsUnread {
    fn text(&self, spelling: &Spelling, apply: &str) -> String {
        format!(
            "Not applied: cascade could not read this {}'s commits ({}), and an approval \
             counts only from someone who did not push to it or make one of its commits. \
             Comment `{apply}` again later, or set `approvals: allow_pushers` in `.cascade.yaml`.",
            spelling.change_request, self.0
        )
    }
}

impl Contributors {
    /// The recorded pushers and the forge's commits; a store error is an error, a forge
    /// that does not list the commits a refusal (fail closed).
    async fn read(
        forge: &Forge,
        store: &AnyStore,
        key: &PrKey,
    ) -> anyhow::Result<Result<Contributors, CommitsUnread>> {
        let pushers = store.pushers(&key.repo, key.number).await?;
        match forge.commits(&key.repo, key.number).await {
            Ok(commits) => Ok(Ok(Contributors { pushers, commits })),
            Err(error) => {
                tracing::warn!(pr = %key, error = format!("{error:#}"), "cannot read the commits; no approval counts");
                Ok(Err(CommitsUnread(error.to_string())))
            }
        }
    }

    /// How `approver` contributed, if they did: a push first, else their first commit.
    fn how(&self, approver: &Approver) -> Option<Contribution> {
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

/// The refusal when an approval counts for cascade but the forge's own approval rules
/// (GitLab's approvals required, approval rules, code owners) still want `missing` more.
fn forge_rules_unmet(missing: u64, spelling: &Spelling, apply: &str) -> Option<String> {
    (missing > 0).then(|| {
        format!(
            "Not applied: the project's approval rules still want {missing} more approval{} \
             on this {}. Ask for {}, then comment `{apply}` again.",
            if missing == 1 { "" } else { "s" },
            spelling.change_request,
            if missing == 1 {
                "another review"
            } else {
                "more reviews"
            },
        )
    })
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
