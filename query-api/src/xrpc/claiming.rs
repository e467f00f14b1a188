//! `pub.svc.claiming.*`: authorship claims on imported papers (docs/spec details §6), and
//! the searches that find papers to claim.
//!
//! A claim is a command event keyed by the paper, so the claims of one paper apply in
//! order; the imports model decides whether it is made (the paper imported, not claimed,
//! not claimed by the caller already) and the answer is read back from it. Its score is
//! computed here from the evidence when asked (docs/claiming.md) and carried by the event,
//! so a replay gives the same score without reading anything else. A paper not imported yet
//! is fetched from its source and imported first (`external.paper`), by
//! `startClaimFromExternal`.

use std::collections::BTreeMap;

use event_schema::{AdminAction, AdminCommand, ExternalPaper, Payload, UserAction, UserCommand};
use projections::imports::read::{claim_view, coauthor_view, column, paper_view, ImportQuery, ImportsReader};
use projections::imports::refusal;
use serde_json::{json, Value};
use sources::SourceQuery;
use store::Columns;

use super::import::{find, id_cursor};
use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::params::parse_record_uri;
use crate::reads::{self, blocking};
use crate::search::{self, SearchArgs};
use projections::access::read::AccessReader;
use projections::access::Role;

/// The namespace's methods.
pub fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .procedure("pub.svc.claiming.startClaim", Auth::Required, start_claim)
        .procedure("pub.svc.claiming.startClaimFromExternal", Auth::Required, start_claim_from_external)
        .query("pub.svc.claiming.getClaim", Auth::Required, get_claim)
        .aliases(&[("id", "claimId")])
        .query("pub.svc.claiming.getUserClaims", Auth::Required, get_user_claims)
        .query("pub.svc.claiming.getPendingClaims", admin, get_pending_claims)
        .procedure("pub.svc.claiming.approveClaim", admin, approve_claim)
        .procedure("pub.svc.claiming.rejectClaim", admin, reject_claim)
        .procedure("pub.svc.claiming.completeClaim", Auth::Required, complete_claim)
        .query_async("pub.svc.claiming.searchEprints", Auth::Open, search_eprints)
        .query_async("pub.svc.claiming.getSubmissionData", Auth::Required, get_submission_data)
        .query_async("pub.svc.claiming.fetchExternalPdf", Auth::Required, fetch_external_pdf)
        .procedure("pub.svc.claiming.requestCoauthorship", Auth::Required, request_coauthorship)
        .procedure("pub.svc.claiming.approveCoauthor", Auth::Required, approve_coauthor)
        .procedure("pub.svc.claiming.rejectCoauthor", Auth::Required, reject_coauthor)
        .query("pub.svc.claiming.getCoauthorRequests", Auth::Required, get_coauthor_requests)
        .query("pub.svc.claiming.getMyCoauthorRequests", Auth::Required, get_my_coauthor_requests)
        .procedure("pub.svc.claiming.dismissSuggestion", Auth::Required, dismiss_suggestion)
        .query_async("pub.svc.claiming.getSuggestions", Auth::Required, get_suggestions)
        .query("pub.svc.claiming.findClaimable", Auth::Required, find_claimable)
        .query("pub.svc.claiming.autocomplete", Auth::Open, autocomplete)
        .kept()
}

/// The name of svc's own eprints among the sources of `searchEprints`.
const SVC: &str = "svc";

fn paper_of(row: &Columns) -> Option<ExternalPaper> {
    column(row, "paper").and_then(|p| serde_json::from_str(&p).ok())
}

fn upstream(e: sources::SourceError) -> ApiError {
    ApiError::new(ErrorCode::UpstreamFailure, e.to_string())
}

fn unknown_source(c: &Call, source: &str) -> ApiError {
    let known: Vec<&str> = c.state.sources.names().collect();
    ApiError::invalid_param("source", format!("{source} is not a source svc imports from (known: {})", known.join(", ")))
}

/// The imported paper of `source` and `external_id`, fetched from the source and imported
/// first when it was not (the import is an `external.paper` event, read back once applied).
async fn imported(c: &Call, nsid: &str, source: &str, external_id: &str) -> Result<Columns, ApiError> {
    let src = c.state.sources.get(source).ok_or_else(|| unknown_source(c, source))?.clone();
    let id =
        src.normalize_id(external_id).ok_or_else(|| ApiError::invalid_param("externalId", format!("not an identifier of {source}")))?;
    if let Some(row) = find(&c.state, Some(source), &id)? {
        return Ok(row);
    }
    let paper = src.get(&id).await.map_err(upstream)?.ok_or_else(|| ApiError::not_found(format!("{source} has no paper {id}")))?;
    if paper.external_id != id || paper.title.trim().is_empty() {
        return Err(ApiError::new(ErrorCode::UpstreamFailure, format!("{source} answered another paper than {id}")));
    }
    let key = ExternalPaper::key(source, &id);
    crate::command::append(&c.state, c.command(nsid, &key, Payload::External(Box::new(paper)))).await?;
    find(&c.state, Some(source), &id)?
        .ok_or_else(|| ApiError::new(ErrorCode::ServiceUnavailable, "the import is in the log but not applied yet"))
}

