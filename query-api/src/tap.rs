//! The live tap of the log, `pub.svc.log.subscribe` (beyond the contract): each event as one
//! JSON message over a WebSocket, in log order per partition, from a cursor, filtered, as
//! Bluesky's Jetstream serves repository events.
//!
//! - **Who sees what**: repository events (records, identity, account) and external papers
//!   and enrichments are public; every other event is a command or an operational record
//!   (sessions, second factors, roles, audit, uses of eprints with their viewers, searches,
//!   refusals) and leaves svc on this stream only for an admin, with secrets (token and code
//!   hashes, sealed secrets, passkey credentials) redacted. A public event a command brought
//!   (a refreshed record) does not name the caller.
//! - **Resuming**: each message carries `cursor`, the next offset of every partition after
//!   it (`eventlog::cursor`): reconnecting with the last one misses nothing and repeats
//!   nothing, filters or not.
//! - **Bounds**: at most `max_subscribers` at once per node; a page of events (1,024) per
//!   subscriber in memory; a subscriber whose socket takes nothing for `stall` (its buffers
//!   full: it does not read) is cut off with a `ConsumerTooSlow` frame. A slow reader only
//!   falls behind in the log, which keeps every event: it never slows svc.
//! - **Following**: on Kafka each subscriber streams from a consumer of its own
//!   ([`EventLog::follow`]); on the embedded log one task per node watches the end of the
//!   log while anyone is subscribed (woken by each append) and a subscriber reads pages of
//!   the partitions that grew.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use event_schema::{Envelope, EventKind, Source};
use eventlog::cursor::{self, Cursor};
use eventlog::{EventLog, Follower};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ErrorCode};

/// Events a subscriber reads per round: what it holds in memory at most.
const PAGE: usize = 1024;

/// The largest frame svc queues to a subscriber's socket beyond what the kernel holds.
pub const WRITE_BUFFER: usize = 1024 * 1024;

/// How long a subscriber streaming from the log's follower waits for events in one go.
const STREAM_WAIT: Duration = Duration::from_millis(500);

/// How often the watching task reads the end of the log besides the signal of each append
/// (a safety net: the node's own appends signal every growth).
const HEAD_POLL: Duration = Duration::from_secs(1);

/// The node's tap: the subscriber bound and the watch on the end of the log.
pub struct Tap {
    log: Arc<dyn EventLog>,
    slots: Arc<Semaphore>,
    /// How long a subscriber's socket may take nothing before it is cut off.
    pub stall: Duration,
    head: Mutex<Weak<watch::Sender<Arc<Head>>>>,
}

/// The settings of a node's tap.
#[derive(Debug, Clone, Copy)]
pub struct TapSettings {
    /// Subscribers served at once by this node.
    pub max_subscribers: usize,
    /// How long a subscriber's socket may accept nothing before it is cut off.
    pub stall: Duration,
}

impl Default for TapSettings {
    fn default() -> TapSettings {
        TapSettings { max_subscribers: 256, stall: Duration::from_secs(10) }
    }
}

impl Tap {
    /// A tap on `log`.
    pub fn new(log: Arc<dyn EventLog>, settings: TapSettings) -> Tap {
        Tap { log, slots: Arc::new(Semaphore::new(settings.max_subscribers)), stall: settings.stall, head: Mutex::new(Weak::new()) }
    }

    /// A subscriber's place, or `None` when `max_subscribers` are served already.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// The end of the log and its latest growth, kept current while anyone holds a receiver
    /// (empty until first read). Starts the watching task when none runs.
    fn head(&self) -> watch::Receiver<Arc<Head>> {
        let mut slot = self.head.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sender) = slot.upgrade() {
            return sender.subscribe();
        }
        let (sender, receiver) = watch::channel(Arc::new(Head::default()));
        let sender = Arc::new(sender);
        *slot = Arc::downgrade(&sender);
        tokio::spawn(watch_head(self.log.clone(), sender));
        receiver
    }
}

/// The end of the log as the watching task last read it, and the events it grew by since
/// the read before: subscribers that stood at that earlier end take them from here instead
/// of each reading them (a node's live subscribers cost one read per growth).
#[derive(Debug, Default)]
pub struct Head {
    /// The next offset of each partition.
    pub ends: Vec<u64>,
    /// Where each partition stood before this growth (empty when the growth was not read:
    /// the first read, or more than [`SHARED_GROWTH`] events).
    pub from: Vec<u64>,
    /// The events between `from` and `ends`.
    pub events: Vec<Envelope>,
}

