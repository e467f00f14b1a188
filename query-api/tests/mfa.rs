//! Second factors in process: TOTP and recovery codes, and a passkey of a software
//! authenticator, each completing an MFA login once.

use crate::support;

use axum::http::StatusCode;
use query_api::identity::totp;
use serde_json::json;
use support::sessions::{code, exchange, login, now, roles};
use support::Fixture;

#[tokio::test(flavor = "multi_thread")]
async fn totp_and_recovery_codes_complete_an_mfa_login_once_each() {
    let mut f = Fixture::new();
    f.live();
    let bob = "did:plc:bob";
    let (access, _) = login(&f, bob, "m1").await;
    let (status, enrol) = f.post_as("/auth/totp/enroll", Some(&access), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{enrol}");
    assert!(enrol["otpauth_uri"].as_str().unwrap().starts_with("otpauth://totp/"));
    let secret = data_encoding::BASE32_NOPAD.decode(enrol["secret"].as_str().unwrap().as_bytes()).unwrap();
    let at = |offset: i64| totp::code_at(&secret, (now() + offset) as u64);
    let (status, e) = f.post_as("/auth/totp/confirm", Some(&access), json!({"code": "000000"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let (status, confirmed) = f.post_as("/auth/totp/confirm", Some(&access), json!({"code": at(0)})).await;
    assert_eq!(status, StatusCode::OK, "{confirmed}");
    let recovery: Vec<String> = serde_json::from_value(confirmed["recovery_codes"].clone()).unwrap();
    assert_eq!(recovery.len(), 10);

    // A login now needs the second factor.
    let (status, mfa) = exchange(&f, &code(&f, bob, "m2")).await;
    assert_eq!((status, mfa["error"].as_str()), (StatusCode::FORBIDDEN, Some("mfa_required")), "{mfa}");
    assert_eq!(mfa["allowed_methods"], json!(["totp"]));
    let mfa_token = mfa["mfa_token"].as_str().unwrap().to_owned();
    let verify = |token: String, method: &'static str, code: String| {
        let f = &f;
        async move { f.post_as("/oauth/mfa/verify", None, json!({"mfa_token": token, "method": method, "code": code})).await }
    };
    let (status, e) = verify(mfa_token.clone(), "totp", "123456".into()).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    // The code of the confirmation's step was used: the next step's (within the drift window) works once.
    let (status, e) = verify(mfa_token.clone(), "totp", at(0)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a code is accepted once: {e}");
    let (status, tokens) = verify(mfa_token.clone(), "totp", at(30)).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(roles(&f, tokens["access_token"].as_str().unwrap()).await.0, StatusCode::OK);
    let (_, again) = exchange(&f, &code(&f, bob, "m3")).await;
    let (status, _) = verify(again["mfa_token"].as_str().unwrap().into(), "totp", at(30)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the same step again is refused");

    // A recovery code logs in once.
    let (_, m4) = exchange(&f, &code(&f, bob, "m4")).await;
    let (status, tokens) = verify(m4["mfa_token"].as_str().unwrap().into(), "recovery", recovery[0].to_uppercase()).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let (_, m5) = exchange(&f, &code(&f, bob, "m5")).await;
    let (status, e) = verify(m5["mfa_token"].as_str().unwrap().into(), "recovery", recovery[0].clone()).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{e}");

    // The audit trail has the logins and the refusals.
    let (entries, _) = projections::access::read::AccessReader::new(f.state.store.as_ref()).unwrap().audit(100, 0, None).unwrap();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    for wanted in ["login", "login_refused", "mfa_totp_enrolled", "mfa_totp_confirmed", "mfa_recovery_codes_issued", "token_refused"] {
        assert!(actions.contains(&wanted), "{wanted} not in {actions:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_passkey_registers_and_completes_an_mfa_login_with_a_growing_counter() {
    use webauthn_authenticator_rs::{softpasskey::SoftPasskey, WebauthnAuthenticator};
    use webauthn_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse, Url};
    let mut f = Fixture::new();
    f.live();
    let dana = "did:plc:dana";
    let origin = Url::parse(support::PUBLIC_URL).unwrap();
    let mut authenticator = WebauthnAuthenticator::new(SoftPasskey::new(true));
    let (access, _) = login(&f, dana, "p1").await;

    let (status, start) = f.post_as("/auth/webauthn/register/options", Some(&access), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{start}");
    let options: CreationChallengeResponse = serde_json::from_value(start["options"].clone()).unwrap();
    let credential = authenticator.do_registration(origin.clone(), options).unwrap();
    let body = json!({"ceremony": start["ceremony"], "credential": credential});
    let (status, done) = f.post_as("/auth/webauthn/register/verify", Some(&access), body.clone()).await;
    assert_eq!((status, done["registered"].clone()), (StatusCode::OK, json!(true)), "{done}");
    let (status, _) = f.post_as("/auth/webauthn/register/verify", Some(&access), body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a ceremony is used once");

    // A login now needs the passkey: challenge, assertion, session.
    let (status, mfa) = exchange(&f, &code(&f, dana, "p2")).await;
    assert_eq!((status, mfa["allowed_methods"].clone()), (StatusCode::FORBIDDEN, json!(["webauthn"])), "{mfa}");
    let (status, start) = f.post_as("/auth/webauthn/authenticate/options", None, json!({"mfa_token": mfa["mfa_token"]})).await;
    assert_eq!(status, StatusCode::OK, "{start}");
    let options: RequestChallengeResponse = serde_json::from_value(start["options"].clone()).unwrap();
    let assertion = authenticator.do_authentication(origin.clone(), options).unwrap();
    let verify = json!({"mfa_token": mfa["mfa_token"], "method": "webauthn", "ceremony": start["ceremony"], "credential": assertion});
    let (status, tokens) = f.post_as("/oauth/mfa/verify", None, verify.clone()).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(roles(&f, tokens["access_token"].as_str().unwrap()).await.0, StatusCode::OK);
    let (status, _) = f.post_as("/oauth/mfa/verify", None, verify).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the same assertion again is refused");

    // An assertion for another challenge does not verify.
    let (_, mfa) = exchange(&f, &code(&f, dana, "p3")).await;
    let (_, first) = f.post_as("/auth/webauthn/authenticate/options", None, json!({"mfa_token": mfa["mfa_token"]})).await;
    let (_, second) = f.post_as("/auth/webauthn/authenticate/options", None, json!({"mfa_token": mfa["mfa_token"]})).await;
    let options: RequestChallengeResponse = serde_json::from_value(first["options"].clone()).unwrap();
    let assertion = authenticator.do_authentication(origin, options).unwrap();
    let wrong = json!({"mfa_token": mfa["mfa_token"], "method": "webauthn", "ceremony": second["ceremony"], "credential": assertion});
    let (status, e) = f.post_as("/oauth/mfa/verify", None, wrong).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{e}");
}
