//! The HTTP listener: cascade's own accept loop around hyper, so that no client
//! can hold more of the server than [`HttpLimits`] allows.
//!
//! Owns accepting connections (at most `max_connections` open; more wait in
//! the kernel's listen backlog), reading request headers within
//! `header_timeout` (an idle keep-alive connection is closed after the same
//! time), and graceful shutdown: stop accepting, let requests in flight
//! answer. The per-request limits (body size and pace, whole-request time,
//! requests in flight) are layers of the router in `super::router`. Never
//! reads a body or decides anything about a request itself.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// What one client may make the server hold. The defaults suit GitHub, which
/// sends a delivery's headers and body at once and gives up after 10 s.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// Connections open at once. Further connections are not refused: they
    /// wait in the listen backlog until a connection closes, which the
    /// timeouts below guarantee happens.
    pub max_connections: usize,
    /// Webhook requests handled at once; more wait for a slot within
    /// `request_timeout`. Probes and metrics are not counted.
    pub max_requests: usize,
    /// Time to send a request's headers, counted from the connection's first
    /// read (or from the end of the previous response on a keep-alive connection).
    pub header_timeout: Duration,
    /// Longest pause between two pieces of a request body.
    pub body_timeout: Duration,
    /// From the end of the headers to the response: the body, any wait for a
    /// request slot, the signature check and the store.
    pub request_timeout: Duration,
    /// The largest request body. A request whose `Content-Length` says more is
    /// answered 413 before any of its body is read; a body without a length is
    /// cut at this size.
    pub max_body: usize,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            max_connections: 512,
            max_requests: 64,
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            // The events cascade handles are far smaller (a pull request
            // event is ~30 KB); GitHub's own cap is 25 MB. This bounds what
            // `max_requests` bodies in flight can hold to 320 MiB.
            max_body: 5 * 1024 * 1024,
        }
    }
}

/// Accepts connections until `stop` fires, then waits (at most the request
/// timeout) for the requests in flight to be answered.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        // A slot first: at the limit, connections stay in the backlog (no file
        // descriptor is spent on them) until one closes.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = stop.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it
                    // was accepted: neither is a reason to stop serving.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        // Responses are small and sent whole: no reason to wait for more to coalesce.
        let _ = stream.set_nodelay(true);
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        metrics::gauge!("cascade_http_connections").increment(1.0);
        tokio::spawn(async move {
            // Errors here are the client's (a timeout, a reset, bad HTTP); the
            // connection is closed either way.
            let _ = connection.await;
            metrics::gauge!("cascade_http_connections").decrement(1.0);
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.request_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("closing connections whose requests did not finish in time");
    }
}
