//! Following a Jetstream instance (`/subscribe`): the firehose re-encoded as JSON, one event
//! per text message (`kind` `commit`, `identity` or `account`).
//!
//! Jetstream drops the signed commit and the CAR, so its events **cannot be verified**: svc
//! trusts the instance it is pointed at (use `--firehose` for verified ingest). What can be
//! checked is checked: the DID, collection, record key and CID are well formed, and a
//! record's CID is recomputed from the record (JSON back to DAG-CBOR): a record that does not
//! match its CID becomes a `repo.rejected` event. The rest is as with the firehose: only
//! followed collections (also asked of the server with `wantedCollections`), per-DID `rev`
//! skip, the cursor (the last event's `time_us`) a log checkpoint committed after each append,
//! resumed after it on restart; reconnection with backoff and jitter. A handle is shown only
//! if it resolves to the event's DID. The first start follows
//! from the live end (Jetstream keeps a short window of history; `svc backfill pds` brings in
//! the rest).

use std::sync::Arc;
use std::time::Duration;

use event_schema::{AccountChange, AccountStatus, IdentityChange, NewEvent, Payload, RecordDelete, RecordWrite, Rejected, Source};
use eventlog::EventLog;
use futures::StreamExt;
use serde::Deserialize;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::commit::follows;
use crate::firehose::backoff;
use crate::handle::HandleResolver;
use crate::revs::LastRevs;
use crate::{cursor, data_model, IngestError};

/// Events gathered before one append.
const MAX_PENDING: usize = 512;
/// How long to wait for more events before appending what is pending.
const LINGER: Duration = Duration::from_millis(10);

/// One Jetstream message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JetstreamEvent {
    /// The repository or account.
    pub did: String,
    /// When Jetstream saw it (microseconds since the epoch): the cursor.
    pub time_us: i64,
    /// `commit`, `identity` or `account`.
    pub kind: String,
    /// For `commit`.
    #[serde(default)]
    pub commit: Option<JetstreamCommit>,
    /// For `identity`.
    #[serde(default)]
    pub identity: Option<JetstreamIdentity>,
    /// For `account`.
    #[serde(default)]
    pub account: Option<JetstreamAccount>,
}

/// One record operation of a commit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JetstreamCommit {
    /// The commit's revision.
    pub rev: String,
    /// `create`, `update` or `delete`.
    pub operation: String,
    /// The collection.
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The record (creates and updates).
    #[serde(default)]
    pub record: Option<serde_json::Value>,
    /// The record's CID (creates and updates).
    #[serde(default)]
    pub cid: Option<String>,
}

/// An identity change.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JetstreamIdentity {
    /// The new handle, if any.
    #[serde(default)]
    pub handle: Option<String>,
}

/// An account status change.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JetstreamAccount {
    /// Whether the account is active.
    pub active: bool,
    /// Why not, when not.
    #[serde(default)]
    pub status: Option<String>,
}

/// The Jetstream follower.
pub struct Jetstream {
    url: String,
    collections: Vec<String>,
    log: Arc<dyn EventLog>,
    handles: Arc<HandleResolver>,
    last_rev: LastRevs,
}

impl Jetstream {
    /// A follower of the instance at `url` (a `ws://` or `wss://` base, or its `/subscribe`
    /// URL) for `collections`, appending to `log` and checking handles with `handles`.
    pub fn new(url: &str, collections: Vec<String>, log: Arc<dyn EventLog>, handles: Arc<HandleResolver>) -> Jetstream {
        Jetstream { url: url.trim_end_matches('/').to_owned(), collections, log, handles, last_rev: LastRevs::new() }
    }

    /// The log consumer whose checkpoint is the cursor (`time_us`) of the instance at `url`.
    pub fn consumer_name(url: &str) -> String {
        format!("ingest.jetstream.{}", url.trim_end_matches('/'))
    }

