//! The search read model: a tantivy index per version under `<data>/search/v<N>/`.
//!
//! The index's commit payload holds the projection's checkpoints, so the index and its
//! checkpoints are always committed together. The active version is the store's
//! active-version pointer for model `search`.

mod answers;
mod facets;
pub mod ids;
mod indexer;
mod links;
pub mod people;
mod query;
mod schema;
pub mod snapshot;
mod stem;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};

use tantivy::store::Compressor;
use tantivy::{Index, IndexReader, IndexSettings, ReloadPolicy};

pub use answers::Found;
pub use facets::{Facet, Highlight, FACET_SIZE};
pub use indexer::SearchProjection;
pub use query::{LikeHit, SearchCursor, SearchRequest, SearchResults, SortOrder};
pub use schema::SearchFields;
pub use stem::en_fold;

use store::Store;

use crate::{Checkpoints, ProjectionError};

/// The model name.
pub const MODEL: &str = "search";

/// The tables a version of the model keeps in the node's store: the tombstones of deleted
/// eprints and the tags and citations of each eprint ([`links`]).
pub const TOMBSTONES: &str = "tombstones";

/// The table of the documents' sources (what each was made from), written by search
/// formats up to 6 and no longer: the index holds each document's revision and `seq`. A
/// version made before keeps its rows until it is dropped.
pub const SOURCES: &str = "sources";

/// Every table a version of the model keeps in the node's store.
pub const TABLES: &[&str] =
    &[TOMBSTONES, SOURCES, links::TAGS[0], links::TAGS[1], links::TAGS[2], links::CITATIONS[0], links::CITATIONS[1], links::CITATIONS[2]];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &[];

/// One version of the index, open for reading (and for writing by its projection).
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    fields: SearchFields,
    /// The DIDs whose documents searches hide, as of the visible commit.
    hidden: RwLock<Arc<BTreeSet<String>>>,
    /// Facet values recently turned into text, by segment and term ordinal.
    facet_values: Arc<facets::FacetValues>,
    /// Answers of recent searches of the visible commit.
    answers: answers::Answers,
    /// What [`SearchIndex::like`] found recently, per commit (a generation in its key).
    likes: answers::PerCommit<(u64, Vec<String>, usize), Arc<Vec<query::LikeHit>>>,
    /// Merges of its segments running in the background ([`SearchIndexes::merging`]).
    merging: std::sync::atomic::AtomicUsize,
    /// The shared store: a hit's summary is read from the eprints model's record row there.
    shared: Arc<dyn Store>,
    /// The users the index knows, for author search ([`people`]).
    people: people::People,
}

/// How many facet values each index version keeps as text (a segment's dictionary decodes
/// a block to turn one ordinal into text).
const FACET_VALUES_CACHED: usize = 100_000;

/// How many bytes of segments' facet terms each index version keeps decoded (about 48
/// bytes a term: some 12 MB for the authors of 75,000 papers); a column with more terms
/// than a quarter of this is read from its dictionary instead.
const FACET_TERMS_DECODED_BYTES: u64 = 128 * 1024 * 1024;

/// How many bytes of search answers each index version keeps ([`SearchIndex::find`]).
const ANSWERS_CACHED_BYTES: u64 = 32 * 1024 * 1024;

/// How many answers of [`SearchIndex::like`] each index version keeps (a few KB each: some
/// 10 MB).
const LIKES_CACHED: usize = 2_048;

/// What a commit of the index records beside its documents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CommitPayload {
    /// The projection's checkpoints.
    pub checkpoints: Checkpoints,
    /// Repositories whose account is not active: their documents stay indexed but hidden.
    #[serde(default)]
    pub hidden: BTreeSet<String>,
    /// Documents to remake once the eprints model has written their records.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub remake: BTreeSet<String>,
    /// Users whose documents ([`people`]) wait for the eprints model to pass their events:
    /// the log ordinal of each one's last.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub people: BTreeMap<String, u64>,
}

