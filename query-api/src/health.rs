//! Health probes, the service's DID document and the OpenAPI document.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::state::AppState;

/// When the process started serving (for `/health`'s `uptime`).
static STARTED: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The health, identity and specification routes.
pub fn routes() -> Router<AppState> {
    LazyLock::force(&STARTED);
    Router::new()
        .route("/health/liveness", get(liveness))
        .route("/health/readiness", get(readiness))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/.well-known/did.json", get(did_document))
        .route("/openapi.json", get(openapi))
}

async fn liveness() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The contract's liveness (`GET /health`): always 200 while the process serves.
async fn health() -> Json<Value> {
    Json(json!({
        "status": "healthy",
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "version": env!("CARGO_PKG_VERSION"),
        "uptime": STARTED.elapsed().as_secs(),
    }))
}

/// What a node's probes report: each backend's check and the read models' state.
struct Assessment {
    /// The log, the store and the search index: each check's outcome and how long it took.
    backends: [(&'static str, Result<(), String>, Duration); 3],
    /// One entry per read model (see [`readiness`]).
    projections: Vec<Value>,
    /// Whether every read model this node serves has been complete once.
    complete: bool,
    /// Shared models built with an older row format.
    stale: Vec<Value>,
}

impl Assessment {
    fn healthy(&self) -> bool {
        self.backends.iter().all(|(_, r, _)| r.is_ok())
    }
}

/// Checks the backends and the read models (blocking: it reads the log and the store).
fn assess(s: &AppState) -> Assessment {
    let timed = |check: &dyn Fn() -> Result<(), String>| {
        let started = Instant::now();
        let outcome = check();
        (outcome, started.elapsed())
    };
    let (log, log_took) = timed(&|| s.log.check().map_err(|e| e.to_string()));
    let (store, store_took) = timed(&|| s.store.check().map_err(|e| e.to_string()));
    let (search, search_took) = timed(&|| s.search_index().map(|_| ()).map_err(|e| e.to_string()));
    // A log that cannot serve is not asked further (each question would wait for it).
    let log_ok = log.is_ok();
    // Events not yet applied, counted per partition (None when the log cannot tell).
    let lag = |checkpoints: &projections::Checkpoints| if log_ok { s.log.events_behind(checkpoints).ok() } else { None };
    // Whether nothing lies at or past each partition's checkpoint. Models that are caught
    // up share their checkpoints, so each position is read once (on a broker whose
    // watermarks lag, a read at the end waits until its fetches stay empty).
    let at_end: std::cell::RefCell<std::collections::HashMap<(u32, u64), bool>> = Default::default();
    let caught_up = |checkpoints: &projections::Checkpoints| {
        log_ok
            && (0..s.log.partitions()).all(|part| {
                let at = checkpoints.get(&part).copied().unwrap_or(0);
                *at_end.borrow_mut().entry((part, at)).or_insert_with(|| s.log.read(part, at, 1).map(|e| e.is_empty()).unwrap_or(false))
            })
    };
    let dead_letters = |model: &str| -> Option<u64> {
        if !projections::catalog::SHARED_MODELS.contains(&model) {
            return None;
        }
        let version = s.store.active_version(model).ok()??;
        projections::deadletter::count(s.store.as_ref(), model, version).ok()
    };
    let mut complete = true;
    let mut projections: Vec<Value> = Vec::new();
    for (model, rx) in s.progress.iter() {
        let p = rx.borrow().clone();
        complete &= p.caught_up;
        let mut entry = json!({
            "model": model, "ready": p.caught_up, "caughtUp": caught_up(&p.checkpoints), "lag": lag(&p.checkpoints),
            "applied": p.applied, "deadLetters": dead_letters(model),
        });
        if let Some(why) = p.failing {
            entry["error"] = json!(why);
        }
        projections.push(entry);
    }
    // Shared models built by other processes: their checkpoints are in the store.
    for model in projections::catalog::SHARED_MODELS.iter().filter(|m| !s.progress.iter().any(|(p, _)| p == *m)) {
        let checkpoints = s.store.active_version(model).and_then(|v| match v {
            Some(v) => s.store.checkpoints(&store::consumer_name(model, v)),
            None => Ok(Default::default()),
        });
        projections.push(match checkpoints {
            Ok(c) => {
                let now = caught_up(&c);
                let ready = s.complete_once(model, now);
                complete &= ready;
                json!({"model": model, "ready": ready, "caughtUp": now, "lag": lag(&c), "builtElsewhere": true,
                       "deadLetters": dead_letters(model)})
            }
            Err(e) => {
                let ready = s.complete_once(model, false);
                complete &= ready;
                json!({"model": model, "ready": ready, "caughtUp": false, "builtElsewhere": true, "error": e.to_string()})
            }
        });
    }
    // Shared models built by an older svc with another row format: a replay is needed.
    let ctx = s.context();
    let stale: Vec<Value> = projections::catalog::SHARED_MODELS
        .iter()
        .filter_map(|model| match projections::catalog::needs_replay(&ctx, model) {
            Ok(Some((built, current))) => Some(json!({"model": model, "builtFormat": built, "currentFormat": current})),
            _ => None,
        })
        .collect();
    Assessment {
        backends: [("log", log, log_took), ("store", store, store_took), ("search", search, search_took)],
        projections,
        complete,
        stale,
    }
}

/// Readiness: whether a load balancer may send this node traffic.
///
/// 200 only when the log, the store and the search index answer **and** every read model
/// this node serves has been complete at least once since the process started: its worker
/// (or, for a shared model built by other processes, its checkpoints in the store) reached
/// the end of the log. A fresh node whose index is still being built answers 503, so it gets
/// no traffic until it can answer fully. Once complete, a node stays ready while it lags
/// behind new events (the lag is reported, not a reason to take every node out at once).
///
/// The body tells, per read model: `ready` (complete once), `caughtUp` (at the end of the
/// log right now), `lag` (events not yet applied), `applied` (since start) and
/// `deadLetters` (events it could not apply, for models that keep them), and `error` while its
/// worker retries a batch the log or store cannot serve (a broker restarting, a full disk). A shared model
/// built by an older svc with another row format keeps the node unready (`needsReplay`,
/// status `needsReplay`) until `svc replay` rebuilds it.
async fn readiness(State(state): State<AppState>) -> Response {
    let s = state.clone();
    let Ok(a) = tokio::task::spawn_blocking(move || assess(&s)).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"}))).into_response();
    };
    let checks: serde_json::Map<String, Value> = a
        .backends
        .iter()
        .map(|(name, outcome, _)| ((*name).to_owned(), outcome.as_ref().map_or_else(|e| json!({"error": e}), |()| json!("ok"))))
        .collect();
    let healthy = a.healthy();
    let ready = healthy && a.complete && a.stale.is_empty();
    let mut body = json!({
        "status": match () {
            _ if ready => "ok",
            _ if !healthy => "unavailable",
            _ if !a.stale.is_empty() => "needsReplay",
            _ => "catchingUp",
        },
        "checks": checks,
        "projections": a.projections,
    });
    if !a.stale.is_empty() {
        body["needsReplay"] = json!(a.stale);
    }
    let code = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
}

/// The contract's readiness (`GET /ready`): `checks` has each backend (`log`, `store`,
/// `search`) with its `status` (`healthy` or `unhealthy`), `latencyMs` and `message`, and
/// `projections` the read models (`degraded` while one is not complete yet, is retrying a
/// batch, or needs a replay). The overall `status` is `unhealthy` (503) when a backend
/// fails, `degraded` (200: the node answers, perhaps not fully) when only the read models
/// are behind, `healthy` (200) otherwise. `/health/readiness` is the stricter probe for
/// load balancers.
async fn ready(State(state): State<AppState>) -> Response {
    let s = state.clone();
    let Ok(a) = tokio::task::spawn_blocking(move || assess(&s)).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unhealthy"}))).into_response();
    };
    let mut checks = serde_json::Map::new();
    for (name, outcome, took) in &a.backends {
        let (status, message) = match outcome {
            Ok(()) => ("healthy", format!("the {name} answers")),
            Err(e) => ("unhealthy", e.clone()),
        };
        checks.insert((*name).to_owned(), json!({"status": status, "latencyMs": took.as_secs_f64() * 1000.0, "message": message}));
    }
    let failing = a.projections.iter().filter(|p| p.get("error").is_some()).count();
    let behind = a.projections.iter().filter(|p| p["ready"] != true).count();
    let (models, message) = match () {
        _ if !a.stale.is_empty() => ("degraded", format!("{} read models need a replay (svc replay)", a.stale.len())),
        _ if failing > 0 => ("degraded", format!("{failing} read models are retrying a batch the log or store cannot serve")),
        _ if !a.complete => ("degraded", format!("{behind} read models are still catching up with the log")),
        _ => ("healthy", "every read model is complete".to_owned()),
    };
    checks.insert("projections".into(), json!({"status": models, "message": message}));
    let status = match () {
        _ if !a.healthy() => "unhealthy",
        _ if models != "healthy" => "degraded",
        _ => "healthy",
    };
    let code = if status == "unhealthy" { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    (code, Json(json!({"status": status, "checks": checks}))).into_response()
}

async fn did_document(State(state): State<AppState>) -> Json<Value> {
    let id = &state.identity;
    Json(json!({
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": id.did,
        "service": [{
            "id": "#svc_appview",
            "type": "SvcAppView",
            "serviceEndpoint": id.public_url,
        }],
    }))
}

async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json((*state.openapi).clone())
}