    /// The subscription URL: followed collections (`pub.svc.` becomes `pub.svc.*`) and the
    /// cursor, if any.
    pub fn subscribe_url(&self, cursor: Option<i64>) -> String {
        let base = if self.url.ends_with("/subscribe") { self.url.clone() } else { format!("{}/subscribe", self.url) };
        let mut query: Vec<String> = self
            .collections
            .iter()
            .map(|c| format!("wantedCollections={}", if c.ends_with('.') { format!("{c}*") } else { c.clone() }))
            .collect();
        if let Some(c) = cursor {
            query.push(format!("cursor={c}"));
        }
        if query.is_empty() {
            base
        } else {
            format!("{base}?{}", query.join("&"))
        }
    }

    /// Follows the instance until `cancel` fires, reconnecting as needed.
    ///
    /// # Errors
    /// Only a log that refuses appends or checkpoints.
    pub async fn run(mut self, cancel: CancellationToken) -> Result<(), IngestError> {
        let mut attempt = 0u32;
        loop {
            // Resume right after the last event appended.
            let cursor = cursor::stored(&self.log, &Jetstream::consumer_name(&self.url)).await?.map(|c| c as i64 + 1);
            let url = self.subscribe_url(cursor);
            info!(url, "connecting to Jetstream");
            let ended = tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                connected = tokio_tungstenite::connect_async(url.as_str()) => match connected {
                    Ok((socket, _)) => {
                        attempt = 0;
                        match self.session(socket, &cancel).await? {
                            None => return Ok(()),
                            Some(why) => why,
                        }
                    }
                    Err(e) => format!("connect: {e}"),
                },
            };
            attempt += 1;
            let delay = backoff(attempt);
            warn!(url, reason = ended, retry_in_ms = delay.as_millis() as u64, "Jetstream connection ended; reconnecting");
            tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Reads one connection; `None` when cancelled, or why it ended.
    async fn session<S>(&mut self, mut socket: S, cancel: &CancellationToken) -> Result<Option<String>, IngestError>
    where
        S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    {
        let mut pending: Vec<NewEvent> = Vec::new();
        let mut last_time: Option<i64> = None;
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => {
                    self.flush(&mut pending, last_time.take()).await?;
                    return Ok(None);
                }
                next = tokio::time::timeout(LINGER, socket.next()) => next,
            };
            let text = match next {
                Err(_) => {
                    self.flush(&mut pending, last_time.take()).await?;
                    continue;
                }
                Ok(Some(Ok(Message::Text(t)))) => t,
                Ok(Some(Ok(Message::Close(frame)))) => {
                    self.flush(&mut pending, last_time.take()).await?;
                    return Ok(Some(format!("closed: {frame:?}")));
                }
                Ok(Some(Ok(_))) => continue,
                Ok(Some(Err(e))) => {
                    self.flush(&mut pending, last_time.take()).await?;
                    return Ok(Some(e.to_string()));
                }
                Ok(None) => {
                    self.flush(&mut pending, last_time.take()).await?;
                    return Ok(Some("the server closed the stream".into()));
                }
            };
            let mut event: JetstreamEvent = match serde_json::from_str(text.as_str()) {
                Ok(e) => e,
                Err(e) => {
                    warn!(error = %e, "skipping a message that is not a Jetstream event");
                    continue;
                }
            };
            last_time = Some(event.time_us);
            if let (Some(identity), true) = (&mut event.identity, event.kind == "identity") {
                // Shown only if it resolves back to the DID.
                if let Some(h) = &identity.handle {
                    self.handles.forget(h);
                }
                identity.handle = Some(self.handles.verified(&event.did, identity.handle.as_deref()).await);
            }
            pending.extend(self.events_of(event));
            if pending.len() >= MAX_PENDING {
                self.flush(&mut pending, last_time.take()).await?;
            }
        }
    }

    /// Appends what is pending, then stores the cursor.
    async fn flush(&self, pending: &mut Vec<NewEvent>, time_us: Option<i64>) -> Result<(), IngestError> {
        cursor::append_then_store(&self.log, &Jetstream::consumer_name(&self.url), pending, time_us.map(|t| t.max(0) as u64)).await
    }

    /// The events of one Jetstream event (none for what svc does not follow).
    pub fn events_of(&mut self, e: JetstreamEvent) -> Vec<NewEvent> {
        let source = Source::Jetstream { url: self.url.clone(), time_us: e.time_us };
        if !lexicons::formats::is_did(&e.did) {
            warn!(did = e.did, "skipping an event with an invalid DID");
            return Vec::new();
        }
        match (e.kind.as_str(), e.commit, e.identity, e.account) {
            ("commit", Some(c), _, _) => self.commit_events(&source, &e.did, c),
            ("identity", _, Some(i), _) => {
                vec![NewEvent::repo(source, Payload::Identity(IdentityChange { did: e.did, handle: i.handle, display_name: None }))]
            }
            ("account", _, _, Some(a)) => {
                let status = a.status.as_deref().map(AccountStatus::from_name);
                vec![NewEvent::repo(source, Payload::Account(AccountChange { did: e.did, active: a.active, status }))]
            }
            (kind, ..) => {
                debug!(kind, "skipping an event of an unknown kind");
                Vec::new()
            }
        }
    }

    fn commit_events(&mut self, source: &Source, did: &str, c: JetstreamCommit) -> Vec<NewEvent> {
        if !follows(&self.collections, &c.collection) {
            return Vec::new();
        }
        if self.last_rev.get(did).is_some_and(|last| c.rev.as_str() < last) {
            debug!(did, rev = c.rev, "skipping an operation older than the last one");
            return Vec::new();
        }
        let rejected = |why: String| {
            warn!(did, collection = c.collection, rkey = c.rkey, reason = why, "rejected a Jetstream operation");
            let reason = format!("jetstream {}/{} {}: {why}", c.collection, c.rkey, c.operation);
            vec![NewEvent::repo(source.clone(), Payload::Rejected(Rejected { did: did.to_owned(), rev: Some(c.rev.clone()), reason }))]
        };
        if !lexicons::formats::is_nsid(&c.collection) || !lexicons::formats::is_record_key(&c.rkey) || !lexicons::formats::is_tid(&c.rev) {
            return rejected("a malformed collection, record key or revision".into());
        }
        // Several operations of one commit share its rev: not newer is fine, older is not.
        self.last_rev.remember(did, &c.rev);
        let (collection, rkey, rev) = (c.collection.clone(), c.rkey.clone(), c.rev.clone());
        let payload = match c.operation.as_str() {
            "delete" => Payload::RecordDelete(RecordDelete { did: did.to_owned(), collection, rkey, rev }),
            op @ ("create" | "update") => {
                let (Some(record), Some(cid)) = (c.record.clone(), c.cid.clone()) else {
                    return rejected("a write without its record or CID".into());
                };
                match computed_cid(&record) {
                    Ok(computed) if computed == cid => {}
                    Ok(computed) => return rejected(format!("the record does not match its CID {cid} (computed {computed})")),
                    Err(why) => return rejected(why),
                }
                let write = RecordWrite { did: did.to_owned(), collection, rkey, cid, rev, record };
                if op == "create" {
                    Payload::RecordCreate(write)
                } else {
                    Payload::RecordUpdate(write)
                }
            }
            other => return rejected(format!("unknown operation {other:?}")),
        };
        vec![NewEvent::repo(source.clone(), payload)]
    }
}

