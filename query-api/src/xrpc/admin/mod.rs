//! `pub.svc.admin.*`: the admin surface. This module: roles, the audit trail, alpha
//! applications, system health and metrics, and the bootstrap of the first admins from
//! `ADMIN_DIDS`; [`content`]: counts, users, content listings and take-downs; [`dlq`]: the
//! dead letters; [`operations`]: backfill operations; [`hosts`]: event sources and
//! repository hosts; [`moderation`]: warnings and violations.

mod content;
mod dlq;
mod hosts;
mod moderation;
mod operations;

use event_schema::AccessAction;
use projections::access::read::AccessReader;
use projections::access::ROLES;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::auth::access_event;
use crate::body::Body;
use crate::eprints::{blocking, check_did};
use crate::error::ApiError;
use crate::state::AppState;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .procedure("pub.svc.admin.assignRole", Auth::Role("admin"), |c| async move { change_role(c, true).await })
        .procedure("pub.svc.admin.revokeRole", Auth::Role("admin"), |c| async move { change_role(c, false).await })
        .query_async("pub.svc.admin.getSystemHealth", Auth::Role("admin"), system_health)
        .query_async("pub.svc.admin.getNodeMetrics", Auth::Role("admin"), node_metrics)
        .query_async("pub.svc.admin.getPrometheusMetrics", Auth::Role("admin"), |c| async move {
            let text = crate::metrics::render(&c.state).await;
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            Body::json(&json!({"metrics": crate::metrics::as_json(&text), "timestamp": now}))
        })
        .query_async("pub.svc.admin.getEndpointMetrics", Auth::Role("admin"), |c| async move {
            Body::json(&json!({"metrics": crate::metrics::endpoint_metrics(&crate::metrics::render(&c.state).await)}))
        })
        .query_async("pub.svc.admin.getAuditLog", Auth::Role("admin"), |c| async move { get_audit_log(&c) })
        .query_async("pub.svc.admin.listAlphaApplications", Auth::Role("admin"), |c| async move { list_alpha(&c) })
        .query_async("pub.svc.admin.getAlphaApplication", Auth::Role("admin"), |c| async move { get_alpha(&c) })
        .procedure("pub.svc.admin.updateAlphaApplication", Auth::Role("admin"), update_alpha)
        .query_async("pub.svc.admin.getAlphaStats", Auth::Role("admin"), |c| async move { alpha_stats(&c) })
        .merge(content::routes())
        .merge(dlq::routes())
        .merge(operations::routes())
        .merge(hosts::routes())
        .merge(moderation::routes())
}

/// 404 `NotFoundError` (the admin contract's code for a missing resource).
pub(crate) fn not_found_error(message: impl Into<String>) -> ApiError {
    ApiError::new(axum::http::StatusCode::NOT_FOUND, crate::error::ErrorCode::NotFoundError, message)
}

/// `assignRole` and `revokeRole`: `{success, did, role}`, once the access model applied the
/// change (a command event with the acting admin).
async fn change_role(c: Call, grant: bool) -> Answer {
    let admin = c.caller()?.did.clone();
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    let role = c.input["role"].as_str().unwrap_or_default().to_owned();
    check_did("did", &did)?;
    if !ROLES.contains(&role.as_str()) {
        return Err(ApiError::invalid_param("role", format!("{role:?} is not one of {}", ROLES.join(", "))));
    }
    let change = if grant { AccessAction::RoleGranted { role: role.clone() } } else { AccessAction::RoleRevoked { role: role.clone() } };
    let nsid = if grant { "pub.svc.admin.assignRole" } else { "pub.svc.admin.revokeRole" };
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, change)).await?;
    let held = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.roles(&did))?.iter().any(|g| g.role == role);
    Body::json(&json!({"success": held == grant, "did": did, "role": role}))
}

/// `getAuditLog`: `{entries, cursor, total}`, newest first; `cursor` is the offset of the
/// next page (a number, as a string), `actorDid` keeps one actor's entries.
fn get_audit_log(c: &Call) -> Answer {
    let offset = offset(c)?;
    let limit = c.limit(50);
    let actor = c.params.str("actorDid");
    let (entries, total) = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.audit(limit, offset, actor))?;
    let mut out = json!({"entries": entries, "total": total});
    if offset + entries.len() < total {
        out["cursor"] = json!((offset + entries.len()).to_string());
    }
    Body::json(&out)
}

