//! `/api/v1/eprints`, `/api/v1/search`, `/api/v1/eprints/{uri}`, `/api/v1/eprints/{uri}/integrations`,
//! `/api/v1/authors/{did}/eprints`.

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use projections::search::SortOrder;
use serde_json::Value;

use crate::body::Body;
use crate::error::{ApiError, RestError};
use crate::params::{check_did, parse_record_uri};
use crate::search::{self, SearchArgs};
use crate::state::AppState;
use crate::views::eprint;

/// The REST eprint routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/eprints", get(search))
        .route("/api/v1/search", get(search))
        .route("/api/v1/eprints/{uri}", get(detail))
        .route("/api/v1/eprints/{uri}/integrations", get(integrations))
        .route("/api/v1/authors/{did}/eprints", get(by_author))
}

type Pairs = Vec<(String, String)>;

/// The query string's pairs (invalid UTF-8 in an escape becomes U+FFFD, as in every form
/// decoder, as in the XRPC routes).
fn pairs(query: Option<String>) -> Pairs {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect()
}

/// The single value of a parameter; given twice is an error.
fn one<'a>(p: &'a Pairs, name: &str) -> Result<Option<&'a str>, ApiError> {
    let mut values = p.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let first = values.next();
    if values.next().is_some() {
        return Err(ApiError::invalid_param(name, "given more than once"));
    }
    Ok(first)
}

/// Every value of a parameter, repeated or comma-separated; an empty one is an error.
fn many(p: &Pairs, name: &str) -> Result<Vec<String>, ApiError> {
    let values: Vec<String> = p.iter().filter(|(k, _)| k == name).flat_map(|(_, v)| v.split(',')).map(str::to_owned).collect();
    if values.iter().any(String::is_empty) {
        return Err(ApiError::invalid_param(name, "an empty value (each value, comma-separated or repeated, must be given)"));
    }
    Ok(values)
}

fn limit(p: &Pairs) -> Result<usize, ApiError> {
    match one(p, "limit")? {
        None => Ok(25),
        Some(v) => match v.parse::<i64>() {
            Ok(n) if (1..=100).contains(&n) => Ok(n as usize),
            Ok(_) => Err(ApiError::invalid_param("limit", "must be between 1 and 100")),
            Err(_) => Err(ApiError::invalid_param("limit", "must be an integer")),
        },
    }
}

async fn search(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Body, RestError> {
    let p = pairs(query);
    let sort = match one(&p, "sort")? {
        None | Some("relevance") => SortOrder::Relevance,
        Some("date") => SortOrder::Date,
        Some("citations") => SortOrder::Citations,
        Some(_) => return Err(ApiError::invalid_param("sort", "must be one of relevance, date, citations").into()),
    };
    let q = one(&p, "q")?.unwrap_or_default().to_owned();
    if q.chars().count() > 1000 {
        return Err(ApiError::invalid_param("q", "must be at most 1000 characters").into());
    }
    let args = SearchArgs {
        query: q,
        fields: many(&p, "field")?,
        authors: many(&p, "author")?,
        from: one(&p, "from")?.map(|v| ("from", v.to_owned())),
        to: one(&p, "to")?.map(|v| ("to", v.to_owned())),
        sort: Some(sort),
        limit: limit(&p)?,
        cursor: one(&p, "cursor")?.map(str::to_owned),
        tags: many(&p, "tag")?,
        facets: search::facets(&many(&p, "facets")?)?,
        highlight: one(&p, "highlight")? == Some("true"),
        groups: Vec::new(),
    };
    Ok(search::search(&state, args).await?.into_body("results")?)
}

async fn detail(State(state): State<AppState>, Path(uri): Path<String>) -> Result<Body, RestError> {
    Ok(eprint::get(&state, &uri, None)?)
}

/// What the code and data platforms the eprint links to say of those links
/// ([`crate::views::integrations`]); 404 for an eprint svc does not serve.
async fn integrations(State(state): State<AppState>, Path(uri): Path<String>) -> Result<Json<Value>, RestError> {
    parse_record_uri("uri", &uri)?;
    let detail = crate::reads::blocking(&state, || projections::eprints::read::EprintsReader::new(state.store.as_ref())?.detail(&uri))
        .map_err(ApiError::from_error)?
        .filter(|d| !d.hidden())
        .ok_or_else(|| ApiError::record_not_found(format!("no eprint at {uri}")))?;
    let record: Value = serde_json::from_str(detail.record()).unwrap_or_default();
    Ok(Json(crate::views::integrations::of(&state, &uri, &record).await))
}

async fn by_author(State(state): State<AppState>, Path(did): Path<String>, RawQuery(query): RawQuery) -> Result<Json<Value>, RestError> {
    let p = pairs(query);
    check_did("did", &did)?;
    Ok(Json(eprint::list_by_author(&state, &did, limit(&p)?, one(&p, "cursor")?)?))
}