impl CommitPayload {
    /// Reads a commit's payload (an index written before accounts were tracked holds only
    /// the checkpoints).
    pub(crate) fn parse(payload: Option<&str>) -> CommitPayload {
        let Some(p) = payload else { return CommitPayload::default() };
        serde_json::from_str::<CommitPayload>(p)
            .or_else(|_| {
                serde_json::from_str::<Checkpoints>(p).map(|checkpoints| CommitPayload { checkpoints, ..CommitPayload::default() })
            })
            .unwrap_or_default()
    }
}

/// How an index version's documents lie on disk, as of the visible commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStats {
    /// Segments.
    pub segments: usize,
    /// Live documents.
    pub documents: u64,
    /// Documents deleted or written again, still on disk until their segment is merged.
    pub deleted: u64,
}

impl SearchIndex {
    /// Where in the log the index's last commit stands.
    pub fn committed(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(CommitPayload::parse(self.index.load_metas()?.payload.as_deref()).checkpoints)
    }

    /// How the visible commit's documents lie in segments.
    pub fn segment_stats(&self) -> SegmentStats {
        let searcher = self.reader.searcher();
        let readers = searcher.segment_readers();
        SegmentStats {
            segments: readers.len(),
            documents: readers.iter().map(|r| u64::from(r.num_docs())).sum(),
            deleted: readers.iter().map(|r| u64::from(r.num_deleted_docs())).sum(),
        }
    }

    /// Makes the newest commit visible to searches.
    ///
    /// The hidden repositories are read first: a search of the new generation sees them
    /// (a search of the old one may see them too), so an answer kept for a generation
    /// never hides less than that generation's commit says.
    pub fn reload(&self) -> Result<(), ProjectionError> {
        let payload = CommitPayload::parse(self.index.load_metas()?.payload.as_deref());
        *self.hidden.write().map_err(|_| ProjectionError::Search("hidden set poisoned".into()))? = Arc::new(payload.hidden);
        self.people.reload()?;
        self.reader.reload()?;
        Ok(())
    }

    /// The DIDs whose documents are hidden.
    pub(crate) fn hidden(&self) -> Arc<BTreeSet<String>> {
        self.hidden.read().map(|h| h.clone()).unwrap_or_default()
    }

    /// The number of segments searches walk, in the newest visible commit.
    pub fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// The users the index knows (author search).
    pub fn people(&self) -> &people::People {
        &self.people
    }

    /// The document of the eprint at `uri` in the newest visible commit, if it has one: the
    /// revision it was made from, and `seq`, the log ordinal of the event that wrote it.
    pub fn document(&self, uri: &str) -> Result<Option<(String, u64)>, ProjectionError> {
        use tantivy::schema::Value as _;
        let searcher = self.reader.searcher();
        let term = tantivy::Term::from_field_text(self.fields.uri, uri);
        let query = tantivy::query::TermQuery::new(term, tantivy::schema::IndexRecordOption::Basic);
        let Some((_, addr)) = searcher.search(&query, &tantivy::collector::TopDocs::with_limit(1))?.into_iter().next() else {
            return Ok(None);
        };
        let doc: tantivy::TantivyDocument = searcher.doc(addr)?;
        let rev = doc.get_first(self.fields.rev).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        let seq = searcher.segment_reader(addr.segment_ord).fast_fields().u64("seq")?.first(addr.doc_id).unwrap_or_default();
        Ok(Some((rev, seq)))
    }

    /// The number of documents (eprints) in the newest visible commit.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// The settings of new index versions (an existing version keeps the ones it was made with).
///
/// The doc store holds only each document's URI (compact: [`schema::SearchFields::key`])
/// and revision. It is not compressed, in blocks of 4 KiB: reading a hit copies its block
/// out, and decompressing a 16 KiB LZ4 block for each hit of a page was a sixth of a
/// search's time (when the store held summaries); LZ4 in 4 KiB blocks halved the store of
/// whole URIs and made a search of title words 15-35 % slower.
fn index_settings() -> IndexSettings {
    IndexSettings { docstore_compression: Compressor::None, docstore_blocksize: 4096, ..IndexSettings::default() }
}

/// The folder of one version of the index under `root` (usually `<data>/search`).
pub fn index_dir(root: &Path, version: u32) -> PathBuf {
    root.join(format!("v{version}"))
}

/// The checkpoints of the last commit of the index in `dir` (where in the log it stands).
///
/// # Errors
/// When `dir` holds no readable index.
pub fn committed_checkpoints(dir: &Path) -> Result<Checkpoints, ProjectionError> {
    let index = Index::open_in_dir(dir)?;
    Ok(CommitPayload::parse(index.load_metas()?.payload.as_deref()).checkpoints)
}

/// The index versions of one data directory, opened once and shared by the projection that
/// writes them and the queries that read them.
pub struct SearchIndexes {
    root: PathBuf,
    /// The shared store, where hits' summaries are read (the eprints model's rows).
    shared: Arc<dyn Store>,
    open: Mutex<HashMap<u32, Arc<SearchIndex>>>,
}

impl SearchIndexes {
    /// The indexes under `root` (usually `<data>/search`), whose hits are shown from the
    /// eprints model's rows in the `shared` store.
    pub fn new(root: &Path, shared: Arc<dyn Store>) -> SearchIndexes {
        SearchIndexes { root: root.to_owned(), shared, open: Mutex::new(HashMap::new()) }
    }

