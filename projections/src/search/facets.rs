//! What a search counts and marks beside its hits: facet counts over every match (field
//! codes, years, authors, tags) and the matched words of each hit.

use std::collections::HashMap;
use std::sync::Arc;

use quick_cache::sync::Cache;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::index::SegmentId;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use super::query::SearchRequest;
use super::SearchIndex;
use crate::ProjectionError;

/// A facet of a search: counts of the matching eprints per value of one property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Facet {
    /// Field codes.
    Fields,
    /// Years of `createdAt`.
    Year,
    /// Author DIDs.
    Author,
    /// Normalized tags.
    Tags,
    /// Facet and topic node codes (`facetUris`, `topicUris`).
    Facet,
}

impl Facet {
    /// The facet of a name (`fields`, `year`, `author`, `tags`).
    pub fn parse(name: &str) -> Option<Facet> {
        match name {
            "fields" | "field" => Some(Facet::Fields),
            "year" => Some(Facet::Year),
            "author" | "authors" => Some(Facet::Author),
            "tags" | "tag" => Some(Facet::Tags),
            "facet" | "topics" => Some(Facet::Facet),
            _ => None,
        }
    }

    /// The facet's name in answers.
    pub fn name(self) -> &'static str {
        match self {
            Facet::Fields => "fields",
            Facet::Year => "year",
            Facet::Author => "author",
            Facet::Tags => "tags",
            Facet::Facet => "facet",
        }
    }
}

/// How many values a facet lists at most.
pub const FACET_SIZE: u32 = 20;

/// The matched words of one hit, marked with `<mark>` in HTML-escaped text.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Highlight {
    /// The hit's URI.
    pub uri: String,
    /// The title, with the matched words marked.
    pub title: String,
    /// The passage of the abstract (at most 300 characters) with the most matched words,
    /// marked; empty when no word of the abstract matched.
    #[serde(rename = "abstract")]
    pub abstract_text: String,
}

impl SearchIndex {
    /// The facet counts of the eprints `req` matches (its page and order aside):
    /// `{<facet>: [{value, count}]}`, the [`FACET_SIZE`] most frequent values first (ties by
    /// value; years then newest first), exact: counted over every match from the fast
    /// fields' term ordinals ([`FacetCollector`]), without scoring.
    pub fn facets(&self, req: &SearchRequest, facets: &[Facet]) -> Result<serde_json::Value, ProjectionError> {
        let query = self.build_query(req)?;
        let tops = self.reader.searcher().search(query.as_ref(), &self.facet_collector(facets))?;
        Ok(facets_json(facets, tops))
    }

    /// What counts `facets` over every match of a search.
    pub(super) fn facet_collector(&self, facets: &[Facet]) -> FacetCollector {
        FacetCollector { facets: facets.to_vec(), values: self.facet_values.clone() }
    }

    /// The matched words of each hit (its stored summary JSON) in its title and abstract.
    pub fn highlights(&self, req: &SearchRequest, hits: &[String]) -> Result<Vec<Highlight>, ProjectionError> {
        use tantivy::snippet::SnippetGenerator;
        let query = self.build_query(req)?;
        let searcher = self.reader.searcher();
        let mut titles = SnippetGenerator::create(&searcher, query.as_ref(), self.fields.all)?;
        titles.set_max_num_chars(1000);
        let mut abstracts = SnippetGenerator::create(&searcher, query.as_ref(), self.fields.all)?;
        abstracts.set_max_num_chars(300);
        let mark = |mut snippet: tantivy::snippet::Snippet| {
            snippet.set_snippet_prefix_postfix("<mark>", "</mark>");
            snippet.to_html()
        };
        Ok(hits
            .iter()
            .map(|hit| {
                let summary: serde_json::Value = serde_json::from_str(hit).unwrap_or_default();
                let text = |k: &str| summary.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
                let title = text("title");
                let mut title_html = mark(titles.snippet(&title));
                if title_html.is_empty() {
                    title_html = mark(tantivy::snippet::Snippet::empty());
                    title_html.push_str(&html_escape(&title));
                }
                Highlight { uri: text("uri"), title: title_html, abstract_text: mark(abstracts.snippet(&text("abstract"))) }
            })
            .collect())
    }
}

