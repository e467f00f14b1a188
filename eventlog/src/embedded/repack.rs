//! Rewriting a stopped log's file with its tables in key order.
//!
//! The events table's key is `(partition, offset)`, and the partitions' appends interleave:
//! only the last partition's events come after every key, so redb fills that partition's
//! leaves and splits the others' in half, which stay so (a third of the file). redb fills a
//! leaf to the brim when each key comes after every other, so a copy in key order packs
//! every leaf; the copy is compacted and renamed over the file, which is atomic: a crash
//! leaves either file whole (and at worst the copy beside it, removed by the next repack).
//!
//! The copy also gathers each partition's events into full [blocks](super::block), compressed
//! harder than the flusher can afford ([`event_schema::packed::pack_small`]): the flusher's
//! blocks hold what one of its batches held, a few events when appends come one at a time.

use std::path::Path;

use redb::{Database, Durability, Key, ReadTransaction, ReadableDatabase, TableDefinition, TableError, TableHandle, Value};

use super::{ranks, stored_events, BlockWriter, CHECKPOINTS, EVENTS, LOG_FILE, META, PAGE_CACHE_BYTES};
use crate::LogError;

/// Rows copied per transaction.
const CHUNK: usize = 20_000;

/// The sizes of the log file before and after [`repack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repacked {
    /// Bytes before.
    pub before: u64,
    /// Bytes after.
    pub after: u64,
}

/// Rewrites the log file in `dir` with every table in key order, for an offline command: no
/// process may have the log open (redb refuses a file another process holds), and what a
/// journal holds must have been moved into the file first (opening the log does that).
///
/// # Errors
/// [`LogError::Unavailable`] when the file cannot be read, the copy cannot be written (a
/// full disk: the copy is removed, the file stays as it was) or the file holds a table this
/// build does not know (it is left as it is rather than copied without it).
pub fn repack(dir: &Path) -> Result<Repacked, LogError> {
    let path = dir.join(LOG_FILE);
    let copy = path.with_extension("redb.new");
    let io = |what: &str, p: &Path, e: std::io::Error| LogError::Unavailable(format!("failed to {what} {}: {e}", p.display()));
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).map_err(|e| io("read", p, e));
    match std::fs::remove_file(&copy) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("remove", &copy, e)),
        _ => {}
    }
    let before = size(&path)?;
    {
        let db = redb::Builder::new().set_cache_size(PAGE_CACHE_BYTES).open(&path)?;
        if let Err(e) = copy_all(&db, &copy) {
            let _ = std::fs::remove_file(&copy);
            return Err(e);
        }
    }
    std::fs::rename(&copy, &path).map_err(|e| io("rename", &copy, e))?;
    Ok(Repacked { before, after: size(&path)? })
}

/// Copies every table of `db` into a new file at `to`, then compacts it.
fn copy_all(db: &Database, to: &Path) -> Result<(), LogError> {
    let read = db.begin_read()?;
    let known = [EVENTS.name(), META.name(), CHECKPOINTS.name(), ranks::RANKS.name()];
    if let Some(other) = read.list_tables()?.map(|t| t.name().to_owned()).find(|name| !known.contains(&name.as_str())) {
        return Err(LogError::Unavailable(format!("the log file holds a table this svc does not know ({other}): not repacked")));
    }
    let mut out = redb::Builder::new().set_cache_size(PAGE_CACHE_BYTES).create(to)?;
    copy_events(&read, &out)?;
    copy_table(&read, &out, META)?;
    copy_table(&read, &out, CHECKPOINTS)?;
    copy_table(&read, &out, ranks::RANKS)?;
    // A durable commit makes the chunks' commits durable; compacting gives back the pages
    // they freed.
    out.begin_write()?.commit()?;
    while out.compact().map_err(|e| LogError::Unavailable(format!("could not compact {}: {e}", to.display())))? {}
    Ok(())
}

/// Copies the events table, in key order, each partition's events in blocks as full as
/// [`ROW_BYTES`](super::block::ROW_BYTES) allows, a chunk of rows per transaction.
fn copy_events(from: &ReadTransaction, to: &Database) -> Result<(), LogError> {
    let source = match from.open_table(EVENTS) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut rows = redb::ReadableTable::iter(&source)?.peekable();
    let mut writer = BlockWriter::offline();
    while rows.peek().is_some() {
        let mut txn = to.begin_write()?;
        txn.set_durability(Durability::None).map_err(|e| LogError::Unavailable(format!("cannot defer durability: {e}")))?;
        {
            let mut t = txn.open_table(EVENTS)?;
            for entry in rows.by_ref().take(CHUNK) {
                let (key, value) = entry?;
                let (partition, last) = key.value();
                for (offset, encoded) in stored_events(partition, last, value.value())? {
                    writer.push(&mut t, partition, offset, &encoded)?;
                }
            }
            if rows.peek().is_none() {
                writer.finish(&mut t)?;
            }
        }
        txn.commit()?;
    }
    Ok(())
}

/// Copies one table, in key order, a chunk of rows per transaction.
fn copy_table<K: Key + 'static, V: Value + 'static>(
    from: &ReadTransaction,
    to: &Database,
    table: TableDefinition<K, V>,
) -> Result<(), LogError> {
    let source = match from.open_table(table) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut rows = redb::ReadableTable::iter(&source)?;
    loop {
        let mut txn = to.begin_write()?;
        txn.set_durability(Durability::None).map_err(|e| LogError::Unavailable(format!("cannot defer durability: {e}")))?;
        let mut copied = 0;
        {
            let mut t = txn.open_table(table)?;
            for entry in rows.by_ref().take(CHUNK) {
                let (k, v) = entry?;
                t.insert(k.value(), v.value())?;
                copied += 1;
            }
        }
        txn.commit()?;
        if copied < CHUNK {
            return Ok(());
        }
    }
}
