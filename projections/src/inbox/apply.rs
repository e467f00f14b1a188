//! Applying events to the inbox read model.

use std::collections::BTreeSet;
use std::sync::Arc;

use event_schema::{AccountStatus, AdminAction, AdminCommand, Payload, RecordWrite, UserAction, UserCommand};
use lexicons::{Lexicons, SUBMISSION};
use store::{consumer_name, Columns, Store, Value};
use tracing::warn;

use super::{after_seen, inbox_key, kind_of, table, unread_key, KINDS, MODEL};
use crate::attached::collections::{self, Kind};
use crate::catalog::Mode;
use crate::eprints::read::{self as eprints_read, EprintsReader};
use crate::rows::{is_stale, listing_key, text, TAKEN_DOWN_REV};
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the inbox read model (see the [module docs](super)).
pub struct InboxProjection {
    store: Arc<dyn Store>,
    lexicons: Arc<Lexicons>,
    version: u32,
    /// Rebuild mode: the flush makes every batch durable ([`crate::staged::settle`]).
    rebuild: bool,
}

/// A review or endorsement as the model holds it.
struct Item {
    uri: String,
    kind: Kind,
    eprint: String,
    did: String,
    created_at: i64,
    indexed_at: i64,
}

impl Item {
    fn of(uri: &str, c: &Columns) -> Option<Item> {
        if c.get("live").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let int = |k: &str| c.get(k).and_then(Value::as_int).unwrap_or_default();
        let kind = KINDS.into_iter().find(|k| Some(k.as_str()) == c.get("kind").and_then(Value::as_text))?;
        Some(Item {
            uri: uri.to_owned(),
            kind,
            eprint: text(c, "eprint")?,
            did: text(c, "did")?,
            created_at: int("createdAt"),
            indexed_at: int("indexedAt"),
        })
    }
}

