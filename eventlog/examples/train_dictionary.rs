//! Trains the zstd dictionary stored values are compressed with (`event-schema`'s
//! `packed`) on the events of a data directory's log, and writes it to a file.
//!
//! The committed dictionary comes from the committed sample and its made-up layer:
//!
//! ```sh
//! target/release/svc seed --social --data-dir /tmp/dict fixtures/arxiv-sample-3k.jsonl.gz
//! cargo run --release -p eventlog --example train_dictionary -- /tmp/dict event-schema/dictionaries/1.zdict
//! ```

use eventlog::EVENTS;
use redb::{ReadableDatabase, ReadableTable};

/// zstd's default size for a trained dictionary.
const DICTIONARY_BYTES: usize = 112_640;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(out)) = (args.next(), args.next()) else { return Err("usage: train_dictionary DATA_DIR OUT".into()) };
    let db = redb::ReadOnlyDatabase::open(std::path::Path::new(&dir).join(eventlog::LOG_FILE))?;
    let txn = db.begin_read()?;
    let mut samples = Vec::new();
    for row in txn.open_table(EVENTS)?.iter()? {
        let (key, value) = row?;
        let (partition, last) = key.value();
        samples.extend(eventlog::stored_events(partition, last, value.value())?.into_iter().map(|(_, event)| event));
    }
    let bytes: usize = samples.iter().map(Vec::len).sum();
    let dictionary = zstd::dict::from_samples(&samples, DICTIONARY_BYTES)?;
    std::fs::write(&out, &dictionary)?;
    println!("trained on {} events ({:.1} MB): {} bytes to {out}", samples.len(), bytes as f64 / 1e6, dictionary.len());
    Ok(())
}
