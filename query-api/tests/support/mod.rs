//! An in-process svc for router tests: an embedded log and store in a temporary directory,
//! read models built from the events a test appends, and the whole application called with
//! `oneshot` (no process, no socket).

#![allow(dead_code)]

pub mod sessions;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body as HttpBody;
use axum::http::{Method, Request, StatusCode};
use event_schema::{NewEvent, Payload, RecordDelete, RecordWrite, Source};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{self, Context, FollowActive};
use projections::Projection;
use query_api::{AppState, ServiceIdentity, Shared, SyncSettings};
use serde_json::Value;
use store::EmbeddedStore;
use tower::ServiceExt;

/// The public URL of the fixture (the passkeys' relying party).
pub const PUBLIC_URL: &str = "https://svc.test";

/// The service DID of the fixture.
pub const SERVICE_DID: &str = "did:web:svc.test";
/// The governance repository of the tests' service: its graph records are the shared graph.
pub const GOVERNANCE_DID: &str = "did:plc:governance22222222222222";

/// A fixed CID for records a test writes.
pub const CID: &str = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";

/// The in-process service.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub log: Arc<dyn EventLog>,
    ctx: Context,
    projections: Vec<FollowActive>,
    pub state: AppState,
    /// The application, built once as a running svc builds it (its kept answers live as
    /// long as it does).
    pub app: query_api::App,
    /// Set to stop the projector thread of [`Fixture::live`].
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Where each model stands, as a running svc's workers report it (procedures wait on it).
    progress: Arc<Vec<tokio::sync::watch::Sender<projections::Progress>>>,
}