/// The CID a repository would give this record (JSON back to DAG-CBOR).
fn computed_cid(record: &serde_json::Value) -> Result<String, String> {
    use multihash_codetable::{Code, MultihashDigest};
    let ipld = data_model::from_json(record).map_err(|e| e.to_string())?;
    let bytes = serde_ipld_dagcbor::to_vec(&ipld).map_err(|e| format!("the record cannot be DAG-CBOR: {e}"))?;
    Ok(cid::Cid::new_v1(0x71, Code::Sha2_256.digest(&bytes)).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follower() -> Jetstream {
        let dir = tempfile::tempdir().unwrap();
        let log: Arc<dyn EventLog> = Arc::new(eventlog::EmbeddedLog::open(dir.path(), 1).unwrap());
        std::mem::forget(dir);
        let handles = Arc::new(HandleResolver::new(Some("http://127.0.0.1:9"), Duration::from_secs(60)));
        Jetstream::new("ws://127.0.0.1:6008", vec!["pub.svc.".into()], log, handles)
    }

    fn commit(op: &str, rev: &str, record: Option<serde_json::Value>, cid: Option<String>) -> String {
        let mut commit =
            serde_json::json!({"rev": rev, "operation": op, "collection": "pub.svc.eprint.submission", "rkey": "3l3qo2vuowo2b"});
        if let Some(r) = record {
            commit["record"] = r;
        }
        if let Some(c) = cid {
            commit["cid"] = c.into();
        }
        serde_json::json!({"did": "did:plc:eyjbpczpc4xbavhswcyhrvjd", "time_us": 1_725_911_162_329_308_i64, "kind": "commit", "commit": commit})
            .to_string()
    }

    fn events(j: &mut Jetstream, message: &str) -> Vec<NewEvent> {
        j.events_of(serde_json::from_str(message).unwrap())
    }

    #[test]
    fn subscribes_with_wildcards_and_cursor() {
        let j = follower();
        assert_eq!(j.subscribe_url(None), "ws://127.0.0.1:6008/subscribe?wantedCollections=pub.svc.*");
        assert_eq!(j.subscribe_url(Some(17)), "ws://127.0.0.1:6008/subscribe?wantedCollections=pub.svc.*&cursor=17");
    }

    #[test]
    fn commits_become_record_events_when_their_cid_matches() {
        let mut j = follower();
        let record = serde_json::json!({"$type": "pub.svc.eprint.submission", "title": "T", "abstract": "A", "createdAt": "2024-09-09T19:46:02.102Z",
            "document": {"$type": "blob", "ref": {"$link": "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}, "mimeType": "application/pdf", "size": 10}});
        let cid = computed_cid(&record).unwrap();
        let out = events(&mut j, &commit("create", "3l3qo2vutsw2b", Some(record.clone()), Some(cid.clone())));
        let [e] = out.as_slice() else { panic!("{out:?}") };
        let Payload::RecordCreate(w) = &e.payload else { panic!("{e:?}") };
        assert_eq!((w.cid.as_str(), &w.record), (cid.as_str(), &record));
        assert!(matches!(e.source, Source::Jetstream { time_us: 1_725_911_162_329_308, .. }));

        // A record altered after its CID was computed is refused.
        let mut altered = record.clone();
        altered["title"] = "Not T".into();
        let out = events(&mut j, &commit("update", "3l3qo2vutsw2c", Some(altered), Some(cid)));
        assert!(matches!(out[0].payload, Payload::Rejected(_)), "{out:?}");

        // Deletes; older revisions are skipped; other collections ignored.
        let out = events(&mut j, &commit("delete", "3l3qo2vutsw2d", None, None));
        assert!(matches!(out[0].payload, Payload::RecordDelete(_)));
        assert!(events(&mut j, &commit("delete", "3l3qo2vutsw2a", None, None)).is_empty());
        let other = commit("delete", "3l3qo2vutsw2e", None, None).replace("pub.svc.eprint.submission", "app.bsky.feed.like");
        assert!(events(&mut j, &other).is_empty());
    }

    #[test]
    fn identity_and_account_events() {
        let mut j = follower();
        let identity = r#"{"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","time_us":1725516665234703,"kind":"identity","identity":{"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","handle":"yohenrique.bsky.social","seq":1409752997,"time":"2024-09-05T06:11:04.870Z"}}"#;
        let account = r#"{"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","time_us":1725516665333808,"kind":"account","account":{"active":false,"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","seq":1409753013,"status":"takendown","time":"2024-09-05T06:11:04.870Z"}}"#;
        let out = events(&mut j, identity);
        assert!(matches!(&out[0].payload, Payload::Identity(i) if i.handle.as_deref() == Some("yohenrique.bsky.social")));
        let out = events(&mut j, account);
        assert!(matches!(&out[0].payload, Payload::Account(a) if !a.active && a.status == Some(AccountStatus::Takendown)));
    }
}
