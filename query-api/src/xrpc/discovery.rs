//! `pub.svc.discovery.*`: the citation graph around an eprint, from the citation records
//! svc indexes, and the eprints like it (`getSimilar`), from the search index, the citation
//! graph and the author network.

use projections::attached::collections::{Kind, Listing};
use projections::attached::read::Item;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::uri_param;
use crate::reads;
use crate::search;
use crate::views::citations;
use event_schema::{NewEvent, Payload, Source, UserAction, UserCommand};
use projections::interactions::read::InteractionsReader;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.discovery.getCitations", Auth::Open, get_citations)
        .query_async("pub.svc.discovery.getSimilar", Auth::Open, get_similar)
        .query_async("pub.svc.discovery.getRecommendations", Auth::Required, get_recommendations)
        .procedure("pub.svc.discovery.recordInteraction", Auth::Required, record_interaction)
        .query("pub.svc.discovery.getEnrichment", Auth::Open, get_enrichment)
}

/// `getEnrichment {uri}` → `{uri, available, enrichment?}`: what an external bibliographic
/// service (OpenAlex) knows of the eprint, as the newest `triggerCitationExtraction` found
/// it (`available: false` until one has); `NotFound` for an eprint svc has not indexed.
fn get_enrichment(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let (indexed, enrichment) = reads::attached(&c.state, |r| {
        let indexed = r.eprints().get(uri)?.is_some();
        let enrichment = projections::imports::read::ImportsReader::new(c.state.store.as_ref())?.enrichment(uri)?;
        Ok((indexed, enrichment))
    })?;
    if !indexed {
        return Err(ApiError::not_found(format!("svc has not indexed {uri}")));
    }
    let mut out = json!({"uri": uri, "available": enrichment.is_some()});
    if let Some(e) = enrichment {
        out["enrichment"] = e;
    }
    Body::json(&out)
}

/// One edge of the citation graph, from a citation's view (a record's or an extracted
/// one's), its members moved into the edge.
fn edge(uri: Value, mut view: Value, direction: &str) -> Value {
    let take = |view: &mut Value, k: &str| view.get_mut(k).map(Value::take).unwrap_or(Value::Null);
    let cited = take(&mut view, "citedWork");
    let mut v = serde_json::Map::new();
    v.insert("uri".into(), uri);
    v.insert("direction".into(), Value::String(direction.to_owned()));
    v.insert("eprintUri".into(), take(&mut view, "eprintUri"));
    v.insert("title".into(), cited.get("title").cloned().unwrap_or(Value::Null));
    v.insert("relation".into(), take(&mut view, "citationType"));
    v.insert("createdAt".into(), take(&mut view, "createdAt"));
    let source = view.get_mut("source").map(Value::take).unwrap_or_else(|| json!("user"));
    v.insert("source".into(), source);
    if let Some(target) = cited.get("svcUri").and_then(Value::as_str) {
        v.insert("targetUri".into(), json!(target));
    }
    v.insert("citedWork".into(), cited);
    Value::Object(v)
}

