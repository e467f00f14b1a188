//! What every handler can reach.

use std::sync::Arc;

use eventlog::EventLog;
use ingest::fetch::RecordFetcher;
use lexicons::Lexicons;
use projections::search::{SearchIndex, SearchIndexes, MODEL as SEARCH_MODEL};
use projections::{Progress, ProjectionError};
use store::Store;
use tokio::sync::{watch, Semaphore};

use crate::identity::Identity;

/// The shared state of the API: a handle on [`Shared`], which every request clones (one
/// reference count, not one per field).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The handle on `shared`.
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What every handler can reach.
pub struct Shared {
    /// The event log (for readiness and lag).
    pub log: Arc<dyn EventLog>,
    /// The read-model store shared by every query node.
    pub store: Arc<dyn Store>,
    /// This node's own store: the versions of its search index.
    pub node: Arc<dyn Store>,
    /// The search indexes of this node.
    pub search: Arc<SearchIndexes>,
    /// The lexicons.
    pub lexicons: Arc<Lexicons>,
    /// The service's identity and public address.
    pub identity: Arc<ServiceIdentity>,
    /// Progress of this node's projection workers, by model.
    pub progress: Arc<Vec<(&'static str, watch::Receiver<Progress>)>>,
    /// The rendered OpenAPI document.
    pub openapi: Arc<serde_json::Value>,
    /// What the sync operations need.
    pub sync: Arc<SyncSettings>,
    /// The identity layer: credentials, roles, sessions, rate limits.
    pub auth: Arc<Identity>,
    /// Searches running at once ([`search_slots`]); the others wait their turn, in order.
    pub searches: Arc<Semaphore>,
    /// When this node started serving (for uptimes).
    pub started: std::time::Instant,
    /// The shared models built elsewhere that readiness has seen complete since the start.
    pub complete_models: std::sync::Mutex<std::collections::BTreeSet<&'static str>>,
    /// The read models' lag over the last hour ([`crate::lag::sample_forever`] fills it).
    pub lag_history: crate::lag::LagHistory,
    /// How long a running backfill operation may go without a report before it is taken
    /// for interrupted (its node stopped) and reported failed.
    pub operation_stale_after: std::time::Duration,
    /// Writes procedures' command events to the log, gathering concurrent calls.
    pub appender: crate::command::Appender,
    /// The external scholarly sources papers are imported from.
    pub sources: sources::Sources,
    /// The registries of people, organizations and subjects (autocompletion, author ids).
    pub registries: Arc<sources::registries::Registries>,
    /// The code and data platforms eprints link to (the integrations route).
    pub platforms: Arc<sources::platforms::Platforms>,
    /// The live tap of the log (`pub.svc.log.subscribe`).
    pub tap: Arc<crate::tap::Tap>,
    /// The projection workers of this process: a reindex holds them while it swaps its
    /// versions in (see `replay::Pause`).
    pub workers: Vec<projections::HoldHandle>,
    /// Where `pub.svc.admin.createSnapshot` writes, and the worker it holds; `None` on a
    /// node that builds no search index of its own.
    pub snapshots: Option<Arc<SnapshotSettings>>,
    /// The answers this node keeps per state of the store, for the methods whose answers
    /// are kept (`--kept-answers-mib`).
    pub kept_answers: Arc<crate::xrpc::kept::KeptAnswers>,
}

/// What `pub.svc.admin.createSnapshot` needs on a node.
pub struct SnapshotSettings {
    /// The folder snapshots are written into, one folder each.
    pub dir: std::path::PathBuf,
    /// The projection worker building this node's search index.
    pub worker: projections::HoldHandle,
}

/// Two search slots per core. A search is almost all CPU work: running many more at once
/// than there are cores only shares the cores out, so every search of a burst finishes
/// late and the long ones very late. Queued in order instead, each waits for the ones
/// before it and then runs at nearly full speed. One slot per core left the cores idle
/// between searches (14 % fewer searches per second at 32 connections on 2 cores); two
/// kept the throughput and still cut p99 latency by more than half
/// (`scripts/loadtest/ab.sh`, docs/performance.md).
pub fn search_slots() -> Arc<Semaphore> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    Arc::new(Semaphore::new(2 * cores))
}

/// What the `pub.svc.sync.*` operations need.
pub struct SyncSettings {
    /// Reads records from their repository hosts, proven.
    pub fetcher: RecordFetcher,
    /// The collections svc indexes (NSIDs, or prefixes ending in `.`).
    pub collections: Vec<String>,
    /// The DIDs of services allowed to refresh and delete any repository's records.
    pub approved: Vec<String>,
    /// svc's governance repository, written as its owner, when its host and credentials
    /// are configured ([`crate::publish`]).
    pub publisher: Option<Arc<crate::publish::Publisher>>,
}

/// The service's DID, the address clients reach it at, and its governance repository.
#[derive(Debug, Clone)]
pub struct ServiceIdentity {
    /// The service DID, e.g. `did:web:svc.example.com`.
    pub did: String,
    /// The public base URL, e.g. `https://svc.example.com`.
    pub public_url: String,
    /// The governance repository's DID: its graph nodes and edges are the shared knowledge
    /// graph (anyone else's are their personal graph).
    pub governance_did: String,
    /// The consensus rule its proposals are tallied by (docs/spec details §7).
    pub consensus: projections::governance::Rule,
}

impl Shared {
    /// What this node's projections open with: the stores, its search indexes, the lexicons.
    pub fn context(&self) -> projections::catalog::Context {
        projections::catalog::Context {
            store: self.store.clone(),
            node: self.node.clone(),
            search: self.search.clone(),
            lexicons: self.lexicons.clone(),
        }
    }

    /// Whether `model` (built by other processes) has been complete since this node started,
    /// given whether it is complete `now`; remembers the first time it is.
    pub fn complete_once(&self, model: &'static str, now: bool) -> bool {
        let Ok(mut seen) = self.complete_models.lock() else { return now };
        if now {
            seen.insert(model);
        }
        seen.contains(model)
    }

    /// The active version of the search index, if one was activated.
    pub fn search_index(&self) -> Result<Option<Arc<SearchIndex>>, ProjectionError> {
        match self.node.active_version(SEARCH_MODEL)? {
            Some(v) => Ok(Some(self.search.open(v)?)),
            None => Ok(None),
        }
    }
}
