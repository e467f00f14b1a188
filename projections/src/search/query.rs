//! Searching the index: full-text query, filters, three sort orders and cursor paging that
//! costs the same on page 1 and on page 10,000.
//!
//! Every hit gets a sort key `(primary, secondary, seq)` compared descending: relevance is
//! `(score, 0, seq)`, date `(createdAt, 0, seq)`, citations `(citations, createdAt, seq)`.
//! `seq` (the log offset that indexed the document) makes keys unique, so a cursor (the key
//! of the last hit of a page) names exactly where the next page starts: the collector keeps
//! only documents whose key is below it.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use data_encoding::BASE64URL_NOPAD;
use tantivy::collector::{Count, TopDocs};
use tantivy::columnar::Column;
use tantivy::query::{AllQuery, BooleanQuery, BoostQuery, Occur, Query, QueryParser, RangeQuery, RegexQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentReader, TantivyDocument, Term};

use super::facets::{FacetCollector, FacetTops};
use super::SearchIndex;
use crate::ProjectionError;

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// Where the next page starts: the sort key of the last hit returned, and the fingerprint
/// of the search it belongs to ([`SearchRequest::fingerprint`]), so that a cursor of one
/// search is refused by another instead of paging into something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SearchCursor {
    sort: SortOrder,
    key: (u64, u64, u64),
    search: u64,
}

impl SearchCursor {
    /// The opaque string form given to clients.
    pub fn encode(&self) -> String {
        let (a, b, c) = self.key;
        BASE64URL_NOPAD.encode(format!("{}.{a:x}.{b:x}.{c:x}.{:x}", self.sort.tag(), self.search).as_bytes())
    }

