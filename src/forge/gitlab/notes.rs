//! Notes on merge requests and issues: listing, posting (never twice after a 5xx),
//! editing and deleting cascade's own, and the `eyes` award on a command's note. The
//! two kinds of note have their own endpoints; [`Noteable`] says which. Nothing here
//! decides what a note says.

use anyhow::Context as _;
use gitlab::api::common::SortOrder;
use gitlab::api::projects::issues::notes::IssueNotes;
use gitlab::api::projects::merge_requests::notes::awards::CreateMergeRequestNoteAward;
use gitlab::api::projects::merge_requests::notes::{
    CreateMergeRequestNote, EditMergeRequestNote, MergeRequestNotes, NoteOrderBy,
};
use gitlab::api::{AsyncQuery, Endpoint};

use super::wire::{DeleteMergeRequestNote, WireId, WireNote};
use super::{ApiError, Project, built, transport};
use crate::forge::newest_since;
use crate::forge::types::OwnComment;

/// GitLab answers a repeated award with 404 "Award Emoji Name has already been taken".
pub(super) fn already_awarded(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<ApiError>()
        .is_some_and(|e| e.status == 404 && e.message.contains("already been taken"))
}

/// What a note is on: its listing and create endpoints differ.
#[derive(Clone, Copy)]
pub(super) enum Noteable {
    MergeRequest,
    Issue,
}

impl Project {
    /// Every note on the merge request or issue, oldest first, and GitLab's clock when it
    /// answered.
    pub(super) async fn notes(
        &self,
        on: Noteable,
        number: u64,
    ) -> anyhow::Result<(Vec<WireNote>, Option<std::time::SystemTime>)> {
        let call = self.inner.transport.call("notes.list");
        let notes = match on {
            Noteable::MergeRequest => {
                let endpoint = MergeRequestNotes::builder()
                    .project(self.id)
                    .merge_request(number)
                    .order_by(NoteOrderBy::CreatedAt)
                    .sort(SortOrder::Ascending)
                    .build()
                    .map_err(built)?;
                self.inner.list(&call, endpoint).await?
            }
            Noteable::Issue => {
                let endpoint = IssueNotes::builder()
                    .project(self.id)
                    .issue(number)
                    .order_by(NoteOrderBy::CreatedAt)
                    .sort(SortOrder::Ascending)
                    .build()
                    .map_err(built)?;
                self.inner.list(&call, endpoint).await?
            }
        };
        Ok((notes, call.date()))
    }

    /// cascade's own notes (by the token's user, not system notes), oldest first.
    pub async fn own_comments(&self, repo: &str, number: u64) -> anyhow::Result<Vec<OwnComment>> {
        let me = self.me().await?;
        let (notes, _) = self
            .notes(Noteable::MergeRequest, number)
            .await
            .with_context(|| format!("could not list the notes on {repo}!{number}"))?;
        Ok(notes
            .into_iter()
            .filter(|n| Some(n.author.id) == me.id && !n.system)
            .map(|n| OwnComment {
                id: n.id,
                created_at: n.created(),
                body: n.body,
            })
            .collect())
    }

    /// Posts a note. A create that failed with a 5xx or no answer may have been stored
    /// all the same, so before sending it again the notes are read: one of ours with
    /// exactly `body`, stored since the first attempt was sent (by GitLab's clock, to the
    /// second), is the note.
    pub async fn create_comment(&self, repo: &str, number: u64, body: &str) -> anyhow::Result<u64> {
        let endpoint = CreateMergeRequestNote::builder()
            .project(self.id)
            .merge_request(number)
            .body(body)
            .build()
            .map_err(built)?;
        self.create_once(
            "notes.create",
            endpoint,
            |made: WireId| made.id,
            move |since| self.stored_since(Noteable::MergeRequest, number, body, since),
        )
        .await
        .with_context(|| format!("could not post a note on {repo}!{number}"))
    }

