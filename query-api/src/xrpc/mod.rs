//! XRPC routing by NSID: `/xrpc/<nsid>`. Served methods validate their parameters against
//! their lexicon; the contract's other operations answer 501 `NotImplemented`; anything else
//! is 404 `NotFound`.

pub mod catalog;
mod eprint;

use axum::extract::{Path, RawQuery, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use lexicons::{LexiconError, Params};

use crate::eprints::Body;
use crate::error::ApiError;
use crate::state::AppState;

/// The XRPC methods this build serves.
pub const SERVED: &[&str] = &["pub.svc.eprint.getSubmission", "pub.svc.eprint.listByAuthor", "pub.svc.eprint.searchSubmissions"];

/// The XRPC routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/xrpc/{nsid}", any(dispatch))
}

async fn dispatch(State(state): State<AppState>, Path(nsid): Path<String>, method: Method, RawQuery(query): RawQuery) -> Response {
    let result = match nsid.as_str() {
        "pub.svc.eprint.getSubmission" => query_method(&state, &nsid, &method, query, &[], eprint::get_submission),
        "pub.svc.eprint.searchSubmissions" => {
            query_method(&state, &nsid, &method, query, &[("q", "query"), ("author", "authors")], eprint::search_submissions)
        }
        "pub.svc.eprint.listByAuthor" => query_method(&state, &nsid, &method, query, &[("did", "author")], eprint::list_by_author),
        n if catalog::is_named(n) => Err(ApiError::not_implemented(n)),
        n => Err(ApiError::not_found(format!("no XRPC method {n}"))),
    };
    match result {
        Ok(body) => axum::Json(body).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Runs a query method: GET (or HEAD) only, parameters validated against its lexicon after
/// renaming `aliases` (`(alias, canonical)`, used only when the canonical name is absent).
fn query_method(
    state: &AppState,
    nsid: &str,
    method: &Method,
    query: Option<String>,
    aliases: &[(&str, &str)],
    handler: fn(&AppState, &Params) -> Result<Body, ApiError>,
) -> Result<Body, ApiError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::wrong_method(format!("{nsid} is a query: use GET")));
    }
    let params = parse_params(state, nsid, query.as_deref().unwrap_or_default(), aliases)?;
    handler(state, &params)
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
