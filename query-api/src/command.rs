//! Procedures as command events (principle 1): append the event, then wait, bounded, until
//! this node's read models have applied it (principle 7), so the caller's next read sees
//! its own write.
//!
//! Appends go through one [`Appender`] per node: the events of the calls that arrive while
//! one write is in flight are written together in the next (group commit), so a burst of
//! procedures costs a few durable writes, not one each. A log whose appends return in
//! microseconds ([`EventLog::appends_block`]: the embedded log acknowledging once the kernel
//! holds the journal's write) is written on the caller's thread instead: handing each call
//! to the writer's task and a blocking thread cost more than the write (the scheduler's
//! wake-ups were 14 % of the machine under recordView load, docs/performance.md).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use event_schema::{NewEvent, Position};
use eventlog::EventLog;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

use crate::error::ApiError;
use crate::state::AppState;

/// The most calls one write gathers.
const MAX_GATHERED: usize = 1_024;

/// One call's events and where its positions go.
struct Pending {
    events: Vec<NewEvent>,
    reply: oneshot::Sender<Result<Vec<Position>, ApiError>>,
}

/// Writes the events of concurrent calls to the log together (see the module docs).
#[derive(Default)]
pub struct Appender {
    queue: OnceLock<mpsc::UnboundedSender<Pending>>,
}

impl Appender {
    /// Appends `events` to `log` (durably, as the log's append is), with those of the calls
    /// waiting at the same moment; their positions, in order.
    pub async fn append(&self, log: &Arc<dyn EventLog>, events: Vec<NewEvent>) -> Result<Vec<Position>, ApiError> {
        if !log.appends_block() {
            return log.append(&events).map_err(ApiError::from_error);
        }
        let queue = self.queue.get_or_init(|| writer(log.clone()));
        let (reply, answer) = oneshot::channel();
        queue.send(Pending { events, reply }).map_err(|_| ApiError::internal("the log writer stopped"))?;
        answer.await.map_err(|_| ApiError::internal("the log writer stopped"))?
    }
}

/// The task that writes: takes every call waiting, writes their events in one append, and
/// answers each with its own positions (or the write's error).
fn writer(log: Arc<dyn EventLog>) -> mpsc::UnboundedSender<Pending> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Pending>();
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut calls = vec![first];
            while calls.len() < MAX_GATHERED {
                match rx.try_recv() {
                    Ok(p) => calls.push(p),
                    Err(_) => break,
                }
            }
            let sizes: Vec<usize> = calls.iter().map(|c| c.events.len()).collect();
            let mut replies = Vec::with_capacity(calls.len());
            let mut events = Vec::with_capacity(sizes.iter().sum());
            for call in calls {
                events.extend(call.events);
                replies.push(call.reply);
            }
            let log = log.clone();
            let written = tokio::task::spawn_blocking(move || log.append(&events))
                .await
                .map_err(|e| ApiError::internal(e.to_string()))
                .and_then(|r| r.map_err(ApiError::from_error));
            match written {
                Ok(positions) => {
                    let mut positions = positions.into_iter();
                    for (reply, n) in replies.into_iter().zip(sizes) {
                        let _ = reply.send(Ok(positions.by_ref().take(n).collect()));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        }
    });
    tx
}

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
    let what = events.last().map(|e| format!("{} {}", e.payload.kind().as_str(), e.key)).unwrap_or_default();
    let positions = state.appender.append(&state.log, events).await?;
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

/// Appends `event` durably and answers its position without waiting for the read models:
/// for the uses `metrics.record*` records, whose callers do not read them back (their
/// counts follow within about a second).
pub async fn append_unwaited(state: &AppState, event: NewEvent) -> Result<Position, ApiError> {
    let positions = state.appender.append(&state.log, vec![event]).await?;
    positions.into_iter().next().ok_or_else(|| ApiError::internal("the log returned no position"))
}
