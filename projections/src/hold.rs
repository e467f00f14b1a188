//! Holding a running [`crate::Worker`] between two batches, with every projection flushed:
//! what its read models hold on disk then stays put until the hold is let go, so it can be
//! copied whole (a live snapshot of a node's search index) while queries go on, or a rebuild
//! can bring its new versions past it and swap them in (the worker then goes on from them at
//! once).

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::{Checkpoints, Projection, ProjectionError};

/// A request to hold: answered once the worker holds, or with why it could not.
pub(crate) type HoldRequest = oneshot::Sender<Result<Held, ProjectionError>>;

/// Asks a running worker to hold (see [`HoldHandle::hold`]); cheap to clone.
#[derive(Clone)]
pub struct HoldHandle(pub(crate) mpsc::Sender<HoldRequest>);

/// A worker held between batches, every projection flushed: nothing it builds changes on
/// disk until this is dropped. Queries go on meanwhile; new events wait in the log.
pub struct Held {
    /// Where each of the worker's read models stands, flushed.
    pub models: Vec<HeldModel>,
    _release: oneshot::Sender<()>,
}

/// One read model of a held worker.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldModel {
    /// The read model, e.g. `search`.
    pub model: &'static str,
    /// The version it builds.
    pub version: u32,
    /// Its durable checkpoints: what its files hold.
    pub checkpoints: Checkpoints,
}

impl Held {
    /// The held read model named `model`, if the worker builds it.
    pub fn model(&self, model: &str) -> Option<&HeldModel> {
        self.models.iter().find(|m| m.model == model)
    }
}

impl HoldHandle {
    /// Waits for the worker to finish its batch, flush every projection and hold.
    ///
    /// # Errors
    /// [`ProjectionError::Stopped`] if the worker is not running; the flush's error if it
    /// failed (the worker then goes on, and retries the flush with its next batch).
    pub async fn hold(&self) -> Result<Held, ProjectionError> {
        let (reply, answer) = oneshot::channel();
        self.0.send(reply).await.map_err(|_| ProjectionError::Stopped)?;
        answer.await.map_err(|_| ProjectionError::Stopped)?
    }
}

/// Flushes `projections` and answers `request`, then waits until the hold is let go (or
/// `cancel` fires). Runs on the worker's task between batches.
pub(crate) async fn hold_here(
    projections: Vec<Box<dyn Projection>>,
    request: HoldRequest,
    cancel: &CancellationToken,
) -> Result<Vec<Box<dyn Projection>>, ProjectionError> {
    let (projections, flushed) = tokio::task::spawn_blocking(move || {
        let mut projections = projections;
        let flushed = flush_all(&mut projections);
        (projections, flushed)
    })
    .await
    .map_err(|e| ProjectionError::Panicked(e.to_string()))?;
    match flushed {
        Ok(models) => {
            let (release, released) = oneshot::channel();
            if request.send(Ok(Held { models, _release: release })).is_ok() {
                tracing::info!("projection worker held for a copy of its read models");
                tokio::select! {
                    _ = released => {}
                    () = cancel.cancelled() => {}
                }
                tracing::info!("projection worker let go");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "a hold was asked for and the flush before it failed");
            let _ = request.send(Err(e));
        }
    }
    Ok(projections)
}

/// Flushes every projection; where each then stands.
fn flush_all(projections: &mut [Box<dyn Projection>]) -> Result<Vec<HeldModel>, ProjectionError> {
    projections.iter_mut().try_for_each(|p| p.flush())?;
    projections.iter().map(|p| Ok(HeldModel { model: p.model(), version: p.version(), checkpoints: p.durable_checkpoints()? })).collect()
}