/// Lowercased words of a name, punctuation dropped.
fn name_words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// How well two names agree: 2 for the same words, 1 for the same last name and first
/// initial, 0 otherwise.
fn name_agreement(a: &str, b: &str) -> u32 {
    let (a, b) = (name_words(a), name_words(b));
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    if a == b {
        return 2;
    }
    let initial = |w: &[String]| w.first().and_then(|f| f.chars().next());
    u32::from(a.last() == b.last() && initial(&a) == initial(&b))
}

/// The evidence weights of a claim's score (docs/claiming.md); the score is their sum, at
/// most 100.
pub mod weights {
    /// The ORCID iD the caller proved through ORCID is an author's on the paper.
    pub const VERIFIED_ORCID: u32 = 70;
    /// The caller's ORCID iD (on her profile) is an author's on the paper.
    pub const PROFILE_ORCID: u32 = 50;
    /// The ORCID iD given with the claim is an author's on the paper.
    pub const GIVEN_ORCID: u32 = 30;
    /// The caller's name is the claimed author's (or, without a position, an author's).
    pub const NAME_EXACT: u32 = 30;
    /// The same last name and first initial.
    pub const NAME_INITIAL: u32 = 15;
    /// Each co-author of the caller's svc eprints among the paper's authors (two at most).
    pub const COAUTHOR: u32 = 10;
}

/// The claim score of `caller` on `paper` and what it is made of.
fn score(
    c: &Call,
    caller: &str,
    paper: &ExternalPaper,
    position: Option<u32>,
    orcid: Option<&str>,
) -> Result<(u32, BTreeMap<String, u32>), ApiError> {
    let (names, profile_orcid) = profile_of(c, caller)?;
    let verified = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.verified_orcid(caller))?.map(|(orcid, ..)| orcid);
    let coauthors = reads::attached(&c.state, |r| {
        let mut coauthors = Vec::new();
        for eprint in r.eprints().by_author(caller, 50, None)?.eprints {
            let eprint = eprint.to_value();
            for a in eprint["authors"].as_array().into_iter().flatten() {
                if a["did"].as_str() != Some(caller) {
                    coauthors.extend(a["name"].as_str().map(str::to_owned));
                }
            }
        }
        Ok(coauthors)
    })?;
    let mut evidence = BTreeMap::new();
    let orcids: Vec<&str> = paper.authors.iter().filter_map(|a| a.orcid.as_deref()).collect();
    if verified.as_deref().is_some_and(|o| orcids.contains(&o)) {
        evidence.insert("verifiedOrcid".to_owned(), weights::VERIFIED_ORCID);
    } else if profile_orcid.as_deref().is_some_and(|o| orcids.contains(&o)) {
        evidence.insert("profileOrcid".to_owned(), weights::PROFILE_ORCID);
    } else if orcid.is_some_and(|o| orcids.contains(&o)) {
        evidence.insert("givenOrcid".to_owned(), weights::GIVEN_ORCID);
    }
    let claimed: Vec<&str> = match position.and_then(|p| paper.authors.get(p as usize)) {
        Some(a) => vec![a.name.as_str()],
        None => paper.authors.iter().map(|a| a.name.as_str()).collect(),
    };
    let agreement = names.iter().flat_map(|n| claimed.iter().map(move |a| name_agreement(n, a))).max().unwrap_or(0);
    match agreement {
        2 => evidence.insert("name".to_owned(), weights::NAME_EXACT),
        1 => evidence.insert("name".to_owned(), weights::NAME_INITIAL),
        _ => None,
    };
    let shared = paper.authors.iter().filter(|a| coauthors.iter().any(|k| name_agreement(k, &a.name) == 2)).count().min(2) as u32;
    if shared > 0 {
        evidence.insert("coauthors".to_owned(), shared * weights::COAUTHOR);
    }
    Ok((evidence.values().sum::<u32>().min(100), evidence))
}

