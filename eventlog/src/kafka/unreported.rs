//! Finding the offsets of appended events whose delivery reports carry none.
//!
//! An idempotent producer whose send was stored but not acknowledged (the broker died before
//! answering) sends the batch again; the broker answers the retry with
//! `DUPLICATE_SEQUENCE_NUMBER`, and librdkafka reports those messages delivered with an
//! invalid offset (`rdkafka_request.c`: "Treat as success, however offset and timestamp will
//! be invalid"). The events are stored once; only where is unknown. They are found by reading
//! their partition: one producer's events keep their order within a partition, so each run of
//! unreported events lies between the reported offsets around it (or after what the log was
//! known to hold before the append), and is matched there, in order, by content and append
//! time, which no other append shares. One that is not there (the broker lost it, or holds it
//! where it cannot be read) is left unlocated: the append sends it again.

use event_schema::{Envelope, NewEvent};

use crate::LogError;

/// How many events a scan reads at a time.
const PAGE: usize = 1_000;

/// One appended event: its partition, its content, and its offset if its report gave one.
pub(super) struct Sent<'a> {
    pub partition: u32,
    pub event: &'a NewEvent,
    pub offset: Option<u64>,
}

/// Fills in the `Sent::offset`s left `None` with where the events are, reading partitions
/// with `read(partition, from, max)`; an event that is not where it must be is left `None`.
/// `floor[p]` is an offset partition `p` was known to reach before the append (no event of
/// the append lies below it); `appended_at` the micros every event was stamped with.
///
/// # Errors
/// What `read` returns.
pub(super) fn locate(
    sent: &mut [Sent<'_>],
    floor: &[u64],
    appended_at: i64,
    mut read: impl FnMut(u32, u64, usize) -> Result<Vec<Envelope>, LogError>,
) -> Result<(), LogError> {
    for partition in 0..floor.len() as u32 {
        let mine: Vec<usize> = (0..sent.len()).filter(|&i| sent[i].partition == partition).collect();
        let mut i = 0;
        while i < mine.len() {
            if sent[mine[i]].offset.is_some() {
                i += 1;
                continue;
            }
            // The run of unreported events `mine[i..end]`, between reported neighbours.
            let end = (i..mine.len()).find(|&j| sent[mine[j]].offset.is_some()).unwrap_or(mine.len());
            let from = match i {
                0 => floor[partition as usize],
                _ => sent[mine[i - 1]].offset.map_or(0, |o| o + 1),
            };
            let before = mine.get(end).and_then(|&j| sent[j].offset).unwrap_or(u64::MAX);
            let mut next = i;
            let mut at = from;
            'scan: while next < end && at < before {
                let page = read(partition, at, PAGE)?;
                if page.is_empty() {
                    break;
                }
                for stored in &page {
                    if stored.position.offset >= before {
                        break 'scan;
                    }
                    at = stored.position.offset + 1;
                    // Kept in order, but one the broker lost is skipped.
                    if let Some(j) = (next..end).find(|&j| is(stored, sent[mine[j]].event, appended_at)) {
                        sent[mine[j]].offset = Some(stored.position.offset);
                        next = j + 1;
                        if next == end {
                            break 'scan;
                        }
                    }
                }
            }
            i = end;
        }
    }
    Ok(())
}

/// Whether `stored` is `event` as appended at `appended_at` (micros).
fn is(stored: &Envelope, event: &NewEvent, appended_at: i64) -> bool {
    stored.appended_at.timestamp_micros() == appended_at
        && stored.key == event.key
        && stored.source == event.source
        && stored.payload == event.payload
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_suite::identity_events;
    use chrono::DateTime;
    use event_schema::{codec, Position};

    /// A partition's records: `(event, appended_at)`, in offset order.
    fn stored(records: &[(&NewEvent, i64)]) -> Vec<Envelope> {
        records
            .iter()
            .enumerate()
            .map(|(offset, (event, at))| {
                let bytes = codec::encode(event, DateTime::from_timestamp_micros(*at).unwrap()).unwrap();
                codec::decode(Position { partition: 0, offset: offset as u64 }, &bytes).unwrap()
            })
            .collect()
    }

    fn reader(log: Vec<Envelope>) -> impl FnMut(u32, u64, usize) -> Result<Vec<Envelope>, LogError> {
        move |_, from, max| Ok(log.iter().skip(from as usize).take(max.min(2)).cloned().collect())
    }

    #[test]
    fn unreported_events_are_found_between_their_reported_neighbours() {
        let events = identity_events(6);
        let (mine, at, other_at) = (1_000, 1_000, 2_000);
        // Offsets 0–1 precede the append; another producer's events interleave with ours,
        // one with the same content as ours but another append time.
        let log = stored(&[
            (&events[5], 1),
            (&events[5], 2),
            (&events[0], mine),
            (&events[1], other_at),
            (&events[1], mine),
            (&events[4], other_at),
            (&events[2], mine),
            (&events[3], mine),
            (&events[4], mine),
        ]);
        let mut sent: Vec<Sent> = events[..5].iter().map(|event| Sent { partition: 0, event, offset: None }).collect();
        sent[2].offset = Some(6);
        locate(&mut sent, &[2], at, reader(log)).unwrap();
        let offsets: Vec<_> = sent.iter().map(|s| s.offset.unwrap()).collect();
        assert_eq!(offsets, [2, 4, 6, 7, 8]);
    }

    #[test]
    fn an_event_not_where_it_must_be_is_left_unlocated() {
        let events = identity_events(3);
        let log = stored(&[(&events[0], 5), (&events[1], 5), (&events[2], 5)]);
        let mut sent: Vec<Sent> = events.iter().map(|event| Sent { partition: 0, event, offset: None }).collect();
        sent[1].offset = Some(1);
        // Only offsets below 1 may hold the first event, and from the floor 1 there are none;
        // the third is found after the second.
        locate(&mut sent, &[1], 5, reader(log)).unwrap();
        assert_eq!(sent.iter().map(|s| s.offset).collect::<Vec<_>>(), [None, Some(1), Some(2)]);

        // One lost in the middle of a run: those around it are still found.
        let log = stored(&[(&events[0], 5), (&events[2], 5)]);
        let mut sent: Vec<Sent> = events.iter().map(|event| Sent { partition: 0, event, offset: None }).collect();
        locate(&mut sent, &[0], 5, reader(log)).unwrap();
        assert_eq!(sent.iter().map(|s| s.offset).collect::<Vec<_>>(), [Some(0), None, Some(1)]);
    }
}
