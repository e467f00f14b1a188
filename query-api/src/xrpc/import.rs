//! `pub.svc.import.*`: the papers svc imported from external sources (the imports model).
//! Reads only: a paper is imported when someone claims it from its source
//! (`pub.svc.claiming.startClaimFromExternal`), as an `external.paper` event.

use projections::imports::read::{paper_view, ImportQuery, ImportsReader};
use serde_json::json;
use store::Columns;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::reads::blocking;
use crate::state::AppState;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.import.search", Auth::Required, search)
        .kept()
        .query("pub.svc.import.exists", Auth::Open, exists)
        .kept()
        .query("pub.svc.import.get", Auth::Open, get)
        .kept()
}

/// A cursor of an import listing: the last import id of the page.
pub(crate) fn id_cursor(c: &Call) -> Result<Option<u64>, ApiError> {
    c.params
        .str("cursor")
        .map(|s| s.parse::<u64>().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing")))
        .transpose()
}

/// The imported paper of `source` (any source when `None`) and `external_id`, in whichever
/// form the source's identifiers come (`arXiv:2503.11731v2` finds `2503.11731`).
pub(crate) fn find(state: &AppState, source: Option<&str>, external_id: &str) -> Result<Option<Columns>, ApiError> {
    let candidates: Vec<(&str, String)> = match source {
        Some(s) => {
            let id = state.sources.get(s).and_then(|src| src.normalize_id(external_id)).unwrap_or_else(|| external_id.trim().to_owned());
            vec![(s, id)]
        }
        None => state.sources.names().filter_map(|s| Some((s, state.sources.get(s)?.normalize_id(external_id)?))).collect(),
    };
    blocking(state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(state.store.as_ref())?;
        for (s, id) in candidates {
            if let Some(row) = r.paper(s, &id)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    })
}

/// `pub.svc.import.search` → `{eprints, cursor?, hasMore}`: newest import first.
fn search(c: &Call) -> Answer {
    let q = ImportQuery {
        words: c.str("query").to_owned(),
        source: c.params.str("source").map(str::to_owned),
        claim_status: c.params.str("claimStatus").map(str::to_owned),
        author_name: c.params.str("authorName").map(str::to_owned),
        author_orcid: c.params.str("authorOrcid").map(str::to_owned),
        after: id_cursor(c)?,
        limit: c.limit(50),
    };
    let (rows, more) = blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.search(&q))?;
    let eprints: Vec<_> = rows.iter().map(paper_view).collect();
    let mut out = json!({"eprints": eprints, "hasMore": more});
    if more {
        out["cursor"] = json!(eprints.last().map(|e| e["id"].to_string()));
    }
    Body::json(&out)
}

/// `pub.svc.import.exists` → `{exists}`.
fn exists(c: &Call) -> Answer {
    let found = find(&c.state, c.params.str("source"), c.str("externalId"))?;
    Body::json(&json!({"exists": found.is_some()}))
}

/// `pub.svc.import.get` → the `#importedEprint`, with its claim status.
fn get(c: &Call) -> Answer {
    let row = find(&c.state, c.params.str("source"), c.str("externalId"))?
        .ok_or_else(|| ApiError::not_found(format!("no paper {} was imported", c.str("externalId"))))?;
    Body::json(&paper_view(&row))
}

/// `pub.svc.admin.listImports {limit, source?, cursor?}` (admin) → `{items, total,
/// totalEprints, source, limit, cursor?}`: newest import first; `total` and `totalEprints`
/// (the reference's name) count the papers imported (of the source, when given).
pub(crate) fn list_imports(c: &Call) -> Answer {
    let source = c.params.str("source").map(str::to_owned);
    let q = ImportQuery { source: source.clone(), after: id_cursor(c)?, limit: c.limit(50), ..ImportQuery::default() };
    let (rows, more, total) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(c.state.store.as_ref())?;
        let (rows, more) = r.search(&q)?;
        Ok((rows, more, r.count(source.as_deref())?))
    })?;
    let items: Vec<_> = rows.iter().map(paper_view).collect();
    let mut out = json!({"items": items, "total": total, "totalEprints": total, "limit": q.limit});
    if let Some(s) = source {
        out["source"] = json!(s);
    }
    if more {
        out["cursor"] = json!(items.last().map(|e| e["id"].to_string()));
    }
    Body::json(&out)
}
