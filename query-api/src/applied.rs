//! Waiting until the read models this node serves have applied an event, so that a
//! procedure's caller reads its own write.

use std::time::{Duration, Instant};

use event_schema::Position;
use projections::Checkpoints;

use crate::state::AppState;

/// How often the store's checkpoints are read while waiting.
const POLL: Duration = Duration::from_millis(20);

fn passed(checkpoints: &Checkpoints, position: Position) -> bool {
    checkpoints.get(&position.partition).is_some_and(|next| *next > position.offset)
}

/// Whether every model was applied `position`: this node's own workers by their progress, the
/// shared models built elsewhere by their checkpoints in the store.
fn all_applied(state: &AppState, position: Position) -> bool {
    let local = state.progress.iter().all(|(_, rx)| passed(&rx.borrow().checkpoints, position));
    local
        && projections::catalog::SHARED_MODELS.iter().filter(|m| !state.progress.iter().any(|(p, _)| p == *m)).all(|model| {
            match state.store.active_version(model) {
                Ok(Some(v)) => state.store.checkpoints(&store::consumer_name(model, v)).is_ok_and(|c| passed(&c, position)),
                _ => false,
            }
        })
}

/// Waits up to `timeout` for `position` to be applied everywhere this node reads; `false`
/// when the time ran out.
pub async fn wait(state: &AppState, position: Position, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let s = state.clone();
        if tokio::task::spawn_blocking(move || all_applied(&s, position)).await.unwrap_or(false) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}
