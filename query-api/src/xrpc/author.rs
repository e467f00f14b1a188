//! `pub.svc.author.*`: an author's page: profile record, handle, counts and eprints.

use data_encoding::BASE64URL_NOPAD;
use projections::attached::collections::{Kind, Listing, PROFILE};
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::did_param;
use crate::reads;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.author.getProfile", Auth::Open, get_profile)
        .query("pub.svc.author.searchAuthors", Auth::Open, search_authors)
        .procedure("pub.svc.author.initiateOrcidVerification", Auth::Required, initiate_orcid_verification)
}

/// `pub.svc.author.initiateOrcidVerification` (beyond the contract) → `{authorizeUrl}`:
/// ORCID's page to send the caller to, carrying a single-use state
/// ([`crate::auth::orcid`]).
async fn initiate_orcid_verification(c: Call) -> Answer {
    let me = c.caller()?.did.clone();
    Body::json(&json!({"authorizeUrl": crate::auth::orcid::initiate(&c.state, &me).await?}))
}

/// `pub.svc.author.searchAuthors` (beyond the contract): `{authors, cursor?}`, the accounts
/// svc knows whose handle or display-name words start with every word of `q`
/// (`docs/decisions.md`, "Author search"), each with its handle, display name and eprint
/// count; hidden accounts are left out.
fn search_authors(c: &Call) -> Answer {
    let q = c.params.str("q").unwrap_or_default();
    if !q.chars().any(char::is_alphanumeric) {
        return Err(ApiError::invalid_param("q", "must hold a letter or a digit"));
    }
    let after = match c.params.str("cursor") {
        None => None,
        Some(raw) => match BASE64URL_NOPAD.decode(raw.as_bytes()) {
            Ok(key) if key.contains(&0) => Some(key),
            _ => return Err(ApiError::invalid_param("cursor", "not a cursor of this search")),
        },
    };
    let limit = c.limit(25);
    let index = c.state.search_index().map_err(ApiError::from_error)?;
    let (authors, next) = reads::attached(&c.state, |r| {
        let page = match &index {
            Some(index) => index.people().authors(r.eprints(), q, limit, after)?,
            None => projections::eprints::read::AuthorSearch { authors: Vec::new(), next: None },
        };
        let mut authors = Vec::with_capacity(page.authors.len());
        for m in page.authors {
            let eprints = r.eprints().author_eprint_count(&m.did)?;
            let mut author =
                json!({"did": m.did, "handle": m.account.handle.as_deref().unwrap_or("handle.invalid"), "eprintCount": eprints});
            if let Some(name) = m.account.profile_name.as_ref().or(m.account.display_name.as_ref()) {
                author["displayName"] = json!(name);
            }
            authors.push(author);
        }
        Ok((authors, page.next))
    })?;
    let mut out = json!({ "authors": authors });
    if let Some(next) = next {
        out["cursor"] = json!(BASE64URL_NOPAD.encode(&next));
    }
    Body::json(&out)
}

/// How many of the author's eprints the profile lists (the rest page through
/// `pub.svc.eprint.listByAuthor`).
const RECENT_EPRINTS: usize = 10;

/// `pub.svc.author.getProfile`: `{profile, metrics, eprints}`: the author's
/// `pub.svc.actor.profile` record (when written) with `did`, `handle` and `displayName`,
/// the counts of what they wrote, and their newest eprints; `NotFound` for a DID svc knows
/// nothing of, and for a hidden account.
fn get_profile(c: &Call) -> Answer {
    let did = did_param(&c.params, "did")?;
    let answer = reads::attached(&c.state, |r| {
        let account = r.account(did)?;
        if account.hidden {
            return Ok(None);
        }
        let record = r.get(&format!("at://{did}/{PROFILE}/self"))?;
        let eprints = r.eprints().by_author(did, RECENT_EPRINTS, None)?;
        let count = |kind: Kind| r.count(&Listing::by_author(kind, did));
        let metrics = json!({
            "eprintCount": eprints.total,
            "reviewCount": count(Kind::Review)?,
            "annotationCount": count(Kind::Annotation)?,
            "endorsementCount": count(Kind::Endorsement)?,
            "tagCount": count(Kind::Tag)?,
            "citationCount": count(Kind::Citation)?,
        });
        if record.is_none() && account.handle.is_none() && eprints.total == 0 {
            return Ok(None);
        }
        let mut profile = record.as_ref().map_or_else(|| json!({}), |r| r.view.clone());
        profile["did"] = json!(did);
        profile["handle"] = json!(account.handle.as_deref().unwrap_or("handle.invalid"));
        if profile.get("displayName").is_none() {
            if let Some(n) = &account.display_name {
                profile["displayName"] = json!(n);
            }
        }
        profile["hasProfileRecord"] = json!(record.is_some());
        verified_orcid(&c.state, did, &mut profile)?;
        Ok(Some(ProfileAnswer { eprints: eprints.eprints, metrics, profile }))
    })?;
    let answer = answer.ok_or_else(|| ApiError::not_found(format!("svc knows no author {did}")))?;
    Body::json(&answer)
}

/// The answer of `getProfile`, written as it is read: the eprints' summaries are JSON text.
#[derive(serde::Serialize)]
struct ProfileAnswer {
    eprints: Vec<projections::submission::SummaryJson>,
    metrics: Value,
    profile: Value,
}

/// Adds to a profile the ORCID iD its owner proved through ORCID, if any:
/// `verifiedOrcid {orcid, name?, verifiedAt}`, and `orcidVerified` (whether the iD the
/// profile shows is that one; a profile that shows none shows the verified one).
fn verified_orcid(state: &crate::state::AppState, did: &str, profile: &mut Value) -> Result<(), projections::ProjectionError> {
    let verified = projections::access::read::AccessReader::new(state.store.as_ref())?.verified_orcid(did)?;
    let Some((orcid, name, at)) = verified else {
        profile["orcidVerified"] = json!(false);
        return Ok(());
    };
    if profile.get("orcid").and_then(Value::as_str).is_none_or(str::is_empty) {
        profile["orcid"] = json!(orcid);
    }
    profile["orcidVerified"] = json!(profile["orcid"] == json!(orcid));
    let mut v = json!({"orcid": orcid, "verifiedAt": at});
    if let Some(n) = name {
        v["name"] = json!(n);
    }
    profile["verifiedOrcid"] = v;
    Ok(())
}