    /// Sends a create GitLab may have stored although it answered with a 5xx or not at
    /// all: before each new attempt, `stored` looks for what an earlier one made (given
    /// when the first was sent), so nothing is created twice. Returns the new id (a
    /// note's id, an issue's iid: `read`).
    pub(crate) async fn create_once<E, W, Stored>(
        &self,
        kind: &'static str,
        endpoint: E,
        read: impl Fn(W) -> u64,
        stored: impl Fn(tokio::time::Instant) -> Stored,
    ) -> anyhow::Result<u64>
    where
        E: Endpoint + Sync,
        W: serde::de::DeserializeOwned + Send + 'static,
        Stored: std::future::Future<Output = anyhow::Result<Option<u64>>>,
    {
        let policy = self.inner.transport.policy().clone();
        let started = tokio::time::Instant::now();
        let mut attempt = 1;
        loop {
            let call = self.inner.transport.call(kind).no_server_retry();
            let error = match endpoint.query_async(&call).await {
                Ok(made) => return Ok(read(made)),
                Err(error) => call.error(error),
            };
            if !transport::is_server_failure(&error) {
                return Err(error);
            }
            if let Some(id) = stored(started).await? {
                tracing::info!(kind, id, "a create failed but GitLab had stored it");
                return Ok(id);
            }
            if attempt >= policy.max_attempts {
                return Err(error.context(format!(
                    "cascade gave up on {kind} after {attempt} attempts"
                )));
            }
            let wait = policy.server_errors().wait_before(attempt);
            tracing::warn!(
                kind,
                wait_ms = wait.as_millis() as u64,
                "GitLab failed to create: retrying"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The newest note of ours on the merge request or issue with exactly `body` that
    /// GitLab stored after `since` (a local instant, moved onto GitLab's clock).
    pub(super) async fn stored_since(
        &self,
        on: Noteable,
        number: u64,
        body: &str,
        since: tokio::time::Instant,
    ) -> anyhow::Result<Option<u64>> {
        let me = self.me().await?;
        let (notes, date) = self.notes(on, number).await?;
        let ours = notes
            .into_iter()
            .filter(|n| Some(n.author.id) == me.id && !n.system);
        Ok(newest_since(ours, date, since, WireNote::created, |n| n.body == body).map(|n| n.id))
    }

    pub async fn edit_comment(
        &self,
        repo: &str,
        number: u64,
        id: u64,
        body: &str,
    ) -> anyhow::Result<()> {
        let endpoint = EditMergeRequestNote::builder()
            .project(self.id)
            .merge_request(number)
            .note(id)
            .body(body)
            .build()
            .map_err(built)?;
        let _: WireId = self
            .inner
            .query("notes.edit", endpoint)
            .await
            .with_context(|| format!("could not edit note {id} on {repo}!{number}"))?;
        Ok(())
    }

    /// Deletes one of cascade's notes; one already gone counts as deleted.
    pub async fn delete_comment(&self, repo: &str, number: u64, id: u64) -> anyhow::Result<()> {
        let endpoint = DeleteMergeRequestNote {
            project: self.id,
            merge_request: number,
            note: id,
        };
        match self.inner.ignore("notes.delete", endpoint).await {
            Err(error) if transport::status_of(&error) == Some(404) => Ok(()),
            other => {
                other.with_context(|| format!("could not delete note {id} on {repo}!{number}"))
            }
        }
    }

    /// Awards `eyes` on a note ("seen, working on it"); awarding it twice is no error.
    pub async fn acknowledge(
        &self,
        repo: &str,
        number: u64,
        comment_id: u64,
    ) -> anyhow::Result<()> {
        let endpoint = CreateMergeRequestNoteAward::builder()
            .project(self.id)
            .merge_request(number)
            .note(comment_id)
            .name("eyes")
            .build()
            .map_err(built)?;
        match self.inner.query::<WireId, _>("notes.award", endpoint).await {
            Ok(_) => Ok(()),
            Err(error) if already_awarded(&error) => Ok(()),
            Err(error) => Err(error.context(format!(
                "could not award eyes on note {comment_id} on {repo}!{number}"
            ))),
        }
    }
}
