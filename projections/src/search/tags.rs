//! The tags on each eprint, as the search projection keeps them in the node's store, so that
//! an eprint's document carries its tags and searches count them (the `tags` facet).
//!
//! The attached model owns `pub.svc.eprint.userTag` records; the index keeps a copy of what
//! it needs from the same events, with the same rules: a record its lexicon refuses is left
//! out, an older revision never replaces a newer one, a delete, a take-down or the deletion of
//! the tagger's account removes the tag. Three tables per version:
//! - `tag_records`: tag record URI → `{eprint, tag, did, rev, live}` (a deleted one stays as a
//!   tombstone with its revision);
//! - `eprint_tags`: eprint URI → tag record URI → `{tag}`;
//! - `repo_tags`: tagger DID → tag record URI (to remove an account's tags).
//!
//! A batch's changes are kept here until [`Tags::finish`] writes them and names the eprints
//! whose documents must be written again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use store::{Batch, Columns, Store, TableRef, Value};

use super::MODEL;
use crate::rows::{scan_partition, text};
use crate::ProjectionError;

/// The tables a version keeps for tags.
pub const TABLES: [&str; 3] = ["tag_records", "eprint_tags", "repo_tags"];

/// One tag record as the index holds it (the default: a record deleted before the index saw
/// it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct TagRecord {
    pub eprint: String,
    /// The normalized tag.
    pub tag: String,
    pub did: String,
    pub rev: String,
    pub live: bool,
}

impl TagRecord {
    fn columns(&self) -> Columns {
        let mut c = Columns::new();
        c.insert("eprint".into(), Value::Text(self.eprint.clone()));
        c.insert("tag".into(), Value::Text(self.tag.clone()));
        c.insert("did".into(), Value::Text(self.did.clone()));
        c.insert("rev".into(), Value::Text(self.rev.clone()));
        c.insert("live".into(), Value::Bool(self.live));
        c
    }

