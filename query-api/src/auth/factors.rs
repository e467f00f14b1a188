//! Second factors: completing a login with TOTP, a recovery code or a passkey
//! (`/oauth/mfa/verify`), TOTP enrolment and removal, and passkey registration and
//! challenges. Every change is a `command.access` event, as in [`super::oauth`].

use axum::extract::{Request, State};
use axum::http::StatusCode;
use event_schema::{AccessAction, OnceProof};
use projections::access::read::Factors;
use serde_json::json;

use super::audit_refusal;
use super::oauth::{append, caller, field, fields, now, object, ok, read, start_session, verify_login, Answer, OAuthError, RECOVERY_CODES};
use crate::error::ApiError;
use crate::identity::tokens::{sha256_hex, MFA_TYP};
use crate::identity::totp;
use crate::state::AppState;

/// `POST /oauth/mfa/verify`: `mfa_token`, `method` (`totp` or `recovery`), `code`.
pub(super) async fn mfa_verify(State(state): State<AppState>, request: Request) -> Answer {
    let f = fields(request).await?;
    let login = verify_login(&state, field(&f, "mfa_token")?, MFA_TYP, "mfa_token")?;
    let factors = read(&state, |r| r.factors(&login.sub))?;
    let method = field(&f, "method")?;
    let code = if method == "webauthn" { String::new() } else { field(&f, "code")?.trim().to_owned() };
    let proof = match method {
        "totp" => {
            let step = totp_step(&state, &factors, &code).filter(|_| factors.totp_confirmed);
            match step {
                Some(step) => OnceProof::Totp { step },
                None => {
                    audit_refusal(&state, &login.sub, "a wrong TOTP code at login");
                    return Err(OAuthError::grant("the TOTP code is not valid now"));
                }
            }
        }
        "recovery" => OnceProof::Recovery { hash: recovery_hash(&code) },
        "webauthn" => {
            let credential = object(&f, "credential")?;
            match state.auth.passkeys.finish_authentication(&login.sub, field(&f, "ceremony")?, &credential) {
                Ok(a) => OnceProof::Passkey { credential_id: a.credential_id, counter: a.counter },
                Err(why) => {
                    audit_refusal(&state, &login.sub, "a passkey assertion that does not verify");
                    return Err(OAuthError::grant(why));
                }
            }
        }
        other => return Err(OAuthError::request(format!("method {other} is not one of totp, webauthn, recovery"))),
    };
    let method = match proof {
        OnceProof::Totp { .. } => "totp",
        OnceProof::Recovery { .. } => "recovery",
        OnceProof::Passkey { .. } => "webauthn",
    };
    start_session(&state, &login, method, Some(proof)).await
}

/// The TOTP step `code` matches now, with the account's secret.
fn totp_step(state: &AppState, factors: &Factors, code: &str) -> Option<i64> {
    let secret = state.auth.keys.unseal(factors.totp_sealed.as_deref()?)?;
    totp::matching_step(&secret, code, now().max(0) as u64)
}

/// The hash a recovery code is kept as (case and dashes do not matter).
fn recovery_hash(code: &str) -> String {
    let normalized: String = code.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    sha256_hex(&format!("recovery {normalized}"))
}

/// `POST /auth/totp/enroll` (bearer): a new secret, unconfirmed until `/auth/totp/confirm`.
pub(super) async fn totp_enroll(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let factors = read(&state, |r| r.factors(&me.did))?;
    if factors.totp_confirmed {
        return Err(OAuthError::new(
            StatusCode::CONFLICT,
            "already_enrolled",
            "TOTP is on; remove it first (/auth/mfa/disable with a code)",
        ));
    }
    let secret = totp::new_secret();
    let sealed = state.auth.keys.seal(&secret);
    append(&state, &me.did, &me.did, "/auth/totp/enroll", AccessAction::TotpEnrolled { sealed_secret: sealed }).await?;
    let account = me.handle.clone().unwrap_or_else(|| me.did.clone());
    ok(json!({"secret": totp::base32(&secret), "otpauth_uri": totp::otpauth_uri(&secret, &account), "digits": 6, "period": totp::STEP}))
}

/// `POST /auth/totp/confirm` (bearer): `code` of the enrolled secret turns MFA on; the answer
/// carries the recovery codes, shown this once.
pub(super) async fn totp_confirm(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let f = fields(request).await?;
    let factors = read(&state, |r| r.factors(&me.did))?;
    if factors.totp_sealed.is_none() {
        return Err(OAuthError::request("no TOTP secret is enrolled (/auth/totp/enroll first)"));
    }
    if factors.totp_confirmed {
        return Err(OAuthError::new(StatusCode::CONFLICT, "already_enrolled", "TOTP is already on"));
    }
    let Some(step) = totp_step(&state, &factors, field(&f, "code")?.trim()) else {
        return Err(OAuthError::grant("the TOTP code is not valid now"));
    };
    let codes: Vec<String> = (0..RECOVERY_CODES).map(|_| recovery_code()).collect();
    let hashes = codes.iter().map(|c| recovery_hash(c)).collect();
    append(&state, &me.did, &me.did, "/auth/totp/confirm", AccessAction::TotpConfirmed { step }).await?;
    append(&state, &me.did, &me.did, "/auth/totp/confirm", AccessAction::RecoveryCodesIssued { hashes }).await?;
    ok(json!({"enabled": true, "recovery_codes": codes}))
}

