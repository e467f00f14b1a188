//! The conformance suite every [`EventLog`] implementation must pass: one public function per
//! case, and [`eventlog_test_suite!`](crate::eventlog_test_suite) to instantiate them for a
//! backend as one `#[test]` each, in a module named after the backend, so
//! `cargo test read_resumes_from_any_offset` runs one case on every backend and a failure
//! names its backend.

use std::collections::HashMap;

use event_schema::{IdentityChange, NewEvent, Payload, Source};

use crate::{EventLog, LogError};

/// Instantiates the conformance suite for one backend: `eventlog_test_suite!(name, make)`
/// defines `mod name` with one `#[test]` per case. `make` is an expression evaluated afresh
/// for each test, in the module's scope (it sees the items of the module that invokes the
/// macro), giving `(Box<dyn EventLog>, guard)`: a fresh, empty log and what keeps its
/// resources alive (a directory, a broker) until the test ends.
#[macro_export]
macro_rules! eventlog_test_suite {
    ($backend:ident, $make:expr) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;
            $crate::eventlog_test_suite!(@cases $make;
                append_then_read_in_order_per_key,
                read_resumes_from_any_offset,
                events_are_counted_per_partition_from_any_offset,
                checkpoints_are_per_consumer_and_partition,
                unknown_partition_is_an_error,
                appended_notifies_readers,
                a_lone_group_member_owns_every_partition,
            );
        }
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let (log, _guard) = $make;
                let log: Box<dyn $crate::EventLog> = log;
                $crate::test_suite::$case(log);
            }
        )*
    };
}

/// `n` identity events over `n / 3 + 1` distinct keys, for tests.
pub fn identity_events(n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| {
            NewEvent::repo(
                Source::Manual { note: "test-suite".into() },
                Payload::Identity(IdentityChange {
                    did: format!("did:plc:key{}", i % (n / 3 + 1)),
                    handle: Some(format!("h{i}.test")),
                    display_name: None,
                }),
            )
        })
        .collect()
}

/// A member alone in its group owns every partition.
pub fn a_lone_group_member_owns_every_partition(log: Box<dyn EventLog>) {
    let member = log.join_group("conformance").unwrap();
    let all: std::collections::BTreeSet<u32> = (0..log.partitions()).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while member.partitions() != all {
        assert!(std::time::Instant::now() < deadline, "a lone member owns {:?} of {all:?}", member.partitions());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn read_all(log: &dyn EventLog) -> Vec<event_schema::Envelope> {
    let mut out = Vec::new();
    for p in 0..log.partitions() {
        out.extend(log.read(p, 0, usize::MAX).unwrap());
    }
    out
}

/// Every appended event comes back once, at the position the append returned, and the
/// events of one key come back in append order.
pub fn append_then_read_in_order_per_key(log: Box<dyn EventLog>) {
    let events = identity_events(30);
    let mut positions = log.append(&events[..10]).unwrap();
    positions.extend(log.append(&events[10..]).unwrap());
    assert_eq!(positions.len(), 30);
    let read = read_all(log.as_ref());
    assert_eq!(read.len(), 30);
    let mut by_position = HashMap::new();
    for e in &read {
        assert!(by_position.insert(e.position, e).is_none(), "position read twice");
    }
    for (i, pos) in positions.iter().enumerate() {
        let e = by_position[pos];
        assert_eq!(e.payload, events[i].payload);
        assert_eq!(e.key, events[i].key);
    }
    let mut last: HashMap<&str, (u32, u64)> = HashMap::new();
    for (i, pos) in positions.iter().enumerate() {
        let key = events[i].key.as_str();
        if let Some((p, o)) = last.insert(key, (pos.partition, pos.offset)) {
            assert_eq!(p, pos.partition, "one key, one partition");
            assert!(o < pos.offset, "offsets grow per key");
        }
    }
}

/// Reading from an offset returns exactly the events at or after it.
pub fn read_resumes_from_any_offset(log: Box<dyn EventLog>) {
    let positions = log.append(&identity_events(20)).unwrap();
    for p in 0..log.partitions() {
        let all = log.read(p, 0, usize::MAX).unwrap();
        for (i, e) in all.iter().enumerate() {
            let rest = log.read(p, e.position.offset, usize::MAX).unwrap();
            assert_eq!(rest.len(), all.len() - i);
            let page = log.read(p, e.position.offset, 1).unwrap();
            assert_eq!(page.len(), 1);
        }
        let end = log.end_offset(p).unwrap();
        assert!(log.read(p, end, 10).unwrap().is_empty());
    }
    assert_eq!(positions.len(), 20);
}

/// A partition's events at or after an offset are counted exactly (whatever offsets the
/// other partitions' events took), and a reader's lag is their sum.
pub fn events_are_counted_per_partition_from_any_offset(log: Box<dyn EventLog>) {
    log.append(&identity_events(30)).unwrap();
    let mut middle = std::collections::BTreeMap::new();
    let mut left_from_middle = 0;
    for p in 0..log.partitions() {
        let all = log.read(p, 0, usize::MAX).unwrap();
        assert_eq!(log.events_from(p, 0).unwrap(), all.len() as u64, "partition {p}");
        for (i, e) in all.iter().enumerate() {
            assert_eq!(
                log.events_from(p, e.position.offset).unwrap(),
                (all.len() - i) as u64,
                "partition {p}, offset {}",
                e.position.offset
            );
            assert_eq!(log.events_from(p, e.position.offset + 1).unwrap(), (all.len() - i - 1) as u64);
        }
        assert_eq!(log.events_from(p, log.end_offset(p).unwrap()).unwrap(), 0);
        if let Some(e) = all.get(all.len() / 2) {
            middle.insert(p, e.position.offset);
            left_from_middle += (all.len() - all.len() / 2) as u64;
        }
    }
    assert_eq!(log.events_behind(&Default::default()).unwrap(), 30);
    // Partitions left out of `middle` hold no event.
    assert_eq!(log.events_behind(&middle).unwrap(), left_from_middle);
}

/// Checkpoints are kept per consumer and partition.
pub fn checkpoints_are_per_consumer_and_partition(log: Box<dyn EventLog>) {
    assert_eq!(log.checkpoint("a", 0).unwrap(), None);
    log.commit_checkpoint("a", 0, 5).unwrap();
    log.commit_checkpoint("b", 0, 7).unwrap();
    log.commit_checkpoint("a", 0, 6).unwrap();
    assert_eq!(log.checkpoint("a", 0).unwrap(), Some(6));
    assert_eq!(log.checkpoint("b", 0).unwrap(), Some(7));
    if log.partitions() > 1 {
        assert_eq!(log.checkpoint("a", 1).unwrap(), None);
    }
}

/// A partition outside the log is refused, not read as empty.
pub fn unknown_partition_is_an_error(log: Box<dyn EventLog>) {
    let p = log.partitions();
    assert!(matches!(log.read(p, 0, 1), Err(LogError::UnknownPartition { .. })));
}

/// Appends wake readers waiting on [`EventLog::appended`].
pub fn appended_notifies_readers(log: Box<dyn EventLog>) {
    let mut rx = log.appended();
    rx.borrow_and_update();
    log.append(&identity_events(1)).unwrap();
    assert!(rx.has_changed().unwrap());
}