impl InboxProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, lexicons: Arc<Lexicons>, version: u32, mode: Mode) -> InboxProjection {
        InboxProjection { store, lexicons, version, rebuild: mode == Mode::Rebuild }
    }

    fn get(&self, st: &mut Staged, name: &'static str, partition: &str) -> Result<Option<Columns>, ProjectionError> {
        Ok(st.get(self.store.as_ref(), &table(self.version, name), partition, &[])?)
    }

    /// The record URIs listed in one partition of `on_eprint` or `by_writer`.
    fn uris(&self, st: &Staged, name: &'static str, partition: &str) -> Result<Vec<String>, ProjectionError> {
        let rows = st.rows_in(self.store.as_ref(), &table(self.version, name), partition, None)?;
        Ok(rows.into_keys().filter_map(|k| String::from_utf8(k).ok()).collect())
    }

    /// Who an eprint notifies, as the model holds it.
    fn recipients(&self, st: &mut Staged, eprint: &str) -> Result<Vec<String>, ProjectionError> {
        let row = self.get(st, "eprints", eprint)?;
        Ok(row.and_then(|c| text(&c, "recipients")).and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default())
    }

    /// The live item at `uri`.
    fn item(&self, st: &mut Staged, uri: &str) -> Result<Option<Item>, ProjectionError> {
        Ok(self.get(st, "items", uri)?.and_then(|c| Item::of(uri, &c)))
    }

    /// The seen time and unread counts of `recipient`.
    fn state(&self, st: &mut Staged, recipient: &str) -> Result<Columns, ProjectionError> {
        Ok(self.get(st, "state", recipient)?.unwrap_or_default())
    }

    /// Puts `item` in the inbox of `recipient` (`by` = 1) or takes it out (`by` = -1),
    /// counting it unread when svc indexed it after the recipient's `seenAt`; and in (or out
    /// of) the listing of what was written on the recipient's papers, theirs included.
    fn deliver(&self, st: &mut Staged, recipient: &str, item: &Item, by: i64, position: u64) -> Result<(), ProjectionError> {
        let key = inbox_key(recipient, item.kind);
        let mut rows = vec![("papers", listing_key(item.created_at, &item.uri))];
        let mut counts = vec![format!("papers:{}", item.kind)];
        let mut state = self.state(st, recipient)?;
        if recipient != item.did {
            rows.push(("inbox", listing_key(item.created_at, &item.uri)));
            rows.push(("unread", unread_key(item.indexed_at, &item.uri)));
            if item.indexed_at > state.get("seenAt").and_then(Value::as_int).unwrap_or(i64::MIN) {
                counts.push(item.kind.as_str().to_owned());
            }
        }
        for (name, clustering) in rows {
            if by > 0 {
                let c: Columns = [("uri".to_owned(), Value::Text(item.uri.clone()))].into_iter().collect();
                st.put(&table(self.version, name), &key, clustering, c, position);
            } else {
                st.delete(&table(self.version, name), &key, clustering, position);
            }
        }
        for count in counts {
            let n = state.get(&count).and_then(Value::as_int).unwrap_or(0);
            state.insert(count, Value::Int((n + by).max(0)));
        }
        st.put(&table(self.version, "state"), recipient, Vec::new(), state, position);
        Ok(())
    }

    /// A submission at `rev` listing `recipients` (empty and `gone` for a deletion or a
    /// take-down): the inboxes follow the change of its recipients.
    fn eprint(
        &self,
        st: &mut Staged,
        uri: &str,
        rev: &str,
        recipients: Vec<String>,
        gone: bool,
        position: u64,
    ) -> Result<(), ProjectionError> {
        // An eprint nothing was written on has no row: its first item reads it from the
        // eprints model ([`InboxProjection::first_item`]).
        let Some(existing) = self.get(st, "eprints", uri)? else { return Ok(()) };
        if is_stale(Some(&existing), rev) {
            return Ok(());
        }
        let old: BTreeSet<String> = self.recipients(st, uri)?.into_iter().collect();
        let new: BTreeSet<String> = recipients.iter().cloned().collect();
        let mut c = Columns::new();
        c.insert("rev".into(), Value::Text(rev.to_owned()));
        c.insert("recipients".into(), Value::Text(serde_json::to_string(&recipients).unwrap_or_default()));
        c.insert("gone".into(), Value::Bool(gone));
        st.put(&table(self.version, "eprints"), uri, Vec::new(), c, position);
        if old == new {
            return Ok(());
        }
        for item_uri in self.uris(st, "on_eprint", uri)? {
            let Some(item) = self.item(st, &item_uri)? else { continue };
            for r in old.difference(&new) {
                self.deliver(st, r, &item, -1, position)?;
            }
            for r in new.difference(&old) {
                self.deliver(st, r, &item, 1, position)?;
            }
        }
        Ok(())
    }

    /// Gives `eprint` its row when the first item written on it (at log `position`) finds
    /// none, from the eprints model's record row once that model has applied the item (see
    /// [`EprintsReader::past`]): its revision and recipients. A row that model wrote later
    /// than the item is the state this model's own later events of the eprint bring it to;
    /// those are then stale. An eprint it holds no row of notifies no one until its record
    /// arrives (a review may come before the eprint it is about).
    fn first_item(&self, st: &mut Staged, eprint: &str, position: u64) -> Result<(), ProjectionError> {
        if self.get(st, "eprints", eprint)?.is_some() {
            return Ok(());
        }
        let (eprints, past) = EprintsReader::past(self.store.as_ref(), &[position], eprints_read::WAIT)?;
        if !past {
            warn!(eprint, "the eprints model is behind the inbox: the first item on an eprint reads what it holds");
        }
        let written = eprints.written_each(&[eprint])?.pop().flatten();
        let listed = written.as_ref().and_then(|w| Some(w.submission()?.listed_dids(&w.eprint.as_ref()?.did)));
        let mut c = Columns::new();
        if let Some(w) = &written {
            c.insert("rev".into(), Value::Text(w.rev.clone()));
        }
        c.insert("gone".into(), Value::Bool(listed.is_none()));
        c.insert("recipients".into(), Value::Text(serde_json::to_string(&listed.unwrap_or_default()).unwrap_or_default()));
        st.put(&table(self.version, "eprints"), eprint, Vec::new(), c, position);
        Ok(())
    }

    /// A review or endorsement written at `w.rev`.
    fn write(&self, st: &mut Staged, kind: Kind, w: &RecordWrite, appended_at: i64, position: u64) -> Result<(), ProjectionError> {
        if self.lexicons.validate_record(&w.collection, &w.record).is_err() {
            return Ok(());
        }
        let Some(Ok(n)) = collections::normalize(&w.collection, &w.did, &w.rkey, &w.record) else { return Ok(()) };
        let Some(eprint) = n.view.get("eprintUri").and_then(serde_json::Value::as_str).map(str::to_owned) else { return Ok(()) };
        let uri = w.uri();
        let existing = self.get(st, "items", &uri)?;
        if is_stale(existing.as_ref(), &w.rev) {
            return Ok(());
        }
        self.first_item(st, &eprint, position)?;
        let indexed_at = self.withdraw(st, &uri, position)?.unwrap_or(appended_at);
        let item = Item {
            uri: uri.clone(),
            kind,
            eprint: eprint.clone(),
            did: w.did.clone(),
            created_at: n.created_at.timestamp_micros(),
            indexed_at,
        };
        let mut c = Columns::new();
        c.insert("kind".into(), Value::Text(kind.as_str().into()));
        c.insert("eprint".into(), Value::Text(eprint.clone()));
        c.insert("did".into(), Value::Text(w.did.clone()));
        c.insert("rev".into(), Value::Text(w.rev.clone()));
        c.insert("createdAt".into(), Value::Int(item.created_at));
        c.insert("indexedAt".into(), Value::Int(indexed_at));
        c.insert("view".into(), Value::Text(n.view.to_string()));
        c.insert("live".into(), Value::Bool(true));
        st.put(&table(self.version, "items"), &uri, Vec::new(), c, position);
        st.put(&table(self.version, "on_eprint"), &eprint, uri.as_bytes().to_vec(), Columns::new(), position);
        st.put(&table(self.version, "by_writer"), &w.did, uri.as_bytes().to_vec(), Columns::new(), position);
        for r in self.recipients(st, &eprint)? {
            self.deliver(st, &r, &item, 1, position)?;
        }
        Ok(())
    }

    /// Takes the live item at `uri` out of every inbox and its eprint's and writer's lists:
    /// when it was indexed, if it was live.
    fn withdraw(&self, st: &mut Staged, uri: &str, position: u64) -> Result<Option<i64>, ProjectionError> {
        let Some(item) = self.item(st, uri)? else { return Ok(None) };
        for r in self.recipients(st, &item.eprint)? {
            self.deliver(st, &r, &item, -1, position)?;
        }
        st.delete(&table(self.version, "on_eprint"), &item.eprint, uri.as_bytes().to_vec(), position);
        st.delete(&table(self.version, "by_writer"), &item.did, uri.as_bytes().to_vec(), position);
        Ok(Some(item.indexed_at))
    }

    /// A review or endorsement deleted at `rev` (or taken down): out of every inbox; its
    /// row stays as a tombstone at `rev`, so an older write replayed later is skipped.
    fn delete(&self, st: &mut Staged, uri: &str, rev: &str, position: u64) -> Result<(), ProjectionError> {
        let existing = self.get(st, "items", uri)?;
        if is_stale(existing.as_ref(), rev) {
            return Ok(());
        }
        self.gone(st, uri, rev, position)
    }

    /// Withdraws the item at `uri` and leaves its tombstone at `rev`.
    fn gone(&self, st: &mut Staged, uri: &str, rev: &str, position: u64) -> Result<(), ProjectionError> {
        self.withdraw(st, uri, position)?;
        let mut c = Columns::new();
        c.insert("rev".into(), Value::Text(rev.to_owned()));
        c.insert("live".into(), Value::Bool(false));
        st.put(&table(self.version, "items"), uri, Vec::new(), c, position);
        Ok(())
    }

    /// `recipient` has seen everything indexed up to `seen_at` (µs): a later time than the
    /// one held moves it on, and the unread counts are what was indexed after it.
    fn seen(&self, st: &mut Staged, recipient: &str, seen_at: i64, position: u64) -> Result<(), ProjectionError> {
        let mut state = self.state(st, recipient)?;
        if state.get("seenAt").and_then(Value::as_int).is_some_and(|held| held >= seen_at) {
            return Ok(());
        }
        state.insert("seenAt".into(), Value::Int(seen_at));
        let unread = table(self.version, "unread");
        for kind in KINDS {
            let after = after_seen(seen_at);
            let n = st.rows_in(self.store.as_ref(), &unread, &inbox_key(recipient, kind), Some(&after))?.len();
            state.insert(kind.as_str().into(), Value::Int(n as i64));
        }
        st.put(&table(self.version, "state"), recipient, Vec::new(), state, position);
        Ok(())
    }
}

