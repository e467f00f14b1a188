//! Writes staged for one batch, readable before they are applied.

use std::collections::{HashMap, HashSet};

use store::{Batch, Columns, Store, StoreError, TableRef};

type Key = (TableRef, String, Vec<u8>);

/// A [`Batch`] under construction that answers reads with its own pending writes first.
///
/// Rows of the tables it reads from are the ones the projection makes decisions on (the
/// record's `rev`, the listing keys it owns). They are put behind a [`Batch::barrier`], after
/// the rows derived from them: on a store without atomic batches, a crash mid-batch then
/// leaves decision rows only where everything they imply has landed, and re-applying the
/// batch from the old checkpoint rewrites the same rows.
#[derive(Default)]
pub(crate) struct Staged {
    derived: Batch,
    decisions: Batch,
    read_tables: HashSet<TableRef>,
    cache: HashMap<Key, Option<Columns>>,
}

impl Staged {
    pub fn get(&mut self, store: &dyn Store, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        if !self.read_tables.contains(table) {
            self.read_tables.insert(table.clone());
        }
        let key = (table.clone(), partition.to_owned(), clustering.to_vec());
        if let Some(v) = self.cache.get(&key) {
            return Ok(v.clone());
        }
        let v = store.get(table, partition, clustering)?;
        self.cache.insert(key, v.clone());
        Ok(v)
    }

    fn target(&mut self, table: &TableRef) -> &mut Batch {
        if self.read_tables.contains(table) {
            &mut self.decisions
        } else {
            &mut self.derived
        }
    }

    pub fn put(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, columns: Columns, position: u64) {
        self.cache.insert((table.clone(), partition.to_owned(), clustering.clone()), Some(columns.clone()));
        self.target(table).put(table, partition, clustering, columns, position);
    }

    pub fn delete(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, position: u64) {
        self.cache.insert((table.clone(), partition.to_owned(), clustering.clone()), None);
        self.target(table).delete(table, partition, clustering, position);
    }

    /// The rows put (not deleted) in this batch in one partition of a table.
    pub fn staged_in(&self, table: &TableRef, partition: &str) -> Vec<Columns> {
        self.cache.iter().filter(|((t, p, _), _)| t == table && p == partition).filter_map(|(_, c)| c.clone()).collect()
    }

    /// The derived rows, a barrier, then the decision rows.
    pub fn into_batch(self) -> Batch {
        let mut batch = self.derived;
        if !self.decisions.is_empty() {
            batch.barrier();
            batch.ops.extend(self.decisions.ops);
        }
        batch
    }
}
