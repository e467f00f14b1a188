//! The identity layer over HTTP: who is calling, what they may do, and how often.
//!
//! Every request goes through [`layer`] before its handler. It resolves the request's one
//! [`Caller`] (none for an anonymous request) from either credential:
//! - an AT Protocol service-auth JWT ([`crate::identity::service`]), for the XRPC method it names (`lxm`);
//! - svc's own session access token ([`crate::identity::tokens`]), `typ` `at+jwt`, of a session still live;
//!
//! then applies the caller's rate-limit tier ([`crate::identity::limits`]) and puts the caller in the
//! request's extensions for the method's auth level (`xrpc::Auth`). A credential
//! that does not verify is refused (401) whatever the route, and the attempt counts against
//! the client address's anonymous limit, as does every DID document fetch a stranger's token
//! would cause.
//!
//! The session, MFA and passkey endpoints are [`oauth`]'s. What is an event in the log
//! (roles, sessions, second factors, audited refusals: `command.access`) and what is
//! node-local (seen `jti`s, passkey ceremonies, rate-limit counters) is explained in
//! docs/decisions.md, "Identity state".

mod factors;
pub mod oauth;
pub mod orcid;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use event_schema::{AccessAction, AccessChange, NewEvent, Payload, Source};
use projections::access::read::AccessReader;
use projections::access::Role;
use tracing::warn;

use crate::error::ApiError;
use crate::identity::keys::TokenError;
use crate::identity::limits::Tier;
use crate::identity::tokens::{AccessClaims, ACCESS_TYP};
pub use crate::identity::{Caller, Credential, Resolved};
use crate::reads::blocking;
use crate::state::AppState;

/// The bearer token of an `Authorization` header: `Ok(None)` without one.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = value.to_str().map_err(|_| ApiError::invalid_token("the Authorization header is not text"))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| ApiError::auth_required("the Authorization header must be `Bearer <token>`"))?
        .trim();
    Ok(Some(token))
}

/// The `typ` of a JWT's header, read without verifying anything (to pick the verifier).
fn jwt_typ(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    if header.len() > 512 {
        return None;
    }
    let bytes = data_encoding::BASE64URL_NOPAD.decode(header.as_bytes()).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()?.get("typ")?.as_str().map(str::to_owned)
}

/// Verifies a session access token: signature, claims, and a session still live.
async fn session_caller(state: &AppState, token: &str) -> Result<Caller, ApiError> {
    let id = &state.auth;
    let expired = || ApiError::expired_token("the access token expired; refresh it at /oauth/token");
    let claims = match id.verified.get(token) {
        Some(c) if c.exp <= chrono::Utc::now().timestamp() => return Err(expired()),
        Some(c) => c,
        None => {
            let claims: AccessClaims = id.keys.verify(token, ACCESS_TYP, &id.service_did).map_err(|e| match e {
                TokenError::Expired => expired(),
                TokenError::Invalid(why) => ApiError::invalid_token(format!("the access token is not valid: {why}")),
            })?;
            if claims.iss != id.service_did {
                return Err(ApiError::invalid_token("the access token was issued by another service"));
            }
            let claims = Arc::new(claims);
            id.verified.insert(token.to_owned(), claims.clone());
            claims
        }
    };
    let (session, roles) = blocking(state, || {
        let r = AccessReader::new(state.store.as_ref())?;
        Ok::<_, projections::ProjectionError>((r.session(&claims.sid)?, r.roles(&claims.sub)?))
    })?;
    match session {
        Some(s) if s.did == claims.sub && s.ended.is_none() => {}
        Some(s) if s.ended.is_some() => return Err(ApiError::revoked_token("the session of this token has ended")),
        _ => return Err(ApiError::invalid_token("the session of this token is unknown")),
    }
    Ok(Caller {
        did: claims.sub.clone(),
        handle: claims.handle.clone(),
        roles: roles.into_iter().map(|g| g.role).collect(),
        credential: Credential::Session(claims.sid.clone()),
    })
}

/// Verifies a service-auth token for `lxm`; a DID document fetch first takes one request
/// from the client's anonymous limit.
async fn service_caller(state: &AppState, headers: &HeaderMap, token: &str, lxm: &str, ip: &str) -> Result<Caller, ApiError> {
    let id = &state.auth;
    let now = chrono::Utc::now().timestamp();
    let jwt = id.service.check(token, lxm, now)?;
    if let Some(claimed) = headers.get("x-service-did") {
        if claimed.to_str().ok() != Some(jwt.claims.iss.as_str()) {
            return Err(ApiError::invalid_token("X-Service-DID does not name the token's issuer"));
        }
    }
    if id.service.needs_fetch(&jwt) {
        if let Some(v) = id.limits.check(Tier::Anonymous, ip) {
            if !v.allowed() {
                return Err(ApiError::rate_limited("too many tokens from this address need their issuer resolved; retry later"));
            }
        }
    }
    let (iss, replayed) = id.service.finish(jwt, now).await?;
    if replayed {
        audit_refusal(state, &iss, "a service-auth token was presented again (replayed jti)");
        return Err(ApiError::invalid_token("this token was already used (its jti is spent)"));
    }
    let roles = blocking(state, || AccessReader::new(state.store.as_ref())?.roles(&iss))?;
    Ok(Caller { did: iss, handle: None, roles: roles.into_iter().map(|g| g.role).collect(), credential: Credential::ServiceAuth })
}

