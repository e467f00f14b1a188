//! A stream's cursor kept in the log: a consumer checkpoint (partition 0) committed right
//! after the events it covers are appended.

use std::sync::Arc;

use event_schema::NewEvent;
use eventlog::EventLog;

use crate::IngestError;

/// The cursor stored under `consumer`, if any.
pub(crate) async fn stored(log: &Arc<dyn EventLog>, consumer: &str) -> Result<Option<u64>, IngestError> {
    let (log, consumer) = (log.clone(), consumer.to_owned());
    tokio::task::spawn_blocking(move || log.checkpoint(&consumer, 0))
        .await
        .map_err(|e| IngestError::Stream(e.to_string()))?
        .map_err(Into::into)
}

/// Appends `events` (taken from `pending`), then stores `cursor` under `consumer`.
pub(crate) async fn append_then_store(
    log: &Arc<dyn EventLog>,
    consumer: &str,
    pending: &mut Vec<NewEvent>,
    cursor: Option<u64>,
) -> Result<(), IngestError> {
    if pending.is_empty() && cursor.is_none() {
        return Ok(());
    }
    let events = std::mem::take(pending);
    let (log, consumer) = (log.clone(), consumer.to_owned());
    tokio::task::spawn_blocking(move || -> Result<(), IngestError> {
        if !events.is_empty() {
            log.append(&events)?;
        }
        if let Some(c) = cursor {
            log.commit_checkpoint(&consumer, 0, c)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| IngestError::Stream(e.to_string()))?
}
