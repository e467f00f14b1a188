//! The bytes each table of an embedded store (`store.redb` and the versions' files) holds:
//! its rows' stored bytes, the pages' own metadata and their fragmentation, largest first;
//! and the files' size. For docs/capacity.md.
//!
//! ```sh
//! cargo run --release -p store --example table_sizes -- DATA_DIR
//! ```

use redb::{Database, ReadableDatabase, ReadableTableMetadata, TableDefinition, TableHandle};

type RowTable<'a> = TableDefinition<'a, (&'static str, &'static [u8]), &'static [u8]>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: table_sizes DATA_DIR")?;
    let mut file = 0;
    let mut rows = Vec::new();
    for path in store::store_files(std::path::Path::new(&dir))? {
        file += std::fs::metadata(&path)?.len();
        let db = Database::open(&path)?;
        let txn = db.begin_read()?;
        for handle in txn.list_tables()? {
            let name = handle.name().to_owned();
            let Ok(table) = txn.open_table(RowTable::new(&name)) else { continue };
            let stats = table.stats()?;
            rows.push((stats.stored_bytes(), stats.metadata_bytes(), stats.fragmented_bytes(), table.len()?, name));
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mb = |b: u64| b as f64 / 1e6;
    println!("| table | rows | stored MB | metadata MB | fragmented MB |");
    println!("|---|---|---|---|---|");
    let (mut stored, mut meta, mut frag) = (0, 0, 0);
    for (s, m, f, n, name) in &rows {
        println!("| {name} | {n} | {:.1} | {:.1} | {:.1} |", mb(*s), mb(*m), mb(*f));
        (stored, meta, frag) = (stored + s, meta + m, frag + f);
    }
    println!("| all row tables | | {:.1} | {:.1} | {:.1} |", mb(stored), mb(meta), mb(frag));
    println!("files: {:.1} MB", mb(file));
    Ok(())
}