/// Reports where each of `projections` stands on its feed of `progress`.
fn report(projections: &[FollowActive], progress: &[tokio::sync::watch::Sender<projections::Progress>]) {
    for (p, tx) in projections.iter().zip(progress) {
        let checkpoints = p.durable_checkpoints().unwrap();
        tx.send_modify(|now| {
            now.checkpoints = checkpoints;
            now.caught_up = true;
        });
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Fixture {
    /// An empty service, without rate limits.
    pub fn new() -> Fixture {
        Fixture::with_limits(query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() })
    }

    /// An empty service with these rate limits.
    pub fn with_limits(limits: query_api::identity::limits::LimitSettings) -> Fixture {
        Fixture::with_peers(limits, "http://127.0.0.1:9")
    }

    /// An empty service with these rate limits, resolving did:plc at `plc_url`.
    pub fn with_peers(limits: query_api::identity::limits::LimitSettings, plc_url: &str) -> Fixture {
        Fixture::with_sources(limits, plc_url, sources::Sources::default())
    }

    /// An empty service with these rate limits, resolving did:plc at `plc_url`, importing
    /// papers from `sources`.
    pub fn with_sources(limits: query_api::identity::limits::LimitSettings, plc_url: &str, sources: sources::Sources) -> Fixture {
        Fixture::build(limits, plc_url, sources, unreachable_registries(), projections::governance::RULE, NOWHERE)
    }

    /// An empty service, without rate limits, asking the code and data platforms at
    /// `platforms` (a fixture server).
    pub fn with_platforms(platforms: &str) -> Fixture {
        let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
        Fixture::build(limits, NOWHERE, sources::Sources::default(), unreachable_registries(), projections::governance::RULE, platforms)
    }

    /// An empty service, without rate limits, tallying proposals by `consensus`.
    pub fn with_consensus(consensus: projections::governance::Rule) -> Fixture {
        let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
        Fixture::build(limits, "http://127.0.0.1:9", sources::Sources::default(), unreachable_registries(), consensus, NOWHERE)
    }

    /// As [`Fixture::with_sources`], with every registry (ORCID, ROR…) at `registries` (a
    /// fixture server), svc registered with its ORCID OAuth as the fixture's client, sending
    /// users back to [`ORCID_RETURN`].
    pub fn with_registries(
        limits: query_api::identity::limits::LimitSettings,
        plc_url: &str,
        sources: sources::Sources,
        registries: &str,
    ) -> Fixture {
        let (id, secret) = sources::fixtures::ORCID_CLIENT;
        let callback = "https://svc.example/v1/auth/orcid/callback";
        let oauth = sources::orcid_oauth::OrcidOAuth::new(registries, id, secret, callback, ORCID_RETURN);
        let all = sources::registries::Registries::new(&sources::registries::RegistryUrls::all_at(registries)).with_orcid_oauth(oauth);
        Fixture::build(limits, plc_url, sources, all, projections::governance::RULE, NOWHERE)
    }

    fn build(
        limits: query_api::identity::limits::LimitSettings,
        plc_url: &str,
        sources: sources::Sources,
        registries: sources::registries::Registries,
        consensus: projections::governance::Rule,
        platforms: &str,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let log: Arc<dyn EventLog> = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
        let store: Arc<dyn store::Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
        let ctx = Context::single(store.clone(), &dir.path().join("search"));
        let projections: Vec<FollowActive> = catalog::MODELS.iter().map(|m| FollowActive::open(&ctx, m).unwrap()).collect();
        let (progress, feeds): (Vec<_>, Vec<_>) = projections
            .iter()
            .map(|p| {
                let (tx, rx) = tokio::sync::watch::channel(projections::Progress::default());
                (tx, (p.model(), rx))
            })
            .unzip();
        let resolver = Arc::new(atproto::identity::Resolver::new(plc_url, Duration::from_secs(60)));
        let ledger = query_api::identity::replay::ReplayLedger::new(store.clone());
        let service = Arc::new(query_api::identity::ServiceAuth::new(SERVICE_DID, resolver.clone(), ledger));
        let limits = query_api::identity::limits::RateLimits::new(&limits);
        let keys = Arc::new(query_api::identity::keys::KeySet::ephemeral());
        let auth = Arc::new(query_api::identity::Identity::new(
            SERVICE_DID,
            PUBLIC_URL,
            Arc::new(atproto::handle::HandleResolver::new(Some(plc_url), Duration::from_secs(60))),
            service,
            keys,
            limits,
            Vec::new(),
        ));
        let state = AppState::new(Shared {
            log: log.clone(),
            store: ctx.store.clone(),
            node: ctx.node.clone(),
            search: ctx.search.clone(),
            openapi: Arc::new(query_api::openapi::document(&ctx.lexicons)),
            lexicons: ctx.lexicons.clone(),
            identity: Arc::new(ServiceIdentity {
                did: SERVICE_DID.into(),
                public_url: PUBLIC_URL.into(),
                governance_did: GOVERNANCE_DID.into(),
                consensus,
            }),
            progress: Arc::new(feeds),
            auth,
            sync: Arc::new(SyncSettings {
                fetcher: ingest::fetch::RecordFetcher::new(resolver.clone()),
                collections: vec!["pub.svc.".into()],
                approved: Vec::new(),
                publisher: None,
            }),
            searches: query_api::state::search_slots(),
            started: std::time::Instant::now(),
            complete_models: Default::default(),
            lag_history: Default::default(),
            // Long enough for a full reindex of the fixture's models while the suite's other
            // tests share the cores: with no workers here to hold, the versions it swaps in
            // hold the reports it read, and the live threads move to them within a second.
            operation_stale_after: Duration::from_secs(6),
            appender: Default::default(),
            sources,
            registries: Arc::new(registries),
            platforms: Arc::new(sources::platforms::Platforms::new(&sources::platforms::PlatformUrls::all_at(platforms))),
            tap: Arc::new(query_api::tap::Tap::new(log.clone(), Default::default())),
            workers: Vec::new(),
            snapshots: None,
            kept_answers: Arc::new(query_api::xrpc::kept::KeptAnswers::new(64 << 20)),
        });
        let app = query_api::app(state.clone());
        let progress = Arc::new(progress);
        report(&projections, &progress);
        Fixture { _dir: dir, log, ctx, projections, state, app, stop: Default::default(), progress }
    }

    /// Appends events and applies them to every read model.
    pub fn apply(&mut self, events: Vec<NewEvent>) {
        self.log.append(&events).unwrap();
        for p in &mut self.projections {
            projections::catch_up(self.log.as_ref(), p as &mut dyn Projection, 500).unwrap();
        }
        report(&self.projections, &self.progress);
    }

    /// Applies the log to the read models, each on a thread of its own from now on, as a
    /// running svc's workers do (a model that waits for another, as search waits for
    /// eprints, is not held up behind it), so that procedures (which wait for their event
    /// to be applied) can be called; [`Fixture::apply`] then only appends.
    pub fn live(&mut self) {
        let projections = std::mem::take(&mut self.projections);
        for (mut p, tx) in projections.into_iter().zip(self.progress.iter().cloned()) {
            let (log, stop) = (self.log.clone(), self.stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // Follows a version a rebuild swapped in, and retries a batch that failed
                    // (on a version dropped under it, say), as the service's workers do.
                    let applied = p.refresh().and_then(|()| projections::catch_up(log.as_ref(), &mut p as &mut dyn Projection, 500));
                    if let Err(e) = applied {
                        eprintln!("{}: {e}; retrying", p.model());
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    report(std::slice::from_ref(&p), std::slice::from_ref(&tx));
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
    }

    /// Waits (up to 10 s) until `model` has applied every event in the log: for procedures
    /// that answer before the read models apply them.
    pub async fn settled(&self, model: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let version = self.ctx.store.active_version(model).unwrap().unwrap();
            let checkpoints = self.ctx.store.checkpoints(&store::consumer_name(model, version)).unwrap();
            if self.log.events_behind(&checkpoints).unwrap() == 0 {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{model} did not catch up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Sends a request; answers the status, the headers and the body (JSON, or the text).
    pub async fn send(&self, request: Request<HttpBody>) -> (StatusCode, axum::http::HeaderMap, Value) {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, headers, json)
    }

    /// `POST uri` with a JSON body and, when given, a bearer token.
    pub async fn post_as(&self, uri: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
        let mut request = Request::builder().method(Method::POST).uri(uri).header("content-type", "application/json");
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        let (status, _, json) = self.send(request.body(HttpBody::from(body.to_string())).unwrap()).await;
        (status, json)
    }

    /// `GET uri` with a bearer token.
    pub async fn get_as(&self, uri: &str, token: &str) -> (StatusCode, Value) {
        let request = Request::builder().uri(uri).header("authorization", format!("Bearer {token}"));
        let (status, _, json) = self.send(request.body(HttpBody::empty()).unwrap()).await;
        (status, json)
    }

    /// Calls the application.
    pub async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        let body = match body {
            Some(v) => {
                request = request.header("content-type", "application/json");
                HttpBody::from(v.to_string())
            }
            None => HttpBody::empty(),
        };
        let response = self.app.clone().oneshot(request.body(body).unwrap()).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, json)
    }

    /// `GET uri`.
    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, None).await
    }
}

fn write(did: &str, collection: &str, rkey: &str, rev: &str, record: Value) -> RecordWrite {
    RecordWrite { did: did.into(), collection: collection.into(), rkey: rkey.into(), cid: CID.into(), rev: rev.into(), record }
}

/// Where the ORCID callback of [`Fixture::with_registries`] sends users.
pub const ORCID_RETURN: &str = "https://app.example/settings";

/// An address nothing answers at.
const NOWHERE: &str = "http://127.0.0.1:9";

/// Registries nothing answers for, without ORCID OAuth.
fn unreachable_registries() -> sources::registries::Registries {
    sources::registries::Registries::new(&sources::registries::RegistryUrls::all_at("http://127.0.0.1:9"))
}

/// The PKCE verifier of [`login`].
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

/// Signs `did` in through the token endpoint (an authorization code this fixture's keys
/// sign, redeemed once: `jti` must be new): its access token.
pub async fn login(f: &Fixture, did: &str, jti: &str) -> String {
    use data_encoding::BASE64URL_NOPAD;
    use query_api::identity::tokens::{LoginClaims, CODE_TYP};
    use sha2::{Digest, Sha256};
    let now = chrono::Utc::now().timestamp();
    let claims = LoginClaims {
        iss: SERVICE_DID.into(),
        sub: did.into(),
        aud: SERVICE_DID.into(),
        exp: now + 60,
        iat: now,
        jti: jti.into(),
        challenge: Some(BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()))),
        handle: None,
    };
    let code = f.state.auth.keys.sign(CODE_TYP, &claims);
    let body = serde_json::json!({"grant_type": "authorization_code", "code": code, "code_verifier": VERIFIER});
    let (status, tokens) = f.post_as("/oauth/token", None, body).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// A record create event from the repository `did`.
