//! The bytes the embedded log's file (`log.redb`) holds: its events' stored bytes, the
//! pages' metadata and their fragmentation. For docs/capacity.md.
//!
//! ```sh
//! cargo run --release -p eventlog --example log_sizes -- DATA_DIR
//! ```

use eventlog::EVENTS;
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: log_sizes DATA_DIR")?;
    let path = std::path::Path::new(&dir).join(eventlog::LOG_FILE);
    let db = redb::ReadOnlyDatabase::open(&path)?;
    let txn = db.begin_read()?;
    let table = txn.open_table(EVENTS)?;
    let stats = table.stats()?;
    let (mut values, mut largest) = (0u64, 0usize);
    let mut sizes = Vec::new();
    for row in table.iter()? {
        let (_, value) = row?;
        let n = value.value().len();
        values += n as u64;
        largest = largest.max(n);
        sizes.push(n);
    }
    sizes.sort_unstable();
    let mb = |b: u64| b as f64 / 1e6;
    let events = table.len()?;
    println!(
        "events: {events}, values {:.1} MB ({} B mean, {} B median, {} B p90, {largest} B largest)",
        mb(values),
        values / events.max(1),
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
    Ok(())
}