    /// Parses a cursor given back by a client for `request` (whose own cursor is ignored).
    ///
    /// # Errors
    /// [`ProjectionError::InvalidSearch`] for a string that is not a cursor, or the cursor of
    /// another search (other words, filters or order).
    pub fn decode(s: &str, request: &SearchRequest) -> Result<SearchCursor, ProjectionError> {
        let invalid = || ProjectionError::InvalidSearch("not a cursor of this search".into());
        let bytes = BASE64URL_NOPAD.decode(s.as_bytes()).map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let parts: Vec<&str> = text.split('.').collect();
        let n = |p: &str| u64::from_str_radix(p, 16).map_err(|_| invalid());
        if parts.len() != 5 || n(parts[4])? != request.fingerprint() {
            return Err(ProjectionError::InvalidSearch(
                "the cursor belongs to another search (other query, filters or order): start again without it".into(),
            ));
        }
        if parts[0] != request.sort.tag() {
            return Err(invalid());
        }
        Ok(SearchCursor { sort: request.sort, key: (n(parts[1])?, n(parts[2])?, n(parts[3])?), search: request.fingerprint() })
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchRequest {
    /// Words to look for, all of which must match (in any text field); the query syntax of
    /// tantivy (`title:graph`, `"exact phrase"`, `a OR b`, `-word`) is understood. Empty or
    /// `*` matches everything.
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
    /// Tags (normalized); a hit carries at least one of them (when any are given): an
    /// exact match on the documents' `tag` field, which the index keeps with each eprint.
    pub tags: Vec<String>,
    /// Groups of field or facet codes: a hit has a code of every group, in its fields or
    /// its facets (faceted browsing: a group per facet dimension).
    pub groups: Vec<Vec<String>>,
}

impl SearchRequest {
    /// What the search is, apart from its page: the words, filters and order, hashed
    /// (FNV-1a, 64 bits: stable across builds, so cursors survive a restart).
    pub fn fingerprint(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes.iter().chain(&[0xff]) {
                hash ^= u64::from(*b);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(self.query.trim().as_bytes());
        let mut fields = self.fields.clone();
        fields.sort();
        let mut authors = self.authors.clone();
        authors.sort();
        eat(fields.join("\n").as_bytes());
        eat(authors.join("\n").as_bytes());
        eat(format!("{:?}.{:?}", self.created_from, self.created_to).as_bytes());
        eat(self.sort.tag().as_bytes());
        if !self.tags.is_empty() {
            let mut tags = self.tags.clone();
            tags.sort();
            eat(tags.join("\n").as_bytes());
        }
        for group in &self.groups {
            let mut codes = group.clone();
            codes.sort();
            eat(format!("group:{}", codes.join("\n")).as_bytes());
        }
        hash
    }

    /// The first page (25 hits) of `query` in `sort` order, without filters.
    pub fn new(query: &str, sort: SortOrder) -> SearchRequest {
        SearchRequest {
            query: query.to_owned(),
            fields: Vec::new(),
            authors: Vec::new(),
            created_from: None,
            created_to: None,
            sort,
            limit: 25,
            cursor: None,
            tags: Vec::new(),
            groups: Vec::new(),
        }
    }
}

/// A page of hits.
#[derive(Debug, Clone)]
pub struct SearchResults {
    /// Eprint summaries, in order: the JSON text the projection stored with each document,
    /// served as it is (neither parsed nor checked again on the way out).
    pub hits: Vec<String>,
    /// Where the next page starts, when there is one.
    pub next: Option<SearchCursor>,
    /// How many eprints match in all.
    pub total: usize,
    /// Whether hits were left out because the eprints model does not hold their rows (yet:
    /// it may be behind this commit): such an answer is not kept for later searches.
    pub partial: bool,
}

/// Maps an `i64` onto a `u64` so that order is preserved.
fn order_i64(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

type SortKey = (u64, u64, u64);

impl SearchIndex {
    pub(super) fn build_query(&self, req: &SearchRequest) -> Result<Box<dyn Query>, ProjectionError> {
        let f = self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        check_field_names(req.query.trim())?;
        let words = colons_as_punctuation(req.query.trim());
        let words = words.as_ref();
        if !(words.is_empty() || words == "*") {
            // Every word must match (in the combined field): what people expect of a
            // scholarly search box, and far fewer documents to score than a disjunction.
            // A query that is not valid syntax (`"unterminated`, `((((`, `[a TO`, a pasted
            // `\text{M}^2`) is searched as the words it holds, never refused.
            let mut all = QueryParser::for_index(&self.index, vec![f.all]);
            all.set_conjunction_by_default();
            let must = match all.parse_query(words) {
                Ok(q) => q,
                Err(_) => all.parse_query_lenient(&as_plain_words(words)).0,
            };
            // Words in the title rank higher: each word of the query is also looked up in
            // the title (both fields are analyzed alike), as one term, never a phrase.
            let mut title_words = Vec::new();
            must.query_terms(&mut |term, _| {
                if let Some(word) = term.value().as_str().filter(|_| term.field() == f.all) {
                    title_words.push(Term::from_field_text(f.title, word));
                }
            });
            // An identifier typed as the query (an arXiv id, a DOI) finds its eprint first;
            // the words still match as words.
            let must: Box<dyn Query> = match super::ids::of_query(req.query.trim()) {
                Some(id) => {
                    let exact = TermQuery::new(Term::from_field_text(f.ids, &id), IndexRecordOption::Basic);
                    Box::new(BooleanQuery::new(vec![
                        (Occur::Should, Box::new(BoostQuery::new(Box::new(exact), IDENTIFIER_BOOST))),
                        (Occur::Should, must),
                    ]))
                }
                None => must,
            };
            clauses.push((Occur::Must, must));
            if !title_words.is_empty() {
                title_words.sort();
                title_words.dedup();
                let title: Vec<(Occur, Box<dyn Query>)> = title_words
                    .into_iter()
                    .map(|t| (Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs)) as Box<dyn Query>))
                    .collect();
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(BooleanQuery::new(title)), 2.0))));
            }
        }
        let any_of = |field, values: &[String]| -> Box<dyn Query> {
            let terms: Vec<(Occur, Box<dyn Query>)> = values
                .iter()
                .map(|v| {
                    (Occur::Should, Box::new(TermQuery::new(Term::from_field_text(field, v), IndexRecordOption::Basic)) as Box<dyn Query>)
                })
                .collect();
            Box::new(BooleanQuery::new(terms))
        };
        if !req.fields.is_empty() {
            clauses.push((Occur::Must, any_of(f.field, &req.fields)));
        }
        if !req.authors.is_empty() {
            clauses.push((Occur::Must, any_of(f.author_did, &req.authors)));
        }
        if !req.tags.is_empty() {
            clauses.push((Occur::Must, any_of(f.tag, &req.tags)));
        }
        for group in req.groups.iter().filter(|g| !g.is_empty()) {
            let either: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Should, any_of(f.field, group)), (Occur::Should, any_of(f.facet, group))];
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(either))));
        }
        if req.created_from.is_some() || req.created_to.is_some() {
            let bound = |v: Option<i64>| v.map_or(Bound::Unbounded, |v| Bound::Included(Term::from_field_i64(f.created, v)));
            clauses.push((Occur::Must, Box::new(RangeQuery::new(bound(req.created_from), bound(req.created_to)))));
        }
        // Content of accounts that are not active (taken down, suspended, deactivated,
        // deleted) is hidden: its records' URIs start with `at://<did>/`.
        let hidden = self.hidden();
        if !clauses.is_empty() || !hidden.is_empty() {
            if clauses.is_empty() {
                clauses.push((Occur::Must, Box::new(AllQuery)));
            }
            for did in hidden.iter() {
                let pattern = format!("at://{}/.*", regex_escape(did));
                match RegexQuery::from_pattern(&pattern, f.uri) {
                    Ok(q) => clauses.push((Occur::MustNot, Box::new(q))),
                    Err(e) => tracing::warn!(did, error = %e, "cannot hide an account's documents"),
                }
            }
        }
        Ok(match clauses.len() {
            0 => Box::new(AllQuery),
            _ => Box::new(BooleanQuery::new(clauses)),
        })
    }

    /// Runs a search on the newest visible commit.
    ///
    /// # Errors
    /// [`ProjectionError::InvalidSearch`] for a query that names an unknown field;
    /// [`ProjectionError::Search`] when the index cannot be read.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults, ProjectionError> {
        Ok(self.search_counting(req, None)?.0)
    }

    /// Runs a search, and counts `facets` of every match in the same pass when some are
    /// asked for (a second pass would evaluate the query again).
    pub(super) fn search_counting(
        &self,
        req: &SearchRequest,
        facets: Option<FacetCollector>,
    ) -> Result<(SearchResults, Option<FacetTops>), ProjectionError> {
        let query = self.build_query(req)?;
        let searcher = self.reader.searcher();
        let limit = req.limit.max(1);
        let ((top, total), tops) = match (req.sort, req.cursor) {
            (SortOrder::Relevance, None) => match first_relevance_page(&searcher, query.as_ref(), limit + 1, &facets)? {
                (Some(found), tops) => (found, tops),
                (None, _) => keyed_top(&searcher, query.as_ref(), req.sort, None, limit + 1, &facets)?,
            },
            (sort, cursor) => keyed_top(&searcher, query.as_ref(), sort, cursor.map(|c| c.key), limit + 1, &facets)?,
        };
        let more = top.len() > limit;
        let docs = top.iter().take(limit).map(|(_, addr)| self.hit_doc(&searcher, *addr)).collect::<Result<Vec<_>, _>>()?;
        let wanted = docs.len();
        let hits = self.summaries(docs)?;
        let search = req.fingerprint();
        let next = if more { top.get(limit - 1).map(|(key, _)| SearchCursor { sort: req.sort, key: *key, search }) } else { None };
        Ok((SearchResults { partial: hits.len() < wanted, hits, next, total }, tops))
    }
}

