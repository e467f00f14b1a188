//! Applying events to the admin read model.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AdminAction, AdminCommand, Envelope, Payload, Source, UserAction, UserCommand};
use store::{consumer_name, Columns, Store, Value};

use super::{table, ALL, MODEL};
use crate::catalog::Mode;
use crate::rows::text;
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// A violation: a record an admin took down, or one a user reported.
struct Violation<'e> {
    kind: &'static str,
    actor: &'e str,
    uri: &'e str,
    collection: &'e str,
    reason: Option<&'e str>,
    description: Option<&'e str>,
}

impl<'e> Violation<'e> {
    /// The report `event` makes, if it is one (a take-down is an admin command, read with
    /// the others).
    fn of(event: &'e Envelope) -> Option<Violation<'e>> {
        let Payload::User(UserCommand { caller, action: UserAction::Reported { target_uri, target_collection, reason, description } }) =
            &event.payload
        else {
            return None;
        };
        Some(Violation {
            kind: "report",
            actor: caller,
            uri: target_uri,
            collection: target_collection,
            reason: Some(reason),
            description: description.as_deref(),
        })
    }
}

/// Builds the admin read model (see the [module docs](super)).
pub struct AdminProjection {
    store: Arc<dyn Store>,
    version: u32,
    rebuild: bool,
}

/// What one batch saw of one source or host, written once per batch.
#[derive(Default)]
struct Seen {
    events: i64,
    records: i64,
    cursor: Option<i64>,
    kind: &'static str,
    first: String,
    last: String,
    position: u64,
    dids: HashSet<String>,
}

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

impl AdminProjection {
    /// Keeps `v`, made by `event`, in `violations` (and by the record's repository).
    fn violation(&self, st: &mut Staged, event: &Envelope, v: &Violation) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let did = lexicons::formats::parse_at_uri(v.uri).map(|u| u.authority.to_owned()).unwrap_or_default();
        let text = |s: Option<&str>| s.map_or(Value::Null, |s| Value::Text(s.to_owned()));
        let mut c = Columns::new();
        c.insert("id".into(), Value::Text(position.to_string()));
        c.insert("type".into(), Value::Text(v.kind.into()));
        c.insert("actor".into(), Value::Text(v.actor.into()));
        c.insert("uri".into(), Value::Text(v.uri.into()));
        c.insert("collection".into(), Value::Text(v.collection.into()));
        c.insert("did".into(), Value::Text(did.clone()));
        c.insert("reason".into(), text(v.reason));
        c.insert("description".into(), text(v.description));
        c.insert("createdAt".into(), Value::Text(event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        let key = position.to_be_bytes().to_vec();
        st.put(&table(self.version, "violations"), ALL, key.clone(), c.clone(), position);
        st.put(&table(self.version, "violations_by_did"), &did, key, c, position);
        let counts = table(self.version, "violation_counts");
        let n = st.get(self.store.as_ref(), &counts, v.kind, &[])?.and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0);
        st.put(&counts, v.kind, Vec::new(), [("n".to_owned(), Value::Int(n + 1))].into_iter().collect(), position);
        Ok(())
    }

