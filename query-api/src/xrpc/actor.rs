//! `pub.svc.actor.*`: the caller's own roles and profile, and the registries that complete
//! what a user types into her profile (ORCID, ROR, FAST, Wikidata) and discover her author
//! ids (ORCID, OpenAlex). A registry that fails is named in `sourceErrors`; the answer
//! stands with what the others gave.

use projections::access::read::AccessReader;
use projections::access::Role;
use projections::attached::collections::{Kind, Listing, DISCOVERY_SETTINGS, PROFILE, PROFILE_CONFIG};
use serde_json::json;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::reads;
use crate::reads::blocking;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.actor.getMyRoles", Auth::Required, get_my_roles)
        .query("pub.svc.actor.getMyProfile", Auth::Required, get_my_profile)
        .query_async("pub.svc.actor.autocompleteOrcid", Auth::Open, autocomplete_orcid)
        .query_async("pub.svc.actor.autocompleteAffiliation", Auth::Open, autocomplete_affiliation)
        .query_async("pub.svc.actor.autocompleteKeyword", Auth::Open, autocomplete_keyword)
        .query_async("pub.svc.actor.autocompleteOpenReview", Auth::Open, autocomplete_openreview)
        .query_async("pub.svc.actor.discoverAuthorIds", Auth::Required, discover_author_ids)
        .query("pub.svc.actor.getDiscoverySettings", Auth::Required, get_discovery_settings)
        .query("pub.svc.actor.getProfileConfig", Auth::Open, get_profile_config)
}

/// The defaults of `pub.svc.discovery.settings` (records.md), every field.
fn discovery_defaults() -> serde_json::Value {
    json!({
        "enablePersonalization": true,
        "relatedPapersSignals": {"semantic": true, "citations": true, "topics": true, "authors": true,
                                 "coCitation": false, "bibliographicCoupling": false, "collaborative": false},
        "relatedPapersWeights": {"semantic": 30, "coCitation": 25, "conceptOverlap": 20, "authorNetwork": 15, "collaborative": 10},
        "relatedPapersThresholds": {"minScore": 5, "maxResults": 10},
        "trendingPreferences": {"defaultWindow": "7d", "defaultLimit": 20},
        "citationNetworkDisplay": "preview",
        "showRecommendationReasons": true,
        "recommendationDiversity": "medium",
        "minimumEndorsementThreshold": 0,
        "followedFieldUris": [],
        "followingTabIncludesWorkFields": false,
    })
}

/// `defaults` with what `given` says over it, object by object.
fn overlay(defaults: &mut serde_json::Value, given: &serde_json::Value) {
    let (Some(d), Some(g)) = (defaults.as_object_mut(), given.as_object()) else { return };
    for (k, v) in g {
        match d.get_mut(k) {
            Some(slot) if slot.is_object() && v.is_object() => overlay(slot, v),
            Some(slot) => *slot = v.clone(),
            None => {}
        }
    }
}

/// `getDiscoverySettings` → the caller's discovery preferences, every field: her
/// `pub.svc.discovery.settings` record over the defaults.
fn get_discovery_settings(c: &Call) -> Answer {
    let me = c.caller()?.did.clone();
    let record = reads::attached(&c.state, |r| r.get(&format!("at://{me}/{DISCOVERY_SETTINGS}/self")))?;
    let mut out = discovery_defaults();
    if let Some(item) = record {
        overlay(&mut out, &item.view);
    }
    Body::json(&out)
}

/// `getProfileConfig {did}` → `{did, uri?, profileType, sections, featuredCollectionUri?}`:
/// the account's `pub.svc.actor.profileConfig` record (an individual's page with no
/// sections when it has none).
fn get_profile_config(c: &Call) -> Answer {
    let did = crate::params::did_param(&c.params, "did")?.to_owned();
    let record = reads::attached(&c.state, |r| r.get(&format!("at://{did}/{PROFILE_CONFIG}/self")))?;
    let mut out = json!({"did": did, "profileType": "individual", "sections": []});
    if let Some(item) = record {
        out["uri"] = json!(item.uri);
        if let Some(t) = item.view["profileType"].as_str() {
            out["profileType"] = json!(t);
        }
        if item.view["sections"].is_array() {
            out["sections"] = item.view["sections"].clone();
        }
        if let Some(f) = item.view["featuredCollectionUri"].as_str() {
            out["featuredCollectionUri"] = json!(f);
        }
    }
    Body::json(&out)
}

/// `{source, message}` of a registry that failed.
fn source_error(e: &sources::SourceError) -> serde_json::Value {
    json!({"source": e.source_name(), "message": e.to_string()})
}

/// What one registry answered: its items, or none and its error.
fn answered<T: serde::Serialize>(r: Result<Vec<T>, sources::SourceError>, errors: &mut Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    match r {
        Ok(items) => items.iter().filter_map(|i| serde_json::to_value(i).ok()).collect(),
        Err(e) => {
            errors.push(source_error(&e));
            Vec::new()
        }
    }
}

/// `autocompleteOrcid {query, limit}` → `{suggestions, sourceErrors}`: people in ORCID.
async fn autocomplete_orcid(c: Call) -> Answer {
    let mut errors = Vec::new();
    let found = answered(c.state.registries.orcid(c.str("query"), c.limit(8)).await, &mut errors);
    Body::json(&json!({"suggestions": found, "sourceErrors": errors}))
}

/// `autocompleteAffiliation {query, limit}` → `{suggestions, sourceErrors}`: organizations
/// in ROR, its choice first.
async fn autocomplete_affiliation(c: Call) -> Answer {
    let mut errors = Vec::new();
    let found = answered(c.state.registries.ror(c.str("query"), c.limit(8)).await, &mut errors);
    Body::json(&json!({"suggestions": found, "sourceErrors": errors}))
}

