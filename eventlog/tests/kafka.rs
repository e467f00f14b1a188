//! The Kafka log against a real Kafka-protocol broker (tansu): the conformance suite, topic
//! creation, reopening, and appends from another client waking readers, on the engine
//! `$SVC_TEST_TANSU_ENGINE` names (memory by default; `scripts/test.sh` runs them on
//! PostgreSQL too); and, on PostgreSQL always, a broker killed mid-append.

use std::time::Duration;

use eventlog::tansu::{Engine, Tansu};
use eventlog::test_suite::identity_events;
use eventlog::{EventLog, KafkaConfig, KafkaLog};

fn config(broker: &Tansu, topic: &str, partitions: u32) -> KafkaConfig {
    KafkaConfig::from_url(&format!("{}&topic={topic}", broker.url()), partitions).unwrap()
}

/// A fresh topic of 4 partitions on a broker of its own.
fn fresh() -> (Box<dyn EventLog>, Tansu) {
    let broker = Tansu::start();
    (Box::new(KafkaLog::open(config(&broker, "conformance", 4)).unwrap()), broker)
}

eventlog::eventlog_test_suite!(kafka, fresh());

#[test]
fn reopening_keeps_events_and_the_partition_count() {
    let broker = Tansu::start();
    let events = identity_events(12);
    let first = KafkaLog::open(config(&broker, "reopen", 3)).unwrap().append(&events).unwrap();
    let log = KafkaLog::open(config(&broker, "reopen", 8)).unwrap();
    assert_eq!(log.partitions(), 3);
    let read: usize = (0..3).map(|p| log.read(p, 0, 100).unwrap().len()).sum();
    assert_eq!(read, 12);
    for pos in first {
        let e = log.read(pos.partition, pos.offset, 1).unwrap();
        assert_eq!(e[0].position, pos);
    }
}

