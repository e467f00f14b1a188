//! Every read model svc builds, by name: how to open its projection, make sure it has an
//! active version, follow it, and drop a version.
//!
//! Each model is one line of [`CATALOG`]. Two kinds of read model:
//! - **shared** ([`SHARED_MODELS`]): rows in the read-model store, built once by the
//!   projectors (`svc project`) and read by every query node;
//! - **node-local** ([`NODE_MODELS`]): the search index, which every query node (`svc serve`)
//!   builds for itself from its own reading of the log. Its versions are registered in the
//!   node's own store ([`Context::node`]), so each node rebuilds and swaps its own.
//!
//! On the embedded defaults both stores are the one store of the data directory.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use lexicons::Lexicons;
use store::{Store, TableRef};
use tracing::info;

use crate::access::{self, AccessProjection};
use crate::activity::{self, ActivityProjection};
use crate::admin::{self, AdminProjection};
use crate::attached::{self, AttachedProjection};
use crate::eprints::{self, EprintsProjection};
use crate::governance::{self, GovernanceModel};
use crate::imports::{self, ImportsModel};
use crate::inbox::{self, InboxProjection};
use crate::interactions::{self, InteractionsModel};
use crate::search::{self, SearchIndexes, SearchProjection};
use crate::usage::{self, UsageProjection};
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Where a read model lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Rows in the shared read-model store, built once by the projectors.
    Shared,
    /// Built by every query node for itself.
    Node,
}

/// Opens the projection that builds one version of a model.
pub type OpenFn = fn(&Context, u32, Mode) -> Result<Box<dyn Projection>, ProjectionError>;

/// One read model: its name, where it lives, its store tables and how to open its projection.
pub struct ModelSpec {
    /// The name.
    pub name: &'static str,
    /// Shared or per node.
    pub place: Place,
    /// Its tables in the store (dropped with a version).
    pub tables: &'static [&'static str],
    /// Its aggregates: the tables whose rows are written by the events of several keys
    /// (counts, sizes, rankings). Their writes carry the projector's clock, not the event's
    /// log position ([`crate::staged`]).
    pub aggregates: &'static [&'static str],
    /// Opens the projection that builds a version.
    pub open: OpenFn,
    /// The layout of the model's rows. A release that changes what the model writes, or how,
    /// raises it; a version built with an older format is reported as needing a replay
    /// ([`needs_replay`]). The search index has its own schema check and rebuilds itself.
    pub format: u32,
}

/// Every read model, in the order they are built: one line each.
#[rustfmt::skip]
pub const CATALOG: &[ModelSpec] = &[
    // 4: an author's listing rows and author search's word rows hold nothing their keys hold.
    // 5: nor do the users' rows under their DIDs and handles. 6: the listings' keys hold
    // eprint URIs short. 9: no `users` rows: author search is the search model's (its 6).
    ModelSpec { name: eprints::MODEL, place: Place::Shared, tables: eprints::TABLES, aggregates: eprints::AGGREGATES, open: open_eprints, format: 9 },
    // 2: endorsements listed per contribution type; deleted reviews and annotations kept as
    // placeholders. 4: knowledge graph nodes, edges and reconciliations. 6: discovery
    // settings and profile configurations.
    ModelSpec { name: attached::MODEL, place: Place::Shared, tables: attached::TABLES, aggregates: attached::AGGREGATES, open: open_attached, format: 6 },
    // 2: the audit trail filed by actor and counted.
    ModelSpec { name: access::MODEL, place: Place::Shared, tables: access::TABLES, aggregates: access::AGGREGATES, open: open_access, format: 2 },
    // 2: take-downs and reports kept as violations.
    ModelSpec { name: admin::MODEL, place: Place::Shared, tables: admin::TABLES, aggregates: admin::AGGREGATES, open: open_admin, format: 2 },
    ModelSpec { name: governance::MODEL, place: Place::Shared, tables: governance::TABLES, aggregates: governance::AGGREGATES, open: open_governance, format: 1 },
    ModelSpec { name: inbox::MODEL, place: Place::Shared, tables: inbox::TABLES, aggregates: inbox::AGGREGATES, open: open_inbox, format: 1 },
    ModelSpec { name: usage::MODEL, place: Place::Shared, tables: usage::TABLES, aggregates: usage::AGGREGATES, open: open_usage, format: 4 },
    ModelSpec { name: activity::MODEL, place: Place::Shared, tables: activity::TABLES, aggregates: activity::AGGREGATES, open: open_activity, format: 1 },
    ModelSpec { name: interactions::MODEL, place: Place::Shared, tables: interactions::TABLES, aggregates: interactions::AGGREGATES, open: open_interactions, format: 1 },
    ModelSpec { name: imports::MODEL, place: Place::Shared, tables: imports::TABLES, aggregates: imports::AGGREGATES, open: open_imports, format: 1 },
    // 2: documents carry their eprint's citation count. 4: hit summaries kept with the
    // sources in the node's store, not in the index's doc store. 5: no record kept: hits
    // and remade documents read the eprints model's record rows. 6: an index of the users
    // beside it, for author search (`search::people`).
    ModelSpec { name: search::MODEL, place: Place::Node, tables: search::TABLES, aggregates: search::AGGREGATES, open: open_search, format: 6 },
];

