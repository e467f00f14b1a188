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

    /// As [`SearchIndex::facets`], reading every term from the segments' dictionaries, as
    /// for columns with too many terms to hold decoded: the path large indexes take, for
    /// tests and comparisons.
    pub fn facets_from_dictionaries(&self, req: &SearchRequest, facets: &[Facet]) -> Result<serde_json::Value, ProjectionError> {
        let query = self.build_query(req)?;
        let collector = FacetCollector { facets: facets.to_vec(), values: Arc::new(FacetValues::new(1_000, 0)) };
        Ok(facets_json(facets, self.reader.searcher().search(query.as_ref(), &collector)?))
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
/// terms held decoded ([`DecodedTerms`]): a segment never changes, so an entry never goes
/// stale; an index version keeps one cache of each for its life.
pub(super) struct FacetValues {
    texts: Cache<(SegmentId, &'static str, u64), Arc<str>>,
    decoded: Cache<(SegmentId, &'static str), Arc<DecodedTerms>, DecodedWeight>,
    /// The most terms a column may have to be decoded: a quarter of the cache's bytes.
    decoded_terms_max: usize,
}

impl FacetValues {
    /// Keeps `capacity` values as text and about `decoded_bytes` of decoded terms.
    pub(super) fn new(capacity: usize, decoded_bytes: u64) -> FacetValues {
        FacetValues {
            texts: Cache::new(capacity),
            decoded: Cache::with_weighter(64, decoded_bytes.max(1), DecodedWeight),
            decoded_terms_max: (decoded_bytes / 4 / DECODED_BYTES_A_TERM) as usize,
        }
    }

    /// The text of term `ord` of `s`'s column.
    fn text(&self, s: &SegmentTerms, ord: u64) -> tantivy::Result<String> {
        if let Some(terms) = &s.decoded {
            return Ok(terms.text(ord).to_owned());
        }
        let text = self.texts.get_or_insert_with(&(s.segment, s.field, ord), || {
            let mut out = String::new();
            s.column.ord_to_str(ord, &mut out)?;
            Ok::<_, tantivy::TantivyError>(Arc::<str>::from(out))
        })?;
        Ok(text.to_string())
    }

    /// The terms of `field`'s `column` in `segment` decoded, read from its dictionary the
    /// first time; `None` when the column has too many terms to hold.
    fn decoded(&self, segment: SegmentId, field: &'static str, column: &StrColumn) -> tantivy::Result<Option<Arc<DecodedTerms>>> {
        if column.num_terms() > self.decoded_terms_max {
            return Ok(None);
        }
        self.decoded.get_or_insert_with(&(segment, field), || DecodedTerms::read(column).map(Arc::new)).map(Some)
    }
}

/// About how many bytes a decoded term takes (a DID of 32 bytes, its end, its hash and
/// ordinal), to decide which columns to decode before reading them.
const DECODED_BYTES_A_TERM: u64 = 48;

/// Every term of a segment's facet column, decoded once: its text by ordinal, and ordinals
/// by a 64-bit hash of the text. Reading a term from the dictionary decompresses its block
/// (zstd), which made turning counted ordinals into text, and finding many values'
/// ordinals, most of a faceted search's time.
struct DecodedTerms {
    /// The terms' bytes, in ordinal order.
    bytes: Vec<u8>,
    /// Where each term ends in `bytes`.
    ends: Vec<u32>,
    /// `(hash, ordinal)` of every term, by hash (terms sharing a hash are told apart by text).
    by_hash: Vec<(u64, u32)>,
}

impl DecodedTerms {
    fn read(column: &StrColumn) -> tantivy::Result<DecodedTerms> {
        let n = column.num_terms();
        let (mut bytes, mut ends, mut by_hash) = (Vec::new(), Vec::with_capacity(n), Vec::with_capacity(n));
        let mut stream = column.dictionary().stream()?;
        while stream.advance() {
            bytes.extend_from_slice(stream.key());
            ends.push(bytes.len() as u32);
            by_hash.push((term_hash(stream.key()), stream.term_ord() as u32));
        }
        by_hash.sort_unstable();
        bytes.shrink_to_fit();
        Ok(DecodedTerms { bytes, ends, by_hash })
    }

    fn bytes_of(&self, ord: u64) -> &[u8] {
        let i = ord as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// The text of term `ord`.
    fn text(&self, ord: u64) -> &str {
        std::str::from_utf8(self.bytes_of(ord)).unwrap_or_default()
    }

    /// The ordinal of `value`, if the column holds it.
    fn ord(&self, value: &[u8]) -> Option<u64> {
        let hash = term_hash(value);
        let first = self.by_hash.partition_point(|(h, _)| *h < hash);
        self.by_hash[first..]
            .iter()
            .take_while(|(h, _)| *h == hash)
            .map(|(_, ord)| u64::from(*ord))
            .find(|ord| self.bytes_of(*ord) == value)
    }
}

fn term_hash(term: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(term)
}

#[derive(Clone)]
struct DecodedWeight;

impl quick_cache::Weighter<(SegmentId, &'static str), Arc<DecodedTerms>> for DecodedWeight {
    fn weight(&self, _: &(SegmentId, &'static str), terms: &Arc<DecodedTerms>) -> u64 {
        (terms.bytes.len() + terms.ends.len() * 4 + terms.by_hash.len() * 16 + 64) as u64
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
    Dense { counts: Vec<u32>, distinct: usize },
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
                    let mut counts = vec![0u32; *terms];
                    let mut distinct = 0;
                    for o in ords.iter() {
                        let n = &mut counts[*o as usize];
                        distinct += usize::from(*n == 0);
                        *n += 1;
                    }
                    *self = OrdCounts::Dense { counts, distinct };
                }
            }
            OrdCounts::Dense { counts, distinct } => {
                let n = &mut counts[ord as usize];
                *distinct += usize::from(*n == 0);
                *n += 1;
            }
        }
    }

    /// The counts, done: sparse ones sorted and summed by ordinal, dense ones as they are.
    fn done(self) -> Counted {
        match self {
            OrdCounts::Dense { counts, distinct } => Counted::Dense { counts, distinct },
            OrdCounts::Sparse { mut ords, .. } => {
                ords.sort_unstable();
                let mut out: Vec<(u64, u32)> = Vec::new();
                for o in ords {
                    match out.last_mut() {
                        Some((last, n)) if *last == u64::from(o) => *n += 1,
                        _ => out.push((u64::from(o), 1)),
                    }
                }
                Counted::Sorted(out)
            }
        }
    }
}

/// A segment's counts by term ordinal, done counting.
enum Counted {
    /// `(ordinal, count)` of each ordinal counted, by ordinal.
    Sorted(Vec<(u64, u32)>),
    /// A count per ordinal of the dictionary, and how many are not 0.
    Dense { counts: Vec<u32>, distinct: usize },
}

impl Counted {
    /// How many ordinals were counted.
    fn distinct(&self) -> usize {
        match self {
            Counted::Sorted(counts) => counts.len(),
            Counted::Dense { distinct, .. } => *distinct,
        }
    }

    /// `(ordinal, count)` of each ordinal counted, by ordinal.
    fn iter(&self) -> Box<dyn Iterator<Item = (u64, u32)> + '_> {
        match self {
            Counted::Sorted(counts) => Box::new(counts.iter().copied()),
            Counted::Dense { counts, .. } => Box::new(counts.iter().enumerate().filter(|(_, n)| **n > 0).map(|(o, n)| (o as u64, *n))),
        }
    }

    /// The count of `ord`.
    fn get(&self, ord: u64) -> u32 {
        match self {
            Counted::Sorted(counts) => counts.binary_search_by_key(&ord, |(o, _)| *o).map_or(0, |i| counts[i].1),
            Counted::Dense { counts, .. } => counts.get(ord as usize).copied().unwrap_or(0),
        }
    }
}

/// One segment's counts of a text facet, by ordinal.
struct SegmentTerms {
    segment: SegmentId,
    field: &'static str,
    column: StrColumn,
    /// Its terms, when the column is small enough to hold them decoded.
    decoded: Option<Arc<DecodedTerms>>,
    counts: Counted,
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
                let counts = counts.done();
                if counts.distinct() == 0 {
                    continue;
                }
                let decoded = values.decoded(segment, field, &column)?;
                terms.push(SegmentTerms { segment, field, column, decoded, counts })
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
/// the largest segment's ordinals into text and looking few terms up in it.
///
/// The segment with the most counted terms is the primary; every counted term of the others
/// is turned into text with its count summed over them ([`every_term`]). The primary's `k`
/// best (by count, then ordinal: a dictionary's ordinals follow its terms' order) get their
/// totals; any other term counts at most `bound` in the primary (the next best's count).
/// A term of the other segments whose count there plus `bound` is below the `k`-th best
/// total known so far cannot rank: only the rest are looked up in the primary
/// ([`candidates`]). A term of the primary alone outside its `k` best ranks below all of
/// them. (Looking the candidates of every segment up in every other, a block read and
/// decompressed per lookup, made a search over seven segments a hundred times slower;
/// looking every term of the small segments up made a broad search over one large and four
/// small segments four times slower than over one.)
fn top_terms(segments: &[SegmentTerms], k: usize, values: &FacetValues) -> tantivy::Result<Vec<(String, u64)>> {
    let Some(primary) = segments.iter().enumerate().max_by_key(|(_, s)| s.counts.distinct()).map(|(i, _)| i) else {
        return Ok(Vec::new());
    };
    let others: Vec<&SegmentTerms> = segments.iter().enumerate().filter(|(i, _)| *i != primary).map(|(_, s)| s).collect();
    let primary = &segments[primary];
    // The primary's k + 1 best, by rank: the last one's count is the bound.
    let by_rank = |a: &(u64, u32), b: &(u64, u32)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    let mut best: std::collections::BinaryHeap<Ranked> = std::collections::BinaryHeap::with_capacity(k + 2);
    for c in primary.counts.iter() {
        if best.len() <= k {
            best.push(Ranked(c));
        } else if let Some(mut worst) = best.peek_mut().filter(|worst| Ranked(c) < **worst) {
            *worst = Ranked(c);
        }
    }
    let mut best: Vec<(u64, u32)> = best.into_iter().map(|r| r.0).collect();
    best.sort_unstable_by(by_rank);
    let bound = if best.len() > k { u64::from(best[k].1) } else { 0 };
    best.truncate(k);
    let best: Vec<(String, u64)> =
        best.into_iter().map(|(ord, n)| Ok((values.text(primary, ord)?, u64::from(n)))).collect::<tantivy::Result<_>>()?;
    let count = |ord: Option<u64>| -> u64 { ord.map_or(0, |o| u64::from(primary.counts.get(o))) };
    let in_primary = |sorted: &[&str]| -> tantivy::Result<Vec<u64>> {
        Ok(match &primary.decoded {
            Some(terms) => sorted.iter().map(|v| count(terms.ord(v.as_bytes()))).collect(),
            None => ords_of(primary, sorted.iter().map(|v| v.as_bytes()))?.into_iter().map(count).collect(),
        })
    };
    candidates(best, bound, every_term(&others)?, k, in_primary)
}

/// A term ordinal and its count, ordered so that a max-heap's top is the worst ranked
/// (lowest count, then highest ordinal).
#[derive(PartialEq, Eq)]
struct Ranked((u64, u32));

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0 .1.cmp(&self.0 .1).then(self.0 .0.cmp(&other.0 .0))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
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
        if let Some(terms) = &s.decoded {
            for (ord, n) in s.counts.iter() {
                *all.entry(terms.text(ord).to_owned()).or_default() += u64::from(n);
            }
            continue;
        }
        let mut counts = s.counts.iter().map(|(_, n)| u64::from(n));
        s.column.dictionary().sorted_ords_to_term_cb(s.counts.iter().map(|(ord, _)| ord), |term| {
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
