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
    /// The embedded log's file could not be written or read (a full disk, a file-size limit,
    /// a failing device). Nothing after the last acknowledged append is kept, and the open
    /// file refuses every later transaction: the process must stop, and a restart once the
    /// cause is gone goes on from what was acknowledged.
    #[error("event log file failed: {0} (free space or fix the device, then restart svc: every acknowledged event is kept)")]
    Io(String),
}

impl ClassifiedError for LogError {
    fn error_class(&self) -> ErrorClass {
        match self {
            LogError::Unavailable(_) | LogError::Io(_) => ErrorClass::Unavailable,
            LogError::UnknownPartition { .. } => ErrorClass::InvalidRequest,
            LogError::Corrupt { .. } | LogError::Encode(_) => ErrorClass::Internal,
        }
    }
}

/// The reason of a [`LogError::Io`] that only repeats an earlier one (the file refuses every
/// transaction after a failed write).
pub const EARLIER_WRITE_FAILED: &str = "an earlier write failed";

impl From<redb::Error> for LogError {
    fn from(e: redb::Error) -> Self {
        match e {
            redb::Error::Io(e) => LogError::Io(e.to_string()),
            redb::Error::PreviousIo => LogError::Io(EARLIER_WRITE_FAILED.into()),
            e => LogError::Unavailable(e.to_string()),
        }
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for LogError {
            fn from(e: $t) -> Self {
                LogError::from(redb::Error::from(e))
            }
        }
    )*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);
