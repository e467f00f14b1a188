//! Logging in for the identity tests: an authorization code as `/oauth/authorize` makes it
//! after a PDS's token, and the token endpoint's exchanges.

use axum::http::StatusCode;
use data_encoding::BASE64URL_NOPAD;
use query_api::identity::tokens::{LoginClaims, CODE_TYP};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{Fixture, SERVICE_DID};

pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// An authorization code for `did`, as `/oauth/authorize` makes after a PDS's token.
pub fn code(f: &Fixture, did: &str, jti: &str) -> String {
    let challenge = BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()));
    let claims = LoginClaims {
        iss: SERVICE_DID.into(),
        sub: did.into(),
        aud: SERVICE_DID.into(),
        exp: now() + 60,
        iat: now(),
        jti: jti.into(),
        challenge: Some(challenge),
        handle: Some("alice.test".into()),
    };
    f.state.auth.keys.sign(CODE_TYP, &claims)
}

pub async fn exchange(f: &Fixture, code: &str) -> (StatusCode, Value) {
    f.post_as("/oauth/token", None, json!({"grant_type": "authorization_code", "code": code, "code_verifier": VERIFIER})).await
}

pub async fn login(f: &Fixture, did: &str, jti: &str) -> (String, String) {
    let (status, tokens) = exchange(f, &code(f, did, jti)).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (tokens["access_token"].as_str().unwrap().to_owned(), tokens["refresh_token"].as_str().unwrap().to_owned())
}

pub async fn refresh(f: &Fixture, token: &str) -> (StatusCode, Value) {
    f.post_as("/oauth/token", None, json!({"grant_type": "refresh_token", "refresh_token": token})).await
}

pub async fn roles(f: &Fixture, access: &str) -> (StatusCode, Value) {
    f.get_as("/xrpc/pub.svc.actor.getMyRoles", access).await
}
