//! Applying events to the attached read model.

use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AccountStatus, AdminAction, AdminCommand, BacklinkChange, Envelope, Payload, RecordWrite};
use lexicons::Lexicons;
use store::{consumer_name, Columns, Store, Value};
use tracing::debug;

use super::collections::{self, pairs, Listing, SetMember};
use super::{backlink_count, backlink_sources, backlinks, listing, records, sizes, MODEL};
use crate::catalog::Mode;
use crate::deadletter::Parking;
use crate::records::{Listings, RecordTable};
use crate::rows::{listing_key, text};
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the attached read model (see the [module docs](super)).
pub struct AttachedProjection {
    store: Arc<dyn Store>,
    lexicons: Arc<Lexicons>,
    version: u32,
    /// Rebuild mode: the flush makes every batch durable ([`crate::staged::settle`]).
    rebuild: bool,
}

impl AttachedProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, lexicons: Arc<Lexicons>, version: u32, mode: Mode) -> AttachedProjection {
        AttachedProjection { store, lexicons, version, rebuild: mode == Mode::Rebuild }
    }

    /// Adds `by` to the size kept for a listing (its row in `sizes`), so that a listing's
    /// size is one row read, on every store.
    fn bump(&self, st: &mut Staged, partition: &str, by: i64, position: u64) -> Result<i64, ProjectionError> {
        let table = sizes(self.version);
        let mut row = st.get(self.store.as_ref(), &table, partition, &[])?.unwrap_or_default();
        let n = (row.get("n").and_then(Value::as_int).unwrap_or(0) + by).max(0);
        row.insert("n".into(), Value::Int(n));
        st.put(&table, partition, Vec::new(), row, position);
        Ok(n)
    }

    /// Keeps the distinct sets a record makes its author a member of, after its listings
    /// changed by `by` (1: listed, -1: unlisted): a member joins when its `by` listing gets
    /// its first record and leaves when it loses its last.
    fn sets(&self, st: &mut Staged, members: &[SetMember], by: i64, position: u64) -> Result<(), ProjectionError> {
        for m in members {
            let size = st.get(self.store.as_ref(), &sizes(self.version), &m.by, &[])?.and_then(|c| c.get("n").and_then(Value::as_int));
            let key = listing_key(0, &m.key);
            let joined = match (by, size.unwrap_or(0)) {
                (1, 1) => {
                    let mut c = Columns::new();
                    c.insert("key".into(), Value::Text(m.key.clone()));
                    st.put(&listing(self.version), &m.set, key, c, position);
                    self.bump(st, &m.set, 1, position)?;
                    1
                }
                (-1, 0) => {
                    st.delete(&listing(self.version), &m.set, key, position);
                    self.bump(st, &m.set, -1, position)?;
                    -1
                }
                _ => continue,
            };
            if let Some(space) = &m.pairs {
                let others = self.paired_members(st, m, joined, position)?;
                for other in &others {
                    self.pair(st, space, &m.key, other, joined, position)?;
                    self.pair(st, space, other, &m.key, joined, position)?;
                }
            }
        }
        Ok(())
    }

    /// The other members of a set whose members are paired, as `m` joins (`joined` 1) or
    /// leaves (-1) it. They are kept with the set's size (a `members` column of its row in
    /// `sizes`, next to `n`): one row read, however large the batch (the set's listing
    /// rows are for readers).
    fn paired_members(&self, st: &mut Staged, m: &SetMember, joined: i64, position: u64) -> Result<Vec<String>, ProjectionError> {
        let table = sizes(self.version);
        let mut row = st.get(self.store.as_ref(), &table, &m.set, &[])?.unwrap_or_default();
        let mut members: Vec<String> = text(&row, "members").and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default();
        members.retain(|k| *k != m.key);
        let others = members.clone();
        if joined == 1 {
            members.push(m.key.clone());
        }
        row.insert("members".into(), Value::Text(serde_json::to_string(&members).unwrap_or_default()));
        st.put(&table, &m.set, Vec::new(), row, position);
        Ok(others)
    }

    /// Counts one more (`by` 1) or one fewer (-1) set shared by `a` and `b`, and moves `b`
    /// to its new rank among the keys `a` shares sets with ([`pairs`]).
    fn pair(&self, st: &mut Staged, space: &str, a: &str, b: &str, by: i64, position: u64) -> Result<(), ProjectionError> {
        let n = self.bump(st, &pairs::count(space, a, b), by, position)?;
        let ranked = pairs::ranked(space, a).0;
        let before = n - by;
        if before > 0 {
            st.delete(&listing(self.version), &ranked, pairs::rank_key(before, b), position);
        }
        if n > 0 {
            let mut c = Columns::new();
            c.insert("key".into(), Value::Text(b.to_owned()));
            c.insert("n".into(), Value::Int(n));
            st.put(&listing(self.version), &ranked, pairs::rank_key(n, b), c, position);
        }
        Ok(())
    }

    /// This version's record table.
    fn records(&self) -> RecordTable<'_, Self> {
        RecordTable::new(self.store.as_ref(), records(self.version), self, self.parking())
    }

    /// This version's dead letters.
    fn parking(&self) -> Parking<'_> {
        Parking::new(self.store.as_ref(), MODEL, self.version)
    }

    fn write(&self, st: &mut Staged, event: &Envelope, w: &RecordWrite) -> Result<(), ProjectionError> {
        let uri = w.uri();
        let position = event.position.ordinal();
        let normalized = match self.lexicons.validate_record(&w.collection, &w.record) {
            Err(e) => Err(e.to_string()),
            Ok(()) => collections::normalize(&w.collection, &w.did, &w.rkey, &w.record)
                .unwrap_or_else(|| Err(format!("{} is not an attached collection", w.collection)))
                .map_err(|reason| format!("invalid: {reason}")),
        };
        let n = match normalized {
            Ok(n) => n,
            Err(reason) => {
                self.parking().park(st, event, Some(uri), Some(&w.rev), &reason);
                return Ok(());
            }
        };
        if !self.records().replace(st, &uri, &w.rev, position)? {
            debug!(uri, rev = w.rev, "skipping stale record write");
            return Ok(());
        }
        let at = n.created_at.timestamp_micros();
        let mut lists: Vec<String> = n.lists.into_iter().map(|l| l.0).collect();
        lists.push(Listing::repo(&w.did).0);
        lists.push(Listing::collection(&w.collection).0);
        for partition in &lists {
            let mut c = Columns::new();
            c.insert("uri".into(), Value::Text(uri.clone()));
            st.put(&listing(self.version), partition, listing_key(at, &uri), c, position);
            self.bump(st, partition, 1, position)?;
        }
        self.sets(st, &n.sets, 1, position)?;
        let mut c = Columns::new();
        c.insert("uri".into(), Value::Text(uri.clone()));
        c.insert("did".into(), Value::Text(w.did.clone()));
        c.insert("collection".into(), Value::Text(w.collection.clone()));
        c.insert("cid".into(), Value::Text(w.cid.clone()));
        c.insert("rev".into(), Value::Text(w.rev.clone()));
        c.insert("view".into(), Value::Text(n.view.to_string()));
        c.insert("indexedAt".into(), Value::Text(event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        c.insert("createdAt".into(), Value::Int(at));
        c.insert("lists".into(), Value::Text(serde_json::to_string(&lists).unwrap_or_default()));
        if !n.sets.is_empty() {
            c.insert("sets".into(), Value::Text(serde_json::to_string(&n.sets).unwrap_or_default()));
        }
        c.insert("ordinal".into(), Value::Int(position as i64));
        c.insert("deleted".into(), Value::Bool(false));
        self.records().put(st, &uri, c, position);
        Ok(())
    }

    /// Removes every record of a deleted account (found through its repository listing, in
    /// the store and in this batch).
    fn remove_account_records(&self, st: &mut Staged, did: &str, position: u64) -> Result<(), ProjectionError> {
        let uris = st.listed_uris(self.store.as_ref(), &listing(self.version), &Listing::repo(did).0, |key, c| {
            crate::rows::listed_uri(key, c).map(str::to_owned)
        })?;
        self.records().remove_all(st, uris, position)
    }

    /// Creates, updates or (softly) deletes one backlink, in both of its tables.
    fn backlink(&self, st: &mut Staged, event: &Envelope, b: &BacklinkChange) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let by_target = backlinks(self.version);
        let held = st.get(self.store.as_ref(), &by_target, &b.target_uri, b.source_uri.as_bytes())?;
        let id = held.as_ref().and_then(|c| c.get("id").and_then(Value::as_int)).unwrap_or(position as i64);
        // The live backlinks to the target are counted, in all and per source type.
        if let Some(held) = held.as_ref().filter(|c| c.get("deleted").and_then(Value::as_bool) == Some(false)) {
            let kind = text(held, "sourceType").unwrap_or_default();
            self.bump(st, &backlink_count(&b.target_uri, None), -1, position)?;
            self.bump(st, &backlink_count(&b.target_uri, Some(&kind)), -1, position)?;
        }
        if !b.deleted {
            self.bump(st, &backlink_count(&b.target_uri, None), 1, position)?;
            self.bump(st, &backlink_count(&b.target_uri, Some(&b.source_type)), 1, position)?;
        }
        let mut c = Columns::new();
        c.insert("id".into(), Value::Int(id));
        c.insert("sourceUri".into(), Value::Text(b.source_uri.clone()));
        c.insert("sourceType".into(), Value::Text(b.source_type.clone()));
        c.insert("targetUri".into(), Value::Text(b.target_uri.clone()));
        c.insert("context".into(), b.context.clone().map_or(Value::Null, Value::Text));
        c.insert("indexedAt".into(), Value::Text(event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        c.insert("deleted".into(), Value::Bool(b.deleted));
        c.insert("caller".into(), Value::Text(b.caller.clone()));
        st.put(&backlink_sources(self.version), &b.source_uri, b.target_uri.as_bytes().to_vec(), c.clone(), position);
        st.put(&by_target, &b.target_uri, b.source_uri.as_bytes().to_vec(), c, position);
        Ok(())
    }
}

impl Listings for AttachedProjection {
    /// A review or annotation keeps its place as a placeholder: the tombstone, with the
    /// record's author, collection, CID, dates and its view without content, in the
    /// listings of its eprint, author, parent and repository; it leaves its collection's
    /// (what admins list and count).
    fn placeholder(
        &self,
        st: &mut Staged,
        existing: &Columns,
        tombstone: &Columns,
        position: u64,
    ) -> Result<Option<Columns>, ProjectionError> {
        let Some(collection) = text(existing, "collection").and_then(|c| collections::find(&c)) else { return Ok(None) };
        let Some(view) = text(existing, "view").and_then(|v| serde_json::from_str::<serde_json::Value>(&v).ok()) else { return Ok(None) };
        let Some(placeholder) = collection.placeholder(&view) else { return Ok(None) };
        let (Some(uri), Some(at)) = (text(existing, "uri"), existing.get("createdAt").and_then(Value::as_int)) else { return Ok(None) };
        let all = Listing::collection(collection.nsid).0;
        let mut lists: Vec<String> = text(existing, "lists").and_then(|l| serde_json::from_str(&l).ok()).unwrap_or_default();
        if lists.contains(&all) {
            lists.retain(|l| *l != all);
            st.delete(&listing(self.version), &all, listing_key(at, &uri), position);
            self.bump(st, &all, -1, position)?;
        }
        let mut row = tombstone.clone();
        for key in ["did", "collection", "cid", "createdAt", "indexedAt"] {
            if let Some(v) = existing.get(key) {
                row.insert(key.into(), v.clone());
            }
        }
        row.insert("lists".into(), Value::Text(serde_json::to_string(&lists).unwrap_or_default()));
        row.insert("view".into(), Value::Text(placeholder.to_string()));
        row.insert("placeholder".into(), Value::Bool(true));
        Ok(Some(row))
    }

    /// Removes a live record from the listings it appears in (its `lists`), each listing's
    /// size following.
    fn unlist(&self, st: &mut Staged, _uri: &str, existing: &Columns, position: u64) -> Result<(), ProjectionError> {
        let (Some(uri), Some(at)) = (text(existing, "uri"), existing.get("createdAt").and_then(Value::as_int)) else { return Ok(()) };
        let lists: Vec<String> = text(existing, "lists").and_then(|l| serde_json::from_str(&l).ok()).unwrap_or_default();
        for partition in lists {
            st.delete(&listing(self.version), &partition, listing_key(at, &uri), position);
            self.bump(st, &partition, -1, position)?;
        }
        let sets: Vec<SetMember> = text(existing, "sets").and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default();
        self.sets(st, &sets, -1, position)
    }
}

/// Whether the model keeps records of `collection`.
pub fn keeps(collection: &str) -> bool {
    collections::find(collection).is_some()
}

impl Projection for AttachedProjection {
    fn model(&self) -> &'static str {
        MODEL
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.store.checkpoints(&consumer_name(MODEL, self.version))?)
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        let mut st = Staged::default();
        let uris = batch.record_uris_where(keeps);
        st.prefetch(self.store.as_ref(), &records(self.version), uris.clone())?;
        self.parking().prefetch(&mut st, uris)?;
        for event in batch.events() {
            let position = event.position.ordinal();
            match &event.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if keeps(&w.collection) => self.write(&mut st, event, w)?,
                Payload::RecordDelete(d) if keeps(&d.collection) => self.records().delete(&mut st, &d.uri(), &d.rev, position)?,
                Payload::Backlink(b) => self.backlink(&mut st, event, b)?,
                Payload::Admin(AdminCommand { action, .. }) => {
                    self.parking().release(&mut st, event)?;
                    if let AdminAction::ContentDeleted { uri, collection, .. } = action {
                        if keeps(collection) {
                            self.records().take_down(&mut st, uri, position)?;
                        }
                    }
                }
                Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => {
                    self.remove_account_records(&mut st, &a.did, position)?
                }
                _ => {}
            }
        }
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next())?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        crate::staged::settle(self.store.as_ref(), MODEL, self.version, self.rebuild)?;
        Ok(())
    }
}
