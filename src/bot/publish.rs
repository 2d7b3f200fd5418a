//! What the bot posts: the one cascade comment per pull request (edited in
//! place, found again by its hidden marker), replies to commands, and the
//! `cascade` check run per head.

use super::{Bot, PrKey};
use crate::comment::PLAN_MARKER;
use crate::forge::github::{CheckStatus, Installation};
use crate::store::{PullRequestRecord, Store};

/// Posts or edits the cascade comment with `parts` (more than one only when
/// the plan is longer than GitHub allows in one comment).
pub async fn upsert_comment(
    inst: &Installation,
    key: &PrKey,
    record: &mut PullRequestRecord,
    parts: &[String],
) -> anyhow::Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    let mut posted = false;
    if let Some(id) = record.comment_id {
        posted = inst.update_comment(&key.repo, id, first).await.is_ok();
    }
    if !posted {
        // After a restart the id may be unknown: find our comment by its marker.
        let ours = inst
            .comments(&key.repo, key.number)
            .await?
            .into_iter()
            .find(|c| c.body.starts_with(PLAN_MARKER));
        match ours {
            Some(c) => {
                inst.update_comment(&key.repo, c.id, first).await?;
                record.comment_id = Some(c.id);
            }
            None => {
                let c = inst.create_comment(&key.repo, key.number, first).await?;
                record.comment_id = Some(c.id);
            }
        }
    }
    for part in rest {
        inst.create_comment(&key.repo, key.number, part).await?;
    }
    Ok(())
}

/// A reply to a command or an event: what went wrong and what to do next.
pub async fn reply(inst: &Installation, key: &PrKey, body: &str) -> anyhow::Result<()> {
    inst.create_comment(&key.repo, key.number, body)
        .await
        .map(|_| ())
}

/// One generic comment for an internal error; the details are in the server's log.
pub async fn internal_error(bot: &Bot, key: &PrKey) -> anyhow::Result<()> {
    let Some(record) = bot.store.pull_request(&key.repo, key.number).await? else {
        return Ok(());
    };
    let inst = bot.github.installation(record.installation_id).await?;
    reply(
        &inst,
        key,
        "cascade hit an internal error while handling this pull request; the details are in the server's log. \
         Comment `/plan` to try again, or ask whoever runs cascade.",
    )
    .await
}

/// Says, once, that an event for this pull request was dropped after the
/// server stopped every time it handled it (see `super::MAX_DELIVERY_ATTEMPTS`).
pub async fn delivery_dropped(bot: &Bot, key: &PrKey, installation: u64) -> anyhow::Result<()> {
    let inst = bot.github.installation(installation).await?;
    reply(
        &inst,
        key,
        &format!(
            "cascade dropped an event for this pull request: the server stopped {} times while handling it, \
             so it will not try again. Push a new commit or comment `/plan` to try again; if that fails too, \
             ask whoever runs cascade (the server's log names the delivery).",
            super::MAX_DELIVERY_ATTEMPTS
        ),
    )
    .await
}

/// Starts the `cascade` check run for a head, or updates the one already there.
pub async fn check(
    inst: &Installation,
    key: &PrKey,
    record: &mut PullRequestRecord,
    status: CheckStatus,
    title: &str,
    summary: &str,
) -> anyhow::Result<()> {
    match record.check_run_id {
        Some(id) => {
            inst.update_check_run(&key.repo, id, status, title, summary)
                .await
        }
        None => {
            let id = inst
                .create_check_run(&key.repo, &record.head_sha, status, title, summary)
                .await?;
            record.check_run_id = Some(id);
            Ok(())
        }
    }
}
