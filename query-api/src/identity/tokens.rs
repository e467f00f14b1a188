//! The tokens svc issues: access tokens (JWT, 1 hour), refresh tokens (opaque, 30 days,
//! rotated on each use), authorization codes (JWT, 60 seconds, PKCE-bound) and MFA tokens
//! (JWT, 5 minutes, between a code exchange and its second factor). All JWTs are ES256,
//! signed with [`super::keys::KeySet`], `iss` and `aud` svc's DID, told apart by `typ`.

use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::keys::random;

/// Access token lifetime, seconds.
pub const ACCESS_LIFETIME: i64 = 3600;
/// Refresh token (and idle session) lifetime, seconds.
pub const REFRESH_LIFETIME: i64 = 30 * 24 * 3600;
/// Authorization code lifetime, seconds.
pub const CODE_LIFETIME: i64 = 60;
/// MFA token lifetime, seconds.
pub const MFA_LIFETIME: i64 = 300;

/// `typ` of access tokens (RFC 9068).
pub const ACCESS_TYP: &str = "at+jwt";
/// `typ` of authorization codes.
pub const CODE_TYP: &str = "code+jwt";
/// `typ` of MFA tokens.
pub const MFA_TYP: &str = "mfa+jwt";

/// The scope every session gets.
pub const SCOPE: &str = "read write";

/// The claims of an access token (the contract's, plus `sid` and `jti`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// svc's DID.
    pub iss: String,
    /// The user's DID.
    pub sub: String,
    /// svc's DID.
    pub aud: String,
    /// Expiry.
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Granted permissions.
    pub scope: String,
    /// The user's handle at login.
    #[serde(default)]
    pub handle: Option<String>,
    /// The session the token belongs to: revoking the session ends the token too.
    pub sid: String,
    /// A unique id.
    pub jti: String,
}

/// The claims of an authorization code or an MFA token: a login proven (by a service-auth
/// token of the user's PDS) and not yet turned into a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoginClaims {
    /// svc's DID.
    pub iss: String,
    /// The user's DID.
    pub sub: String,
    /// svc's DID.
    pub aud: String,
    /// Expiry.
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// The login's id: the session it becomes is named after it, so it becomes one session
    /// at most.
    pub jti: String,
    /// The PKCE `code_challenge` (S256), for a code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// The user's handle, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// SHA-256 of `s`, lowercase hex.
pub fn sha256_hex(s: &str) -> String {
    HEXLOWER.encode(&Sha256::digest(s.as_bytes()))
}

/// A fresh random id (128 bits, base64url).
pub fn new_id() -> String {
    BASE64URL_NOPAD.encode(&random::<16>())
}

/// The session a login becomes: derived from the login's id, so a code exchanged twice
/// names the same session.
pub fn session_of(login_jti: &str) -> String {
    sha256_hex(&format!("session {login_jti}"))[..32].to_owned()
}

/// A fresh refresh token of `session`: `<session>.<256 random bits>`.
pub fn new_refresh_token(session: &str) -> String {
    format!("{session}.{}", BASE64URL_NOPAD.encode(&random::<32>()))
}

/// The session a refresh token names, if it has the shape of one.
pub fn refresh_session(token: &str) -> Option<&str> {
    let (session, secret) = token.split_once('.')?;
    (session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()) && secret.len() == 43).then_some(session)
}

/// Whether `verifier` matches the S256 `challenge` (RFC 7636 section 4.6).
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let valid = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    valid && BASE64URL_NOPAD.encode(&Sha256::digest(verifier.as_bytes())) == challenge
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_tokens_name_their_session_and_pkce_follows_rfc_7636() {
        let s = session_of("jti-1");
        assert_eq!(s, session_of("jti-1"));
        assert_ne!(s, session_of("jti-2"));
        let t = new_refresh_token(&s);
        assert_eq!(refresh_session(&t), Some(s.as_str()));
        for bad in ["", "abc", "x.y", &format!("{s}."), &format!("{}.{}", &s[..31], &t[33..])] {
            assert_eq!(refresh_session(bad), None, "{bad}");
        }
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"));
        assert!(!pkce_matches("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
    }
}
