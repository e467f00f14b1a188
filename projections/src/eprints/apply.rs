//! Applying events to the eprints read model.

use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AccountStatus, AdminAction, AdminCommand, Envelope, Payload, RecordWrite};
use lexicons::{Lexicons, SUBMISSION};
use store::{consumer_name, Columns, Store, Value};
use tracing::debug;

use super::{accounts, author_key, by_author, by_external_id, external_ids, key_uri, records, UriForm, MODEL};
use crate::attached::collections::PROFILE;
use crate::catalog::Mode;
use crate::deadletter::Parking;
use crate::records::{Listings, RecordTable};
use crate::rows::text;
use crate::staged::Staged;
use crate::submission::Submission;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the eprints read model (see the [module docs](super)).
pub struct EprintsProjection {
    store: Arc<dyn Store>,
    lexicons: Arc<Lexicons>,
    version: u32,
    /// Rebuild mode: batches are applied without waiting for durability, and made durable
    /// together when the projection is flushed (a crash before then re-reads them from the
    /// log: the checkpoints are lost with the rows).
    rebuild: bool,
}

impl EprintsProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, lexicons: Arc<Lexicons>, version: u32, mode: Mode) -> EprintsProjection {
        EprintsProjection { store, lexicons, version, rebuild: mode == Mode::Rebuild }
    }
}

/// The listing key of rows written before listings were ordered by the data: the time the
/// event was appended, then its log position.
fn legacy_listing_key(appended_at_micros: i64, ordinal: u64) -> Vec<u8> {
    let mut k = (appended_at_micros as u64).to_be_bytes().to_vec();
    k.extend_from_slice(&ordinal.to_be_bytes());
    k
}