/// `getSystemHealth`: `{status, databases: [{name, healthy, latencyMs, error?}], readModels:
/// [{name, activeVersion, versions: [{version, state}]}], uptime, timestamp}`: each backend this node uses (the log, the shared store, this node's own
/// store when it is another, the search index), checked and timed now. `healthy` when all
/// answer, `unhealthy` when none does, `degraded` otherwise.
async fn system_health(c: Call) -> Answer {
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
                    .map(|v| v.into_iter().map(|(n, state)| json!({"version": n, "state": format!("{state:?}").to_lowercase()})).collect())
                    .unwrap_or_default();
                json!({"name": model, "activeVersion": registry.active_version(model).ok().flatten(), "versions": versions})
            })
            .collect::<Vec<Value>>()
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?;
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
        "uptime": c.state.started.elapsed().as_secs(),
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }))
}

/// `getNodeMetrics`: `{metrics: [{name, value, type, unit}], processInfo}`. The spec's
/// Node.js fields, mapped to what a Rust process has (docs/decisions.md, "Node metrics"):
/// `heapUsed` = the resident set and `heapTotal` = the virtual size (Rust has no separate
/// managed heap), `external` = 0, `cpuUser`/`cpuSystem` = CPU time in µs (`getrusage`),
/// `eventLoopLag` = how long a task spawned now waits for a tokio worker, in µs.
async fn node_metrics(c: Call) -> Answer {
    let start = std::time::Instant::now();
    tokio::spawn(async {}).await.map_err(|e| ApiError::internal(e.to_string()))?;
    let lag_us = start.elapsed().as_micros() as u64;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |field: &str| -> u64 {
        status.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
    };
    let (rss, vsz) = (kb("VmRSS:") * 1024, kb("VmSize:") * 1024);
    // SAFETY: getrusage writes into the struct it is given and reads nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    let runtime = tokio::runtime::Handle::current().metrics();
    let mut metrics = vec![
        json!({"name": "tokio_workers", "value": runtime.num_workers().to_string(), "type": "gauge", "unit": "threads"}),
        json!({"name": "tokio_alive_tasks", "value": runtime.num_alive_tasks().to_string(), "type": "gauge", "unit": "tasks"}),
        json!({"name": "tokio_global_queue_depth", "value": runtime.global_queue_depth().to_string(), "type": "gauge", "unit": "tasks"}),
        json!({"name": "process_resident_memory_bytes", "value": rss.to_string(), "type": "gauge", "unit": "bytes"}),
        json!({"name": "process_virtual_memory_bytes", "value": vsz.to_string(), "type": "gauge", "unit": "bytes"}),
        json!({"name": "process_threads", "value": kb("Threads:").to_string(), "type": "gauge", "unit": "threads"}),
    ];
    for (model, rx) in c.state.progress.iter() {
        let p = rx.borrow().clone();
        metrics.push(json!({"name": format!("svc_projection_applied_events{{model=\"{model}\"}}"), "value": p.applied.to_string(), "type": "counter", "unit": "events"}));
        metrics.push(json!({"name": format!("svc_projection_caught_up{{model=\"{model}\"}}"), "value": u8::from(p.caught_up).to_string(), "type": "gauge", "unit": "boolean"}));
    }
    Body::json(&json!({
        "metrics": metrics,
        "processInfo": {
            "pid": std::process::id(),
            "uptime": c.state.started.elapsed().as_secs(),
            "heapUsed": rss,
            "heapTotal": vsz,
            "rss": rss,
            "external": 0,
            "cpuUser": micros(usage.ru_utime),
            "cpuSystem": micros(usage.ru_stime),
            "eventLoopLag": lag_us,
        },
    }))
}

/// A numeric-offset cursor (`0` when absent).
fn offset(c: &Call) -> Result<usize, ApiError> {
    match c.params.str("cursor") {
        None => Ok(0),
        Some(raw) => raw.parse().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing (a number)")),
    }
}

/// Every alpha application, newest first.
fn alpha_applications(c: &Call) -> Result<Vec<Value>, ApiError> {
    let mut all = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_applications())?;
    all.sort_by(|a, b| b["createdAt"].as_str().cmp(&a["createdAt"].as_str()));
    Ok(all)
}

