//! The eprint's views: its detail (`getSubmission`, the REST detail) and an author's page
//! of eprints, shared by XRPC and REST.

use data_encoding::BASE64URL_NOPAD;
use projections::attached::collections::{Kind, Listing};
use projections::attached::read::AttachedReader;
use projections::eprints::read::{Detail, EprintsReader};
use projections::usage::read::{Totals, UsageReader};
use projections::ProjectionError;
use serde::Serialize;
use serde_json::{json, Value};

use crate::body::{Body, JsonWriter};
use crate::error::ApiError;
use crate::params::{check_did, parse_record_uri};
use crate::reads::blocking;
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
fn detail_body(uri: &str, detail: &Detail, attached: &Attached, usage: Totals) -> Result<Body, ApiError> {
    let author =
        DetailAuthor { did: detail.did(), display_name: detail.display_name(), handle: detail.handle().unwrap_or("handle.invalid") };
    let mut w = JsonWriter::object(detail.record().len() + 512);
    w.field("uri", uri)?.field("cid", detail.cid())?.field("author", &author)?;
    w.stored("record", detail.record()).field("indexedAt", detail.indexed_at())?;
    w.field("metrics", &json!({"citations": attached.counts.cited_by, "downloads": usage.downloads, "views": usage.views}))?;
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
    // Every size in one read; most eprints have no versions or changelogs, and their size
    // rows say so without a scan.
    const KINDS: [Kind; 8] =
        [Kind::Review, Kind::Annotation, Kind::Endorsement, Kind::Tag, Kind::Citation, Kind::RelatedWork, Kind::Version, Kind::Changelog];
    let mut lists: Vec<Listing> = KINDS.iter().map(|k| Listing::on_eprint(*k, uri)).collect();
    lists.push(Listing::pointing_at(Kind::Citation, uri));
    let Ok([reviews, annotations, endorsements, tags, citations, related_works, versions, changelogs, cited_by]) =
        <[u64; 9]>::try_from(reader.counts(&lists)?)
    else {
        unreachable!("one count per listing")
    };
    let counts = AttachedCounts { reviews, annotations, endorsements, tags, citations, related_works, cited_by };
    let history = |list: &Listing, size: u64| -> Result<Vec<Value>, ProjectionError> {
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut items = reader.all(list, MAX_HISTORY)?;
        items.reverse();
        Ok(items.iter().map(|i| super::attached::view(i, "author")).collect())
    };
    Ok(Attached { counts, versions: history(&lists[6], versions)?, changelogs: history(&lists[7], changelogs)? })
}

/// The eprint detail of `uri` (the `getSubmission` answer).
pub fn get(state: &AppState, uri: &str, cid: Option<&str>) -> Result<Body, ApiError> {
    parse_record_uri("uri", uri)?;
    let (detail, attached, usage) = blocking(state, || -> Result<_, ProjectionError> {
        // One reader of both models (the attached reader reads the eprints model too).
        let reader = AttachedReader::new(state.store.as_ref())?;
        let Some(detail) = reader.eprints().detail(uri)?.filter(|d| !d.hidden()) else { return Ok(None) };
        let attached = attached_of(&reader, uri)?;
        let usage = UsageReader::new(state.store.as_ref())?.totals(uri)?;
        Ok(Some((detail, attached, usage)))
    })?
    .ok_or_else(|| ApiError::record_not_found(format!("no eprint at {uri}")))?;
    if let Some(cid) = cid {
        if cid != detail.cid() {
            return Err(ApiError::record_not_found(format!("the indexed record at {uri} has CID {}, not {cid}", detail.cid())));
        }
    }
    detail_body(uri, &detail, &attached, usage)
}

/// A page of an author's eprints: `{eprints, cursor?, total}`.
pub fn list_by_author(state: &AppState, did: &str, limit: usize, cursor: Option<&str>) -> Result<Value, ApiError> {
    check_did("author", did)?;
    let after = cursor
        .map(|c| BASE64URL_NOPAD.decode(c.as_bytes()).map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing")))
        .transpose()?;
    // A listing key: 8 bytes of createdAt, then the record's AT URI (whole or short).
    if after.as_ref().is_some_and(|a| !projections::rows::is_listing_key(a)) {
        return Err(ApiError::invalid_param("cursor", "not a cursor of this listing"));
    }
    let page = blocking(state, || EprintsReader::new(state.store.as_ref())?.by_author(did, limit, after))?;
    let mut out = json!({"eprints": page.eprints, "total": page.total});
    if let Some(next) = page.next {
        out["cursor"] = json!(BASE64URL_NOPAD.encode(&next));
    }
    Ok(out)
}