impl EprintsProjection {
    /// This version's record table.
    fn records(&self) -> RecordTable<'_, Self> {
        RecordTable::new(self.store.as_ref(), records(self.version), self, self.parking())
    }

    /// This version's dead letters.
    fn parking(&self) -> Parking<'_> {
        Parking::new(self.store.as_ref(), MODEL, self.version)
    }

    fn write(
        &self,
        st: &mut Staged,
        event: &Envelope,
        w: &RecordWrite,
        submission: Result<&Submission, &str>,
    ) -> Result<(), ProjectionError> {
        let uri = w.uri();
        let position = event.position.ordinal();
        let submission = match submission {
            Ok(s) => s,
            Err(reason) => {
                self.parking().park(st, event, Some(uri), Some(&w.rev), reason);
                return Ok(());
            }
        };
        if !self.records().replace(st, &uri, &w.rev, position)? {
            debug!(uri, rev = w.rev, "skipping stale record write");
            return Ok(());
        }
        let indexed_at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let listed = submission.listed_dids(&w.did);
        let at = submission.created_at.timestamp_micros();
        // The keys hold the URI (compact: `key_uri`): the rows need nothing more.
        for did in &listed {
            st.put(&by_author(self.version), did, author_key(at, &uri, UriForm::Compact), Columns::new(), position);
        }
        for id in external_ids(&submission.record) {
            st.put(&by_external_id(self.version), &id, key_uri(&uri, UriForm::Compact), Columns::new(), position);
        }
        // The row holds what nothing else gives: its URI is its key, and its listings
        // follow from its record ([`listing_of`]).
        let mut c = Columns::new();
        c.insert("cid".into(), Value::Text(w.cid.clone()));
        c.insert("rev".into(), Value::Text(w.rev.clone()));
        c.insert("record".into(), Value::Text(submission.record.to_string()));
        c.insert("indexedAt".into(), Value::Text(indexed_at));
        c.insert("ordinal".into(), Value::Int(position as i64));
        self.records().put(st, &uri, c, position);
        Ok(())
    }

    /// Registers `did` as a user the index knows (`firstSeen` in its account), at its first
    /// event, and keeps its handle when an identity event names one. (Author search finds
    /// users in the search model's index of them, `search::people`, made from these rows.)
    fn user(&self, st: &mut Staged, did: &str, at: &str, position: u64) -> Result<(), ProjectionError> {
        let account = st.get(self.store.as_ref(), &accounts(self.version), did, &[])?.unwrap_or_default();
        if text(&account, "firstSeen").is_some() {
            return Ok(());
        }
        let since = at.to_owned();
        self.account(st, did, position, |c| {
            c.insert("firstSeen".into(), Value::Text(since));
        })
    }

    /// Removes the records of a deleted account: each becomes a tombstone (at the revision
    /// the model holds) and leaves every listing. Its records are found through its own
    /// by-author partition (the repository owner is always listed), in the store and in
    /// this batch.
    fn remove_account_records(&self, st: &mut Staged, did: &str, position: u64) -> Result<(), ProjectionError> {
        let prefix = format!("at://{did}/");
        let uris = st.listed_uris(self.store.as_ref(), &by_author(self.version), did, super::author_listed_uri)?;
        self.records().remove_all(st, uris.into_iter().filter(|u| u.starts_with(&prefix)), position)
    }

    /// Reads the record and account rows the batch's events decide on, one store read per
    /// table instead of one per event.
    fn prefetch(&self, st: &mut Staged, batch: &EventBatch) -> Result<(), ProjectionError> {
        let dids = batch
            .events()
            .iter()
            .filter_map(|e| match &e.payload {
                Payload::Identity(i) => Some(i.did.clone()),
                Payload::Account(a) => Some(a.did.clone()),
                Payload::RecordCreate(w) => Some(w.did.clone()),
                _ => None,
            })
            .collect();
        let uris = batch.record_uris(SUBMISSION);
        st.prefetch(self.store.as_ref(), &records(self.version), uris.clone())?;
        st.prefetch(self.store.as_ref(), &accounts(self.version), dids)?;
        self.parking().prefetch(st, uris)?;
        Ok(())
    }

    /// Updates an account row.
    fn account(&self, st: &mut Staged, did: &str, position: u64, update: impl FnOnce(&mut Columns)) -> Result<(), ProjectionError> {
        let table = accounts(self.version);
        let mut c = st.get(self.store.as_ref(), &table, did, &[])?.unwrap_or_default();
        update(&mut c);
        st.put(&table, did, Vec::new(), c, position);
        Ok(())
    }

    /// Keeps the display name of the account's `pub.svc.actor.profile` record (`profileName`)
    /// for author search: set by a valid profile write, cleared by its delete.
    fn profile(&self, st: &mut Staged, did: &str, name: Option<String>, position: u64) -> Result<(), ProjectionError> {
        self.account(st, did, position, |c| match name {
            Some(n) => {
                c.insert("profileName".into(), Value::Text(n));
            }
            None => {
                c.remove("profileName");
            }
        })
    }
}

impl Listings for EprintsProjection {
    /// Removes the by-author and by-identifier rows of a live record as the model holds it.
    fn unlist(&self, st: &mut Staged, uri: &str, existing: &Columns, position: u64) -> Result<(), ProjectionError> {
        let record: serde_json::Value = text(existing, "record").and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default();
        let listing = listing_of(uri, existing, &record)?;
        for did in listing.dids {
            st.delete(&by_author(self.version), &did, listing.author_key.clone(), position);
        }
        let key = key_uri(uri, listing.form);
        for id in external_ids(&record) {
            st.delete(&by_external_id(self.version), &id, key.clone(), position);
        }
        Ok(())
    }
}

/// Where a record row is listed: the DIDs of its `by_author` partitions, its key there,
/// and the form its URI has in the keys of both listings.
struct Listing {
    dids: Vec<String>,
    author_key: Vec<u8>,
    form: UriForm,
}