#[test]
fn appends_by_another_client_wake_readers() {
    let broker = Tansu::start();
    let reader = KafkaLog::open(config(&broker, "watch", 2)).unwrap();
    let writer = KafkaLog::open(config(&broker, "watch", 2)).unwrap();
    let mut rx = reader.appended();
    rx.borrow_and_update();
    writer.append(&identity_events(3)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !rx.has_changed().unwrap() {
        assert!(std::time::Instant::now() < deadline, "reader was not woken by another client's append");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_urls_are_refused_with_the_reason() {
    for url in ["kafka://", "http://h:1", "kafka://host", "kafka://h:1?x=y", "kafka://h:notaport", "kafka://h:1?replication=0"] {
        let e = KafkaConfig::from_url(url, 4).unwrap_err().to_string();
        assert!(e.contains("invalid Kafka URL"), "{url}: {e}");
    }
    let c = KafkaConfig::from_url("kafka://a:1,b:2/?topic=t&replication=3&rdkafka.security.protocol=ssl", 4).unwrap();
    assert_eq!((c.brokers.as_str(), c.topic.as_str(), c.replication, c.partitions), ("a:1,b:2", "t", 3, 4));
    assert_eq!(c.client_settings, vec![("security.protocol".to_owned(), "ssl".to_owned())]);
}

/// Waits until `check` holds for the members' partitions, or fails with what they own.
fn wait_for(members: &[&eventlog::GroupMember], what: &str, check: impl Fn(&[std::collections::BTreeSet<u32>]) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let owned: Vec<_> = members.iter().map(|m| m.partitions()).collect();
        if check(&owned) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: members own {owned:?} after 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn group_members_split_the_partitions_and_survivors_take_over() {
    let broker = Tansu::start();
    let log = KafkaLog::open(config(&broker, "groups", 4)).unwrap();
    let first = log.join_group("projectors").unwrap();
    wait_for(&[&first], "a lone member owns every partition", |o| o[0].len() == 4);
    let second = log.join_group("projectors").unwrap();
    wait_for(&[&first, &second], "two members split the partitions", |o| o[0].len() == 2 && o[1].len() == 2 && o[0].is_disjoint(&o[1]));
    let other_group = log.join_group("servers").unwrap();
    wait_for(&[&other_group], "another group's member owns every partition", |o| o[0].len() == 4);
    drop(first);
    wait_for(&[&second], "the survivor takes over", |o| o[0].len() == 4);
}

/// Every acknowledged position of `events` appended by a log of its own (one producer).
fn append_with_own_producer(broker: &Tansu, topic: &str, events: &[event_schema::NewEvent]) -> Vec<event_schema::Position> {
    let config = KafkaConfig::from_url(&format!("{}topic={topic}", broker.batched_url()), 4).unwrap();
    let log = KafkaLog::open(config).unwrap();
    let mut positions = Vec::new();
    for chunk in events.chunks(5_000) {
        positions.extend(log.append(chunk).unwrap());
    }
    positions
}

/// Every (partition, offset) an independent client reads of `topic` (see
/// [`Tansu::independent_read`]).
fn independent_read(broker: &Tansu, topic: &str, partitions: u32) -> Vec<(u32, u64)> {
    broker.independent_read(topic, partitions).into_iter().map(|(p, o, _)| (p, o)).collect()
}

/// The broker's real batching, two producers one after the other: svc's reader returns
/// every acknowledged position exactly once, as an independent reader sees them, whatever
/// the broker reports as the end of each partition (tansu's watermarks lag behind batches).
#[test]
fn reads_every_acknowledged_event_of_real_batches() {
    let broker = Tansu::start();
    let topic = "batched";
    let events = identity_events(24_000);
    let (first, second) = events.split_at(12_000);
    let mut acked: Vec<(u32, u64)> = append_with_own_producer(&broker, topic, first)
        .into_iter()
        .chain(append_with_own_producer(&broker, topic, second))
        .map(|p| (p.partition, p.offset))
        .collect();
    acked.sort();
    assert_eq!(acked.len(), 24_000);

    let (mut read, _) = read_all(&broker, topic);
    let before = read.len();
    read.dedup();
    assert_eq!(read.len(), before, "a position was read twice");
    let first_difference = |a: &[(u32, u64)], b: &[(u32, u64)]| a.iter().zip(b).position(|(x, y)| x != y);
    assert!(
        read == acked,
        "svc's reader returned {} of {} acknowledged events (first difference at {:?})",
        read.len(),
        acked.len(),
        first_difference(&read, &acked)
    );
    let independent = independent_read(&broker, topic, 4);
    assert!(
        independent == acked,
        "an independent reader read {} events (first difference at {:?})",
        independent.len(),
        first_difference(&independent, &acked)
    );
}

/// The events (partition, offset) a fresh reader of `topic` reads, and each partition's end
/// as the broker reports it to a process that has seen nothing yet.
fn read_all(broker: &Tansu, topic: &str) -> (Vec<(u32, u64)>, Vec<u64>) {
    let reader = KafkaLog::open(KafkaConfig::from_url(&format!("{}topic={topic}", broker.batched_url()), 4).unwrap()).unwrap();
    let ends: Vec<u64> = (0..reader.partitions()).map(|p| reader.end_offset(p).unwrap()).collect();
    let mut read = Vec::new();
    for p in 0..reader.partitions() {
        let mut from = 0;
        loop {
            let page = reader.read(p, from, 1_000).unwrap();
            let Some(last) = page.last() else { break };
            from = last.position.offset + 1;
            read.extend(page.iter().map(|e| (e.position.partition, e.position.offset)));
        }
        assert!(reader.end_offset(p).unwrap() >= from, "the end offset of partition {p} is behind what was read");
    }
    read.sort();
    (read, ends)
}

/// tansu's PostgreSQL engine, killed (SIGKILL) while a producer appends and restarted 5 s
/// later: the appends complete (the producer retries; being idempotent, it writes nothing
/// twice; the appends that met the fault find their events by reading), every acknowledged
/// event is read exactly once by svc's reader and by an independent one, and the broker's
/// high watermarks are exact (each partition's acknowledged count), as a Kafka broker's are.
#[test]
fn a_durable_broker_killed_mid_append_loses_and_doubles_nothing() {
    let mut broker = Tansu::start_on(Engine::Postgres);
    let topic = "durable";
    let events = identity_events(6_000);
    let log = KafkaLog::open(KafkaConfig::from_url(&format!("{}topic={topic}", broker.batched_url()), 4).unwrap()).unwrap();
    let mut acked: Vec<(u32, u64)> = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut acked = Vec::new();
            for chunk in events.chunks(100) {
                acked.extend(log.append(chunk).expect("an append across the broker's restart completes"));
            }
            acked
        });
        let appended = log.appended();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while *appended.borrow() < 1_000 {
            assert!(std::time::Instant::now() < deadline, "the producer did not append 1,000 events in 60 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        broker.kill();
        let at_kill = *appended.borrow();
        std::thread::sleep(Duration::from_secs(5));
        broker.restart();
        let acked = writer.join().unwrap();
        assert!(at_kill < 6_000, "the broker was killed after the last append: nothing was tested");
        acked
    })
    .into_iter()
    .map(|p| (p.partition, p.offset))
    .collect();
    assert!(log.appends_verified() >= 1, "no append met the broker's fault: the kill was not seen");
    acked.sort();
    assert_eq!(acked.len(), 6_000);
    let mut unique = acked.clone();
    unique.dedup();
    assert_eq!(unique.len(), 6_000, "two events were acknowledged at one position");

    let (read, ends) = read_all(&broker, topic);
    assert_eq!(read, acked, "svc's reader reads every acknowledged event once");
    let independent = independent_read(&broker, topic, 4);
    assert_eq!(independent, acked, "an independent reader reads every acknowledged event once");
    for (p, end) in ends.iter().enumerate() {
        let count = acked.iter().filter(|(q, _)| *q == p as u32).count() as u64;
        assert_eq!(*end, count, "partition {p}'s high watermark is its acknowledged count");
    }
}