/// Starts the caller's claim on the paper of `row`; the claim as made.
async fn begin(c: &Call, nsid: &str, row: &Columns) -> Answer {
    let caller = c.caller()?.did.clone();
    let paper = paper_of(row).ok_or_else(|| ApiError::internal("an imported paper without its data"))?;
    if column(row, "claimStatus").as_deref() == Some("claimed") {
        return Err(ApiError::new(ErrorCode::AlreadyClaimed, format!("{}:{} was claimed already", paper.source, paper.external_id)));
    }
    let position = c.input["authorPosition"].as_u64().map(|p| p as u32);
    if position.is_some_and(|p| p as usize >= paper.authors.len()) {
        return Err(ApiError::invalid_param("authorPosition", format!("the paper lists {} authors", paper.authors.len())));
    }
    let orcid = c.input["orcid"].as_str().map(str::trim).filter(|o| !o.is_empty()).map(str::to_owned);
    let (score, evidence) = score(c, &caller, &paper, position, orcid.as_deref())?;
    let request_id = uuid::Uuid::new_v4().to_string();
    let action = UserAction::ClaimStarted {
        request_id: request_id.clone(),
        source: paper.source.clone(),
        external_id: paper.external_id.clone(),
        author_position: position,
        orcid,
        score,
        evidence,
    };
    let key = ExternalPaper::key(&paper.source, &paper.external_id);
    crate::command::append(&c.state, c.command(nsid, &key, Payload::User(UserCommand { caller, action }))).await?;
    let outcome = blocking(&c.state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(c.state.store.as_ref())?;
        match r.claim_request(&request_id)? {
            Some(Ok(id)) => Ok(Ok(r.claim(id)?)),
            Some(Err(why)) => Ok(Err(why)),
            None => Err(ApiError::new(ErrorCode::ServiceUnavailable, "the claim is in the log but not applied yet")),
        }
    })?;
    match outcome {
        Ok(Some(claim)) => Body::json(&json!({"claim": claim_view(&claim)})),
        Ok(None) => Err(ApiError::internal("a claim made but not found")),
        Err(why) if why == refusal::ALREADY_CLAIMED => Err(ApiError::new(ErrorCode::AlreadyClaimed, "the paper was claimed already")),
        Err(why) if why == refusal::DUPLICATE => {
            Err(ApiError::new(ErrorCode::DuplicateClaim, "you have a pending or approved claim on this paper already"))
        }
        Err(_) => Err(ApiError::not_found("the paper was not imported")),
    }
}

/// `startClaim {importId | source+externalId | eprintUri, authorPosition?, orcid?}` →
/// `{claim}`.
async fn start_claim(c: Call) -> Answer {
    let row = if let Some(id) = c.input["importId"].as_u64() {
        blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.paper_by_id(id))?
    } else if let (Some(source), Some(id)) = (c.input["source"].as_str(), c.input["externalId"].as_str()) {
        if c.state.sources.get(source).is_none() {
            return Err(unknown_source(&c, source));
        }
        find(&c.state, Some(source), id)?
    } else if let Some(uri) = c.input["eprintUri"].as_str() {
        // `<source>:<id>`, or the paper's address at its source.
        match uri.split_once(':').filter(|(s, _)| c.state.sources.get(s).is_some()) {
            Some((source, id)) => find(&c.state, Some(source), id)?,
            None => find(&c.state, None, uri)?,
        }
    } else {
        return Err(ApiError::invalid_request("name the paper: importId, source and externalId, or eprintUri"));
    };
    let row = row.ok_or_else(|| ApiError::not_found("no such imported paper: import it with startClaimFromExternal"))?;
    begin(&c, "pub.svc.claiming.startClaim", &row).await
}

/// `startClaimFromExternal {source, externalId, authorPosition?, orcid?}` → `{claim}`.
async fn start_claim_from_external(c: Call) -> Answer {
    let nsid = "pub.svc.claiming.startClaimFromExternal";
    let (source, id) =
        (c.input["source"].as_str().unwrap_or_default().to_owned(), c.input["externalId"].as_str().unwrap_or_default().to_owned());
    let row = imported(&c, nsid, &source, &id).await?;
    begin(&c, nsid, &row).await
}

fn claim_param(c: &Call, field: &str) -> u64 {
    c.params.int(field).map_or_else(|| c.input[field].as_u64().unwrap_or_default(), |v| v.max(0) as u64)
}

fn load_claim(c: &Call, id: u64, missing: ErrorCode) -> Result<Columns, ApiError> {
    blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.claim(id))?
        .ok_or_else(|| ApiError::new(missing, format!("no claim {id}")))
}

/// `getClaim {claimId}` → `{claim}`: to its claimant or an admin.
fn get_claim(c: &Call) -> Answer {
    let caller = c.caller()?;
    let claim = load_claim(c, claim_param(c, "claimId"), ErrorCode::ClaimNotFound)?;
    if column(&claim, "claimantDid").as_deref() != Some(caller.did.as_str()) && !caller.has(Role::Admin) {
        return Err(ApiError::forbidden("a claim is shown to its claimant and to admins"));
    }
    Body::json(&json!({"claim": claim_view(&claim)}))
}

fn claims_answer(rows: Vec<Columns>, more: bool) -> Answer {
    let claims: Vec<Value> = rows.iter().map(claim_view).collect();
    let mut out = json!({"claims": claims, "hasMore": more});
    if more {
        out["cursor"] = json!(claims.last().map(|c| c["id"].to_string()));
    }
    Body::json(&out)
}

/// `getUserClaims {status?, limit, cursor?}` → `{claims, cursor?, hasMore}`: the caller's,
/// newest first.
fn get_user_claims(c: &Call) -> Answer {
    let partition = format!("claimant:{}", c.caller()?.did);
    let status = c.params.str("status").map(str::to_owned);
    let after = id_cursor(c)?;
    let (rows, more) = blocking(&c.state, || {
        ImportsReader::new(c.state.store.as_ref())?
            .claims(&partition, after, c.limit(50), |row| status.as_deref().is_none_or(|s| column(row, "status").as_deref() == Some(s)))
    })?;
    claims_answer(rows, more)
}

