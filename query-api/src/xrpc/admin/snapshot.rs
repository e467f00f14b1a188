//! `createSnapshot` (beyond the contract): a snapshot of this node's search index, taken
//! while it serves, for a new query node to start from (`svc snapshot restore`).
//!
//! Not a command event: it changes no read model, and what it writes is this node's own.

use std::time::{Duration, Instant};

use projections::search::{self, snapshot};
use serde_json::json;

use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::xrpc::method::{Answer, Call};

/// `createSnapshot`: holds this node's projection worker, flushed, until the index's files
/// are listed into the snapshot's folder and the node store's copy has begun; answers once
/// the snapshot is complete (a request timed out before then leaves it to finish).
pub(super) async fn create_snapshot(c: Call) -> Answer {
    let settings = c.state.snapshots.clone().ok_or_else(|| {
        ApiError::new(ErrorCode::ServiceUnavailable, "this node builds no search index of its own: no snapshot can be taken here")
    })?;
    let asked = c.input.get("name").and_then(|n| n.as_str()).map(str::to_owned);
    if let Some(name) = &asked {
        check_name(name)?;
    }
    if asked.as_ref().is_some_and(|name| settings.dir.join(name).exists()) {
        return Err(ApiError::invalid_param("name", "a snapshot of that name exists already"));
    }
    std::fs::create_dir_all(&settings.dir)
        .map_err(|e| ApiError::internal(format!("failed to create the snapshot folder {}: {e}", settings.dir.display())))?;

    let held = settings.worker.hold().await.map_err(|e| match e {
        projections::ProjectionError::Stopped => {
            ApiError::new(ErrorCode::ServiceUnavailable, "this node's projection worker is not running")
        }
        e => ApiError::from(e),
    })?;
    let held_at = Instant::now();
    let version = held
        .model(search::MODEL)
        .ok_or_else(|| ApiError::internal("the worker held for a snapshot does not build the search index"))?
        .version;
    let name = asked.unwrap_or_else(|| format!("search-v{version}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")));
    let to = settings.dir.join(&name);
    let (node, root) = (c.state.node.clone(), c.state.search.root().to_owned());
    let target = to.clone();
    let (written, held_for) = tokio::task::spawn_blocking(move || {
        let mut held = Some(held);
        let mut held_for = None;
        let written = snapshot::write(node.as_ref(), &root, version, &target, &mut || {
            held.take();
            held_for = Some(held_at.elapsed());
        });
        let held_for = held_for.unwrap_or_else(|| held_at.elapsed());
        // Logged here: a request timed out meanwhile no longer waits for this task.
        match &written {
            Ok(w) => tracing::info!(snapshot = %target.display(), version, bytes = w.bytes, held_ms = millis(held_for), "snapshot of the search index taken"),
            Err(e) => tracing::warn!(snapshot = %target.display(), version, error = %e, "a snapshot of the search index failed"),
        }
        (written, held_for)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the snapshot's task failed: {e}")))?;
    let written = written.map_err(|e| match e {
        snapshot::SnapshotError::Refused(why) => ApiError::invalid_request(why),
        e => ApiError::internal(format!("failed to write the snapshot {}: {e}", to.display())),
    })?;
    let m = &written.manifest;
    let checkpoints: Vec<_> = m.checkpoints.iter().map(|(p, o)| json!({"partition": p, "offset": o})).collect();
    Body::json(&json!({
        "name": name,
        "path": to.display().to_string(),
        "model": m.model,
        "version": m.version,
        "checkpoints": checkpoints,
        "bytes": written.bytes,
        "linked": written.linked,
        "heldMs": millis(held_for),
        "createdAt": m.created_at,
    }))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A snapshot's folder name: letters, digits, `.`, `_` and `-`, not starting with `.`.
fn check_name(name: &str) -> Result<(), ApiError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > 100 || name.starts_with('.') || !name.chars().all(allowed) {
        return Err(ApiError::invalid_param("name", "letters, digits, '.', '_' and '-' (1 to 100), not starting with '.'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn a_snapshot_name_is_one_plain_folder_name() {
        for good in ["a", "search-v3-20261128T230000.123Z", "node_2.daily"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "..", "a/b", "../x", "a b", "é", &"x".repeat(101)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