/// `pub.svc.discovery.getCitations`: `{eprint, counts, citations, cursor?, hasMore}`: the works
/// the eprint cites (`citing`), the eprints that cite it (`cited`, or the reference's
/// `cited-by`), or both: the citation records first, newest first, then the citations
/// extracted from what a bibliographic service knows (`source: auto`); `NotFound` for an
/// eprint svc does not index.
fn get_citations(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let start = citations::start(&c.params)?;
    let direction = c.params.str("direction").unwrap_or("both");
    let (citing_wanted, cited_wanted) = match direction {
        "citing" => (true, false),
        "cited" | "cited-by" => (false, true),
        _ => (true, true),
    };
    let limit = c.limit(20);
    let answer = reads::attached(&c.state, |r| {
        let Some(projections::eprints::read::TitleAndIds { title: Some(title), ids, .. }) = r.eprint_title_and_ids(uri)? else {
            return Ok(None);
        };
        let imports = projections::imports::read::ImportsReader::new(c.state.store.as_ref())?;
        let (citing, cited) = (Listing::on_eprint(Kind::Citation, uri), Listing::pointing_at(Kind::Citation, uri));
        // The extracted citations: what the eprint cites (counted; viewed only when paged
        // to) and the eprints whose extracted citations name it.
        let cites = citations::count_of(&imports, uri)? as usize;
        let citers = citations::citing_ids(r, &imports, uri, ids)?;
        let mut edges: Vec<Value> = Vec::new();
        let mut next: Option<String> = None;
        let from = match start {
            citations::Start::Extracted(n) => n,
            citations::Start::Records(after) => {
                // The next page of each direction's records, merged newest first: bounded reads.
                let mut records: Vec<(Vec<u8>, Value)> = Vec::new();
                if citing_wanted {
                    let page = r.page(&citing, limit + 1, after.clone())?;
                    records.extend(page.items.into_iter().map(|i| (i.listing_key(), edge(json!(i.uri), i.view, "citing"))));
                }
                if cited_wanted {
                    let page = r.page(&cited, limit + 1, after.clone())?;
                    records.extend(page.items.into_iter().map(|i| (i.listing_key(), edge(json!(i.uri), i.view, "cited"))));
                }
                records.sort_by(|a, b| b.0.cmp(&a.0));
                records.dedup_by(|a, b| a.0 == b.0 && a.1["direction"] == b.1["direction"]);
                if records.len() > limit {
                    records.truncate(limit);
                    next = records.last().map(|e| data_encoding::BASE64URL_NOPAD.encode(&e.0));
                }
                edges.extend(records.into_iter().map(|(_, v)| v));
                0
            }
        };
        if next.is_none() {
            // The extracted edges of the directions asked for, citing then cited, from `from`.
            let (citing_n, cited): (usize, &[Value]) = (if citing_wanted { cites } else { 0 }, if cited_wanted { &citers } else { &[] });
            let room = limit - edges.len();
            if from < citing_n {
                let (views, _) = citations::page_of(r, &imports, uri, from, room)?;
                edges.extend(views.into_iter().map(|v| edge(v["uri"].clone(), v, "citing")));
            }
            let room_left = limit - edges.len();
            edges.extend(
                cited.iter().skip(from.saturating_sub(citing_n)).take(room_left).map(|v| edge(v["uri"].clone(), v.clone(), "cited")),
            );
            next = (from + room < citing_n + cited.len()).then(|| citations::extracted_cursor(from + room));
        }
        let mut out = json!({
            "eprint": {"uri": uri, "title": title},
            "counts": {"citing": r.count(&citing)? + cites as u64, "cited": r.count(&cited)? + citers.len() as u64},
            "hasMore": next.is_some(),
        });
        out["citations"] = Value::Array(edges); // moved in: `json!` would copy it
        if let Some(next) = next {
            out["cursor"] = json!(next);
        }
        Ok(Some(out))
    })?;
    let answer = answer.ok_or_else(|| ApiError::not_found(format!("no eprint at {uri}")))?;
    Body::json(&answer)
}

/// The signals `getSimilar` combines, by their `includeTypes` names, with the weight
/// parameter of each and its default weight.
const SIGNALS: [(&str, &str, i64); 7] = [
    ("semantic", "weightSemantic", 40),
    ("topic", "weightConceptOverlap", 15),
    ("author", "weightAuthorNetwork", 25),
    ("citation", "weightCoCitation", 20),
    ("co-citation", "weightCoCitation", 20),
    ("bibliographic-coupling", "weightCoCitation", 20),
    ("collaborative", "weightCollaborative", 0),
];

/// How far each signal looks: text matches considered, citations and author papers read.
const NEIGHBOURS: usize = 50;

/// Significant words of a title: what the text signal searches for (any of them).
fn title_words(title: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "with", "from", "that", "this", "using", "into", "over", "under", "between", "towards", "their", "based", "approach", "study",
        "analysis", "via", "and", "for", "the",
    ];
    let mut words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words.truncate(16);
    words
}

/// An eprint found like another, with its combined score, each signal's normalized score,
/// and the signals that counted.
struct Similar {
    score: f64,
    uri: String,
    signals: Value,
    reasons: Vec<&'static str>,
}

