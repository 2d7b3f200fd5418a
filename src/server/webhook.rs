//! The webhook receiver: authenticate, read the delivery's identity, parse,
//! persist, acknowledge. Nothing is acted on here: a verified delivery is
//! written to the store before the response, then handed to the bot.
//!
//! Nothing a sender controls reaches a metric label or a log field before the
//! signature is verified: unauthenticated requests are counted under one fixed
//! label, and authenticated ones under a fixed set of event names (or `other`).

use super::AppState;
use crate::event::{
    Delivery, DeliveryId, Event, ParseError, SIGNATURE_HEADER, header, known_event, parse_event,
    verify_signature,
};
use crate::store::{BotStore, DeliveryRecord, DeliveryStatus};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::sync::Arc;
use tracing::Instrument;

/// The metric label of every request whose signature did not verify.
pub(super) const UNAUTHENTICATED: &str = "unauthenticated";
/// The metric label of authenticated events cascade does not parse.
pub(super) const OTHER_EVENT: &str = "other";

/// Counts a delivery: `event` is one of [`crate::event::KNOWN_EVENTS`], a
/// GitLab label, [`OTHER_EVENT`] or [`UNAUTHENTICATED`], never a header's text.
pub(super) fn count(event: &'static str, outcome: &'static str) {
    metrics::counter!("cascade_deliveries_total", "event" => event, "outcome" => outcome)
        .increment(1);
}

pub(super) fn header_pairs(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
}

pub async fn receive(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let Some(secrets) = state.github_secrets.load_full() else {
        // The setup page has not created the App yet: nothing can be verified.
        count(UNAUTHENTICATED, "not_set_up");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "cascade is not set up yet: finish the setup at /setup\n".into(),
        );
    };
    if let Err(why) = verify_signature(
        &secrets,
        header(header_pairs(&headers), SIGNATURE_HEADER),
        &body,
    ) {
        // The reason only: the sender's headers are not worth a log line.
        tracing::warn!(reason = %why, "refused a delivery with a bad signature");
        count(UNAUTHENTICATED, "unauthorized");
        return (
            StatusCode::UNAUTHORIZED,
            "bad or missing X-Hub-Signature-256\n".into(),
        );
    }
    let delivery = match Delivery::from_headers(header_pairs(&headers)) {
        Ok(delivery) => delivery,
        Err(e) => {
            tracing::warn!(error = %e, "refused a signed delivery with bad headers");
            count(OTHER_EVENT, "malformed");
            return (StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    let label = known_event(&delivery.event).unwrap_or(OTHER_EVENT);
    // `instrument`, not `enter`: a span entered across an await stays entered on
    // the worker thread, and every later delivery on it nests inside (and keeps)
    // the spans before it.
    let span = tracing::info_span!("delivery", id = %delivery.id, event = label);
    accept(state, delivery, label, body).instrument(span).await
}

/// Parses, stores and hands over an authenticated delivery.
async fn accept(
    state: Arc<AppState>,
    delivery: Delivery,
    label: &'static str,
    body: Bytes,
) -> (StatusCode, String) {
    let event = parse_event(&delivery.event, &body);
    let redeliver = "redeliver it from the GitHub App's advanced settings";
    store_and_hand_over(
        state,
        delivery.id,
        delivery.event,
        label,
        body,
        event,
        redeliver,
    )
    .await
}

/// Stores a parsed, authenticated delivery, then hands it to the bot: 202 once
/// stored, 200 for a delivery already stored (a redelivery) or one with nothing
/// to do, 400 for a body that did not parse, 503 when the store refuses.
/// `redeliver` tells the sender's admin where to send it again.
pub(super) async fn store_and_hand_over(
    state: Arc<AppState>,
    id: DeliveryId,
    stored_event: String,
    label: &'static str,
    body: Bytes,
    parsed: Result<Event, ParseError>,
    redeliver: &str,
) -> (StatusCode, String) {
    let event = match parsed {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(error = %e, "malformed delivery");
            count(label, "malformed");
            return (StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    // Nothing to do for these, so nothing to store (GitHub sends a ping when the
    // hook is created; redelivering one changes nothing).
    if let Event::Ignored { .. } | Event::Ping { .. } = event {
        count(label, "ignored");
        return (StatusCode::OK, "ignored\n".into());
    }
    let record = DeliveryRecord {
        id,
        event: stored_event,
        body: body.to_vec(),
        status: DeliveryStatus::Received,
        received_at: state.bot.now(),
        // The replica that stores it processes it, unless it dies first.
        owner: Some(state.bot.replica_id().clone()),
        claimed_until: state.bot.claim_until(),
    };
    match state.store.insert_delivery(&record).await {
        Ok(true) => {}
        Ok(false) => {
            count(label, "duplicate");
            return (StatusCode::OK, "already received\n".into());
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot store a delivery");
            count(label, "error");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("cannot store the delivery; {redeliver} once /readyz answers 200\n"),
            );
        }
    }
    state.bot.enqueue(record.id, event);
    count(label, "accepted");
    (StatusCode::ACCEPTED, "accepted\n".into())
}
