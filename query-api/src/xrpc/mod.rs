//! XRPC routing by NSID: `/xrpc/<nsid>`. Served methods validate their parameters against
//! their lexicon; the contract's other operations answer 501 `NotImplemented`; anything else
//! is 404 `NotFound`.

pub mod catalog;
mod eprint;
pub mod sync;

use std::borrow::Cow;

use axum::extract::{Path, Request, State};
use axum::http::{header, Method};
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

/// The XRPC routes: one static route per served method (matched without capturing the
/// NSID), and `/xrpc/{nsid}` for the rest.
pub fn routes() -> Router<AppState> {
    SERVED.iter().fold(Router::new().route("/xrpc/{nsid}", any(unserved)), |router, &nsid| {
        router.route(&format!("/xrpc/{nsid}"), any(move |State(state): State<AppState>, request: Request| dispatch(state, nsid, request)))
    })
}

/// Answers an NSID this build does not serve: 501 for the contract's other operations,
/// 404 for anything else.
async fn unserved(Path(nsid): Path<String>) -> Response {
    if catalog::is_named(&nsid) {
        ApiError::not_implemented(&nsid).into_response()
    } else {
        ApiError::not_found(format!("no XRPC method {nsid}")).into_response()
    }
}

/// Answers a served method. It takes the request whole: a query reads only its query string,
/// and only a procedure reads the body and the headers.
async fn dispatch(state: AppState, nsid: &'static str, request: Request) -> Response {
    let method = request.method().clone();
    let q = request.uri().query().unwrap_or_default();
    let result = match nsid {
        "pub.svc.eprint.getSubmission" => query_method(&state, nsid, &method, q, &[], eprint::get_submission),
        "pub.svc.eprint.searchSubmissions" => {
            async {
                let p = query_params(&state, nsid, &method, q, &[("q", "query"), ("author", "authors")])?;
                eprint::search_submissions(&state, &p).await
            }
            .await
        }
        "pub.svc.eprint.listByAuthor" => query_method(&state, nsid, &method, q, &[("did", "author")], eprint::list_by_author),
        "pub.svc.sync.checkStaleness" => {
            async {
                let p = query_params(&state, nsid, &method, q, &[])?;
                crate::eprints::body(&sync::check_staleness(&state, &p).await?)
            }
            .await
        }
        "pub.svc.sync.verify" => {
            async {
                let p = query_params(&state, nsid, &method, q, &[])?;
                crate::eprints::body(&sync::verify(&state, &p).await?)
            }
            .await
        }
        "pub.svc.sync.refreshRecord" | "pub.svc.sync.deleteRecord" => procedure(&state, nsid, request).await,
        n => Err(ApiError::from_error(crate::error::Internal(format!("{n} is listed as served but has no handler")))),
    };
    match result {
        Ok(body) => body.into_response(),
        Err(e) => e.into_response(),
    }
}

/// Runs a sync procedure: POST with a JSON body valid against its lexicon, and a service-auth
/// token for the method (checked before the body, so an anonymous caller learns nothing).
async fn procedure(state: &AppState, nsid: &str, request: Request) -> Result<Body, ApiError> {
    if request.method() != Method::POST {
        return Err(ApiError::wrong_method(format!("{nsid} is a procedure: use POST"), Some("POST")));
    }
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let caller = state.sync.auth.verify(authorization, nsid).await?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !is_json {
        return Err(ApiError::invalid_request(format!("{nsid} takes a JSON body (Content-Type: application/json)")));
    }
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::invalid_request(format!("the body could not be read whole, or is larger than {MAX_BODY} bytes")))?;
    let input: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid_request(format!("the body is not JSON: {e}")))?;
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
        return Err(ApiError::wrong_method(format!("{nsid} is a query: use GET"), Some("GET, HEAD")));
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

/// Parses and validates a query string. (Its pairs borrow from the query where nothing was
/// escaped; invalid UTF-8 in an escape becomes U+FFFD, as in every form decoder.)
pub fn parse_params(state: &AppState, nsid: &str, query: &str, aliases: &[(&str, &str)]) -> Result<Params, ApiError> {
    let mut raw: Vec<(Cow<str>, Cow<str>)> = form_urlencoded::parse(query.as_bytes()).collect();
    for (alias, canonical) in aliases {
        if !raw.iter().any(|(k, _)| k == canonical) {
            for (k, _) in raw.iter_mut().filter(|(k, _)| k == alias) {
                *k = Cow::Borrowed(canonical);
            }
        }
    }
    state.lexicons.validate_params(nsid, &raw).map_err(|e| match e {
        LexiconError::Invalid(v) => ApiError::invalid_param(&v.path, v.message),
        other => ApiError::from_error(other),
    })
}
