use event_schema::{ClassifiedError, ErrorClass};
use thiserror::Error;

/// A value that does not satisfy its lexicon, with the path of the offending part.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{path}: {message}")]
pub struct ValidationError {
    /// Where in the value: `authors[0].name`, or a parameter name.
    pub path: String,
    /// What is wrong, in lowercase words.
    pub message: String,
}

impl ValidationError {
    /// A validation error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> ValidationError {
        let path = path.into();
        ValidationError { path: if path.is_empty() { "(root)".into() } else { path }, message: message.into() }
    }
}

/// Errors of the lexicon crate.
#[derive(Debug, Error)]
pub enum LexiconError {
    /// The value does not satisfy the lexicon.
    #[error("invalid: {0}")]
    Invalid(#[from] ValidationError),
    /// No lexicon for this NSID.
    #[error("no lexicon for {0}")]
    UnknownLexicon(String),
    /// A lexicon document is not well formed.
    #[error("malformed lexicon: {0}")]
    Malformed(String),
}

impl ClassifiedError for LexiconError {
    fn error_class(&self) -> ErrorClass {
        match self {
            LexiconError::Invalid(_) | LexiconError::UnknownLexicon(_) => ErrorClass::InvalidRequest,
            LexiconError::Malformed(_) => ErrorClass::Internal,
        }
    }
}