    /// Keeps the first report of a governance proposal's publication.
    #[allow(clippy::too_many_arguments)]
    fn published(
        &self,
        st: &mut Staged,
        event: &Envelope,
        actor: &str,
        proposal: &str,
        uri: &str,
        cid: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), ProjectionError> {
        let published = table(self.version, "published");
        if st.get(self.store.as_ref(), &published, proposal, &[])?.is_some() {
            return Ok(());
        }
        let text = |s: Option<&str>| s.map_or(Value::Null, |s| Value::Text(s.to_owned()));
        let mut c = Columns::new();
        c.insert("uri".into(), Value::Text(uri.to_owned()));
        c.insert("cid".into(), text(cid));
        c.insert("error".into(), text(error));
        c.insert("at".into(), Value::Text(event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        c.insert("actor".into(), Value::Text(actor.to_owned()));
        st.put(&published, proposal, Vec::new(), c, event.position.ordinal());
        Ok(())
    }

    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, version: u32, mode: Mode) -> AdminProjection {
        AdminProjection { store, version, rebuild: mode == Mode::Rebuild }
    }

    fn operation(&self, st: &mut Staged, event: &Envelope, cmd: &AdminCommand) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let ops = table(self.version, "operations");
        let id = match &cmd.action {
            AdminAction::OperationStarted { id, .. }
            | AdminAction::OperationProgressed { id, .. }
            | AdminAction::OperationCancelRequested { id }
            | AdminAction::OperationEnded { id, .. } => id.clone(),
            _ => return Ok(()),
        };
        let held = st.get(self.store.as_ref(), &ops, ALL, id.as_bytes())?;
        let running = held.as_ref().is_some_and(|c| text(c, "status").as_deref() == Some("running"));
        let mut c = held.clone().unwrap_or_default();
        match &cmd.action {
            AdminAction::OperationStarted { operation, runs, metadata, .. } => {
                if held.is_some() {
                    return Ok(());
                }
                c.insert("id".into(), Value::Text(id.clone()));
                c.insert("type".into(), Value::Text(operation.clone()));
                c.insert("status".into(), Value::Text("running".into()));
                c.insert("runs".into(), Value::Bool(*runs));
                c.insert("startedAt".into(), Value::Text(at.clone()));
                c.insert("processed".into(), Value::Int(0));
                c.insert("progress".into(), Value::Int(0));
                c.insert("metadata".into(), metadata.clone().map_or(Value::Null, Value::Text));
                c.insert("actor".into(), Value::Text(cmd.actor.clone()));
            }
            AdminAction::OperationProgressed { processed, total, .. } => {
                if !running {
                    return Ok(());
                }
                // Reports may come from two tasks of the runner (its work and its
                // heartbeat) and land out of order: progress only grows.
                let processed = (*processed).max(int(&c, "processed").max(0) as u64);
                c.insert("processed".into(), Value::Int(processed as i64));
                if let Some(total) = total {
                    c.insert("total".into(), Value::Int(*total as i64));
                    let pct = if *total == 0 { 100 } else { (processed.saturating_mul(100) / total).min(99) };
                    c.insert("progress".into(), Value::Int(pct as i64));
                }
            }
            AdminAction::OperationCancelRequested { .. } => {
                if !running {
                    return Ok(());
                }
                c.insert("cancelRequested".into(), Value::Bool(true));
                if c.get("runs").and_then(Value::as_bool) == Some(false) {
                    // Nothing runs it: the record itself is the whole operation.
                    c.insert("status".into(), Value::Text("cancelled".into()));
                    c.insert("completedAt".into(), Value::Text(at.clone()));
                }
            }
            AdminAction::OperationEnded { status, processed, error, .. } => {
                if !running {
                    return Ok(());
                }
                c.insert("status".into(), Value::Text(status.clone()));
                c.insert("processed".into(), Value::Int(*processed as i64));
                c.insert("completedAt".into(), Value::Text(at.clone()));
                c.insert("error".into(), error.clone().map_or(Value::Null, Value::Text));
                if status == "completed" {
                    c.insert("progress".into(), Value::Int(100));
                }
            }
            _ => {}
        }
        if held.is_none() && !matches!(cmd.action, AdminAction::OperationStarted { .. }) {
            return Ok(());
        }
        c.insert("updatedAt".into(), Value::Text(at));
        st.put(&ops, ALL, id.into_bytes(), c, position);
        Ok(())
    }

    /// Registers a host an admin named (`rescanPDS`), marking when.
    fn register(&self, st: &mut Staged, event: &Envelope, url: &str) -> Result<(), ProjectionError> {
        let hosts = table(self.version, "hosts");
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut c = st.get(self.store.as_ref(), &hosts, ALL, url.as_bytes())?.unwrap_or_default();
        c.insert("url".into(), Value::Text(url.to_owned()));
        if !c.contains_key("firstSeen") {
            c.insert("firstSeen".into(), Value::Text(at.clone()));
        }
        c.insert("rescannedAt".into(), Value::Text(at));
        st.put(&hosts, ALL, url.as_bytes().to_vec(), c, event.position.ordinal());
        Ok(())
    }

