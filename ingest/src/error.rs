use event_schema::{ClassifiedError, ErrorClass};
use thiserror::Error;

/// Errors of ingest.
#[derive(Debug, Error)]
pub enum IngestError {
    /// A source file could not be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of a source file is not a paper.
    #[error("{path}:{line}: not a paper: {reason}")]
    BadPaper {
        /// The file.
        path: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A record could not be encoded as DAG-CBOR.
    #[error("failed to encode record: {0}")]
    Encode(String),
    /// A record svc writes itself (the seeded taxonomy) fails its lexicon: a fault in the
    /// committed data.
    #[error("invalid built-in record: {0}")]
    BadRecord(String),
    /// A repository could not be backfilled.
    #[error("backfill of {did}: {reason}")]
    Backfill {
        /// The repository DID.
        did: String,
        /// What went wrong.
        reason: String,
    },
    /// The stream task failed outside the network (a panicked blocking task).
    #[error("stream: {0}")]
    Stream(String),
    /// The log refused the events.
    #[error(transparent)]
    Log(#[from] eventlog::LogError),
}

impl ClassifiedError for IngestError {
    fn error_class(&self) -> ErrorClass {
        match self {
            IngestError::Read { .. } | IngestError::BadPaper { .. } => ErrorClass::InvalidRequest,
            IngestError::Backfill { .. } => ErrorClass::Unavailable,
            IngestError::Encode(_) | IngestError::BadRecord(_) | IngestError::Stream(_) => ErrorClass::Internal,
            IngestError::Log(e) => e.error_class(),
        }
    }
}