/// `getPendingClaims {minScore?, maxScore?, limit, cursor?}` (admin) → `{claims, cursor?,
/// hasMore}`: newest first.
fn get_pending_claims(c: &Call) -> Answer {
    let (min, max) = (c.params.int("minScore").unwrap_or(0), c.params.int("maxScore").unwrap_or(100));
    if min > max {
        return Err(ApiError::invalid_request("minScore is above maxScore"));
    }
    let after = id_cursor(c)?;
    let (rows, more) = blocking(&c.state, || {
        ImportsReader::new(c.state.store.as_ref())?.claims("status:pending", after, c.limit(50), |row| {
            let s = row.get("score").and_then(store::Value::as_int).unwrap_or(0);
            (min..=max).contains(&s)
        })
    })?;
    claims_answer(rows, more)
}

/// `approveClaim {claimId}` and `rejectClaim {claimId, reason}` (admin) → `{success, claim}`.
async fn decide(c: Call, nsid: &str, approved: bool) -> Answer {
    let admin = c.caller()?.did.clone();
    let id = claim_param(&c, "claimId");
    let claim = load_claim(&c, id, if approved { ErrorCode::ClaimNotFound } else { ErrorCode::NotFound })?;
    let status = column(&claim, "status").unwrap_or_default();
    let allowed = if approved { status == "pending" } else { status == "pending" || status == "approved" };
    if !allowed {
        return Err(ApiError::invalid_request(format!("the claim is {status}")));
    }
    let reason = c.input["reason"].as_str().map(str::to_owned);
    let key = column(&claim, "paperKey").unwrap_or_default();
    let action = AdminAction::ClaimDecided { claim_id: id, approved, reason };
    crate::command::append(&c.state, c.command(nsid, &key, Payload::Admin(AdminCommand { actor: admin, action }))).await?;
    let claim = load_claim(&c, id, ErrorCode::ClaimNotFound)?;
    Body::json(&json!({"success": true, "claim": claim_view(&claim)}))
}

async fn approve_claim(c: Call) -> Answer {
    decide(c, "pub.svc.claiming.approveClaim", true).await
}

async fn reject_claim(c: Call) -> Answer {
    decide(c, "pub.svc.claiming.rejectClaim", false).await
}

/// `completeClaim {claimId, canonicalUri}` → `{success, claim}`: the caller's pending or
/// approved claim, with an eprint of hers that svc has indexed.
async fn complete_claim(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let id = claim_param(&c, "claimId");
    let canonical = c.input["canonicalUri"].as_str().unwrap_or_default().to_owned();
    parse_record_uri("canonicalUri", &canonical)?;
    let claim = load_claim(&c, id, ErrorCode::ClaimNotFound)?;
    if column(&claim, "claimantDid").as_deref() != Some(caller.as_str()) {
        return Err(ApiError::new(ErrorCode::Unauthorized, "only the claimant completes a claim"));
    }
    let status = column(&claim, "status").unwrap_or_default();
    if status != "pending" && status != "approved" {
        return Err(ApiError::invalid_request(format!("the claim is {status}")));
    }
    if !canonical.starts_with(&format!("at://{caller}/")) {
        return Err(ApiError::invalid_param("canonicalUri", "the eprint must be a record of your own repository"));
    }
    let indexed = reads::attached(&c.state, |r| r.eprints().get(&canonical))?;
    if indexed.is_none() {
        return Err(ApiError::not_found(format!("svc has not indexed {canonical}: write it to your repository first")));
    }
    let import_id = claim.get("importId").and_then(store::Value::as_int).unwrap_or_default() as u64;
    let paper = blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.paper_by_id(import_id))?;
    if paper.as_ref().and_then(|p| column(p, "claimStatus")).as_deref() == Some("claimed") {
        return Err(ApiError::new(ErrorCode::AlreadyClaimed, "the paper was claimed already"));
    }
    let key = column(&claim, "paperKey").unwrap_or_default();
    let action = UserAction::ClaimCompleted { claim_id: id, canonical_uri: canonical };
    crate::command::append(&c.state, c.command("pub.svc.claiming.completeClaim", &key, Payload::User(UserCommand { caller, action })))
        .await?;
    let claim = load_claim(&c, id, ErrorCode::ClaimNotFound)?;
    Body::json(&json!({"success": column(&claim, "canonicalUri").is_some(), "claim": claim_view(&claim)}))
}