/// How many of the words given to [`SearchIndex::like`] it looks up: the rarest.
const LIKE_WORDS: usize = 5;

impl SearchIndex {
    /// The `n` documents that best match any of `words` (say a title's significant words),
    /// by BM25 in all text, looking up only the [`LIKE_WORDS`] rarest of them: each one's
    /// URI and field codes, read from the index alone (its doc store and the `field` fast
    /// field; no summary is built, which was most of `getSimilar`'s time). The query is a
    /// bare union of terms, so tantivy's block-max WAND skips every document that cannot
    /// reach the top `n` instead of scoring each match; hidden accounts' documents are
    /// dropped after, so fewer than `n` may come back.
    ///
    /// What it found is kept per commit, as searches' answers are (`answers`): a page that
    /// shows an eprint's similar ones asks the same of the same commit again and again.
    ///
    /// # Errors
    /// [`ProjectionError::Search`] when the index cannot be read.
    pub fn like(&self, words: &[String], n: usize) -> Result<Arc<Vec<LikeHit>>, ProjectionError> {
        let f = self.fields;
        let mut tokens = Vec::new();
        let mut analyzer = self.index.tokenizer_for_field(f.all)?;
        for word in words {
            let mut stream = analyzer.token_stream(word);
            while stream.advance() {
                tokens.push(stream.token().text.clone());
            }
        }
        tokens.sort();
        tokens.dedup();
        let searcher = self.reader.searcher();
        let key = (searcher.generation().generation_id(), tokens, n);
        if let Some(hits) = self.likes.get(&key) {
            return Ok(hits);
        }
        let hits = Arc::new(self.like_terms(&searcher, &key.1, n)?);
        self.likes.keep(key, hits.clone());
        Ok(hits)
    }