fn open_eprints(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(EprintsProjection::new(ctx.store.clone(), ctx.lexicons.clone(), version, mode)))
}

fn open_attached(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(AttachedProjection::new(ctx.store.clone(), ctx.lexicons.clone(), version, mode)))
}

fn open_access(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(AccessProjection::new(ctx.store.clone(), version, mode)))
}

fn open_admin(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(AdminProjection::new(ctx.store.clone(), version, mode)))
}

fn open_governance(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(GovernanceModel::projection(ctx.store.clone(), version, mode))
}

fn open_inbox(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(InboxProjection::new(ctx.store.clone(), ctx.lexicons.clone(), version, mode)))
}

fn open_usage(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(UsageProjection::new(ctx.store.clone(), ctx.lexicons.clone(), version, mode)))
}

fn open_activity(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(ActivityProjection::new(ctx.store.clone(), version, mode)))
}

fn open_interactions(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(InteractionsModel::projection(ctx.store.clone(), version, mode))
}

fn open_imports(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(ImportsModel::projection(ctx.store.clone(), version, mode))
}

fn open_search(ctx: &Context, version: u32, mode: Mode) -> Result<Box<dyn Projection>, ProjectionError> {
    Ok(Box::new(SearchProjection::open(&ctx.search, ctx.node.clone(), ctx.store.clone(), ctx.lexicons.clone(), version, mode)?))
}

fn names(place: Option<Place>) -> Vec<&'static str> {
    CATALOG.iter().filter(|m| place.is_none_or(|p| m.place == p)).map(|m| m.name).collect()
}

/// Every read model, in the order they are built.
pub static MODELS: LazyLock<Vec<&'static str>> = LazyLock::new(|| names(None));

/// The read models kept in the shared store.
pub static SHARED_MODELS: LazyLock<Vec<&'static str>> = LazyLock::new(|| names(Some(Place::Shared)));

/// The read models that park events they cannot apply (those with a `dead_letters` table).
pub static DEAD_LETTER_MODELS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| CATALOG.iter().filter(|m| m.tables.contains(&"dead_letters")).map(|m| m.name).collect());

/// The read models every query node keeps for itself.
pub static NODE_MODELS: LazyLock<Vec<&'static str>> = LazyLock::new(|| names(Some(Place::Node)));

/// The aggregates of `model` ([`ModelSpec::aggregates`]); none for a model it does not know.
pub fn aggregates(model: &str) -> &'static [&'static str] {
    spec(model).map_or(&[], |m| m.aggregates)
}

fn spec(model: &str) -> Result<&'static ModelSpec, ProjectionError> {
    CATALOG.iter().find(|m| m.name == model).ok_or_else(|| ProjectionError::Corrupt(format!("unknown read model {model}")))
}

