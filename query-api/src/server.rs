//! Serving the app over HTTP with bounds a hostile or sloppy client cannot stretch: how long
//! a request head may take to arrive, how long a request may take in all, how many
//! connections are served at once, and how long a URI may be.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt as _;
use tracing::{debug, warn};

use crate::error::ApiError;
use crate::App;

/// The bounds of the HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A connection whose request head (request line and headers) has not arrived whole
    /// this long after it started is closed.
    pub header_read_timeout: Duration,
    /// A request not answered this long after its head arrived (reading its body included)
    /// is answered 503 `ServiceUnavailable`.
    pub request_timeout: Duration,
    /// Connections served at once; further ones wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// The longest request URI (path and query) accepted; a longer one is answered 414 in
    /// the route's envelope.
    pub max_uri_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_uri_bytes: 8192,
        }
    }
}

/// The error envelope of the route a path belongs to: REST under `/api/`, XRPC elsewhere.
pub fn error_for_path(path: &str, error: ApiError) -> Response {
    if path.starts_with("/api/") {
        error.into_rest()
    } else {
        error.into_response()
    }
}

/// Answers one request within the limits.
async fn answer(app: App, limits: ServerLimits, request: Request<Incoming>) -> Result<Response, Infallible> {
    let path = request.uri().path().to_owned();
    let uri_len = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > limits.max_uri_bytes {
        let error = ApiError::new(
            StatusCode::URI_TOO_LONG,
            "InvalidRequest",
            format!("the request URI is {uri_len} bytes long; at most {} are accepted", limits.max_uri_bytes),
        );
        return Ok(crate::security_headers(error_for_path(&path, error)));
    }
    let request = request.map(axum::body::Body::new);
    match tokio::time::timeout(limits.request_timeout, app.oneshot(request)).await {
        Ok(response) => response,
        Err(_) => {
            warn!(path, timeout_ms = limits.request_timeout.as_millis() as u64, "request timed out");
            let error = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                format!("the request was not answered within {} s", limits.request_timeout.as_secs_f64()),
            );
            Ok(crate::security_headers(error_for_path(&path, error)))
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then lets the open connections
/// finish their requests.
///
/// # Errors
/// Never, today: failures to accept a connection are logged and the loop goes on.
pub async fn serve(listener: TcpListener, app: App, limits: ServerLimits, shutdown: impl Future<Output = ()>) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    warn!(error = %e, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |request| answer(app.clone(), limits, request));
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            if let Err(e) = watcher.watch(connection.into_owned()).await {
                debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
