//! Prints the rows of one partition of an embedded store's table (newest last), for
//! looking into a data directory by hand.
//!
//! ```sh
//! cargo run --release -p store --example scan -- DATA_DIR MODEL TABLE PARTITION [LIMIT]
//! ```

use store::{EmbeddedStore, Scan, Store, TableRef};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, model, table, partition, rest @ ..] = args.as_slice() else {
        return Err("usage: scan DATA_DIR MODEL TABLE PARTITION [LIMIT]".into());
    };
    let limit = rest.first().map_or(Ok(20), |l| l.parse())?;
    let store = EmbeddedStore::open(std::path::Path::new(dir))?;
    let version = store.active_version(model)?.ok_or("no active version of that model")?;
    let page = store.scan(&TableRef::new(model, version, table), partition, &Scan { after: None, limit, reverse: false })?;
    println!("{} rows (version {version})", page.rows.len());
    for row in page.rows {
        println!("{:?} {:?}", String::from_utf8_lossy(&row.clustering), row.columns);
    }
    Ok(())
}
