//! `getSystemHealth`: each backend this node uses, checked and timed now, and the read
//! models' versions.

use serde_json::{json, Value};

use crate::body::Body;
use crate::error::ApiError;
use crate::xrpc::method::{Answer, Call};

/// `getSystemHealth`: `{status, databases: [{name, healthy, latencyMs, error?}], readModels:
/// [{name, activeVersion, versions: [{version, state}]}], uptime, timestamp}`: each backend this node uses (the log, the shared store, this node's own
/// store when it is another, the search index), checked and timed now. `healthy` when all
/// answer, `unhealthy` when none does, `degraded` otherwise.
pub(super) async fn system_health(c: Call) -> Answer {
    let s = c.state.clone();
    let databases = tokio::task::spawn_blocking(move || {
        let timed = |name: String, check: &dyn Fn() -> Result<(), String>| {
            let start = std::time::Instant::now();
            let result = check();
            let mut entry = json!({"name": name, "healthy": result.is_ok(), "latencyMs": start.elapsed().as_millis() as u64});
            if let Err(e) = result {
                entry["error"] = json!(e);
            }
            entry
        };
        let mut out = vec![
            timed(format!("log ({})", s.log.backend()), &|| s.log.check().map_err(|e| e.to_string())),
            timed(format!("store ({})", s.store.backend()), &|| s.store.check().map_err(|e| e.to_string())),
        ];
        if !std::sync::Arc::ptr_eq(&s.store, &s.node) {
            out.push(timed(format!("node store ({})", s.node.backend()), &|| s.node.check().map_err(|e| e.to_string())));
        }
        out.push(timed("search index (tantivy)".into(), &|| match s.search_index() {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("no active version yet".into()),
            Err(e) => Err(e.to_string()),
        }));
        out
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?;
    let s = c.state.clone();
    let models = tokio::task::spawn_blocking(move || {
        let ctx = s.context();
        projections::catalog::MODELS
            .iter()
            .map(|model| {
                let registry = ctx.registry(model);
                let versions: Vec<Value> = registry
                    .versions(model)
                    .map(|v| {
                        v.into_iter()
                            .map(|(n, state)| {
                                let format = projections::catalog::format_of(&ctx, model, n).ok();
                                json!({"version": n, "state": format!("{state:?}").to_lowercase(), "format": format})
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let needs_replay = projections::catalog::needs_replay(&ctx, model).ok().flatten().is_some();
                json!({"name": model, "activeVersion": registry.active_version(model).ok().flatten(), "versions": versions, "needsReplay": needs_replay})
            })
            .collect::<Vec<Value>>()
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?;
    let s = c.state.clone();
    let lags = tokio::task::spawn_blocking(move || crate::lag::measure(&s)).await.map_err(|e| ApiError::internal(e.to_string()))?;
    let models: Vec<Value> = models
        .into_iter()
        .map(|mut m| {
            if let Some(l) = lags.iter().find(|l| m["name"] == l.model) {
                m["lag"] = json!(l.lag);
                m["behindMs"] = json!(l.behind_ms);
            }
            m
        })
        .collect();
    let up = databases.iter().filter(|d| d["healthy"] == true).count();
    let status = match up {
        n if n == databases.len() => "healthy",
        0 => "unhealthy",
        _ => "degraded",
    };
    Body::json(&json!({
        "status": status,
        "databases": databases,
        "readModels": models,
        "lagHistory": c.state.lag_history.samples(),
        "uptime": c.state.started.elapsed().as_secs(),
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }))
}
