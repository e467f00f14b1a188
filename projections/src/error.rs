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
    /// A stored row does not have the shape this build wrote.
    #[error("corrupt read model: {0}")]
    Corrupt(String),
}

impl From<tantivy::TantivyError> for ProjectionError {
    fn from(e: tantivy::TantivyError) -> Self {
        ProjectionError::Search(e.to_string())
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
        }
    }
}