    /// [`SearchIndex::like`] of analyzed `tokens`, on `searcher`.
    fn like_terms(&self, searcher: &Searcher, tokens: &[String], n: usize) -> Result<Vec<LikeHit>, ProjectionError> {
        let f = self.fields;
        // The rarest words say most about a text, and a common word's long posting list is
        // most of a union's cost: only the `LIKE_WORDS` rarest are looked up.
        let mut terms = Vec::with_capacity(tokens.len());
        for t in tokens {
            let term = Term::from_field_text(f.all, t);
            let df = searcher.doc_freq(&term)?;
            if df > 0 {
                terms.push((df, term));
            }
        }
        terms.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        terms.truncate(LIKE_WORDS);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|(_, term)| (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)) as Box<dyn Query>))
            .collect();
        let hidden = self.hidden();
        let top = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(n + hidden.len().min(n)))?;
        let mut columns = HashMap::new();
        let mut hits = Vec::with_capacity(n);
        for (_, addr) in top {
            let HitDoc { uri } = self.hit_doc(searcher, addr)?;
            if hidden.contains(super::indexer::repo_of(&uri)) || hits.len() == n {
                continue;
            }
            let column = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(searcher.segment_reader(addr.segment_ord).fast_fields().str("field")?)
                }
            };
            let mut fields = Vec::new();
            if let Some(column) = column.as_ref() {
                for ord in column.term_ords(addr.doc_id) {
                    let mut code = String::new();
                    column.ord_to_str(ord, &mut code).map_err(|e| ProjectionError::Search(format!("cannot read a field code: {e}")))?;
                    fields.push(code);
                }
            }
            hits.push(LikeHit { uri, fields });
        }
        Ok(hits)
    }

    /// The URI of the hit at `addr`.
    fn hit_doc(&self, searcher: &Searcher, addr: DocAddress) -> Result<HitDoc, ProjectionError> {
        let doc: TantivyDocument = searcher.doc(addr)?;
        let key = doc.get_first(self.fields.key).and_then(|v| v.as_bytes()).unwrap_or_default();
        Ok(HitDoc { uri: crate::eprints::uri_of_key(key).unwrap_or_default() })
    }

    /// The summaries of hits, in their order: the eprints model's, in one read of its
    /// record rows (as an eprint listing shows them). A hit the model no longer holds is
    /// left out: its eprint was deleted after the visible commit, and the next commit drops
    /// its document.
    fn summaries(&self, docs: Vec<HitDoc>) -> Result<Vec<String>, ProjectionError> {
        let uris: Vec<&str> = docs.iter().map(|d| d.uri.as_str()).collect();
        let summaries = crate::eprints::read::EprintsReader::new(self.shared.as_ref())?.summaries(&uris)?;
        Ok(summaries.into_iter().flatten().map(|s| s.as_str().to_owned()).collect())
    }
}