/// `listAlphaApplications`: `{items, total, cursor?}`, newest first, of one `status` when given.
fn list_alpha(c: &Call) -> Answer {
    let start = offset(c)?;
    let status = c.params.str("status");
    let matching: Vec<Value> = alpha_applications(c)?.into_iter().filter(|a| status.is_none_or(|s| a["status"] == s)).collect();
    let items: Vec<&Value> = matching.iter().skip(start).take(c.limit(50)).collect();
    let mut out = json!({"items": items, "total": matching.len()});
    if start + items.len() < matching.len() {
        out["cursor"] = json!((start + items.len()).to_string());
    }
    Body::json(&out)
}

fn alpha_of(c: &Call, did: &str) -> Result<Value, ApiError> {
    check_did("did", did)?;
    blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_application(did))?
        .ok_or_else(|| not_found_error(format!("{did} has no alpha application")))
}

/// `getAlphaApplication`: the application of `did`; `NotFoundError` without one.
fn get_alpha(c: &Call) -> Answer {
    Body::json(&alpha_of(c, c.str("did"))?)
}

/// `updateAlphaApplication`: approve (grants `alpha-tester`), reject or revoke (withdraw
/// it); answers the updated application.
async fn update_alpha(c: Call) -> Answer {
    let admin = c.caller()?.did.clone();
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    alpha_of(&c, &did)?;
    let (status, role) = match c.input["action"].as_str() {
        Some("approve") => ("approved", AccessAction::RoleGranted { role: "alpha-tester".into() }),
        Some("reject") => ("rejected", AccessAction::RoleRevoked { role: "alpha-tester".into() }),
        Some("revoke") => ("revoked", AccessAction::RoleRevoked { role: "alpha-tester".into() }),
        _ => return Err(ApiError::invalid_param("action", "one of approve, reject, revoke")),
    };
    let nsid = "pub.svc.admin.updateAlphaApplication";
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, AccessAction::AlphaReviewed { status: status.into() }))
        .await?;
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, role)).await?;
    Body::json(&alpha_of(&c, &did)?)
}

/// `getAlphaStats`: counts by status, sector and career stage, per day over 30 days, total.
fn alpha_stats(c: &Call) -> Answer {
    let all = alpha_applications(c)?;
    let count = |field: &str| {
        let mut m = serde_json::Map::new();
        for a in &all {
            let key = a[field].as_str().unwrap_or("unknown").to_owned();
            let n = m.get(&key).and_then(Value::as_u64).unwrap_or(0) + 1;
            m.insert(key, json!(n));
        }
        Value::Object(m)
    };
    let since = (chrono::Utc::now() - chrono::Duration::days(30)).format("%Y-%m-%d").to_string();
    let mut days = std::collections::BTreeMap::<String, u64>::new();
    for a in &all {
        if let Some(day) = a["createdAt"].as_str().and_then(|t| t.get(..10)).filter(|d| *d >= since.as_str()) {
            *days.entry(day.to_owned()).or_default() += 1;
        }
    }
    let recent: Vec<Value> = days.into_iter().map(|(date, count)| json!({"date": date, "count": count})).collect();
    Body::json(&json!({
        "byStatus": count("status"),
        "bySector": count("sector"),
        "byCareerStage": count("careerStage"),
        "recentByDay": recent,
        "total": all.len(),
    }))
}

/// Grants the admin role to each of `dids` that does not hold it (at start, from
/// `ADMIN_DIDS`), as svc itself; the access model ignores a grant already held.
///
/// # Errors
/// When the model cannot be read or the log appended to.
pub async fn bootstrap(state: &AppState, dids: &[String]) -> Result<(), ApiError> {
    for did in dids {
        let held = blocking(state, || AccessReader::new(state.store.as_ref())?.roles(did))?.iter().any(|g| g.role == "admin");
        if held {
            tracing::info!(did, "admin (already)");
            continue;
        }
        let event = access_event(state, did, &state.auth.service_did, "ADMIN_DIDS", AccessAction::RoleGranted { role: "admin".into() });
        let log = state.log.clone();
        tokio::task::spawn_blocking(move || log.append(&[event]))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(ApiError::from_error)?;
        tracing::info!(did, "admin granted from ADMIN_DIDS");
    }
    Ok(())
}
