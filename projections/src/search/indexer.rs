//! Applying events to the search index.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_schema::{AccountStatus, Envelope, Payload, RecordWrite};
use lexicons::{Lexicons, SUBMISSION};
use store::{Batch, Columns, Store, TableRef, Value};
use tantivy::query::RegexQuery;
use tantivy::{IndexWriter, TantivyDocument, Term};
use tracing::{debug, warn};

use super::links::{self, LinkRecord, Links};
use super::{people, CommitPayload, SearchIndex, SearchIndexes, MODEL, TOMBSTONES};
use crate::attached::collections::{self, CITATION, PROFILE, USER_TAG};
use crate::catalog::Mode;
use crate::eprints::read::{self as eprints_read, passed, EprintsReader, Written};
use crate::submission::Submission;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Commit at least this often while events keep coming (live mode).
const LIVE_COMMIT_INTERVAL: Duration = Duration::from_millis(1000);
/// Commit this often while catching up (more events already wait in the log): every commit
/// writes a segment, and many small segments cost merges and slow the catch-up down.
const CATCH_UP_COMMIT_INTERVAL: Duration = Duration::from_secs(10);
/// The indexing memory budget while catching up or rebuilding, shared by the writer's
/// threads.
const WRITER_HEAP_BYTES: usize = 192 * 1024 * 1024;
/// The indexing memory budget once a live projection has caught up: live batches are small,
/// and the bulk writer's threads would keep the memory they used for the catch-up.
const LIVE_WRITER_HEAP_BYTES: usize = 16 * 1024 * 1024;

/// How long a batch waits for the eprints model to write the records of the documents it
/// remakes ([`SearchProjection::sources_from_eprints`]) before leaving them to a later batch.
pub const EPRINTS_WAIT: Duration = eprints_read::WAIT;
/// How often the eprints model's rows are read again while waiting for them.
const EPRINTS_POLL: Duration = eprints_read::POLL;

/// What a document is made from: the record of its eprint as of an event.
#[derive(Debug, Clone)]
struct Source {
    /// The repository DID.
    did: String,
    rev: String,
    record: serde_json::Value,
    /// The log ordinal of the event that wrote the record.
    seq: u64,
}

impl Source {
    /// The source an eprints model's record row gives, unless it marks the eprint deleted.
    fn of_written(written: Written) -> Option<Source> {
        let eprint = written.eprint?;
        let record = serde_json::from_str(&eprint.record).ok()?;
        Some(Source { did: eprint.did, rev: written.rev, record, seq: written.ordinal })
    }
}

/// What the index holds of an eprint's document: the revision it was made from (stored)
/// and the log ordinal of the event that wrote that revision (`seq`, a fast field).
#[derive(Debug, Clone)]
struct Indexed {
    rev: String,
    seq: u64,
}

/// The repository of an eprint URI.
pub(super) fn repo_of(uri: &str) -> &str {
    lexicons::formats::parse_at_uri(uri).map(|u| u.authority).unwrap_or_default()
}

/// The table of a version's tombstones, in the node's store.
fn tombstones(version: u32) -> TableRef {
    TableRef::new(MODEL, version, TOMBSTONES)
}

