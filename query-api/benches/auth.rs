//! What identity costs a request: `getSubmission` in process (`app.oneshot`, no socket)
//! anonymous, with an svc access token, and with a fresh AT Protocol service-auth JWT whose
//! issuer's key is cached (a new `jti` each time, as the rules require), each with the rate
//! limits off and on. The issuer's DID document is served by a local PLC stand-in (the PLC
//! directory's `GET /{did}` format). Figures: docs/performance.md.
//!
//! `cargo bench -p query-api --bench auth`

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Body as HttpBody;
use axum::http::{Request, StatusCode};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use data_encoding::BASE64URL_NOPAD;
use k256::ecdsa::signature::Signer;
use query_api::identity::limits::LimitSettings;
use query_api::identity::tokens::{LoginClaims, CODE_TYP};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::{Fixture, SERVICE_DID};

const ISSUER: &str = "did:plc:benchissuer";
const UPLOADER: &str = "did:plc:benchauthor";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

/// Serves the issuer's DID document as a PLC directory does.
async fn plc_stand_in(key: &k256::ecdsa::SigningKey) -> String {
    let mut prefixed = vec![0xe7, 0x01];
    prefixed.extend_from_slice(key.verifying_key().to_encoded_point(true).as_bytes());
    let multikey = multibase::encode(multibase::Base::Base58Btc, &prefixed);
    let doc = json!({"id": ISSUER, "alsoKnownAs": ["at://bench.test"],
        "verificationMethod": [{"id": format!("{ISSUER}#atproto"), "type": "Multikey", "controller": ISSUER, "publicKeyMultibase": multikey}]});
    let app = axum::Router::new().route(&format!("/{ISSUER}"), axum::routing::get(move || async move { axum::Json(doc.clone()) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn service_auth(key: &k256::ecdsa::SigningKey, jti: u64) -> String {
    let part = |v: Value| BASE64URL_NOPAD.encode(v.to_string().as_bytes());
    let now = chrono::Utc::now().timestamp();
    let signed = format!(
        "{}.{}",
        part(json!({"alg": "ES256K", "typ": "JWT"})),
        part(
            json!({"iss": ISSUER, "aud": SERVICE_DID, "exp": now + 240, "iat": now, "lxm": "pub.svc.eprint.getSubmission", "jti": jti.to_string()})
        )
    );
    let sig: k256::ecdsa::Signature = key.sign(signed.as_bytes());
    let sig = sig.normalize_s().unwrap_or(sig);
    format!("{signed}.{}", BASE64URL_NOPAD.encode(&sig.to_bytes()))
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let key = k256::ecdsa::SigningKey::from_slice(&[42u8; 32]).unwrap();
    let plc = rt.block_on(plc_stand_in(&key));
    let jti = Arc::new(AtomicU64::new(0));
    let huge = LimitSettings { tiers: Some([u32::MAX / 2; 4]), ..LimitSettings::default() };
    for (label, limits) in [("limits off", LimitSettings { tiers: None, ..LimitSettings::default() }), ("limits on", huge)] {
        let mut f = Fixture::with_peers(limits, &plc);
        f.apply(vec![support::create(
            UPLOADER,
            "pub.svc.eprint.submission",
            "3kbench",
            "r1",
            support::submission("Benchmarked identity", UPLOADER, "2025-01-02T03:04:05Z"),
        )]);
        f.live();
        let uri = format!("at://{UPLOADER}/pub.svc.eprint.submission/3kbench");
        let path =
            format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", form_urlencoded::byte_serialize(uri.as_bytes()).collect::<String>());
        // A session for the access-token case.
        let claims = LoginClaims {
            iss: SERVICE_DID.into(),
            sub: "did:plc:reader".into(),
            aud: SERVICE_DID.into(),
            exp: chrono::Utc::now().timestamp() + 60,
            iat: chrono::Utc::now().timestamp(),
            jti: format!("bench-{label}"),
            challenge: Some(BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()))),
            handle: None,
        };
        let code = f.state.auth.keys.sign(CODE_TYP, &claims);
        let (status, tokens) = rt.block_on(f.post_as(
            "/oauth/token",
            None,
            json!({"grant_type": "authorization_code", "code": code, "code_verifier": VERIFIER}),
        ));
        assert_eq!(status, StatusCode::OK, "{tokens}");
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let get = |token: Option<String>| {
            let mut r = Request::builder().uri(&path);
            if let Some(t) = token {
                r = r.header("authorization", format!("Bearer {t}"));
            }
            let (status, _, body) = rt.block_on(f.send(r.body(HttpBody::empty()).unwrap()));
            assert_eq!(status, StatusCode::OK, "{body}");
        };
        get(Some(service_auth(&key, jti.fetch_add(1, Ordering::Relaxed)))); // caches the issuer's key
        let mut group = c.benchmark_group(format!("getSubmission, {label}"));
        group.bench_function("anonymous", |b| b.iter(|| get(None)));
        group.bench_function("access token", |b| b.iter(|| get(Some(access.clone()))));
        group.bench_function("service-auth JWT (cached key)", |b| {
            b.iter_batched(|| service_auth(&key, jti.fetch_add(1, Ordering::Relaxed)), |t| get(Some(t)), BatchSize::SmallInput)
        });
        group.finish();
    }
    let limits =
        query_api::identity::limits::RateLimits::new(&LimitSettings { tiers: Some([u32::MAX / 2; 4]), ..LimitSettings::default() });
    let mut n = 0u32;
    c.bench_function("rate limiter check (one key of 1,000)", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            limits.check(query_api::identity::limits::Tier::Anonymous, &format!("10.0.{}.{}", (n / 250) % 4, n % 250))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
