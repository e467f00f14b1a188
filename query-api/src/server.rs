//! Serving the app over HTTP with bounds a hostile or sloppy client cannot stretch: how long
//! a request head may take to arrive, how long a request may take in all, how many
//! connections are served at once, and how long a URI may be.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt as _;
use tracing::{debug, warn};

use crate::error::{ApiError, ErrorCode};
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
async fn answer(
    app: App,
    limits: ServerLimits,
    peer: std::net::SocketAddr,
    mut request: Request<Incoming>,
) -> Result<Response, Infallible> {
    request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
    let uri_len = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > limits.max_uri_bytes {
        let error = ApiError::new(
            ErrorCode::UriTooLong,
            format!("the request URI is {uri_len} bytes long; at most {} are accepted", limits.max_uri_bytes),
        );
        return Ok(crate::security_headers(error_for_path(request.uri().path(), error)));
    }
    let uri = request.uri().clone();
    let mut answering = std::pin::pin!(app.oneshot(request.map(axum::body::Body::new)));
    // Most answers are ready at the first poll (a read from the store): they need no timer,
    // nor the time. Only a request that waits is given one, due when its time is up
    // (counted from the end of that first poll: microseconds of work).
    if let Poll::Ready(response) = std::future::poll_fn(|cx| Poll::Ready(answering.as_mut().poll(cx))).await {
        return response;
    }
    let path = uri.path();
    match tokio::time::timeout(limits.request_timeout, answering).await {
        Ok(response) => response,
        Err(_) => {
            warn!(path, timeout_ms = limits.request_timeout.as_millis() as u64, "request timed out");
            let error = ApiError::new(
                ErrorCode::ServiceUnavailable,
                format!("the request was not answered within {} s", limits.request_timeout.as_secs_f64()),
            );
            Ok(crate::security_headers(error_for_path(path, error)))
        }
    }
}

/// How long open connections may still start a request once a shutdown began (then each
/// finishes the request it has and closes).
const ACCEPTED_GRACE: Duration = Duration::from_millis(250);

/// Serves `app` on `listener` until `shutdown` completes, then lets the open connections
/// finish their requests ([`ACCEPTED_GRACE`] to start one).
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
        let service = hyper::service::service_fn(move |request| answer(app.clone(), limits, peer, request));
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(EnvelopeBareErrors::new(stream)), service);
            if let Err(e) = watcher.watch(connection.into_owned()).await {
                debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if slots.available_permits() < limits.max_connections.max(1) {
        // A connection accepted just now may not have read the request its client sent:
        // shut down at once, it would be closed unanswered (reset, the request unread).
        tokio::time::sleep(ACCEPTED_GRACE).await;
    }
    graceful.shutdown().await;
    Ok(())
}

/// The connection as hyper sees it: reads pass through; a bare error hyper answers by
/// itself (a request head it cannot parse: 400, 414 for a URI of 64 KiB or more, 431 for
/// headers over its buffer) is given the XRPC error envelope on its way out. svc's own
/// answers always have a body, so a `content-length: 0` 4xx head is hyper's.
struct EnvelopeBareErrors<IO> {
    inner: IO,
    /// The replacement being written, and how much of it is written.
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<IO> EnvelopeBareErrors<IO> {
    fn new(inner: IO) -> Self {
        EnvelopeBareErrors { inner, pending: None }
    }
}

/// The enveloped replacement of a bare error head hyper wrote by itself, if `head` is one.
fn envelope_bare_error(head: &[u8]) -> Option<Vec<u8>> {
    let rest = head.strip_prefix(b"HTTP/1.1 ")?;
    let status = std::str::from_utf8(rest.get(..3)?).ok()?;
    let message = match status {
        "400" => "the request could not be parsed",
        "414" => "the request URI is too long",
        "431" => "the request headers are too large",
        _ => return None,
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let lower = head[..end].to_ascii_lowercase();
    if end + 4 != head.len()
        || !lower.windows(19).any(|w| w == b"\r\ncontent-length: 0")
        || lower.windows(14).any(|w| w == b"\r\ncontent-type")
    {
        return None;
    }
    let reason = std::str::from_utf8(&rest[3..]).ok()?.split("\r\n").next()?.trim();
    let body = serde_json::json!({"error": ErrorCode::InvalidRequest.name(), "message": message}).to_string();
    let mut out =
        format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    for (name, value) in crate::SECURITY_HEADERS {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<IO: AsyncRead + Unpin> AsyncRead for EnvelopeBareErrors<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for EnvelopeBareErrors<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        if self.pending.is_none() {
            match envelope_bare_error(buf) {
                Some(replacement) => self.pending = Some((replacement, 0, buf.len())),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        let this = &mut *self;
        let Some((replacement, written, original)) = this.pending.as_mut() else { return Poll::Ready(Ok(0)) };
        while *written < replacement.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &replacement[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        // The whole of hyper's head counts as written; the connection closes after it.
        let original = *original;
        this.pending = None;
        Poll::Ready(Ok(original))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use axum::response::Response;
    use axum::routing::get;
    use axum::Router;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceBuilder;
    use tower_http::cors::CorsLayer;

    use super::{envelope_bare_error, serve, ServerLimits};

    /// Sends `GET path` on a fresh connection; the answer's status line and body.
    async fn status_of(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("GET {path} HTTP/1.1\r\nhost: svc\r\nconnection: close\r\n\r\n").as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn a_request_over_its_time_is_answered_503_and_one_ready_at_once_is_answered() {
        let router = Router::new()
            .route("/ready", get(|| async { "ready" }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "late"
                }),
            )
            .route(
                "/yields",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    "after a wait"
                }),
            );
        let app =
            ServiceBuilder::new().map_response(crate::security_headers as fn(Response) -> Response).layer(CorsLayer::new()).service(router);
        let limits = ServerLimits { request_timeout: Duration::from_millis(300), ..ServerLimits::default() };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, app, limits, std::future::pending()));
        let ready = status_of(addr, "/ready").await;
        assert!(ready.starts_with("HTTP/1.1 200") && ready.ends_with("ready"), "{ready}");
        let waited = status_of(addr, "/yields").await;
        assert!(waited.starts_with("HTTP/1.1 200") && waited.ends_with("after a wait"), "{waited}");
        let start = Instant::now();
        let slow = status_of(addr, "/slow").await;
        assert!(slow.starts_with("HTTP/1.1 503"), "{slow}");
        assert!(slow.contains("\"error\":\"ServiceUnavailable\""), "{slow}");
        assert!(start.elapsed() < Duration::from_secs(5), "answered after {:?}", start.elapsed());
    }

    #[test]
    fn bare_errors_of_hyper_get_the_envelope_and_answers_of_svc_do_not() {
        let bare = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 16:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(envelope_bare_error(bare).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"), "{out}");
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        assert!(out.contains(&format!("content-length: {}\r\n", body.len())), "{out}");
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "InvalidRequest");
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n";
        assert!(envelope_bare_error(ours).is_none());
        let with_body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}";
        assert!(envelope_bare_error(with_body).is_none());
        assert!(envelope_bare_error(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(envelope_bare_error(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n").is_some());
    }
}
