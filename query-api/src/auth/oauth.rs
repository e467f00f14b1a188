//! The token endpoints, in the OAuth error envelope (`{error, error_description}`):
//!
//! - `POST /oauth/authorize`: a user proves control of their DID with a service-auth JWT
//!   from their PDS (`com.atproto.server.getServiceAuth`, `aud` svc's DID, `lxm`
//!   [`AUTHORIZE_LXM`]) and a PKCE `code_challenge` (S256); the answer is a one-minute code.
//! - `POST /oauth/token`: the code and its `code_verifier` become a session (or, with MFA
//!   enrolled, `mfa_required` and an `mfa_token`); a refresh token becomes the next pair.
//! - `POST /oauth/mfa/verify`: the `mfa_token` and a TOTP or recovery code complete a login.
//! - `POST /oauth/revoke` (RFC 7009): ends the session of a refresh or access token.
//! - `POST /auth/totp/enroll`, `/auth/totp/confirm`, `/auth/mfa/disable`: TOTP enrolment
//!   (recovery codes are shown once, at confirmation) and removal.
//! - `POST /auth/webauthn/register/options` and `/register/verify` (bearer): a passkey
//!   registered; `POST /auth/webauthn/authenticate/options` with the `mfa_token`: the
//!   challenge a passkey signs for `/oauth/mfa/verify` (`method` `webauthn`).
//!
//! Every change is a `command.access` event; the access model decides the once-only rules
//! in log order and the handler answers from what it decided (principles 1 and 7).

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use event_schema::{AccessAction, OnceProof};
use projections::access::read::{AccessReader, Session};
use serde_json::{json, Map, Value};

use super::{access_event, audit_refusal, factors};
use crate::error::{ApiError, ErrorCode};
use crate::identity::keys::TokenError;
use crate::identity::tokens::{
    new_id, new_refresh_token, pkce_matches, refresh_session, session_of, sha256_hex, AccessClaims, LoginClaims, ACCESS_LIFETIME,
    ACCESS_TYP, CODE_LIFETIME, CODE_TYP, MFA_LIFETIME, MFA_TYP, REFRESH_LIFETIME, SCOPE,
};
use crate::identity::{Caller, Credential, Resolved};
use crate::state::AppState;

/// The `lxm` of the service-auth token that asks for an authorization code.
pub const AUTHORIZE_LXM: &str = "pub.svc.auth.authorize";
/// The largest form or JSON body read.
const MAX_FORM: usize = 16 * 1024;
/// Recovery codes issued at a time.
pub const RECOVERY_CODES: usize = 10;

/// An error of the token endpoints: `{error, error_description, ...}`.
#[derive(Debug, Clone)]
pub struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
    extra: Option<Value>,
}

impl OAuthError {
    pub(super) fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError { status, error, description: description.into(), extra: None }
    }

    pub(super) fn request(description: impl Into<String>) -> OAuthError {
        OAuthError::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }

    pub(super) fn grant(description: impl Into<String>) -> OAuthError {
        OAuthError::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }

    /// The OAuth form of an XRPC error (credentials, limits, failures).
    pub fn from_api(e: ApiError) -> OAuthError {
        let error = match e.code() {
            ErrorCode::AuthRequired | ErrorCode::InvalidToken | ErrorCode::ExpiredToken | ErrorCode::RevokedToken => "invalid_token",
            ErrorCode::Forbidden | ErrorCode::AuthorizationError => "access_denied",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::InvalidRequest | ErrorCode::MethodNotAllowed | ErrorCode::UriTooLong => "invalid_request",
            ErrorCode::ServiceUnavailable => "temporarily_unavailable",
            _ => "server_error",
        };
        OAuthError::new(e.status(), error, e.message())
    }
}

impl From<ApiError> for OAuthError {
    fn from(e: ApiError) -> Self {
        OAuthError::from_api(e)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.error, "error_description": self.description});
        if let Some(Value::Object(extra)) = self.extra {
            body.as_object_mut().expect("object").extend(extra);
        }
        let mut r = (self.status, Json(body)).into_response();
        r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer error=\"invalid_token\""));
        }
        r
    }
}

pub(super) type Answer = Result<Response, OAuthError>;

