//! Following a relay's or PDS's `com.atproto.sync.subscribeRepos` stream into the log.
//!
//! - Every `#commit` is checked: its CAR blocks against their CIDs, its signature against the
//!   `#atproto` key of the repository's DID document (re-resolved once when it does not verify,
//!   for key rotations). Operations on the followed collections become record events; a
//!   record missing from the CAR (or a `tooBig` commit) is fetched with
//!   `com.atproto.sync.getRecord` from the repository's PDS.
//! - `#identity` and `#account` become identity and account events; a handle is shown only
//!   if it resolves back to the DID ([`crate::handle`]).
//! - `#sync` (a repository reset to a signed commit, as on account creation or migration) is
//!   verified, then the repository is backfilled from its host before the stream is read on.
//! - A commit that fails a check becomes a `repo.rejected` event with the reason (the
//!   projections list it in their dead letters); ingest goes on.
//! - **Order and duplicates.** Per DID, a commit whose `rev` is not newer than the last one
//!   seen is skipped. The cursor (the last `seq` appended) is a log checkpoint of consumer
//!   [`Firehose::consumer_name`], committed right after each append: after a restart the
//!   stream resumes after it. A crash between an append and its checkpoint makes the stream
//!   send those frames again; the projections skip what they already hold (same `rev`).
//! - **Connection.** Reconnects with exponential backoff and jitter; `FutureCursor` restarts
//!   from the live end, `OutdatedCursor` is logged. Frames are processed as they are read, so
//!   a slow log slows reading (TCP backpressure) instead of filling memory.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use event_schema::{AccountChange, AccountStatus, IdentityChange, NewEvent, Payload, Rejected, Source};
use eventlog::EventLog;
use futures::StreamExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::car::Car;
use crate::commit::{self, OpOutcome};
use crate::fetch::RecordFetcher;
use crate::frame::{self, Frame};
use crate::handle::HandleResolver;
use crate::identity::{ResolveError, Resolver};
use crate::revs::LastRevs;
use crate::verify;
use crate::IngestError;
use crate::{backfill, cursor};

/// Events gathered before one append.
const MAX_PENDING: usize = 512;
/// Frames decoded before their commits are checked together, on every core.
const WINDOW: usize = 64;
/// How long to wait for more frames before appending what is pending.
const LINGER: Duration = Duration::from_millis(10);
/// The longest pause between reconnections.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What to follow.
#[derive(Debug, Clone)]
pub struct FirehoseConfig {
    /// The `ws://` or `wss://` base of the relay or PDS.
    pub url: String,
    /// The collections to index: NSIDs, or prefixes ending in `.` (such as `pub.svc.`).
    pub collections: Vec<String>,
}

/// The stream follower.
pub struct Firehose {
    config: FirehoseConfig,
    log: Arc<dyn EventLog>,
    resolver: Arc<Resolver>,
    handles: Arc<HandleResolver>,
    fetcher: RecordFetcher,
    last_rev: LastRevs,
}

/// What a session holds between appends.
#[derive(Default)]
struct Work {
    /// Frames decoded, not yet turned into events.
    window: Vec<Frame>,
    /// Events not yet appended.
    pending: Vec<NewEvent>,
    /// The seq of the last frame turned into events, not yet stored as the cursor.
    last_seq: Option<i64>,
}

/// How a connection ended.
enum Ended {
    Cancelled,
    /// The server closed it or it broke: reconnect.
    Dropped(String),
}

impl Firehose {
    /// A follower of `config.url` appending to `log`, resolving DIDs with `resolver` and
    /// checking handles with `handles`.
    pub fn new(config: FirehoseConfig, log: Arc<dyn EventLog>, resolver: Arc<Resolver>, handles: Arc<HandleResolver>) -> Firehose {
        let fetcher = RecordFetcher::new(resolver.clone());
        Firehose { config, log, resolver, handles, fetcher, last_rev: LastRevs::new() }
    }