/// Builds one version of the search index.
pub struct SearchProjection {
    index: Arc<SearchIndex>,
    /// Opened on first use ([`SearchProjection::writer`]); an `Option` also so that the
    /// bulk writer can be closed before its live replacement is opened (an index takes one
    /// writer at a time).
    writer: Option<IndexWriter<TantivyDocument>>,
    lexicons: Arc<Lexicons>,
    version: u32,
    applied: Checkpoints,
    committed: Checkpoints,
    /// Repositories whose account is not active (saved with each commit).
    hidden: BTreeSet<String>,
    /// Documents written (`None`: deleted) since the last commit, which searches cannot
    /// see yet.
    pending: HashMap<String, Option<Indexed>>,
    /// Repositories whose documents were all deleted since the last commit.
    pending_deleted_repos: BTreeSet<String>,
    /// The eprints this batch wrote, indexed at its end with their tags then
    /// ([`SearchProjection::write_batch`]): one document per eprint and batch.
    batch_writes: HashMap<String, (Source, Submission)>,
    /// The tags on each eprint ([`super::tags`]).
    tags: Links,
    /// The citations of each eprint by others ([`super::links`]).
    citations: Links,
    /// The node's store, holding this version's tombstones: the revision at which each
    /// deleted record was deleted, so that an older write arriving later stays out.
    node: Arc<dyn Store>,
    /// The shared store, where the eprints model's record rows are read.
    shared: Arc<dyn Store>,
    /// Documents whose tags or citations changed while the eprints model had not written
    /// their records yet: remade with a later batch (saved with each commit).
    remake: BTreeSet<String>,
    /// How long a batch waits for the eprints model ([`EPRINTS_WAIT`]).
    eprints_wait: Duration,
    /// The writer of the index of users ([`people`]), opened on first use.
    people_writer: Option<IndexWriter<TantivyDocument>>,
    /// Users whose documents wait for the eprints model to pass their last event (its log
    /// ordinal): written once it has, from its account rows (saved with each commit).
    people_due: BTreeMap<String, u64>,
    /// Users whose documents were written since the last commit.
    people_written: HashSet<String>,
    /// Tombstones of this batch, written to the node's store at its end.
    new_tombstones: HashMap<String, (String, u64)>,
    /// The stored tombstones (revision by URI) of the records this batch writes or deletes,
    /// read in one store read when the batch begins.
    stored_tombstones: HashMap<String, String>,
    last_commit: Instant,
    /// `None` in rebuild mode: commit only when flushed.
    commit_interval: Option<Duration>,
    /// Whether a batch since the last end of a catch-up said more events were waiting.
    catching_up: bool,
    /// Live mode, until the first catch-up has ended: merge the segments then.
    merge_after_catch_up: bool,
    /// Rebuild mode, until the first flush: compact the index then (see
    /// [`SearchProjection::compact`]). The few events a rebuild applies after it, while the
    /// live workers are held for the swap, are committed without merging the whole index
    /// again (tantivy's merge policy takes their segment in later).
    compact_at_flush: bool,
}

impl SearchProjection {
    /// Opens the writer of `version` and resumes from its last commit.
    pub fn open(
        indexes: &SearchIndexes,
        node: Arc<dyn Store>,
        shared: Arc<dyn Store>,
        lexicons: Arc<Lexicons>,
        version: u32,
        mode: Mode,
    ) -> Result<SearchProjection, ProjectionError> {
        let index = indexes.open(version)?;
        let committed = CommitPayload::parse(index.index.load_metas()?.payload.as_deref());
        Ok(SearchProjection {
            index,
            writer: None,
            lexicons,
            version,
            applied: committed.checkpoints.clone(),
            hidden: committed.hidden,
            remake: committed.remake,
            people_writer: None,
            people_due: committed.people,
            people_written: HashSet::new(),
            eprints_wait: EPRINTS_WAIT,
            committed: committed.checkpoints,
            pending: HashMap::new(),
            pending_deleted_repos: BTreeSet::new(),
            batch_writes: HashMap::new(),
            tags: Links::new(node.clone(), version, links::TAGS),
            citations: Links::new(node.clone(), version, links::CITATIONS),
            node,
            shared,
            new_tombstones: HashMap::new(),
            stored_tombstones: HashMap::new(),
            last_commit: Instant::now(),
            commit_interval: (mode == Mode::Live).then_some(LIVE_COMMIT_INTERVAL),
            catching_up: false,
            merge_after_catch_up: mode == Mode::Live,
            compact_at_flush: mode == Mode::Rebuild,
        })
    }

    /// The projection, waiting at most `wait` for the eprints model instead of
    /// [`EPRINTS_WAIT`].
    pub fn with_eprints_wait(mut self, wait: Duration) -> SearchProjection {
        self.eprints_wait = wait;
        self
    }

    /// The writer, opening the bulk one on first use: on the thread that applies the
    /// batches, not the one that opened the projection, because tantivy's indexing and
    /// merging threads take the scheduling priority of the thread that starts them, and a
    /// rebuild's appliers run at a lowered one (`crate::fanout`), so that its indexing yields
    /// the cores to the live projection's.
    fn writer(&mut self) -> Result<&mut IndexWriter<TantivyDocument>, ProjectionError> {
        if self.writer.is_none() {
            let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(4);
            self.writer = Some(self.index.index.writer_with_num_threads(threads, WRITER_HEAP_BYTES)?);
        }
        self.writer.as_mut().ok_or_else(|| ProjectionError::Search("the index writer is closed".into()))
    }

