//! The identity layer in process: sessions (code exchange with PKCE, refresh rotation,
//! reuse, concurrent refreshes, revocation), roles, every kind of bad token, and the rate
//! limits; second factors are `mfa.rs`'s. (The same flows with service-auth tokens of a real PDS:
//! `tests/tests/auth.rs`.)

use crate::support;

use axum::body::Body as HttpBody;
use axum::http::{Request, StatusCode};
use data_encoding::BASE64URL_NOPAD;
use query_api::identity::keys::KeySet;
use query_api::identity::tokens::{AccessClaims, ACCESS_TYP};
use serde_json::{json, Value};
use support::sessions::{code, exchange, login, now, refresh, roles};
use support::{Fixture, SERVICE_DID};

#[tokio::test(flavor = "multi_thread")]
async fn sessions_rotate_and_reuse_or_revocation_ends_them() {
    let mut f = Fixture::new();
    f.live();
    let alice = "did:plc:alice";

    // The code exchange: tokens of the contract's shape; the access token works.
    let (status, tokens) = exchange(&f, &code(&f, alice, "c1")).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!((tokens["token_type"].as_str(), tokens["expires_in"].as_i64()), (Some("Bearer"), Some(3600)));
    let access = tokens["access_token"].as_str().unwrap();
    let claims: AccessClaims = f.state.auth.keys.verify(access, ACCESS_TYP, SERVICE_DID).unwrap();
    assert_eq!(
        (claims.iss.as_str(), claims.sub.as_str(), claims.scope.as_str(), claims.handle.as_deref()),
        (SERVICE_DID, alice, "read write", Some("alice.test"))
    );
    assert_eq!(claims.exp - claims.iat, 3600);
    let (status, mine) = roles(&f, access).await;
    assert_eq!((status, mine["roles"].clone(), mine["isAdmin"].clone()), (StatusCode::OK, json!([]), json!(false)));

    // A wrong verifier is refused; the same code twice ends the session it made.
    let other = code(&f, alice, "c1b");
    let (status, e) =
        f.post_as("/oauth/token", None, json!({"grant_type": "authorization_code", "code": other, "code_verifier": "x".repeat(43)})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    let (status, e) = exchange(&f, &code(&f, alice, "c1")).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{e}");
    let (status, e) = roles(&f, access).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("RevokedToken")), "{e}");

    // Rotation: each refresh token is used once; reusing one ends the whole family.
    let (access, rt1) = login(&f, alice, "c2").await;
    let (status, next) = refresh(&f, &rt1).await;
    assert_eq!(status, StatusCode::OK, "{next}");
    let rt2 = next["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(rt1, rt2);
    let (status, e) = refresh(&f, &rt1).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    let (status, _) = refresh(&f, &rt2).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the family is revoked with the reused token");
    assert_eq!(roles(&f, &access).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(roles(&f, next["access_token"].as_str().unwrap()).await.0, StatusCode::UNAUTHORIZED);

    // Two refreshes of one token at once: never both.
    for round in 0..5 {
        let (_, rt) = login(&f, alice, &format!("c3-{round}")).await;
        let (a, b) = tokio::join!(refresh(&f, &rt), refresh(&f, &rt));
        assert!(!(a.0 == StatusCode::OK && b.0 == StatusCode::OK), "round {round}: both refreshes succeeded: {} {}", a.1, b.1);
    }

    // Revocation (RFC 7009): the session ends, its access token with it; an unknown token is 200.
    let (access, rt) = login(&f, alice, "c4").await;
    assert_eq!(f.post_as("/oauth/revoke", None, json!({"token": rt})).await.0, StatusCode::UNAUTHORIZED, "bearer required");
    assert_eq!(f.post_as("/oauth/revoke", Some(&access), json!({"token": "nonsense"})).await.0, StatusCode::OK);
    let (status, body) = f.post_as("/oauth/revoke", Some(&access), json!({"token": rt})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    assert_eq!(refresh(&f, &rt).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(roles(&f, &access).await.1["error"], "RevokedToken");

    let (status, e) = f.post_as("/oauth/token", None, json!({"grant_type": "password"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("unsupported_grant_type")));
    let (status, e) = f.post_as("/oauth/token", None, json!({})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_request")));
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_are_granted_by_admins_only_and_rebuilt_by_a_replay() {
    let mut f = Fixture::new();
    f.live();
    let (admin, user) = ("did:plc:admin", "did:plc:user");
    query_api::xrpc::admin::bootstrap(&f.state, &[admin.to_owned()]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (admin_token, _) = login(&f, admin, "r1").await;
    let (user_token, _) = login(&f, user, "r2").await;
    assert_eq!(roles(&f, &admin_token).await.1["isAdmin"], json!(true));
    assert_eq!(roles(&f, &admin_token).await.1["isAlphaTester"], json!(true), "admin implies alpha-tester");

    let assign = json!({"did": user, "role": "moderator"});
    let (status, e) = f.post_as("/xrpc/pub.svc.admin.assignRole", Some(&user_token), assign.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(e["error"], "AuthorizationError");
    assert_eq!(e["details"], json!({"required_role": "admin", "your_role": "reader"}));
    assert_eq!(f.post_as("/xrpc/pub.svc.admin.assignRole", None, assign.clone()).await.1["error"], "AuthRequired");
    let (status, body) = f.post_as("/xrpc/pub.svc.admin.assignRole", Some(&admin_token), assign.clone()).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"success": true, "did": user, "role": "moderator"})));
    let (_, mine) = roles(&f, &user_token).await;
    assert_eq!(mine["roles"], json!(["moderator"]));
    assert_eq!(mine["assignments"][0]["assignedBy"], admin);
    let (status, e) = f.post_as("/xrpc/pub.svc.admin.assignRole", Some(&admin_token), json!({"did": user, "role": "emperor"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")));

    // A replay of the log into a fresh store holds the same roles.
    let dir = tempfile::tempdir().unwrap();
    let fresh: std::sync::Arc<dyn store::Store> = std::sync::Arc::new(store::EmbeddedStore::open(dir.path()).unwrap());
    let ctx = projections::catalog::Context::single(fresh.clone(), &dir.path().join("search"));
    let mut access = projections::catalog::FollowActive::open(&ctx, projections::access::MODEL).unwrap();
    projections::catch_up(f.log.as_ref(), &mut access, 500).unwrap();
    let replayed = projections::access::read::AccessReader::new(fresh.as_ref()).unwrap();
    assert_eq!(replayed.roles(user).unwrap().iter().map(|g| g.role.as_str()).collect::<Vec<_>>(), ["moderator"]);
    assert!(replayed.roles(admin).unwrap().iter().any(|g| g.role.as_str() == "admin"));

    let (status, body) = f.post_as("/xrpc/pub.svc.admin.revokeRole", Some(&admin_token), assign).await;
    assert_eq!((status, body["success"].clone()), (StatusCode::OK, json!(true)));
    assert_eq!(roles(&f, &user_token).await.1["roles"], json!([]));
    // The audit trail, through the admin API: newest first, filtered by actor, paged.
    let (status, e) = f.get_as("/xrpc/pub.svc.admin.getAuditLog", &user_token).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::FORBIDDEN, Some("AuthorizationError")));
    let (status, page) = f.get_as(&format!("/xrpc/pub.svc.admin.getAuditLog?actorDid={admin}&limit=2"), &admin_token).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let actions: Vec<&str> = page["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["revoke_role", "assign_role"]);
    assert_eq!((page["entries"][0]["targetDid"].as_str(), page["entries"][0]["details"]["role"].as_str()), (Some(user), Some("moderator")));
    let total = page["total"].as_u64().unwrap();
    assert!(total >= 3, "{page}");
    let (_, next) = f
        .get_as(
            &format!("/xrpc/pub.svc.admin.getAuditLog?actorDid={admin}&limit=2&cursor={}", page["cursor"].as_str().unwrap()),
            &admin_token,
        )
        .await;
    assert_eq!(next["entries"].as_array().unwrap().len() as u64, (total - 2).min(2));
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.getAuditLog?cursor=x", &admin_token).await.0, StatusCode::BAD_REQUEST);

    // The system's health, for admins only.
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.getSystemHealth", &user_token).await.0, StatusCode::FORBIDDEN);
    let (status, health) = f.get_as("/xrpc/pub.svc.admin.getSystemHealth", &admin_token).await;
    assert_eq!((status, health["status"].as_str()), (StatusCode::OK, Some("healthy")), "{health}");
    let names: Vec<&str> = health["databases"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["log (embedded)", "store (embedded)", "search index (tantivy)"]);
    // Each model's lag, in events and time (a model with nothing to apply is 0 behind). The
    // history is empty: the fixture runs no sampler (a node samples every 30 s).
    for model in health["readModels"].as_array().unwrap() {
        let (lag, behind) = (model["lag"].as_u64().unwrap(), model["behindMs"].as_u64().unwrap());
        assert!(lag > 0 || behind == 0, "{model}");
    }
    assert_eq!(health["lagHistory"], json!([]));
    let s = f.state.clone();
    let measured = tokio::task::spawn_blocking(move || query_api::lag::measure(&s)).await.unwrap();
    assert_eq!(measured.len(), projections::catalog::MODELS.len());
    let (status, node) = f.get_as("/xrpc/pub.svc.admin.getNodeMetrics", &admin_token).await;
    assert_eq!(status, StatusCode::OK, "{node}");
    assert_eq!(node["processInfo"]["pid"].as_u64(), Some(u64::from(std::process::id())));
    assert!(node["processInfo"]["rss"].as_u64().unwrap() > 1_000_000, "{node}");
    assert!(node["metrics"].as_array().unwrap().iter().any(|m| m["name"] == "tokio_workers"));

    // The dead letters: an invalid record parked by the attached model shows, with its reason.
    f.apply(vec![support::create(
        "did:plc:someone",
        "pub.svc.review.comment",
        "3kbad",
        "r1",
        json!({"$type": "pub.svc.review.comment", "body": 5}),
    )]);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, dlq) = f.get_as("/xrpc/pub.svc.admin.listDLQEntries", &admin_token).await;
    assert_eq!(status, StatusCode::OK, "{dlq}");
    assert_eq!(dlq["total"], 1, "{dlq}");
    let entry = &dlq["entries"][0];
    assert_eq!(
        (entry["uri"].as_str(), entry["model"].as_str(), entry["errorType"].as_str()),
        (Some("at://did:plc:someone/pub.svc.review.comment/3kbad"), Some("attached"), Some("VALIDATION_ERROR")),
        "{entry}"
    );
    assert!(entry["timestamp"].is_string());

    // Metrics: the Prometheus text at /metrics, and the same as JSON for admins.
    let (status, headers, text) = f.send(Request::builder().uri("/metrics").body(HttpBody::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = text.as_str().unwrap().to_owned();
    assert!(text.contains("svc_requests_total{method=\"GET\",path=\"/xrpc/pub.svc.admin.getNodeMetrics\",status=\"200\"}"), "{text}");
    assert!(text.contains("svc_request_duration_seconds_bucket"), "{text}");
    // The row cache's and the page caches' sizes (the reads above filled them) and the
    // resident set, set when scraped.
    for name in ["svc_cache_bytes{cache=\"rows\"}", "svc_cache_bytes{cache=\"pages\"}", "svc_memory_resident_bytes"] {
        let bytes = text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok());
        assert!(bytes.is_some_and(|bytes| bytes > 0.0), "{name}: {text}");
    }
    assert!(text.contains("svc_cache_bytes{cache=\"search_answers\"}"), "the search index's kept answers: {text}");
    let (_, endpoints) = f.get_as("/xrpc/pub.svc.admin.getEndpointMetrics", &admin_token).await;
    let roles_metric =
        endpoints["metrics"].as_array().unwrap().iter().find(|m| m["path"] == "/xrpc/pub.svc.actor.getMyRoles").cloned().unwrap();
    assert!(roles_metric["requestCount"].as_u64().unwrap() >= 3, "{roles_metric}");
    assert!(roles_metric["p99"].as_u64().unwrap() >= roles_metric["p50"].as_u64().unwrap());
    let (_, prom) = f.get_as("/xrpc/pub.svc.admin.getPrometheusMetrics", &admin_token).await;
    assert!(prom["metrics"].as_array().unwrap().iter().any(|m| m["name"] == "svc_requests_total" && m["type"] == "counter"), "{prom}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bad_token_is_refused_with_the_contracts_code_never_a_500() {
    let mut f = Fixture::new();
    f.live();
    let (access, _) = login(&f, "did:plc:carol", "b1").await;
    let sign = |keys: &KeySet, exp: i64, aud: &str| {
        let c = AccessClaims {
            iss: SERVICE_DID.into(),
            sub: "did:plc:carol".into(),
            aud: aud.into(),
            exp,
            iat: now(),
            scope: "read write".into(),
            handle: None,
            sid: "0".repeat(32),
            jti: "x".into(),
        };
        keys.sign(ACCESS_TYP, &c)
    };
    let part = |v: Value| BASE64URL_NOPAD.encode(v.to_string().as_bytes());
    let service_auth = |lxm: &str| {
        let claims = json!({"iss": "did:plc:carol", "aud": SERVICE_DID, "exp": now() + 60, "iat": now(), "lxm": lxm, "jti": "j"});
        format!("{}.{}.{}", part(json!({"alg": "ES256K", "typ": "JWT"})), part(claims), BASE64URL_NOPAD.encode(&[7; 64]))
    };
    let huge = format!("{}.{}.AAAA", part(json!({"alg": "ES256K", "pad": "x".repeat(100_000)})), part(json!({"iss": "did:plc:x"})));
    let cases: Vec<(String, &str, &str)> = vec![
        ("garbage".into(), "InvalidToken", "garbage"),
        (access[..access.len() - 12].to_owned(), "InvalidToken", "truncated"),
        (sign(&f.state.auth.keys, now() - 10, SERVICE_DID), "ExpiredToken", "expired"),
        (sign(&KeySet::ephemeral(), now() + 60, SERVICE_DID), "InvalidToken", "another key"),
        (sign(&f.state.auth.keys, now() + 60, "did:web:other.test"), "InvalidToken", "another aud"),
        (sign(&f.state.auth.keys, now() + 60, SERVICE_DID), "InvalidToken", "an unknown session"),
        (service_auth("pub.svc.sync.deleteRecord"), "InvalidToken", "another lxm"),
        (huge, "InvalidToken", "100 KB header"),
    ];
    for (token, code, what) in cases {
        let (status, e) = roles(&f, &token).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some(code)), "{what}: {e}");
        // A bad credential is refused on open methods too.
        let (status, _) = f.get_as("/xrpc/pub.svc.tag.getTrending", &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what} on an open method");
    }
    let (status, e) = f.get("/xrpc/pub.svc.actor.getMyRoles").await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));
    let (status, e) = f.post_as("/oauth/token", None, json!({"grant_type": "refresh_token", "refresh_token": access})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "an access token is no refresh token");
}

#[tokio::test]
async fn the_anonymous_tier_counts_down_then_answers_429_with_retry_after() {
    let f = Fixture::with_limits(query_api::identity::limits::LimitSettings::default());
    let get = || async {
        let request = Request::builder().uri("/xrpc/pub.svc.tag.getTrending").body(HttpBody::empty()).unwrap();
        f.send(request).await
    };
    let header = |h: &axum::http::HeaderMap, name: &str| h.get(name).map(|v| v.to_str().unwrap().to_owned());
    for i in 0..60 {
        let (status, h, _) = get().await;
        assert_eq!(status, StatusCode::OK, "request {i}");
        assert_eq!(header(&h, "x-ratelimit-limit").as_deref(), Some("60"));
        assert_eq!(header(&h, "x-ratelimit-remaining"), Some((59 - i).to_string()));
        let reset: i64 = header(&h, "x-ratelimit-reset").unwrap().parse().unwrap();
        assert!((now()..=now() + 61).contains(&reset));
        assert_eq!(header(&h, "ratelimit-policy").as_deref(), Some("60;w=60"));
    }
    let (status, h, e) = get().await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("RateLimitExceeded")));
    let retry: u64 = header(&h, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(header(&h, "x-ratelimit-remaining").as_deref(), Some("0"));
    // Probes are not limited; refused requests cost nothing, so a second later one passes.
    let probe = Request::builder().uri("/health/liveness").body(HttpBody::empty()).unwrap();
    assert_eq!(f.send(probe).await.0, StatusCode::OK);
    for _ in 0..20 {
        assert_eq!(get().await.0, StatusCode::TOO_MANY_REQUESTS);
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(get().await.0, StatusCode::OK);
}

/// A small deterministic generator (xorshift64*), so a failing case can be rerun.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Property: whatever a client puts after `Bearer `, the answer is a 401 in the XRPC envelope
/// with one of the contract's token codes — never a 500, a panic or a success — and the
/// token parser never panics. Cases: valid tokens of every kind mutated (bytes flipped,
/// cut, parts dropped, duplicated or swapped, base64 garbage, JSON that is not claims).
#[tokio::test(flavor = "multi_thread")]
async fn no_mutation_of_a_token_is_accepted_or_crashes() {
    let mut f = Fixture::new();
    f.live();
    let (access, refresh_token) = login(&f, "did:plc:erin", "f1").await;
    let part = |v: Value| BASE64URL_NOPAD.encode(v.to_string().as_bytes());
    let service = format!(
        "{}.{}.{}",
        part(json!({"alg": "ES256K", "typ": "JWT"})),
        part(json!({"iss": "did:plc:erin", "aud": SERVICE_DID, "exp": now() + 60, "lxm": "pub.svc.actor.getMyRoles", "jti": "p"})),
        BASE64URL_NOPAD.encode(&[1; 64])
    );
    let seeds = [access.clone(), service, refresh_token, code(&f, "did:plc:erin", "f2")];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"";
    let mut rng = Rng(0x5eed_cafe);
    for case in 0..1500 {
        let seed = &seeds[rng.below(seeds.len())];
        let mut t: Vec<u8> = seed.as_bytes().to_vec();
        match rng.below(6) {
            0 => {
                for _ in 0..=rng.below(4) {
                    let i = rng.below(t.len());
                    t[i] = alphabet[rng.below(alphabet.len())];
                }
            }
            1 => t.truncate(rng.below(t.len())),
            2 => {
                let parts: Vec<&str> = seed.split('.').collect();
                let picked: Vec<&str> = (0..rng.below(5)).map(|_| parts[rng.below(parts.len())]).collect();
                t = picked.join(".").into_bytes();
            }
            3 => t = (0..rng.below(300)).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
            4 => {
                let junk = json!({"iss": rng.next(), "aud": [1, 2], "exp": "soon", "sub": null});
                t = format!("{}.{}.{}", part(json!({"alg": "ES256", "typ": "at+jwt", "kid": "x"})), part(junk), "AAAA").into_bytes();
            }
            _ => {
                let i = rng.below(t.len());
                t.insert(i, b'.');
            }
        }
        let token = String::from_utf8_lossy(&t).into_owned();
        if token == access || token.trim().is_empty() {
            continue;
        }
        let _ = atproto::jwt::Jwt::parse(&token);
        let request = Request::builder().uri("/xrpc/pub.svc.actor.getMyRoles").header("authorization", format!("Bearer {token}"));
        let Ok(request) = request.body(HttpBody::empty()) else { continue }; // not a valid header value
        let (status, _, e) = f.send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "case {case}: {token:?} gave {e}");
        let code = e["error"].as_str().unwrap_or_default();
        assert!(["InvalidToken", "ExpiredToken", "RevokedToken", "AuthRequired"].contains(&code), "case {case}: {token:?} gave {e}");
    }
}

/// A stranger's tokens cannot make svc a load generator against the PLC directory: a token
/// that fails a cheap check (size, algorithm, audience, method, expiry) causes no
/// resolution at all, a forged token for a DID that does not resolve causes one per minute,
/// and each token that needs a resolution costs its sender a request of the anonymous limit.
#[tokio::test(flavor = "multi_thread")]
async fn strangers_tokens_cause_bounded_directory_lookups() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let plc = axum::Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            (StatusCode::NOT_FOUND, "no such DID")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plc_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, plc).await.unwrap() });
    let limits = query_api::identity::limits::LimitSettings { tiers: Some([40, 300, 1000, 5000]), ..Default::default() };
    let f = Fixture::with_peers(limits, &plc_url);
    let part = |v: Value| BASE64URL_NOPAD.encode(v.to_string().as_bytes());
    let forged = |iss: &str, aud: &str, jti: u32, pad: usize| {
        let header = json!({"alg": "ES256K", "typ": "JWT", "pad": "x".repeat(pad)});
        let claims =
            json!({"iss": iss, "aud": aud, "exp": now() + 60, "iat": now(), "lxm": "pub.svc.actor.getMyRoles", "jti": jti.to_string()});
        format!("{}.{}.{}", part(header), part(claims), BASE64URL_NOPAD.encode(&[3; 64]))
    };
    let call = |token: String| {
        let f = &f;
        async move {
            let r = Request::builder().uri("/xrpc/pub.svc.actor.getMyRoles").header("authorization", format!("Bearer {token}"));
            f.send(r.body(HttpBody::empty()).unwrap()).await
        }
    };
    // Cheap refusals: no lookup.
    let (status, _, _) = call(forged("did:plc:stranger", SERVICE_DID, 0, 100_000)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = call(forged("did:plc:stranger", "did:web:elsewhere", 1, 0)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a token refused by a cheap check made svc call the directory");
    // Forged tokens for one unresolvable DID: one lookup, remembered.
    for jti in 0..10 {
        let (status, _, e) = call(forged("did:plc:stranger", SERVICE_DID, 10 + jti, 0)).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("InvalidToken")), "{e}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "a failed resolution is remembered");
    // Tokens for ever new DIDs: each lookup costs the sender; the limit stops them.
    let mut refused = false;
    for n in 0..60 {
        let (status, _, _) = call(forged(&format!("did:plc:stranger{n}"), SERVICE_DID, 100 + n, 0)).await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            refused = true;
            break;
        }
    }
    assert!(refused, "tokens needing lookups were never limited");
    assert!(hits.load(Ordering::SeqCst) <= 21, "{} lookups for a limit of 40 requests", hits.load(Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread")]
async fn alpha_applications_are_reviewed_by_admins_and_approval_grants_the_role() {
    let mut f = Fixture::new();
    f.live();
    let (admin, user) = ("did:plc:alphaadmin", "did:plc:applicant");
    query_api::xrpc::admin::bootstrap(&f.state, &[admin.to_owned()]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (admin_token, _) = login(&f, admin, "a1").await;
    let (user_token, _) = login(&f, user, "a2").await;
    assert_eq!(f.get_as("/xrpc/pub.svc.alpha.checkStatus", &user_token).await.1, json!({"status": "none"}));
    let application = json!({"email": "ada@uni.example", "sector": "academia", "careerStage": "postdoc",
        "researchKeywords": [{"label": "sparse attention"}], "motivation": "Testing the index."});
    let (status, e) = f
        .post_as(
            "/xrpc/pub.svc.alpha.apply",
            Some(&user_token),
            json!({"email": "nope", "sector": "academia", "careerStage": "postdoc", "researchKeywords": []}),
        )
        .await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidEmail")));
    let (status, e) = f
        .post_as(
            "/xrpc/pub.svc.alpha.apply",
            Some(&user_token),
            json!({"email": "a@b.org", "sector": "piracy", "careerStage": "postdoc", "researchKeywords": []}),
        )
        .await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{e}");
    let (status, applied) = f.post_as("/xrpc/pub.svc.alpha.apply", Some(&user_token), application.clone()).await;
    assert_eq!((status, applied["status"].as_str()), (StatusCode::OK, Some("pending")), "{applied}");
    let (_, again) = f.post_as("/xrpc/pub.svc.alpha.apply", Some(&user_token), application).await;
    assert_eq!(again["applicationId"], applied["applicationId"], "a pending application is answered again");
    assert_eq!(f.get_as("/xrpc/pub.svc.alpha.checkStatus", &user_token).await.1["status"], "pending");

    assert_eq!(f.get_as("/xrpc/pub.svc.admin.listAlphaApplications", &user_token).await.0, StatusCode::FORBIDDEN);
    let (_, list) = f.get_as("/xrpc/pub.svc.admin.listAlphaApplications?status=pending", &admin_token).await;
    assert_eq!((list["total"].as_u64(), list["items"][0]["did"].as_str()), (Some(1), Some(user)), "{list}");
    let (status, e) = f.get_as("/xrpc/pub.svc.admin.getAlphaApplication?did=did:plc:nobody", &admin_token).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFoundError")));
    let (status, approved) =
        f.post_as("/xrpc/pub.svc.admin.updateAlphaApplication", Some(&admin_token), json!({"did": user, "action": "approve"})).await;
    assert_eq!(
        (status, approved["status"].as_str(), approved["reviewedBy"].as_str()),
        (StatusCode::OK, Some("approved"), Some(admin)),
        "{approved}"
    );
    let (_, mine) = roles(&f, &user_token).await;
    assert_eq!((mine["roles"].clone(), mine["isAlphaTester"].clone()), (json!(["alpha-tester"]), json!(true)));
    assert_eq!(f.get_as("/xrpc/pub.svc.alpha.checkStatus", &user_token).await.1["status"], "approved");
    let (_, stats) = f.get_as("/xrpc/pub.svc.admin.getAlphaStats", &admin_token).await;
    assert_eq!(
        (stats["total"].as_u64(), stats["byStatus"]["approved"].as_u64(), stats["bySector"]["academia"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{stats}"
    );
    assert_eq!(stats["recentByDay"][0]["count"], 1);
    let (_, revoked) =
        f.post_as("/xrpc/pub.svc.admin.updateAlphaApplication", Some(&admin_token), json!({"did": user, "action": "revoke"})).await;
    assert_eq!(revoked["status"], "revoked");
    assert_eq!(roles(&f, &user_token).await.1["roles"], json!([]));
    assert_eq!(f.get_as("/xrpc/pub.svc.alpha.checkStatus", &user_token).await.1["status"], "rejected");
}
