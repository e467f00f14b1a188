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

/// 200 when the log, the store and the search index answer; 503 naming what does not.
/// The body also tells, per projection, whether it has caught up with the log.
async fn readiness(State(state): State<AppState>) -> Response {
    let s = state.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let log = s.log.check().map_err(|e| e.to_string());
        let store = s.store.check().map_err(|e| e.to_string());
        let search = s.search_index().map(|_| ()).map_err(|e| e.to_string());
        let caught_up = |checkpoints: &projections::Checkpoints| {
            (0..s.log.partitions()).all(|part| {
                let at = checkpoints.get(&part).copied().unwrap_or(0);
                s.log.read(part, at, 1).map(|e| e.is_empty()).unwrap_or(false)
            })
        };
        let mut projections: Vec<Value> = s
            .progress
            .iter()
            .map(|(model, rx)| {
                let p = rx.borrow().clone();
                json!({"model": model, "caughtUp": caught_up(&p.checkpoints), "applied": p.applied})
            })
            .collect();
        // Shared models built by other processes: their checkpoints are in the store.
        for model in projections::catalog::SHARED_MODELS.iter().filter(|m| !s.progress.iter().any(|(p, _)| p == *m)) {
            let checkpoints = s.store.active_version(model).and_then(|v| match v {
                Some(v) => s.store.checkpoints(&store::consumer_name(model, v)),
                None => Ok(Default::default()),
            });
            projections.push(match checkpoints {
                Ok(c) => json!({"model": model, "caughtUp": caught_up(&c), "builtElsewhere": true}),
                Err(e) => json!({"model": model, "caughtUp": false, "builtElsewhere": true, "error": e.to_string()}),
            });
        }
        (log, store, search, projections)
    })
    .await;
    let Ok((log, store, search, projections)) = checked else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"}))).into_response();
    };
    let status = |r: &Result<(), String>| match r {
        Ok(()) => json!("ok"),
        Err(e) => json!({"error": e}),
    };
    let ready = log.is_ok() && store.is_ok() && search.is_ok();
    let body = json!({
        "status": if ready { "ok" } else { "unavailable" },
        "checks": {"log": status(&log), "store": status(&store), "search": status(&search)},
        "projections": projections,
    });
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