/// Where the record row `existing` of `uri` (its record parsed: `record`) is listed. Rows
/// written since eprints rows left them out (none hold `listed`) are listed as the record
/// they hold was when it was written: their DIDs and date follow from it, the same code
/// normalizing it again. Rows of earlier builds name their DIDs and date, and say which
/// form of key they were listed with.
fn listing_of(uri: &str, existing: &Columns, record: &serde_json::Value) -> Result<Listing, ProjectionError> {
    let Some(listed) = text(existing, "listed") else {
        let submission = crate::submission::normalize(record)
            .map_err(|reason| ProjectionError::Corrupt(format!("eprint row of {uri}: its record does not normalize again: {reason}")))?;
        let at = submission.created_at.timestamp_micros();
        return Ok(Listing {
            dids: submission.listed_dids(super::repo_of(uri)),
            author_key: author_key(at, uri, UriForm::Compact),
            form: UriForm::Compact,
        });
    };
    let dids: Vec<String> = serde_json::from_str(&listed).unwrap_or_default();
    let ordinal = existing.get("ordinal").and_then(Value::as_int).unwrap_or_default() as u64;
    let at = existing.get("listingAt").and_then(Value::as_int).unwrap_or_default();
    // The keys as the row's writer made them: compact URIs (eprints format 7), short ones
    // (format 6), full ones, or the log's order (before listings were ordered by the data).
    let flag = |name: &str| existing.get(name).and_then(Value::as_bool) == Some(true);
    let form = if flag("compactKeys") {
        UriForm::Compact
    } else if flag("shortKeys") {
        UriForm::Short
    } else {
        UriForm::Whole
    };
    let author_key = if flag("listingByData") { author_key(at, uri, form) } else { legacy_listing_key(at, ordinal) };
    Ok(Listing { dids, author_key, form })
}

impl Projection for EprintsProjection {
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
        self.prefetch(&mut st, batch)?;
        let mut seen = std::collections::HashSet::new();
        for event in batch.iter() {
            if let Payload::RecordCreate(w) = &event.envelope.payload {
                if seen.insert(w.did.clone()) {
                    let at = event.envelope.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
                    self.user(&mut st, &w.did, &at, event.envelope.position.ordinal())?;
                }
            }
            if let Some((w, submission)) = event.submission(&self.lexicons) {
                self.write(&mut st, event.envelope, w, submission)?;
                continue;
            }
            let position = event.envelope.position.ordinal();
            match &event.envelope.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if w.collection == PROFILE && w.rkey == "self" => {
                    if self.lexicons.validate_record(PROFILE, &w.record).is_ok() {
                        let name = w.record.get("displayName").and_then(serde_json::Value::as_str).map(str::to_owned);
                        self.profile(&mut st, &w.did, name, position)?;
                    }
                }
                Payload::RecordDelete(d) if d.collection == PROFILE && d.rkey == "self" => self.profile(&mut st, &d.did, None, position)?,
                Payload::RecordCreate(_)
                | Payload::RecordUpdate(_)
                | Payload::Backlink(_)
                | Payload::Access(_)
                | Payload::User(_)
                | Payload::Usage(_)
                | Payload::Search(_)
                | Payload::External(_)
                | Payload::Enrichment(_) => {}
                Payload::Admin(AdminCommand { action, .. }) => {
                    self.parking().release(&mut st, event.envelope)?;
                    if let AdminAction::ContentDeleted { uri, collection, .. } = action {
                        if collection == SUBMISSION {
                            self.records().take_down(&mut st, uri, position)?;
                        }
                    }
                }
                Payload::RecordDelete(d) if d.collection == SUBMISSION => self.records().delete(&mut st, &d.uri(), &d.rev, position)?,
                Payload::RecordDelete(_) => {}
                Payload::Identity(i) => {
                    let at = event.envelope.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
                    self.user(&mut st, &i.did, &at, position)?;
                    self.account(&mut st, &i.did, position, |c| {
                        if let Some(h) = &i.handle {
                            c.insert("handle".into(), Value::Text(h.clone()));
                        }
                        if let Some(n) = &i.display_name {
                            c.insert("displayName".into(), Value::Text(n.clone()));
                        }
                    })?
                }
                Payload::Rejected(r) => {
                    self.parking().refused(&mut st, event.envelope, &r.reason);
                }
                Payload::Account(a) => {
                    if a.status == Some(AccountStatus::Deleted) {
                        self.remove_account_records(&mut st, &a.did, position)?;
                    }
                    self.account(&mut st, &a.did, position, |c| {
                        c.insert("active".into(), Value::Bool(a.active));
                        let status =
                            a.status.as_ref().and_then(|s| serde_json::to_value(s).ok()).and_then(|v| v.as_str().map(str::to_owned));
                        c.insert("status".into(), status.map_or(Value::Null, Value::Text));
                    })?
                }
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