/// A paper found at an external source, as `searchEprints` lists it, with its import id
/// and claim status when it was imported.
fn external_view(c: &Call, paper: &ExternalPaper) -> Result<Value, ApiError> {
    let mut out = json!({
        "source": paper.source, "externalId": paper.external_id, "title": paper.title, "abstract": paper.abstract_text,
        "authors": paper.authors, "url": paper.url, "categories": paper.categories,
    });
    for (field, value) in [("doi", &paper.doi), ("pdfUrl", &paper.pdf_url), ("publicationDate", &paper.publication_date)] {
        if let Some(v) = value {
            out[field] = json!(v);
        }
    }
    if let Some(row) = find(&c.state, Some(&paper.source), &paper.external_id)? {
        let view = paper_view(&row);
        out["importId"] = view["id"].clone();
        out["claimStatus"] = view["claimStatus"].clone();
    }
    Ok(out)
}

/// `searchEprints {query?, author?, sources?, limit}` → `{eprints, facets, sourceErrors}`:
/// every source named (all, and svc's own eprints, by default) searched at once; a source
/// that fails, or a name that is no source, is named in `sourceErrors` and the others'
/// results stand. Without words or an author there is nothing to look for: no results.
async fn search_eprints(c: Call) -> Answer {
    let (text, author) =
        (c.str("query").trim().to_owned(), c.params.str("author").map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned));
    let limit = c.limit(20);
    let named: Vec<String> =
        c.params.str("sources").unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let mut errors = Vec::new();
    for s in &named {
        if s != SVC && c.state.sources.get(s).is_none() {
            errors.push(json!({"source": s, "message": format!("{s} is not a source svc searches")}));
        }
    }
    let external: Vec<&str> = named.iter().map(String::as_str).filter(|s| c.state.sources.get(s).is_some()).collect();
    let with_svc = named.is_empty() || named.iter().any(|s| s == SVC);
    let mut eprints = Vec::new();
    let nothing = text.is_empty() && author.is_none();
    if !nothing && (named.is_empty() || !external.is_empty()) {
        let (papers, failed) = c.state.sources.search(&external, &SourceQuery { text: text.clone(), author: author.clone(), limit }).await;
        for p in papers.iter().take(limit * 4) {
            eprints.push(external_view(&c, p)?);
        }
        errors.extend(failed.into_iter().map(|(s, e)| json!({"source": s, "message": e.to_string()})));
    }
    if !nothing && with_svc {
        let query = [text.as_str(), author.as_deref().unwrap_or_default()].join(" ").trim().to_owned();
        let page = search::search(&c.state, SearchArgs { query, limit, ..SearchArgs::default() }).await?;
        for hit in page.hits.iter() {
            let s: Value = serde_json::from_str(hit).unwrap_or_default();
            eprints.push(json!({
                "source": SVC, "externalId": s["uri"], "uri": s["uri"], "title": s["title"],
                "authors": s["authors"].as_array().into_iter().flatten().map(|a| json!({"name": a["name"]})).collect::<Vec<_>>(),
            }));
        }
    }
    let mut by_source: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_year: BTreeMap<String, u64> = BTreeMap::new();
    for e in &eprints {
        *by_source.entry(e["source"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
        if let Some(y) = e["publicationDate"].as_str().and_then(|d| d.get(..4)) {
            *by_year.entry(y.to_owned()).or_default() += 1;
        }
    }
    let counts = |m: BTreeMap<String, u64>| m.into_iter().map(|(value, count)| json!({"value": value, "count": count})).collect::<Vec<_>>();
    Body::json(&json!({"eprints": eprints, "facets": {"source": counts(by_source), "year": counts(by_year)}, "sourceErrors": errors}))
}

/// `getSubmissionData {source, externalId}` → what an eprint record for the paper would
/// hold: from its import, or from the source when it was not imported (nothing is imported
/// by asking).
async fn get_submission_data(c: Call) -> Answer {
    let source = c.str("source").to_owned();
    let src = c.state.sources.get(&source).ok_or_else(|| unknown_source(&c, &source))?.clone();
    let id = src
        .normalize_id(c.str("externalId"))
        .ok_or_else(|| ApiError::invalid_param("externalId", format!("not an identifier of {source}")))?;
    let row = find(&c.state, Some(&source), &id)?;
    let paper = match row.as_ref().and_then(paper_of) {
        Some(p) => p,
        None => src.get(&id).await.map_err(upstream)?.ok_or_else(|| ApiError::not_found(format!("{source} has no paper {id}")))?,
    };
    let mut ids = json!({source.clone(): paper.external_id});
    if let Some(doi) = &paper.doi {
        ids["doi"] = json!(doi);
    }
    let existing = row.as_ref().and_then(|r| column(r, "canonicalUri")).map(|uri| json!({"uri": uri}));
    let mut out = json!({
        "title": paper.title, "abstract": paper.abstract_text, "authors": paper.authors, "keywords": paper.categories,
        "source": source, "externalId": paper.external_id, "externalUrl": paper.url, "externalIds": ids,
        "existingSvcPaper": existing,
    });
    for (field, value) in [("doi", &paper.doi), ("pdfUrl", &paper.pdf_url), ("publicationDate", &paper.publication_date)] {
        if let Some(v) = value {
            out[field] = json!(v);
        }
    }
    Body::json(&out)
}

/// `fetchExternalPdf {source, externalId}` (beyond the contract) → the paper's PDF
/// (`application/pdf`), fetched from where its source serves it: a proxy for browsers,
/// which cannot fetch it across origins. Only the source's own PDF hosts are fetched from,
/// through its client (its pace, deadline and bound); nothing is imported or kept.
async fn fetch_external_pdf(c: Call) -> Answer {
    c.caller()?;
    let source = c.str("source").to_owned();
    let src = c.state.sources.get(&source).ok_or_else(|| unknown_source(&c, &source))?.clone();
    let id = src
        .normalize_id(c.str("externalId"))
        .ok_or_else(|| ApiError::invalid_param("externalId", format!("not an identifier of {source}")))?;
    let failed = |e: sources::SourceError| ApiError::new(ErrorCode::FetchFailed, e.to_string());
    let paper = match find(&c.state, Some(&source), &id)?.as_ref().and_then(paper_of) {
        Some(p) => p,
        None => src
            .get(&id)
            .await
            .map_err(failed)?
            .ok_or_else(|| ApiError::new(ErrorCode::EprintNotFound, format!("{source} has no paper {id}")))?,
    };
    let url = paper
        .pdf_url
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| ApiError::new(ErrorCode::PdfNotAvailable, format!("{source} names no PDF of {id}")))?;
    if !src.serves_pdf(&url) {
        return Err(ApiError::new(ErrorCode::DomainNotAllowed, format!("{url} is not where {source} serves PDFs")));
    }
    let pdf = src
        .pdf(&url)
        .await
        .map_err(failed)?
        .ok_or_else(|| ApiError::new(ErrorCode::PdfNotAvailable, format!("{source} has no PDF at {url}")))?;
    if !pdf.starts_with(b"%PDF-") {
        return Err(ApiError::new(ErrorCode::FetchFailed, format!("{url} answered something other than a PDF")));
    }
    Ok(Body::pdf(pdf))
}

