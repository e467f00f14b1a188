//! The records that attach to an eprint and change its document, as the search projection
//! keeps them in the node's store: the user tags on each eprint (its document carries them,
//! searches filter and count them: the `tags` facet), and the citations of each eprint by
//! others (its document carries their number: `sortBy=citations`).
//!
//! The attached model owns these records; the index keeps a copy of what it needs from the
//! same events, with the same rules: a record its lexicon refuses is left out, an older
//! revision never replaces a newer one, a delete, a take-down or the deletion of the writer's
//! account removes it. Three tables per kind and version ([`TAGS`], [`CITATIONS`]):
//! - records: record URI → `{eprint, tag (the value: a tag's normalized form), did, rev,
//!   live}` (a deleted one stays as a tombstone with its revision);
//! - by eprint: eprint URI → record URI → `{tag}`;
//! - by repository: writer DID → record URI (to remove an account's records).
//!
//! A batch's changes are kept here until [`Links::finish`] writes them and names the eprints
//! whose documents must be written again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use store::{Batch, Columns, Store, TableRef, Value};

use super::MODEL;
use crate::rows::{scan_partition, text};
use crate::ProjectionError;

/// The tables a version keeps for user tags: records, by eprint, by repository.
pub const TAGS: [&str; 3] = ["tag_records", "eprint_tags", "repo_tags"];

/// The tables a version keeps for citations (by the cited eprint).
pub const CITATIONS: [&str; 3] = ["citation_records", "eprint_citations", "repo_citations"];

/// One record as the index holds it (the default: a record deleted before the index saw
/// it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct LinkRecord {
    pub eprint: String,
    /// Its value: a tag's normalized form; empty for a citation.
    pub tag: String,
    pub did: String,
    pub rev: String,
    pub live: bool,
}

impl LinkRecord {
    fn columns(&self) -> Columns {
        let mut c = Columns::new();
        c.insert("eprint".into(), Value::Text(self.eprint.clone()));
        c.insert("tag".into(), Value::Text(self.tag.clone()));
        c.insert("did".into(), Value::Text(self.did.clone()));
        c.insert("rev".into(), Value::Text(self.rev.clone()));
        c.insert("live".into(), Value::Bool(self.live));
        c
    }

