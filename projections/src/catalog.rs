//! Every read model svc builds, by name: how to open its projection, make sure it has an
//! active version, and drop a version.

use std::sync::Arc;

use lexicons::Lexicons;
use store::Store;

use crate::eprints::{self, EprintsProjection};
use crate::search::{self, SearchIndexes, SearchProjection};
use crate::{Projection, ProjectionError};

/// The read models, in the order they are built.
pub const MODELS: &[&str] = &[eprints::MODEL, search::MODEL];

/// What projections need to open.
#[derive(Clone)]
pub struct Context {
    /// The read-model store (also holds every model's active-version pointer).
    pub store: Arc<dyn Store>,
    /// This node's search indexes.
    pub search: Arc<SearchIndexes>,
    /// The lexicons records are validated against.
    pub lexicons: Arc<Lexicons>,
}

/// How a projection will be driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Following the log live: changes become visible within about a second.
    Live,
    /// Rebuilding a version nobody reads yet: visibility does not matter until the end, so
    /// the search index commits only when flushed.
    Rebuild,
}

/// Opens the projection that builds `version` of `model`.
///
/// # Errors
/// [`ProjectionError::Corrupt`] for an unknown model; otherwise what opening fails with.
pub fn open(ctx: &Context, model: &str, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    match model {
        eprints::MODEL => Ok(Box::new(EprintsProjection::new(ctx.store.clone(), ctx.lexicons.clone(), version))),
        search::MODEL => Ok(Box::new(SearchProjection::open(&ctx.search, ctx.lexicons.clone(), version, mode)?)),
        other => Err(ProjectionError::Corrupt(format!("unknown read model {other}"))),
    }
}

/// The active version of `model`, creating and activating version 1 when it has none.
pub fn ensure_active(ctx: &Context, model: &str) -> Result<u32, ProjectionError> {
    if let Some(v) = ctx.store.active_version(model)? {
        return Ok(v);
    }
    let v = ctx.store.create_version(model)?;
    ctx.store.set_active_version(model, v)?;
    Ok(v)
}

/// Deletes every trace of one version of `model`.
pub fn drop_version(ctx: &Context, model: &str, version: u32) -> Result<(), ProjectionError> {
    match model {
        eprints::MODEL => ctx.store.drop_version(model, version, eprints::TABLES)?,
        search::MODEL => {
            ctx.search.remove(version)?;
            ctx.store.drop_version(model, version, &[])?;
        }
        other => return Err(ProjectionError::Corrupt(format!("unknown read model {other}"))),
    }
    Ok(())
}
