//! The Kafka log (rdkafka): one topic of repository events, keyed by DID.
//!
//! - **Topic and keys.** Repository events go to one topic (default `svc.repo-events`), the
//!   message key is the event's ordering key (the repository DID) and the partition is
//!   [`partition_for`] of it (FNV-1a modulo the partition count, the same as the embedded log),
//!   so one key's events stay in one partition in append order. The value is the CBOR
//!   envelope of `event-schema`; `appendedAt` is stamped by the appending process.
//! - **Creation.** The topic is created when missing, with the configured partitions and
//!   replication, `retention.ms = -1` and `retention.bytes = -1` (the log is the source of
//!   truth: nothing expires). An existing topic keeps its partition count.
//! - **Appends** go through an idempotent producer (`enable.idempotence`, `acks = all`); a call
//!   returns once every event is acknowledged, with the positions of the delivery reports
//!   (where a report has none, the event is found by reading: see `unreported`). An append
//!   during which the producer met a fault (a broker down, a connection lost) trusts no
//!   report: its batches may have been stored before the fault and sent again after it, and
//!   a broker that lost track of a send may misreport it, so every event is found by reading
//!   (one the broker does not hold is sent again). If an append fails, a prefix of it may be
//!   stored: callers retry, and projections skip what they already hold.
//! - **Positions** are Kafka's (partition, offset); offsets are per partition.
//! - **Checkpoints** are Kafka consumer-group offsets: consumer `c` commits as group `c`, so
//!   Kafka tooling shows every consumer's lag.
//! - **Work groups** ([`EventLog::join_group`]) are Kafka consumer groups on the topic
//!   (round-robin assignment, 6 s session timeout): a member's consumer only takes part in
//!   the group's rebalances, with its partitions paused, while the worker reads through the
//!   log as usual; the projection checkpoints stay in the store, written with the rows.
//! - **Where a partition ends.** A read takes the end to be the highest of the high watermark
//!   the broker reports (ListOffsets) and the ends this process has seen (its own appends'
//!   delivery reports, the records it read), and checks it: having read up to it, it looks at
//!   what the last fetch brought beyond. A record past the reported watermark (or a read
//!   starting past it) shows the broker's watermarks lag behind its records: that is logged
//!   at WARN once per partition, and from then on this process reads every partition until
//!   its fetches stay empty for [`IDLE_END`], never stopping at a watermark.
//!   [`EventLog::end_offset`] is the same believed end. See docs/topology.md.
//! - **Change notification.** A background thread polls the high watermarks (appends may come
//!   from other processes) and wakes readers waiting on [`EventLog::appended`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use event_schema::{codec, Envelope, NewEvent, Position};
use futures::executor::block_on;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::{partition_for, EventLog, GroupMember, LogError};

use config::base_config;
pub use config::KafkaConfig;
use unreported::Sent;

mod config;
mod follow;
mod group;
mod unreported;

/// How long one broker request may take before the call fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an append that met a fault waits for the broker to serve the reads that find
/// its events (librdkafka's own sends wait up to five minutes: `message.timeout.ms`).
const FAULT_WAIT: Duration = Duration::from_secs(120);
/// How long a health check waits for the broker.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the watcher thread polls the high watermarks.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);
/// How long a read at or past the reported end waits for a record, when no EOF comes,
/// before it takes the partition's end as reached: several empty fetches
/// (`fetch.wait.max.ms` is 50 ms).
pub const IDLE_END: Duration = Duration::from_millis(250);

pub(super) fn unavailable(what: &str, e: impl std::fmt::Display) -> LogError {
    LogError::Unavailable(format!("kafka: {what}: {e}"))
}

/// The producer's client context: counts the faults librdkafka reports (a broker down, a
/// connection lost), so an append knows whether it met one.
struct CountFaults(Arc<AtomicU64>);

impl ClientContext for CountFaults {
    fn error(&self, error: KafkaError, reason: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
        warn!(error = %error, reason, "kafka: the producer met a fault");
    }
}

/// The reader's client context. A read learns that it reached a partition's end from
/// `PartitionEOF` (`enable.partition.eof`), which librdkafka also reports as a client error:
/// that one is how every read ends, not a fault, and is not logged; any other is, as the
/// default context logs it.
struct ReaderContext;

impl ClientContext for ReaderContext {
    fn error(&self, error: KafkaError, reason: &str) {
        if !matches!(error, KafkaError::Global(RDKafkaErrorCode::PartitionEOF) | KafkaError::PartitionEOF(_)) {
            tracing::error!("librdkafka: {error}: {reason}");
        }
    }
}

