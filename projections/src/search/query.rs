//! Searching the index: full-text query, filters, three sort orders and cursor paging that
//! costs the same on page 1 and on page 10,000.
//!
//! Every hit gets a sort key `(primary, secondary, seq)` compared descending: relevance is
//! `(score, 0, seq)`, date `(createdAt, 0, seq)`, citations `(citations, createdAt, seq)`.
//! `seq` (the log offset that indexed the document) makes keys unique, so a cursor (the key
//! of the last hit of a page) names exactly where the next page starts: the collector keeps
//! only documents whose key is below it.

use std::ops::Bound;

use data_encoding::BASE64URL_NOPAD;
use serde_json::Value as Json;
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, QueryParser, RangeQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocId, Score, SegmentReader, TantivyDocument, Term};

use super::SearchIndex;
use crate::ProjectionError;

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    /// Best match first.
    Relevance,
    /// Newest `createdAt` first.
    Date,
    /// Most cited first, then newest.
    Citations,
}

impl SortOrder {
    fn tag(self) -> &'static str {
        match self {
            SortOrder::Relevance => "r",
            SortOrder::Date => "d",
            SortOrder::Citations => "c",
        }
    }
}

/// Where the next page starts: the sort key of the last hit returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchCursor {
    sort: SortOrder,
    key: (u64, u64, u64),
}

impl SearchCursor {
    /// The opaque string form given to clients.
    pub fn encode(&self) -> String {
        let (a, b, c) = self.key;
        BASE64URL_NOPAD.encode(format!("{}.{a:x}.{b:x}.{c:x}", self.sort.tag()).as_bytes())
    }

    /// Parses a cursor given back by a client for a search sorted by `sort`.
    ///
    /// # Errors
    /// [`ProjectionError::InvalidSearch`] for a string that is not such a cursor.
    pub fn decode(s: &str, sort: SortOrder) -> Result<SearchCursor, ProjectionError> {
        let invalid = || ProjectionError::InvalidSearch("cursor is not valid for this search".into());
        let bytes = BASE64URL_NOPAD.decode(s.as_bytes()).map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let parts: Vec<&str> = text.split('.').collect();
        if parts.len() != 4 || parts[0] != sort.tag() {
            return Err(invalid());
        }
        let n = |p: &str| u64::from_str_radix(p, 16).map_err(|_| invalid());
        Ok(SearchCursor { sort, key: (n(parts[1])?, n(parts[2])?, n(parts[3])?) })
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    /// Words to look for; empty or `*` matches everything.
    pub query: String,
    /// Field codes; a hit has at least one of them (when any are given).
    pub fields: Vec<String>,
    /// Author DIDs; a hit lists at least one of them (when any are given).
    pub authors: Vec<String>,
    /// Earliest `createdAt`, in microseconds, inclusive.
    pub created_from: Option<i64>,
    /// Latest `createdAt`, in microseconds, inclusive.
    pub created_to: Option<i64>,
    /// The order.
    pub sort: SortOrder,
    /// Page size.
    pub limit: usize,
    /// Continue after this cursor.
    pub cursor: Option<SearchCursor>,
}

/// A page of hits.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// Eprint summaries, in order.
    pub hits: Vec<Json>,
    /// Where the next page starts, when there is one.
    pub next: Option<SearchCursor>,
    /// How many eprints match in all.
    pub total: usize,
}

/// Maps an `i64` onto a `u64` so that order is preserved.
fn order_i64(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

type SortKey = (u64, u64, u64);

impl SearchIndex {
    fn build_query(&self, req: &SearchRequest) -> Box<dyn Query> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let words = req.query.trim();
        if !(words.is_empty() || words == "*") {
            let mut parser = QueryParser::for_index(&self.index, vec![f.title, f.abstract_text, f.authors, f.keywords, f.fields_text]);
            parser.set_field_boost(f.title, 2.0);
            parser.set_field_boost(f.authors, 1.5);
            // Lenient: whatever users type becomes a query, never an error.
            let (q, _errors) = parser.parse_query_lenient(words);
            clauses.push((Occur::Must, q));
        }
        let any_of = |field, values: &[String]| -> Box<dyn Query> {
            let terms: Vec<(Occur, Box<dyn Query>)> = values
                .iter()
                .map(|v| (Occur::Should, Box::new(TermQuery::new(Term::from_field_text(field, v), IndexRecordOption::Basic)) as Box<dyn Query>))
                .collect();
            Box::new(BooleanQuery::new(terms))
        };
        if !req.fields.is_empty() {
            clauses.push((Occur::Must, any_of(f.field, &req.fields)));
        }
        if !req.authors.is_empty() {
            clauses.push((Occur::Must, any_of(f.author_did, &req.authors)));
        }
        if req.created_from.is_some() || req.created_to.is_some() {
            let bound = |v: Option<i64>| v.map_or(Bound::Unbounded, |v| Bound::Included(Term::from_field_i64(f.created, v)));
            clauses.push((Occur::Must, Box::new(RangeQuery::new(bound(req.created_from), bound(req.created_to)))));
        }
        match clauses.len() {
            0 => Box::new(AllQuery),
            _ => Box::new(BooleanQuery::new(clauses)),
        }
    }

    /// Runs a search on the newest visible commit.
    ///
    /// # Errors
    /// [`ProjectionError::Search`] when the index cannot be read.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults, ProjectionError> {
        let query = self.build_query(req);
        let searcher = self.reader.searcher();
        let sort = req.sort;
        let cursor = req.cursor.map(|c| c.key);
        let limit = req.limit.max(1);
        let collector = TopDocs::with_limit(limit + 1).tweak_score(move |segment: &SegmentReader| {
            let fast = segment.fast_fields();
            let seq = fast.u64("seq").ok();
            let created = fast.i64("created").ok();
            let citations = fast.u64("citations").ok();
            move |doc: DocId, score: Score| -> (bool, SortKey) {
                let seq = seq.as_ref().and_then(|c| c.first(doc)).unwrap_or(0);
                let created = order_i64(created.as_ref().and_then(|c| c.first(doc)).unwrap_or(0));
                let key = match sort {
                    SortOrder::Relevance => (u64::from(score.max(0.0).to_bits()), 0, seq),
                    SortOrder::Date => (created, 0, seq),
                    SortOrder::Citations => (citations.as_ref().and_then(|c| c.first(doc)).unwrap_or(0), created, seq),
                };
                (cursor.is_none_or(|c| key < c), key)
            }
        });
        let (top, total) = searcher.search(&query, &(collector, Count))?;
        let mut hits = Vec::with_capacity(limit);
        let mut last_key = None;
        let mut more = false;
        for ((after_cursor, key), addr) in top {
            if !after_cursor {
                continue;
            }
            if hits.len() == limit {
                more = true;
                break;
            }
            let doc: TantivyDocument = searcher.doc(addr)?;
            let summary = doc.get_first(self.fields.summary).and_then(|v| v.as_str()).unwrap_or("{}");
            hits.push(serde_json::from_str(summary).map_err(|e| ProjectionError::Corrupt(format!("search summary: {e}")))?);
            last_key = Some(key);
        }
        let next = if more { last_key.map(|key| SearchCursor { sort, key }) } else { None };
        Ok(SearchResults { hits, next, total })
    }
}
