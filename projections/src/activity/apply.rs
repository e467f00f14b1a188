//! Applying events to the activity read model.

use std::sync::Arc;

use event_schema::{AccountStatus, Envelope, LoggedActivity, Payload, UserAction, UserCommand};
use store::{consumer_name, Columns, Store, Value};

use super::{feed_key, feed_partitions, record_key, table, ALL, MODEL, TIMEOUT_MICROS};
use crate::catalog::Mode;
use crate::rows::text;
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the activity read model (see the [module docs](super)).
pub struct ActivityProjection {
    store: Arc<dyn Store>,
    version: u32,
    /// Rebuild mode: the flush makes every batch durable ([`crate::staged::settle`]).
    rebuild: bool,
}

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

fn put_text(c: &mut Columns, k: &str, v: Option<&str>) {
    if let Some(v) = v {
        c.insert(k.to_owned(), Value::Text(v.to_owned()));
    }
}

/// How an activity ends: confirmed by its record's write, or failed by its client.
enum Outcome<'a> {
    Confirmed { at: i64, uri: String, cid: Option<&'a str> },
    Failed { code: &'a str, message: &'a str },
}

impl ActivityProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, version: u32, mode: Mode) -> ActivityProjection {
        ActivityProjection { store, version, rebuild: mode == Mode::Rebuild }
    }

    fn get(&self, st: &mut Staged, name: &'static str, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, ProjectionError> {
        Ok(st.get(self.store.as_ref(), &table(self.version, name), partition, clustering)?)
    }

    fn count(&self, st: &mut Staged, category: &str, column: &str, by: i64, position: u64) -> Result<(), ProjectionError> {
        for partition in [ALL, category] {
            let mut c = self.get(st, "stats", partition, &[])?.unwrap_or_default();
            let n = int(&c, column);
            c.insert(column.to_owned(), Value::Int(n + by));
            st.put(&table(self.version, "stats"), partition, Vec::new(), c, position);
        }
        Ok(())
    }

    /// Lists (or unlists) an activity under its status.
    fn list(&self, st: &mut Staged, did: &str, item: &Columns, id: u64, put: bool, position: u64) {
        let (category, status) = (text(item, "category").unwrap_or_default(), text(item, "status").unwrap_or_default());
        let key = feed_key(int(item, "initiatedAt"), id);
        let mut partitions: Vec<(&'static str, String)> =
            feed_partitions(did, &category, &status).into_iter().map(|p| ("feed", p)).collect();
        if status == "pending" {
            partitions.extend([("pending", ALL.to_owned()), ("pending", category.clone())]);
        }
        for (name, partition) in partitions {
            if put {
                st.put(&table(self.version, name), &partition, key.clone(), Columns::new(), position);
            } else {
                st.delete(&table(self.version, name), &partition, key.clone(), position);
            }
        }
    }

    /// `activity.log` by `did`: a pending activity, numbered by its log position.
    fn logged(&self, st: &mut Staged, did: &str, action: &UserAction, e: &Envelope, position: u64) -> Result<(), ProjectionError> {
        let UserAction::ActivityLogged(logged) = action else { return Ok(()) };
        let LoggedActivity { collection, rkey, write, category, target_uri, target_title, trace_id, span_id, ui_context } = logged.as_ref();
        let mut item = Columns::new();
        for (k, v) in [("collection", collection), ("rkey", rkey), ("action", write), ("category", category)] {
            item.insert(k.into(), Value::Text(v.clone()));
        }
        for (k, v) in [
            ("targetUri", target_uri),
            ("targetTitle", target_title),
            ("traceId", trace_id),
            ("spanId", span_id),
            ("uiContext", ui_context),
        ] {
            put_text(&mut item, k, v.as_deref());
        }
        item.insert("status".into(), Value::Text("pending".into()));
        item.insert("initiatedAt".into(), Value::Int(e.appended_at.timestamp_micros()));
        st.put(&table(self.version, "items"), did, position.to_be_bytes().to_vec(), item.clone(), position);
        self.list(st, did, &item, position, true, position);
        let mut open = Columns::new();
        open.insert("id".into(), Value::Int(position as i64));
        st.put(&table(self.version, "open"), &record_key(did, collection, rkey), Vec::new(), open, position);
        self.count(st, category, "logged", 1, position)
    }

    /// Ends the pending activity of `did`'s record `(collection, rkey)`, if there is one and
    /// its hour has not passed at `at` (µs); a write (`deleted` says which kind) ends only an
    /// activity of its kind.
    fn end(
        &self,
        st: &mut Staged,
        (did, collection, rkey): (&str, &str, &str),
        deleted: Option<bool>,
        at: i64,
        outcome: Outcome,
        position: u64,
    ) -> Result<(), ProjectionError> {
        let open_key = record_key(did, collection, rkey);
        let Some(open) = self.get(st, "open", &open_key, &[])? else { return Ok(()) };
        let id = int(&open, "id") as u64;
        let Some(mut item) = self.get(st, "items", did, &id.to_be_bytes())? else { return Ok(()) };
        // A write confirms what it is: a delete confirms a `delete`, a create or update the rest.
        if deleted.is_some_and(|d| d != (text(&item, "action").as_deref() == Some("delete"))) {
            return Ok(());
        }
        st.delete(&table(self.version, "open"), &open_key, Vec::new(), position);
        let initiated = int(&item, "initiatedAt");
        if at - initiated > TIMEOUT_MICROS {
            // Timed out: it stays pending, read as `timeout`.
            return Ok(());
        }
        self.list(st, did, &item, id, false, position);
        let category = text(&item, "category").unwrap_or_default();
        match outcome {
            Outcome::Confirmed { at, uri, cid } => {
                let latency = (at - initiated).max(0) / 1_000;
                item.insert("status".into(), Value::Text("confirmed".into()));
                item.insert("confirmedAt".into(), Value::Int(at));
                item.insert("firehoseUri".into(), Value::Text(uri));
                put_text(&mut item, "firehoseCid", cid);
                item.insert("latencyMs".into(), Value::Int(latency));
                self.count(st, &category, "confirmed", 1, position)?;
                self.count(st, &category, "latencyMs", latency, position)?;
            }
            Outcome::Failed { code, message } => {
                item.insert("status".into(), Value::Text("failed".into()));
                item.insert("errorCode".into(), Value::Text(code.to_owned()));
                item.insert("errorMessage".into(), Value::Text(message.to_owned()));
                self.count(st, &category, "failed", 1, position)?;
            }
        }
        self.list(st, did, &item, id, true, position);
        st.put(&table(self.version, "items"), did, id.to_be_bytes().to_vec(), item, position);
        Ok(())
    }

    /// A deleted account's activities leave the model (the counts stay).
    fn forget(&self, st: &mut Staged, did: &str, position: u64) -> Result<(), ProjectionError> {
        let items = st.rows_in(self.store.as_ref(), &table(self.version, "items"), did, None)?;
        for (key, item) in items {
            let Ok(id) = <[u8; 8]>::try_from(key.as_slice()).map(u64::from_be_bytes) else { continue };
            self.list(st, did, &item, id, false, position);
            let record = record_key(did, &text(&item, "collection").unwrap_or_default(), &text(&item, "rkey").unwrap_or_default());
            st.delete(&table(self.version, "open"), &record, Vec::new(), position);
            st.delete(&table(self.version, "items"), did, key, position);
        }
        Ok(())
    }
}

impl Projection for ActivityProjection {
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
            let at = e.appended_at.timestamp_micros();
            match &e.payload {
                Payload::User(UserCommand { caller, action: action @ UserAction::ActivityLogged { .. } }) => {
                    self.logged(&mut st, caller, action, e, position)?
                }
                Payload::User(UserCommand {
                    caller,
                    action: UserAction::ActivityFailed { collection, rkey, error_code, error_message },
                }) => {
                    let outcome = Outcome::Failed { code: error_code, message: error_message };
                    self.end(&mut st, (caller, collection, rkey), None, at, outcome, position)?
                }
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) => {
                    let outcome = Outcome::Confirmed { at, uri: w.uri(), cid: Some(&w.cid) };
                    self.end(&mut st, (&w.did, &w.collection, &w.rkey), Some(false), at, outcome, position)?
                }
                Payload::RecordDelete(d) => {
                    let outcome = Outcome::Confirmed { at, uri: d.uri(), cid: None };
                    self.end(&mut st, (&d.did, &d.collection, &d.rkey), Some(true), at, outcome, position)?
                }
                Payload::Account(a) if a.status == Some(AccountStatus::Deleted) => self.forget(&mut st, &a.did, position)?,
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