/// A hit as the doc store has it.
struct HitDoc {
    uri: String,
}

/// A document [`SearchIndex::like`] found: the eprint's URI and its field codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikeHit {
    /// The eprint's AT URI.
    pub uri: String,
    /// Its field codes (`cs.LG`), each once, in the index's order.
    pub fields: Vec<String>,
}

/// Hits in order with their sort keys, and how many documents match in all.
type Found = (Vec<(SortKey, DocAddress)>, usize);

/// The `n` best hits after `cursor` by full sort key, and the number of matches. Scores
/// every matching document, and counts them in the same pass.
fn keyed_top(
    searcher: &Searcher,
    query: &dyn Query,
    sort: SortOrder,
    cursor: Option<SortKey>,
    n: usize,
    facets: &Option<FacetCollector>,
) -> Result<(Found, Option<FacetTops>), ProjectionError> {
    let collector = TopDocs::with_limit(n).tweak_score(move |segment: &SegmentReader| {
        let fast = segment.fast_fields();
        let seq = fast.u64("seq").ok();
        let created = fast.i64("created").ok();
        let citations = fast.u64("citations").ok();
        let words = fast.u64("abstract_words").ok();
        move |doc: DocId, score: Score| -> (bool, SortKey) {
            let seq = seq.as_ref().and_then(|c| c.first(doc)).unwrap_or(0);
            let relevance = || score_bits(score * substance(words.as_ref().and_then(|c| c.first(doc))));
            let key = match sort {
                SortOrder::Relevance => (relevance(), 0, seq),
                SortOrder::Date => (order_i64(created.as_ref().and_then(|c| c.first(doc)).unwrap_or(0)), 0, seq),
                // Most cited first (the citations of each eprint the index keeps); among
                // equals, relevance.
                SortOrder::Citations => (citations.as_ref().and_then(|c| c.first(doc)).unwrap_or(0), relevance(), seq),
            };
            (cursor.is_none_or(|c| key < c), key)
        }
    });
    let (top, total, tops) = searcher.search(query, &(collector, Count, facets.clone()))?;
    Ok(((top.into_iter().filter(|((after, _), _)| *after).map(|((_, key), addr)| (key, addr)).collect(), total), tops))
}

/// Extra candidates fetched beyond the page, so that ties at the page's edge can be ordered
/// by the full sort key.
const TIE_MARGIN: usize = 16;

