//! `pub.svc.eprint.*` queries.

use lexicons::Params;
use projections::search::SortOrder;

use crate::eprints::{self, body, Body, SearchArgs};
use crate::error::ApiError;
use crate::state::AppState;

/// `pub.svc.eprint.getSubmission`: params `uri`, `cid?`.
pub fn get_submission(state: &AppState, p: &Params) -> Result<Body, ApiError> {
    eprints::get(state, p.str("uri").unwrap_or_default(), p.str("cid"))
}

/// `pub.svc.eprint.listByAuthor`: params `author` (alias `did`), `limit`, `cursor`.
pub fn list_by_author(state: &AppState, p: &Params) -> Result<Body, ApiError> {
    let limit = p.int("limit").unwrap_or(25) as usize;
    body(&eprints::list_by_author(state, p.str("author").unwrap_or_default(), limit, p.str("cursor"))?)
}

/// `pub.svc.eprint.searchSubmissions`: `sortBy` wins over `sort` when both are sent.
pub async fn search_submissions(state: &AppState, p: &Params) -> Result<Body, ApiError> {
    let sort = match (p.str("sortBy"), p.str("sort")) {
        (Some("date"), _) | (None, Some("recent")) => SortOrder::Date,
        (Some("citations"), _) => SortOrder::Citations,
        _ => SortOrder::Relevance,
    };
    let args = SearchArgs {
        query: p.str("query").unwrap_or_default().to_owned(),
        fields: p.strs("fields"),
        authors: p.strs("authors"),
        from: p.str("dateFrom").map(|v| ("dateFrom", v.to_owned())),
        to: p.str("dateTo").map(|v| ("dateTo", v.to_owned())),
        sort: Some(sort),
        limit: p.int("limit").unwrap_or(25) as usize,
        cursor: p.str("cursor").map(str::to_owned),
    };
    eprints::search(state, args).await?.into_body("submissions")
}
