//! The eprint operations, shared by XRPC and REST: parameters in, JSON out.

use chrono::{DateTime, NaiveDate, Utc};
use data_encoding::BASE64URL_NOPAD;
use lexicons::formats;
use projections::attached::collections::{normalize_tag, Listing};
use projections::attached::read::AttachedReader;
use projections::eprints::read::{Detail, EprintsReader};
use projections::search::{Facet, Highlight, SearchCursor, SearchRequest, SortOrder};
use projections::ProjectionError;
use serde::Serialize;
use serde_json::{json, Value};

pub use crate::body::Body;
use crate::body::JsonWriter;
use crate::error::ApiError;
use crate::state::AppState;

/// The eprint detail's author.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DetailAuthor<'a> {
    did: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<&'a str>,
    handle: &'a str,
}

/// Writes the eprint detail around the stored record text, which goes out as the
/// projection wrote it (valid JSON by construction), neither parsed nor copied twice:
/// `{uri, cid, author, record, indexedAt, metrics}`.
fn detail_body(uri: &str, detail: &Detail, attached: &Attached) -> Result<Body, ApiError> {
    let author =
        DetailAuthor { did: detail.did(), display_name: detail.display_name(), handle: detail.handle().unwrap_or("handle.invalid") };
    let mut w = JsonWriter::object(detail.record().len() + 512);
    w.field("uri", uri)?.field("cid", detail.cid())?.field("author", &author)?;
    w.stored("record", detail.record()).field("indexedAt", detail.indexed_at())?;
    w.field("metrics", &json!({"citations": attached.counts.cited_by, "downloads": 0, "views": 0}))?;
    w.field("counts", &attached.counts)?.field("versions", &attached.versions)?.field("changelogs", &attached.changelogs)?;
    Ok(w.finish())
}

/// How many records of each kind are attached to an eprint.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct AttachedCounts {
    reviews: u64,
    annotations: u64,
    endorsements: u64,
    tags: u64,
    /// The user-curated citations the eprint makes (`listCitations`).
    citations: u64,
    related_works: u64,
    /// The citation records that cite the eprint (`metrics.citations`).
    cited_by: u64,
}

/// What the eprint detail carries about the records attached to the eprint: counts, and
/// its version history and changelogs, oldest first.
struct Attached {
    counts: AttachedCounts,
    versions: Vec<Value>,
    changelogs: Vec<Value>,
}

/// The most versions and changelogs the detail lists.
const MAX_HISTORY: usize = 50;

fn attached_of(reader: &AttachedReader, uri: &str) -> Result<Attached, ProjectionError> {
    let count = |kind: &str| reader.count(&Listing::on_eprint(kind, uri));
    let counts = AttachedCounts {
        reviews: count("review")?,
        annotations: count("annotation")?,
        endorsements: count("endorsement")?,
        tags: count("tag")?,
        citations: count("citation")?,
        related_works: count("relatedWork")?,
        cited_by: reader.count(&Listing::pointing_at("citation", uri))?,
    };
    // Most eprints have no versions or changelogs: their size row says so without a scan.
    let history = |kind: &str| -> Result<Vec<Value>, ProjectionError> {
        let list = Listing::on_eprint(kind, uri);
        if reader.count(&list)? == 0 {
            return Ok(Vec::new());
        }
        let mut items = reader.all(&list, MAX_HISTORY)?;
        items.reverse();
        Ok(items.iter().map(|i| crate::attached::view(i, "author")).collect())
    };
    Ok(Attached { counts, versions: history("version")?, changelogs: history("changelog")? })
}

/// Checks that `uri` is the AT URI of a record and returns it.
pub fn parse_record_uri(field: &str, uri: &str) -> Result<(), ApiError> {
    match formats::parse_at_uri(uri) {
        Some(u) if u.collection.is_some() && u.rkey.is_some() => {
            if !formats::is_did(u.authority) {
                return Err(ApiError::invalid_param(field, "the AT URI must name its repository by DID"));
            }
            Ok(())
        }
        Some(_) => Err(ApiError::invalid_param(field, "the AT URI must name a collection and a record key")),
        None => Err(ApiError::invalid_param(field, "must be a valid AT URI (at://did/collection/rkey)")),
    }
}

/// Checks a DID parameter.
pub fn check_did(field: &str, did: &str) -> Result<(), ApiError> {
    if formats::is_did(did) {
        Ok(())
    } else {
        Err(ApiError::invalid_param(field, "must be a valid DID"))
    }
}

/// Runs store reads: in place when the store answers from local pages, and otherwise (a
/// network round trip on ScyllaDB) without stalling the other tasks of a multi-threaded
/// runtime (`block_in_place` is refused by a current-thread one).
pub(crate) fn blocking<T>(state: &AppState, read: impl FnOnce() -> T) -> T {
    if !state.store.reads_block() {
        return read();
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(read),
        _ => read(),
    }
}

