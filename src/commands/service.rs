//! What the long-running roles share: projection workers, the HTTP API, and a supervisor
//! that stops everything when any task ends or a shutdown signal arrives.

use std::future::Future;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use eventlog::EventLog;
use projections::catalog::{Context, FollowActive};
use projections::{HoldHandle, Progress, Projection, Worker, WorkerConfig, WorkerThreads};
use query_api::{AppState, ServiceIdentity, Shared, SnapshotSettings, SyncSettings};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::config::{SourceArgs, UpArgs};
use crate::restart::Stopped;

/// How long tasks may take to drain after a shutdown starts.
const DRAIN: Duration = Duration::from_secs(10);

/// Progress of a node's projection workers, by model.
pub type ProgressFeeds = Vec<(&'static str, watch::Receiver<Progress>)>;

/// A worker for the live projections of `models`, each following its active version.
pub fn worker(log: Arc<dyn EventLog>, ctx: &Context, models: &[&str], batch_size: usize) -> anyhow::Result<Worker> {
    release_held_letters(log.as_ref(), ctx.store.as_ref(), models).context("failed to release the events held back behind dead letters")?;
    let mut projections: Vec<Box<dyn Projection>> = Vec::new();
    for model in models {
        projections.push(Box::new(FollowActive::open(ctx, model).with_context(|| format!("failed to open projection {model}"))?));
    }
    Ok(Worker::new(log, projections, WorkerConfig { batch_size, ..WorkerConfig::default() })?)
}

/// Appends the releases of the letters an earlier svc held back behind a dead letter of
/// their key ([`projections::deadletter::held_releases`]), once per start of the projections.
fn release_held_letters(log: &dyn EventLog, store: &dyn store::Store, models: &[&str]) -> anyhow::Result<()> {
    let (held, events) = projections::deadletter::held_releases(store, log, models)?;
    if held > 0 {
        info!(held, "releasing the events an earlier svc held back behind dead letters (nothing waits behind one now)");
        log.append(&events)?;
    }
    Ok(())
}

/// Long-running tasks under one cancellation token.
pub struct Supervisor {
    cancel: CancellationToken,
    tasks: JoinSet<anyhow::Result<()>>,
    /// The threads of the workers spawned so far.
    worker_threads: Vec<WorkerThreads>,
    /// The API's listening socket, once it serves: handed over by a restart.
    listener: Option<OwnedFd>,
    /// Why everything stops, set once by whichever asks first: a shutdown signal wins over
    /// a restart asked for after it.
    stopping: Arc<OnceLock<Stopping>>,
}

/// Why a supervisor stops (a task failing aside).
#[derive(Clone, Copy)]
enum Stopping {
    /// A shutdown signal: the process exits.
    Signal,
    /// A restart in place after a first catch-up of this many events.
    Restart(u64),
}

impl Supervisor {
    pub fn new() -> Supervisor {
        Supervisor {
            cancel: CancellationToken::new(),
            tasks: JoinSet::new(),
            worker_threads: Vec::new(),
            listener: None,
            stopping: Arc::default(),
        }
    }

    /// Runs a task until it ends or the token it is given is cancelled.
    pub fn spawn<F>(&mut self, task: impl FnOnce(CancellationToken) -> F)
    where
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        self.tasks.spawn(task(self.cancel.clone()));
    }

    /// Runs a projection worker.
    pub fn spawn_worker(&mut self, worker: Worker) {
        crate::memory::dedicate_arena(&worker.threads());
        self.worker_threads.push(worker.threads());
        self.spawn(|token| async move { worker.run(token).await.context("projection worker stopped") });
    }

    /// Shows the first catch-up of each model of `progress` (from a fresh seed, or after
    /// downtime): events applied against what the log held, until the model is complete.
    /// (Not a supervised task: it ends on its own, which must not stop the service.)
    pub fn spawn_catch_up_progress(&mut self, log: Arc<dyn EventLog>, progress: &ProgressFeeds) {
        for (model, rx) in progress.clone() {
            tokio::spawn(show_catch_up(model, log.clone(), rx, self.cancel.clone()));
        }
    }

    /// Once every model of `progress` has first caught up: after a catch-up of at least
    /// `restart_after` events (0: never) stops everything to restart in place
    /// ([`crate::restart`]; not in a process that is itself a restart, nor once a shutdown
    /// was asked for), when the search index's merge after the catch-up is done; after a
    /// smaller one lets the stores of `ctx` drop the caches the catch-up filled and hands
    /// the memory the catch-up used (batches, staging maps, index writer buffers, cached
    /// pages, all freed by then) back to the operating system. Each worker thread flushes
    /// the allocator's cache of blocks it freed (only a thread can flush its own), then
    /// every arena's free pages are purged: call it after spawning the workers.
    pub fn spawn_release_after_catch_up(&mut self, progress: &ProgressFeeds, ctx: &Context, restart_after: u64) {
        let feeds = progress.clone();
        let token = self.cancel.clone();
        let threads = self.worker_threads.clone();
        let stores = ctx.stores();
        let stopping = self.stopping.clone();
        let search = ctx.search.clone();
        tokio::spawn(async move {
            let mut caught_up = 0;
            for (_, mut rx) in feeds {
                tokio::select! {
                    _ = token.cancelled() => return,
                    done = rx.wait_for(|p| p.caught_up) => match done {
                        Ok(p) => caught_up = caught_up.max(p.applied),
                        Err(_) => return,
                    },
                }
            }
            if restart_after > 0 && caught_up >= restart_after && !crate::restart::is_restarted() {
                // The catch-up's end merges the search index's segments in the background:
                // a restart would lose the merge (and searches would walk every segment).
                let mut wait = Duration::from_secs(1);
                loop {
                    tokio::select! {
                        _ = token.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                    if !search.merging() {
                        break;
                    }
                    wait = Duration::from_millis(200);
                }
                if stopping.set(Stopping::Restart(caught_up)).is_ok() {
                    info!(events = caught_up, "restarting in place to hand back the memory the catch-up left with the allocator");
                    token.cancel();
                }
                return;
            }
            let _ = tokio::task::spawn_blocking(move || {
                for store in stores {
                    if let Err(e) = store.release_caches() {
                        warn!(error = %e, "could not release the store's caches after the catch-up");
                    }
                }
                crate::memory::release_free_memory(&threads);
            })
            .await;
        });
    }

    /// Follows the network sources of `source`, if any, into `log`.
    pub fn spawn_sources(&mut self, source: &SourceArgs, log: Arc<dyn EventLog>) {
        if let Some(url) = &source.jetstream {
            let handles = Arc::new(source.network.handles());
            let jetstream = ingest::jetstream::Jetstream::new(url, source.network.collections.clone(), log.clone(), handles);
            self.spawn(|token| async move { jetstream.run(token).await.context("the Jetstream follower stopped") });
        }
        let Some(url) = source.firehose.clone() else { return };
        let resolver = Arc::new(source.network.resolver());
        let config = ingest::firehose::FirehoseConfig { url, collections: source.network.collections.clone() };
        let firehose = ingest::firehose::Firehose::new(config, log, resolver, Arc::new(source.network.handles()));
        self.spawn(|token| async move { firehose.run(token).await.context("the firehose follower stopped") });
    }

    /// Binds `args.listen` and serves the API from `ctx`, reporting `progress` in readiness;
    /// `workers` are this process's projection workers (held while a reindex swaps), of
    /// which `search_worker` builds this node's search index (held for a snapshot).
    pub async fn spawn_api(
        &mut self,
        args: &UpArgs,
        log: Arc<dyn EventLog>,
        ctx: &Context,
        progress: ProgressFeeds,
        workers: Vec<HoldHandle>,
        search_worker: HoldHandle,
    ) -> anyhow::Result<()> {
        let listener = match crate::restart::inherited_listener()? {
            Some(inherited) => tokio::net::TcpListener::from_std(inherited)?,
            None => tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("failed to listen on {}", args.listen))?,
        };
        let local = listener.local_addr()?;
        self.listener = Some(listener.as_fd().try_clone_to_owned()?);
        let resolver = Arc::new(args.source.network.resolver());
        let public_url = args.public_url.clone().unwrap_or_else(|| format!("http://{local}"));
        let tap = Arc::new(query_api::tap::Tap::new(log.clone(), args.tap.settings()));
        let state = AppState::new(Shared {
            log,
            store: ctx.store.clone(),
            node: ctx.node.clone(),
            search: ctx.search.clone(),
            openapi: Arc::new(query_api::openapi::document(&ctx.lexicons)),
            lexicons: ctx.lexicons.clone(),
            identity: Arc::new(ServiceIdentity {
                did: args.service_did.clone(),
                public_url: public_url.clone(),
                governance_did: args.governance.governance_did.clone(),
                consensus: projections::governance::rule_named(&args.governance_consensus).unwrap_or(projections::governance::RULE),
            }),
            progress: Arc::new(progress),
            auth: Arc::new(identity(args, ctx, &resolver, &public_url)?),
            sync: Arc::new(sync_settings(args, resolver)),
            searches: query_api::state::search_slots(),
            started: std::time::Instant::now(),
            complete_models: Default::default(),
            lag_history: Default::default(),
            operation_stale_after: std::time::Duration::from_secs(args.operation_stale_seconds),
            appender: Default::default(),
            sources: args.external.sources(),
            registries: Arc::new(args.external.registries(&public_url)),
            platforms: Arc::new(args.external.platforms()),
            tap,
            workers,
            snapshots: Some(Arc::new(SnapshotSettings { dir: args.snapshot_dir(), worker: search_worker })),
            kept_answers: Arc::new(args.http.kept_answers()),
        });
        let admins = args.auth.admins();
        if !admins.is_empty() {
            query_api::xrpc::admin::bootstrap(&state, &admins)
                .await
                .map_err(|e| anyhow::anyhow!("failed to grant the admin role to ADMIN_DIDS: {}", e.message()))?;
        }
        if !args.auth.governance_admins.is_empty() {
            query_api::xrpc::governance::bootstrap(&state, &args.auth.governance_admins).await.map_err(|e| {
                anyhow::anyhow!("failed to grant the governance role administrator to --governance-admins: {}", e.message())
            })?;
        }
        {
            let (state, every) = (state.clone(), Duration::from_secs(args.communities_seconds));
            self.spawn(|token| async move {
                query_api::communities::run(state, every, async move { token.cancelled().await }).await;
                Ok(())
            });
        }
        {
            let state = state.clone();
            self.spawn(|token| async move {
                tokio::select! {
                    () = query_api::lag::sample_forever(state) => {}
                    () = token.cancelled() => {}
                }
                Ok(())
            });
        }
        if let Some(publisher) = state.sync.publisher.clone() {
            let state = state.clone();
            self.spawn(|token| async move {
                query_api::publish::run(state, publisher, async move { token.cancelled().await }).await;
                Ok(())
            });
        }
        let app = query_api::app(state);
        let limits = args.http.limits();
        self.spawn(|token| async move {
            query_api::server::serve(listener, app, limits, async move { token.cancelled().await }).await.context("http server failed")
        });
        info!(listen = %local, "serving the API");
        Ok(())
    }

    /// Waits until a task ends (an error is the result), a shutdown signal arrives or a
    /// restart is asked for, then cancels and drains the rest.
    pub async fn run(mut self) -> anyhow::Result<Stopped> {
        let (token, stopping) = (self.cancel.clone(), self.stopping.clone());
        tokio::spawn(async move {
            shutdown_signal().await;
            info!("shutdown requested");
            let _ = stopping.set(Stopping::Signal);
            token.cancel();
        });
        let mut result = Ok(());
        if let Some(first) = self.tasks.join_next().await {
            if let Err(e) = flatten(first) {
                error!(error = format!("{e:#}"), "task failed; shutting down");
                result = Err(e);
            }
        }
        self.cancel.cancel();
        let tasks = &mut self.tasks;
        let drain = async {
            while let Some(done) = tasks.join_next().await {
                if let Err(e) = flatten(done) {
                    error!(error = format!("{e:#}"), "task failed while draining");
                }
            }
        };
        if tokio::time::timeout(DRAIN, drain).await.is_err() {
            error!("tasks did not drain in time; aborting them");
            self.tasks.abort_all();
        }
        result?;
        if let Some(&Stopping::Restart(events)) = self.stopping.get() {
            info!(events, "svc stopped to restart");
            return Ok(Stopped::Restart(self.listener.take(), events));
        }
        info!("svc stopped");
        Ok(Stopped::Done)
    }
}

