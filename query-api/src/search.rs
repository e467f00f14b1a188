//! Searching eprints, shared by XRPC, REST and the admin listing: the request as the API
//! receives it ([`SearchArgs`]), checked and run in a search slot ([`search`]), and the
//! page it answers ([`SearchPage`]).

use chrono::{DateTime, NaiveDate, Utc};
use projections::attached::collections::normalize_tag;
use projections::eprints::read::EprintsReader;
use std::sync::Arc;

use projections::search::{Facet, Found, Highlight, SearchCursor, SearchRequest, SortOrder};
use projections::ProjectionError;
use serde_json::{json, Value};

use crate::body::{Body, JsonWriter};
use crate::error::ApiError;
use crate::params::check_did;
use crate::reads::blocking;
use crate::state::AppState;

/// A search as the API receives it, before validation of dates and cursor.
#[derive(Debug, Default)]
pub struct SearchArgs {
    /// Words.
    pub query: String,
    /// Field codes.
    pub fields: Vec<String>,
    /// Author DIDs.
    pub authors: Vec<String>,
    /// `(parameter name, value)` of the lower date bound.
    pub from: Option<(&'static str, String)>,
    /// `(parameter name, value)` of the upper date bound.
    pub to: Option<(&'static str, String)>,
    /// The order.
    pub sort: Option<SortOrder>,
    /// Page size, already bounded.
    pub limit: usize,
    /// The cursor given back.
    pub cursor: Option<String>,
    /// Tags, in any of their forms: a hit carries at least one (svc's extension).
    pub tags: Vec<String>,
    /// Facets to count over every match (svc's extension).
    pub facets: Vec<Facet>,
    /// Whether to mark the matched words of each hit (svc's extension).
    pub highlight: bool,
    /// Groups of field or facet codes, a hit having one of each (faceted browsing).
    pub groups: Vec<Vec<String>>,
}

/// The `facets` parameter: names, repeated or comma-separated.
pub fn facets(names: &[String]) -> Result<Vec<Facet>, ApiError> {
    let mut out = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
        let facet = Facet::parse(name)
            .ok_or_else(|| ApiError::invalid_param("facets", format!("{name} is not a facet (fields, year, author, tags, facet)")))?;
        if !out.contains(&facet) {
            out.push(facet);
        }
    }
    Ok(out)
}

/// Parses an ISO 8601 date or datetime; a bare date means its first (or, for an upper
/// bound, its last) microsecond.
fn parse_bound(field: &str, value: &str, upper: bool) -> Result<i64, ApiError> {
    let in_range = |year: i32| (MIN_YEAR..=MAX_YEAR).contains(&year);
    let out_of_range = || ApiError::invalid_param(field, format!("must be a date between the years {MIN_YEAR} and {MAX_YEAR}"));
    if let Ok(dt) = DateTime::parse_from_rfc3339(value) {
        let dt = dt.with_timezone(&Utc);
        return if in_range(chrono::Datelike::year(&dt)) { Ok(dt.timestamp_micros()) } else { Err(out_of_range()) };
    }
    if let Ok(d) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        if !in_range(chrono::Datelike::year(&d)) {
            return Err(out_of_range());
        }
        let start = d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_micros()).unwrap_or_default();
        return Ok(if upper { start + 86_400_000_000 - 1 } else { start });
    }
    Err(ApiError::invalid_param(field, "must be an ISO 8601 date (YYYY-MM-DD) or datetime"))
}

/// The earliest year a date filter may name: before any scholarly journal.
pub const MIN_YEAR: i32 = 1000;
/// The latest year a date filter may name (four-digit years, as ISO 8601 without expansion).
pub const MAX_YEAR: i32 = 9999;

/// A page of search hits.
#[derive(Debug)]
pub struct SearchPage {
    /// Eprint summaries, as stored (JSON text written by the search projection).
    pub hits: Hits,
    /// Where the next page starts.
    pub cursor: Option<String>,
    /// How many eprints match in all.
    pub total: usize,
    /// Facet counts over every match, when asked for (svc's extension).
    pub facets: Option<Value>,
    /// The matched words of each hit, when asked for (svc's extension).
    pub highlights: Option<Vec<Highlight>>,
    /// The id of this result list, which clicks on it name (svc's extension, as the
    /// reference's `browseFaceted` answers one), when it was recorded.
    pub impression_id: Option<String>,
}

/// The summaries of a search page: those of the answer the index kept, shared rather than
/// copied for each request.
#[derive(Debug)]
pub struct Hits(Option<Arc<Found>>);

impl std::ops::Deref for Hits {
    type Target = [String];

    fn deref(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |found| &found.results.hits)
    }
}