pub fn create(did: &str, collection: &str, rkey: &str, rev: &str, record: Value) -> NewEvent {
    NewEvent::repo(Source::Manual { note: "router test".into() }, Payload::RecordCreate(write(did, collection, rkey, rev, record)))
}

/// A record update event.
pub fn update(did: &str, collection: &str, rkey: &str, rev: &str, record: Value) -> NewEvent {
    NewEvent::repo(Source::Manual { note: "router test".into() }, Payload::RecordUpdate(write(did, collection, rkey, rev, record)))
}

/// A record delete event.
pub fn delete(did: &str, collection: &str, rkey: &str, rev: &str) -> NewEvent {
    NewEvent::repo(
        Source::Manual { note: "router test".into() },
        Payload::RecordDelete(RecordDelete { did: did.into(), collection: collection.into(), rkey: rkey.into(), rev: rev.into() }),
    )
}

/// A submission record.
pub fn submission(title: &str, author_did: &str, created_at: &str) -> Value {
    serde_json::json!({
        "$type": "pub.svc.eprint.submission",
        "title": title,
        "abstract": format!("An abstract about {title}."),
        "authors": [{"name": "Ada Author", "did": author_did, "order": 1}],
        "fields": ["cs.LG"],
        "createdAt": created_at,
    })
}

/// URL-encodes a query value.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