impl Projection for InboxProjection {
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
        for event in batch.iter() {
            let e = event.envelope;
            let position = e.position.ordinal();
            match &e.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if w.collection == SUBMISSION => {
                    if let Some((w, Ok(s))) = event.submission(&self.lexicons) {
                        self.eprint(&mut st, &w.uri(), &w.rev, s.listed_dids(&w.did), false, position)?;
                    }
                }
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) => {
                    if let Some(kind) = kind_of(&w.collection) {
                        self.write(&mut st, kind, w, e.appended_at.timestamp_micros(), position)?;
                    }
                }
                Payload::RecordDelete(d) if d.collection == SUBMISSION => {
                    self.eprint(&mut st, &d.uri(), &d.rev, Vec::new(), true, position)?
                }
                Payload::RecordDelete(d) if kind_of(&d.collection).is_some() => self.delete(&mut st, &d.uri(), &d.rev, position)?,
                Payload::Admin(AdminCommand { action: AdminAction::ContentDeleted { uri, collection, .. }, .. }) => {
                    if collection == SUBMISSION {
                        self.eprint(&mut st, uri, TAKEN_DOWN_REV, Vec::new(), true, position)?;
                    } else if kind_of(collection).is_some() {
                        self.delete(&mut st, uri, TAKEN_DOWN_REV, position)?;
                    }
                }
                Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => {
                    for uri in self.uris(&st, "by_writer", &a.did)? {
                        // At the revision held: the records are gone, not superseded.
                        let rev = self.get(&mut st, "items", &uri)?.and_then(|c| text(&c, "rev")).unwrap_or_default();
                        self.gone(&mut st, &uri, &rev, position)?;
                    }
                }
                Payload::User(UserCommand { caller, action: UserAction::NotificationsSeen { seen_at } }) => {
                    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(seen_at) {
                        self.seen(&mut st, caller, at.timestamp_micros(), position)?;
                    }
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