impl SearchPage {
    /// The response body `{cursor?, <list>: hits, total}` (XRPC names the list
    /// `submissions`, REST `results`), written around the stored summaries.
    pub fn into_body(self, list: &'static str) -> Result<Body, ApiError> {
        let mut w = JsonWriter::object(64 + self.hits.iter().map(|h| h.len() + 1).sum::<usize>());
        if let Some(cursor) = &self.cursor {
            w.field("cursor", cursor)?;
        }
        w.stored_array(list, self.hits.iter().map(String::as_str)).field("total", &self.total)?;
        if let Some(facets) = &self.facets {
            w.field("facets", facets)?;
        }
        if let Some(highlights) = &self.highlights {
            w.field("highlights", highlights)?;
        }
        if let Some(id) = &self.impression_id {
            w.field("impressionId", id)?;
        }
        Ok(w.finish())
    }
}

/// Runs a search: from an answer the index kept for the same search of its visible commit,
/// or in one of the node's search slots on the blocking pool (the async workers stay free for
/// the requests that read little).
pub async fn search(state: &AppState, args: SearchArgs) -> Result<SearchPage, ApiError> {
    for did in &args.authors {
        check_did("authors", did)?;
    }
    let created_from = args.from.as_ref().map(|(f, v)| parse_bound(f, v, false)).transpose()?;
    let created_to = args.to.as_ref().map(|(f, v)| parse_bound(f, v, true)).transpose()?;
    if let (Some(a), Some(b)) = (created_from, created_to) {
        if a > b {
            return Err(ApiError::invalid_request("the date range ends before it starts"));
        }
    }
    let sort = args.sort.unwrap_or(SortOrder::Relevance);
    let mut request = SearchRequest {
        query: args.query,
        fields: args.fields,
        authors: args.authors,
        created_from,
        created_to,
        sort,
        limit: args.limit,
        cursor: None,
        tags: Vec::new(),
        groups: args.groups,
    };
    // The tags in any of their forms (`Machine Learning` = `#machine_learning`).
    request.tags = args.tags.iter().map(|t| normalize_tag(t)).filter(|t| !t.is_empty()).collect();
    request.cursor = args
        .cursor
        .as_deref()
        .map(|c| SearchCursor::decode(c, &request).map_err(|e| ApiError::invalid_param("cursor", e.to_string())))
        .transpose()?;
    let empty = || SearchPage { hits: Hits(None), cursor: None, total: 0, facets: None, highlights: None, impression_id: None };
    let Some(index) = state.search_index()? else { return Ok(empty()) };
    let (facets, highlight) = (args.facets, args.highlight);
    // An answer kept from a search of the same commit needs no slot.
    let found = match index.found(&request, &facets, highlight) {
        Some(found) => found,
        None => {
            let _slot = state.searches.acquire().await.map_err(|_| ApiError::internal("the search slots are closed"))?;
            tokio::task::spawn_blocking(move || index.find(&request, &facets, highlight))
                .await
                .map_err(|e| ApiError::internal(format!("the search task failed: {e}")))??
        }
    };
    let facets = found.facets.clone().map(|f| with_author_names(state, f)).transpose()?;
    Ok(SearchPage {
        cursor: found.results.next.as_ref().map(|c| c.encode()),
        total: found.results.total,
        facets,
        highlights: found.highlights.clone(),
        impression_id: None,
        hits: Hits(Some(found)),
    })
}

/// The `n` eprints that best match any of `words`, with their field codes
/// ([`projections::search::SearchIndex::like`]), in one of the node's search slots.
pub async fn like(state: &AppState, words: Vec<String>, n: usize) -> Result<std::sync::Arc<Vec<projections::search::LikeHit>>, ApiError> {
    let Some(index) = state.search_index()? else { return Ok(Default::default()) };
    let _slot = state.searches.acquire().await.map_err(|_| ApiError::internal("the search slots are closed"))?;
    let hits = tokio::task::spawn_blocking(move || index.like(&words, n))
        .await
        .map_err(|e| ApiError::internal(format!("the search task failed: {e}")))??;
    Ok(hits)
}

/// Adds each author facet value's handle and display name, from the accounts.
fn with_author_names(state: &AppState, mut facets: Value) -> Result<Value, ApiError> {
    let Some(authors) = facets.get_mut("author").and_then(Value::as_array_mut) else { return Ok(facets) };
    blocking(state, || -> Result<(), ProjectionError> {
        let reader = EprintsReader::new(state.store.as_ref())?;
        let dids: Vec<String> = authors.iter().map(|a| a["value"].as_str().unwrap_or_default().to_owned()).collect();
        let accounts = reader.accounts(&dids.iter().map(String::as_str).collect::<Vec<_>>())?;
        for (entry, account) in authors.iter_mut().zip(accounts) {
            if let Some(h) = account.handle {
                entry["handle"] = json!(h);
            }
            if let Some(n) = account.display_name {
                entry["displayName"] = json!(n);
            }
        }
        Ok(())
    })?;
    Ok(facets)
}
