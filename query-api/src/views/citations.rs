//! Extracted citations: the works an eprint references as a bibliographic service (OpenAlex)
//! describes them, from the eprint's newest `external.enrichment`
//! (`admin.triggerCitationExtraction`), beside the citation records users write. A cited
//! work whose DOI (or arXiv id) an indexed eprint's record carries points at that eprint;
//! an eprint is cited by every eprint whose extracted citations name one of its
//! identifiers.
//!
//! Listings put the records first (newest first, paged by their listing keys) and the
//! extracted citations after them, in the service's order, paged by position: a cursor is
//! a listing key, or `extracted.<n>` for the n-th extracted citation.

use projections::attached::read::AttachedReader;
use projections::imports::read::ImportsReader;
use projections::search::ids;
use projections::ProjectionError;
use serde_json::{json, Value};

use crate::error::ApiError;
use lexicons::Params;

/// The most eprints read as citing one eprint through their extracted citations.
const MAX_CITING: usize = 1000;

/// Where a page of a citation listing starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Among the records, after this listing key (from the first when `None`).
    Records(Option<Vec<u8>>),
    /// At this position among the extracted citations.
    Extracted(usize),
}

const EXTRACTED: &str = "extracted.";

/// The `cursor` parameter of a citation listing.
///
/// # Errors
/// `InvalidRequest` for a cursor this listing did not give.
pub fn start(params: &Params) -> Result<Start, ApiError> {
    match params.str("cursor").and_then(|c| c.strip_prefix(EXTRACTED)) {
        Some(n) => n.parse().map(Start::Extracted).map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing")),
        None => Ok(Start::Records(crate::params::cursor(params)?)),
    }
}

/// The cursor of the extracted citation at position `n`.
pub fn extracted_cursor(n: usize) -> String {
    format!("{EXTRACTED}{n}")
}

/// The first live, shown eprint whose record carries one of `ids`.
fn eprint_by_ids(r: &AttachedReader, ids: &[String]) -> Result<Option<String>, ProjectionError> {
    for id in ids {
        for uri in r.eprints().by_external_id(id, 5)? {
            if r.eprint_title(&uri)?.is_some() {
                return Ok(Some(uri));
            }
        }
    }
    Ok(None)
}

/// The identifiers a cited work (as its enrichment stores it) is known by.
fn work_ids(work: &Value) -> Vec<String> {
    work["doi"].as_str().map(projections::imports::work_ids).unwrap_or_default()
}

/// An extracted citation of `eprint_uri` (a cited work of its enrichment) in the shape of a
/// citation record's view (`source: auto`), pointing at the eprint svc indexes for it.
fn view(r: &AttachedReader, eprint_uri: &str, work: &Value, fetched_at: &Value) -> Result<Value, ProjectionError> {
    let mut cited = json!({"title": work["title"]});
    for (from, to) in [("doi", "doi"), ("authors", "authors"), ("year", "year"), ("venue", "venue")] {
        if !work[from].is_null() {
            cited[to] = work[from].clone();
        }
    }
    if let Some(target) = eprint_by_ids(r, &work_ids(work))? {
        cited["svcUri"] = json!(target);
    }
    Ok(json!({
        "uri": work["workId"],
        "eprintUri": eprint_uri,
        "citedWork": cited,
        "citationType": "cites",
        "source": "auto",
        "createdAt": fetched_at,
    }))
}

/// The works `eprint_uri`'s newest enrichment cites, and when it was fetched.
fn cited_works(imports: &ImportsReader, eprint_uri: &str) -> Result<(Vec<Value>, Value), ProjectionError> {
    let Some(e) = imports.enrichment(eprint_uri)? else { return Ok((Vec::new(), Value::Null)) };
    let works = e["citedWorks"].as_array().cloned().unwrap_or_default();
    Ok((works, e["fetchedAt"].clone()))
}

/// The identifiers (`doi:…`, `arxiv:…`) of each work `eprint_uri`'s newest enrichment
/// cites, work by work (those without an identifier left out).
pub fn cited_identifiers(imports: &ImportsReader, eprint_uri: &str) -> Result<Vec<Vec<String>>, ProjectionError> {
    let (works, _) = cited_works(imports, eprint_uri)?;
    Ok(works.iter().map(work_ids).filter(|ids| !ids.is_empty()).collect())
}

/// How many extracted citations `eprint_uri` has.
pub fn count_of(imports: &ImportsReader, eprint_uri: &str) -> Result<u64, ProjectionError> {
    Ok(cited_works(imports, eprint_uri)?.0.len() as u64)
}

/// Up to `limit` extracted citations of `eprint_uri` from position `from`, as citation
/// views, with the position after them when more follow.
pub fn page_of(
    r: &AttachedReader,
    imports: &ImportsReader,
    eprint_uri: &str,
    from: usize,
    limit: usize,
) -> Result<(Vec<Value>, Option<usize>), ProjectionError> {
    let (works, fetched_at) = cited_works(imports, eprint_uri)?;
    let views = works.iter().skip(from).take(limit).map(|w| view(r, eprint_uri, w, &fetched_at)).collect::<Result<Vec<_>, _>>()?;
    let next = (from.saturating_add(limit) < works.len()).then_some(from + limit);
    Ok((views, next))
}

/// The shown eprints whose extracted citations name one of `eprint_uri`'s identifiers (at
/// most [`MAX_CITING`]), in URI order, each with the extracted citation that names it.
pub fn citing(r: &AttachedReader, imports: &ImportsReader, eprint_uri: &str) -> Result<Vec<Value>, ProjectionError> {
    let Some(eprint) = r.eprints().title_and_ids(eprint_uri)? else { return Ok(Vec::new()) };
    citing_ids(r, imports, eprint_uri, eprint.ids)
}

/// [`citing`], for an eprint whose identifiers (`ids`, without their aliases) the caller
/// has read.
pub fn citing_ids(r: &AttachedReader, imports: &ImportsReader, eprint_uri: &str, ids: Vec<String>) -> Result<Vec<Value>, ProjectionError> {
    let mine = ids::with_aliases(ids);
    let mut citers: Vec<String> = Vec::new();
    for id in &mine {
        citers.extend(imports.cited_by(id, None, MAX_CITING)?);
    }
    citers.sort();
    citers.dedup();
    citers.truncate(MAX_CITING);
    let mut out = Vec::new();
    for citer in citers {
        if citer == eprint_uri || r.eprint_title(&citer)?.is_none() {
            continue;
        }
        let (works, fetched_at) = cited_works(imports, &citer)?;
        let Some(work) = works.iter().find(|w| work_ids(w).iter().any(|id| mine.contains(id))) else { continue };
        let mut v = view(r, &citer, work, &fetched_at)?;
        v["citedWork"]["svcUri"] = json!(eprint_uri);
        out.push(v);
    }
    Ok(out)
}