/// What projections need to open.
#[derive(Clone)]
pub struct Context {
    /// The read-model store shared by every node (rows and versions of the shared models).
    pub store: Arc<dyn Store>,
    /// This node's own store: the versions of its node-local models. On the embedded
    /// defaults the same store as [`Context::store`].
    pub node: Arc<dyn Store>,
    /// This node's search indexes.
    pub search: Arc<SearchIndexes>,
    /// The lexicons records are validated against.
    pub lexicons: Arc<Lexicons>,
}

impl Context {
    /// A context with one store for both the shared and the node-local models (the embedded
    /// defaults), search indexes under `search_root` and the built-in lexicons.
    pub fn single(store: Arc<dyn Store>, search_root: &std::path::Path) -> Context {
        Context::with_node(store.clone(), store, search_root)
    }

    /// A context with the shared `store` and this node's own `node` store (holding its
    /// node-local models and their search indexes' tables), search indexes under
    /// `search_root` and the built-in lexicons.
    pub fn with_node(store: Arc<dyn Store>, node: Arc<dyn Store>, search_root: &std::path::Path) -> Context {
        let search = Arc::new(SearchIndexes::new(search_root, store.clone()));
        Context { store, node, search, lexicons: Arc::new(Lexicons::builtin()) }
    }

    /// Each distinct store: the shared one, and this node's when it is another.
    pub fn stores(&self) -> Vec<Arc<dyn Store>> {
        if Arc::ptr_eq(&self.store, &self.node) {
            vec![self.store.clone()]
        } else {
            vec![self.store.clone(), self.node.clone()]
        }
    }

    /// The store where `model`'s versions and active-version pointer are registered.
    pub fn registry(&self, model: &str) -> &Arc<dyn Store> {
        if CATALOG.iter().any(|m| m.name == model && m.place == Place::Node) {
            &self.node
        } else {
            &self.store
        }
    }
}

/// Whether records of `collection` can be taken down by an admin (`deleteContent`) or a
/// service (`sync.deleteRecord`): eprint submissions, and the attached collections marked
/// deletable in their table.
pub fn deletable(collection: &str) -> bool {
    collection == lexicons::SUBMISSION || attached::collections::find(collection).is_some_and(|c| c.deletable)
}

/// The read model named `name`, as its static name.
///
/// # Errors
/// [`ProjectionError::Corrupt`] for a name that is no read model.
pub fn model(name: &str) -> Result<&'static str, ProjectionError> {
    spec(name).map(|m| m.name)
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
    (spec(model)?.open)(ctx, version, mode)
}

/// The active version of `model`, creating and activating a first version when it has none.
///
/// Several processes may start at once on a fresh store: each creates a version, then all
/// activate the lowest version still building, and one that finds a version already active
/// drops its own and uses that one. (Store writes here are not compare-and-set, so two
/// processes interleaving exactly can still both activate; the live workers then follow
/// whichever was activated last, see [`FollowActive`].)
pub fn ensure_active(ctx: &Context, model: &str) -> Result<u32, ProjectionError> {
    let registry = ctx.registry(model);
    if let Some(v) = registry.active_version(model)? {
        if let Some((built, current)) = needs_replay(ctx, model)? {
            tracing::warn!(model, built, current, "this read model was built by an older svc with another row format: run `svc replay --model {model}` (readiness answers 503 until then)");
        }
        if model != search::MODEL || ctx.search.is_current(v)? {
            return Ok(v);
        }
        // An index of an older schema (this node's own): a new version replaces it, built
        // from the log; readiness holds traffic off the node until it is complete.
        let new = create_version(ctx, model)?;
        registry.set_active_version(model, new)?;
        tracing::warn!(model, old = v, new, "the search index was built by an older svc with another schema; rebuilding it from the log");
        if let Err(e) = drop_version(ctx, model, v) {
            tracing::warn!(model, version = v, error = %e, "could not drop the old search index; it stays retired");
        }
        return Ok(new);
    }
    let mine = create_version(ctx, model)?;
    settle(ctx, model, mine)
}