/// The most events a growth of the log is read for its subscribers at once; a larger one
/// each reads by pages.
const SHARED_GROWTH: usize = 4096;

/// Keeps `sender` at the log's end (and its growth) until nobody holds a receiver.
async fn watch_head(log: Arc<dyn EventLog>, sender: Arc<watch::Sender<Arc<Head>>>) {
    let mut appended = log.appended();
    let mut last: Vec<u64> = Vec::new();
    loop {
        let reader = log.clone();
        let before = last.clone();
        let read = tokio::task::spawn_blocking(move || -> Result<Option<Head>, eventlog::LogError> {
            let ends = reader.end_offsets()?;
            if ends == before {
                return Ok(None);
            }
            let grown: u64 = ends.iter().zip(&before).map(|(end, from)| end.saturating_sub(*from)).sum();
            if before.len() != ends.len() || grown as usize > SHARED_GROWTH {
                return Ok(Some(Head { ends, from: Vec::new(), events: Vec::new() }));
            }
            let mut events = Vec::new();
            let mut reached = before.clone();
            for (p, (&from, &end)) in before.iter().zip(&ends).enumerate() {
                if end > from {
                    let page = reader.read(p as u32, from, (end - from) as usize)?;
                    if let Some(e) = page.last() {
                        reached[p] = e.position.offset + 1;
                    }
                    events.extend(page);
                }
            }
            // (An append between the two reads leaves the growth's end past `ends`.)
            let ends = ends.iter().zip(&reached).map(|(a, b)| *a.max(b)).collect();
            Ok(Some(Head { ends, from: before, events }))
        })
        .await;
        match read {
            Ok(Ok(Some(head))) => {
                last = head.ends.clone();
                sender.send_replace(Arc::new(head));
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the log's end could not be read for its subscribers"),
            Err(e) => tracing::warn!(error = %e, "reading the log's end failed"),
        }
        tokio::select! {
            _ = sender.closed() => return,
            _ = appended.changed() => {}
            _ = tokio::time::sleep(HEAD_POLL) => {}
        }
    }
}

/// Who is subscribing: what the privacy rule lets them see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Anyone: public events only.
    Public,
    /// An admin: every event, secrets redacted.
    Admin,
}

/// Whether events of `kind` may leave svc on the public stream.
pub fn is_public(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::RecordCreate
            | EventKind::RecordUpdate
            | EventKind::RecordDelete
            | EventKind::Identity
            | EventKind::Account
            | EventKind::External
            | EventKind::Enrichment
    )
}

/// The payload fields that hold secrets or what stands for them: never sent, even to an
/// admin.
const SECRET_FIELDS: &[&str] = &["sealedSecret", "hashes", "credential", "credentialId"];

/// The message `event` makes for `audience`, without its cursor, or `None` when the
/// audience may not see it.
pub fn view(event: &Envelope, audience: Audience) -> Option<Value> {
    let public = is_public(event.payload.kind());
    if !public && audience == Audience::Public {
        return None;
    }
    let mut json = event.to_json();
    if public {
        if let (Source::Command { .. }, Some(source)) = (&event.source, json.get_mut("source").and_then(Value::as_object_mut)) {
            source.remove("caller");
        }
    } else if let Some(payload) = json.get_mut("payload") {
        redact(payload);
    }
    Some(json)
}

