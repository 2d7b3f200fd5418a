//! The webhook receiver: authenticate, parse, persist, acknowledge. Nothing is
//! acted on here: a verified delivery is written to the store before the
//! response, then handed to the bot.

use super::AppState;
use crate::event::{Event, parse_event, verify_signature};
use crate::store::{DeliveryRecord, DeliveryStatus, Store};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::sync::Arc;

/// GitHub never sends more than 25 MB.
pub const MAX_BODY: usize = 25 * 1024 * 1024;

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn outcome(event: &str, outcome: &'static str) {
    metrics::counter!("cascade_deliveries_total", "event" => event.to_string(), "outcome" => outcome).increment(1);
}

pub async fn receive(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let event_name = header(&headers, "x-github-event").unwrap_or("").to_string();
    if let Err(why) = verify_signature(
        &state.secrets,
        header(&headers, "x-hub-signature-256"),
        &body,
    ) {
        tracing::warn!(event = %event_name, reason = %why, "refused a delivery with a bad signature");
        outcome(&event_name, "unauthorized");
        return (
            StatusCode::UNAUTHORIZED,
            "bad or missing X-Hub-Signature-256\n".into(),
        );
    }
    let Some(delivery) = header(&headers, "x-github-delivery")
        .filter(|d| !d.is_empty())
        .map(str::to_string)
    else {
        outcome(&event_name, "malformed");
        return (
            StatusCode::BAD_REQUEST,
            "missing X-GitHub-Delivery\n".into(),
        );
    };
    if event_name.is_empty() {
        outcome("", "malformed");
        return (StatusCode::BAD_REQUEST, "missing X-GitHub-Event\n".into());
    }
    let span = tracing::info_span!("delivery", id = %delivery, event = %event_name);
    let _enter = span.enter();
    let event = match parse_event(&event_name, &body) {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(error = %e, "malformed delivery");
            outcome(&event_name, "malformed");
            return (StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
    };
    if let Event::Ignored { .. } = event {
        outcome(&event_name, "ignored");
        return (StatusCode::OK, "ignored\n".into());
    }
    let record = DeliveryRecord {
        id: delivery.clone(),
        event: event_name.clone(),
        body: body.to_vec(),
        status: DeliveryStatus::Received,
        received_at: state.bot.now(),
    };
    match state.store.insert_delivery(&record).await {
        Ok(true) => {}
        Ok(false) => {
            outcome(&event_name, "duplicate");
            return (StatusCode::OK, "already received\n".into());
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot store a delivery");
            outcome(&event_name, "error");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot store the delivery; GitHub will redeliver\n".into(),
            );
        }
    }
    state.bot.enqueue(delivery, event);
    outcome(&event_name, "accepted");
    (StatusCode::ACCEPTED, "accepted\n".into())
}