    /// Replaces the bulk writer with a small one for live batches, once the first catch-up
    /// has committed: its threads end and the memory they held is freed. The merges it
    /// finishes meanwhile replace segments the reader still holds (their files deleted, but
    /// mapped and resident until a reload): the reader is reloaded after them.
    fn shrink_writer(&mut self) -> Result<(), ProjectionError> {
        if let Some(bulk) = self.writer.take() {
            bulk.wait_merging_threads()?;
            self.index.reload()?;
        }
        self.writer = Some(self.index.index.writer_with_num_threads(1, LIVE_WRITER_HEAP_BYTES)?);
        Ok(())
    }

    /// The document of `uri` as of this batch: written since the last commit, or as the
    /// committed index holds it (`None`: not indexed).
    fn indexed(&self, uri: &str) -> Result<Option<Indexed>, ProjectionError> {
        if let Some(pending) = self.pending.get(uri) {
            return Ok(pending.clone());
        }
        Ok(self.index.document(uri)?.map(|(rev, seq)| Indexed { rev, seq }))
    }

    /// The revision the index holds for `uri`: its document's, or its tombstone's.
    fn current_rev(&self, uri: &str) -> Result<Option<String>, ProjectionError> {
        if let Some(indexed) = self.indexed(uri)? {
            return Ok(Some(indexed.rev));
        }
        if let Some((rev, _)) = self.new_tombstones.get(uri) {
            return Ok(Some(rev.clone()));
        }
        Ok(self.stored_tombstones.get(uri).cloned())
    }

    /// Reads the stored tombstones of the records `batch` writes or deletes, in one read.
    fn read_tombstones(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        let keys: Vec<(String, Vec<u8>)> = batch.record_uris(SUBMISSION).into_iter().map(|uri| (uri, Vec::new())).collect();
        let rows = self.node.get_many(&tombstones(self.version), &keys)?;
        self.stored_tombstones = keys
            .into_iter()
            .zip(rows)
            .filter_map(|((uri, _), row)| Some((uri, row?.get("rev").and_then(Value::as_text)?.to_owned())))
            .collect();
        Ok(())
    }

    fn write(&mut self, event: &Envelope, w: &RecordWrite, s: &Submission) -> Result<(), ProjectionError> {
        let uri = w.uri();
        if self.current_rev(&uri)?.is_some_and(|held| held >= w.rev) {
            debug!(uri, rev = w.rev, "skipping stale record write");
            return Ok(());
        }
        let source = Source { did: w.did.clone(), rev: w.rev.clone(), record: w.record.clone(), seq: event.position.ordinal() };
        self.pending.insert(uri.clone(), Some(Indexed { rev: source.rev.clone(), seq: source.seq }));
        self.batch_writes.insert(uri, (source, s.clone()));
        Ok(())
    }