/// The routes of the token endpoints.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/oauth/authorize", post(authorize))
        .route("/oauth/token", post(token))
        .route("/oauth/mfa/verify", post(factors::mfa_verify))
        .route("/oauth/revoke", post(revoke))
        .route("/auth/totp/enroll", post(factors::totp_enroll))
        .route("/auth/totp/confirm", post(factors::totp_confirm))
        .route("/auth/mfa/disable", post(factors::mfa_disable))
        .route("/auth/webauthn/register/options", post(factors::passkey_register_options))
        .route("/auth/webauthn/register/verify", post(factors::passkey_register_verify))
        .route("/auth/webauthn/authenticate/options", post(factors::passkey_authenticate_options))
        .route("/.well-known/jwks.json", axum::routing::get(jwks))
}

async fn jwks(State(state): State<AppState>) -> Response {
    Json(state.auth.keys.jwks()).into_response()
}

/// The caller the identity layer resolved, required.
pub(super) fn caller(request: &Request) -> Result<Caller, OAuthError> {
    match request.extensions().get::<Resolved>() {
        Some(Resolved(Some(c))) => Ok(c.clone()),
        _ => Err(OAuthError::from_api(ApiError::auth_required("this endpoint needs a bearer token"))),
    }
}

/// A body's fields: from JSON (any values), or a form (`application/x-www-form-urlencoded`,
/// strings).
pub(super) async fn fields(request: Request) -> Result<Fields, OAuthError> {
    let form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let body = axum::body::to_bytes(request.into_body(), MAX_FORM)
        .await
        .map_err(|_| OAuthError::request(format!("the body could not be read whole, or is larger than {MAX_FORM} bytes")))?;
    if form {
        return Ok(form_urlencoded::parse(&body).into_owned().map(|(k, v)| (k, Value::String(v))).collect::<Fields>());
    }
    if body.is_empty() {
        return Ok(Fields::new());
    }
    let value: Value = serde_json::from_slice(&body).map_err(|e| OAuthError::request(format!("the body is not JSON: {e}")))?;
    let Value::Object(map) = value else { return Err(OAuthError::request("the body is not a JSON object")) };
    Ok(map)
}

type Fields = Map<String, Value>;

/// A required string field.
pub(super) fn field<'a>(f: &'a Fields, name: &str) -> Result<&'a str, OAuthError> {
    f.get(name)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::request(format!("{name} is required (a string)")))
}

/// A required object field, as `T`.
pub(super) fn object<T: serde::de::DeserializeOwned>(f: &Fields, name: &str) -> Result<T, OAuthError> {
    let value = f.get(name).cloned().ok_or_else(|| OAuthError::request(format!("{name} is required")))?;
    let value = match value {
        Value::String(s) => serde_json::from_str(&s).map_err(|e| OAuthError::request(format!("{name}: {e}")))?,
        v => v,
    };
    serde_json::from_value(value).map_err(|e| OAuthError::request(format!("{name} is not a WebAuthn credential: {e}")))
}

pub(super) fn read<T>(state: &AppState, f: impl FnOnce(&AccessReader) -> Result<T, projections::ProjectionError>) -> Result<T, OAuthError> {
    crate::reads::blocking(state, || f(&AccessReader::new(state.store.as_ref())?))
        .map_err(|e| OAuthError::from_api(ApiError::from_error(e)))
}

pub(super) async fn append(state: &AppState, subject: &str, actor: &str, via: &str, change: AccessAction) -> Result<(), OAuthError> {
    crate::command::append(state, access_event(state, subject, actor, via, change)).await.map(drop).map_err(OAuthError::from_api)
}

pub(super) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub(super) fn ok(body: Value) -> Answer {
    let mut r = Json(body).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    Ok(r)
}