/// `requestCoauthorship {eprintUri, eprintOwnerDid, claimantName, authorIndex, authorName,
/// message?}` → `{request}`: the caller asks the eprint's owner to recognise her as the
/// author listed at `authorIndex`.
async fn request_coauthorship(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let text = |f: &str| c.input[f].as_str().unwrap_or_default().trim().to_owned();
    let (eprint, owner, author_name) = (text("eprintUri"), text("eprintOwnerDid"), text("authorName"));
    parse_record_uri("eprintUri", &eprint)?;
    let index = c.input["authorIndex"].as_u64().unwrap_or_default();
    let record = reads::attached(&c.state, |r| r.eprints().get(&eprint))?
        .ok_or_else(|| ApiError::not_found(format!("svc has not indexed {eprint}")))?;
    if record.did != owner {
        return Err(ApiError::invalid_param("eprintOwnerDid", format!("the eprint is {}'s", record.did)));
    }
    if owner == caller {
        return Err(ApiError::invalid_request("the eprint is yours"));
    }
    let parsed: Value = serde_json::from_str(&record.record).unwrap_or_default();
    let listed = parsed["authors"].as_array().and_then(|a| a.get(index as usize)).and_then(|a| a["name"].as_str().map(str::to_owned));
    let Some(listed) = listed else {
        return Err(ApiError::invalid_param("authorIndex", "the eprint lists no author there"));
    };
    if listed != author_name && name_agreement(&listed, &author_name) == 0 {
        return Err(ApiError::invalid_param("authorName", format!("the author listed at {index} is {listed}")));
    }
    let ask = uuid::Uuid::new_v4().to_string();
    let action = UserAction::CoauthorRequested {
        request_id: ask.clone(),
        eprint_uri: eprint.clone(),
        owner_did: owner,
        claimant_name: text("claimantName"),
        author_index: index as u32,
        author_name,
        message: c.input["message"].as_str().map(str::to_owned),
    };
    crate::command::append(
        &c.state,
        c.command("pub.svc.claiming.requestCoauthorship", &eprint, Payload::User(UserCommand { caller, action })),
    )
    .await?;
    let made = blocking(&c.state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(c.state.store.as_ref())?;
        match r.coauthor_ask(&ask)? {
            Some(Ok(id)) => Ok(Ok(r.coauthor(id)?)),
            Some(Err(why)) => Ok(Err(why)),
            None => Err(ApiError::new(ErrorCode::ServiceUnavailable, "the request is in the log but not applied yet")),
        }
    })?;
    match made {
        Ok(Some(row)) => Body::json(&json!({"request": coauthor_view(&row)})),
        Ok(None) => Err(ApiError::internal("a request made but not found")),
        Err(_) => Err(ApiError::invalid_request("you have a pending request on this eprint already")),
    }
}

