use thiserror::Error;

/// The class of an error, as a client should see it. Only the query API turns a class into
/// an HTTP status and an XRPC or REST error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request was malformed or named something invalid.
    InvalidRequest,
    /// The thing asked for does not exist.
    NotFound,
    /// A dependency (log, store, index) cannot serve right now.
    Unavailable,
    /// A fault on our side; its text is never shown to clients.
    Internal,
}

/// Implemented by every library error so that the query API can classify it.
pub trait ClassifiedError: std::error::Error {
    /// The class of this error.
    fn error_class(&self) -> ErrorClass;
}

/// Errors of the event codec.
#[derive(Debug, Error)]
pub enum CodecError {
    /// The bytes are not a CBOR event of any known shape.
    #[error("failed to decode event: {0}")]
    Decode(String),
    /// The event was encoded by a newer build than this one.
    #[error("unsupported event schema version {version} (this build reads up to {supported})")]
    UnsupportedVersion {
        /// The version found in the event.
        version: u16,
        /// The newest version this build reads.
        supported: u16,
    },
    /// The event kind is not known to this build.
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    /// The event could not be encoded.
    #[error("failed to encode event: {0}")]
    Encode(String),
}

impl ClassifiedError for CodecError {
    fn error_class(&self) -> ErrorClass {
        ErrorClass::Internal
    }
}
