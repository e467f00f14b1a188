use event_schema::{ClassifiedError, ErrorClass};
use thiserror::Error;

/// Errors of read-model storage.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The storage failed or is unreachable.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store's configuration (URL, names) is invalid.
    #[error("{0}")]
    Config(String),
    /// A stored row could not be decoded.
    #[error("corrupt row in table {table}: {reason}")]
    Corrupt {
        /// The physical table name.
        table: String,
        /// Why the row could not be decoded.
        reason: String,
    },
    /// The embedded store's file could not be written or read (a full disk, a file-size
    /// limit, a failing device). The open file refuses every later transaction: the process
    /// must stop, and a restart once the cause is gone goes on from the last durable commit.
    #[error("store file failed: {0} (free space or fix the device, then restart svc: what was acknowledged is kept)")]
    Io(String),
    /// A version that does not exist was named.
    #[error("read model {model} has no version {version}")]
    UnknownVersion {
        /// The read model.
        model: String,
        /// The version asked for.
        version: u32,
    },
    /// A version named as one being built is active or retired.
    #[error("version {version} of read model {model} is not being built")]
    NotBuilding {
        /// The read model.
        model: String,
        /// The version named.
        version: u32,
    },
}

impl ClassifiedError for StoreError {
    fn error_class(&self) -> ErrorClass {
        match self {
            StoreError::Unavailable(_) | StoreError::Io(_) => ErrorClass::Unavailable,
            StoreError::Corrupt { .. } | StoreError::UnknownVersion { .. } | StoreError::NotBuilding { .. } | StoreError::Config(_) => {
                ErrorClass::Internal
            }
        }
    }
}

/// The reason of a [`StoreError::Io`] that only repeats an earlier one (the file refuses every
/// transaction after a failed write).
pub const EARLIER_WRITE_FAILED: &str = "an earlier write failed";

impl From<redb::Error> for StoreError {
    fn from(e: redb::Error) -> Self {
        match e {
            redb::Error::Io(e) => StoreError::Io(e.to_string()),
            redb::Error::PreviousIo => StoreError::Io(EARLIER_WRITE_FAILED.into()),
            e => StoreError::Unavailable(e.to_string()),
        }
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::from(redb::Error::from(e))
            }
        }
    )*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);
