use event_schema::{ClassifiedError, CodecError, ErrorClass};
use thiserror::Error;

/// Errors of the event log.
#[derive(Debug, Error)]
pub enum LogError {
    /// The log's storage failed or is unreachable.
    #[error("event log unavailable: {0}")]
    Unavailable(String),
    /// A partition number outside the log's partitions.
    #[error("unknown partition {partition} (the log has {partitions})")]
    UnknownPartition {
        /// The partition asked for.
        partition: u32,
        /// How many partitions the log has.
        partitions: u32,
    },
    /// A stored event could not be decoded.
    #[error("corrupt event at partition {partition} offset {offset}: {source}")]
    Corrupt {
        /// The partition of the event.
        partition: u32,
        /// The offset of the event.
        offset: u64,
        /// Why it could not be decoded.
        source: CodecError,
    },
    /// An event could not be encoded.
    #[error(transparent)]
    Encode(CodecError),
}

impl ClassifiedError for LogError {
    fn error_class(&self) -> ErrorClass {
        match self {
            LogError::Unavailable(_) => ErrorClass::Unavailable,
            LogError::UnknownPartition { .. } => ErrorClass::InvalidRequest,
            LogError::Corrupt { .. } | LogError::Encode(_) => ErrorClass::Internal,
        }
    }
}

impl From<redb::Error> for LogError {
    fn from(e: redb::Error) -> Self {
        LogError::Unavailable(e.to_string())
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for LogError {
            fn from(e: $t) -> Self {
                LogError::Unavailable(e.to_string())
            }
        }
    )*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);
