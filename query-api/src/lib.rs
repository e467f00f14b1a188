//! The query API: an axum app serving the read models over XRPC and REST.
//!
//! [`app`] builds the router: XRPC methods by NSID ([`xrpc`]), REST routes under `/api/v1`,
//! health probes, the service DID document and the OpenAPI document, with CORS and the
//! security headers of the spec on every response. Errors become HTTP in one place
//! ([`error`]). Handlers only read read models; they never write them: a procedure appends
//! a command event to the log and the projections apply it ([`xrpc::sync`]).
//!
//! Modules import only downward: the ground floor ([`error`], [`body`], [`identity`],
//! [`state`], [`params`], [`reads`], [`command`], [`metrics`]), then what handlers share
//! ([`views`], [`search`], [`auth`]), then the handlers ([`xrpc`], [`rest`]); [`app`] wires
//! them together.
#![warn(missing_docs)]

mod applied;
pub mod auth;
pub mod body;
pub mod command;
pub mod communities;
mod console;
mod docs;
pub mod error;
mod health;
pub mod identity;
pub mod lag;
pub mod metrics;
pub mod openapi;
pub mod params;
pub mod process;
pub mod publish;
pub mod reads;
pub mod rest;
pub mod search;
pub mod server;
pub mod state;
pub mod tap;
pub mod views;
pub mod xrpc;

use std::sync::Arc;

use axum::http::header::{self, HeaderName, HeaderValue};
use axum::http::Method;
use axum::response::Response;
use axum::Router;
use tower::util::MapResponse;
use tower::ServiceBuilder;
use tower_http::cors::{Any, Cors, CorsLayer};

pub use state::{AppState, ServiceIdentity, Shared, SnapshotSettings, SyncSettings};

/// The security headers every response carries.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("content-security-policy", "default-src 'self'"),
    ("strict-transport-security", "max-age=31536000; includeSubDomains"),
];

/// [`SECURITY_HEADERS`] as header names and values, made at compile time (a name parsed
/// per response cost more than inserting it).
const SECURITY_HEADER_PAIRS: [(HeaderName, HeaderValue); 4] = {
    const fn pair(i: usize) -> (HeaderName, HeaderValue) {
        (HeaderName::from_static(SECURITY_HEADERS[i].0), HeaderValue::from_static(SECURITY_HEADERS[i].1))
    }
    [pair(0), pair(1), pair(2), pair(3)]
};

async fn fallback(uri: axum::http::Uri) -> Response {
    server::error_for_path(uri.path(), error::ApiError::not_found(format!("no route {}", uri.path())))
}

/// A route that exists but not for this HTTP method: 405 in the route's envelope (the
/// router adds the `Allow` header naming the methods it has).
async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    let e = error::ApiError::wrong_method(format!("{method} is not allowed on {}", uri.path()), None);
    server::error_for_path(uri.path(), e)
}

/// The whole application: the router inside the middleware every response goes through.
pub type App = MapResponse<Cors<Router>, fn(Response) -> Response>;

/// Builds the whole application. Serve it with
/// `axum::serve(listener, ServiceExt::<Request>::into_make_service(app))` ([`axum::ServiceExt`]).
///
/// CORS and the security headers wrap the router once, rather than each route
/// (`Router::layer`): per request they are cloned with the service (no allocation), where a
/// per-route layer boxes a copy of the route's whole stack.
pub fn app(state: AppState) -> App {
    metrics::handle();
    let methods = xrpc::methods();
    let served = methods.methods().iter().map(|m| m.nsid);
    let known = xrpc::catalog::OPERATIONS.iter().chain(xrpc::catalog::BEYOND).copied();
    let operations = Arc::new(metrics::Operations::new(served.chain(known)));
    // The policy is the same for every origin and request, so no answer varies with the
    // request's CORS headers: no `Vary` (which the layer would otherwise build per request).
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .vary(Vec::<HeaderName>::new());
    let router = Router::new()
        .merge(xrpc::routes(methods))
        .merge(rest::routes())
        .merge(health::routes())
        .merge(docs::routes())
        .merge(console::routes())
        .merge(auth::oauth::routes())
        .merge(auth::orcid::routes())
        .route("/metrics", axum::routing::get(metrics::scrape))
        .fallback(fallback)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::layer))
        .layer(axum::middleware::from_fn_with_state(operations, metrics::layer))
        .with_state(state);
    ServiceBuilder::new().map_response(security_headers as fn(Response) -> Response).layer(cors).service(router)
}

/// Sets the [`SECURITY_HEADERS`] on a response (one layer for all of them; a plain function,
/// so the layer neither boxes nor allocates per request). A header the handler set stands:
/// a page may state its own Content-Security-Policy.
pub(crate) fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.reserve(SECURITY_HEADER_PAIRS.len());
    for (name, value) in SECURITY_HEADER_PAIRS {
        headers.entry(name).or_insert(value);
    }
    response
}