impl ConsumerContext for ReaderContext {}

/// The Kafka [`EventLog`].
pub struct KafkaLog {
    config: KafkaConfig,
    partitions: u32,
    producer: FutureProducer<CountFaults>,
    /// How many faults the producer has reported (see [`CountFaults`]).
    producer_faults: Arc<AtomicU64>,
    /// How many appends found their events by reading, every report distrusted.
    appends_verified: AtomicU64,
    /// Reads assign this consumer to one partition at a time.
    reader: Mutex<BaseConsumer<ReaderContext>>,
    /// One group member per consumer name, for committing and reading checkpoints.
    committers: Mutex<std::collections::HashMap<String, Arc<BaseConsumer>>>,
    appended_tx: Arc<watch::Sender<u64>>,
    stop: Arc<AtomicBool>,
    /// Per partition, the end this process has seen: past its own acknowledged appends and
    /// past the records it read.
    seen_end: Vec<AtomicU64>,
    /// Per partition, whether the broker was caught returning records past the watermark it
    /// reports (logged once).
    contradicted: Vec<AtomicBool>,
    /// The broker's watermarks were caught lagging behind its records: reads no longer stop
    /// at the believed end but when fetches stay empty for [`IDLE_END`].
    untrusted: AtomicBool,
}

impl KafkaLog {
    /// Connects, creates the topic if it is missing, and starts watching for appends.
    ///
    /// # Errors
    /// [`LogError::Unavailable`] when the brokers cannot be reached or the topic cannot be
    /// created.
    pub fn open(config: KafkaConfig) -> Result<KafkaLog, LogError> {
        let admin: AdminClient<DefaultClientContext> = base_config(&config).create().map_err(|e| unavailable("admin client", e))?;
        let topic = NewTopic::new(&config.topic, config.partitions as i32, TopicReplication::Fixed(config.replication))
            .set("retention.ms", "-1")
            .set("retention.bytes", "-1");
        let opts = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
        for result in block_on(admin.create_topics([&topic], &opts)).map_err(|e| unavailable("create topic", e))? {
            match result {
                Ok(name) => debug!(topic = name, partitions = config.partitions, "created topic"),
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => return Err(unavailable(&format!("create topic {name}"), code)),
            }
        }
        // librdkafka wants a group even for assigned reads; this one never commits.
        let reader: BaseConsumer<ReaderContext> = base_config(&config)
            .set("group.id", "svc.reader")
            .set("fetch.wait.max.ms", "50")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            .create_with_context(ReaderContext)
            .map_err(|e| unavailable("consumer", e))?;
        let partitions = wait_for_partitions(&reader, &config.topic)?;
        let producer_faults = Arc::new(AtomicU64::new(0));
        let producer: FutureProducer<CountFaults> = base_config(&config)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "5")
            .set("queue.buffering.max.messages", "1000000")
            .create_with_context(CountFaults(producer_faults.clone()))
            .map_err(|e| unavailable("producer", e))?;
        let (appended_tx, _) = watch::channel(0);
        let log = KafkaLog {
            config,
            partitions,
            producer,
            producer_faults,
            appends_verified: AtomicU64::new(0),
            reader: Mutex::new(reader),
            committers: Mutex::new(Default::default()),
            appended_tx: Arc::new(appended_tx),
            stop: Arc::new(AtomicBool::new(false)),
            seen_end: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
            contradicted: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            untrusted: AtomicBool::new(false),
        };
        // Where each partition ends now: no later append lies below (see `unreported`).
        let mut total = 0;
        for partition in 0..partitions {
            let end = log.reported_end(partition)?;
            log.saw_end(partition, end);
            total += end;
        }
        log.appended_tx.send_replace(total);
        log.watch_appends()?;
        Ok(log)
    }

    /// How many appends met a producer fault and found every event by reading.
    pub fn appends_verified(&self) -> u64 {
        self.appends_verified.load(Ordering::Relaxed)
    }

    /// The high watermark the broker reports for `partition` (ListOffsets).
    fn reported_end(&self, partition: u32) -> Result<u64, LogError> {
        let reader = self.reader.lock().map_err(|_| unavailable("reader", "lock poisoned"))?;
        let (_, high) =
            reader.fetch_watermarks(&self.config.topic, partition as i32, REQUEST_TIMEOUT).map_err(|e| unavailable("watermarks", e))?;
        Ok(high.max(0) as u64)
    }

    /// Remembers that `partition` holds records up to `end` (exclusive).
    fn saw_end(&self, partition: u32, end: u64) {
        if let Some(seen) = self.seen_end.get(partition as usize) {
            seen.fetch_max(end, Ordering::Relaxed);
        }
    }

    /// Logs, once per partition, that the broker returned a record at `offset` past the
    /// watermark `reported` it gave for the partition.
    fn contradiction(&self, partition: u32, offset: u64, reported: u64) {
        self.untrusted.store(true, Ordering::Relaxed);
        if self.contradicted.get(partition as usize).is_some_and(|c| !c.swap(true, Ordering::Relaxed)) {
            warn!(
                topic = self.config.topic,
                partition,
                offset,
                reported_end = reported,
                "kafka: the broker returned records past the high watermark it reports; reading on until its fetches are empty"
            );
        }
    }

    fn watch_appends(&self) -> Result<(), LogError> {
        let watcher: BaseConsumer = base_config(&self.config).create().map_err(|e| unavailable("watcher", e))?;
        let (topic, partitions, tx, stop) = (self.config.topic.clone(), self.partitions, self.appended_tx.clone(), self.stop.clone());
        std::thread::Builder::new()
            .name("kafka-log-watch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let total: Result<u64, KafkaError> = (0..partitions)
                        .map(|p| watcher.fetch_watermarks(&topic, p as i32, REQUEST_TIMEOUT).map(|(_, high)| high.max(0) as u64))
                        .sum();
                    match total {
                        Ok(total) => {
                            tx.send_if_modified(|seen| std::mem::replace(seen, total) != total);
                        }
                        Err(e) => warn!(error = %e, "kafka: polling the log's end failed"),
                    }
                    std::thread::sleep(WATCH_INTERVAL);
                }
            })
            .map_err(|e| unavailable("watcher thread", e))?;
        Ok(())
    }

    fn check_partition(&self, partition: u32) -> Result<(), LogError> {
        if partition >= self.partitions {
            return Err(LogError::UnknownPartition { partition, partitions: self.partitions });
        }
        Ok(())
    }

    fn committer(&self, consumer: &str) -> Result<Arc<BaseConsumer>, LogError> {
        let mut committers = self.committers.lock().map_err(|_| unavailable("committers", "lock poisoned"))?;
        if let Some(c) = committers.get(consumer) {
            return Ok(c.clone());
        }
        let c: BaseConsumer = base_config(&self.config)
            .set("group.id", consumer)
            .set("enable.auto.commit", "false")
            .create()
            .map_err(|e| unavailable("committer", e))?;
        let c = Arc::new(c);
        committers.insert(consumer.to_owned(), c.clone());
        Ok(c)
    }

    /// Sends `events` and waits for their delivery reports: each event's partition and
    /// offset, `None` where the report gave none and the event is not in the log either
    /// (see [`unreported`]).
    fn send(&self, events: &[NewEvent]) -> Result<Vec<(u32, Option<u64>)>, LogError> {
        let now = Utc::now();
        // Where the log was known to end before: no event of this append lies below.
        let floor: Vec<u64> = self.seen_end.iter().map(|end| end.load(Ordering::Relaxed)).collect();
        let faults = self.producer_faults.load(Ordering::Relaxed);
        let mut deliveries = Vec::with_capacity(events.len());
        for event in events {
            let bytes = codec::encode(event, now).map_err(LogError::Encode)?;
            let partition = partition_for(&event.key, self.partitions) as i32;
            let mut record = FutureRecord::to(&self.config.topic).partition(partition).key(event.key.as_bytes()).payload(bytes.as_slice());
            loop {
                match self.producer.send_result(record) {
                    Ok(delivery) => break deliveries.push(delivery),
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        record = back;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err((e, _)) => return Err(unavailable("produce", e)),
                }
            }
        }
        let mut sent = Vec::with_capacity(deliveries.len());
        for (event, delivery) in events.iter().zip(deliveries) {
            match block_on(delivery) {
                // A negative offset: delivered, but where is not reported (see `unreported`).
                Ok(Ok(d)) => sent.push(Sent { partition: d.partition as u32, event, offset: u64::try_from(d.offset).ok() }),
                Ok(Err((e, _))) => return Err(unavailable("delivery", e)),
                Err(_) => return Err(unavailable("delivery", "the producer was closed")),
            }
        }
        if self.producer_faults.load(Ordering::Relaxed) != faults {
            warn!(
                topic = self.config.topic,
                events = sent.len(),
                "kafka: the producer met a fault during an append; reading the log for its events"
            );
            self.appends_verified.fetch_add(1, Ordering::Relaxed);
            for s in &mut sent {
                s.offset = None;
            }
            unreported::locate(&mut sent, &floor, now.timestamp_micros(), |p, from, max| self.read_through_faults(p, from, max))?;
        } else if sent.iter().any(|s| s.offset.is_none()) {
            let unreported = sent.iter().filter(|s| s.offset.is_none()).count();
            warn!(topic = self.config.topic, unreported, "kafka: events delivered without their offsets; reading the log for them");
            // Read past the watermark: a broker that lost track of a send may misreport it too.
            unreported::locate(&mut sent, &floor, now.timestamp_micros(), |p, from, max| self.read_partition(p, from, max, false))?;
        }
        Ok(sent.into_iter().map(|s| (s.partition, s.offset)).collect())
    }

    /// Reads as `read_partition` does without trusting the watermarks, waiting out a broker
    /// that cannot serve (restarting) for up to [`FAULT_WAIT`], as the producer waits to send.
    fn read_through_faults(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        let deadline = Instant::now() + FAULT_WAIT;
        loop {
            match self.read_partition(partition, from, max, false) {
                Err(LogError::Unavailable(why)) if Instant::now() < deadline => {
                    debug!(partition, why, "kafka: reading for an append's events waits for the broker");
                    std::thread::sleep(Duration::from_millis(200));
                }
                read => return read,
            }
        }
    }

    /// [`EventLog::read`]; with `trust_watermark` false, as if the broker's watermarks were
    /// untrusted: reading on past them until fetches stay empty for [`IDLE_END`].
    fn read_partition(&self, partition: u32, from: u64, max: usize, trust_watermark: bool) -> Result<Vec<Envelope>, LogError> {
        self.check_partition(partition)?;
        // Where the broker and this process believe the partition ends.
        let reported = self.reported_end(partition)?;
        let believed = reported.max(self.seen_end[partition as usize].load(Ordering::Relaxed));
        if from > reported {
            // A position past the broker's end was reached by reading: its watermark lags.
            self.contradiction(partition, from, reported);
        }
        let trusted = trust_watermark && !self.untrusted.load(Ordering::Relaxed);
        if max == 0 || (trusted && from >= believed) {
            return Ok(Vec::new());
        }
        let reader = self.reader.lock().map_err(|_| unavailable("reader", "lock poisoned"))?;
        reader.assign(&self.one_partition(partition, Offset::Offset(from as i64))?).map_err(|e| unavailable("assign", e))?;
        let mut out = Vec::with_capacity(max.min(65_536));
        let mut position = from;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut idle_since = Instant::now();
        while out.len() < max {
            let trusted = trust_watermark && !self.untrusted.load(Ordering::Relaxed);
            // At the believed end a broker that reports its end truly has nothing more; a
            // look at what the last fetch already brought catches one that does not.
            let at_end = position >= believed;
            let wait = if at_end && trusted { Duration::ZERO } else { Duration::from_millis(50) };
            match reader.poll(wait) {
                Some(Err(KafkaError::PartitionEOF(_))) => {}
                Some(Err(e)) => return Err(unavailable("fetch", e)),
                Some(Ok(message)) => {
                    let offset = message.offset() as u64;
                    // Messages fetched for an earlier assignment may still be queued: skip them.
                    if message.partition() != partition as i32 || offset < position {
                        continue;
                    }
                    if offset >= reported {
                        self.contradiction(partition, offset, reported);
                    }
                    let bytes = message.payload().unwrap_or_default();
                    out.push(codec::decode(Position { partition, offset }, bytes).map_err(|source| LogError::Corrupt {
                        partition,
                        offset,
                        source,
                    })?);
                    position = offset + 1;
                    self.saw_end(partition, position);
                    idle_since = Instant::now();
                }
                None if at_end && trusted => break,
                // A broker whose watermark lags raises no reliable end: fetches that stay
                // empty for a while mean the end.
                None if at_end => {
                    if idle_since.elapsed() >= IDLE_END {
                        break;
                    }
                }
                None => {
                    if Instant::now() >= deadline {
                        return Err(unavailable(
                            "read",
                            format!("partition {partition} ends at {believed} but no events came from offset {position} within {REQUEST_TIMEOUT:?}"),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    fn one_partition(&self, partition: u32, offset: Offset) -> Result<TopicPartitionList, LogError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.config.topic, partition as i32, offset).map_err(|e| unavailable("partition list", e))?;
        Ok(tpl)
    }
}

impl Drop for KafkaLog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The topic's partition count, once its metadata is visible (just after creation it may
/// not be yet).
fn wait_for_partitions<C: ConsumerContext>(consumer: &BaseConsumer<C>, topic: &str) -> Result<u32, LogError> {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    loop {
        let metadata = consumer.fetch_metadata(Some(topic), REQUEST_TIMEOUT).map_err(|e| unavailable("metadata", e))?;
        let found = metadata.topics().iter().find(|t| t.name() == topic).map(|t| (t.partitions().len(), t.error()));
        match found {
            Some((n, None)) if n > 0 => return Ok(n as u32),
            _ if Instant::now() >= deadline => return Err(unavailable("metadata", format!("topic {topic} has no partitions yet"))),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

impl EventLog for KafkaLog {
    fn backend(&self) -> &'static str {
        "kafka"
    }

    fn partitions(&self) -> u32 {
        self.partitions
    }

    fn append(&self, events: &[NewEvent]) -> Result<Vec<Position>, LogError> {
        let mut placed = self.send(events)?;
        // Events acknowledged without an offset that are nowhere in their partition: the
        // broker answered their retry as a duplicate of a send it did not keep. Sent once more.
        let lost: Vec<usize> = (0..placed.len()).filter(|&i| placed[i].1.is_none()).collect();
        if !lost.is_empty() {
            warn!(
                topic = self.config.topic,
                lost = lost.len(),
                "kafka: events the broker took for duplicates are not in the log; appending them again"
            );
            let again: Vec<NewEvent> = lost.iter().map(|&i| events[i].clone()).collect();
            for (i, resent) in lost.into_iter().zip(self.send(&again)?) {
                placed[i] = resent;
            }
        }
        let positions = placed
            .into_iter()
            .map(|(partition, offset)| offset.map(|offset| Position { partition, offset }))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| unavailable("delivery", "events the broker acknowledged twice as duplicates are not in the log"))?;
        for position in &positions {
            self.saw_end(position.partition, position.offset + 1);
        }
        self.appended_tx.send_modify(|seen| *seen += positions.len() as u64);
        Ok(positions)
    }

    fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        self.read_partition(partition, from, max, true)
    }

    fn end_offset(&self, partition: u32) -> Result<u64, LogError> {
        self.check_partition(partition)?;
        Ok(self.reported_end(partition)?.max(self.seen_end[partition as usize].load(Ordering::Relaxed)))
    }

    fn commit_checkpoint(&self, consumer: &str, partition: u32, next_offset: u64) -> Result<(), LogError> {
        self.check_partition(partition)?;
        let tpl = self.one_partition(partition, Offset::Offset(next_offset as i64))?;
        self.committer(consumer)?.commit(&tpl, CommitMode::Sync).map_err(|e| unavailable("commit checkpoint", e))
    }

    fn checkpoint(&self, consumer: &str, partition: u32) -> Result<Option<u64>, LogError> {
        self.check_partition(partition)?;
        let tpl = self.one_partition(partition, Offset::Invalid)?;
        let committed = self.committer(consumer)?.committed_offsets(tpl, REQUEST_TIMEOUT).map_err(|e| unavailable("read checkpoint", e))?;
        Ok(committed.elements().first().and_then(|e| match e.offset() {
            Offset::Offset(n) if n >= 0 => Some(n as u64),
            _ => None,
        }))
    }

    fn appended(&self) -> watch::Receiver<u64> {
        self.appended_tx.subscribe()
    }

    /// Others' appends are seen when the watcher next polls the watermarks.
    fn appended_notice_delay(&self) -> Duration {
        WATCH_INTERVAL
    }

    /// Asks the broker for partition 0's watermarks through the producer's connections, so a
    /// probe neither waits for the reader's lock nor longer than [`CHECK_TIMEOUT`].
    fn check(&self) -> Result<(), LogError> {
        self.producer.client().fetch_watermarks(&self.config.topic, 0, CHECK_TIMEOUT).map(drop).map_err(|e| unavailable("check", e))
    }

    fn join_group(&self, group: &str) -> Result<GroupMember, LogError> {
        self.join_kafka_group(group)
    }

    fn follow(&self, from: &[u64]) -> Result<Option<Box<dyn crate::Follower>>, LogError> {
        Ok(Some(Box::new(follow::KafkaFollower::start(&self.config, from)?)))
    }
}
