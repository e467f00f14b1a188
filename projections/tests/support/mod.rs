//! What the projection tests share: events of eprint submissions, an embedded log and
//! store in a temporary directory, projecting everything, searching every page.

#![allow(dead_code)]

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use event_schema::{NewEvent, Payload, RecordDelete, RecordWrite, Source};
use eventlog::EmbeddedLog;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use projections::search::{SearchCursor, SearchRequest, SortOrder};
use serde_json::json;
use store::EmbeddedStore;

pub fn src() -> Source {
    Source::Manual { note: "pipeline test".into() }
}

pub fn submission(title: &str, authors: &[(&str, &str)], day: u32) -> serde_json::Value {
    let authors: Vec<_> = authors.iter().enumerate().map(|(i, (name, did))| json!({"name": name, "did": did, "order": i + 1})).collect();
    json!({"title": title, "abstract": format!("About {title}."), "authors": authors, "fields": ["cs.DL"],
           "createdAt": Utc.with_ymd_and_hms(2025, 1, day, 0, 0, 0).unwrap().to_rfc3339()})
}

pub fn write(did: &str, rkey: &str, rev: &str, record: serde_json::Value, update: bool) -> NewEvent {
    let w = RecordWrite {
        did: did.into(),
        collection: lexicons::SUBMISSION.into(),
        rkey: rkey.into(),
        cid: format!("bafyrei{rkey}{rev}"),
        rev: rev.into(),
        record,
    };
    NewEvent::repo(src(), if update { Payload::RecordUpdate(w) } else { Payload::RecordCreate(w) })
}

pub fn delete(did: &str, rkey: &str, rev: &str) -> NewEvent {
    NewEvent::repo(
        src(),
        Payload::RecordDelete(RecordDelete {
            did: did.into(),
            collection: lexicons::SUBMISSION.into(),
            rkey: rkey.into(),
            rev: rev.into(),
        }),
    )
}

pub struct Env {
    pub _dir: tempfile::TempDir,
    pub log: Arc<EmbeddedLog>,
    pub ctx: Context,
}

pub fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let ctx = Context::single(Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap()), &dir.path().join("search"));
    Env { _dir: dir, log, ctx }
}

/// Builds `model`'s active version from the whole log (the search index reads the eprints
/// model's rows: build that first).
pub fn project(env: &Env, model: &str) {
    let v = catalog::ensure_active(&env.ctx, model).unwrap();
    let mut p = catalog::open(&env.ctx, model, v, Mode::Live).unwrap();
    catch_up(env.log.as_ref(), p.as_mut(), 1000).unwrap();
}

pub fn project_all(env: &Env) {
    for model in catalog::MODELS.iter() {
        let v = catalog::ensure_active(&env.ctx, model).unwrap();
        let mut p = catalog::open(&env.ctx, model, v, Mode::Live).unwrap();
        catch_up(env.log.as_ref(), p.as_mut(), 3).unwrap();
    }
}

pub fn search_all(env: &Env, query: &str, sort: SortOrder, limit: usize) -> (Vec<serde_json::Value>, usize) {
    let v = env.ctx.store.active_version("search").unwrap().unwrap();
    let index = env.ctx.search.open(v).unwrap();
    let mut hits = Vec::new();
    let mut cursor: Option<SearchCursor> = None;
    let mut totals = Vec::new();
    loop {
        let req = SearchRequest { limit, cursor, ..SearchRequest::new(query, sort) };
        let page = index.search(&req).unwrap();
        // Every page, the first (found the fast way) and those after a cursor, counts the same.
        assert!(totals.iter().all(|t| *t == page.total), "{query:?} {sort:?}: totals {totals:?} then {}", page.total);
        totals.push(page.total);
        hits.extend(page.hits.iter().map(|h| serde_json::from_str::<serde_json::Value>(h).unwrap()));
        match page.next {
            // Round-trip through the client-facing string form.
            Some(next) => cursor = Some(SearchCursor::decode(&next.encode(), &req).unwrap()),
            None => return (hits, page.total),
        }
    }
}
