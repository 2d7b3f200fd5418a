//! The GitLab webhook receiver (`POST /webhooks/gitlab`): authenticate (the
//! secret token, then the signature where a signing token is configured),
//! read the delivery's identity, hold the project it names to the token (a secret
//! given for one project speaks for that project only) and to the configured
//! instance (its URLs at `--gitlab-url`'s origin), parse, persist, acknowledge.
//! Nothing is acted on here; a verified delivery is stored (as
//! `gitlab:<X-Gitlab-Event>`) before the response, then handed to the bot.
//!
//! As for GitHub, nothing a sender controls reaches a metric label or a log
//! field before it is authenticated, and nothing unauthenticated or refused is
//! stored.

use super::AppState;
use super::webhook::{OTHER_EVENT, UNAUTHENTICATED, count, header_pairs, store_and_hand_over};
use crate::event::gitlab::{
    CONFIDENTIAL_NOTE_HOOK, GitLabDelivery, HookProject, IDEMPOTENCY_HEADER, MERGE_REQUEST_HOOK,
    NOTE_HOOK, SIGNATURE_ID_HEADER, TOKEN_HEADER, parse_gitlab_event, verify_signing,
};
use crate::event::header;
use crate::forge::GitOrigin;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::sync::Arc;
use tracing::Instrument;

/// Where a GitLab admin sends a delivery again.
const REDELIVER: &str = "resend it from the project's Settings → Webhooks → Edit → Recent events";

/// The metric label of a hook: a fixed set, never the header's text.
fn label(hook: &str) -> &'static str {
    match hook {
        MERGE_REQUEST_HOOK => "gitlab_merge_request",
        NOTE_HOOK | CONFIDENTIAL_NOTE_HOOK => "gitlab_note",
        _ => OTHER_EVENT,
    }
}

pub async fn receive(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let Some(auth) = &state.gitlab else {
        // The route exists only when GitLab is configured.
        return (StatusCode::NOT_FOUND, "GitLab is not configured\n".into());
    };
    let speaks = match auth
        .secrets
        .verify(header(header_pairs(&headers), TOKEN_HEADER))
    {
        Ok(speaks) => speaks,
        Err(why) => {
            tracing::warn!(reason = %why, "refused a GitLab delivery with a bad token");
            count(UNAUTHENTICATED, "unauthorized");
            return (
                StatusCode::UNAUTHORIZED,
                "bad or missing X-Gitlab-Token\n".into(),
            );
        }
    };
    if let Some(key) = &auth.signing_key
        && let Err(why) = verify_signing(key, header_pairs(&headers), &body, state.bot.now())
    {
        tracing::warn!(reason = %why, "refused a GitLab delivery with a bad signature");
        count(UNAUTHENTICATED, "unauthorized");
        return (
            StatusCode::UNAUTHORIZED,
            "bad, missing or stale webhook-signature\n".into(),
        );
    }
    let delivery = match GitLabDelivery::from_headers(header_pairs(&headers)) {
        Ok(delivery) => delivery,
        Err(e) => {
            tracing::warn!(error = %e, "refused an authenticated GitLab delivery with bad headers");
            count(OTHER_EVENT, "malformed");
            return (StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    // The dedupe key is not signed, `webhook-id` is: GitLab sends the same
    // value in both, and a replay under a fresh key must not pass as new.
    if auth.signing_key.is_some()
        && header(header_pairs(&headers), IDEMPOTENCY_HEADER)
            != header(header_pairs(&headers), SIGNATURE_ID_HEADER)
    {
        tracing::warn!(
            "refused a signed GitLab delivery whose Idempotency-Key is not its webhook-id"
        );
        count(UNAUTHENTICATED, "unauthorized");
        return (
            StatusCode::UNAUTHORIZED,
            "Idempotency-Key must equal the signed webhook-id\n".into(),
        );
    }
    let project = HookProject::read(&body).unwrap_or_default();
    if !speaks.covers(&project) {
        // Authenticated by a secret given for another project: a maintainer of that
        // project speaking for this one.
        tracing::warn!(
            project = %project.name(),
            "refused a GitLab delivery whose token is the secret of another project; the \
             project's webhook must use its own secret (or one given for every project)"
        );
        count(UNAUTHENTICATED, "unauthorized");
        return (
            StatusCode::UNAUTHORIZED,
            "X-Gitlab-Token is not this project's webhook secret\n".into(),
        );
    }
    if let Some(foreign) = foreign_url(&auth.origin, &project) {
        tracing::warn!(
            project = %project.name(),
            origin = %foreign,
            gitlab = %auth.origin,
            "refused a GitLab delivery naming a project at another origin than --gitlab-url; \
             nothing stored or fetched"
        );
        count(label(&delivery.hook), "foreign_origin");
        return (
            StatusCode::FORBIDDEN,
            format!(
                "the project's URLs are not at {}, the GitLab this server serves\n",
                auth.origin
            ),
        );
    }
    let label = label(&delivery.hook);
    let span = tracing::info_span!("delivery", id = %delivery.id, event = label);
    async move {
        let parsed = parse_gitlab_event(&delivery.hook, &body);
        let stored_event = delivery.stored_event();
        store_and_hand_over(
            state.clone(),
            delivery.id,
            stored_event,
            label,
            body,
            parsed,
            REDELIVER,
        )
        .await
    }
    .instrument(span)
    .await
}

/// The origin of the first of `project`'s URLs that is not at `gitlab` (any that does
/// not parse counts as foreign), shown in the log line.
fn foreign_url(gitlab: &GitOrigin, project: &HookProject) -> Option<String> {
    project
        .urls()
        .find(|url| !gitlab.holds(url))
        .map(|url| GitOrigin::of(url).unwrap_or_else(|| "<not a URL>".into()))
}