/// `POST /oauth/authorize`: a code for the DID that signed the service-auth token.
async fn authorize(State(state): State<AppState>, request: Request) -> Answer {
    let caller = caller(&request)?;
    if caller.credential != Credential::ServiceAuth {
        return Err(OAuthError::request(format!("prove your DID with a service-auth token from your PDS (lxm {AUTHORIZE_LXM})")));
    }
    let f = fields(request).await?;
    let challenge = field(&f, "code_challenge")?;
    if f.get("code_challenge_method").and_then(Value::as_str).unwrap_or("S256") != "S256" {
        return Err(OAuthError::request("code_challenge_method must be S256"));
    }
    if challenge.len() != 43 || data_encoding::BASE64URL_NOPAD.decode(challenge.as_bytes()).is_err() {
        return Err(OAuthError::request("code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)"));
    }
    let handle = state.sync.fetcher.resolver().resolve(&caller.did).await.ok().and_then(|d| d.handle.clone());
    let t = now();
    let claims = LoginClaims {
        iss: state.auth.service_did.clone(),
        sub: caller.did,
        aud: state.auth.service_did.clone(),
        exp: t + CODE_LIFETIME,
        iat: t,
        jti: new_id(),
        challenge: Some(challenge.to_owned()),
        handle,
    };
    ok(json!({"code": state.auth.keys.sign(CODE_TYP, &claims), "expires_in": CODE_LIFETIME}))
}

/// `POST /oauth/token`.
async fn token(State(state): State<AppState>, request: Request) -> Answer {
    let f = fields(request).await?;
    match field(&f, "grant_type")? {
        "authorization_code" => exchange_code(&state, field(&f, "code")?, field(&f, "code_verifier")?).await,
        "refresh_token" => refresh(&state, field(&f, "refresh_token")?).await,
        other => Err(OAuthError::new(StatusCode::BAD_REQUEST, "unsupported_grant_type", format!("grant_type {other} is not supported"))),
    }
}

pub(super) fn verify_login(state: &AppState, token: &str, typ: &str, what: &str) -> Result<LoginClaims, OAuthError> {
    let claims: LoginClaims = state.auth.keys.verify(token, typ, &state.auth.service_did).map_err(|e| match e {
        TokenError::Expired => OAuthError::grant(format!("the {what} expired")),
        TokenError::Invalid(why) => OAuthError::grant(format!("not a valid {what}: {why}")),
    })?;
    if claims.iss != state.auth.service_did {
        return Err(OAuthError::grant(format!("the {what} was issued by another service")));
    }
    Ok(claims)
}

async fn exchange_code(state: &AppState, code: &str, verifier: &str) -> Answer {
    let login = verify_login(state, code, CODE_TYP, "authorization code")?;
    if !login.challenge.as_deref().is_some_and(|c| pkce_matches(verifier, c)) {
        return Err(OAuthError::grant("the code_verifier does not match the code_challenge"));
    }
    let factors = read(state, |r| r.factors(&login.sub))?;
    let methods = factors.methods();
    if !methods.is_empty() {
        let t = now();
        let mfa = LoginClaims { exp: t + MFA_LIFETIME, iat: t, challenge: None, ..login };
        let mut e = OAuthError::new(
            StatusCode::FORBIDDEN,
            "mfa_required",
            "this account has a second factor: complete the login at /oauth/mfa/verify",
        );
        e.extra = Some(json!({"mfa_token": state.auth.keys.sign(MFA_TYP, &mfa), "allowed_methods": methods}));
        return Err(e);
    }
    start_session(state, &login, "serviceAuth", None).await
}

/// Starts the session a login becomes, and answers its tokens when the access model let it.
pub(super) async fn start_session(state: &AppState, login: &LoginClaims, method: &str, proof: Option<OnceProof>) -> Answer {
    let session = session_of(&login.jti);
    let refresh_token = new_refresh_token(&session);
    let refresh_hash = sha256_hex(&refresh_token);
    let spends_a_factor = proof.is_some();
    let change = AccessAction::SessionStarted {
        session: session.clone(),
        refresh_hash: refresh_hash.clone(),
        method: method.to_owned(),
        handle: login.handle.clone(),
        expires_at: now() + REFRESH_LIFETIME,
        proof,
    };
    let at = crate::command::append(state, access_event(state, &login.sub, &login.sub, "/oauth/token", change))
        .await
        .map_err(OAuthError::from_api)?;
    let mut started = read(state, |r| r.session(&session))?;
    // A code is good once, so its caller cannot retry: a login waits longer than another
    // procedure for the access model to apply it before saying so.
    if started.is_none() && !crate::applied::wait(state, at, LOGIN_APPLY_WAIT).await {
        return Err(OAuthError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the session is recorded but this node has not applied it yet; log in again in a moment",
        ));
    }
    if started.is_none() {
        started = read(state, |r| r.session(&session))?;
    }
    match started {
        Some(s) if s.current == refresh_hash && s.ended.is_none() => ok(token_answer(state, &s, &session, &refresh_token)),
        Some(_) => Err(OAuthError::grant("the authorization code was already used; the session it made is now ended")),
        None if spends_a_factor => {
            Err(OAuthError::grant("the second factor was already used (a TOTP code is accepted once, a recovery code once)"))
        }
        // Only a spent second factor leaves no session: this node read the access model
        // before the write reached it. Said as it is, and logged: the session may yet appear.
        None => {
            tracing::error!(session, position = ?at, "a login's session was applied but is not in the access model this node reads");
            Err(OAuthError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the session is recorded but this node cannot read it yet; log in again in a moment",
            ))
        }
    }
}