    /// The log consumer whose checkpoint is the cursor of the stream at `url`.
    pub fn consumer_name(url: &str) -> String {
        format!("ingest.firehose.{}", url.trim_end_matches('/'))
    }

    fn stream_url(&self, cursor: Option<i64>) -> String {
        let base = self.config.url.trim_end_matches('/');
        let mut url = if base.contains("/xrpc/") { base.to_owned() } else { format!("{base}/xrpc/com.atproto.sync.subscribeRepos") };
        if let Some(c) = cursor {
            url.push_str(&format!("{}cursor={c}", if url.contains('?') { '&' } else { '?' }));
        }
        url
    }

    /// The stored cursor: the last seq appended (0, the start of the stream's history, when
    /// nothing was appended yet).
    async fn stored_cursor(&self) -> Result<i64, IngestError> {
        Ok(cursor::stored(&self.log, &Firehose::consumer_name(&self.config.url)).await?.map_or(0, |s| s as i64))
    }

    /// Follows the stream until `cancel` fires, reconnecting as needed.
    ///
    /// # Errors
    /// Only a log that refuses appends or checkpoints: stream and network trouble is retried.
    pub async fn run(mut self, cancel: CancellationToken) -> Result<(), IngestError> {
        let mut attempt = 0u32;
        let mut cursor = Some(self.stored_cursor().await?);
        loop {
            let url = self.stream_url(cursor);
            info!(url, "connecting to the firehose");
            let ended = tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                connected = tokio_tungstenite::connect_async(url.as_str()) => match connected {
                    Ok((socket, _)) => {
                        attempt = 0;
                        self.session(socket, &mut cursor, &cancel).await?
                    }
                    Err(e) => Ended::Dropped(format!("connect: {e}")),
                },
            };
            match ended {
                Ended::Cancelled => return Ok(()),
                Ended::Dropped(why) => {
                    attempt += 1;
                    let delay = backoff(attempt);
                    warn!(url, reason = why, retry_in_ms = delay.as_millis() as u64, "firehose connection ended; reconnecting");
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(delay) => {}
                    }
                    if cursor.is_some() {
                        cursor = Some(self.stored_cursor().await?);
                    }
                }
            }
        }
    }

    async fn session<S>(&mut self, mut socket: S, cursor: &mut Option<i64>, cancel: &CancellationToken) -> Result<Ended, IngestError>
    where
        S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    {
        let mut work = Work::default();
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => {
                    self.settle(&mut work, cursor).await?;
                    return Ok(Ended::Cancelled);
                }
                next = tokio::time::timeout(LINGER, socket.next()) => next,
            };
            let message = match next {
                Err(_) => {
                    self.settle(&mut work, cursor).await?;
                    continue;
                }
                Ok(None) => {
                    self.settle(&mut work, cursor).await?;
                    return Ok(Ended::Dropped("the server closed the stream".into()));
                }
                Ok(Some(Err(e))) => {
                    self.settle(&mut work, cursor).await?;
                    return Ok(Ended::Dropped(e.to_string()));
                }
                Ok(Some(Ok(m))) => m,
            };
            let bytes = match message {
                Message::Binary(b) => b,
                Message::Close(frame) => {
                    self.settle(&mut work, cursor).await?;
                    return Ok(Ended::Dropped(format!("closed: {frame:?}")));
                }
                _ => continue,
            };
            let frame = match Frame::decode(&bytes) {
                Ok(f) => f,
                Err(e) => {
                    warn!(error = %e, "skipping an undecodable frame");
                    continue;
                }
            };
            match &frame {
                Frame::Error(e) => {
                    self.settle(&mut work, cursor).await?;
                    if e.error == "FutureCursor" {
                        warn!(cursor = ?cursor, "the stored cursor is ahead of the stream (FutureCursor): following from the live end");
                        *cursor = None;
                    }
                    return Ok(Ended::Dropped(format!("error frame {}: {}", e.error, e.message.clone().unwrap_or_default())));
                }
                Frame::Info(i) => {
                    warn!(name = i.name, message = i.message.as_deref().unwrap_or(""), "firehose info");
                    continue;
                }
                _ => {}
            }
            work.window.push(frame);
            if work.window.len() >= WINDOW {
                self.drain(&mut work, cursor).await?;
            }
            if work.pending.len() >= MAX_PENDING {
                self.flush(&mut work.pending, work.last_seq.take()).await?;
            }
        }
    }

    /// Turns the window into events and appends everything pending.
    async fn settle(&mut self, work: &mut Work, cursor: &mut Option<i64>) -> Result<(), IngestError> {
        self.drain(work, cursor).await?;
        self.flush(&mut work.pending, work.last_seq.take()).await
    }

    /// Turns the window's frames into pending events, in stream order, their commits checked
    /// on every core first ([`verify::check_all`]).
    async fn drain(&mut self, work: &mut Work, cursor: &mut Option<i64>) -> Result<(), IngestError> {
        let frames = std::mem::take(&mut work.window);
        let (frames, mut checked) = self.check_commits(frames).await?;
        for (i, frame) in frames.into_iter().enumerate() {
            let seq = frame.seq();
            if matches!(frame, Frame::Sync(_)) {
                // What came before a #sync goes in before its backfill.
                self.flush(&mut work.pending, work.last_seq.take()).await?;
            }
            work.pending.extend(self.events_of(frame, checked.remove(&i)).await?);
            if let Some(seq) = seq {
                work.last_seq = Some(seq);
                *cursor = Some(seq);
            }
        }
        Ok(())
    }

    /// Whether a commit may change something followed (a `tooBig` commit may).
    fn touches_followed(&self, c: &frame::Commit) -> bool {
        c.too_big || c.ops.iter().any(|op| op.path.split('/').next().is_some_and(|col| commit::follows(&self.config.collections, col)))
    }

    /// Whether a commit is newer than the last one seen of its repository.
    fn is_newer(&self, c: &frame::Commit) -> bool {
        self.last_rev.get(&c.repo).is_none_or(|last| c.rev.as_str() > last)
    }

    /// Whether a commit is to be checked and applied.
    fn wanted(&self, c: &frame::Commit) -> bool {
        self.touches_followed(c) && self.is_newer(c)
    }

    /// Checks the wanted commits among `frames` on every core, with the keys of their
    /// (cached) DID documents. A commit whose DID does not resolve is left unchecked here.
    async fn check_commits(
        &self,
        frames: Vec<Frame>,
    ) -> Result<(Vec<Frame>, HashMap<usize, Result<Car, verify::CheckError>>), IngestError> {
        let mut keys = Vec::new();
        for (i, frame) in frames.iter().enumerate() {
            if let Frame::Commit(c) = frame {
                if self.wanted(c) {
                    if let Ok(doc) = self.resolver.resolve(&c.repo).await {
                        keys.push((i, doc));
                    }
                }
            }
        }
        if keys.is_empty() {
            return Ok((frames, HashMap::new()));
        }
        tokio::task::spawn_blocking(move || {
            let jobs: Vec<verify::Job<'_>> = keys
                .iter()
                .filter_map(|(i, doc)| match &frames[*i] {
                    Frame::Commit(c) => Some(verify::Job { blocks: &c.blocks, root: &c.commit, did: &c.repo, key: &doc.signing_key }),
                    _ => None,
                })
                .collect();
            let results = verify::check_all(&jobs);
            drop(jobs);
            let checked = keys.iter().map(|(i, _)| *i).zip(results).collect();
            (frames, checked)
        })
        .await
        .map_err(|e| IngestError::Stream(e.to_string()))
    }

    /// Appends what is pending, then stores the cursor.
    async fn flush(&self, pending: &mut Vec<NewEvent>, seq: Option<i64>) -> Result<(), IngestError> {
        cursor::append_then_store(&self.log, &Firehose::consumer_name(&self.config.url), pending, seq.map(|s| s.max(0) as u64)).await
    }

    fn source(&self, seq: i64) -> Source {
        Source::Firehose { url: self.config.url.clone(), seq }
    }

    /// The events of one frame (none for frames that change nothing svc follows); `pre` is a
    /// commit's check from its window, if it was checked there.
    async fn events_of(&mut self, frame: Frame, pre: Option<Result<Car, verify::CheckError>>) -> Result<Vec<NewEvent>, IngestError> {
        match frame {
            Frame::Commit(c) => Ok(self.commit_events(*c, pre).await),
            Frame::Identity(i) => {
                // The DID document's claim (fetched afresh) wins over the frame's hint; either
                // way the handle must resolve back to the DID to be shown.
                self.resolver.forget(&i.did);
                let claimed = self.resolver.resolve(&i.did).await.ok().and_then(|d| d.handle.clone()).or(i.handle);
                if let Some(h) = &claimed {
                    self.handles.forget(h);
                }
                let handle = Some(self.handles.verified(&i.did, claimed.as_deref()).await);
                Ok(vec![NewEvent::repo(self.source(i.seq), Payload::Identity(IdentityChange { did: i.did, handle, display_name: None }))])
            }
            Frame::Account(a) => {
                let status = a.status.as_deref().map(AccountStatus::from_name);
                Ok(vec![NewEvent::repo(self.source(a.seq), Payload::Account(AccountChange { did: a.did, active: a.active, status }))])
            }
            Frame::Sync(s) => Ok(self.sync_events(s).await),
            Frame::Unknown { t, .. } => {
                debug!(t, "skipping a frame of an unknown type");
                Ok(Vec::new())
            }
            Frame::Info(_) | Frame::Error(_) => Ok(Vec::new()),
        }
    }

    /// The events of a commit; `pre` is its check from the window, if it was checked there.
    async fn commit_events(&mut self, c: frame::Commit, pre: Option<Result<Car, verify::CheckError>>) -> Vec<NewEvent> {
        if !self.touches_followed(&c) {
            // Nothing followed changed; the cursor still moves.
            return Vec::new();
        }
        if !self.is_newer(&c) {
            debug!(did = c.repo, rev = c.rev, "skipping a commit that is not newer than the last one");
            return Vec::new();
        }
        let car = match pre {
            Some(Ok(car)) => car,
            Some(Err(verify::CheckError::Car(e))) => return self.rejected(&c, &format!("invalid CAR: {e}")),
            // Not checked yet, or a signature that did not verify with the cached key: the
            // one-at-a-time path re-resolves the DID once (key rotation).
            _ => {
                let car = match Car::read(&c.blocks) {
                    Ok(car) => car,
                    Err(e) => return self.rejected(&c, &format!("invalid CAR: {e}")),
                };
                if let Err(why) = self.verify(&car, &c.commit, &c.repo).await {
                    return self.rejected(&c, &why);
                }
                car
            }
        };
        self.last_rev.remember(&c.repo, &c.rev);
        let source = self.source(c.seq);
        let mut events = Vec::new();
        for outcome in commit::op_outcomes(&source, &c.repo, &c.rev, &c.ops, &car, &self.config.collections) {
            match outcome {
                OpOutcome::Event(e) => events.push(*e),
                OpOutcome::Missing { collection, rkey, cid, update } => match self.fetch_record(&c.repo, &collection, &rkey, &cid).await {
                    Ok(block) => match commit::record_event(
                        &source,
                        commit::WriteAt { did: &c.repo, collection: &collection, rkey: &rkey, rev: &c.rev, cid: &cid, update },
                        &block,
                    ) {
                        Ok(e) => events.push(e),
                        Err(why) => warn!(did = c.repo, collection, rkey, reason = why, "skipping a fetched record"),
                    },
                    Err(why) => {
                        warn!(did = c.repo, collection, rkey, reason = why, "a record missing from the commit could not be fetched")
                    }
                },
                OpOutcome::Invalid(why) => warn!(did = c.repo, seq = c.seq, reason = why, "skipping an invalid operation"),
            }
        }
        events
    }

    /// Checks the commit's signature, re-resolving the DID once if it does not verify.
    async fn verify(&self, car: &Car, root: &cid::Cid, did: &str) -> Result<(), String> {
        let doc = self.resolver.resolve(did).await.map_err(|e| e.to_string())?;
        match commit::verify_commit(car, root, did, &doc.signing_key) {
            Ok(_) => Ok(()),
            Err(commit::CommitError::Signature(_)) => {
                let doc = self.resolver.refresh(did).await.map_err(|e: ResolveError| e.to_string())?;
                commit::verify_commit(car, root, did, &doc.signing_key).map(|_| ()).map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// `#sync`: the repository was reset to a signed commit whose records the frame does not
    /// carry. The commit is verified, then the repository is backfilled from its host (what
    /// is pending is appended first, so the log keeps the stream's order; the cursor moves
    /// past the frame only once the backfill is appended, so a crash redoes it). Live events
    /// of the repository wait meanwhile: the stream is not read during the backfill.
    async fn sync_events(&mut self, s: frame::Sync) -> Vec<NewEvent> {
        if self.last_rev.get(&s.did).is_some_and(|last| s.rev.as_str() <= last) {
            debug!(did = s.did, rev = s.rev, "skipping a #sync that is not newer than the last commit");
            return Vec::new();
        }
        let refused = |why: String| {
            warn!(did = s.did, seq = s.seq, reason = why, "could not act on a #sync");
            let rejected = Rejected { did: s.did.clone(), rev: Some(s.rev.clone()), reason: format!("#sync seq {}: {why}", s.seq) };
            vec![NewEvent::repo(Source::Firehose { url: self.config.url.clone(), seq: s.seq }, Payload::Rejected(rejected))]
        };
        let car = match Car::read(&s.blocks) {
            Ok(car) => car,
            Err(e) => return refused(format!("invalid CAR: {e}")),
        };
        let Some(root) = car.roots.first().copied() else { return refused("the CAR has no root".into()) };
        if let Err(why) = self.verify(&car, &root, &s.did).await {
            return refused(why);
        }
        info!(did = s.did, rev = s.rev, "#sync: backfilling the repository");
        match backfill::backfill_repo(self.log.clone(), &self.resolver, &s.did, &self.config.collections).await {
            Ok(report) => {
                let newest = if report.rev > s.rev { report.rev } else { s.rev.clone() };
                self.last_rev.remember(&s.did, &newest);
                Vec::new()
            }
            Err(e) => refused(format!("backfill failed: {e}")),
        }
    }

    /// The event that records a refused commit (listed in the dead letters).
    fn rejected(&self, c: &frame::Commit, why: &str) -> Vec<NewEvent> {
        warn!(did = c.repo, seq = c.seq, reason = why, "rejected a commit");
        let rejected = Rejected { did: c.repo.clone(), rev: Some(c.rev.clone()), reason: format!("#commit seq {}: {why}", c.seq) };
        vec![NewEvent::repo(self.source(c.seq), Payload::Rejected(rejected))]
    }

    /// Fetches one record's block from the repository's PDS, proven by its signed commit
    /// ([`RecordFetcher`]); it must still have the CID the commit gave it.
    async fn fetch_record(&self, did: &str, collection: &str, rkey: &str, cid: &cid::Cid) -> Result<Vec<u8>, String> {
        let proven = self.fetcher.fetch(did, collection, rkey).await.map_err(|e| e.to_string())?;
        match proven.record {
            Some((held, block)) if held == *cid => Ok(block),
            _ => Err("the record has changed since (its repository no longer holds that CID)".to_owned()),
        }
    }
}

/// The pause before reconnection attempt `attempt` (1, 2, …): doubling from half a second up to
/// a minute, times a jitter between 0.5 and 1.5.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1))).min(MAX_BACKOFF);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    base.mul_f64(0.5 + f64::from(nanos % 1000) / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        assert!(backoff(1) >= Duration::from_millis(250) && backoff(1) <= Duration::from_millis(750));
        assert!(backoff(4) >= Duration::from_secs(2));
        assert!(backoff(40) <= MAX_BACKOFF.mul_f64(1.5));
    }
}