    /// Writes what the batch saw of each source and host: one row each, and the host's
    /// users not counted yet.
    fn record_sightings(
        &self,
        st: &mut Staged,
        sources: HashMap<String, Seen>,
        hosts: HashMap<String, Seen>,
    ) -> Result<(), ProjectionError> {
        let table_sources = table(self.version, "sources");
        for (url, seen) in sources {
            let mut c = st.get(self.store.as_ref(), &table_sources, ALL, url.as_bytes())?.unwrap_or_default();
            c.insert("url".into(), Value::Text(url.clone()));
            c.insert("type".into(), Value::Text(seen.kind.to_owned()));
            if let Some(cursor) = seen.cursor {
                c.insert("cursor".into(), Value::Int(cursor.max(int(&c, "cursor"))));
            }
            c.insert("lastEventAt".into(), Value::Text(seen.last.clone()));
            c.insert("events".into(), Value::Int(int(&c, "events") + seen.events));
            st.put(&table_sources, ALL, url.into_bytes(), c, seen.position);
        }
        let table_hosts = table(self.version, "hosts");
        let host_users = table(self.version, "host_users");
        for (url, seen) in hosts {
            let mut c = st.get(self.store.as_ref(), &table_hosts, ALL, url.as_bytes())?.unwrap_or_default();
            let mut new_users = 0;
            for did in &seen.dids {
                if st.get(self.store.as_ref(), &host_users, &url, did.as_bytes())?.is_none() {
                    st.put(&host_users, &url, did.as_bytes().to_vec(), Columns::new(), seen.position);
                    new_users += 1;
                }
            }
            if !c.contains_key("firstSeen") {
                c.insert("firstSeen".into(), Value::Text(seen.first.clone()));
            }
            c.insert("url".into(), Value::Text(url.clone()));
            c.insert("lastSeen".into(), Value::Text(seen.last.clone()));
            c.insert("records".into(), Value::Int(int(&c, "records") + seen.records));
            c.insert("users".into(), Value::Int(int(&c, "users") + new_users));
            st.put(&table_hosts, ALL, url.into_bytes(), c, seen.position);
        }
        Ok(())
    }
}

/// Whether an event reports what a repository holds (a record, an identity, an account),
/// as opposed to a command of svc's own (its host is svc, not a repository host).
fn is_repo_event(payload: &Payload) -> bool {
    matches!(
        payload,
        Payload::RecordCreate(_) | Payload::RecordUpdate(_) | Payload::RecordDelete(_) | Payload::Identity(_) | Payload::Account(_)
    )
}

/// Notes one event from `url` in `seen`.
fn sighting<'a>(seen: &'a mut HashMap<String, Seen>, url: &str, event: &Envelope, at: &str) -> &'a mut Seen {
    let s = seen.entry(url.to_owned()).or_default();
    if s.first.is_empty() {
        s.first = at.to_owned();
    }
    s.last = at.to_owned();
    s.position = s.position.max(event.position.ordinal());
    s.events += 1;
    s
}

impl Projection for AdminProjection {
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
        let mut sources: HashMap<String, Seen> = HashMap::new();
        let mut hosts: HashMap<String, Seen> = HashMap::new();
        for event in batch.events() {
            if let Some(report) = Violation::of(event) {
                self.violation(&mut st, event, &report)?;
                continue;
            }
            if let Payload::Admin(cmd) = &event.payload {
                if let AdminAction::HostRegistered { url } = &cmd.action {
                    self.register(&mut st, event, url)?;
                }
                if let AdminAction::GovernancePublished { proposal, uri, cid, error } = &cmd.action {
                    self.published(&mut st, event, &cmd.actor, proposal, uri, cid.as_deref(), error.as_deref())?;
                }
                if let AdminAction::ContentDeleted { uri, collection, reason } = &cmd.action {
                    let taken_down =
                        Violation { kind: "takedown", actor: &cmd.actor, uri, collection, reason: reason.as_deref(), description: None };
                    self.violation(&mut st, event, &taken_down)?;
                }
                self.operation(&mut st, event, cmd)?;
                continue;
            }
            let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
            let (host, source) = match &event.source {
                Source::Firehose { url, seq } => (Some(url.as_str()), Some((url.as_str(), "firehose", *seq))),
                Source::Jetstream { url, time_us } => (None, Some((url.as_str(), "jetstream", *time_us))),
                Source::Backfill { host } => (Some(host.as_str()), None),
                Source::Command { host, .. } if !host.is_empty() && is_repo_event(&event.payload) => (Some(host.as_str()), None),
                _ => (None, None),
            };
            if let Some((url, kind, cursor)) = source {
                let s = sighting(&mut sources, url, event, &at);
                s.kind = kind;
                s.cursor = Some(s.cursor.map_or(cursor, |c| c.max(cursor)));
            }
            if let Some(url) = host {
                let is_record = matches!(event.payload, Payload::RecordCreate(_) | Payload::RecordUpdate(_) | Payload::RecordDelete(_));
                let did = event.payload.did().to_owned();
                let h = sighting(&mut hosts, url, event, &at);
                h.records += i64::from(is_record);
                if is_record {
                    h.dids.insert(did);
                }
            }
        }
        self.record_sightings(&mut st, sources, hosts)?;
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next())?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        crate::staged::settle(self.store.as_ref(), MODEL, self.version, self.rebuild)?;
        Ok(())
    }
}