    /// Writes the document of the eprint at `uri` from `source`, with its tags and
    /// citations as of the end of the batch.
    fn write_document(&mut self, uri: &str, source: &Source, s: &Submission) -> Result<(), ProjectionError> {
        let f = self.index.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.uri, uri);
        doc.add_bytes(f.key, &crate::eprints::key_uri(uri, crate::eprints::UriForm::Compact));
        doc.add_text(f.rev, &source.rev);
        doc.add_text(f.title, &s.title);
        doc.add_text(f.all, &s.title);
        doc.add_text(f.all, &s.abstract_text);
        for a in &s.authors {
            doc.add_text(f.authors, &a.name);
            doc.add_text(f.all, &a.name);
        }
        for k in &s.keywords {
            doc.add_text(f.all, k);
        }
        for code in &s.fields {
            doc.add_text(f.all, code);
            doc.add_text(f.field, code);
        }
        for code in &s.facets {
            doc.add_text(f.facet, code);
        }
        for did in s.listed_dids(&source.did) {
            doc.add_text(f.author_did, &did);
        }
        for id in super::ids::of_record(&s.record) {
            doc.add_text(f.ids, &id);
        }
        for tag in self.tags.of(uri)? {
            doc.add_text(f.tag, &tag);
        }
        doc.add_u64(f.abstract_words, s.abstract_text.split_whitespace().count() as u64);
        doc.add_i64(f.created, s.created_at.timestamp_micros());
        doc.add_u64(f.year, chrono::Datelike::year(&s.created_at).max(0) as u64);
        doc.add_u64(f.citations, self.citations.count(uri)?);
        doc.add_u64(f.seq, source.seq);
        let writer = self.writer()?;
        writer.delete_term(Term::from_field_text(f.uri, uri));
        writer.add_document(doc)?;
        self.pending.insert(uri.to_owned(), Some(Indexed { rev: source.rev.clone(), seq: source.seq }));
        Ok(())
    }

    /// Applies a `pub.svc.eprint.userTag` event to the tags (a record its lexicon refuses is
    /// left out, as the attached model parks it).
    /// Keeps the tags and citations in step with their records' events.
    fn link_event(&mut self, event: &Envelope) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let links = |collection: &str| match collection {
            USER_TAG => Some(true),
            CITATION => Some(false),
            _ => None,
        };
        match &event.payload {
            Payload::RecordCreate(w) | Payload::RecordUpdate(w) => {
                let Some(is_tag) = links(&w.collection) else { return Ok(()) };
                if self.lexicons.validate_record(&w.collection, &w.record).is_err() {
                    return Ok(());
                }
                let Some(Ok(n)) = collections::normalize(&w.collection, &w.did, &w.rkey, &w.record) else { return Ok(()) };
                // A tag on its eprint, by its normalized form; a citation on the eprint it
                // cites (when that is one svc indexes).
                let (eprint, value) = if is_tag {
                    (n.view["eprintUri"].as_str(), n.view["normalizedForm"].as_str())
                } else {
                    (n.view["citedWork"]["svcUri"].as_str(), Some(""))
                };
                let (Some(eprint), Some(value)) = (eprint, value) else { return Ok(()) };
                let record =
                    LinkRecord { eprint: eprint.to_owned(), tag: value.to_owned(), did: w.did.clone(), rev: w.rev.clone(), live: true };
                self.links(is_tag).write(&w.uri(), record, position)
            }
            Payload::RecordDelete(d) => match links(&d.collection) {
                Some(is_tag) => self.links(is_tag).delete(&d.uri(), &d.rev, position),
                None => Ok(()),
            },
            Payload::Admin(event_schema::AdminCommand {
                action: event_schema::AdminAction::ContentDeleted { uri, collection, .. },
                ..
            }) => match links(collection) {
                Some(is_tag) => self.links(is_tag).delete(uri, crate::rows::TAKEN_DOWN_REV, position),
                None => Ok(()),
            },
            Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => {
                self.tags.remove_repo(&a.did, position)?;
                self.citations.remove_repo(&a.did, position)
            }
            _ => Ok(()),
        }
    }

    /// The tags, or the citations.
    fn links(&mut self, tags: bool) -> &mut Links {
        if tags {
            &mut self.tags
        } else {
            &mut self.citations
        }
    }

    /// Writes, once each, the documents of the eprints the batch wrote and of those whose
    /// tags or citations it changed (those the index holds: an eprint not indexed yet gets
    /// them when it is), unless the batch deleted them later. A document the batch did not
    /// write is remade from the eprints model's record ([`Self::sources_from_eprints`]).
    fn write_batch(&mut self) -> Result<(), ProjectionError> {
        let mut written = std::mem::take(&mut self.batch_writes);
        let mut changed: BTreeSet<String> = self.tags.finish()?.into_iter().collect();
        changed.extend(self.citations.finish()?);
        changed.extend(std::mem::take(&mut self.remake));
        changed.extend(written.keys().cloned());
        let mut remade = Vec::new();
        for uri in changed {
            if self.pending.get(&uri).is_some_and(Option::is_none) {
                continue;
            }
            if let Some((source, s)) = written.remove(&uri) {
                self.write_document(&uri, &source, &s)?;
                continue;
            }
            if self.pending_deleted_repos.contains(repo_of(&uri)) {
                continue;
            }
            if let Some(indexed) = self.indexed(&uri)? {
                remade.push((uri, indexed.seq));
            }
        }
        for (uri, source) in self.sources_from_eprints(remade)? {
            let Ok(s) = crate::submission::normalize(&source.record) else { continue };
            self.write_document(&uri, &source, &s)?;
        }
        Ok(())
    }

    /// The sources of the documents of `wanted` (URI and `seq`), from the eprints model's
    /// record rows: a row written by the document's event or a later one (the eprints model
    /// and the index follow the same log; a later record is the one the index is about to
    /// get). A document whose eprint the model deleted since, or whose event it passed
    /// without writing the record (it parked it), is left as it is. When the model is
    /// behind, waits for it up to [`EPRINTS_WAIT`]; then leaves what it still lacks to a
    /// later batch (`remake`).
    fn sources_from_eprints(&mut self, wanted: Vec<(String, u64)>) -> Result<Vec<(String, Source)>, ProjectionError> {
        let mut found = Vec::with_capacity(wanted.len());
        let mut waiting = wanted;
        let deadline = Instant::now() + self.eprints_wait;
        while !waiting.is_empty() {
            let eprints = EprintsReader::new(self.shared.as_ref())?;
            let uris: Vec<&str> = waiting.iter().map(|(uri, _)| uri.as_str()).collect();
            let rows = eprints.written_each(&uris)?;
            let applied = eprints.applied()?;
            let mut behind = Vec::new();
            for ((uri, seq), row) in waiting.into_iter().zip(rows) {
                match row {
                    Some(row) if row.ordinal >= seq => found.extend(Source::of_written(row).map(|source| (uri, source))),
                    _ if applied.as_ref().is_some_and(|a| passed(a, seq)) => {
                        debug!(uri, "the eprints model holds no record for this document: left as it is");
                    }
                    _ => behind.push((uri, seq)),
                }
            }
            if !behind.is_empty() && Instant::now() >= deadline {
                warn!(documents = behind.len(), "the eprints model is behind the search index: documents left to a later batch");
                self.remake.extend(behind.into_iter().map(|(uri, _)| uri));
                break;
            }
            if !behind.is_empty() {
                std::thread::sleep(EPRINTS_POLL);
            }
            waiting = behind;
        }
        Ok(found)
    }

    /// Notes the users whose documents an event may change ([`people`]): the author of an
    /// identity event or of a profile record, and a DID's first record (a new user).
    fn people_event(&mut self, event: &Envelope) -> Result<(), ProjectionError> {
        let did = match &event.payload {
            Payload::Identity(i) => &i.did,
            Payload::RecordCreate(w) | Payload::RecordUpdate(w) if w.collection == PROFILE && w.rkey == "self" => &w.did,
            Payload::RecordDelete(d) if d.collection == PROFILE && d.rkey == "self" => &d.did,
            Payload::RecordCreate(w) => {
                if self.people_due.contains_key(&w.did) || self.people_written.contains(&w.did) || self.index.people().knows(&w.did)? {
                    return Ok(());
                }
                &w.did
            }
            _ => return Ok(()),
        };
        self.people_due.insert(did.clone(), event.position.ordinal());
        Ok(())
    }

    /// Writes the documents of the users ([`people`]) whose last event the eprints model
    /// has passed, from its account rows. When `wait` (a live batch, or the last of a
    /// catch-up), waits up to [`EPRINTS_WAIT`] for it to pass the rest; otherwise (and
    /// after that) leaves them to a later batch.
    fn write_people(&mut self, wait: bool) -> Result<(), ProjectionError> {
        let deadline = Instant::now() + self.eprints_wait;
        let index = self.index.clone();
        while !self.people_due.is_empty() {
            let eprints = EprintsReader::new(self.shared.as_ref())?;
            let Some(applied) = eprints.applied()? else { break };
            let ready: BTreeSet<String> =
                self.people_due.iter().filter(|(_, seq)| passed(&applied, **seq)).map(|(did, _)| did.clone()).collect();
            for (did, account) in people::users_of(&eprints, &ready)? {
                let writer = self.people_writer()?;
                writer.delete_term(index.people().did_term(&did));
                if let Some(account) = account {
                    writer.add_document(index.people().document(&did, &account))?;
                }
                self.people_due.remove(&did);
                self.people_written.insert(did);
            }
            if self.people_due.is_empty() || !wait {
                break;
            }
            if Instant::now() >= deadline {
                warn!(users = self.people_due.len(), "the eprints model is behind the search index: users left to a later batch");
                break;
            }
            std::thread::sleep(EPRINTS_POLL);
        }
        Ok(())
    }

    /// The writer of the index of users, opened on first use.
    fn people_writer(&mut self) -> Result<&mut IndexWriter<TantivyDocument>, ProjectionError> {
        if self.people_writer.is_none() {
            self.people_writer = Some(self.index.people().writer()?);
        }
        self.people_writer.as_mut().ok_or_else(|| ProjectionError::Search("the people index writer is closed".into()))
    }

    /// Writes the batch's tombstones in one store batch. They may land before the index
    /// commit (a crash in between re-applies the batch from the log): a tombstone only keeps
    /// out writes older than a deletion that did happen.
    fn store_batch(&mut self) -> Result<(), ProjectionError> {
        if self.new_tombstones.is_empty() {
            return Ok(());
        }
        let mut batch = Batch::default();
        for (uri, (rev, position)) in self.new_tombstones.drain() {
            let mut columns = Columns::new();
            columns.insert("rev".into(), Value::Text(rev));
            batch.put(&tombstones(self.version), &uri, Vec::new(), columns, position);
        }
        self.node.apply(batch)?;
        Ok(())
    }

    /// A catch-up has ended (a batch or a flush found no more events waiting): commits
    /// at once. After the first one in live mode (from a fresh seed, or after downtime),
    /// merges the segments; later bursts are left to tantivy's merge policy, since a full
    /// merge rewrites the whole index.
    fn end_catch_up(&mut self) -> Result<(), ProjectionError> {
        self.catching_up = false;
        self.write_people(true)?;
        self.commit_pending()?;
        // Emptied by the commit, the staging maps keep the capacity the catch-up's batches
        // grew them to; idle, they need none.
        self.pending.shrink_to_fit();
        self.new_tombstones.shrink_to_fit();
        if std::mem::take(&mut self.merge_after_catch_up) {
            self.shrink_writer()?;
            self.merge_segments()?;
        }
        Ok(())
    }

    /// Merges every segment into one, in the background: a catch-up commits every 10 s and
    /// leaves several segments, and every search walks each one. Searches see the merged
    /// segment as soon as it is written. (A rebuild is merged at its end, waiting:
    /// [`SearchProjection::compact`].)
    fn merge_segments(&mut self) -> Result<(), ProjectionError> {
        let segments = self.index.index.searchable_segment_ids()?;
        if segments.len() < 2 {
            return Ok(());
        }
        let merge = self.writer()?.merge(&segments);
        let index = self.index.clone();
        let count = segments.len();
        index.merging.fetch_add(1, Ordering::AcqRel);
        let merging = std::thread::Builder::new().name("search-merge".into()).spawn(move || {
            match merge.wait().map_err(ProjectionError::from).and_then(|_| index.reload()) {
                Ok(()) => debug!(segments = count, "merged the search index after a catch-up"),
                Err(e) => tracing::warn!(error = %e, "merging the search index after a catch-up failed (searches go on over its segments)"),
            }
            index.merging.fetch_sub(1, Ordering::AcqRel);
        });
        if let Err(e) = merging {
            self.index.merging.fetch_sub(1, Ordering::AcqRel);
            return Err(ProjectionError::Search(format!("failed to start the merge thread: {e}")));
        }
        Ok(())
    }

    /// Merges a rebuilt index into one segment, and waits: documents written again as their
    /// tags and citations changed leave their earlier copies behind as deleted documents,
    /// which only a merge drops (before it, the index held each eprint about three times
    /// over). Then removes the files no segment uses any more.
    fn compact(&mut self) -> Result<(), ProjectionError> {
        let segments = self.index.index.searchable_segment_ids()?;
        let deleted: u32 = self.index.reader.searcher().segment_readers().iter().map(|s| s.num_deleted_docs()).sum();
        if segments.len() > 1 || deleted > 0 {
            self.writer()?.merge(&segments).wait()?;
        }
        self.writer()?.garbage_collect_files().wait()?;
        let users = self.index.people().segments()?;
        if users.len() > 1 {
            self.people_writer()?.merge(&users).wait()?;
        }
        self.people_writer()?.garbage_collect_files().wait()?;
        self.index.reload()
    }

    /// Commits what was applied since the last commit, if anything was; a rebuild is
    /// compacted after its first.
    fn commit_pending(&mut self) -> Result<(), ProjectionError> {
        if self.applied == self.committed && self.people_written.is_empty() {
            return Ok(());
        }
        self.commit()?;
        if std::mem::take(&mut self.compact_at_flush) {
            self.compact()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), ProjectionError> {
        // The users first: a crash before the index's commit applies their events again
        // (a user's document is made from its account as it is then).
        if !self.people_written.is_empty() {
            self.people_writer()?.commit()?;
        }
        let payload = CommitPayload {
            checkpoints: self.applied.clone(),
            hidden: self.hidden.clone(),
            remake: self.remake.clone(),
            people: self.people_due.clone(),
        };
        let payload = serde_json::to_string(&payload).map_err(|e| ProjectionError::Search(e.to_string()))?;
        let mut prepared = self.writer()?.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.index.reload()?;
        self.committed = self.applied.clone();
        self.pending.clear();
        self.pending_deleted_repos.clear();
        self.people_written.clear();
        self.last_commit = Instant::now();
        Ok(())
    }
}