/// The eprints like `uri` by every signal `weight` gives a weight (0–100) above 0, best
/// first, with the eprint's title; `None` when svc shows no eprint at `uri`.
async fn similar_to(c: &Call, uri: &str, weight: &(dyn Fn(&str) -> f64 + Sync)) -> Result<Option<(String, Vec<Similar>)>, ApiError> {
    let wanted = |s: &str| weight(s) > 0.0;
    // The eprint, its fields and its authors' DIDs.
    let Some(detail) = reads::blocking(&c.state, || projections::eprints::read::EprintsReader::new(c.state.store.as_ref())?.detail(uri))?
        .filter(|d| !d.hidden())
    else {
        return Ok(None);
    };
    let record: Value = serde_json::from_str(detail.record()).unwrap_or_default();
    let title = record["title"].as_str().unwrap_or_default().to_owned();
    let fields: Vec<String> =
        record["fields"].as_array().map(|f| f.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default();
    let mut authors: Vec<String> =
        record["authors"].as_array().map(|a| a.iter().filter_map(|a| a["did"].as_str()).map(str::to_owned).collect()).unwrap_or_default();
    authors.push(detail.did().to_owned());
    authors.sort();
    authors.dedup();

    // Per candidate: its raw score per signal.
    let mut raw: std::collections::BTreeMap<String, std::collections::BTreeMap<&'static str, f64>> = Default::default();
    let mut add = |candidate: &str, signal: &'static str, score: f64| {
        if candidate != uri && candidate.starts_with("at://") && wanted(signal) {
            *raw.entry(candidate.to_owned()).or_default().entry(signal).or_insert(0.0) += score;
        }
    };
    // Text: the title's words, any of them, by BM25 (rank order, the best 1.0).
    if wanted("semantic") || wanted("topic") {
        let words = title_words(&title);
        if !words.is_empty() {
            let hits = search::like(&c.state, words, NEIGHBOURS).await?;
            let n = hits.len().max(1) as f64;
            for (rank, hit) in hits.iter().enumerate() {
                add(&hit.uri, "semantic", 1.0 - rank as f64 / n);
                // Topic: the share of this eprint's fields the candidate has.
                let shared = fields.iter().filter(|f| hit.fields.contains(f)).count();
                if shared > 0 && !fields.is_empty() {
                    add(&hit.uri, "topic", shared as f64 / fields.len() as f64);
                }
            }
        }
    }
    // The citation graph and the author network, from the attached and eprints models.
    let graph = reads::attached(&c.state, |r| {
        let mut edges: Vec<(String, &'static str, f64)> = Vec::new();
        let target = |i: &Item| i.view["citedWork"]["svcUri"].as_str().map(str::to_owned);
        let citing_eprint = |i: &Item| i.view["eprintUri"].as_str().map(str::to_owned);
        let references = r.page(&Listing::on_eprint(Kind::Citation, uri), NEIGHBOURS, None)?.items;
        let cited_by = r.page(&Listing::pointing_at(Kind::Citation, uri), NEIGHBOURS, None)?.items;
        // Direct citation, either way.
        edges.extend(references.iter().filter_map(target).map(|t| (t, "citation", 1.0)));
        edges.extend(cited_by.iter().filter_map(citing_eprint).map(|t| (t, "citation", 1.0)));
        // The extracted citations (what a bibliographic service knows the eprint cites, and
        // the eprints whose extracted citations name it) count as citations too; and
        // citing the same works, indexed by svc or not, is bibliographic coupling.
        let imports = projections::imports::read::ImportsReader::new(c.state.store.as_ref())?;
        let (extracted, _) = citations::page_of(r, &imports, uri, 0, NEIGHBOURS)?;
        edges.extend(extracted.iter().filter_map(|v| v["citedWork"]["svcUri"].as_str()).map(|t| (t.to_owned(), "citation", 1.0)));
        let extracted_citers = citations::citing(r, &imports, uri)?;
        edges.extend(
            extracted_citers.iter().take(NEIGHBOURS).filter_map(|v| v["eprintUri"].as_str()).map(|t| (t.to_owned(), "citation", 1.0)),
        );
        if wanted("bibliographic-coupling") {
            for ids in citations::cited_identifiers(&imports, uri)?.iter().take(NEIGHBOURS) {
                // One point per shared work, whichever of its identifiers the other names.
                let mut others = std::collections::BTreeSet::new();
                for id in ids {
                    others.extend(imports.cited_by(id, None, NEIGHBOURS)?);
                }
                edges.extend(others.into_iter().map(|other| (other, "bibliographic-coupling", 1.0)));
            }
        }
        // Co-citation: cited together with this one by the same papers.
        if wanted("co-citation") {
            for citing in cited_by.iter().filter_map(citing_eprint) {
                for other in r.page(&Listing::on_eprint(Kind::Citation, &citing), NEIGHBOURS, None)?.items.iter().filter_map(target) {
                    edges.push((other, "co-citation", 1.0));
                }
            }
        }
        // Bibliographic coupling: citing the same works as this one.
        if wanted("bibliographic-coupling") {
            for reference in references.iter().filter_map(target) {
                for other in
                    r.page(&Listing::pointing_at(Kind::Citation, &reference), NEIGHBOURS, None)?.items.iter().filter_map(citing_eprint)
                {
                    edges.push((other, "bibliographic-coupling", 1.0));
                }
            }
        }
        // Shared authors: each author's other papers, one point per shared author.
        if wanted("author") {
            for did in &authors {
                for other in r.eprints().uris_by_author(did, NEIGHBOURS)? {
                    edges.push((other, "author", 1.0));
                }
            }
        }
        Ok(edges)
    })?;
    for (candidate, signal, score) in graph {
        add(&candidate, signal, score);
    }
    // Normalize each signal by its best candidate, then weigh.
    let mut best: std::collections::BTreeMap<&str, f64> = Default::default();
    for scores in raw.values() {
        for (s, v) in scores {
            let b = best.entry(s).or_insert(0.0);
            *b = b.max(*v);
        }
    }
    let total_weight: f64 = SIGNALS.iter().filter(|(n, ..)| *n != "collaborative").map(|(n, ..)| weight(n)).sum::<f64>().max(1.0);
    let mut ranked: Vec<Similar> = raw
        .into_iter()
        .map(|(candidate, scores)| {
            let mut combined = 0.0;
            let mut signals = serde_json::Map::new();
            let mut reasons = Vec::new();
            for (s, v) in &scores {
                let normalized = v / best.get(s).copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
                combined += weight(s) * normalized;
                signals.insert((*s).to_owned(), json!(normalized));
                reasons.push(*s);
            }
            Similar { score: combined / total_weight, uri: candidate, signals: Value::Object(signals), reasons }
        })
        .filter(|s| s.score > 0.0)
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.uri.cmp(&b.uri)));
    Ok(Some((title, ranked)))
}

