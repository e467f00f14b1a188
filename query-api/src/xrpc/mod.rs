//! XRPC routing by NSID: `/xrpc/<nsid>`. Served methods validate their parameters against
//! their lexicon; the contract's other operations answer 501 `NotImplemented`; anything else
//! is 404 `NotFound`.

pub mod catalog;
mod eprint;
pub mod sync;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use lexicons::{LexiconError, Params};

use crate::eprints::Body;
use crate::error::ApiError;
use crate::state::AppState;

/// The XRPC methods this build serves.
pub const SERVED: &[&str] = &[
    "pub.svc.eprint.getSubmission",
    "pub.svc.eprint.listByAuthor",
    "pub.svc.eprint.searchSubmissions",
    "pub.svc.sync.checkStaleness",
    "pub.svc.sync.deleteRecord",
    "pub.svc.sync.refreshRecord",
    "pub.svc.sync.verify",
];

/// The largest procedure body accepted.
const MAX_BODY: usize = 64 * 1024;

/// The XRPC routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/xrpc/{nsid}", any(dispatch))
}

async fn dispatch(
    State(state): State<AppState>,
    Path(nsid): Path<String>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let q = query.as_deref().unwrap_or_default();
    let result = match nsid.as_str() {
        "pub.svc.eprint.getSubmission" => query_method(&state, &nsid, &method, q, &[], eprint::get_submission),
        "pub.svc.eprint.searchSubmissions" => {
            async {
                let p = query_params(&state, &nsid, &method, q, &[("q", "query"), ("author", "authors")])?;
                eprint::search_submissions(&state, &p).await
            }
            .await
        }
        "pub.svc.eprint.listByAuthor" => query_method(&state, &nsid, &method, q, &[("did", "author")], eprint::list_by_author),
        "pub.svc.sync.checkStaleness" => {
            async {
                let p = query_params(&state, &nsid, &method, q, &[])?;
                crate::eprints::body(&sync::check_staleness(&state, &p).await?)
            }
            .await
        }
        "pub.svc.sync.verify" => {
            async {
                let p = query_params(&state, &nsid, &method, q, &[])?;
                crate::eprints::body(&sync::verify(&state, &p).await?)
            }
            .await
        }
        "pub.svc.sync.refreshRecord" | "pub.svc.sync.deleteRecord" => procedure(&state, &nsid, &method, &headers, &body).await,
        n if catalog::is_named(n) => Err(ApiError::not_implemented(n)),
        n => Err(ApiError::not_found(format!("no XRPC method {n}"))),
    };
    match result {
        Ok(body) => body.into_response(),
        Err(e) => e.into_response(),
    }
}

/// Runs a sync procedure: POST with a JSON body valid against its lexicon, and a service-auth
/// token for the method (checked before the body, so an anonymous caller learns nothing).
async fn procedure(state: &AppState, nsid: &str, method: &Method, headers: &HeaderMap, body: &Bytes) -> Result<Body, ApiError> {
    if method != Method::POST {
        return Err(ApiError::wrong_method(format!("{nsid} is a procedure: use POST")));
    }
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let caller = state.sync.auth.verify(authorization, nsid).await?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !is_json {
        return Err(ApiError::invalid_request(format!("{nsid} takes a JSON body (Content-Type: application/json)")));
    }
    if body.len() > MAX_BODY {
        return Err(ApiError::invalid_request(format!("the body is larger than {MAX_BODY} bytes")));
    }
    let input: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| ApiError::invalid_request(format!("the body is not JSON: {e}")))?;
    state.lexicons.validate_input(nsid, &input).map_err(|e| match e {
        LexiconError::Invalid(v) => ApiError::invalid_param(&v.path, v.message),
        other => ApiError::from_error(other),
    })?;
    let out = match nsid {
        "pub.svc.sync.refreshRecord" => sync::refresh_record(state, caller, &input).await?,
        _ => sync::delete_record(state, caller, &input).await?,
    };
    crate::eprints::body(&out)
}

/// The parameters of a query method: GET (or HEAD) only, parameters validated against its
/// lexicon after renaming `aliases` (`(alias, canonical)`, used only when the canonical
/// name is absent).
fn query_params(state: &AppState, nsid: &str, method: &Method, query: &str, aliases: &[(&str, &str)]) -> Result<Params, ApiError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::wrong_method(format!("{nsid} is a query: use GET")));
    }
    parse_params(state, nsid, query, aliases)
}

/// Runs a query method that answers from the read models at once (see [`query_params`]).
fn query_method(
    state: &AppState,
    nsid: &str,
    method: &Method,
    query: &str,
    aliases: &[(&str, &str)],
    handler: fn(&AppState, &Params) -> Result<Body, ApiError>,
) -> Result<Body, ApiError> {
    handler(state, &query_params(state, nsid, method, query, aliases)?)
}

/// Parses and validates a query string.
pub fn parse_params(state: &AppState, nsid: &str, query: &str, aliases: &[(&str, &str)]) -> Result<Params, ApiError> {
    let mut raw: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|_| ApiError::invalid_request("the query string is not valid URL encoding"))?;
    for (alias, canonical) in aliases {
        if !raw.iter().any(|(k, _)| k == canonical) {
            for (k, _) in raw.iter_mut().filter(|(k, _)| k == alias) {
                *k = (*canonical).to_owned();
            }
        }
    }
    state.lexicons.validate_params(nsid, &raw).map_err(|e| match e {
        LexiconError::Invalid(v) => ApiError::invalid_param(&v.path, v.message),
        other => ApiError::from_error(other),
    })
}
