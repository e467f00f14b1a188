//! The one place where errors become HTTP responses: the XRPC envelope
//! `{error, message, details?}` and the REST envelope `{error: {code, message, details?}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use event_schema::{ClassifiedError, ErrorClass};
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

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    /// The XRPC error name (`InvalidRequest`, `RecordNotFound`, …).
    name: &'static str,
    message: String,
    details: Option<Value>,
    /// The `Allow` header of a 405: the HTTP methods the route takes.
    allow: Option<&'static str>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, name: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, name, message: message.into(), details: None, allow: None }
    }

    /// 400 `InvalidRequest`, naming the offending parameter.
    pub fn invalid_param(field: &str, reason: impl Into<String>) -> ApiError {
        let reason = reason.into();
        ApiError {
            details: Some(json!({"field": field, "reason": reason})),
            ..ApiError::new(StatusCode::BAD_REQUEST, "InvalidRequest", format!("{field}: {reason}"))
        }
    }

    /// 400 `InvalidRequest`.
    pub fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "InvalidRequest", message)
    }

    /// 404 `RecordNotFound`.
    pub fn record_not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "RecordNotFound", message)
    }

    /// 404 `NotFound`: no such method or route.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "NotFound", message)
    }

    /// 405 `InvalidRequest`: the method exists but not with this HTTP method; `allow` names
    /// the methods it takes (the `Allow` header, RFC 9110), unless the router sets it.
    pub fn wrong_method(message: impl Into<String>, allow: Option<&'static str>) -> ApiError {
        ApiError { allow, ..ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "InvalidRequest", message) }
    }

    /// 401 `AuthRequired`: the operation needs credentials and none were sent.
    pub fn auth_required(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "AuthRequired", message)
    }

    /// 401 `InvalidToken`: the credentials sent are malformed or do not verify.
    pub fn invalid_token(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "InvalidToken", message)
    }

    /// 401 `ExpiredToken`.
    pub fn expired_token(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "ExpiredToken", message)
    }

    /// 403 `Forbidden`: authenticated, but not allowed to do this.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    /// 404 `RepoNotFound`: the repository is not available from its host.
    pub fn repo_not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "RepoNotFound", message)
    }

    /// 502 `UpstreamFailure`: a repository host could not be reached or answered wrongly.
    pub fn upstream(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_GATEWAY, "UpstreamFailure", message)
    }

    /// 501 `NotImplemented`: an operation of the contract this build does not serve yet.
    pub fn not_implemented(nsid: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_IMPLEMENTED, "NotImplemented", format!("{nsid} is not implemented yet"))
    }

    /// Classifies a library error. Internal errors are logged here and never echoed.
    pub fn from_error<E: ClassifiedError>(e: E) -> ApiError {
        match e.error_class() {
            ErrorClass::InvalidRequest => ApiError::invalid_request(e.to_string()),
            ErrorClass::NotFound => ApiError::record_not_found(e.to_string()),
            ErrorClass::Unavailable => {
                error!(error = %e, "dependency unavailable");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", "a dependency of the service is unavailable")
            }
            ErrorClass::Internal => {
                error!(error = %e, "internal error");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "internal error")
            }
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The REST error code: the XRPC name in UPPER_SNAKE form.
    fn rest_code(&self) -> &'static str {
        match self.name {
            "InvalidRequest" => "INVALID_REQUEST",
            "RecordNotFound" | "NotFound" | "RepoNotFound" => "NOT_FOUND",
            "AuthRequired" | "InvalidToken" | "ExpiredToken" => "UNAUTHORIZED",
            "Forbidden" => "FORBIDDEN",
            "UpstreamFailure" => "UPSTREAM_FAILURE",
            "NotImplemented" => "NOT_IMPLEMENTED",
            "ServiceUnavailable" => "SERVICE_UNAVAILABLE",
            _ => "INTERNAL_ERROR",
        }
    }

    /// The response in the REST envelope.
    pub fn into_rest(self) -> Response {
        let mut body = json!({"code": self.rest_code(), "message": self.message});
        if let Some(d) = self.details {
            body["details"] = d;
        }
        with_allow((self.status, Json(json!({ "error": body }))).into_response(), self.allow)
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
        let mut body = json!({"error": self.name, "message": self.message});
        if let Some(d) = self.details {
            body["details"] = d;
        }
        with_allow((self.status, Json(body)).into_response(), self.allow)
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