/// The weight of each signal a request asks for: its `weight*` parameter or the default,
/// 0 for a signal `includeTypes` leaves out.
fn weights(c: &Call) -> impl Fn(&str) -> f64 + Sync + '_ {
    let asked: Vec<String> = c.params.strs("includeTypes");
    move |s: &str| {
        let Some((_, param, default)) = SIGNALS.iter().find(|(n, ..)| *n == s) else { return 0.0 };
        if !asked.is_empty() && !asked.iter().any(|a| a == s) {
            return 0.0;
        }
        c.params.int(param).unwrap_or(*default) as f64
    }
}

/// Each signal's state in an answer: computed, not asked, or unavailable with why.
fn signal_report(weight: &dyn Fn(&str) -> f64) -> Value {
    let mut report = serde_json::Map::new();
    for (name, ..) in SIGNALS {
        let state = if name == "collaborative" {
            "unavailable: svc keeps no reading history per reader (viewers are pseudonymous counts)"
        } else if weight(name) > 0.0 {
            "computed"
        } else {
            "not asked"
        };
        report.insert(name.to_owned(), json!(state));
    }
    Value::Object(report)
}

/// `pub.svc.discovery.getSimilar {uri, limit, includeTypes?, weight*?}` → `{eprint,
/// related: [{uri, title, score, reasons, signals}], signals}`: eprints like this one by the
/// signals svc can compute from what it indexes, each normalized to 0–1 and combined by the
/// request's weights (0–100). `collaborative` needs reading histories, which svc does not
/// keep per reader (viewers are pseudonymous counts): it is reported as unavailable.
async fn get_similar(c: Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?.to_owned();
    let limit = c.limit(5);
    let weight = weights(&c);
    let Some((title, ranked)) = similar_to(&c, &uri, &weight).await? else {
        return Err(ApiError::not_found(format!("no eprint at {uri}")));
    };
    // Titles, and hidden or deleted eprints left out, for the best until the page is full.
    let related = reads::attached(&c.state, |r| {
        let mut out = Vec::new();
        for s in &ranked {
            if out.len() == limit {
                break;
            }
            let Some(title) = r.eprint_title(&s.uri)? else { continue };
            out.push(json!({"uri": s.uri, "title": title, "score": s.score, "reasons": s.reasons, "signals": s.signals}));
        }
        Ok(out)
    })?;
    Body::json(&json!({"eprint": {"uri": uri, "title": title}, "related": related, "signals": signal_report(&weight)}))
}

/// How many of the caller's eprints seed their recommendations: the last they engaged with,
/// and their own newest.
const SEEDS: usize = 5;
/// The most recommendations one caller's list holds (pages of it).
const MAX_RECOMMENDATIONS: usize = 100;

