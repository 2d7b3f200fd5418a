//! Who may run the commands that change something (`/apply`, `/plan`, `/unlock`: one
//! right for all three), and which approving reviews count.
//!
//! The right: write permission on the repository, narrowed by `apply_permission` in the
//! base branch's `.cascade.yaml` to listed users and active members of listed teams
//! (checked with GitHub's team membership API, which needs the App's Organization →
//! Members read permission). An approval counts when its author has write permission, is
//! not the pull request's author, and reviewed the current head (unless `approvals:
//! any_head`). Everything here fails closed: an answer GitHub did not give is a refusal.
//! Every refusal names the rule that failed and what to do; nothing here posts.

use super::PrKey;
use crate::config::{ApprovalRule, RepoConfig};
use crate::forge::github::{ApiError, Installation, PullRequestInfo, Review};
use std::collections::BTreeMap;

/// Why `user` may not run `command` (`/apply`, `/plan`, `/unlock`), or `None` when they may.
pub async fn refuse_command(
    inst: &Installation,
    repo: &str,
    user: &str,
    config: &RepoConfig,
    command: &str,
) -> Option<String> {
    if !inst.permission(repo, user).await.can_write() {
        return Some(format!(
            "@{user} cannot run `{command}`: `/apply`, `/plan` and `/unlock` need write permission \
             on {repo}. Ask someone with write permission to comment `{command}`."
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
        match inst.is_team_member(&team.org, &team.slug, user).await {
            Ok(true) => return None,
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(team = %team, user, error = format!("{error:#}"), "cannot read a team membership; treating as not a member");
                unreadable |= error
                    .downcast_ref::<ApiError>()
                    .is_some_and(|e| e.status == 403);
            }
        }
    }
    // Named in code spans, not mentioned: a refusal must not notify a whole team.
    let mut who: Vec<String> = allowed.users.iter().map(|u| format!("`{u}`")).collect();
    who.extend(allowed.teams.iter().map(|t| format!("members of `{t}`")));
    let mut text = format!(
        "@{user} cannot run `{command}`: `.cascade.yaml` on the base branch lets only {} \
         (with write permission) apply, plan and unlock here. Ask one of them to comment `{command}`.",
        who.join(", ")
    );
    if unreadable {
        text.push_str(
            " cascade could not read team memberships: the GitHub App needs the Organization → \
             Members (read) permission for that; ask whoever administers the App to grant it.",
        );
    }
    Some(text)
}

/// Why the pull request's approvals do not allow `/apply` of `id`, or `None` when one
/// counts: the latest review of each reviewer other than the author is theirs; an
/// approval counts when it was given on the current head (unless `approvals: any_head`)
/// by someone with write permission.
pub async fn unapproved(
    inst: &Installation,
    key: &PrKey,
    info: &PullRequestInfo,
    config: &RepoConfig,
    id: &str,
) -> anyhow::Result<Option<String>> {
    let reviews = inst.reviews(&key.repo, key.number).await?;
    let mut latest: BTreeMap<String, &Review> = BTreeMap::new();
    for review in &reviews {
        if !matches!(review.state.as_str(), "COMMENTED" | "PENDING") {
            latest.insert(review.author.to_ascii_lowercase(), review);
        }
    }
    let approvals = latest
        .values()
        .filter(|r| r.state == "APPROVED" && !r.author.eq_ignore_ascii_case(&info.author));
    let (mut stale, mut without_write) = (Vec::new(), Vec::new());
    for review in approvals {
        if review.commit_id != info.head_sha && config.approvals == ApprovalRule::Head {
            stale.push(review);
        } else if inst.permission(&key.repo, &review.author).await.can_write() {
            return Ok(None);
        } else {
            without_write.push(review);
        }
    }
    let short = |sha: &str| sha.chars().take(7).collect::<String>();
    let mut why = Vec::new();
    if !stale.is_empty() {
        let names: Vec<String> = stale
            .iter()
            .map(|r| format!("@{} approved `{}`", r.author, short(&r.commit_id)))
            .collect();
        why.push(format!(
            "{}, an earlier commit: approvals count only on the current head `{}`, so ask for a \
             new review of it",
            names.join(", "),
            short(&info.head_sha)
        ));
    }
    if !without_write.is_empty() {
        let names: Vec<String> = without_write
            .iter()
            .map(|r| format!("@{}", r.author))
            .collect();
        why.push(format!(
            "{} approved without write permission on {}: only approvals from people with write \
             permission count",
            names.join(", "),
            key.repo
        ));
    }
    Ok(Some(if why.is_empty() {
        format!(
            "Not applied: this pull request needs an approving review from someone with write \
             permission other than @{}. Ask for a review, then comment `/apply {id}` again.",
            info.author
        )
    } else {
        format!(
            "Not applied: no approval counts yet. {}. Then comment `/apply {id}` again.",
            why.join("; ")
        )
    }))
}