/// After this process created version `mine` of a model that had no active version: the
/// version to use. Another process may have raced it: when one is active now, `mine` is
/// dropped unless it is that one; otherwise the oldest version being built is activated.
fn settle(ctx: &Context, model: &str, mine: u32) -> Result<u32, ProjectionError> {
    let registry = ctx.registry(model);
    let versions = registry.versions(model)?;
    if let Some((&active, _)) = versions.iter().find(|(_, s)| **s == store::VersionState::Active) {
        // Two processes starting at once may both have been handed the same number (a store
        // without transactions numbers versions by reading the highest): then the active
        // version is this one too, and it must not be dropped.
        if active == mine {
            return Ok(active);
        }
        if let Err(e) = drop_version(ctx, model, mine) {
            tracing::warn!(model, version = mine, error = %e, "could not drop a version created in a race; it stays building");
        }
        return Ok(active);
    }
    let first = versions.iter().find(|(_, s)| **s == store::VersionState::Building).map_or(mine, |(v, _)| *v);
    registry.set_active_version(model, first)?;
    Ok(registry.active_version(model)?.unwrap_or(first))
}

/// Deletes every trace of one version of `model`.
pub fn drop_version(ctx: &Context, model: &str, version: u32) -> Result<(), ProjectionError> {
    let spec = spec(model)?;
    if model == search::MODEL {
        ctx.search.remove(version)?;
    }
    let tables: Vec<&str> = spec.tables.iter().copied().chain([META_TABLE]).collect();
    ctx.registry(model).drop_version(model, version, &tables)?;
    Ok(())
}

/// The table of a version's own facts (its format), beside the model's tables.
const META_TABLE: &str = "meta";

fn meta(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, META_TABLE)
}

/// Registers the next version of `model` (state building) with the format this build
/// writes.
///
/// # Errors
/// When the registry cannot be written.
pub fn create_version(ctx: &Context, model: &str) -> Result<u32, ProjectionError> {
    let spec = spec(model)?;
    let registry = ctx.registry(model);
    let version = registry.create_version(model)?;
    let mut columns = store::Columns::new();
    columns.insert("format".into(), store::Value::Int(i64::from(spec.format)));
    let mut batch = store::Batch::default();
    batch.put(&meta(model, version), "format", Vec::new(), columns, 0);
    registry.apply(batch)?;
    Ok(version)
}

/// The format `version` of `model` was built with: 1 for a version made before formats
/// were recorded (the layout every model had then).
///
/// # Errors
/// When the registry cannot be read.
pub fn format_of(ctx: &Context, model: &str, version: u32) -> Result<u32, ProjectionError> {
    let row = ctx.registry(model).get(&meta(model, version), "format", &[])?;
    Ok(row.and_then(|c| c.get("format").and_then(store::Value::as_int)).map_or(1, |f| f as u32))
}

/// Whether the active version of `model` was built with an older format than this build
/// writes: `Some((built, current))` when `svc replay --model <model>` is needed. Only the
/// shared models are checked (the search index rebuilds itself).
///
/// # Errors
/// When the registry cannot be read.
pub fn needs_replay(ctx: &Context, model: &str) -> Result<Option<(u32, u32)>, ProjectionError> {
    let spec = spec(model)?;
    if spec.place != Place::Shared {
        return Ok(None);
    }
    let Some(active) = ctx.registry(model).active_version(model)? else { return Ok(None) };
    let built = format_of(ctx, model, active)?;
    Ok((built < spec.format).then_some((built, spec.format)))
}

/// How often a live projection looks for a new active version.
const FOLLOW_INTERVAL: Duration = Duration::from_secs(1);

/// A live projection of the active version of its model that moves to the next active
/// version when a rebuild (possibly in another process) swaps one in: within about a second
/// it flushes the old version and goes on from the new version's checkpoints.
pub struct FollowActive {
    ctx: Context,
    model: &'static str,
    inner: Box<dyn Projection>,
    looked: Instant,
}