/// Replaces every secret field in `value` (see [`SECRET_FIELDS`], and any field ending in
/// `Hash`) with `"[redacted]"`.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if key.ends_with("Hash") || key == "hash" || SECRET_FIELDS.contains(&key.as_str()) {
                    *field = Value::String("[redacted]".into());
                } else {
                    redact(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Which events a subscriber asked for. Each list, when given, must match; an event
/// without a collection (identity, account, most commands) passes the collection filter,
/// as on Jetstream.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    kinds: Vec<Pattern>,
    collections: Vec<Pattern>,
    dids: HashSet<String>,
}

/// A name, or a prefix written `prefix.*`.
#[derive(Debug, Clone)]
enum Pattern {
    Exact(String),
    Prefix(String),
}

impl Pattern {
    fn parse(s: &str) -> Pattern {
        match s.strip_suffix('*') {
            Some(prefix) => Pattern::Prefix(prefix.to_owned()),
            None => Pattern::Exact(s.to_owned()),
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Exact(n) => n == name,
            Pattern::Prefix(p) => name.starts_with(p.as_str()),
        }
    }
}

/// At most this many collections, and DIDs, per subscriber (Jetstream's bounds).
const MAX_COLLECTIONS: usize = 100;
const MAX_DIDS: usize = 10_000;

impl Filter {
    /// The filter of the parameters `wantedKinds`, `wantedCollections` and `wantedDids`,
    /// for `audience`.
    ///
    /// # Errors
    /// An unknown kind or a malformed collection or DID (naming it), too many of them, or
    /// a kind `audience` may not see.
    pub fn new(kinds: &[String], collections: &[String], dids: &[String], audience: Audience) -> Result<Filter, ApiError> {
        for name in kinds {
            let pattern = Pattern::parse(name);
            let known: Vec<EventKind> = EventKind::ALL.into_iter().filter(|k| pattern.matches(k.as_str())).collect();
            if known.is_empty() {
                return Err(ApiError::invalid_param("wantedKinds", format!("{name} is no event kind (repo.record.create, repo.*, …)")));
            }
            if audience == Audience::Public && !known.iter().any(|k| is_public(*k)) {
                return Err(ApiError::new(ErrorCode::Forbidden, format!("{name} events leave svc only for an admin")));
            }
        }
        if collections.len() > MAX_COLLECTIONS {
            return Err(ApiError::invalid_param("wantedCollections", format!("at most {MAX_COLLECTIONS} collections")));
        }
        for c in collections {
            let name = c.strip_suffix(".*").unwrap_or(c);
            if name.is_empty()
                || !name.split('.').all(|seg| !seg.is_empty() && seg.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-'))
            {
                return Err(ApiError::invalid_param("wantedCollections", format!("{c:?} is no NSID nor an NSID prefix ending in .*")));
            }
        }
        if dids.len() > MAX_DIDS {
            return Err(ApiError::invalid_param("wantedDids", format!("at most {MAX_DIDS} DIDs")));
        }
        if let Some(bad) = dids.iter().find(|d| !lexicons::formats::is_did(d)) {
            return Err(ApiError::invalid_param("wantedDids", format!("{bad:?} is no DID")));
        }
        let kinds = kinds.iter().map(|k| Pattern::parse(k)).collect();
        Ok(Filter { kinds, collections: collections.iter().map(|c| Pattern::parse(c)).collect(), dids: dids.iter().cloned().collect() })
    }

    /// Whether `event` passes.
    pub fn admits(&self, event: &Envelope) -> bool {
        let kind = event.payload.kind().as_str();
        (self.kinds.is_empty() || self.kinds.iter().any(|k| k.matches(kind)))
            && (self.collections.is_empty() || event.payload.record().is_none_or(|(c, _)| self.collections.iter().any(|p| p.matches(c))))
            && (self.dids.is_empty() || self.dids.contains(event.payload.did()))
    }
}

/// One subscriber: where it stands and what it asked for.
pub struct Subscription {
    /// The next offset of each partition.
    pub next: Vec<u64>,
    /// What it asked for.
    pub filter: Filter,
    /// What it may see.
    pub audience: Audience,
    /// The log's own follower, where it has one (Kafka): then the subscriber streams from
    /// it; else it reads pages of the partitions the end says grew.
    follower: Option<Box<dyn Follower>>,
    /// The partition read last while catching up by pages.
    last_read: u32,
}

impl Subscription {
    /// The subscriber's start: its cursor resolved against the log, or the end of the log
    /// (live from now) without one.
    ///
    /// # Errors
    /// A malformed cursor or one that does not fit the log, named; the log unreadable.
    pub async fn start(
        log: &Arc<dyn EventLog>,
        cursor: Option<&str>,
        filter: Filter,
        audience: Audience,
    ) -> Result<Subscription, ApiError> {
        let cursor: Option<Cursor> = match cursor {
            Some(c) => Some(c.parse().map_err(|e: cursor::CursorError| ApiError::invalid_param("cursor", e.to_string()))?),
            None => None,
        };
        let reader = log.clone();
        let (next, follower) = tokio::task::spawn_blocking(move || {
            let next = match cursor {
                Some(c) => c.resolve(reader.as_ref()).map_err(|e| match e {
                    cursor::ResolveError::Cursor(e) => ApiError::invalid_param("cursor", e.to_string()),
                    cursor::ResolveError::Log(e) => ApiError::from_error(e),
                })?,
                None => reader.end_offsets().map_err(ApiError::from_error)?,
            };
            let follower = reader.follow(&next).map_err(ApiError::from_error)?;
            Ok::<_, ApiError>((next, follower))
        })
        .await
        .map_err(|e| ApiError::internal(format!("resolving a cursor failed: {e}")))??;
        Ok(Subscription { next, filter, audience, follower, last_read: u32::MAX })
    }

    /// The next events from the log's follower, waiting up to `wait` for the first.
    async fn stream(&mut self, wait: Duration) -> Result<Vec<Envelope>, ApiError> {
        let Some(mut follower) = self.follower.take() else { return Ok(Vec::new()) };
        let (follower, events) = tokio::task::spawn_blocking(move || {
            let events = follower.next_events(PAGE, wait);
            (follower, events)
        })
        .await
        .map_err(|e| ApiError::internal(format!("following the log failed: {e}")))?;
        self.follower = Some(follower);
        events.map_err(ApiError::from_error)
    }

    /// The next events past `next` in the partitions that `head` says grew. Following the
    /// end (the partitions that grew hold less than a page between them), each is read;
    /// catching up, one partition a round, in turn, a page at once.
    async fn read_pages(&mut self, log: &Arc<dyn EventLog>, head: &[u64]) -> Result<Vec<Envelope>, ApiError> {
        let grown: Vec<(u32, u64)> =
            head.iter().zip(&self.next).enumerate().filter(|(_, (end, next))| end > next).map(|(p, (_, next))| (p as u32, *next)).collect();
        let behind: u64 = grown.iter().map(|&(p, next)| head[p as usize] - next).sum();
        let reads: Vec<(u32, u64, usize)> = if behind as usize <= PAGE || grown.len() == 1 {
            let each = PAGE / grown.len().max(1);
            grown.iter().map(|&(p, next)| (p, next, each)).collect()
        } else {
            let turn = grown.iter().find(|&&(p, _)| p > self.last_read).or(grown.first()).copied();
            turn.map(|(p, next)| (p, next, PAGE)).into_iter().collect()
        };
        if let Some(&(p, _, _)) = reads.last() {
            self.last_read = p;
        }
        let reader = log.clone();
        let pages = tokio::task::spawn_blocking(move || {
            reads.into_iter().map(|(p, from, max)| reader.read(p, from, max).map(|page| (p, page))).collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|e| ApiError::internal(format!("reading the log failed: {e}")))?
        .map_err(ApiError::from_error)?;
        let mut events = Vec::new();
        for (p, page) in pages {
            if page.is_empty() {
                // Offsets below the end that hold no event: nothing more to read there.
                self.next[p as usize] = self.next[p as usize].max(head[p as usize]);
            }
            events.extend(page);
        }
        Ok(events)
    }

    /// The messages of the log's latest growth (`head`), when this subscriber stood where
    /// the growth began in every partition that grew past it; its position then moves to
    /// the growth's end. `None` otherwise (it reads pages).
    fn take_growth(&mut self, head: &Head) -> Option<Vec<Value>> {
        let at_start = head.from.len() == self.next.len()
            && self.next.iter().zip(&head.from).zip(&head.ends).all(|((next, from), end)| next == from || next >= end);
        if !at_start {
            return None;
        }
        let taken: Vec<bool> = self.next.iter().zip(&head.from).map(|(next, from)| next == from).collect();
        let events: Vec<&Envelope> = head.events.iter().filter(|e| taken.get(e.position.partition as usize) == Some(&true)).collect();
        let messages = self.messages(events);
        for (p, took) in taken.into_iter().enumerate() {
            if took {
                self.next[p] = self.next[p].max(head.ends[p]);
            }
        }
        Some(messages)
    }

    /// The messages of `events`, merged by append time, each with the cursor after it; the
    /// subscriber's position moves past every event, whether it passed the filter or not.
    fn messages(&mut self, mut events: Vec<&Envelope>) -> Vec<Value> {
        events.sort_by_key(|e| (e.appended_at, e.position.partition, e.position.offset));
        let mut messages = Vec::new();
        for e in events {
            let Some(next) = self.next.get_mut(e.position.partition as usize) else { continue };
            *next = (*next).max(e.position.offset + 1);
            if !self.filter.admits(e) {
                continue;
            }
            if let Some(mut json) = view(e, self.audience) {
                json["cursor"] = Value::String(cursor::format(&self.next));
                messages.push(json);
            }
        }
        messages
    }
}

/// Answers a refused subscription: upgraded, the error sent as the one frame, closed.
pub fn refuse(upgrade: WebSocketUpgrade, error: ApiError) -> Response {
    upgrade.on_upgrade(move |socket| async move { close(socket, &error).await })
}

/// Sends `error` as a frame (the XRPC envelope) and closes the socket, naming its code.
async fn close_with<S>(socket: &mut S, error: &ApiError) -> Result<(), axum::Error>
where
    S: futures::Sink<Message, Error = axum::Error> + Unpin,
{
    let frame = Message::Text(Utf8Bytes::from(error.envelope().to_string()));
    let code = if error.code() == ErrorCode::InternalError { 1011 } else { 1008 };
    let close = Message::Close(Some(CloseFrame { code, reason: Utf8Bytes::from(error.code().name()) }));
    tokio::time::timeout(Duration::from_secs(1), async {
        socket.send(frame).await?;
        socket.send(close).await
    })
    .await
    .unwrap_or(Ok(()))
}

/// Closes `socket` with `error` as its one frame.
pub async fn close(mut socket: WebSocket, error: &ApiError) {
    let _ = close_with(&mut socket, error).await;
}

/// Streams events to `socket` until it closes, fails, or stalls, holding the subscriber's
/// place `permit` until then.
pub async fn follow(socket: WebSocket, tap: Arc<Tap>, mut subscription: Subscription, permit: OwnedSemaphorePermit) {
    let _permit = permit;
    let (mut sink, mut incoming) = socket.split();
    // The client sends nothing but control frames: reading them notices its leaving.
    let mut gone = tokio::spawn(async move {
        while let Some(Ok(message)) = incoming.next().await {
            if matches!(message, Message::Close(_)) {
                break;
            }
        }
    });
    let mut head = subscription.follower.is_none().then(|| tap.head());
    loop {
        let messages = match &mut head {
            None => tokio::select! {
                _ = &mut gone => return,
                events = subscription.stream(STREAM_WAIT) => events.map(|events| subscription.messages(events.iter().collect())),
            },
            Some(receiver) => {
                let head = receiver.borrow_and_update().clone();
                let ends = &head.ends;
                let behind = ends.len() == subscription.next.len() && ends.iter().zip(&subscription.next).any(|(end, next)| end > next);
                if !behind {
                    tokio::select! {
                        _ = &mut gone => return,
                        changed = receiver.changed() => if changed.is_err() { *receiver = tap.head(); },
                    }
                    continue;
                }
                match subscription.take_growth(&head) {
                    Some(messages) => Ok(messages),
                    None => subscription.read_pages(&tap.log, ends).await.map(|events| subscription.messages(events.iter().collect())),
                }
            }
        };
        let messages = match messages {
            Ok(messages) => messages,
            Err(e) => {
                let _ = close_with(&mut sink, &e).await;
                return;
            }
        };
        if messages.is_empty() {
            continue;
        }
        for message in messages {
            let frame = Message::Text(Utf8Bytes::from(message.to_string()));
            match tokio::time::timeout(tap.stall, sink.feed(frame)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return,
                Err(_) => return cut_off(&mut sink, tap.stall).await,
            }
        }
        match tokio::time::timeout(tap.stall, sink.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => return cut_off(&mut sink, tap.stall).await,
        }
        if gone.is_finished() {
            return;
        }
    }
}

/// Cuts off a subscriber that took nothing for `stall`: a `ConsumerTooSlow` frame when its
/// socket still takes one, then the close.
async fn cut_off<S>(sink: &mut S, stall: Duration)
where
    S: futures::Sink<Message, Error = axum::Error> + Unpin,
{
    tracing::info!(stall_seconds = stall.as_secs_f64(), "a log subscriber read nothing: cut off");
    metrics::counter!("svc_log_subscribers_cut_off_total").increment(1);
    let error = ApiError::new(
        ErrorCode::ConsumerTooSlow,
        format!("this subscriber read nothing for {} s: reconnect with the last cursor", stall.as_secs_f64()),
    );
    let _ = close_with(sink, &error).await;
}
