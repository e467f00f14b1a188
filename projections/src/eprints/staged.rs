//! Writes staged for one batch, readable before they are applied.

use std::collections::HashMap;

use store::{Batch, Columns, Store, StoreError, TableRef};

type Key = (TableRef, String, Vec<u8>);

/// A [`Batch`] under construction that answers reads with its own pending writes first.
#[derive(Default)]
pub(crate) struct Staged {
    batch: Batch,
    cache: HashMap<Key, Option<Columns>>,
}

impl Staged {
    pub fn get(&mut self, store: &dyn Store, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        let key = (table.clone(), partition.to_owned(), clustering.to_vec());
        if let Some(v) = self.cache.get(&key) {
            return Ok(v.clone());
        }
        let v = store.get(table, partition, clustering)?;
        self.cache.insert(key, v.clone());
        Ok(v)
    }

    pub fn put(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, columns: Columns) {
        self.cache.insert((table.clone(), partition.to_owned(), clustering.clone()), Some(columns.clone()));
        self.batch.put(table, partition, clustering, columns);
    }

    pub fn delete(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>) {
        self.cache.insert((table.clone(), partition.to_owned(), clustering.clone()), None);
        self.batch.delete(table, partition, clustering);
    }

    pub fn into_batch(self) -> Batch {
        self.batch
    }
}