/// The first page by relevance, and the number of matches, the fast way: tantivy's top-k
/// collector keeps a plain score and drops documents below the page's threshold. Its ties
/// are ordered by document address, which a rebuild can change, so the candidates are
/// re-ordered by the full key; that is exact unless the score tie reaches the last
/// candidate, when this returns `None` and the caller orders everything by full key.
///
/// Counting in the same pass costs nothing extra: every query of the search box has a
/// required clause, so tantivy scores each match anyway (block-max WAND applies only to a
/// bare union of terms).
fn first_relevance_page(
    searcher: &Searcher,
    query: &dyn Query,
    n: usize,
    facets: &Option<FacetCollector>,
) -> Result<(Option<Found>, Option<FacetTops>), ProjectionError> {
    let collector = TopDocs::with_limit(n + TIE_MARGIN).tweak_score(|segment: &SegmentReader| {
        let words = segment.fast_fields().u64("abstract_words").ok();
        move |doc: DocId, score: Score| score * substance(words.as_ref().and_then(|c| c.first(doc)))
    });
    let (candidates, total, tops) = searcher.search(query, &(collector, Count, facets.clone()))?;
    let exhaustive = candidates.len() < n + TIE_MARGIN;
    // One `seq` column per segment, opened once: opening one decodes its header.
    let mut seqs: HashMap<u32, Option<Column<u64>>> = HashMap::new();
    let mut keyed = Vec::with_capacity(candidates.len());
    for (score, addr) in candidates {
        let column =
            seqs.entry(addr.segment_ord).or_insert_with(|| searcher.segment_reader(addr.segment_ord).fast_fields().u64("seq").ok());
        let seq = column.as_ref().and_then(|c| c.first(addr.doc_id)).unwrap_or(0);
        keyed.push(((score_bits(score), 0, seq), addr));
    }
    keyed.sort_by_key(|(key, _)| std::cmp::Reverse(*key));
    let floor = keyed.iter().map(|(k, _)| k.0).min();
    if !exhaustive && keyed.get(n - 1).map(|(k, _)| k.0) == floor {
        return Ok((None, tops));
    }
    keyed.truncate(n);
    Ok((Some((keyed, total)), tops))
}

/// How much of its text score a document keeps, by the words of its abstract: a bare title
/// (say a 1982 "Machine Translation" with no abstract) matches a short query as well as a
/// paper about it, and BM25's length normalization even favours it; half its score leaves it
/// below the substantive papers. From 40 words on, a document keeps its whole score. (An
/// index built before abstracts were counted has no column: every document keeps its score.)
fn substance(abstract_words: Option<u64>) -> f32 {
    match abstract_words {
        Some(words) => 0.5 + 0.5 * (words.min(SUBSTANTIVE_WORDS) as f32 / SUBSTANTIVE_WORDS as f32),
        None => 1.0,
    }
}

/// Abstract words from which a document keeps its whole text score ([`substance`]).
const SUBSTANTIVE_WORDS: u64 = 40;

/// How much an exact identifier match outweighs the words of a query.
const IDENTIFIER_BOOST: f32 = 1000.0;

fn score_bits(score: Score) -> u64 {
    u64::from(score.max(0.0).to_bits())
}

/// The fields a query may name (`title:word`, `authors:name`).
const ADDRESSABLE_FIELDS: &[&str] = &["title", "authors"];

/// Words before a colon that are no field but the scheme of something pasted: identifiers
/// and URLs (`arXiv:2507.10072`, `doi:10.1234/x`, `https://…`, `did:plc:…`).
const SCHEMES: &[&str] = &["arxiv", "doi", "http", "https", "did", "urn", "at", "isbn", "issn", "pmid", "pmc", "orcid"];

/// Refuses a query that names a field search does not have (`nosuchfield:x`): a field
/// name is a lower-case word at the start of a term, directly followed by a colon and a
/// word. (A colon followed by a space, or after something that is not a name, is
/// punctuation: see [`colons_as_punctuation`].)
fn check_field_names(query: &str) -> Result<(), ProjectionError> {
    let mut in_quotes = false;
    let mut word_start = 0;
    // Inside a pasted identifier or URL, up to the next space.
    let mut in_scheme = false;
    for (i, c) in query.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ':' if !in_quotes && !in_scheme => {
                let name = query[word_start..i].trim_start_matches(['+', '-', '(']);
                let names_a_word = query[i + 1..].starts_with(|c: char| !c.is_whitespace());
                // Field names are lower case: a capitalized word before a colon is a pasted
                // title's (`GovRelBench:A Benchmark…`), and is punctuation.
                let is_name = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                let lower = name.to_ascii_lowercase();
                in_scheme = SCHEMES.contains(&lower.as_str());
                if names_a_word && is_name && !ADDRESSABLE_FIELDS.contains(&name) && !in_scheme {
                    return Err(ProjectionError::InvalidSearch(format!(
                        "the query names an unknown field {name:?} (fields: {})",
                        ADDRESSABLE_FIELDS.join(", ")
                    )));
                }
                word_start = i + 1;
            }
            c if c.is_whitespace() => {
                word_start = i + c.len_utf8();
                in_scheme = false;
            }
            _ => {}
        }
    }
    Ok(())
}

