use event_schema::{ClassifiedError, ErrorClass};
use thiserror::Error;

/// Errors of projections.
#[derive(Debug, Error)]
pub enum ProjectionError {
    /// The read-model store failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The event log failed.
    #[error(transparent)]
    Log(#[from] eventlog::LogError),
    /// The search index failed.
    #[error("search index failed: {0}")]
    Search(String),
    /// A search request could not be understood.
    #[error("invalid search: {0}")]
    InvalidSearch(String),
    /// A projection task or thread panicked.
    #[error("projection task failed: {0}")]
    Panicked(String),
    /// The work was cancelled before it finished (a rebuild stopped by `cancelBackfill`).
    #[error("cancelled")]
    Cancelled,
    /// The projection worker asked is not running (stopped, or not started yet).
    #[error("the projection worker is not running")]
    Stopped,
    /// A stored row does not have the shape this build wrote.
    #[error("corrupt read model: {0}")]
    Corrupt(String),
}

impl From<tantivy::TantivyError> for ProjectionError {
    fn from(e: tantivy::TantivyError) -> Self {
        ProjectionError::Search(e.to_string())
    }
}

impl ProjectionError {
    /// The embedded log's or store's file failed (see [`store::StoreError::Io`]): nothing
    /// more can be written by this process, so a worker stops at once.
    pub fn needs_restart(&self) -> bool {
        matches!(self, ProjectionError::Store(store::StoreError::Io(_)) | ProjectionError::Log(eventlog::LogError::Io(_)))
    }
}

impl ProjectionError {
    /// Only a consequence of an earlier failure that another error names (the embedded file
    /// refusing every transaction after a failed write).
    pub fn repeats_an_earlier_failure(&self) -> bool {
        matches!(self, ProjectionError::Store(store::StoreError::Io(why)) if why == store::EARLIER_WRITE_FAILED)
            || matches!(self, ProjectionError::Log(eventlog::LogError::Io(why)) if why == eventlog::EARLIER_WRITE_FAILED)
    }
}

impl ClassifiedError for ProjectionError {
    fn error_class(&self) -> ErrorClass {
        match self {
            ProjectionError::Store(e) => e.error_class(),
            ProjectionError::Log(e) => e.error_class(),
            ProjectionError::Search(_) | ProjectionError::Corrupt(_) | ProjectionError::Panicked(_) | ProjectionError::Cancelled => {
                ErrorClass::Internal
            }
            ProjectionError::InvalidSearch(_) => ErrorClass::InvalidRequest,
            ProjectionError::Stopped => ErrorClass::Unavailable,
        }
    }
}