    fn from_columns(c: &Columns) -> TagRecord {
        TagRecord {
            eprint: text(c, "eprint").unwrap_or_default(),
            tag: text(c, "tag").unwrap_or_default(),
            did: text(c, "did").unwrap_or_default(),
            rev: text(c, "rev").unwrap_or_default(),
            live: c.get("live").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

/// The tags of one version, with the changes of the batch being applied.
pub(super) struct Tags {
    node: Arc<dyn Store>,
    version: u32,
    /// Rows as stored before the batch (`None`: none), read on first use.
    stored: HashMap<String, Option<TagRecord>>,
    /// The batch's changes: tag record URI → its new state and the position that made it.
    changes: BTreeMap<String, (TagRecord, u64)>,
    /// Eprints whose tags changed in the batch.
    dirty: BTreeSet<String>,
}

impl Tags {
    pub fn new(node: Arc<dyn Store>, version: u32) -> Tags {
        Tags { node, version, stored: HashMap::new(), changes: BTreeMap::new(), dirty: BTreeSet::new() }
    }

    fn table(&self, name: &str) -> TableRef {
        TableRef::new(MODEL, self.version, name)
    }

    /// Reads the stored rows of `uris` in one store read.
    pub fn prefetch(&mut self, uris: Vec<String>) -> Result<(), ProjectionError> {
        let keys: Vec<(String, Vec<u8>)> = uris.into_iter().filter(|u| !self.stored.contains_key(u)).map(|u| (u, Vec::new())).collect();
        let rows = self.node.get_many(&self.table(TABLES[0]), &keys)?;
        for ((uri, _), row) in keys.into_iter().zip(rows) {
            self.stored.insert(uri, row.as_ref().map(TagRecord::from_columns));
        }
        Ok(())
    }

    /// The record at `uri` as of the changes so far.
    fn current(&mut self, uri: &str) -> Result<Option<TagRecord>, ProjectionError> {
        if let Some((record, _)) = self.changes.get(uri) {
            return Ok(Some(record.clone()));
        }
        if !self.stored.contains_key(uri) {
            self.prefetch(vec![uri.to_owned()])?;
        }
        Ok(self.stored.get(uri).cloned().flatten())
    }

    fn change(&mut self, uri: &str, record: TagRecord, position: u64) -> Result<(), ProjectionError> {
        if let Some(old) = self.current(uri)?.filter(|old| old.live) {
            self.dirty.insert(old.eprint);
        }
        if record.live {
            self.dirty.insert(record.eprint.clone());
        }
        self.changes.insert(uri.to_owned(), (record, position));
        Ok(())
    }

    /// A tag record written at `record.rev`; an older revision than the one held is skipped.
    /// The same revision again (events applied again after a crash, whose rows landed before
    /// the index commit) marks its eprint for writing again.
    pub fn write(&mut self, uri: &str, record: TagRecord, position: u64) -> Result<(), ProjectionError> {
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

    /// A tag record deleted at `rev` (or taken down); an older revision is skipped, and the
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
        let gone = TagRecord { rev: rev.to_owned(), live: false, ..held.unwrap_or_default() };
        self.change(uri, gone, position)
    }

    /// Removes every tag of the account `did` (its account was deleted).
    pub fn remove_repo(&mut self, did: &str, position: u64) -> Result<(), ProjectionError> {
        let mut uris: BTreeSet<String> = scan_partition(self.node.as_ref(), &self.table(TABLES[2]), did, usize::MAX)?
            .into_iter()
            .filter_map(|r| String::from_utf8(r.clustering).ok())
            .collect();
        uris.extend(self.changes.iter().filter(|(_, (r, _))| r.did == did).map(|(uri, _)| uri.clone()));
        for uri in uris {
            if let Some(held) = self.current(&uri)?.filter(|h| h.live) {
                self.change(&uri, TagRecord { live: false, ..held }, position)?;
            }
        }
        Ok(())
    }

    /// The normalized tags on `eprint`, with the batch's changes, sorted and distinct.
    pub fn of(&self, eprint: &str) -> Result<Vec<String>, ProjectionError> {
        let mut by_record: BTreeMap<String, String> = scan_partition(self.node.as_ref(), &self.table(TABLES[1]), eprint, usize::MAX)?
            .into_iter()
            .filter_map(|r| Some((String::from_utf8(r.clustering).ok()?, text(&r.columns, "tag")?)))
            .collect();
        for (uri, (record, _)) in &self.changes {
            by_record.remove(uri);
            if record.live && record.eprint == eprint {
                by_record.insert(uri.clone(), record.tag.clone());
            }
        }
        let tags: BTreeSet<String> = by_record.into_values().collect();
        Ok(tags.into_iter().collect())
    }

    /// Writes the batch's changes to the node's store and returns the eprints whose tags
    /// changed.
    pub fn finish(&mut self) -> Result<BTreeSet<String>, ProjectionError> {
        let mut batch = Batch::default();
        for (uri, (record, position)) in std::mem::take(&mut self.changes) {
            let key = uri.as_bytes().to_vec();
            if let Some(old) = self.stored.get(&uri).cloned().flatten().filter(|old| old.live) {
                batch.delete(&self.table(TABLES[1]), &old.eprint, key.clone(), position);
                batch.delete(&self.table(TABLES[2]), &old.did, key.clone(), position);
            }
            batch.put(&self.table(TABLES[0]), &uri, Vec::new(), record.columns(), position);
            if record.live {
                let mut c = Columns::new();
                c.insert("tag".into(), Value::Text(record.tag.clone()));
                batch.put(&self.table(TABLES[1]), &record.eprint, key.clone(), c, position);
                batch.put(&self.table(TABLES[2]), &record.did, key, Columns::new(), position);
            }
        }
        if !batch.is_empty() {
            self.node.apply(batch)?;
        }
        self.stored.clear();
        Ok(std::mem::take(&mut self.dirty))
    }
}