/// A query that is not valid syntax, as the plain words it holds: every character that is
/// neither a letter, a digit nor a space becomes a space.
fn as_plain_words(query: &str) -> String {
    query.chars().map(|c| if c.is_alphanumeric() || c.is_whitespace() { c } else { ' ' }).collect()
}

/// Turns every colon outside quotes that does not follow an [`ADDRESSABLE_FIELDS`] name
/// (and precede a word) into a space. tantivy reads `word:` as a field name and the lenient
/// parser drops the clause of an unknown one, so a pasted title such as `SADL: What to
/// Ignore?` searched only `what to ignore`, matching nearly everything.
fn colons_as_punctuation(query: &str) -> std::borrow::Cow<'_, str> {
    if !query.contains(':') {
        return query.into();
    }
    let mut out = String::with_capacity(query.len());
    let mut in_quotes = false;
    let mut word_start = 0;
    for (i, c) in query.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ':' if !in_quotes => {
                let name = query[word_start..i].trim_start_matches(['+', '-', '(']);
                let names_a_word = query[i + 1..].starts_with(|c: char| !c.is_whitespace());
                if !(names_a_word && ADDRESSABLE_FIELDS.contains(&name)) {
                    out.push(' ');
                    word_start = i + 1;
                    continue;
                }
            }
            c if c.is_whitespace() => word_start = i + c.len_utf8(),
            _ => {}
        }
        out.push(c);
    }
    out.into()
}

/// Escapes the characters of a DID that a regular expression would read as operators.
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{as_plain_words, check_field_names, colons_as_punctuation};

    #[test]
    fn unknown_fields_are_refused_and_pasted_identifiers_are_not() {
        for bad in ["nosuchfield:x", "graph -abstract:x", "(venue:neurips)"] {
            let e = check_field_names(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{bad}: {e}");
        }
        for ok in [
            "title:graph",
            "SADL: What to Ignore?",
            "arXiv:2507.10072",
            "doi:10.1/x",
            "https://doi.org/10.1/x",
            "\"a:b\"",
            "10:30",
            "did:plc:abc",
        ] {
            check_field_names(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn invalid_syntax_becomes_plain_words() {
        assert_eq!(as_plain_words("\\text{M}^2 of ((x"), " text M  2 of   x");
    }

    #[test]
    fn colons_name_a_field_only_before_a_word_and_after_a_field_name() {
        let cases = [
            ("SADL: What to Ignore?", "SADL  What to Ignore?"),
            ("Learning to Deny:", "Learning to Deny "),
            ("title:graph neural", "title:graph neural"),
            ("-authors:smith graph", "-authors:smith graph"),
            ("(title:\"graph neural\" OR x)", "(title:\"graph neural\" OR x)"),
            ("title: graph", "title  graph"),
            ("abstract: graph", "abstract  graph"),
            ("\"Re: a study\" of did:plc:abc", "\"Re: a study\" of did plc abc"),
            ("no colon here", "no colon here"),
            ("Émile:Été", "Émile Été"),
        ];
        for (query, expected) in cases {
            assert_eq!(colons_as_punctuation(query), expected, "{query}");
        }
    }
}
