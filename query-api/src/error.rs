//! The one place where errors become HTTP responses: the XRPC envelope
//! `{error, message, details?}` and the REST envelope `{error: {code, message, details?}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use event_schema::{ClassifiedError, ErrorClass};
use projections::access::Role;
use serde_json::{json, Value};
use tracing::error;

/// A fault of our own, described for the logs only.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Internal(pub String);

impl ClassifiedError for Internal {
    fn error_class(&self) -> ErrorClass {
        ErrorClass::Internal
    }
}

/// The error codes svc answers with: the XRPC `error` name, the REST `code` and the HTTP
/// status follow from the code alone ([`ErrorCode::spec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// A parameter, body or request shape is wrong.
    InvalidRequest,
    /// The route exists but not for this HTTP method (named `InvalidRequest`).
    MethodNotAllowed,
    /// The request URI is longer than the server reads (named `InvalidRequest`).
    UriTooLong,
    /// No record at the address asked for.
    RecordNotFound,
    /// No such method, route or resource.
    NotFound,
    /// The operation needs credentials and none were sent.
    AuthRequired,
    /// The credentials sent are malformed or do not verify.
    InvalidToken,
    /// The credentials sent have expired.
    ExpiredToken,
    /// Authenticated, but not allowed to do this.
    Forbidden,
    /// The repository is not available from its host.
    RepoNotFound,
    /// A repository host could not be reached or answered wrongly.
    UpstreamFailure,
    /// An operation of the contract this build does not serve yet.
    NotImplemented,
    /// A dependency of the service is unavailable, or the answer took too long.
    ServiceUnavailable,
    /// A fault of svc's own.
    InternalError,
    /// No eprint carries the tag asked for.
    TagNotFound,
    /// The token's session was revoked or ended.
    RevokedToken,
    /// An admin operation called by a non-admin.
    AuthorizationError,
    /// Over the caller's rate limit.
    RateLimitExceeded,
    /// On the admin namespace: no such user or application.
    NotFoundError,
    /// Not an e-mail address.
    InvalidEmail,
    /// Authenticated, but not one who may change this eprint (the eprint procedures' name).
    Unauthorized,
    /// A replacement value an eprint update may not take.
    ValidationError,
    /// No authorship claim by the id asked for.
    ClaimNotFound,
    /// The paper's authorship was claimed already.
    AlreadyClaimed,
    /// An operation of the same kind is running already (a second full reindex).
    OperationInProgress,
    /// The caller has a pending or approved claim on the paper already.
    DuplicateClaim,
    /// No co-author request by the id asked for.
    RequestNotFound,
    /// The external source has no paper by the id asked for (the PDF proxy).
    EprintNotFound,
    /// The paper has no PDF its source serves.
    PdfNotAvailable,
    /// The paper's PDF is on a host the PDF proxy does not fetch from.
    DomainNotAllowed,
    /// The PDF could not be fetched, or what came back is not a PDF.
    FetchFailed,
    /// ORCID verification asked of a service with no ORCID client configured (400, as XRPC
    /// names a refusal particular to a method).
    OrcidNotConfigured,
    /// A subscriber of the log's stream read nothing for too long (an error frame, then
    /// the close).
    ConsumerTooSlow,
}

