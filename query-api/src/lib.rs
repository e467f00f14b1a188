//! The query API: an axum app serving the read models over XRPC and REST.
//!
//! [`app`] builds the router: XRPC methods by NSID ([`xrpc`]), REST routes under `/api/v1`,
//! health probes, the service DID document and the OpenAPI document, with CORS and the
//! security headers of the spec on every response. Errors become HTTP in one place
//! ([`error`]). Handlers only read read models; they never write them: a procedure appends
//! a command event to the log and the projections apply it ([`xrpc::sync`]).
#![warn(missing_docs)]

mod applied;
pub mod auth;
pub mod eprints;
pub mod error;
mod health;
pub mod openapi;
pub mod rest;
pub mod state;
pub mod xrpc;

use axum::http::header::{self, HeaderName, HeaderValue};
use axum::http::Method;
use axum::response::IntoResponse;
use axum::Router;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::TraceLayer;

pub use state::{AppState, ServiceIdentity, Shared, SyncSettings};

/// The security headers every response carries.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("content-security-policy", "default-src 'self'"),
    ("strict-transport-security", "max-age=31536000; includeSubDomains"),
];

async fn fallback(uri: axum::http::Uri) -> axum::response::Response {
    let e = error::ApiError::not_found(format!("no route {}", uri.path()));
    if uri.path().starts_with("/api/") {
        e.into_rest()
    } else {
        e.into_response()
    }
}

/// Builds the whole application.
pub fn app(state: AppState) -> Router {
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]);
    Router::new()
        .merge(xrpc::routes())
        .merge(rest::routes())
        .merge(health::routes())
        .fallback(fallback)
        .with_state(state)
        .layer(cors)
        .layer(TraceLayer::new_for_http())
        .layer(axum::middleware::map_response(security_headers))
}

/// Sets the [`SECURITY_HEADERS`] on a response (one layer for all of them).
async fn security_headers(mut response: axum::response::Response) -> axum::response::Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
    }
    response
}