/// `pub.svc.discovery.getRecommendations {limit, cursor?}` → `{recommendations: [{uri, title,
/// reason, score, signals}], cursor?}`: eprints like those the caller engaged with last
/// (viewed, clicked, endorsed, claimed, through `recordInteraction`) and like their own,
/// each scored by its best seed, without the seeds, the caller's own eprints and what they
/// dismissed. The cursor is the count already given.
async fn get_recommendations(c: Call) -> Answer {
    let did = c.caller()?.did.clone();
    let limit = c.limit(20);
    let offset = match c.params.str("cursor") {
        Some(s) => s.parse::<usize>().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this list"))?,
        None => 0,
    };
    let (engaged, dismissed, own) = reads::blocking(&c.state, || -> Result<_, ApiError> {
        let i = InteractionsReader::new(c.state.store.as_ref())?;
        let own = projections::eprints::read::EprintsReader::new(c.state.store.as_ref())?.by_author(&did, SEEDS, None)?;
        let own: Vec<String> = own.eprints.iter().map(|e| e.uri().to_owned()).collect();
        Ok((i.engaged(&did, SEEDS)?, i.dismissed(&did, 10_000)?, own))
    })?;
    let weight = |s: &str| SIGNALS.iter().find(|(n, ..)| *n == s).map_or(0.0, |(.., d)| *d as f64);
    let mut best: std::collections::BTreeMap<String, (f64, String, Value)> = Default::default();
    for seed in engaged.iter().chain(own.iter()) {
        let Some((seed_title, similar)) = similar_to(&c, seed, &weight).await? else { continue };
        for s in similar.into_iter().take(MAX_RECOMMENDATIONS) {
            if engaged.contains(&s.uri) || own.contains(&s.uri) || dismissed.contains(&s.uri) {
                continue;
            }
            let reason = format!("like “{seed_title}” ({})", s.reasons.join(", "));
            let entry = best.entry(s.uri).or_insert((0.0, String::new(), Value::Null));
            if s.score > entry.0 {
                *entry = (s.score, reason, s.signals);
            }
        }
    }
    let mut ranked: Vec<(String, (f64, String, Value))> = best.into_iter().collect();
    ranked.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(MAX_RECOMMENDATIONS);
    let page = reads::attached(&c.state, |r| {
        let mut out = Vec::new();
        let mut shown = 0;
        for (uri, (score, reason, signals)) in &ranked {
            let Some(title) = r.eprint_title(uri)? else { continue };
            shown += 1;
            if shown <= offset {
                continue;
            }
            if out.len() == limit {
                return Ok((out, true));
            }
            out.push(json!({"uri": uri, "title": title, "reason": reason, "score": score, "signals": signals}));
        }
        Ok((out, false))
    })?;
    let (recommendations, more) = page;
    let mut answer = json!({"recommendations": recommendations});
    if more {
        answer["cursor"] = json!((offset + limit).to_string());
    }
    Body::json(&answer)
}

/// `pub.svc.discovery.recordInteraction {eprintUri (or uri), type, recommendationId?,
/// context?}` → `{recorded}`: a `command.user` event; a dismissal keeps the eprint out of
/// the caller's recommendations from then on. Answers once applied.
async fn record_interaction(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let eprint = ["eprintUri", "uri"].iter().find_map(|k| c.input.get(*k).and_then(Value::as_str)).unwrap_or_default().to_owned();
    if eprint.is_empty() {
        return Err(ApiError::invalid_request("eprintUri (or uri) is required"));
    }
    crate::params::parse_record_uri("eprintUri", &eprint)?;
    let known = reads::attached(&c.state, |r| Ok(r.eprint_title(&eprint)?.is_some()))?;
    if !known {
        return Err(ApiError::not_found(format!("no eprint at {eprint}")));
    }
    let action = UserAction::Interacted {
        eprint_uri: eprint,
        kind: c.input["type"].as_str().unwrap_or_default().to_owned(),
        recommendation_id: c.input.get("recommendationId").and_then(Value::as_str).map(str::to_owned),
    };
    let event = NewEvent {
        key: caller.clone(),
        source: Source::Command {
            nsid: "pub.svc.discovery.recordInteraction".into(),
            caller: caller.clone(),
            host: c.state.identity.public_url.clone(),
        },
        payload: Payload::User(UserCommand { caller, action }),
    };
    crate::command::append(&c.state, event).await?;
    Body::json(&json!({"recorded": true}))
}
