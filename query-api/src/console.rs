//! The operator console at `/console`: one page and its script and style sheet, built into
//! the binary. The console is a client of the admin XRPC API and nothing else: it logs in
//! the AT Protocol way (a session on the admin's PDS, a service-auth token from it for
//! `pub.svc.auth.authorize`, the PKCE code exchange at `/oauth/authorize` and
//! `/oauth/token`), keeps the access token in memory only, and calls `/xrpc/...` with it.
//!
//! Its Content-Security-Policy allows scripts and styles from svc only (no inline script or
//! style, no `eval`); the one widening is `connect-src`: the login calls the admin's PDS,
//! which may be any https origin (or, for a PDS on this machine, a loopback address).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::state::AppState;

const PAGE: &str = include_str!("../assets/console/index.html");
const SCRIPT: &str = include_str!("../assets/console/console.js");
const STYLE: &str = include_str!("../assets/console/console.css");

/// The page's policy (see the module docs).
const POLICY: &str =
    "default-src 'self'; connect-src 'self' https: http://localhost:* http://127.0.0.1:*; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/console", get(page)).route("/console/console.js", get(script)).route("/console/console.css", get(style))
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], SCRIPT).into_response()
}

async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], STYLE).into_response()
}
