//! The bytes the embedded log's file (`log.redb`) holds: its events' stored bytes, the
//! pages' metadata and their fragmentation; and what a Kafka topic would hold of the same
//! events. For docs/capacity.md.
//!
//! ```sh
//! cargo run --release -p eventlog --example log_sizes -- DATA_DIR
//! ```

use std::collections::BTreeMap;

use eventlog::EVENTS;
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

/// A Kafka record's framing besides its key and value (record batch v2: length,
/// attributes, timestamp and offset deltas, key and value lengths, header count).
const RECORD_FRAMING: u64 = 10;
/// A record batch's header.
const BATCH_HEADER: u64 = 61;
/// librdkafka's `batch.size`: the most a batch holds before compression.
const BATCH_BYTES: usize = 1_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: log_sizes DATA_DIR")?;
    let path = std::path::Path::new(&dir).join(eventlog::LOG_FILE);
    let db = redb::ReadOnlyDatabase::open(&path)?;
    let txn = db.begin_read()?;
    let table = txn.open_table(EVENTS)?;
    let stats = table.stats()?;
    let (mut values, mut largest) = (0u64, 0usize);
    let mut sizes = Vec::new();
    // Per partition, in offset order, each event's Kafka record (key, then the event's CBOR:
    // the Kafka backend writes it unpacked).
    let mut records: BTreeMap<u32, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    let mut events = 0u64;
    for row in table.iter()? {
        let (key, value) = row?;
        let n = value.value().len();
        values += n as u64;
        largest = largest.max(n);
        sizes.push(n);
        let (partition, last) = key.value();
        for (offset, cbor) in eventlog::stored_events(partition, last, value.value())? {
            let event = event_schema::codec::decode(event_schema::Position { partition, offset }, &cbor)?;
            records.entry(partition).or_default().push((event.key, cbor));
            events += 1;
        }
    }
    sizes.sort_unstable();
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "events: {events} in {} rows, values {:.1} MB ({} B mean a row, {} B median, {} B p90, {largest} B largest)",
        sizes.len(),
        mb(values),
        values / (sizes.len() as u64).max(1),
        sizes.get(sizes.len() / 2).unwrap_or(&0),
        sizes.get(sizes.len() * 9 / 10).unwrap_or(&0)
    );
    println!(
        "stored {:.1} MB, metadata {:.1} MB, fragmented {:.1} MB, leaf pages {}, branch pages {}",
        mb(stats.stored_bytes()),
        mb(stats.metadata_bytes()),
        mb(stats.fragmented_bytes()),
        stats.leaf_pages(),
        stats.branch_pages()
    );
    println!("file: {:.1} MB", mb(std::fs::metadata(&path)?.len()));

    // A Kafka topic of the same events (one replica; index files left out): uncompressed,
    // librdkafka's default, and with the producer's `compression.type=zstd` (level 3).
    let (mut plain, mut zstd, mut batches) = (0u64, 0u64, 0u64);
    for partition in records.values() {
        let mut batch: Vec<u8> = Vec::new();
        let mut close = |batch: &mut Vec<u8>| -> Result<(), std::io::Error> {
            if !batch.is_empty() {
                zstd += BATCH_HEADER + zstd::bulk::compress(batch, 3)?.len() as u64;
                batches += 1;
                batch.clear();
            }
            Ok(())
        };
        for (key, value) in partition {
            let record = RECORD_FRAMING as usize + key.len() + value.len();
            plain += record as u64;
            if batch.len() + record > BATCH_BYTES {
                close(&mut batch)?;
            }
            batch.resize(batch.len() + RECORD_FRAMING as usize, 0);
            batch.extend_from_slice(key.as_bytes());
            batch.extend_from_slice(value);
        }
        close(&mut batch)?;
    }
    // Blocks of consecutive events of a partition compressed together with the dictionary,
    // at zstd levels.
    let dictionary = event_schema::packed::DICTIONARIES.last().ok_or("no dictionary")?;
    for level in [3, 6, 9, 12, 15, 19] {
        let started = std::time::Instant::now();
        let mut compressor = zstd::bulk::Compressor::with_dictionary(level, dictionary)?;
        let (mut packed, mut blocks) = (0u64, 0u64);
        for partition in records.values() {
            let mut block: Vec<u8> = Vec::new();
            let mut close = |block: &mut Vec<u8>| -> Result<(), std::io::Error> {
                if !block.is_empty() {
                    packed += compressor.compress(block)?.len() as u64 + 12;
                    blocks += 1;
                    block.clear();
                }
                Ok(())
            };
            for (_, value) in partition {
                if block.len() + value.len() > 46 * 1024 {
                    close(&mut block)?;
                }
                block.extend_from_slice(value);
            }
            close(&mut block)?;
        }
        println!("blocks of 46 KiB, level {level}: {:.1} MB ({blocks} blocks), {:.1} s", mb(packed), started.elapsed().as_secs_f64());
    }
    println!(
        "as a Kafka topic: {:.1} MB uncompressed, {:.1} MB with compression.type=zstd ({batches} batches of up to {} MB)",
        mb(plain + batches * BATCH_HEADER),
        mb(zstd),
        BATCH_BYTES / 1_000_000
    );
    Ok(())
}