/// `approveCoauthor {requestId}` and `rejectCoauthor {requestId, reason?}` → `{success,
/// request}`: the eprint's owner decides a pending request.
async fn decide_coauthor(c: Call, nsid: &str, approved: bool) -> Answer {
    let caller = c.caller()?.did.clone();
    let id = claim_param(&c, "requestId");
    let missing = if approved { ErrorCode::RequestNotFound } else { ErrorCode::NotFound };
    let load = || blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.coauthor(id));
    let row = load()?.ok_or_else(|| ApiError::new(missing, format!("no co-author request {id}")))?;
    if column(&row, "eprintOwnerDid").as_deref() != Some(caller.as_str()) {
        return Err(ApiError::forbidden("only the eprint's owner decides its co-author requests"));
    }
    let status = column(&row, "status").unwrap_or_default();
    if status != "pending" {
        return Err(ApiError::invalid_request(format!("the request is {status}")));
    }
    let key = column(&row, "eprintUri").unwrap_or_default();
    let action = UserAction::CoauthorDecided { request_id: id, approved, reason: c.input["reason"].as_str().map(str::to_owned) };
    crate::command::append(&c.state, c.command(nsid, &key, Payload::User(UserCommand { caller, action }))).await?;
    let row = load()?.ok_or_else(|| ApiError::internal("a request decided but not found"))?;
    Body::json(&json!({"success": true, "request": coauthor_view(&row)}))
}

async fn approve_coauthor(c: Call) -> Answer {
    decide_coauthor(c, "pub.svc.claiming.approveCoauthor", true).await
}

async fn reject_coauthor(c: Call) -> Answer {
    decide_coauthor(c, "pub.svc.claiming.rejectCoauthor", false).await
}

fn requests_answer(rows: Vec<Columns>, more: bool) -> Answer {
    let requests: Vec<Value> = rows.iter().map(coauthor_view).collect();
    let mut out = json!({"requests": requests, "hasMore": more});
    if more {
        out["cursor"] = json!(requests.last().map(|r| r["id"].to_string()));
    }
    Body::json(&out)
}

/// `getCoauthorRequests {limit, cursor?}` → `{requests, cursor?}`: the pending requests on
/// the caller's eprints, newest first.
fn get_coauthor_requests(c: &Call) -> Answer {
    let partition = format!("owner:{}", c.caller()?.did);
    let after = id_cursor(c)?;
    let (rows, more) = blocking(&c.state, || {
        ImportsReader::new(c.state.store.as_ref())?
            .coauthors(&partition, after, c.limit(50), |r| column(r, "status").as_deref() == Some("pending"))
    })?;
    requests_answer(rows, more)
}

/// `getMyCoauthorRequests {status?, limit, cursor?}` → `{requests, cursor?}`: the caller's
/// requests, newest first.
fn get_my_coauthor_requests(c: &Call) -> Answer {
    let partition = format!("claimant:{}", c.caller()?.did);
    let status = c.params.str("status").map(str::to_owned);
    let after = id_cursor(c)?;
    let (rows, more) = blocking(&c.state, || {
        ImportsReader::new(c.state.store.as_ref())?
            .coauthors(&partition, after, c.limit(50), |r| status.as_deref().is_none_or(|s| column(r, "status").as_deref() == Some(s)))
    })?;
    requests_answer(rows, more)
}

/// `dismissSuggestion {source, externalId}` → `{}`: the paper is not suggested to the caller
/// again; dismissing it twice changes nothing (and appends nothing).
async fn dismiss_suggestion(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let source = c.input["source"].as_str().unwrap_or_default().trim().to_owned();
    let raw = c.input["externalId"].as_str().unwrap_or_default();
    let external_id = c.state.sources.get(&source).and_then(|s| s.normalize_id(raw)).unwrap_or_else(|| raw.trim().to_owned());
    if source.is_empty() || external_id.is_empty() {
        return Err(ApiError::invalid_request("name the paper by source and externalId"));
    }
    if blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.dismissed(&caller, &source, &external_id))? {
        return Body::json(&json!({}));
    }
    let action = UserAction::SuggestionDismissed { source, external_id };
    crate::command::append(
        &c.state,
        c.command("pub.svc.claiming.dismissSuggestion", &caller.clone(), Payload::User(UserCommand { caller, action })),
    )
    .await?;
    Body::json(&json!({}))
}

/// The names and ORCID iD svc knows the caller by: her account's and profile's display
/// names, her name variants, her profile's ORCID.
fn profile_of(c: &Call, did: &str) -> Result<(Vec<String>, Option<String>), ApiError> {
    reads::attached(&c.state, |r| {
        let account = r.account(did)?;
        let profile = r.get(&format!("at://{did}/pub.svc.actor.profile/self"))?.map(|p| p.view).unwrap_or_default();
        let mut names: Vec<String> = profile["displayName"].as_str().map(str::to_owned).into_iter().collect();
        names.extend(account.display_name);
        names.extend(profile["nameVariants"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned));
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| !n.trim().is_empty() && seen.insert(n.clone()));
        Ok((names, profile["orcid"].as_str().map(str::to_owned)))
    })
}

