//! How many events each partition of the embedded log holds, and where every
//! [`BLOCK`]-th of them is, so that the events of one partition between two offsets can be
//! counted without reading them all: offsets are shared by every partition, so an offset
//! difference counts the other partitions' events too (a lag of 4 partitions read 4 times
//! too high).
//!
//! Kept in the log file beside the events, written in the transaction that writes them
//! (`RANKS`: `(partition, block)` → the offset of the block's first event; `META`:
//! `events.<partition>` → how many events the partition holds), and in memory with the
//! pending events. A log file written before this existed is indexed once, on opening.

use redb::{ReadableTable, Table, TableDefinition};
use tracing::info;

use super::{stored_offsets, EVENTS, META};
use crate::LogError;

/// Every this many events of a partition, the offset of the next one is kept: counting
/// from an offset reads at most this many keys.
pub(super) const BLOCK: u64 = 1024;

/// `(partition, block)` → the offset of the partition's event number `block * BLOCK`.
pub(super) const RANKS: TableDefinition<(u32, u64), u64> = TableDefinition::new("ranks");

/// In `META`: the offset up to which the file's events are ranked (its next offset when
/// they were last ranked). Events a build that kept no ranks appended after it are ranked
/// on opening.
const META_RANKED_THROUGH: &str = "ranked_through";

fn count_key(partition: u32) -> String {
    format!("events.{partition}")
}

/// Per partition, how many events the log file holds and the offset of every
/// [`BLOCK`]-th.
#[derive(Debug, Clone, Default)]
pub(super) struct Ranks {
    pub(super) counts: Vec<u64>,
    pub(super) blocks: Vec<Vec<u64>>,
}

/// The block starts that events added to a [`Ranks`] made: `(partition, block, offset)`.
pub(super) type NewBlocks = Vec<(u32, u64, u64)>;

impl Ranks {
    fn empty(partitions: u32) -> Ranks {
        Ranks { counts: vec![0; partitions as usize], blocks: vec![Vec::new(); partitions as usize] }
    }

    /// Counts events appended to `partition`s at `offset`s (in offset order within each
    /// partition, after every event counted before), returning the blocks they start.
    pub(super) fn count(counts: &mut [u64], events: impl Iterator<Item = (u32, u64)>) -> NewBlocks {
        let mut started = Vec::new();
        for (partition, offset) in events {
            let n = &mut counts[partition as usize];
            if n.is_multiple_of(BLOCK) {
                started.push((partition, *n / BLOCK, offset));
            }
            *n += 1;
        }
        started
    }

    /// Takes what [`Ranks::count`] returned once it is written.
    pub(super) fn extend(&mut self, counts: Vec<u64>, started: NewBlocks) {
        self.counts = counts;
        for (partition, block, offset) in started {
            let blocks = &mut self.blocks[partition as usize];
            debug_assert_eq!(blocks.len() as u64, block);
            blocks.push(offset);
        }
    }

    /// Where counting the events of `partition` before `offset` starts: the rank and offset
    /// of the last block start at or before it; `None` when the partition's first event
    /// in the file comes after it.
    pub(super) fn block_before(&self, partition: u32, offset: u64) -> Option<(u64, u64)> {
        let blocks = &self.blocks[partition as usize];
        let after = blocks.partition_point(|start| *start <= offset);
        after.checked_sub(1).map(|b| (b as u64 * BLOCK, blocks[b]))
    }

    /// Writes what [`Ranks::count`] returned into the log file, the events ranked up to
    /// offset `through`.
    pub(super) fn write(
        meta: &mut Table<&str, u64>,
        ranks: &mut Table<(u32, u64), u64>,
        counts: &[u64],
        started: &NewBlocks,
        through: u64,
    ) -> Result<(), LogError> {
        for (partition, block, offset) in started {
            ranks.insert((*partition, *block), *offset)?;
        }
        for (partition, n) in counts.iter().enumerate() {
            meta.insert(count_key(partition as u32).as_str(), *n)?;
        }
        meta.insert(META_RANKED_THROUGH, through)?;
        Ok(())
    }

