use crate::{Columns, TableRef};

/// One write of a [`Batch`].
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Insert or replace a row.
    Put {
        /// The table.
        table: TableRef,
        /// The partition key.
        partition: String,
        /// The clustering key.
        clustering: Vec<u8>,
        /// The row's columns.
        columns: Columns,
    },
    /// Delete a row (a no-op if it is absent).
    Delete {
        /// The table.
        table: TableRef,
        /// The partition key.
        partition: String,
        /// The clustering key.
        clustering: Vec<u8>,
    },
    /// Set a consumer's checkpoint for one log partition.
    Checkpoint {
        /// The consumer, see [`crate::consumer_name`].
        consumer: String,
        /// The log partition.
        partition: u32,
        /// The next log offset the consumer will read.
        next_offset: u64,
    },
}

/// Writes applied together by [`crate::Store::apply`]: all or nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The writes, applied in order.
    pub ops: Vec<Op>,
}

impl Batch {
    /// Adds a row write.
    pub fn put(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, columns: Columns) {
        self.ops.push(Op::Put { table: table.clone(), partition: partition.to_owned(), clustering, columns });
    }

    /// Adds a row deletion.
    pub fn delete(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>) {
        self.ops.push(Op::Delete { table: table.clone(), partition: partition.to_owned(), clustering });
    }

    /// Adds a checkpoint update.
    pub fn checkpoint(&mut self, consumer: &str, partition: u32, next_offset: u64) {
        self.ops.push(Op::Checkpoint { consumer: consumer.to_owned(), partition, next_offset });
    }

    /// Whether the batch has no writes.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
