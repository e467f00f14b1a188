//! Health probes, the service's DID document and the OpenAPI document.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::state::AppState;

/// The health, identity and specification routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/health/liveness", get(liveness))
        .route("/health/readiness", get(readiness))
        .route("/.well-known/did.json", get(did_document))
        .route("/openapi.json", get(openapi))
}

async fn liveness() -> Json<Value> {
    Json(json!({"status": "ok"}))
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
    let checked = tokio::task::spawn_blocking(move || {
        let log = s.log.check().map_err(|e| e.to_string());
        let store = s.store.check().map_err(|e| e.to_string());
        let search = s.search_index().map(|_| ()).map_err(|e| e.to_string());
        // A log that cannot serve is not asked further (each question would wait for it).
        let ends = if log.is_ok() { s.log.end_offsets().ok() } else { None };
        // Events not yet applied, from the log's end offsets (None when they are unknown).
        let lag = |checkpoints: &projections::Checkpoints| ends.as_deref().map(|ends| projections::events_behind(ends, checkpoints));
        let caught_up = |checkpoints: &projections::Checkpoints| {
            log.is_ok()
                && (0..s.log.partitions()).all(|part| {
                    let at = checkpoints.get(&part).copied().unwrap_or(0);
                    s.log.read(part, at, 1).map(|e| e.is_empty()).unwrap_or(false)
                })
        };
        let dead_letters = |model: &str| -> Option<u64> {
            if !projections::catalog::SHARED_MODELS.contains(&model) {
                return None;
            }
            let version = s.store.active_version(model).ok()??;
            projections::deadletter::count(s.store.as_ref(), model, version).ok()
        };
        let mut all_ready = true;
        let mut projections: Vec<Value> = Vec::new();
        for (model, rx) in s.progress.iter() {
            let p = rx.borrow().clone();
            all_ready &= p.caught_up;
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
                    all_ready &= ready;
                    json!({"model": model, "ready": ready, "caughtUp": now, "lag": lag(&c), "builtElsewhere": true,
                           "deadLetters": dead_letters(model)})
                }
                Err(e) => {
                    let ready = s.complete_once(model, false);
                    all_ready &= ready;
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
        (log, store, search, projections, all_ready, stale)
    })
    .await;
    let Ok((log, store, search, projections, complete, stale)) = checked else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"}))).into_response();
    };
    let status = |r: &Result<(), String>| match r {
        Ok(()) => json!("ok"),
        Err(e) => json!({"error": e}),
    };
    let healthy = log.is_ok() && store.is_ok() && search.is_ok();
    let ready = healthy && complete && stale.is_empty();
    let mut body = json!({
        "status": match () {
            _ if ready => "ok",
            _ if !healthy => "unavailable",
            _ if !stale.is_empty() => "needsReplay",
            _ => "catchingUp",
        },
        "checks": {"log": status(&log), "store": status(&store), "search": status(&search)},
        "projections": projections,
    });
    if !stale.is_empty() {
        body["needsReplay"] = json!(stale);
    }
    let code = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
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
