//! Who may run the commands that change something (`/apply`, `/plan`, `/unlock`: one
//! right for all three), and which approving reviews count.
//!
//! The right: write permission on the repository, narrowed by `apply_permission` in the
//! default branch's `.cascade.yaml` to listed users and active members of listed teams
//! (checked with the forge's team or group membership; on GitHub that needs the App's
//! Organization → Members read permission). An approval the forge reports counts when its
//! author has write permission, is not the change request's author, and approved the
//! current head (unless `approvals: any_head`); the forge's own approval rules must be met
//! too (GitLab's `approved`). Everything here fails closed: an answer the forge did not
//! give is a refusal.
//! Every refusal names the rule that failed and what to do; nothing here posts.

use super::PrKey;
use crate::config::{ApprovalRule, RepoConfig};
use crate::forge::{Actor, Approver, ChangeRequest, Forge, ForgeKind, Membership, Spelling};

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
    if !forge.may_write(repo, actor).await {
        return Some(format!(
            "@{user} cannot run `{command}`: `{}`, `{}` and `{}` need write permission \
             on {repo}. Ask someone with write permission to comment `{command}`.",
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
    let mut who: Vec<String> = allowed.users.iter().map(|u| format!("`{u}`")).collect();
    who.extend(allowed.teams.iter().map(|t| format!("members of `{t}`")));
    let mut text = format!(
        "@{user} cannot run `{command}`: `.cascade.yaml` on the default branch lets only {} \
         (with write permission) apply, plan and unlock here. Ask one of them to comment `{command}`.",
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
/// was given on the current head (unless `approvals: any_head`) and its author has write
/// permission; then the forge's own rules must want no more approvals.
pub async fn unapproved(
    forge: &Forge,
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
    let on_head = config.approvals == ApprovalRule::Head;
    for approver in counted {
        match &approver.commit {
            Some(commit) if on_head && *commit != cr.head_sha => stale.push((approver, commit)),
            None if on_head => unpinned.push(approver),
            _ if forge.may_write(&key.repo, &approver.actor).await => {
                return Ok(forge_rules_unmet(
                    approvals.still_required,
                    spelling,
                    &apply,
                ));
            }
            _ => without_write.push(approver),
        }
    }
    let short = |sha: &str| sha.chars().take(7).collect::<String>();
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