impl ErrorCode {
    /// The one table of the codes: `(HTTP status, XRPC error name, REST code)`. The REST
    /// code is the XRPC name in UPPER_SNAKE form (the not-found family is one).
    pub fn spec(self) -> (StatusCode, &'static str, &'static str) {
        use ErrorCode::*;
        match self {
            InvalidRequest => (StatusCode::BAD_REQUEST, "InvalidRequest", "INVALID_REQUEST"),
            MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "InvalidRequest", "INVALID_REQUEST"),
            UriTooLong => (StatusCode::URI_TOO_LONG, "InvalidRequest", "INVALID_REQUEST"),
            InvalidEmail => (StatusCode::BAD_REQUEST, "InvalidEmail", "INVALID_REQUEST"),
            ValidationError => (StatusCode::BAD_REQUEST, "ValidationError", "INVALID_REQUEST"),
            ClaimNotFound => (StatusCode::NOT_FOUND, "ClaimNotFound", "NOT_FOUND"),
            AlreadyClaimed => (StatusCode::CONFLICT, "AlreadyClaimed", "ALREADY_CLAIMED"),
            DuplicateClaim => (StatusCode::CONFLICT, "DuplicateClaim", "DUPLICATE_CLAIM"),
            OperationInProgress => (StatusCode::CONFLICT, "OperationInProgress", "CONFLICT"),
            RequestNotFound => (StatusCode::NOT_FOUND, "RequestNotFound", "NOT_FOUND"),
            EprintNotFound => (StatusCode::NOT_FOUND, "EprintNotFound", "NOT_FOUND"),
            PdfNotAvailable => (StatusCode::NOT_FOUND, "PdfNotAvailable", "NOT_FOUND"),
            DomainNotAllowed => (StatusCode::FORBIDDEN, "DomainNotAllowed", "FORBIDDEN"),
            FetchFailed => (StatusCode::BAD_GATEWAY, "FetchFailed", "UPSTREAM_FAILURE"),
            OrcidNotConfigured => (StatusCode::BAD_REQUEST, "OrcidNotConfigured", "INVALID_REQUEST"),
            ConsumerTooSlow => (StatusCode::TOO_MANY_REQUESTS, "ConsumerTooSlow", "RATE_LIMITED"),
            RecordNotFound => (StatusCode::NOT_FOUND, "RecordNotFound", "NOT_FOUND"),
            NotFound => (StatusCode::NOT_FOUND, "NotFound", "NOT_FOUND"),
            RepoNotFound => (StatusCode::NOT_FOUND, "RepoNotFound", "NOT_FOUND"),
            TagNotFound => (StatusCode::NOT_FOUND, "TagNotFound", "NOT_FOUND"),
            NotFoundError => (StatusCode::NOT_FOUND, "NotFoundError", "NOT_FOUND"),
            AuthRequired => (StatusCode::UNAUTHORIZED, "AuthRequired", "UNAUTHORIZED"),
            InvalidToken => (StatusCode::UNAUTHORIZED, "InvalidToken", "UNAUTHORIZED"),
            ExpiredToken => (StatusCode::UNAUTHORIZED, "ExpiredToken", "UNAUTHORIZED"),
            RevokedToken => (StatusCode::UNAUTHORIZED, "RevokedToken", "UNAUTHORIZED"),
            Forbidden => (StatusCode::FORBIDDEN, "Forbidden", "FORBIDDEN"),
            AuthorizationError => (StatusCode::FORBIDDEN, "AuthorizationError", "FORBIDDEN"),
            Unauthorized => (StatusCode::FORBIDDEN, "Unauthorized", "FORBIDDEN"),
            RateLimitExceeded => (StatusCode::TOO_MANY_REQUESTS, "RateLimitExceeded", "RATE_LIMITED"),
            UpstreamFailure => (StatusCode::BAD_GATEWAY, "UpstreamFailure", "UPSTREAM_FAILURE"),
            NotImplemented => (StatusCode::NOT_IMPLEMENTED, "NotImplemented", "NOT_IMPLEMENTED"),
            ServiceUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", "SERVICE_UNAVAILABLE"),
            InternalError => (StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "INTERNAL_ERROR"),
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        self.spec().0
    }

    /// The XRPC error name.
    pub fn name(self) -> &'static str {
        self.spec().1
    }

    /// The REST error code.
    pub fn rest_code(self) -> &'static str {
        self.spec().2
    }
}

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: ErrorCode,
    message: String,
    details: Option<Value>,
    /// The `Allow` header of a 405: the HTTP methods the route takes.
    allow: Option<&'static str>,
}