/// A recovery code: 10 base32 characters in two groups (50 bits).
fn recovery_code() -> String {
    let raw = data_encoding::BASE32_NOPAD.encode(&crate::identity::keys::random::<7>()).to_ascii_lowercase();
    format!("{}-{}", &raw[..5], &raw[5..10])
}

/// `POST /auth/mfa/disable` (bearer): `code`, a current TOTP code, removes every second factor.
pub(super) async fn mfa_disable(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let f = fields(request).await?;
    let factors = read(&state, |r| r.factors(&me.did))?;
    if totp_step(&state, &factors, field(&f, "code")?.trim()).is_none() {
        return Err(OAuthError::grant("the TOTP code is not valid now"));
    }
    append(&state, &me.did, &me.did, "/auth/mfa/disable", AccessAction::MfaRemoved).await?;
    ok(json!({"enabled": false}))
}

/// The passkeys an account registered.
fn passkeys(factors: &Factors) -> Vec<webauthn_rs::prelude::Passkey> {
    factors.passkeys.iter().filter_map(|(_, credential, _)| serde_json::from_value(credential.clone()).ok()).collect()
}

/// `POST /auth/webauthn/register/options` (bearer): `{ceremony, options}`, the options for
/// `navigator.credentials.create` (`options.publicKey`).
pub(super) async fn passkey_register_options(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let factors = read(&state, |r| r.factors(&me.did))?;
    let name = me.handle.clone().unwrap_or_else(|| me.did.clone());
    let (ceremony, options) = state.auth.passkeys.start_registration(&me.did, &name, &passkeys(&factors)).map_err(unavailable)?;
    ok(json!({"ceremony": ceremony, "options": options}))
}

/// `POST /auth/webauthn/register/verify` (bearer): `{ceremony, credential}` (what
/// `navigator.credentials.create` returned): the passkey is kept, and MFA is on.
pub(super) async fn passkey_register_verify(State(state): State<AppState>, request: Request) -> Answer {
    let me = caller(&request)?;
    let f = fields(request).await?;
    let credential = object(&f, "credential")?;
    let passkey = state.auth.passkeys.finish_registration(&me.did, field(&f, "ceremony")?, &credential).map_err(OAuthError::grant)?;
    let credential_id = crate::identity::passkeys::credential_id(passkey.cred_id().as_ref());
    let change = AccessAction::PasskeyRegistered {
        credential_id: credential_id.clone(),
        credential: serde_json::to_value(&passkey).map_err(|e| OAuthError::from_api(ApiError::internal(e.to_string())))?,
    };
    append(&state, &me.did, &me.did, "/auth/webauthn/register/verify", change).await?;
    ok(json!({"registered": true, "credential_id": credential_id}))
}

/// `POST /auth/webauthn/authenticate/options`: `{handle}` (the contract's) or `{mfa_token}`
/// of a login that answered `mfa_required`: `{ceremony, options}` for
/// `navigator.credentials.get`. The ceremony belongs to the account: only a login of that
/// account can complete it at `/oauth/mfa/verify`.
pub(super) async fn passkey_authenticate_options(State(state): State<AppState>, request: Request) -> Answer {
    let f = fields(request).await?;
    let did = if let Ok(token) = field(&f, "mfa_token") {
        verify_login(&state, token, MFA_TYP, "mfa_token")?.sub
    } else if let Ok(handle) = field(&f, "handle") {
        if !lexicons::formats::is_handle(handle) {
            return Err(OAuthError::request(format!("{handle:?} is not a handle")));
        }
        state.auth.handles.resolve(handle).await.ok_or_else(|| OAuthError::request(format!("the handle {handle} does not resolve")))?
    } else {
        return Err(OAuthError::request("handle (or the login's mfa_token) is required"));
    };
    let factors = read(&state, |r| r.factors(&did))?;
    let (ceremony, options) = state.auth.passkeys.start_authentication(&did, &passkeys(&factors)).map_err(OAuthError::request)?;
    ok(json!({"ceremony": ceremony, "options": options}))
}

/// Passkeys are not available on this node (no domain name in its public URL).
fn unavailable(why: String) -> OAuthError {
    OAuthError::new(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_codes_hash_the_same_however_typed() {
        let c = recovery_code();
        assert_eq!(c.len(), 11);
        assert_eq!(recovery_hash(&c), recovery_hash(&c.to_ascii_uppercase().replace('-', "")));
        assert_ne!(recovery_hash(&c), recovery_hash(&recovery_code()));
    }
}