/// How much longer than [`crate::command::APPLY_WAIT`] a login waits for its session.
const LOGIN_APPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(25);

fn token_answer(state: &AppState, session: &Session, sid: &str, refresh_token: &str) -> Value {
    let t = now();
    let claims = AccessClaims {
        iss: state.auth.service_did.clone(),
        sub: session.did.clone(),
        aud: state.auth.service_did.clone(),
        exp: t + ACCESS_LIFETIME,
        iat: t,
        scope: SCOPE.to_owned(),
        handle: session.handle.clone(),
        sid: sid.to_owned(),
        jti: new_id(),
    };
    json!({
        "access_token": state.auth.keys.sign(ACCESS_TYP, &claims),
        "refresh_token": refresh_token,
        "token_type": "Bearer",
        "expires_in": ACCESS_LIFETIME,
        "scope": SCOPE,
        "sub": session.did,
    })
}

async fn refresh(state: &AppState, presented: &str) -> Answer {
    let sid = refresh_session(presented).ok_or_else(|| OAuthError::grant("not a refresh token of this service"))?.to_owned();
    let hash = sha256_hex(presented);
    let Some(s) = read(state, |r| r.session(&sid))? else { return Err(OAuthError::grant("not a refresh token of this service")) };
    if let Some(why) = &s.ended {
        return Err(OAuthError::grant(format!("the session has ended ({why})")));
    }
    if s.expires_at <= now() {
        return Err(OAuthError::grant("the refresh token expired"));
    }
    if s.current != hash {
        if read(state, |r| r.is_spent(&sid, &hash))? {
            // A used token came back: whoever holds the family may be an attacker.
            let end = AccessAction::SessionEnded { session: sid.clone(), reason: "refreshTokenReused".into() };
            append(state, &s.did, &s.did, "/oauth/token", end).await?;
            audit_refusal(state, &s.did, "a refresh token was used again; its session is ended");
            return Err(OAuthError::grant("this refresh token was already used; the session is now ended"));
        }
        return Err(OAuthError::grant("not a refresh token of this service"));
    }
    let next = new_refresh_token(&sid);
    let next_hash = sha256_hex(&next);
    let change = AccessAction::SessionRefreshed {
        session: sid.clone(),
        previous_hash: hash,
        refresh_hash: next_hash.clone(),
        expires_at: now() + REFRESH_LIFETIME,
    };
    append(state, &s.did, &s.did, "/oauth/token", change).await?;
    match read(state, |r| r.session(&sid))? {
        Some(s) if s.current == next_hash && s.ended.is_none() => ok(token_answer(state, &s, &sid, &next)),
        _ => Err(OAuthError::grant("this refresh token was used by another request at the same time; the session is now ended")),
    }
}

/// `POST /oauth/revoke` (RFC 7009; bearer required): `token`, a refresh or access token of
/// the caller. The answer is 200 whether or not the token was live.
async fn revoke(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let f = fields(request).await?;
    let token = field(&f, "token")?;
    let sid = match refresh_session(token) {
        Some(sid) => Some(sid.to_owned()),
        None => state.auth.keys.verify::<AccessClaims>(token, ACCESS_TYP, &state.auth.service_did).ok().map(|c| c.sid),
    };
    if let Some(sid) = sid {
        if let Some(s) = read(&state, |r| r.session(&sid))? {
            if s.did == me.did && s.ended.is_none() {
                append(&state, &me.did, &me.did, "/oauth/revoke", AccessAction::SessionEnded { session: sid, reason: "revoked".into() })
                    .await?;
            }
        }
    }
    ok(json!({}))
}
