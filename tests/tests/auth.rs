//! The identity layer against a real PDS, as a new user meets it, on the embedded backend and on
//! Kafka with the ScyllaDB store (the CQL test server): a service-auth JWT from
//! `com.atproto.server.getServiceAuth` calls a Required operation and gets a session through the
//! PKCE code exchange; refresh rotation (the old token fails, reusing it ends the family);
//! revocation; TOTP enrolment and an MFA login; a recovery code used once; a passkey registered and
//! used with a software authenticator; an admin from `ADMIN_DIDS` granting `moderator` (kept by a
//! replay, gone once revoked); an alpha application approved with its role; every kind of bad token
//! refused with the contract's code; and the anonymous tier's 61st request in a minute answered
//! 429.

use data_encoding::BASE64URL_NOPAD;
use query_api::identity::totp;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tests::pds::{Account, Pds};
use tests::{Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";
const VERIFIER: &str = "M25iVXpKU3puUjFaYWg3T1NDTDQtcW1ROUY5YXlwalNoc0hhakxifmZHag";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A request with an optional bearer token; status, headers and JSON body.
async fn call(
    svc: &Service,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut r = reqwest::Client::new().request(method, format!("{}{path}", svc.base));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(b) = body {
        r = r.json(b);
    }
    let r = r.send().await.unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    let text = r.text().await.unwrap();
    (status, headers, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn post(svc: &Service, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let (s, _, b) = call(svc, reqwest::Method::POST, path, token, Some(&body)).await;
    (s, b)
}

async fn get(svc: &Service, path: &str, token: &str) -> (u16, Value) {
    let (s, _, b) = call(svc, reqwest::Method::GET, path, Some(token), None).await;
    (s, b)
}

/// A session for `who`, the AT Protocol way: a service-auth token from the PDS asks for a
/// code; the code and its verifier become tokens (or `mfa_required`).
async fn code_exchange(svc: &Service, pds: &Pds, who: &Account) -> (u16, Value) {
    let proof = pds.service_auth(who, SERVICE_DID, query_api::auth::oauth::AUTHORIZE_LXM, None).await.unwrap();
    let challenge = BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()));
    let (status, code) =
        post(svc, "/oauth/authorize", Some(&proof), json!({"code_challenge": challenge, "code_challenge_method": "S256"})).await;
    assert_eq!(status, 200, "{code}");
    let code = code["code"].as_str().unwrap();
    post(svc, "/oauth/token", None, json!({"grant_type": "authorization_code", "code": code, "code_verifier": VERIFIER})).await
}

async fn login(svc: &Service, pds: &Pds, who: &Account) -> (String, String) {
    let (status, t) = code_exchange(svc, pds, who).await;
    assert_eq!(status, 200, "{t}");
    (t["access_token"].as_str().unwrap().to_owned(), t["refresh_token"].as_str().unwrap().to_owned())
}

async fn refresh(svc: &Service, token: &str) -> (u16, Value) {
    post(svc, "/oauth/token", None, json!({"grant_type": "refresh_token", "refresh_token": token})).await
}

const ROLES: &str = "/xrpc/pub.svc.actor.getMyRoles";

async fn scenario(pds: &Pds, user: &Account, admin: &Account, backend: &Backend, replay: bool) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = tests::free_port();
    let public_url = format!("http://localhost:{port}");
    let extra = ["--rate-limits", "60,300,1000,5000", "--public-url", &public_url];
    let svc = Service::start_args("up", &data, port, backend, &extra).await.unwrap();

    // A Required operation with the PDS's service-auth token for it, and the server-to-server
    // form with X-Service-DID.
    let token = pds.service_auth(user, SERVICE_DID, "pub.svc.actor.getMyRoles", None).await.unwrap();
    let (status, mine) = get(&svc, ROLES, &token).await;
    assert_eq!((status, mine["roles"].clone()), (200, json!([])), "{mine}");
    let token = pds.service_auth(user, SERVICE_DID, "pub.svc.actor.getMyProfile", None).await.unwrap();
    let r = reqwest::Client::new()
        .get(format!("{}/xrpc/pub.svc.actor.getMyProfile", svc.base))
        .bearer_auth(&token)
        .header("X-Service-DID", &user.did);
    let profile: Value = r.send().await.unwrap().json().await.unwrap();
    assert_eq!(profile["did"], user.did.as_str(), "{profile}");
    let token = pds.service_auth(user, SERVICE_DID, "pub.svc.actor.getMyProfile", None).await.unwrap();
    let r = reqwest::Client::new()
        .get(format!("{}/xrpc/pub.svc.actor.getMyProfile", svc.base))
        .bearer_auth(&token)
        .header("X-Service-DID", &admin.did);
    assert_eq!(r.send().await.unwrap().status().as_u16(), 401, "X-Service-DID must name the issuer");

    // A session: the access token calls Required operations; the refresh token rotates.
    let (access, rt1) = login(&svc, pds, user).await;
    assert_eq!(get(&svc, ROLES, &access).await.0, 200);
    let (status, next) = refresh(&svc, &rt1).await;
    assert_eq!(status, 200, "{next}");
    let rt2 = next["refresh_token"].as_str().unwrap().to_owned();
    let (status, e) = refresh(&svc, &rt1).await;
    assert_eq!((status, e["error"].as_str()), (400, Some("invalid_grant")), "the old refresh token fails");
    assert_eq!(refresh(&svc, &rt2).await.0, 400, "reusing it revoked the family");
    assert_eq!(get(&svc, ROLES, next["access_token"].as_str().unwrap()).await.1["error"], "RevokedToken");

    // Revocation.
    let (access, rt) = login(&svc, pds, user).await;
    assert_eq!(post(&svc, "/oauth/revoke", Some(&access), json!({"token": rt})).await.0, 200);
    assert_eq!(refresh(&svc, &rt).await.0, 400);
    assert_eq!(get(&svc, ROLES, &access).await.0, 401);

    // TOTP: enrol, confirm (recovery codes shown once), then a login needs the code.
    let (access, _) = login(&svc, pds, user).await;
    let (status, enrol) = post(&svc, "/auth/totp/enroll", Some(&access), json!({})).await;
    assert_eq!(status, 200, "{enrol}");
    let secret = data_encoding::BASE32_NOPAD.decode(enrol["secret"].as_str().unwrap().as_bytes()).unwrap();
    let code_at = |offset: i64| totp::code_at(&secret, (now() + offset) as u64);
    let (status, confirmed) = post(&svc, "/auth/totp/confirm", Some(&access), json!({"code": code_at(0)})).await;
    assert_eq!(status, 200, "{confirmed}");
    let recovery: Vec<String> = serde_json::from_value(confirmed["recovery_codes"].clone()).unwrap();
    let (status, mfa) = code_exchange(&svc, pds, user).await;
    assert_eq!((status, mfa["error"].as_str(), mfa["allowed_methods"].clone()), (403, Some("mfa_required"), json!(["totp"])), "{mfa}");
    let verify = |token: &Value, method: &str, code: String| json!({"mfa_token": token["mfa_token"], "method": method, "code": code});
    let (status, tokens) = post(&svc, "/oauth/mfa/verify", None, verify(&mfa, "totp", code_at(30))).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(get(&svc, ROLES, tokens["access_token"].as_str().unwrap()).await.0, 200);
    // A recovery code: once.
    let (_, mfa) = code_exchange(&svc, pds, user).await;
    assert_eq!(post(&svc, "/oauth/mfa/verify", None, verify(&mfa, "recovery", recovery[3].clone())).await.0, 200);
    let (_, mfa) = code_exchange(&svc, pds, user).await;
    let (status, e) = post(&svc, "/oauth/mfa/verify", None, verify(&mfa, "recovery", recovery[3].clone())).await;
    assert_eq!((status, e["error"].as_str()), (400, Some("invalid_grant")), "{e}");
    let (user_access, _) = {
        let (_, mfa) = code_exchange(&svc, pds, user).await;
        let (status, t) = post(&svc, "/oauth/mfa/verify", None, verify(&mfa, "recovery", recovery[4].clone())).await;
        assert_eq!(status, 200, "{t}");
        (t["access_token"].as_str().unwrap().to_owned(), ())
    };

    // A passkey, registered with a software authenticator, completes a login too.
    {
        use webauthn_authenticator_rs::{softpasskey::SoftPasskey, WebauthnAuthenticator};
        let origin = webauthn_rs::prelude::Url::parse(&public_url).unwrap();
        let mut authenticator = WebauthnAuthenticator::new(SoftPasskey::new(true));
        let (status, start) = post(&svc, "/auth/webauthn/register/options", Some(&user_access), json!({})).await;
        assert_eq!(status, 200, "{start}");
        let credential = authenticator.do_registration(origin.clone(), serde_json::from_value(start["options"].clone()).unwrap()).unwrap();
        let (status, done) = post(
            &svc,
            "/auth/webauthn/register/verify",
            Some(&user_access),
            json!({"ceremony": start["ceremony"], "credential": credential}),
        )
        .await;
        assert_eq!(status, 200, "{done}");
        let (_, mfa) = code_exchange(&svc, pds, user).await;
        assert_eq!(mfa["allowed_methods"], json!(["totp", "webauthn"]));
        // The contract's form: the user's handle.
        let (status, start) = post(&svc, "/auth/webauthn/authenticate/options", None, json!({"handle": user.handle})).await;
        assert_eq!(status, 200, "{start}");
        let assertion = authenticator.do_authentication(origin, serde_json::from_value(start["options"].clone()).unwrap()).unwrap();
        let body = json!({"mfa_token": mfa["mfa_token"], "method": "webauthn", "ceremony": start["ceremony"], "credential": assertion});
        let (status, tokens) = post(&svc, "/oauth/mfa/verify", None, body).await;
        assert_eq!(status, 200, "{tokens}");
    }

    // Roles: the admin of ADMIN_DIDS grants moderator with a service-auth token of its PDS.
    let (status, e) = post(&svc, "/xrpc/pub.svc.admin.assignRole", Some(&user_access), json!({"did": user.did, "role": "moderator"})).await;
    assert_eq!(
        (status, e["error"].as_str(), e["details"]["required_role"].as_str()),
        (403, Some("AuthorizationError"), Some("admin")),
        "{e}"
    );
    let grant = pds.service_auth(admin, SERVICE_DID, "pub.svc.admin.assignRole", None).await.unwrap();
    let (status, body) = post(&svc, "/xrpc/pub.svc.admin.assignRole", Some(&grant), json!({"did": user.did, "role": "moderator"})).await;
    assert_eq!((status, body["success"].clone()), (200, json!(true)), "{body}");
    assert_eq!(get(&svc, ROLES, &user_access).await.1["roles"], json!(["moderator"]));
    let svc = if replay {
        svc.stop().unwrap();
        tests::svc(&["replay", "--data-dir", data.to_str().unwrap()]).unwrap();
        let svc = Service::start_args("up", &data, port, backend, &extra).await.unwrap();
        svc.wait_caught_up().await.unwrap();
        let (status, mine) = get(&svc, ROLES, &user_access).await;
        assert_eq!((status, mine["roles"].clone()), (200, json!(["moderator"])), "the replay keeps the grant and the session: {mine}");
        svc
    } else {
        svc
    };
    let revoke = pds.service_auth(admin, SERVICE_DID, "pub.svc.admin.revokeRole", None).await.unwrap();
    assert_eq!(post(&svc, "/xrpc/pub.svc.admin.revokeRole", Some(&revoke), json!({"did": user.did, "role": "moderator"})).await.0, 200);
    assert_eq!(get(&svc, ROLES, &user_access).await.1["roles"], json!([]));

    // The alpha programme: the user applies with its PDS's token; the admin approves; the role
    // comes with it.
    let apply = pds.service_auth(user, SERVICE_DID, "pub.svc.alpha.apply", None).await.unwrap();
    let application = json!({"email": "ursula@uni.example", "sector": "academia", "careerStage": "graduate-phd", "researchKeywords": [{"label": "graphs"}]});
    let (status, applied) = post(&svc, "/xrpc/pub.svc.alpha.apply", Some(&apply), application).await;
    assert_eq!((status, applied["status"].as_str()), (200, Some("pending")), "{applied}");
    let review = pds.service_auth(admin, SERVICE_DID, "pub.svc.admin.updateAlphaApplication", None).await.unwrap();
    let (status, reviewed) =
        post(&svc, "/xrpc/pub.svc.admin.updateAlphaApplication", Some(&review), json!({"did": user.did, "action": "approve"})).await;
    assert_eq!((status, reviewed["status"].as_str()), (200, Some("approved")), "{reviewed}");
    let check = pds.service_auth(user, SERVICE_DID, "pub.svc.alpha.checkStatus", None).await.unwrap();
    assert_eq!(get(&svc, "/xrpc/pub.svc.alpha.checkStatus", &check).await.1["status"], "approved");
    assert_eq!(get(&svc, ROLES, &user_access).await.1["isAlphaTester"], json!(true));

    // Bad tokens: each refused with the contract's code.
    let lxm = "pub.svc.actor.getMyRoles";
    let expired = pds.service_auth(user, SERVICE_DID, lxm, Some(now() + 1)).await.unwrap();
    let fresh = pds.service_auth(user, SERVICE_DID, lxm, None).await.unwrap();
    let (header, rest) = fresh.split_once('.').unwrap();
    let (claims, _) = rest.split_once('.').unwrap();
    let other_key = format!("{header}.{claims}.{}", BASE64URL_NOPAD.encode(&[9u8; 64]));
    let cases = vec![
        (pds.service_auth(user, "did:web:other.test", lxm, None).await.unwrap(), "InvalidToken", "another aud"),
        (pds.service_auth(user, SERVICE_DID, "pub.svc.actor.getMyProfile", None).await.unwrap(), "InvalidToken", "another lxm"),
        (other_key, "InvalidToken", "signed by another key"),
        (fresh[..fresh.len() - 20].to_owned(), "InvalidToken", "truncated"),
        ("garbage".to_owned(), "InvalidToken", "garbage"),
    ];
    for (token, code, what) in cases {
        let (status, e) = get(&svc, ROLES, &token).await;
        assert_eq!((status, e["error"].as_str()), (401, Some(code)), "{what}: {e}");
    }
    assert_eq!(get(&svc, ROLES, &fresh).await.0, 200);
    let (status, e) = get(&svc, ROLES, &fresh).await;
    assert_eq!((status, e["error"].as_str()), (401, Some("InvalidToken")), "replayed: {e}");
    tokio::time::sleep(std::time::Duration::from_secs(2 + query_api::identity::CLOCK_SKEW as u64)).await;
    let (status, e) = get(&svc, ROLES, &expired).await;
    assert_eq!((status, e["error"].as_str()), (401, Some("ExpiredToken")), "expired: {e}");

    // The anonymous tier from a fresh address's point of view: this test's earlier anonymous
    // calls (token endpoints, refusals) count too, so count down to the refusal.
    let mut remaining = i64::MAX;
    let mut refused = None;
    let mut previous = std::time::Instant::now();
    for i in 0..61 {
        let (status, h, body) = call(&svc, reqwest::Method::GET, "/xrpc/pub.svc.tag.getTrending", None, None).await;
        // The quota gives back one request a second, on its own schedule: a call d seconds
        // after the last may find up to ceil(d) requests given back, so it may count one
        // fewer down (or none) even within the second.
        let given_back = previous.elapsed().as_secs_f64().ceil() as i64;
        previous = std::time::Instant::now();
        let left: i64 = h["x-ratelimit-remaining"].to_str().unwrap().parse().unwrap();
        if status == 429 {
            assert_eq!(body["error"], "RateLimitExceeded");
            assert!(h.contains_key("retry-after") && h.contains_key("ratelimit-policy"));
            refused = Some(i);
            break;
        }
        assert_eq!(status, 200);
        assert!(left < remaining.saturating_add(given_back), "the headers count down: {left} after {remaining}");
        remaining = left;
    }
    assert!(refused.is_some(), "61 anonymous requests in a minute were all served");
    svc.stop().unwrap();
}

/// A backend with the PDS's PLC directory and handles, and `admin` an admin of svc.
fn with_peers(pds: &Pds, admin: &Account, backend: Backend) -> Backend {
    backend
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", &admin.did)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
}

#[tokio::test(flavor = "multi_thread")]
async fn identity_against_a_real_pds_on_the_embedded_backend() {
    let _serial = tests::serial().await;
    let pds = Pds::start().unwrap();
    let (user, admin) = (pds.create_account("ursula").await.unwrap(), pds.create_account("adam").await.unwrap());
    scenario(&pds, &user, &admin, &with_peers(&pds, &admin, Backend::embedded()), true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn identity_against_a_real_pds_on_kafka_and_cql() {
    let _serial = tests::serial().await;
    let pds = Pds::start().unwrap();
    let (user, admin) = (pds.create_account("ursula").await.unwrap(), pds.create_account("adam").await.unwrap());
    // (The backend owns the broker and the CQL server: they live as long as the scenario.)
    scenario(&pds, &user, &admin, &with_peers(&pds, &admin, Backend::kafka_scylla()), false).await;
}
