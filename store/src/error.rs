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
    /// A version that does not exist was named.
    #[error("read model {model} has no version {version}")]
    UnknownVersion {
        /// The read model.
        model: String,
        /// The version asked for.
        version: u32,
    },
}

impl ClassifiedError for StoreError {
    fn error_class(&self) -> ErrorClass {
        match self {
            StoreError::Unavailable(_) => ErrorClass::Unavailable,
            StoreError::Corrupt { .. } | StoreError::UnknownVersion { .. } | StoreError::Config(_) => ErrorClass::Internal,
        }
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Unavailable(e.to_string())
            }
        }
    )*};
}
from_redb!(redb::Error, redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);