/// The eprint detail of `uri` (the `getSubmission` answer).
pub fn get(state: &AppState, uri: &str, cid: Option<&str>) -> Result<Body, ApiError> {
    parse_record_uri("uri", uri)?;
    let (detail, attached) = blocking(state, || -> Result<_, ProjectionError> {
        // One reader of both models (the attached reader reads the eprints model too).
        let reader = AttachedReader::new(state.store.as_ref())?;
        let Some(detail) = reader.eprints().detail(uri)?.filter(|d| !d.hidden()) else { return Ok(None) };
        let attached = attached_of(&reader, uri)?;
        Ok(Some((detail, attached)))
    })?
    .ok_or_else(|| ApiError::record_not_found(format!("no eprint at {uri}")))?;
    if let Some(cid) = cid {
        if cid != detail.cid() {
            return Err(ApiError::record_not_found(format!("the indexed record at {uri} has CID {}, not {cid}", detail.cid())));
        }
    }
    detail_body(uri, &detail, &attached)
}

/// A page of an author's eprints: `{eprints, cursor?, total}`.
pub fn list_by_author(state: &AppState, did: &str, limit: usize, cursor: Option<&str>) -> Result<Value, ApiError> {
    check_did("author", did)?;
    let after = cursor
        .map(|c| BASE64URL_NOPAD.decode(c.as_bytes()).map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing")))
        .transpose()?;
    // A listing key: 8 bytes of createdAt, then the record's AT URI.
    if after.as_ref().is_some_and(|a| a.len() <= 8 || !a[8..].starts_with(b"at://") || std::str::from_utf8(&a[8..]).is_err()) {
        return Err(ApiError::invalid_param("cursor", "not a cursor of this listing"));
    }
    let page = blocking(state, || EprintsReader::new(state.store.as_ref())?.by_author(did, limit, after))?;
    let mut out = json!({"eprints": page.eprints, "total": page.total});
    if let Some(next) = page.next {
        out["cursor"] = json!(BASE64URL_NOPAD.encode(&next));
    }
    Ok(out)
}

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
    pub hits: Vec<String>,
    /// Where the next page starts.
    pub cursor: Option<String>,
    /// How many eprints match in all.
    pub total: usize,
    /// Facet counts over every match, when asked for (svc's extension).
    pub facets: Option<Value>,
    /// The matched words of each hit, when asked for (svc's extension).
    pub highlights: Option<Vec<Highlight>>,
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
        Ok(w.finish())
    }
}

/// Runs a search: in one of the node's search slots, on the blocking pool (the async
/// workers stay free for the requests that read little).
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
        within: None,
    };
    if !args.tags.is_empty() {
        // The eprints carrying any of the tags (in any of their forms), from the attached model.
        let tags: Vec<String> = args.tags.iter().map(|t| normalize_tag(t)).filter(|t| !t.is_empty()).collect();
        let uris = crate::attached::read(state, |r| {
            let mut uris = std::collections::BTreeSet::new();
            for tag in &tags {
                for item in r.all(&Listing::tagged(tag), crate::attached::FILTER_MAX)? {
                    if let Some(uri) = item.view["eprintUri"].as_str() {
                        uris.insert(uri.to_owned());
                    }
                }
            }
            Ok(uris)
        })?;
        request.tags = tags;
        request.within = Some(uris.into_iter().collect());
    }
    request.cursor = args
        .cursor
        .as_deref()
        .map(|c| SearchCursor::decode(c, &request).map_err(|e| ApiError::invalid_param("cursor", e.to_string())))
        .transpose()?;
    let empty = || SearchPage { hits: Vec::new(), cursor: None, total: 0, facets: None, highlights: None };
    let Some(index) = state.search_index()? else { return Ok(empty()) };
    let _slot = state.searches.acquire().await.map_err(|_| ApiError::internal("the search slots are closed"))?;
    let (facets, highlight) = (args.facets, args.highlight);
    let (results, facets, highlights) = tokio::task::spawn_blocking(move || -> Result<_, ProjectionError> {
        let results = index.search(&request)?;
        let facets = if facets.is_empty() { None } else { Some(index.facets(&request, &facets)?) };
        let highlights = if highlight { Some(index.highlights(&request, &results.hits)?) } else { None };
        Ok((results, facets, highlights))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the search task failed: {e}")))??;
    let facets = facets.map(|f| with_author_names(state, f)).transpose()?;
    Ok(SearchPage { hits: results.hits, cursor: results.next.map(|c| c.encode()), total: results.total, facets, highlights })
}

/// Adds each author facet value's handle and display name, from the accounts.
fn with_author_names(state: &AppState, mut facets: Value) -> Result<Value, ApiError> {
    let Some(authors) = facets.get_mut("author").and_then(Value::as_array_mut) else { return Ok(facets) };
    blocking(state, || -> Result<(), ProjectionError> {
        let reader = EprintsReader::new(state.store.as_ref())?;
        for entry in authors.iter_mut() {
            let account = reader.account(entry["value"].as_str().unwrap_or_default())?;
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
