//! `pub.svc.eprint.*`.

use projections::attached::collections::{Kind, Listing, CHANGELOG};
use projections::attached::read::{AttachedReader, Item};
use projections::search::SortOrder;
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::params::{cursor, uri_param};
use crate::reads;
use crate::search::{self, SearchArgs};
use crate::views::attached::{self, list_answer};
use crate::views::citations;
use crate::views::eprint;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.eprint.getSubmission", Auth::Open, get_submission)
        .kept()
        .query("pub.svc.eprint.listByAuthor", Auth::Open, list_by_author)
        .kept()
        .aliases(&[("did", "author")])
        .query_async("pub.svc.eprint.searchSubmissions", Auth::Open, search_submissions)
        .aliases(&[("q", "query"), ("author", "authors"), ("tag", "tags")])
        .query("pub.svc.eprint.listCitations", Auth::Open, list_citations)
        .kept()
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.eprint.listRelatedWorks", Auth::Open, list_related_works)
        .kept()
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.eprint.getChangelog", Auth::Open, get_changelog)
        .kept()
        .query("pub.svc.eprint.listChangelogs", Auth::Open, list_changelogs)
        .kept()
        .aliases(&[("uri", "eprintUri")])
        .procedure("pub.svc.eprint.updateSubmission", Auth::Required, update_submission)
        .procedure("pub.svc.eprint.deleteSubmission", Auth::Required, delete_submission)
}

/// The indexed eprint at `uri` (its CID and record), once `caller` is shown to be one who
/// may change it (details.md §1): with a `paperDid`, the paper account only; otherwise its
/// repository, its submitter (`submittedBy`) or a listed author. `NotFound` for an eprint
/// svc does not index, `Unauthorized` for anyone else.
fn may_change(c: &Call, uri: &str) -> Result<(String, Value), ApiError> {
    let caller = c.caller()?.did.clone();
    crate::params::parse_record_uri("uri", uri)?;
    let found = reads::attached(&c.state, |r| r.eprints().get(uri))?;
    let eprint = found.ok_or_else(|| ApiError::not_found(format!("svc indexes no eprint at {uri}")))?;
    let record: Value = serde_json::from_str(&eprint.record).unwrap_or_default();
    let allowed = match record["paperDid"].as_str() {
        Some(paper) => caller == paper,
        None => {
            let authors = record["authors"].as_array().into_iter().flatten().filter_map(|a| a["did"].as_str());
            caller == eprint.did || record["submittedBy"].as_str() == Some(caller.as_str()) || authors.into_iter().any(|d| d == caller)
        }
    };
    if !allowed {
        let who = if record["paperDid"].is_string() { "the paper account" } else { "its repository, submitter or a listed author" };
        return Err(ApiError::new(ErrorCode::Unauthorized, format!("{caller} may not change {uri}: only {who} may")));
    }
    Ok((eprint.cid, record))
}

/// `version` bumped by `bump` (`major`, `minor`, `patch`): a lower part resets. An eprint
/// without a semantic version is at 1.0.0 (or its legacy `versionNumber`.0.0).
fn bumped(record: &Value, bump: &str) -> Value {
    let part = |k: &str| record["version"][k].as_u64();
    let major = part("major").or_else(|| record["versionNumber"].as_u64()).unwrap_or(1);
    let (minor, patch) = (part("minor").unwrap_or(0), part("patch").unwrap_or(0));
    match bump {
        "major" => json!({"major": major + 1, "minor": 0, "patch": 0}),
        "minor" => json!({"major": major, "minor": minor + 1, "patch": 0}),
        _ => json!({"major": major, "minor": minor, "patch": patch + 1}),
    }
}

/// `pub.svc.eprint.updateSubmission` (an authorization pre-check; changes nothing):
/// `{uri, version, expectedCid, changelogUri?}`: the version the update makes, the CID the
/// client's `putRecord` must swap (`swapRecord`), and, when a changelog is given, a URI in
/// the caller's repository to write it at.
async fn update_submission(c: Call) -> Answer {
    let uri = c.input["uri"].as_str().unwrap_or_default();
    let (cid, record) = may_change(&c, uri)?;
    if c.input.get("title").is_some_and(|t| t.as_str().is_none_or(|t| t.trim().is_empty())) {
        return Err(ApiError::new(ErrorCode::ValidationError, "title: an eprint's title may not be empty"));
    }
    if c.input.get("authors").is_some_and(|a| a.as_array().is_none_or(Vec::is_empty)) {
        return Err(ApiError::new(ErrorCode::ValidationError, "authors: an eprint lists at least one author"));
    }
    let version = bumped(&record, c.input["versionBump"].as_str().unwrap_or("patch"));
    let mut out = json!({"uri": uri, "version": version, "expectedCid": cid});
    if c.input.get("changelog").is_some_and(|l| l.is_object()) {
        let caller = &c.caller()?.did;
        let now = chrono::Utc::now().timestamp_micros().max(0) as u64;
        out["changelogUri"] = json!(format!("at://{caller}/{CHANGELOG}/{}", ingest::repo::tid(now, 0)));
    }
    Body::json(&out)
}

/// `pub.svc.eprint.deleteSubmission` (an authorization pre-check; changes nothing):
/// `{success}`; the client then deletes the record from its repository.
async fn delete_submission(c: Call) -> Answer {
    may_change(&c, c.input["uri"].as_str().unwrap_or_default())?;
    Body::json(&json!({"success": true}))
}

/// `pub.svc.eprint.getChangelog` (beyond the contract): one changelog record, as its
/// author wrote it, with `uri`, `cid`, `author` and `indexedAt`; `NotFound` otherwise.
fn get_changelog(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let found = reads::attached(&c.state, |r| Ok(r.get(uri)?.filter(|i| i.collection == CHANGELOG)))?;
    let item = found.ok_or_else(|| ApiError::not_found(format!("no changelog at {uri}")))?;
    Body::json(&attached::view(&item, "author"))
}