    /// The folder holding the versions' folders.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, version: u32) -> PathBuf {
        index_dir(&self.root, version)
    }

    /// Opens (creating if needed) one version of the index.
    pub fn open(&self, version: u32) -> Result<Arc<SearchIndex>, ProjectionError> {
        let mut open = self.open.lock().map_err(|_| ProjectionError::Search("index registry poisoned".into()))?;
        if let Some(idx) = open.get(&version) {
            return Ok(idx.clone());
        }
        let dir = self.dir(version);
        std::fs::create_dir_all(&dir).map_err(|e| ProjectionError::Search(format!("failed to create {}: {e}", dir.display())))?;
        let (schema, fields) = schema::build();
        let mmap = tantivy::directory::MmapDirectory::open(&dir).map_err(|e| ProjectionError::Search(e.to_string()))?;
        let index = Index::builder().schema(schema).settings(index_settings()).open_or_create(mmap)?;
        index.tokenizers().register("en_stem", stem::en_stem());
        index.tokenizers().register(stem::EN_FOLD, stem::en_fold());
        index.tokenizers().register(stem::NAMES_FOLD, stem::names_fold());
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let hidden = CommitPayload::parse(index.load_metas()?.payload.as_deref()).hidden;
        let people = people::People::open(&dir.join(people::DIR))?;
        let idx = Arc::new(SearchIndex {
            index,
            reader,
            fields,
            hidden: RwLock::new(Arc::new(hidden)),
            facet_values: Arc::new(facets::FacetValues::new(FACET_VALUES_CACHED, FACET_TERMS_DECODED_BYTES)),
            answers: answers::answers(ANSWERS_CACHED_BYTES),
            likes: answers::PerCommit::new(quick_cache::sync::Cache::new(LIKES_CACHED), |key| key.0),
            merging: Default::default(),
            shared: self.shared.clone(),
            people,
        });
        open.insert(version, idx.clone());
        Ok(idx)
    }

    /// Whether a merge of an open index's segments runs in the background (after a
    /// catch-up): a process about to stop on purpose waits for it, or the merge is lost.
    pub fn merging(&self) -> bool {
        self.open.lock().is_ok_and(|open| open.values().any(|idx| idx.merging.load(std::sync::atomic::Ordering::Acquire) > 0))
    }

    /// Whether `version` was built with this build's schema (or not built yet). An index of
    /// an older schema cannot be opened: its model gets a new version, built from the log.
    pub fn is_current(&self, version: u32) -> Result<bool, ProjectionError> {
        if self.open.lock().map_err(|_| ProjectionError::Search("index registry poisoned".into()))?.contains_key(&version) {
            return Ok(true);
        }
        let dir = self.dir(version);
        if !dir.join("meta.json").exists() {
            return Ok(true);
        }
        let existing = Index::open_in_dir(&dir)?;
        Ok(existing.schema() == schema::build().0)
    }

    /// Closes and deletes one version (after a newer one replaced it).
    pub fn remove(&self, version: u32) -> Result<(), ProjectionError> {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&version);
        }
        let dir = self.dir(version);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| ProjectionError::Search(format!("failed to remove {}: {e}", dir.display())))?;
        }
        Ok(())
    }
}