/// `{<facet>: [{value, count}]}` of each facet's most frequent values; years newest first.
pub(super) fn facets_json(facets: &[Facet], tops: FacetTops) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for (facet, mut top) in facets.iter().zip(tops) {
        if *facet == Facet::Year {
            top.sort_by(|a, b| b.0.cmp(&a.0));
        }
        let values: Vec<serde_json::Value> = top
            .into_iter()
            .map(|(value, count)| match facet {
                Facet::Year => serde_json::json!({"value": value.parse::<u64>().unwrap_or_default(), "count": count}),
                _ => serde_json::json!({"value": value, "count": count}),
            })
            .collect();
        out.insert(facet.name().into(), serde_json::Value::Array(values));
    }
    serde_json::Value::Object(out)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// The fast field a facet counts.
fn fast_field(facet: Facet) -> &'static str {
    match facet {
        Facet::Fields => "field",
        Facet::Year => "year",
        Facet::Author => "author_did",
        Facet::Tags => "tag",
        Facet::Facet => "facet",
    }
}

/// Counts, per facet, how many matching documents hold each value, and keeps the
/// [`FACET_SIZE`] most frequent. In each segment a count per term ordinal of the facet's
/// fast field ([`OrdCounts`]), so a match costs an append or an increment per value it
/// holds; only the values that can rank are turned into text ([`top_terms`]).
#[derive(Clone)]
pub(super) struct FacetCollector {
    facets: Vec<Facet>,
    values: Arc<FacetValues>,
}