/// `pub.svc.eprint.listChangelogs` (beyond the contract): `{changelogs, cursor?, hasMore,
/// total}`, newest first.
fn list_changelogs(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "eprintUri")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = r.page(&Listing::on_eprint(Kind::Changelog, eprint), c.limit(50), after)?;
        Ok(list_answer("changelogs", page.items.iter().map(|i| attached::view(i, "author")).collect(), &page))
    })?;
    Body::json(&answer)
}

/// A citation's view: the stored view with its `curator`.
pub fn citation_view(item: &Item) -> Value {
    let mut v = attached::view(item, "curator");
    v["source"] = json!("user");
    v
}

/// A related work's view (`#relatedWorkView`), with the target eprint's title when svc
/// indexes it.
pub fn related_work_view(r: &AttachedReader, item: &Item) -> Result<Value, ProjectionError> {
    let mut v = attached::view(item, "curator");
    v["sourceEprintUri"] = v["eprintUri"].clone();
    v["targetEprintUri"] = v["relatedUri"].clone();
    v["curatorDid"] = json!(item.did);
    if let Some(target) = v["relatedUri"].as_str() {
        if let Some(title) = r.eprint_title(target)? {
            v["targetTitle"] = json!(title);
        }
    }
    Ok(v)
}

/// `pub.svc.eprint.listCitations`: `{citations, cursor?, total}`: the citation records users
/// wrote (`source=user`), newest first, then the citations extracted from what a
/// bibliographic service knows of the eprint (`source=auto`), in its order; both by default
/// (`all`).
fn list_citations(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    let start = citations::start(&c.params)?;
    let (user, auto) = match c.params.str("source").unwrap_or("all") {
        "user" => (true, false),
        "auto" => (false, true),
        _ => (true, true),
    };
    let limit = c.limit(50);
    let answer = reads::attached(&c.state, |r| {
        let imports = projections::imports::read::ImportsReader::new(c.state.store.as_ref())?;
        let list = Listing::on_eprint(Kind::Citation, eprint);
        let extracted = if auto { citations::count_of(&imports, eprint)? } else { 0 };
        let total = extracted + if user { r.count(&list)? } else { 0 };
        let (mut items, mut next) = (Vec::new(), None);
        // The records first; the extracted citations from where the records end.
        let from = match start {
            citations::Start::Extracted(n) => Some(n),
            citations::Start::Records(_) if !user => Some(0),
            citations::Start::Records(after) => {
                let page = r.page(&list, limit, after)?;
                items.extend(page.items.iter().map(citation_view));
                next = attached::next_cursor(&page);
                next.is_none().then_some(0)
            }
        };
        if let Some(from) = from.filter(|_| auto) {
            let room = limit - items.len();
            if room == 0 {
                next = (from < extracted as usize).then(|| citations::extracted_cursor(from));
            } else {
                let (views, after) = citations::page_of(r, &imports, eprint, from, room)?;
                items.extend(views);
                next = after.map(citations::extracted_cursor);
            }
        }
        let mut out = json!({"citations": items, "total": total});
        if let Some(next) = next {
            out["cursor"] = json!(next);
        }
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `pub.svc.eprint.listRelatedWorks`: `{relatedWorks, cursor?, total}`, newest first.
fn list_related_works(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = r.page(&Listing::on_eprint(Kind::RelatedWork, eprint), c.limit(50), after)?;
        let works = page.items.iter().map(|i| related_work_view(r, i)).collect::<Result<Vec<_>, _>>()?;
        let mut out = list_answer("relatedWorks", works, &page);
        out.as_object_mut().map(|o| o.remove("hasMore"));
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `pub.svc.eprint.getSubmission`: params `uri`, `cid?`.
fn get_submission(c: &Call) -> Answer {
    eprint::get(&c.state, c.str("uri"), c.params.str("cid"))
}

/// `pub.svc.eprint.listByAuthor`: params `author` (alias `did`), `limit`, `cursor`.
fn list_by_author(c: &Call) -> Answer {
    Body::json(&eprint::list_by_author(&c.state, c.str("author"), c.limit(25), c.params.str("cursor"))?)
}

/// `pub.svc.eprint.searchSubmissions`: `sortBy` wins over `sort` when both are sent;
/// `impression=true` records the result list (`metrics::record_impression`).
async fn search_submissions(c: Call) -> Answer {
    let p = &c.params;
    let sort = match (p.str("sortBy"), p.str("sort")) {
        (Some("date"), _) | (None, Some("recent")) => SortOrder::Date,
        (Some("citations"), _) => SortOrder::Citations,
        _ => SortOrder::Relevance,
    };
    let args = SearchArgs {
        query: p.str("query").unwrap_or_default().to_owned(),
        fields: p.strs("fields"),
        authors: p.strs("authors"),
        from: p.str("dateFrom").map(|v| ("dateFrom", v.to_owned())),
        to: p.str("dateTo").map(|v| ("dateTo", v.to_owned())),
        sort: Some(sort),
        limit: c.limit(25),
        cursor: p.str("cursor").map(str::to_owned),
        tags: p.strs("tags"),
        facets: search::facets(&p.strs("facets"))?,
        highlight: p.bool("highlight") == Some(true),
        groups: Vec::new(),
    };
    let query = args.query.clone();
    let mut page = search::search(&c.state, args).await?;
    if p.bool("impression") == Some(true) {
        page.impression_id =
            Some(crate::xrpc::metrics::record_impression(&c, "pub.svc.eprint.searchSubmissions", query, page.total as u64));
    }
    page.into_body("submissions")
}