    /// The ranks a log file holds and the offset they reach, or `None` when it was written
    /// before ranks were kept.
    fn read(
        meta: &impl ReadableTable<&'static str, u64>,
        ranks: Option<&impl ReadableTable<(u32, u64), u64>>,
        partitions: u32,
    ) -> Result<Option<(Ranks, u64)>, LogError> {
        let Some(through) = meta.get(META_RANKED_THROUGH)?.map(|v| v.value()) else {
            return Ok(None);
        };
        let mut out = Ranks::empty(partitions);
        for p in 0..partitions {
            out.counts[p as usize] = meta.get(count_key(p).as_str())?.map_or(0, |v| v.value());
        }
        if let Some(ranks) = ranks {
            for row in ranks.iter()? {
                let (key, offset) = row?;
                let (partition, _) = key.value();
                if let Some(blocks) = out.blocks.get_mut(partition as usize) {
                    blocks.push(offset.value());
                }
            }
        }
        Ok(Some((out, through)))
    }

    /// Ranks the events a log file holds from offset `from` on, after those `self` counts
    /// (one pass over their keys, partition by partition), returning the blocks they start.
    pub(super) fn rank_from(&mut self, events: &impl ReadableTable<(u32, u64), &'static [u8]>, from: u64) -> Result<NewBlocks, LogError> {
        let started_at = std::time::Instant::now();
        let mut counts = self.counts.clone();
        let mut started = Vec::new();
        for partition in 0..counts.len() as u32 {
            let mut keys = Vec::new();
            for row in events.range((partition, from)..=(partition, u64::MAX))? {
                let (key, value) = row?;
                let (partition, last) = key.value();
                let offsets = stored_offsets(partition, last, value.value())?;
                keys.extend(offsets.into_iter().filter(|o| *o >= from).map(|o| (partition, o)));
                if keys.len() >= 65_536 {
                    started.extend(Ranks::count(&mut counts, keys.drain(..)));
                }
            }
            started.extend(Ranks::count(&mut counts, keys.drain(..)));
        }
        let ranked = counts.iter().sum::<u64>() - self.counts.iter().sum::<u64>();
        self.extend(counts, started.clone());
        if ranked > 0 {
            info!(
                events = ranked,
                from,
                took_ms = started_at.elapsed().as_millis() as u64,
                "ranked the log file's events written without ranks"
            );
        }
        Ok(started)
    }

    /// The ranks of a log file, with the events appended after they were last written (or
    /// all of them, for a file written before ranks were kept) ranked in memory: the new
    /// blocks, and the offset the file's ranks must reach.
    pub(super) fn of_file(
        meta: &impl ReadableTable<&'static str, u64>,
        ranks: Option<&impl ReadableTable<(u32, u64), u64>>,
        events: &impl ReadableTable<(u32, u64), &'static [u8]>,
        partitions: u32,
    ) -> Result<(Ranks, NewBlocks), LogError> {
        let (mut out, through) = Ranks::read(meta, ranks, partitions)?.unwrap_or_else(|| (Ranks::empty(partitions), 0));
        let started = out.rank_from(events, through)?;
        Ok((out, started))
    }
}

/// How many events of `partition` the table holds from `from` up to (not including) `to`:
/// a block's are read from its header ([`super::block`]).
pub(super) fn count_between(
    events: &impl ReadableTable<(u32, u64), &'static [u8]>,
    partition: u32,
    from: u64,
    to: u64,
) -> Result<u64, LogError> {
    if to <= from {
        return Ok(0);
    }
    let mut n = 0;
    for row in events.range((partition, from)..=(partition, u64::MAX))? {
        let (key, value) = row?;
        let last = key.value().1;
        n += stored_offsets(partition, last, value.value())?.iter().filter(|o| (from..to).contains(*o)).count() as u64;
        if last >= to {
            break;
        }
    }
    Ok(n)
}

/// The ranks of a writer's log file, ranking first the events it holds without ranks (a file
/// written before ranks were kept, or appended to by such a build since) up to `next`.
pub(super) fn open_for_writing(txn: &redb::WriteTransaction, partitions: u32, next: u64) -> Result<Ranks, LogError> {
    let mut meta = txn.open_table(META)?;
    let mut table = txn.open_table(RANKS)?;
    let events = txn.open_table(EVENTS)?;
    let (ranks, started) = Ranks::of_file(&meta, Some(&table), &events, partitions)?;
    Ranks::write(&mut meta, &mut table, &ranks.counts, &started, next)?;
    Ok(ranks)
}