/// `autocompleteOpenReview {query, limit}` → `{suggestions, sourceErrors}`: profiles in
/// OpenReview (beyond the contract).
async fn autocomplete_openreview(c: Call) -> Answer {
    let mut errors = Vec::new();
    let found = answered(c.state.registries.openreview(c.str("query"), c.limit(10)).await, &mut errors);
    Body::json(&json!({"suggestions": found, "sourceErrors": errors}))
}

/// `autocompleteKeyword {query, limit, sources?}` → `{suggestions, sourceErrors}`: FAST
/// headings and Wikidata concepts, asked at once and interleaved.
async fn autocomplete_keyword(c: Call) -> Answer {
    let (query, limit) = (c.str("query"), c.limit(8));
    let named = c.params.strs("sources");
    let wants = |s: &str| named.is_empty() || named.iter().flat_map(|n| n.split(',')).any(|n| n.trim() == s);
    let (fast, wikidata) = tokio::join!(
        async {
            if wants("fast") {
                Some(c.state.registries.fast(query, limit).await)
            } else {
                None
            }
        },
        async {
            if wants("wikidata") {
                Some(c.state.registries.wikidata(query, limit).await)
            } else {
                None
            }
        },
    );
    let mut errors = Vec::new();
    let fast = fast.map(|r| answered(r, &mut errors)).unwrap_or_default();
    let wikidata = wikidata.map(|r| answered(r, &mut errors)).unwrap_or_default();
    let mut suggestions = Vec::new();
    for i in 0..fast.len().max(wikidata.len()) {
        suggestions.extend(fast.get(i).cloned());
        suggestions.extend(wikidata.get(i).cloned());
    }
    suggestions.truncate(limit);
    Body::json(&json!({"suggestions": suggestions, "sourceErrors": errors}))
}

/// `discoverAuthorIds {name?, limit}` → `{searchedName, matches, sourceErrors}`: the
/// identities a name has in ORCID and OpenAlex (the caller's display name by default).
async fn discover_author_ids(c: Call) -> Answer {
    let me = c.caller()?.did.clone();
    let name = match c.params.str("name").map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_owned(),
        None => reads::attached(&c.state, |r| {
            let profile = r.get(&format!("at://{me}/{PROFILE}/self"))?.map(|p| p.view).unwrap_or_default();
            Ok(profile["displayName"].as_str().map(str::to_owned).or(r.account(&me)?.display_name))
        })?
        .ok_or_else(|| crate::error::ApiError::invalid_param("name", "give a name: your profile has none"))?,
    };
    let limit = c.limit(5);
    let (orcid, openalex) = tokio::join!(c.state.registries.orcid(&name, limit), c.state.registries.openalex_authors(&name, limit));
    let mut errors = Vec::new();
    let mut matches: Vec<serde_json::Value> = match orcid {
        Ok(people) => people
            .into_iter()
            .map(|p| json!({"source": "orcid", "id": p.orcid, "name": p.name, "orcid": p.orcid, "institution": p.institutions.first()}))
            .collect(),
        Err(e) => {
            errors.push(source_error(&e));
            Vec::new()
        }
    };
    matches.extend(answered(openalex, &mut errors));
    for m in &mut matches {
        if m["institution"].is_null() {
            m.as_object_mut().map(|o| o.remove("institution"));
        }
    }
    Body::json(&json!({"searchedName": name, "matches": matches, "sourceErrors": errors}))
}

/// `pub.svc.actor.getMyRoles`: `{roles, isAdmin, isAlphaTester, isPremium, assignments}`,
/// read fresh from the access model.
fn get_my_roles(c: &Call) -> Answer {
    let me = c.caller()?;
    let grants = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.roles(&me.did))?;
    let roles: Vec<Role> = grants.iter().map(|g| g.role).collect();
    let holds = |role| roles.contains(&role) || roles.contains(&Role::Admin);
    Body::json(&json!({
        "roles": roles,
        "isAdmin": holds(Role::Admin),
        "isAlphaTester": holds(Role::AlphaTester),
        "isPremium": holds(Role::Premium),
        "assignments": grants,
    }))
}

/// `pub.svc.actor.getMyProfile`: the contract's own-profile shape (did, handle,
/// displayName, orcid, affiliation, bio, eprintCount, endorsementCount) from the caller's
/// `pub.svc.actor.profile` record and the read models, with the record's other fields.
fn get_my_profile(c: &Call) -> Answer {
    let me = c.caller()?;
    let did = me.did.as_str();
    let profile = reads::attached(&c.state, |r| {
        let account = r.account(did)?;
        let record = r.get(&format!("at://{did}/{PROFILE}/self"))?;
        let eprints = r.eprints().by_author(did, 1, None)?.total;
        let mut out = record.map_or_else(|| json!({}), |r| r.view);
        out["did"] = json!(did);
        let handle = account.handle.clone().or_else(|| me.handle.clone());
        out["handle"] = json!(handle.as_deref().unwrap_or("handle.invalid"));
        if out.get("displayName").is_none() {
            if let Some(n) = &account.display_name {
                out["displayName"] = json!(n);
            }
        }
        if out.get("affiliation").is_none() {
            if let Some(first) = out["affiliations"].get(0).and_then(|a| a.get("name").or(Some(a))).and_then(|n| n.as_str()) {
                out["affiliation"] = json!(first);
            }
        }
        out["eprintCount"] = json!(eprints);
        out["endorsementCount"] = json!(r.count(&Listing::by_author(Kind::Endorsement, did))?);
        out["reviewCount"] = json!(r.count(&Listing::by_author(Kind::Review, did))?);
        Ok(out)
    })?;
    Body::json(&profile)
}