/// The sync operations' settings, with the DID resolver they share with service auth.
fn sync_settings(args: &UpArgs, resolver: Arc<atproto::identity::Resolver>) -> SyncSettings {
    SyncSettings {
        fetcher: ingest::fetch::RecordFetcher::new(resolver),
        collections: args.source.network.collections.clone(),
        approved: args.approved_services.clone(),
        publisher: publisher(args),
    }
}

/// svc's governance repository on its host, when one is configured.
fn publisher(args: &UpArgs) -> Option<Arc<query_api::publish::Publisher>> {
    let p = &args.publish;
    let (host, password) = (p.governance_pds.as_deref()?, p.governance_password.as_deref()?);
    let did = &args.governance.governance_did;
    let identifier = p.governance_identifier.as_deref().unwrap_or(did);
    Some(Arc::new(query_api::publish::Publisher {
        writer: atproto::repo_writer::RepoWriter::new(host, did, identifier, password),
        every: Duration::from_secs(p.governance_publish_seconds),
    }))
}

/// The identity layer: service auth (its used-token ledger in this node's own store), the
/// key file, the rate limits.
fn identity(
    args: &UpArgs,
    ctx: &Context,
    resolver: &Arc<atproto::identity::Resolver>,
    public_url: &str,
) -> anyhow::Result<query_api::identity::Identity> {
    let ledger = query_api::identity::replay::ReplayLedger::new(ctx.node.clone());
    let service = Arc::new(query_api::identity::ServiceAuth::new(&args.service_did, resolver.clone(), ledger));
    let key_file = args.auth.key_file(&args.data);
    let keys = query_api::identity::keys::KeySet::load_or_create(&key_file)?;
    let limits = query_api::identity::limits::RateLimits::new(&args.auth.limits());
    Ok(query_api::identity::Identity::new(
        &args.service_did,
        public_url,
        Arc::new(args.source.network.handles()),
        service,
        Arc::new(keys),
        limits,
        args.approved_services.clone(),
    ))
}

