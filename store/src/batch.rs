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
        /// The write's stamp: the log position (an ordinal) of the event that produced it,
        /// or, for a row the events of several keys write (a projection's aggregates), the
        /// projector's clock. A store without atomic batches lets no lower stamp overwrite a
        /// higher one.
        position: u64,
    },
    /// Delete a row (a no-op if it is absent).
    Delete {
        /// The table.
        table: TableRef,
        /// The partition key.
        partition: String,
        /// The clustering key.
        clustering: Vec<u8>,
        /// The deletion's stamp, as for [`Op::Put`].
        position: u64,
    },
    /// Every write before this one lands before any write after it. Stores that apply a
    /// batch atomically ignore it; the others use it to order what a crash can leave half
    /// done (see [`Batch::barrier`]).
    Barrier,
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
    /// The batch need not be durable when `apply` returns, only once a later durable batch
    /// or [`crate::Store::sync`] has been applied: a crash before then loses it whole, with
    /// its checkpoints, so it is read again from the log. For projections, whose every
    /// batch the log can give again. Stores whose every write is durable ignore it.
    pub deferred: bool,
}

impl Batch {
    /// Adds a row write made by the event at log position `position`.
    pub fn put(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, columns: Columns, position: u64) {
        self.ops.push(Op::Put { table: table.clone(), partition: partition.to_owned(), clustering, columns, position });
    }

    /// Adds a row deletion made by the event at log position `position`.
    pub fn delete(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, position: u64) {
        self.ops.push(Op::Delete { table: table.clone(), partition: partition.to_owned(), clustering, position });
    }

    /// Orders the writes: on a store that is not atomic across partitions (ScyllaDB), all
    /// writes added before the barrier land before any added after it, and checkpoints land
    /// after every write. A projection puts the rows it reads back to make decisions after
    /// the rows derived from them, so that a crash mid-batch never leaves a decision row
    /// whose derived rows are missing.
    pub fn barrier(&mut self) {
        self.ops.push(Op::Barrier);
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
