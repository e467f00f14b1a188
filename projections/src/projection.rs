use std::collections::BTreeMap;

use crate::{EventBatch, ProjectionError};

/// The next log offset to read, per log partition.
pub type Checkpoints = BTreeMap<u32, u64>;

/// Builds one read model from events.
///
/// Implementations persist their effects and the checkpoints handed to
/// [`Projection::apply_batch`] atomically (or, for the search index, in one commit), so that
/// the durable checkpoints always describe exactly the events whose effects are durable.
/// Applying an event twice must leave the same read model as applying it once.
pub trait Projection: Send {
    /// The read model's name, e.g. `eprints`.
    fn model(&self) -> &'static str;

    /// The version of the read model this instance builds.
    fn version(&self) -> u32;

    /// Where this projection resumes: the checkpoints of the events it has applied.
    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError>;

    /// The checkpoints whose effects are durable and visible to queries. Equal to
    /// [`Projection::checkpoints`] for projections that persist every batch.
    fn durable_checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        self.checkpoints()
    }

    /// Called before each batch is read, while nothing is in flight: a projection may change
    /// what it builds here (see [`crate::catalog::FollowActive`]), since the batch is read
    /// after its checkpoints.
    fn refresh(&mut self) -> Result<(), ProjectionError> {
        Ok(())
    }

    /// [`Projection::refresh`] at once, however recently it last looked: after its worker
    /// was held, a rebuild may have swapped in a version the next batch must go to.
    fn refresh_now(&mut self) -> Result<(), ProjectionError> {
        self.refresh()
    }

    /// Applies a batch of events (in order per partition) and records the batch's
    /// [`EventBatch::next`] as the new checkpoints.
    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError>;

    /// Makes everything applied so far durable and visible. Called when the worker has caught
    /// up with the log; projections that persist in every batch need do nothing.
    fn flush(&mut self) -> Result<(), ProjectionError> {
        Ok(())
    }
}
