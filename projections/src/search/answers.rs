//! Answers of recent searches, kept per visible commit of the index.
//!
//! A key names the searcher generation it was computed at, and every reload of the index
//! (after a commit) makes a new generation: an answer is only ever served to a search of
//! the commit it was computed from, so the cache is exact without being cleared. Entries
//! of older generations are never asked for again: the first answer kept for a newer
//! generation lets them go ([`PerCommit`]), so under a stream of commits the cache holds the
//! answers of the last one, not its whole capacity of dead ones. Author names are not part
//! of a kept answer (the API adds them from the accounts on every request).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::{Facet, Highlight, SearchIndex, SearchRequest, SearchResults};
use crate::ProjectionError;

/// What a search found: its page, and the counts and highlights when asked for.
#[derive(Debug, Clone)]
pub struct Found {
    /// The page of hits.
    pub results: SearchResults,
    /// Facet counts over every match.
    pub facets: Option<serde_json::Value>,
    /// The matched words of each hit.
    pub highlights: Option<Vec<Highlight>>,
}

/// A search as asked at one generation of the index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct AnswerKey {
    generation: u64,
    request: SearchRequest,
    facets: Vec<Facet>,
    highlight: bool,
}

/// An [`AnswerKey`], borrowed: a hit copies nothing. It hashes as the key it names (the
/// same fields in the same order; a slice hashes as the vector holding it).
#[derive(Hash)]
struct AnswerKeyRef<'a> {
    generation: u64,
    request: &'a SearchRequest,
    facets: &'a [Facet],
    highlight: bool,
}

impl quick_cache::Equivalent<AnswerKey> for AnswerKeyRef<'_> {
    fn equivalent(&self, key: &AnswerKey) -> bool {
        self.generation == key.generation && *self.request == key.request && self.facets == key.facets && self.highlight == key.highlight
    }
}

#[derive(Clone)]
pub(super) struct AnswerWeight;

impl Weighter<AnswerKey, Arc<Found>> for AnswerWeight {
    /// Approximate bytes: the hits' text, the highlights' text, a guess per facet value.
    fn weight(&self, key: &AnswerKey, found: &Arc<Found>) -> u64 {
        let hits: usize = found.results.hits.iter().map(|h| h.len() + 24).sum();
        let highlights: usize = found.highlights.iter().flatten().map(|h| h.uri.len() + h.title.len() + h.abstract_text.len() + 72).sum();
        let facets = found
            .facets
            .as_ref()
            .and_then(|f| f.as_object())
            .map_or(0, |f| f.values().filter_map(|v| v.as_array()).map(|v| v.len() * 96).sum());
        (key.request.query.len() + hits + highlights + facets + 256) as u64
    }
}

/// The kept answers of one index version.
pub(super) type Answers = PerCommit<AnswerKey, Arc<Found>, AnswerWeight>;

/// Keeps about `capacity_bytes` of answers.
pub(super) fn answers(capacity_bytes: u64) -> Answers {
    PerCommit::new(Cache::with_weighter((capacity_bytes / 16_384).max(16) as usize, capacity_bytes.max(1), AnswerWeight), |key| {
        key.generation
    })
}

/// A cache of what searches found, per commit: each key names the searcher generation it
/// was computed at. The first entry kept for a newer generation lets go of the older ones,
/// which no search asks for again.
pub(super) struct PerCommit<K, V, W = quick_cache::UnitWeighter> {
    cache: Cache<K, V, W>,
    /// The newest generation an entry was kept for.
    newest: AtomicU64,
    generation_of: fn(&K) -> u64,
}

impl<K: Eq + std::hash::Hash + Clone, V: Clone, W: Weighter<K, V> + Clone> PerCommit<K, V, W> {
    /// `cache`, keyed by what `generation_of` says of each key.
    pub(super) fn new(cache: Cache<K, V, W>, generation_of: fn(&K) -> u64) -> PerCommit<K, V, W> {
        PerCommit { cache, newest: AtomicU64::new(0), generation_of }
    }

    /// The entry kept under `key`.
    pub(super) fn get<Q: std::hash::Hash + quick_cache::Equivalent<K> + ?Sized>(&self, key: &Q) -> Option<V> {
        self.cache.get(key)
    }

    /// Keeps `value` under `key`, unless a newer generation's entries are kept already.
    pub(super) fn keep(&self, key: K, value: V) {
        let generation = (self.generation_of)(&key);
        let newest = self.newest.fetch_max(generation, Ordering::AcqRel);
        if generation > newest {
            let of = self.generation_of;
            self.cache.retain(|k, _| of(k) >= generation);
        }
        if generation >= newest {
            self.cache.insert(key, value);
        }
    }

    /// How many entries are kept, and their weight.
    pub(super) fn size(&self) -> (usize, u64) {
        (self.cache.len(), self.cache.weight())
    }
}

impl SearchIndex {
    /// The searcher generation searches see now.
    fn generation(&self) -> u64 {
        self.reader.searcher().generation().generation_id()
    }

    /// What `request` found at the visible commit, if a search of this commit already
    /// asked for the same (the same words, filters, order, page, facets and highlighting).
    pub fn found(&self, request: &SearchRequest, facets: &[Facet], highlight: bool) -> Option<Arc<Found>> {
        self.answers.get(&AnswerKeyRef { generation: self.generation(), request, facets, highlight })
    }

    /// Runs `request` with its facet counts and highlights (when asked for), or answers from
    /// a search of the same commit that asked for the same ([`SearchIndex::found`]).
    ///
    /// # Errors
    /// As [`SearchIndex::search`].
    pub fn find(&self, request: &SearchRequest, facets: &[Facet], highlight: bool) -> Result<Arc<Found>, ProjectionError> {
        // The generation is read before searching: a reload meanwhile can only make the
        // answer newer than its key, and searches of the older commit may see the newer
        // answer, never the reverse.
        let generation = self.generation();
        if let Some(found) = self.answers.get(&AnswerKeyRef { generation, request, facets, highlight }) {
            return Ok(found);
        }
        let collector = (!facets.is_empty()).then(|| self.facet_collector(facets));
        let (results, tops) = self.search_counting(request, collector)?;
        let facet_counts = tops.map(|tops| super::facets::facets_json(facets, tops));
        let highlights = if highlight { Some(self.highlights(request, &results.hits)?) } else { None };
        let found = Arc::new(Found { results, facets: facet_counts, highlights });
        if !found.results.partial {
            let key = AnswerKey { generation, request: request.clone(), facets: facets.to_vec(), highlight };
            self.answers.keep(key, found.clone());
        }
        Ok(found)
    }

    /// How many answers this version keeps, and about how many bytes they hold.
    pub fn kept_answers(&self) -> (usize, u64) {
        self.answers.size()
    }
}
