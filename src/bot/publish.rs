//! What the bot posts: the one cascade plan comment per pull request (its first part
//! edited in place and found again by its hidden marker; further parts remembered in
//! the store, edited in place on the next plan and deleted when a plan needs fewer),
//! replies to commands (at most [`super::reply_limit::REPLIES_PER_WINDOW`] per pull
//! request in a window), and the `cascade` check run per head.
//!
//! Only the App's own comments are ever edited or deleted: a user's comment that copies
//! cascade's marker is left alone.

use super::refusal::Refusal;
use super::reply_limit::Allowance;
use super::{Bot, WorkKey};
use crate::comment::PLAN_MARKER;
use crate::forge::{CheckOutput, Forge, ForgeRef, Spelling};
use crate::store::{BotStore, PullRequestRecord};

/// Posts or edits the cascade plan comment with `parts` (more than one only when the
/// plan is longer than GitHub allows in one comment). One part costs one write (an edit,
/// or a create the first time); each further part one more, and each part the previous
/// plan had beyond these one deletion.
pub async fn upsert_comment(
    bot: &Bot,
    forge: &Forge,
    key: &WorkKey,
    record: &mut PullRequestRecord,
    parts: &[String],
) -> anyhow::Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    let mut posted = false;
    if let Some(id) = record.comment_id {
        posted = forge
            .edit_comment(&key.repo().stored(), key.number(), id, first)
            .await
            .is_ok();
    }
    if !posted {
        // After a restart the id may be unknown: find our comment by its marker.
        let ours = forge
            .own_comments(&key.repo().stored(), key.number())
            .await?
            .into_iter()
            .find(|c| c.body.starts_with(PLAN_MARKER));
        match ours {
            Some(c) => {
                forge
                    .edit_comment(&key.repo().stored(), key.number(), c.id, first)
                    .await?;
                record.comment_id = Some(c.id);
            }
            None => {
                let id = forge
                    .create_comment(&key.repo().stored(), key.number(), first)
                    .await?;
                record.comment_id = Some(id);
            }
        }
    }
    let known = bot
        .store
        .comment_parts(&key.repo().stored(), key.number())
        .await?;
    let mut ids = Vec::with_capacity(rest.len());
    for (i, part) in rest.iter().enumerate() {
        let edited = match known.get(i) {
            Some(id) => forge
                .edit_comment(&key.repo().stored(), key.number(), *id, part)
                .await
                .is_ok(),
            None => false,
        };
        if edited {
            ids.push(known[i]);
        } else {
            ids.push(
                forge
                    .create_comment(&key.repo().stored(), key.number(), part)
                    .await?,
            );
        }
        // Remembered part by part: a failure half-way leaves no part unknown.
        let mut so_far = ids.clone();
        so_far.extend(known.iter().skip(ids.len()));
        bot.store
            .set_comment_parts(&key.repo().stored(), key.number(), &so_far)
            .await?;
    }
    for surplus in known.iter().skip(rest.len()) {
        forge
            .delete_comment(&key.repo().stored(), key.number(), *surplus)
            .await?;
    }
    bot.store
        .set_comment_parts(&key.repo().stored(), key.number(), &ids)
        .await
}

/// A reply to a command or an event: what went wrong and what to do next. Counted
/// against the pull request's reply limit: past it, one notice, then nothing.
pub async fn reply(bot: &Bot, forge: &Forge, key: &WorkKey, body: &str) -> anyhow::Result<()> {
    let Some(body) = limited(bot, forge, key, body) else {
        return Ok(());
    };
    forge
        .create_comment(&key.repo().stored(), key.number(), &body)
        .await
        .map(|_| ())
}

/// What a reply on `key`'s conversation may say now: `body`, the one notice that
/// the reply limit is reached, or nothing (`None`) past that.
pub fn limited(bot: &Bot, forge: &Forge, key: &WorkKey, body: &str) -> Option<String> {
    let body = match bot.replies.take(key) {
        Allowance::Reply => body.to_string(),
        Allowance::LastWord { until } => {
            let minutes = until
                .saturating_duration_since(tokio::time::Instant::now())
                .as_secs()
                .div_ceil(60)
                .max(1);
            Refusal::ReplyLimit {
                replies: super::reply_limit::REPLIES_PER_WINDOW,
                window_minutes: super::reply_limit::REPLY_WINDOW.as_secs() / 60,
                minutes,
            }
            .message(forge.spelling())
        }
        Allowance::Quiet => {
            tracing::info!(pr = %key, "reply limit reached: not replying");
            return None;
        }
    };
    Some(body)
}

/// One generic comment for an internal error; the details are in the server's log.
/// `at` is the forge of the job that failed: a pull request's first plan can fail before
/// anything about it is stored (a refused fetch), and its authors must still hear of it.
pub async fn internal_error(bot: &Bot, key: &WorkKey, at: ForgeRef) -> anyhow::Result<()> {
    let at = match bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?
    {
        Some(record) => ForgeRef::stored(&record.repo, record.installation_id),
        None => at,
    };
    say(bot, key, at, |spelling| {
        format!(
            "cascade hit an internal error while handling this {}; the details are in the server's log. \
             Comment `{}` to try again, or ask whoever runs cascade.",
            spelling.change_request,
            spelling.command("plan"),
        )
    })
    .await
}

/// Says, once, that an event for this pull request was dropped after the
/// server stopped every time it handled it (see `super::MAX_DELIVERY_ATTEMPTS`).
pub async fn delivery_dropped(bot: &Bot, key: &WorkKey, at: ForgeRef) -> anyhow::Result<()> {
    say(bot, key, at, |spelling| {
        format!(
            "cascade dropped an event for this {}: the server stopped {} times while handling it, \
             so it will not try again. Push a new commit or comment `{}` to try again; if that fails too, \
             ask whoever runs cascade (the server's log names the delivery).",
            spelling.change_request,
            super::MAX_DELIVERY_ATTEMPTS,
            spelling.command("plan"),
        )
    })
    .await
}

/// A reply worded for the forge at `at`, on a pull request no job has a context for
/// (its job failed, or never ran).
async fn say(
    bot: &Bot,
    key: &WorkKey,
    at: ForgeRef,
    words: impl FnOnce(&Spelling) -> String,
) -> anyhow::Result<()> {
    let forge = bot.forges.open(at).await?;
    let body = words(forge.spelling());
    reply(bot, &forge, key, &body).await
}

/// Starts the `cascade` check for a head (on branch `head_ref`), or updates the one
/// already there.
pub async fn check(
    forge: &Forge,
    key: &WorkKey,
    record: &mut PullRequestRecord,
    head_ref: &str,
    output: &CheckOutput,
) -> anyhow::Result<()> {
    let id = forge
        .set_check(
            &key.repo().stored(),
            key.number(),
            &record.head_sha,
            head_ref,
            record.check_run_id,
            output,
        )
        .await?;
    record.check_run_id = Some(id);
    Ok(())
}