impl FollowActive {
    /// Opens the live projection of `model`'s active version (activating version 1 when the
    /// model has none).
    ///
    /// # Errors
    /// What [`ensure_active`] or [`open`] fail with.
    pub fn open(ctx: &Context, model: &str) -> Result<FollowActive, ProjectionError> {
        let model = self::model(model)?;
        let version = ensure_active(ctx, model)?;
        let inner = open(ctx, model, version, Mode::Live)?;
        Ok(FollowActive { ctx: ctx.clone(), model, inner, looked: Instant::now() })
    }
}

impl Projection for FollowActive {
    fn model(&self) -> &'static str {
        self.model
    }

    fn version(&self) -> u32 {
        self.inner.version()
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        self.inner.checkpoints()
    }

    fn durable_checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        self.inner.durable_checkpoints()
    }

    fn refresh(&mut self) -> Result<(), ProjectionError> {
        if self.looked.elapsed() < FOLLOW_INTERVAL {
            return Ok(());
        }
        self.refresh_now()
    }

    fn refresh_now(&mut self) -> Result<(), ProjectionError> {
        self.looked = Instant::now();
        let Some(active) = self.ctx.registry(self.model).active_version(self.model)? else { return Ok(()) };
        if active != self.inner.version() {
            self.inner.flush()?;
            info!(model = self.model, from = self.inner.version(), to = active, "a new version was swapped in; following it");
            self.inner = open(&self.ctx, self.model, active, Mode::Live)?;
        }
        Ok(())
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        self.inner.apply_batch(batch)
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn ctx(dir: &std::path::Path) -> Context {
        Context::single(Arc::new(store::EmbeddedStore::open(dir).unwrap()), &dir.join("search"))
    }

    /// Two processes starting at once on a store that numbers versions by reading the
    /// highest may both be handed the same number; the one that finds it already active must
    /// keep it, not drop it as a version of its own created in a race.
    #[test]
    fn a_race_handed_the_active_version_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let v = ensure_active(&ctx, eprints::MODEL).unwrap();
        assert_eq!(settle(&ctx, eprints::MODEL, v).unwrap(), v);
        let versions = ctx.store.versions(eprints::MODEL).unwrap();
        assert_eq!(versions.get(&v), Some(&store::VersionState::Active), "{versions:?}");
    }

    /// A version another process created in the race is dropped, the active one kept.
    #[test]
    fn a_version_created_in_a_race_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let active = ensure_active(&ctx, eprints::MODEL).unwrap();
        let mine = create_version(&ctx, eprints::MODEL).unwrap();
        assert_eq!(settle(&ctx, eprints::MODEL, mine).unwrap(), active);
        let versions = ctx.store.versions(eprints::MODEL).unwrap();
        assert_eq!(versions.get(&active), Some(&store::VersionState::Active));
        assert_ne!(versions.get(&mine), Some(&store::VersionState::Building), "{versions:?}");
    }

    /// A search index an older svc built with another schema (its documents storing the
    /// URI whole, say) is replaced at start by a new version, built from the log, and its
    /// folder removed; an index of this schema is kept.
    #[test]
    fn a_search_index_of_another_schema_is_replaced_by_a_new_version() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let v = ensure_active(&ctx, search::MODEL).unwrap();
        ctx.search.open(v).unwrap();
        assert_eq!(ensure_active(&ctx, search::MODEL).unwrap(), v, "an index of this schema stays");

        // What an older svc left: the version's folder holds an index of its schema.
        let old = search::index_dir(ctx.search.root(), v);
        ctx.search.remove(v).unwrap();
        let mut b = tantivy::schema::Schema::builder();
        b.add_text_field("uri", tantivy::schema::STRING | tantivy::schema::STORED);
        std::fs::create_dir_all(&old).unwrap();
        tantivy::Index::create_in_dir(&old, b.build()).unwrap();
        let new = ensure_active(&ctx, search::MODEL).unwrap();
        assert_ne!(new, v);
        assert_eq!(ctx.store.active_version(search::MODEL).unwrap(), Some(new));
        assert!(!old.exists(), "the old index's folder is removed");
        assert!(ctx.search.is_current(new).unwrap());
    }
}