impl Projection for SearchProjection {
    fn model(&self) -> &'static str {
        MODEL
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.applied.clone())
    }

    fn durable_checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.committed.clone())
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        self.read_tombstones(batch)?;
        self.tags.prefetch(batch.record_uris(USER_TAG))?;
        self.citations.prefetch(batch.record_uris(CITATION))?;
        for event in batch.iter() {
            self.people_event(event.envelope)?;
            self.link_event(event.envelope)?;
            match event.submission(&self.lexicons) {
                Some((w, Ok(s))) => {
                    self.write(event.envelope, w, s)?;
                    continue;
                }
                // Parked by the eprints model: nothing of it is indexed.
                Some((_, Err(_))) => continue,
                None => {}
            }
            if let Payload::Account(a) = &event.envelope.payload {
                if a.status == Some(AccountStatus::Deleted) {
                    // A deleted account's documents go for good, not just hidden.
                    let pattern = format!("at://{}/.*", super::query::regex_escape(&a.did));
                    let query = RegexQuery::from_pattern(&pattern, self.index.fields.uri)?;
                    self.writer()?.delete_query(Box::new(query))?;
                    let prefix = format!("at://{}/", a.did);
                    for (_, indexed) in self.pending.iter_mut().filter(|(uri, _)| uri.starts_with(&prefix)) {
                        *indexed = None;
                    }
                    self.pending_deleted_repos.insert(a.did.clone());
                }
                if a.active {
                    self.hidden.remove(&a.did);
                } else {
                    self.hidden.insert(a.did.clone());
                }
                continue;
            }
            if let Payload::Admin(event_schema::AdminCommand {
                action: event_schema::AdminAction::ContentDeleted { uri, collection, .. },
                ..
            }) = &event.envelope.payload
            {
                if collection == SUBMISSION {
                    let field = self.index.fields.uri;
                    self.writer()?.delete_term(Term::from_field_text(field, uri));
                    let rev = crate::rows::TAKEN_DOWN_REV.to_owned();
                    self.new_tombstones.insert(uri.clone(), (rev, event.envelope.position.ordinal()));
                    self.pending.insert(uri.clone(), None);
                }
                continue;
            }
            if let Payload::RecordDelete(d) = &event.envelope.payload {
                if d.collection != SUBMISSION {
                    continue;
                }
                let uri = d.uri();
                if self.current_rev(&uri)?.is_some_and(|held| held >= d.rev) {
                    continue;
                }
                let field = self.index.fields.uri;
                self.writer()?.delete_term(Term::from_field_text(field, &uri));
                self.new_tombstones.insert(uri.clone(), (d.rev.clone(), event.envelope.position.ordinal()));
                self.pending.insert(uri, None);
            }
        }
        self.write_batch()?;
        self.write_people(!batch.more_to_come())?;
        self.store_batch()?;
        self.applied.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
        if batch.more_to_come() {
            self.catching_up = true;
        } else if self.catching_up {
            return self.end_catch_up();
        }
        let interval = self.commit_interval.map(|every| if batch.more_to_come() { CATCH_UP_COMMIT_INTERVAL.max(every) } else { every });
        // A rebuild commits once at its end.
        if interval.is_some_and(|every| self.last_commit.elapsed() >= every) {
            self.commit()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        if self.catching_up {
            return self.end_catch_up();
        }
        self.write_people(true)?;
        self.commit_pending()
    }
}