/// Events not applied yet by a model at `checkpoints` (0 when the log's end is unknown).
async fn behind(log: &Arc<dyn EventLog>, checkpoints: &projections::Checkpoints) -> u64 {
    let (log, checkpoints) = (log.clone(), checkpoints.clone());
    let behind = tokio::task::spawn_blocking(move || log.events_behind(&checkpoints));
    behind.await.ok().and_then(Result::ok).unwrap_or(0)
}

/// Shows one model's first catch-up until it is complete (the worker logs that moment).
async fn show_catch_up(model: &'static str, log: Arc<dyn EventLog>, mut rx: watch::Receiver<Progress>, token: CancellationToken) {
    let first = rx.borrow().clone();
    if first.caught_up {
        return;
    }
    let waiting = behind(&log, &first.checkpoints).await;
    if waiting == 0 {
        return;
    }
    info!(model, events = waiting, "catching up with the log");
    let display = crate::progress::Progress::new(model, "events", waiting);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            changed = rx.changed() => if changed.is_err() { return },
            _ = tick.tick() => {}
        }
        let now = rx.borrow().clone();
        if now.caught_up {
            return;
        }
        display.set_total(now.applied + behind(&log, &now.checkpoints).await);
        display.set(now.applied);
    }
}

fn flatten(r: Result<anyhow::Result<()>, tokio::task::JoinError>) -> anyhow::Result<()> {
    r.map_err(|e| anyhow::anyhow!("task panicked: {e}"))?
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
