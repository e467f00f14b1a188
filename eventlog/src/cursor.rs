//! Where a reader of the whole log starts, and how far it has read: one next offset per
//! partition. `svc log tail --from` and the live stream (`pub.svc.log.subscribe`) take the
//! same cursors, and the stream hands one back with every event.
//!
//! A cursor is written as
//! - `N`: offset `N` of every partition (`0`: the start of the log);
//! - `N0,N1,…`: the next offset of each partition, in partition order (what the stream
//!   hands back: reconnecting with it misses nothing and repeats nothing);
//! - an RFC 3339 time: in each partition, the first event appended at or after it.

use chrono::{DateTime, Utc};

use crate::{EventLog, LogError};

/// A parsed cursor, not yet resolved against a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    /// The same offset in every partition.
    Offset(u64),
    /// The next offset of each partition.
    Offsets(Vec<u64>),
    /// The first event of each partition appended at or after this time.
    Time(DateTime<Utc>),
}

/// Why a cursor was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CursorError {
    /// Not a number, a list of numbers or an RFC 3339 time.
    #[error("cursor {0:?} is not an offset, a comma-separated offset per partition or an RFC 3339 time")]
    Malformed(String),
    /// A list whose length is not the log's partition count.
    #[error("cursor names {named} partitions; the log has {partitions}")]
    Partitions {
        /// The offsets the cursor lists.
        named: usize,
        /// The log's partitions.
        partitions: u32,
    },
}

impl std::str::FromStr for Cursor {
    type Err = CursorError;

    fn from_str(s: &str) -> Result<Cursor, CursorError> {
        let s = s.trim();
        let malformed = || CursorError::Malformed(s.chars().take(80).collect());
        if s.contains(',') {
            let offsets: Result<Vec<u64>, _> = s.split(',').map(|o| o.trim().parse::<u64>()).collect();
            return offsets.map(Cursor::Offsets).map_err(|_| malformed());
        }
        if let Ok(offset) = s.parse::<u64>() {
            return Ok(Cursor::Offset(offset));
        }
        DateTime::parse_from_rfc3339(s).map(|t| Cursor::Time(t.with_timezone(&Utc))).map_err(|_| malformed())
    }
}

impl Cursor {
    /// The next offset of each partition of `log` this cursor names. A time is found by a
    /// binary search of each partition (a few reads each), taking appends as ordered by
    /// time within a partition.
    ///
    /// # Errors
    /// [`ResolveError::Cursor`] for a list of the wrong length; [`ResolveError::Log`] when
    /// the log cannot be read.
    pub fn resolve(&self, log: &dyn EventLog) -> Result<Vec<u64>, ResolveError> {
        let partitions = log.partitions();
        match self {
            Cursor::Offset(offset) => Ok(vec![*offset; partitions as usize]),
            Cursor::Offsets(offsets) if offsets.len() == partitions as usize => Ok(offsets.clone()),
            Cursor::Offsets(offsets) => Err(CursorError::Partitions { named: offsets.len(), partitions }.into()),
            Cursor::Time(time) => (0..partitions).map(|p| first_at_or_after(log, p, *time)).collect(),
        }
    }
}

/// Why a cursor could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The cursor does not fit the log.
    #[error(transparent)]
    Cursor(#[from] CursorError),
    /// The log could not be read.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Writes the next offset of each partition as a cursor ([`Cursor::Offsets`]).
pub fn format(next: &[u64]) -> String {
    let mut out = String::with_capacity(next.len() * 8);
    for (i, offset) in next.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&offset.to_string());
    }
    out
}

/// The offset of the first event of `partition` appended at or after `time` (its end when
/// there is none).
fn first_at_or_after(log: &dyn EventLog, partition: u32, time: DateTime<Utc>) -> Result<u64, ResolveError> {
    let end = log.end_offset(partition)?;
    let (mut low, mut high) = (0u64, end);
    while low < high {
        let mid = low + (high - low) / 2;
        match log.read(partition, mid, 1)?.first() {
            // A partition whose first offsets are gone (Kafka's retention) reads from its
            // earliest: that event stands for every offset before it.
            Some(event) if event.appended_at < time => low = event.position.offset.max(mid) + 1,
            Some(_) => high = mid,
            None => high = mid,
        }
    }
    Ok(low)
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_schema::{IdentityChange, NewEvent, Payload, Source};

    #[test]
    fn cursors_parse_and_resolve_against_a_log() {
        assert_eq!("0".parse(), Ok(Cursor::Offset(0)));
        assert_eq!("3, 0,7".parse(), Ok(Cursor::Offsets(vec![3, 0, 7])));
        assert!(matches!("2026-11-28T00:00:00Z".parse(), Ok(Cursor::Time(_))));
        for bad in ["", "x", "1,,2", "-1", "2026-13-01"] {
            assert!(matches!(bad.parse::<Cursor>(), Err(CursorError::Malformed(_))), "{bad}");
        }

        let dir = tempfile::tempdir().unwrap();
        let log = crate::EmbeddedLog::open(dir.path(), 2).unwrap();
        let event = |n: usize| {
            NewEvent::repo(
                Source::Manual { note: "cursor".into() },
                Payload::Identity(IdentityChange { did: format!("did:plc:{n}"), handle: None, display_name: None }),
            )
        };
        log.append(&(0..6).map(event).collect::<Vec<_>>()).unwrap();
        let cut = Utc::now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        log.append(&(6..12).map(event).collect::<Vec<_>>()).unwrap();
        let ends = log.end_offsets().unwrap();
        assert_eq!(Cursor::Offset(0).resolve(&log).unwrap(), vec![0, 0]);
        assert!(matches!(
            Cursor::Offsets(vec![1]).resolve(&log),
            Err(ResolveError::Cursor(CursorError::Partitions { named: 1, partitions: 2 }))
        ));
        // Offsets need not be contiguous in a partition: reading from the resolved offset
        // gives exactly the events appended at or after the time.
        let at_cut = Cursor::Time(cut).resolve(&log).unwrap();
        for p in 0..2u32 {
            let after: Vec<u64> = log.read(p, 0, 100).unwrap().iter().filter(|e| e.appended_at >= cut).map(|e| e.position.offset).collect();
            let read: Vec<u64> = log.read(p, at_cut[p as usize], 100).unwrap().iter().map(|e| e.position.offset).collect();
            assert_eq!(read, after, "partition {p}");
        }
        assert_eq!(Cursor::Time(Utc::now()).resolve(&log).unwrap(), ends);
        assert_eq!(format(&[3, 0, 7]).parse(), Ok(Cursor::Offsets(vec![3, 0, 7])));
    }
}
