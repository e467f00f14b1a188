//! `svc up`: the projection workers and the query API in one process, supervised: when any
//! task ends, everything drains and stops.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use projections::catalog;
use projections::{Worker, WorkerConfig};
use query_api::{AppState, ServiceIdentity};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use super::{open_context, open_log};
use crate::config::UpArgs;

/// How long tasks may take to drain after a shutdown starts.
const DRAIN: Duration = Duration::from_secs(10);

pub async fn run(args: UpArgs) -> anyhow::Result<()> {
    let log = open_log(&args.data)?;
    let ctx = open_context(&args.data)?;
    let cancel = CancellationToken::new();
    let mut tasks: JoinSet<anyhow::Result<()>> = JoinSet::new();

    let mut projections = Vec::new();
    for model in catalog::MODELS {
        let version = catalog::ensure_active(&ctx, model)?;
        projections
            .push(catalog::open(&ctx, model, version, catalog::Mode::Live).with_context(|| format!("failed to open projection {model}"))?);
    }
    let worker = Worker::new(log.clone(), projections, WorkerConfig { batch_size: args.batch_size, ..WorkerConfig::default() });
    let progress = worker.progress();
    let token = cancel.clone();
    tasks.spawn(async move { worker.run(token).await.context("projection worker stopped") });

    let listener = tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("failed to listen on {}", args.listen))?;
    let local = listener.local_addr()?;
    let state = AppState {
        log: log.clone(),
        store: ctx.store.clone(),
        search: ctx.search.clone(),
        openapi: Arc::new(query_api::openapi::document(&ctx.lexicons)),
        lexicons: ctx.lexicons.clone(),
        identity: Arc::new(ServiceIdentity {
            did: args.service_did.clone(),
            public_url: args.public_url.clone().unwrap_or_else(|| format!("http://{local}")),
        }),
        progress: Arc::new(progress),
    };
    let app = query_api::app(state);
    let token = cancel.clone();
    tasks.spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { token.cancelled().await }).await.context("http server failed")
    });
    info!(listen = %local, data_dir = %args.data.data_dir.display(), "svc up");

    let token = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        info!("shutdown requested");
        token.cancel();
    });

    let mut result = Ok(());
    if let Some(first) = tasks.join_next().await {
        if let Err(e) = flatten(first) {
            error!(error = format!("{e:#}"), "task failed; shutting down");
            result = Err(e);
        }
    }
    cancel.cancel();
    let drain = async {
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = flatten(done) {
                error!(error = format!("{e:#}"), "task failed while draining");
            }
        }
    };
    if tokio::time::timeout(DRAIN, drain).await.is_err() {
        error!("tasks did not drain in time; aborting them");
        tasks.abort_all();
    }
    info!("svc stopped");
    result
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
