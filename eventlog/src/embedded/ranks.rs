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

use super::{EVENTS, META};
use crate::LogError;

/// Every this many events of a partition, the offset of the next one is kept: counting
/// from an offset reads at most this many keys.
pub(super) const BLOCK: u64 = 1024;

/// `(partition, block)` → the offset of the partition's event number `block * BLOCK`.
pub(super) const RANKS: TableDefinition<(u32, u64), u64> = TableDefinition::new("ranks");

/// Set in `META` once the file's events are ranked.
const META_RANKED: &str = "ranked";

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

    /// Writes what [`Ranks::count`] returned into the log file.
    pub(super) fn write(
        meta: &mut Table<&str, u64>,
        ranks: &mut Table<(u32, u64), u64>,
        counts: &[u64],
        started: &NewBlocks,
    ) -> Result<(), LogError> {
        for (partition, block, offset) in started {
            ranks.insert((*partition, *block), *offset)?;
        }
        for (partition, n) in counts.iter().enumerate() {
            meta.insert(count_key(partition as u32).as_str(), *n)?;
        }
        meta.insert(META_RANKED, 1)?;
        Ok(())
    }

    /// The ranks a log file holds, or `None` when it was written before ranks were kept.
    pub(super) fn read(
        meta: &impl ReadableTable<&'static str, u64>,
        ranks: Option<&impl ReadableTable<(u32, u64), u64>>,
        partitions: u32,
    ) -> Result<Option<Ranks>, LogError> {
        if meta.get(META_RANKED)?.is_none() {
            return Ok(None);
        }
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
        Ok(Some(out))
    }

    /// Ranks every event a log file holds (one pass over its keys).
    pub(super) fn index(events: &impl ReadableTable<(u32, u64), &'static [u8]>, partitions: u32) -> Result<(Ranks, NewBlocks), LogError> {
        let started_at = std::time::Instant::now();
        let mut ranks = Ranks::empty(partitions);
        let mut counts = ranks.counts.clone();
        let mut keys = Vec::new();
        let mut started = Vec::new();
        for row in events.iter()? {
            let (key, _) = row?;
            keys.push(key.value());
            if keys.len() == 65_536 {
                started.extend(Ranks::count(&mut counts, keys.drain(..)));
            }
        }
        started.extend(Ranks::count(&mut counts, keys.drain(..)));
        ranks.extend(counts, started.clone());
        info!(
            events = ranks.counts.iter().sum::<u64>(),
            took_ms = started_at.elapsed().as_millis() as u64,
            "ranked the log file's events (once)"
        );
        Ok((ranks, started))
    }
}

/// How many events of `partition` the table holds from `from` up to (not including) `to`.
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
    for row in events.range((partition, from)..(partition, to))? {
        row?;
        n += 1;
    }
    Ok(n)
}

/// Opens the ranks table of a writer, ranking the file's events first if it was written
/// before ranks were kept.
pub(super) fn open_for_writing(txn: &redb::WriteTransaction, partitions: u32) -> Result<Ranks, LogError> {
    let mut meta = txn.open_table(META)?;
    let mut table = txn.open_table(RANKS)?;
    if let Some(ranks) = Ranks::read(&meta, Some(&table), partitions)? {
        return Ok(ranks);
    }
    let events = txn.open_table(EVENTS)?;
    let (ranks, started) = Ranks::index(&events, partitions)?;
    Ranks::write(&mut meta, &mut table, &ranks.counts, &started)?;
    Ok(ranks)
}
