//! ORCID verification: `pub.svc.author.initiateOrcidVerification` sends a signed-in user to
//! ORCID with a single-use state; ORCID sends her back to `GET /v1/auth/orcid/callback`
//! with a code, which svc exchanges for the iD ORCID authenticated and keeps as her
//! verified ORCID (docs/claiming.md, "ORCID verification").
//!
//! The state is a secret of 32 random bytes; only its SHA-256 is in the log. The access
//! model spends it in log order, so of two callbacks with one state only the first verifies.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use data_encoding::BASE64URL_NOPAD;
use event_schema::AccessAction;
use projections::access::read::AccessReader;
use sources::orcid_oauth::OrcidOAuth;

use super::access_event;
use crate::error::{ApiError, ErrorCode};
use crate::identity::keys::random;
use crate::identity::tokens::sha256_hex;
use crate::reads::blocking;
use crate::state::AppState;

/// How long a user has to come back from ORCID.
pub const STATE_SECONDS: i64 = 600;

/// The ORCID redirect route.
pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/auth/orcid/callback", get(callback))
}

fn not_configured() -> ApiError {
    ApiError::new(ErrorCode::OrcidNotConfigured, "ORCID verification is not configured on this service (--orcid-client-id)")
}

/// Starts a verification for `did`: appends the state's hash and answers the URL of ORCID's
/// authorize page to send the user to.
///
/// # Errors
/// `OrcidNotConfigured` without an ORCID client; the log's errors.
pub async fn initiate(state: &AppState, did: &str) -> Result<String, ApiError> {
    let oauth = state.registries.orcid_oauth().ok_or_else(not_configured)?;
    let secret = BASE64URL_NOPAD.encode(&random::<32>());
    let expires_at = chrono::Utc::now().timestamp() + STATE_SECONDS;
    let change = AccessAction::OrcidVerificationStarted { state_hash: sha256_hex(&secret), expires_at };
    crate::command::append(state, access_event(state, did, did, "pub.svc.author.initiateOrcidVerification", change)).await?;
    Ok(oauth.authorize_url(&secret))
}

/// `GET /v1/auth/orcid/callback?code&state` (or `?error` when the user declined): verifies
/// and redirects (303) to the web client with `orcidVerification=success`, or `=error` and
/// a `reason` (`denied`, `invalid_state`, `expired_state`, `missing_code`,
/// `exchange_failed`).
async fn callback(State(state): State<AppState>, Query(q): Query<HashMap<String, String>>) -> Response {
    let Some(oauth) = state.registries.orcid_oauth() else {
        // The route is not offered without an ORCID client.
        return crate::server::error_for_path("/v1/auth/orcid/callback", ApiError::not_found("ORCID verification is not configured"));
    };
    let outcome = verify(&state, oauth, &q).await;
    if let Err(reason) = outcome {
        tracing::info!(reason, "ORCID verification refused");
    }
    let separator = if oauth.return_to.contains('?') { '&' } else { '?' };
    let query = match outcome {
        Ok(()) => "orcidVerification=success".to_owned(),
        Err(reason) => format!("orcidVerification=error&reason={reason}"),
    };
    (StatusCode::SEE_OTHER, [(header::LOCATION, format!("{}{separator}{query}", oauth.return_to))]).into_response()
}

/// The verification a callback asks for; `Err(reason)` when it is refused.
async fn verify(state: &AppState, oauth: &OrcidOAuth, q: &HashMap<String, String>) -> Result<(), &'static str> {
    if q.contains_key("error") {
        return Err("denied");
    }
    let secret = q.get("state").filter(|s| !s.is_empty()).ok_or("invalid_state")?;
    let hash = sha256_hex(secret);
    let read = || blocking(state, || AccessReader::new(state.store.as_ref())?.orcid_state(&hash));
    let (did, expires_at, spent) = read().map_err(|_| "unavailable")?.ok_or("invalid_state")?;
    if spent.is_some() {
        return Err("invalid_state");
    }
    if expires_at < chrono::Utc::now().timestamp() {
        return Err("expired_state");
    }
    let code = q.get("code").filter(|c| !c.is_empty()).ok_or("missing_code")?;
    let found = oauth.exchange(code).await.map_err(|e| {
        tracing::warn!(error = %e, "ORCID did not exchange the code");
        "exchange_failed"
    })?;
    let change = AccessAction::OrcidVerified { state_hash: hash.clone(), orcid: found.orcid, name: found.name };
    let at = crate::command::append(state, access_event(state, &did, &did, "/v1/auth/orcid/callback", change))
        .await
        .map_err(|_| "unavailable")?;
    // The model spends a state once, in log order: this callback verified only if it spent it.
    match read().map_err(|_| "unavailable")? {
        Some((_, _, Some(by))) if by == at.ordinal() => Ok(()),
        _ => Err("invalid_state"),
    }
}