    fn from_columns(c: &Columns) -> LinkRecord {
        LinkRecord {
            eprint: text(c, "eprint").unwrap_or_default(),
            tag: text(c, "tag").unwrap_or_default(),
            did: text(c, "did").unwrap_or_default(),
            rev: text(c, "rev").unwrap_or_default(),
            live: c.get("live").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

/// The records of one kind of one version, with the changes of the batch being applied.
pub(super) struct Links {
    node: Arc<dyn Store>,
    version: u32,
    tables: [&'static str; 3],
    /// Rows as stored before the batch (`None`: none), read on first use.
    stored: HashMap<String, Option<LinkRecord>>,
    /// The batch's changes: tag record URI → its new state and the position that made it.
    changes: BTreeMap<String, (LinkRecord, u64)>,
    /// Eprints whose tags changed in the batch.
    dirty: BTreeSet<String>,
}

impl Links {
    /// The records kept in `tables` ([`TAGS`] or [`CITATIONS`]).
    pub fn new(node: Arc<dyn Store>, version: u32, tables: [&'static str; 3]) -> Links {
        Links { node, version, tables, stored: HashMap::new(), changes: BTreeMap::new(), dirty: BTreeSet::new() }
    }

    fn table(&self, name: &str) -> TableRef {
        TableRef::new(MODEL, self.version, name)
    }

    /// Reads the stored rows of `uris` in one store read.
    pub fn prefetch(&mut self, uris: Vec<String>) -> Result<(), ProjectionError> {
        let keys: Vec<(String, Vec<u8>)> = uris.into_iter().filter(|u| !self.stored.contains_key(u)).map(|u| (u, Vec::new())).collect();
        let rows = self.node.get_many(&self.table(self.tables[0]), &keys)?;
        for ((uri, _), row) in keys.into_iter().zip(rows) {
            self.stored.insert(uri, row.as_ref().map(LinkRecord::from_columns));
        }
        Ok(())
    }

    /// The record at `uri` as of the changes so far.
    fn current(&mut self, uri: &str) -> Result<Option<LinkRecord>, ProjectionError> {
        if let Some((record, _)) = self.changes.get(uri) {
            return Ok(Some(record.clone()));
        }
        if !self.stored.contains_key(uri) {
            self.prefetch(vec![uri.to_owned()])?;
        }
        Ok(self.stored.get(uri).cloned().flatten())
    }

    fn change(&mut self, uri: &str, record: LinkRecord, position: u64) -> Result<(), ProjectionError> {
        if let Some(old) = self.current(uri)?.filter(|old| old.live) {
            self.dirty.insert(old.eprint);
        }
        if record.live {
            self.dirty.insert(record.eprint.clone());
        }
        self.changes.insert(uri.to_owned(), (record, position));
        Ok(())
    }

    /// A record written at `record.rev`; an older revision than the one held is skipped.
    /// The same revision again (events applied again after a crash, whose rows landed before
    /// the index commit) marks its eprint for writing again.
    pub fn write(&mut self, uri: &str, record: LinkRecord, position: u64) -> Result<(), ProjectionError> {
        match self.current(uri)? {
            Some(held) if held.rev > record.rev => Ok(()),
            Some(held) if held.rev == record.rev => {
                if held.live {
                    self.dirty.insert(held.eprint);
                }
                Ok(())
            }
            _ => self.change(uri, record, position),
        }
    }

    /// A record deleted at `rev` (or taken down); an older revision is skipped, and the
    /// same one again marks the eprint it was on for writing again.
    pub fn delete(&mut self, uri: &str, rev: &str, position: u64) -> Result<(), ProjectionError> {
        let held = self.current(uri)?;
        match &held {
            Some(h) if h.rev.as_str() > rev => return Ok(()),
            Some(h) if h.rev == rev => {
                if !h.eprint.is_empty() {
                    self.dirty.insert(h.eprint.clone());
                }
                return Ok(());
            }
            _ => {}
        }
        let gone = LinkRecord { rev: rev.to_owned(), live: false, ..held.unwrap_or_default() };
        self.change(uri, gone, position)
    }

    /// Removes every record of the account `did` (its account was deleted).
    pub fn remove_repo(&mut self, did: &str, position: u64) -> Result<(), ProjectionError> {
        let mut uris: BTreeSet<String> = scan_partition(self.node.as_ref(), &self.table(self.tables[2]), did, usize::MAX)?
            .into_iter()
            .filter_map(|r| String::from_utf8(r.clustering).ok())
            .collect();
        uris.extend(self.changes.iter().filter(|(_, (r, _))| r.did == did).map(|(uri, _)| uri.clone()));
        for uri in uris {
            if let Some(held) = self.current(&uri)?.filter(|h| h.live) {
                self.change(&uri, LinkRecord { live: false, ..held }, position)?;
            }
        }
        Ok(())
    }

    /// The values on `eprint` (its normalized tags), with the batch's changes, sorted and
    /// distinct.
    pub fn of(&self, eprint: &str) -> Result<Vec<String>, ProjectionError> {
        let tags: BTreeSet<String> = self.live_on(eprint)?.into_values().collect();
        Ok(tags.into_iter().collect())
    }

    /// How many live records are on `eprint` (its citations), with the batch's changes.
    pub fn count(&self, eprint: &str) -> Result<u64, ProjectionError> {
        Ok(self.live_on(eprint)?.len() as u64)
    }

    /// The live records on `eprint`, record URI → value, with the batch's changes.
    fn live_on(&self, eprint: &str) -> Result<BTreeMap<String, String>, ProjectionError> {
        let mut by_record: BTreeMap<String, String> = scan_partition(self.node.as_ref(), &self.table(self.tables[1]), eprint, usize::MAX)?
            .into_iter()
            .filter_map(|r| Some((String::from_utf8(r.clustering).ok()?, text(&r.columns, "tag")?)))
            .collect();
        for (uri, (record, _)) in &self.changes {
            by_record.remove(uri);
            if record.live && record.eprint == eprint {
                by_record.insert(uri.clone(), record.tag.clone());
            }
        }
        Ok(by_record)
    }

    /// Writes the batch's changes to the node's store and returns the eprints whose records
    /// changed.
    pub fn finish(&mut self) -> Result<BTreeSet<String>, ProjectionError> {
        let mut batch = Batch::default();
        for (uri, (record, position)) in std::mem::take(&mut self.changes) {
            let key = uri.as_bytes().to_vec();
            if let Some(old) = self.stored.get(&uri).cloned().flatten().filter(|old| old.live) {
                batch.delete(&self.table(self.tables[1]), &old.eprint, key.clone(), position);
                batch.delete(&self.table(self.tables[2]), &old.did, key.clone(), position);
            }
            batch.put(&self.table(self.tables[0]), &uri, Vec::new(), record.columns(), position);
            if record.live {
                let mut c = Columns::new();
                c.insert("tag".into(), Value::Text(record.tag.clone()));
                batch.put(&self.table(self.tables[1]), &record.eprint, key.clone(), c, position);
                batch.put(&self.table(self.tables[2]), &record.did, key, Columns::new(), position);
            }
        }
        if !batch.is_empty() {
            self.node.apply(batch)?;
        }
        self.stored.clear();
        Ok(std::mem::take(&mut self.dirty))
    }
}