impl ApiError {
    /// An error of `code` (its status follows from it) with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), details: None, allow: None }
    }

    /// The internal error for a fault described by `what` (logged here, never echoed).
    pub fn internal(what: impl Into<String>) -> ApiError {
        ApiError::from_error(Internal(what.into()))
    }

    /// 400 `InvalidRequest`, naming the offending parameter.
    pub fn invalid_param(field: &str, reason: impl Into<String>) -> ApiError {
        let reason = reason.into();
        ApiError {
            details: Some(json!({"field": field, "reason": reason})),
            ..ApiError::new(ErrorCode::InvalidRequest, format!("{field}: {reason}"))
        }
    }

    /// 400 `InvalidRequest`.
    pub fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InvalidRequest, message)
    }

    /// 404 `RecordNotFound`.
    pub fn record_not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::RecordNotFound, message)
    }

    /// 404 `NotFound`: no such method or route.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    /// 405 `InvalidRequest`: the method exists but not with this HTTP method; `allow` names
    /// the methods it takes (the `Allow` header, RFC 9110), unless the router sets it.
    pub fn wrong_method(message: impl Into<String>, allow: Option<&'static str>) -> ApiError {
        ApiError { allow, ..ApiError::new(ErrorCode::MethodNotAllowed, message) }
    }

    /// 401 `AuthRequired`: the operation needs credentials and none were sent.
    pub fn auth_required(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::AuthRequired, message)
    }

    /// 401 `InvalidToken`: the credentials sent are malformed or do not verify.
    pub fn invalid_token(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InvalidToken, message)
    }

    /// 401 `ExpiredToken`.
    pub fn expired_token(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::ExpiredToken, message)
    }

    /// 403 `Forbidden`: authenticated, but not allowed to do this.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Forbidden, message)
    }

    /// 403 for a caller without `required` (it holds `yours`): `Forbidden`, or
    /// `AuthorizationError` on the admin namespace, with `{required_role, your_role}`.
    pub fn missing_role(required: Role, yours: Role, admin_api: bool) -> ApiError {
        let code = if admin_api { ErrorCode::AuthorizationError } else { ErrorCode::Forbidden };
        ApiError {
            details: Some(json!({"required_role": required, "your_role": yours})),
            ..ApiError::new(code, format!("this needs the {required} role; you hold {yours}"))
        }
    }

    /// 401 `RevokedToken`.
    pub fn revoked_token(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::RevokedToken, message)
    }

    /// 429 `RateLimitExceeded` (the rate-limit layer adds `Retry-After`).
    pub fn rate_limited(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::RateLimitExceeded, message)
    }

    /// 404 `RepoNotFound`: the repository is not available from its host.
    pub fn repo_not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::RepoNotFound, message)
    }

    /// 502 `UpstreamFailure`: a repository host could not be reached or answered wrongly.
    pub fn upstream(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::UpstreamFailure, message)
    }

    /// 501 `NotImplemented`: an operation of the contract this build does not serve yet.
    pub fn not_implemented(nsid: &str) -> ApiError {
        ApiError::new(ErrorCode::NotImplemented, format!("{nsid} is not implemented yet"))
    }

    /// Classifies a library error. Internal errors are logged here and never echoed.
    pub fn from_error<E: ClassifiedError>(e: E) -> ApiError {
        match e.error_class() {
            ErrorClass::InvalidRequest => ApiError::invalid_request(e.to_string()),
            ErrorClass::NotFound => ApiError::record_not_found(e.to_string()),
            ErrorClass::Unavailable => {
                error!(error = %e, "dependency unavailable");
                ApiError::new(ErrorCode::ServiceUnavailable, "a dependency of the service is unavailable")
            }
            ErrorClass::Internal => {
                error!(error = %e, "internal error");
                ApiError::new(ErrorCode::InternalError, "internal error")
            }
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// The error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The XRPC envelope, `{error, message, details?}`: the body of an HTTP answer, and the
    /// error frame of a subscription.
    pub fn envelope(&self) -> Value {
        let mut body = json!({"error": self.code.name(), "message": self.message});
        if let Some(d) = &self.details {
            body["details"] = d.clone();
        }
        body
    }

    /// The response in the REST envelope.
    pub fn into_rest(self) -> Response {
        let mut body = json!({"code": self.code.rest_code(), "message": self.message});
        if let Some(d) = self.details {
            body["details"] = d;
        }
        with_allow((self.code.status(), Json(json!({ "error": body }))).into_response(), self.allow)
    }
}

impl<E: ClassifiedError> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError::from_error(e)
    }
}

/// XRPC envelope.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.envelope();
        with_allow((self.code.status(), Json(body)).into_response(), self.allow)
    }
}

fn with_allow(mut response: Response, allow: Option<&'static str>) -> Response {
    if let Some(allow) = allow {
        response.headers_mut().insert(axum::http::header::ALLOW, axum::http::HeaderValue::from_static(allow));
    }
    response
}

/// An [`ApiError`] answered in the REST envelope.
#[derive(Debug)]
pub struct RestError(pub ApiError);

impl<E: Into<ApiError>> From<E> for RestError {
    fn from(e: E) -> Self {
        RestError(e.into())
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        self.0.into_rest()
    }
}