/// Facet values turned into text, by segment, field and term ordinal, and segments' facet
/// terms by hash ([`TermsByHash`]): a segment never changes, so an entry never goes stale;
/// an index version keeps one cache of each for its life.
pub(super) struct FacetValues {
    texts: Cache<(SegmentId, &'static str, u64), Arc<str>>,
    by_hash: Cache<(SegmentId, &'static str), Arc<TermsByHash>, TermsByHashWeight>,
}

impl FacetValues {
    /// Keeps `capacity` values as text and about `by_hash_bytes` of terms by hash.
    pub(super) fn new(capacity: usize, by_hash_bytes: u64) -> FacetValues {
        FacetValues { texts: Cache::new(capacity), by_hash: Cache::with_weighter(16, by_hash_bytes.max(1), TermsByHashWeight) }
    }

    /// The text of term `ord` of `field`'s column in `segment`.
    fn text(&self, segment: SegmentId, field: &'static str, column: &StrColumn, ord: u64) -> tantivy::Result<Arc<str>> {
        self.texts.get_or_insert_with(&(segment, field, ord), || {
            let mut out = String::new();
            column.ord_to_str(ord, &mut out)?;
            Ok::<_, tantivy::TantivyError>(Arc::from(out))
        })
    }

    /// The terms of `s`'s column by hash, read from its dictionary the first time.
    fn by_hash(&self, s: &SegmentTerms) -> tantivy::Result<Arc<TermsByHash>> {
        self.by_hash.get_or_insert_with(&(s.segment, s.field), || TermsByHash::read(&s.column).map(Arc::new))
    }
}

/// Every term of a segment's facet column by a 64-bit hash of its text, to find the
/// ordinals of many values without reading the dictionary (each block of which is
/// decompressed to be read). A value found here is another term only if its hash is a
/// term's and it is not in the dictionary: whoever takes an ordinal from here for a value
/// that ranks checks its text.
struct TermsByHash {
    /// `(hash, ordinal)` of each term whose hash no other term of the column shares, by hash.
    unique: Vec<(u64, u32)>,
    /// The hashes several terms share: their values are looked up in the dictionary.
    shared: std::collections::HashSet<u64>,
}

/// Where a value is in a [`TermsByHash`].
enum HashHit {
    /// The ordinal of the one term with the value's hash.
    Ord(u64),
    /// No term has its hash: the dictionary does not hold it.
    Absent,
    /// Several terms have its hash.
    Shared,
}

impl TermsByHash {
    fn read(column: &StrColumn) -> tantivy::Result<TermsByHash> {
        let mut all = Vec::with_capacity(column.num_terms());
        let mut stream = column.dictionary().stream()?;
        while stream.advance() {
            all.push((term_hash(stream.key()), stream.term_ord() as u32));
        }
        all.sort_unstable();
        let mut unique = Vec::with_capacity(all.len());
        let mut shared = std::collections::HashSet::new();
        for run in all.chunk_by(|a, b| a.0 == b.0) {
            if run.len() == 1 {
                unique.push(run[0]);
            } else {
                shared.insert(run[0].0);
            }
        }
        Ok(TermsByHash { unique, shared })
    }

    fn find(&self, value: &[u8]) -> HashHit {
        let hash = term_hash(value);
        match self.unique.binary_search_by_key(&hash, |(h, _)| *h) {
            Ok(i) => HashHit::Ord(u64::from(self.unique[i].1)),
            Err(_) if self.shared.contains(&hash) => HashHit::Shared,
            Err(_) => HashHit::Absent,
        }
    }
}

fn term_hash(term: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(term)
}

#[derive(Clone)]
struct TermsByHashWeight;

impl quick_cache::Weighter<(SegmentId, &'static str), Arc<TermsByHash>> for TermsByHashWeight {
    fn weight(&self, _: &(SegmentId, &'static str), terms: &Arc<TermsByHash>) -> u64 {
        (terms.unique.len() * 12 + terms.shared.len() * 16 + 64) as u64
    }
}

/// Per facet, its most frequent values with their counts, most frequent first, ties by value
/// (years as decimal text).
pub(super) type FacetTops = Vec<Vec<(String, u64)>>;

/// One facet's counts in one segment.
pub(super) enum SegmentCounts {
    /// A text field: counts by term ordinal.
    Terms { segment: SegmentId, field: &'static str, column: StrColumn, counts: OrdCounts },
    /// The year: counts by value.
    Years { column: Column<u64>, counts: HashMap<u64, u32> },
    /// The field holds no value in this segment.
    Empty,
}

pub(super) struct FacetSegmentCollector {
    counters: Vec<SegmentCounts>,
}

impl Collector for FacetCollector {
    type Fruit = FacetTops;
    type Child = FacetSegmentCollector;

    fn for_segment(&self, _: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<FacetSegmentCollector> {
        let fast = segment.fast_fields();
        let counters = self
            .facets
            .iter()
            .map(|facet| {
                Ok(match facet {
                    Facet::Year => fast
                        .column_opt::<u64>(fast_field(*facet))?
                        .map_or(SegmentCounts::Empty, |column| SegmentCounts::Years { column, counts: HashMap::new() }),
                    _ => fast.str(fast_field(*facet))?.map_or(SegmentCounts::Empty, |column| {
                        let counts = OrdCounts::new(column.num_terms());
                        SegmentCounts::Terms { segment: segment.segment_id(), field: fast_field(*facet), column, counts }
                    }),
                })
            })
            .collect::<tantivy::Result<_>>()?;
        Ok(FacetSegmentCollector { counters })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, segments: Vec<Vec<SegmentCounts>>) -> tantivy::Result<FacetTops> {
        let mut per_facet: Vec<Vec<SegmentCounts>> = self.facets.iter().map(|_| Vec::new()).collect();
        for segment in segments {
            for (into, counts) in per_facet.iter_mut().zip(segment) {
                into.push(counts);
            }
        }
        per_facet.into_iter().map(|segments| top_values(segments, FACET_SIZE as usize, &self.values)).collect()
    }
}

impl SegmentCollector for FacetSegmentCollector {
    type Fruit = Vec<SegmentCounts>;

    fn collect(&mut self, doc: DocId, _: Score) {
        for counter in &mut self.counters {
            match counter {
                SegmentCounts::Terms { column, counts, .. } => {
                    for ord in column.term_ords(doc) {
                        counts.add(ord);
                    }
                }
                SegmentCounts::Years { column, counts } => {
                    if let Some(year) = column.first(doc) {
                        *counts.entry(year).or_default() += 1;
                    }
                }
                SegmentCounts::Empty => {}
            }
        }
    }

    fn harvest(self) -> Vec<SegmentCounts> {
        self.counters
    }
}

/// The counts of one segment's term ordinals. Sparse while few ordinals were seen (each
/// appended, counted once sorted): a search matching a few thousand eprints then costs in
/// proportion to them, not to a dictionary of some 200,000 author DIDs. Dense (an array as
/// long as the dictionary) once they are many.
pub(super) enum OrdCounts {
    Sparse { ords: Vec<u32>, terms: usize },
    Dense(Vec<u32>),
}

impl OrdCounts {
    fn new(terms: usize) -> OrdCounts {
        OrdCounts::Sparse { ords: Vec::new(), terms }
    }

    fn add(&mut self, ord: u64) {
        match self {
            OrdCounts::Sparse { ords, terms } => {
                ords.push(ord as u32);
                if ords.len() > (*terms / 8).max(1024) {
                    let mut dense = vec![0u32; *terms];
                    for o in ords.iter() {
                        dense[*o as usize] += 1;
                    }
                    *self = OrdCounts::Dense(dense);
                }
            }
            OrdCounts::Dense(counts) => counts[ord as usize] += 1,
        }
    }

    /// The `(ordinal, count)` of every ordinal seen, by ordinal.
    fn into_dense(self) -> Vec<(u64, u32)> {
        match self {
            OrdCounts::Dense(counts) => counts.into_iter().enumerate().filter(|(_, n)| *n > 0).map(|(o, n)| (o as u64, n)).collect(),
            OrdCounts::Sparse { mut ords, .. } => {
                ords.sort_unstable();
                let mut out: Vec<(u64, u32)> = Vec::new();
                for o in ords {
                    match out.last_mut() {
                        Some((last, n)) if *last == u64::from(o) => *n += 1,
                        _ => out.push((u64::from(o), 1)),
                    }
                }
                out
            }
        }
    }
}

/// One segment's counts of a text facet, by ordinal.
struct SegmentTerms {
    segment: SegmentId,
    field: &'static str,
    column: StrColumn,
    /// `(ordinal, count)` of every ordinal counted, by ordinal.
    counts: Vec<(u64, u32)>,
}

/// The `k` most frequent values of one facet over its segments' counts, ties by value.
fn top_values(segments: Vec<SegmentCounts>, k: usize, values: &FacetValues) -> tantivy::Result<Vec<(String, u64)>> {
    let mut years: HashMap<u64, u64> = HashMap::new();
    let mut terms = Vec::new();
    for counts in segments {
        match counts {
            SegmentCounts::Years { counts, .. } => {
                for (year, n) in counts {
                    *years.entry(year).or_default() += u64::from(n);
                }
            }
            SegmentCounts::Terms { segment, field, column, counts } => {
                terms.push(SegmentTerms { segment, field, column, counts: counts.into_dense() })
            }
            SegmentCounts::Empty => {}
        }
    }
    let mut top: Vec<(String, u64)> =
        if terms.is_empty() { years.into_iter().map(|(y, n)| (y.to_string(), n)).collect() } else { top_terms(&terms, k, values)? };
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(k);
    Ok(top)
}

/// Up to how many values are looked up in a dictionary one by one (each lookup reads and
/// decompresses a block); more are found in one pass over it.
const LOOKUPS_ONE_BY_ONE: usize = 64;

/// The `k` most frequent terms over segments' counts by ordinal, exactly, turning few of
/// the largest segment's ordinals into text and looking few terms up in its dictionary.
///
/// The segment with the most counted terms is the primary; every counted term of the others
/// is turned into text with its count summed over them ([`every_term`]). The primary's `k`
/// best (by count, then ordinal: a dictionary's ordinals follow its terms' order) get their
/// totals; any other term counts at most `bound` in the primary (the next best's count).
/// A term of the other segments whose count there plus `bound` is below the `k`-th best
/// total known so far cannot rank: only the rest are looked up in the primary's dictionary
/// ([`ords_of`]). A term of the primary alone outside its `k` best ranks below all of them.
/// A search over a large segment and a few small ones, as a live node holds its index,
/// looks up none or a handful. (Looking the candidates of every segment up in every other,
/// a block read and decompressed per lookup, made a search over seven segments a hundred
/// times slower; looking every term of the small segments up made a broad search over one
/// large and four small segments four times slower than over one.)
fn top_terms(segments: &[SegmentTerms], k: usize, values: &FacetValues) -> tantivy::Result<Vec<(String, u64)>> {
    let text = |s: &SegmentTerms, ord: u64| -> tantivy::Result<String> { Ok(values.text(s.segment, s.field, &s.column, ord)?.to_string()) };
    let Some(primary) = segments.iter().enumerate().max_by_key(|(_, s)| s.counts.len()).map(|(i, _)| i) else {
        return Ok(Vec::new());
    };
    let others: Vec<&SegmentTerms> = segments.iter().enumerate().filter(|(i, _)| *i != primary).map(|(_, s)| s).collect();
    let primary = &segments[primary];
    let by_rank = |a: &(u64, u32), b: &(u64, u32)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    let mut best = primary.counts.clone();
    if best.len() > k + 1 {
        best.select_nth_unstable_by(k, by_rank);
        best.truncate(k + 1);
    }
    best.sort_unstable_by(by_rank);
    // No term outside the primary's best counts more in it than `bound`.
    let bound = if best.len() > k { u64::from(best[k].1) } else { 0 };
    best.truncate(k);
    let best: Vec<(String, u64)> =
        best.into_iter().map(|(ord, n)| Ok((text(primary, ord)?, u64::from(n)))).collect::<tantivy::Result<_>>()?;
    let count = |ord: Option<u64>| -> u64 {
        ord.and_then(|o| primary.counts.binary_search_by_key(&o, |(o, _)| *o).ok()).map_or(0, |i| u64::from(primary.counts[i].1))
    };
    let exactly = |sorted: &[&str]| -> tantivy::Result<Vec<u64>> {
        Ok(ords_of(primary, sorted.iter().map(|v| v.as_bytes()))?.into_iter().map(count).collect())
    };
    let elsewhere = every_term(&others)?;
    // Many values are found by hash; those that rank have their text checked, and if one
    // is another term's (a hash a term shares with a value it does not hold), all of them
    // are looked up again in the dictionary.
    let mut found_by_hash: HashMap<String, u64> = HashMap::new();
    let by_hash = |sorted: &[&str]| -> tantivy::Result<Vec<u64>> {
        if sorted.len() <= LOOKUPS_ONE_BY_ONE {
            return exactly(sorted);
        }
        let terms = values.by_hash(primary)?;
        let dictionary = primary.column.dictionary();
        sorted
            .iter()
            .map(|v| {
                Ok(match terms.find(v.as_bytes()) {
                    HashHit::Ord(ord) => {
                        found_by_hash.insert((*v).to_owned(), ord);
                        count(Some(ord))
                    }
                    HashHit::Absent => 0,
                    HashHit::Shared => count(dictionary.term_ord(v)?),
                })
            })
            .collect()
    };
    let mut top = candidates(best.clone(), bound, elsewhere.clone(), k, by_hash)?;
    top.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(k);
    for (value, _) in &top {
        if let Some(ord) = found_by_hash.get(value) {
            if *text(primary, *ord)? != **value {
                return candidates(best, bound, elsewhere, k, exactly);
            }
        }
    }
    Ok(top)
}

/// The values that can rank among the `k` best, with their totals: the primary's `k` best
/// (`best`: value and count there) with what the other segments add, and those of the other
/// segments' values (`elsewhere`: value and count over them) that can reach the `k`-th best
/// total known, with their counts in the primary looked up (`in_primary`, sorted values).
/// `bound` is the most any value outside `best` counts in the primary.
fn candidates(
    best: Vec<(String, u64)>,
    bound: u64,
    mut elsewhere: HashMap<String, u64>,
    k: usize,
    in_primary: impl FnOnce(&[&str]) -> tantivy::Result<Vec<u64>>,
) -> tantivy::Result<Vec<(String, u64)>> {
    let mut totals: HashMap<String, u64> = HashMap::with_capacity(k);
    for (value, n) in best {
        let more = elsewhere.remove(&value).unwrap_or_default();
        totals.insert(value, n + more);
    }
    if bound == 0 {
        // The primary counted no value but its best: the others' totals are exact.
        totals.extend(elsewhere);
        return Ok(totals.into_iter().collect());
    }
    // Each total is at least what is known of it: the `k`-th best of these is a floor.
    let mut known: Vec<u64> = totals.values().chain(elsewhere.values()).copied().collect();
    let floor = if known.len() >= k && k > 0 {
        known.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        known[k - 1]
    } else {
        0
    };
    // A value reaching the floor exactly may still rank by its text: it is looked up too.
    let mut unsure: Vec<(String, u64)> = elsewhere.into_iter().filter(|(_, n)| n + bound >= floor).collect();
    unsure.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let counts = in_primary(&unsure.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>())?;
    for ((_, total), n) in unsure.iter_mut().zip(counts) {
        *total += n;
    }
    totals.extend(unsure);
    Ok(totals.into_iter().collect())
}

/// The ordinal in `s`'s dictionary of each of `sorted` (in byte order), if it holds it:
/// one lookup each when they are few, else one pass over the dictionary from the first.
fn ords_of<'v>(s: &SegmentTerms, sorted: impl ExactSizeIterator<Item = &'v [u8]>) -> tantivy::Result<Vec<Option<u64>>> {
    let dictionary = s.column.dictionary();
    if sorted.len() <= LOOKUPS_ONE_BY_ONE {
        return sorted.map(|v| Ok(dictionary.term_ord(v)?)).collect();
    }
    let mut out = Vec::with_capacity(sorted.len());
    let mut sorted = sorted.peekable();
    let Some(first) = sorted.peek() else { return Ok(out) };
    let mut stream = dictionary.range().ge(first).into_stream()?;
    let mut more = stream.advance();
    for value in sorted {
        while more && stream.key() < value {
            more = stream.advance();
        }
        out.push((more && stream.key() == value).then(|| stream.term_ord()));
    }
    Ok(out)
}

/// Every counted term of `segments` with its count summed over them: each segment's
/// ordinals (sorted) turned into text in one pass over its dictionary, each block read and
/// decompressed once (turned into text one by one, each reads its block again).
fn every_term(segments: &[&SegmentTerms]) -> tantivy::Result<HashMap<String, u64>> {
    let mut all: HashMap<String, u64> = HashMap::new();
    for s in segments {
        let mut counts = s.counts.iter().map(|(_, n)| u64::from(*n));
        s.column.dictionary().sorted_ords_to_term_cb(s.counts.iter().map(|(ord, _)| *ord), |term| {
            let n = counts.next().unwrap_or_default();
            *all.entry(String::from_utf8_lossy(term).into_owned()).or_default() += n;
            Ok(())
        })?;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random counts over few values (ties everywhere): the candidates' `k` best are the
    /// `k` best of the sums.
    #[test]
    fn candidates_hold_the_k_best_of_the_sums() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..20_000 {
            let k = 1 + next(6) as usize;
            let values = 1 + next(16);
            let mut primary: Vec<(String, u64)> = Vec::new();
            let mut elsewhere: HashMap<String, u64> = HashMap::new();
            for v in 0..values {
                let value = format!("v{v:02}");
                match next(3) {
                    0 => primary.push((value, 1 + next(4))),
                    1 => drop(elsewhere.insert(value, 1 + next(4))),
                    _ => {
                        primary.push((value.clone(), 1 + next(4)));
                        elsewhere.insert(value, 1 + next(4));
                    }
                }
            }
            let rank = |a: &(String, u64), b: &(String, u64)| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0));
            let mut sums: HashMap<String, u64> = elsewhere.clone();
            for (v, n) in &primary {
                *sums.entry(v.clone()).or_default() += n;
            }
            let mut expected: Vec<(String, u64)> = sums.into_iter().collect();
            expected.sort_by(rank);
            expected.truncate(k);
            let mut best = primary.clone();
            best.sort_by(rank);
            let bound = best.get(k).map_or(0, |(_, n)| *n);
            best.truncate(k);
            let lookup = |sorted: &[&str]| Ok(sorted.iter().map(|v| primary.iter().find(|(p, _)| p == v).map_or(0, |(_, n)| *n)).collect());
            let mut found = candidates(best, bound, elsewhere.clone(), k, lookup).unwrap();
            found.sort_by(rank);
            found.truncate(k);
            assert_eq!(found, expected, "k {k}, primary {primary:?}, elsewhere {elsewhere:?}");
        }
    }
}