/// Appends an audited refusal about `subject` (without waiting for it to be applied).
pub fn audit_refusal(state: &AppState, subject: &str, reason: &str) {
    let event = access_event(state, subject, subject, "auth", AccessAction::Refused { reason: reason.to_owned() });
    let log = state.log.clone();
    tokio::task::spawn_blocking(move || {
        if let Err(e) = log.append(&[event]) {
            warn!(error = %e, "could not append an audited refusal");
        }
    });
}

/// A `command.access` event about `subject`, made by `actor` through `via`.
pub fn access_event(state: &AppState, subject: &str, actor: &str, via: &str, change: AccessAction) -> NewEvent {
    NewEvent {
        key: subject.to_owned(),
        source: Source::Command { nsid: via.to_owned(), caller: actor.to_owned(), host: state.identity.public_url.clone() },
        payload: Payload::Access(AccessChange { subject: subject.to_owned(), actor: actor.to_owned(), change }),
    }
}

/// Resolves the caller of a request (see the module docs).
async fn resolve(state: &AppState, headers: &HeaderMap, path: &str, ip: &str) -> Result<Option<Caller>, ApiError> {
    let Some(token) = bearer(headers)? else { return Ok(None) };
    if jwt_typ(token).as_deref() == Some(ACCESS_TYP) {
        return session_caller(state, token).await.map(Some);
    }
    let lxm = match path.strip_prefix("/xrpc/") {
        Some(nsid) => Some(nsid),
        None if path == "/oauth/authorize" => Some(oauth::AUTHORIZE_LXM),
        None => None,
    };
    let Some(lxm) = lxm else {
        return Err(ApiError::invalid_token("only a session access token is accepted here (service-auth tokens name an XRPC method)"));
    };
    service_caller(state, headers, token, lxm, ip).await.map(Some)
}

/// Paths no credential or limit applies to: probes, well-known documents, and the pages of
/// the API reference and the console and their assets (the console's calls are XRPC calls).
fn is_exempt(path: &str) -> bool {
    path.starts_with("/health/")
        || path == "/health"
        || path == "/ready"
        || path.starts_with("/.well-known/")
        || path == "/metrics"
        || path == "/docs"
        || path.starts_with("/docs/")
        || path == "/favicon.svg"
        || path == "/console"
        || path.starts_with("/console/")
}

/// The tier and limiter key of a caller.
fn tier_of(state: &AppState, caller: Option<&Caller>, ip: &str) -> (Tier, String) {
    match caller {
        None => (Tier::Anonymous, ip.to_owned()),
        Some(c) if c.credential == Credential::ServiceAuth && state.auth.approved_services.contains(&c.did) => {
            (Tier::Service, c.did.clone())
        }
        Some(c) if c.has(Role::Premium) => (Tier::Elevated, c.did.clone()),
        Some(c) => (Tier::Authenticated, c.did.clone()),
    }
}

/// The middleware every request goes through (see the module docs).
pub async fn layer(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if is_exempt(request.uri().path()) {
        return next.run(request).await;
    }
    let limits = &state.auth.limits;
    // The client's address keys the anonymous limit and what a credential costs; an
    // anonymous request with limits off needs none.
    let ip = if limits.enabled() || request.headers().contains_key(header::AUTHORIZATION) {
        let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        limits.client_ip(peer, request.headers()).map_or_else(|| "unknown".to_owned(), |ip: IpAddr| ip.to_string())
    } else {
        String::new()
    };
    let caller = match resolve(&state, request.headers(), request.uri().path(), &ip).await {
        Ok(c) => c,
        Err(e) => {
            // A refused credential counts against the address, as an anonymous request.
            let verdict = limits.check(Tier::Anonymous, &ip);
            let e = match verdict {
                Some(v) if !v.allowed() => ApiError::rate_limited("too many requests from this address"),
                _ => e,
            };
            let mut response = error_response(request.uri().path(), e);
            if let Some(v) = verdict {
                v.write_headers(response.headers_mut());
            }
            return response;
        }
    };
    let verdict = if limits.enabled() {
        let (tier, key) = tier_of(&state, caller.as_ref(), &ip);
        match limits.check(tier, &key) {
            Some(v) if !v.allowed() => {
                let message = format!("over the {} limit of {} requests a minute", tier.name(), v.limit);
                let mut response = error_response(request.uri().path(), ApiError::rate_limited(message));
                v.write_headers(response.headers_mut());
                return response;
            }
            verdict => verdict,
        }
    } else {
        None
    };
    request.extensions_mut().insert(Resolved(caller));
    let mut response = next.run(request).await;
    if let Some(v) = verdict {
        v.write_headers(response.headers_mut());
    }
    response
}

/// An error in the envelope of the route: OAuth for the token endpoints, REST under
/// `/api/`, XRPC elsewhere.
pub fn error_response(path: &str, e: ApiError) -> Response {
    if path.starts_with("/oauth/") || path.starts_with("/auth/") {
        oauth::OAuthError::from_api(e).into_response()
    } else {
        crate::server::error_for_path(path, e)
    }
}
