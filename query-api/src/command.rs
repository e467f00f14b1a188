//! Procedures as command events (principle 1): append the event, then wait, bounded, until
//! this node's read models have applied it (principle 7), so the caller's next read sees
//! its own write.

use std::time::Duration;

use event_schema::{NewEvent, Position};
use tracing::warn;

use crate::error::ApiError;
use crate::state::AppState;

/// How long a procedure waits for the read models to apply its event.
pub const APPLY_WAIT: Duration = Duration::from_secs(5);

/// Appends `event` and waits up to [`APPLY_WAIT`] for the read models to apply it; the
/// event is in the log either way (a slow projection only delays its effect). Its position.
pub async fn append(state: &AppState, event: NewEvent) -> Result<Position, ApiError> {
    let positions = append_all(state, vec![event]).await?;
    positions.into_iter().next().ok_or_else(|| ApiError::internal("the log returned no position"))
}

/// Appends `events` together and waits, as [`append`] does, until the read models applied
/// the last of them. Their positions.
pub async fn append_all(state: &AppState, events: Vec<NewEvent>) -> Result<Vec<Position>, ApiError> {
    let log = state.log.clone();
    let what = events.last().map(|e| format!("{} {}", e.payload.kind().as_str(), e.key)).unwrap_or_default();
    let positions = tokio::task::spawn_blocking(move || log.append(&events))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(ApiError::from_error)?;
    let mut last = std::collections::BTreeMap::new();
    for p in positions.iter().copied() {
        let at = last.entry(p.partition).or_insert(p);
        at.offset = at.offset.max(p.offset);
    }
    if last.is_empty() {
        return Err(ApiError::internal("the log returned no position"));
    }
    for position in last.into_values() {
        if !crate::applied::wait(state, position, APPLY_WAIT).await {
            warn!(event = what, "the read models did not apply a command event in time (it is in the log)");
            break;
        }
    }
    Ok(positions)
}