/// `getSuggestions {limit}` → `{papers, suggestions, profileUsed}`: papers the caller may
/// have written, by her names and ORCID iD: unclaimed imports, and what the sources find
/// by her name (nothing is imported by asking); those she dismissed or claimed are left
/// out. `suggestions` is the contract's name of the same list.
async fn get_suggestions(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let limit = c.limit(20);
    let (names, orcid) = profile_of(&c, &caller)?;
    let mut papers: Vec<Value> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let (imported, dismissed_or_mine) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(c.state.store.as_ref())?;
        let mut rows = Vec::new();
        for name in &names {
            rows.extend(
                r.search(&ImportQuery {
                    author_name: Some(name.clone()),
                    claim_status: Some("unclaimed".into()),
                    limit,
                    ..ImportQuery::default()
                })?
                .0,
            );
        }
        if let Some(o) = &orcid {
            rows.extend(
                r.search(&ImportQuery {
                    author_orcid: Some(o.clone()),
                    claim_status: Some("unclaimed".into()),
                    limit,
                    ..ImportQuery::default()
                })?
                .0,
            );
        }
        let mut skip = std::collections::BTreeSet::new();
        for row in &rows {
            let key = column(row, "key").unwrap_or_default();
            let (s, id) = key.split_once(':').unwrap_or_default();
            if r.dismissed(&caller, s, id)? {
                skip.insert(key.clone());
            }
        }
        Ok((rows, skip))
    })?;
    for row in imported {
        let key = column(&row, "key").unwrap_or_default();
        if !dismissed_or_mine.contains(&key) && seen.insert(key) {
            papers.push(paper_view(&row));
        }
    }
    if let Some(name) = names.first() {
        let (found, _) = c.state.sources.search(&[], &SourceQuery { text: String::new(), author: Some(name.clone()), limit }).await;
        let dismissed = blocking(&c.state, || -> Result<Vec<bool>, ApiError> {
            let r = ImportsReader::new(c.state.store.as_ref())?;
            Ok(found.iter().map(|p| r.dismissed(&caller, &p.source, &p.external_id)).collect::<Result<_, _>>()?)
        })?;
        for (p, dismissed) in found.iter().zip(dismissed) {
            if dismissed || !seen.insert(ExternalPaper::key(&p.source, &p.external_id)) {
                continue;
            }
            let view = external_view(&c, p)?;
            if view["claimStatus"].as_str().is_none_or(|s| s == "unclaimed") {
                papers.push(view);
            }
        }
    }
    papers.truncate(limit);
    Body::json(&json!({"papers": papers, "suggestions": papers, "profileUsed": {"names": names, "orcid": orcid}}))
}

/// `findClaimable {q?, source?, limit, cursor?}` → `{eprints, cursor?, hasMore}`: unclaimed
/// imported papers matching the words, newest import first, without those the caller
/// dismissed.
fn find_claimable(c: &Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let q = ImportQuery {
        words: c.str("q").to_owned(),
        source: c.params.str("source").map(str::to_owned),
        claim_status: Some("unclaimed".into()),
        after: id_cursor(c)?,
        limit: c.limit(50),
        ..ImportQuery::default()
    };
    let (rows, more) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = ImportsReader::new(c.state.store.as_ref())?;
        let (rows, more) = r.search(&q)?;
        let mut kept = Vec::new();
        for row in rows {
            let key = column(&row, "key").unwrap_or_default();
            let (s, id) = key.split_once(':').unwrap_or_default();
            if !r.dismissed(&caller, s, id)? {
                kept.push(row);
            }
        }
        Ok((kept, more))
    })?;
    let eprints: Vec<Value> = rows.iter().map(paper_view).collect();
    let mut out = json!({"eprints": eprints, "hasMore": more});
    if more {
        out["cursor"] = json!(rows.last().and_then(|r| r.get("id")).and_then(store::Value::as_int).map(|i| i.to_string()));
    }
    Body::json(&out)
}

/// `autocomplete {query, limit}` → `{suggestions}`: imported papers completing what is
/// typed (every whole word, and the last word as a beginning), newest import first, each
/// `{importId, source, externalId, title, authors}`.
fn autocomplete(c: &Call) -> Answer {
    let query = c.str("query");
    let mut done = projections::imports::words(query);
    let typing = if query.ends_with(|ch: char| !ch.is_alphanumeric()) { None } else { done.pop() };
    let rows = match typing {
        Some(t) => blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.complete(&done, &t, c.limit(8)))?,
        None if !done.is_empty() => {
            let q = ImportQuery { words: done.join(" "), limit: c.limit(8), ..ImportQuery::default() };
            blocking(&c.state, || ImportsReader::new(c.state.store.as_ref())?.search(&q))?.0
        }
        None => Vec::new(),
    };
    let suggestions: Vec<Value> = rows
        .iter()
        .map(|row| {
            let v = paper_view(row);
            let authors: Vec<&Value> = v["authors"].as_array().into_iter().flatten().take(3).map(|a| &a["name"]).collect();
            json!({"importId": v["id"], "source": v["source"], "externalId": v["externalId"], "title": v["title"], "authors": authors})
        })
        .collect();
    Body::json(&json!({"suggestions": suggestions}))
}
