//! `pub.svc.resolve.*` (beyond the contract): what svc holds under an external identifier.
//!
//! - Eprints by DOI and arXiv id: the search index's identifier field (the lookup of an id
//!   typed in the search box) names the candidate, and the eprint's own record must carry
//!   the identifier (the search also matches words, so its best hit alone is no proof).
//! - Accounts by an ORCID iD their owner proved through ORCID
//!   (`author.initiateOrcidVerification`): an iD a profile merely states is not trusted.
//! - Knowledge-graph nodes by any identifier in their `externalIds` (ROR, Wikidata, ISBN,
//!   PMID…), the shared graph's before personal ones.
//!
//! Hidden accounts and their records resolve to nothing.

use projections::access::read::AccessReader;
use projections::attached::collections::graph::by_external_id;
use projections::eprints::read::EprintsReader;
use projections::search::ids;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::reads::{self, blocking};
use crate::search::{self, SearchArgs};

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().query_async("pub.svc.resolve.byExternalId", Auth::Open, by_external_id_answer)
}

/// A path of the web client, for an AT URI or a DID in it.
fn encoded(s: &str) -> String {
    sources::encode(s).replace('+', "%20")
}

/// `byExternalId {system, identifier}` → `{found, entityType?, uri?, label?, webPath?}`.
async fn by_external_id_answer(c: Call) -> Answer {
    let system = c.str("system").to_owned();
    let identifier = c.str("identifier").trim().to_owned();
    if identifier.is_empty() {
        return Err(ApiError::invalid_param("identifier", "must not be blank"));
    }
    let found = match system.as_str() {
        "doi" | "arxiv" => eprint(&c, &system, &identifier).await?,
        "orcid" => author(&c, &identifier)?,
        _ => None,
    };
    let found = match found {
        Some(f) => Some(f),
        None => node(&c, &system, &identifier)?,
    };
    Body::json(&found.unwrap_or_else(|| json!({"found": false})))
}

/// The eprint whose record carries the DOI or arXiv id.
async fn eprint(c: &Call, system: &str, identifier: &str) -> Result<Option<Value>, ApiError> {
    // The identifier as written (a `doi.org` or `arxiv.org` URL, `arXiv:…`), or bare.
    let prefix = format!("{system}:");
    let query = match ids::of_query(identifier) {
        Some(id) if id.starts_with(&prefix) => identifier.to_owned(),
        _ => format!("{prefix}{identifier}"),
    };
    let Some(wanted) = ids::of_query(&query).filter(|id| id.starts_with(&prefix)) else { return Ok(None) };
    let page = search::search(&c.state, SearchArgs { query, limit: 5, ..Default::default() }).await?;
    for hit in page.hits.iter() {
        let Some(uri) = serde_json::from_str::<Value>(hit).ok().and_then(|h| h["uri"].as_str().map(str::to_owned)) else { continue };
        let detail = blocking(&c.state, || EprintsReader::new(c.state.store.as_ref())?.detail(&uri))?;
        let Some(detail) = detail.filter(|d| !d.hidden()) else { continue };
        let record: Value = serde_json::from_str(detail.record()).unwrap_or_default();
        if ids::of_record(&record).contains(&wanted) {
            let title = record["title"].as_str().unwrap_or_default();
            return Ok(Some(json!({"found": true, "entityType": "eprint", "uri": uri, "label": title,
                                  "webPath": format!("/eprints/{}", encoded(&uri))})));
        }
    }
    Ok(None)
}

/// The account that proved the ORCID iD.
fn author(c: &Call, orcid: &str) -> Result<Option<Value>, ApiError> {
    let orcid = orcid.trim_start_matches("https://orcid.org/").trim_start_matches("http://orcid.org/");
    let Some(did) = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.orcid_owner(orcid))? else { return Ok(None) };
    let account = blocking(&c.state, || EprintsReader::new(c.state.store.as_ref())?.account(&did))?;
    if account.hidden {
        return Ok(None);
    }
    let label = account.profile_name.or(account.display_name).or(account.handle).unwrap_or_else(|| did.clone());
    Ok(Some(json!({"found": true, "entityType": "author", "uri": did, "label": label, "webPath": format!("/authors/{}", encoded(&did))})))
}

/// The node with the identifier among its `externalIds`: the shared graph's first. ROR ids
/// are tried both bare and as their URL.
fn node(c: &Call, system: &str, identifier: &str) -> Result<Option<Value>, ApiError> {
    let mut forms = vec![identifier.to_owned()];
    if system == "ror" {
        forms.push(match identifier.strip_prefix("https://ror.org/") {
            Some(bare) => bare.to_owned(),
            None => format!("https://ror.org/{identifier}"),
        });
    }
    let gov = c.state.identity.governance_did.clone();
    let found = reads::attached(&c.state, |r| {
        let mut best = None;
        for form in &forms {
            for item in r.page(&by_external_id(system, form), 20, None)?.items {
                let shared = item.did == gov;
                if best.as_ref().is_none_or(|(was_shared, _)| shared && !was_shared) {
                    best = Some((shared, item));
                }
            }
        }
        Ok(best.map(|(_, item)| item))
    })?;
    Ok(found.map(|item| {
        let id = item.text("id").to_owned();
        json!({"found": true, "entityType": "node", "uri": item.uri, "label": item.text("label"),
               "webPath": format!("/graph/{}", encoded(&id))})
    }))
}
