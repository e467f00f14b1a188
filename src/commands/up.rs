//! The long-running roles: `svc up` (all of them in one process), `svc project` and
//! `svc serve`.

use anyhow::Context as _;
use projections::catalog;
use tracing::info;

use super::service::Supervisor;
use super::{open_context, open_log, require_shared};
use crate::config::{BackfillCommand, IngestArgs, ProjectArgs, SeedArgs, UpArgs};
use crate::restart::Stopped;

/// `svc up`: projection workers and the API in one process.
///
/// On the embedded log one worker builds every model from one reading of the log. On Kafka
/// the shared models are built by a worker of the projectors' group (so `svc up` can run
/// beside `svc project` processes) and the search index by a worker of its own.
pub async fn up(args: UpArgs) -> anyhow::Result<Stopped> {
    let log = open_log(&args.data)?;
    let ctx = open_context(&args.data, true)?;
    let mut supervisor = Supervisor::new();
    let mut progress = Vec::new();
    let search_worker;
    let workers;
    if args.data.log_url.is_none() {
        let worker = super::service::worker(log.clone(), &ctx, &catalog::MODELS, args.batch_size)?;
        progress.extend(worker.progress());
        search_worker = worker.hold_handle();
        workers = vec![worker.hold_handle()];
        supervisor.spawn_worker(worker);
    } else {
        let member = log.join_group(super::DEFAULT_GROUP).context("failed to join the projectors' group")?;
        let shared = super::service::worker(log.clone(), &ctx, &catalog::SHARED_MODELS, args.batch_size)?.in_group(member);
        let node = super::service::worker(log.clone(), &ctx, &catalog::NODE_MODELS, args.batch_size)?;
        progress.extend(shared.progress());
        progress.extend(node.progress());
        search_worker = node.hold_handle();
        workers = vec![shared.hold_handle(), node.hold_handle()];
        supervisor.spawn_worker(shared);
        supervisor.spawn_worker(node);
    }
    supervisor.spawn_sources(&args.source, log.clone());
    supervisor.spawn_catch_up_progress(log.clone(), &progress);
    supervisor.spawn_release_after_catch_up(&progress, &ctx, args.restart_after_catch_up);
    query_api::metrics::refresh_on_scrape(crate::memory::record_gauges);
    supervisor.spawn_api(&args, log, &ctx, progress, workers, search_worker).await?;
    info!(data_dir = %args.data.data_dir.display(), "svc up");
    supervisor.run().await
}

/// `svc project`: builds the shared read models from the partitions its group assigns it.
pub async fn project(args: ProjectArgs) -> anyhow::Result<()> {
    require_shared(&args.data, "svc project")?;
    let log = open_log(&args.data)?;
    let ctx = open_context(&args.data, false)?;
    let member = log.join_group(&args.group).with_context(|| format!("failed to join the group {}", args.group))?;
    let worker = super::service::worker(log, &ctx, &catalog::SHARED_MODELS, args.batch_size)?.in_group(member);
    let mut supervisor = Supervisor::new();
    supervisor.spawn_worker(worker);
    info!(group = args.group, "svc project");
    supervisor.run().await.map(drop)
}

/// `svc serve`: the API over the shared read models, and this node's own search index built
/// by its own worker from every partition.
pub async fn serve(args: UpArgs) -> anyhow::Result<Stopped> {
    require_shared(&args.data, "svc serve")?;
    let log = open_log(&args.data)?;
    let ctx = open_context(&args.data, true)?;
    let worker = super::service::worker(log.clone(), &ctx, &catalog::NODE_MODELS, args.batch_size)?;
    let progress = worker.progress();
    let search_worker = worker.hold_handle();
    let mut supervisor = Supervisor::new();
    supervisor.spawn_worker(worker);
    supervisor.spawn_catch_up_progress(log.clone(), &progress);
    supervisor.spawn_release_after_catch_up(&progress, &ctx, args.restart_after_catch_up);
    query_api::metrics::refresh_on_scrape(crate::memory::record_gauges);
    supervisor.spawn_api(&args, log, &ctx, progress, vec![search_worker.clone()], search_worker).await?;
    info!(data_dir = %args.data.data_dir.display(), "svc serve");
    supervisor.run().await
}

/// `svc ingest`: appends the seed file, if any, then follows the live sources until stopped;
/// with none configured it is done.
pub async fn ingest(args: IngestArgs) -> anyhow::Result<()> {
    if let Some(file) = args.seed.clone() {
        let seed = SeedArgs {
            data: args.data.clone(),
            file,
            limit: args.limit,
            batch: args.batch,
            strict: false,
            social: args.social,
            taxonomy: args.social,
            imports: false,
            governance: args.governance.clone(),
        };
        tokio::task::spawn_blocking(move || super::seed(seed)).await??;
    }
    if args.source.firehose.is_none() && args.source.jetstream.is_none() {
        info!("nothing more to ingest: no live source is configured");
        return Ok(());
    }
    let log = open_log(&args.data)?;
    let mut supervisor = Supervisor::new();
    supervisor.spawn_sources(&args.source, log);
    info!("svc ingest");
    supervisor.run().await.map(drop)
}

/// `svc backfill did|pds`: prints one JSON line per repository; fails if any failed.
/// `svc backfill arxiv`: [`super::arxiv::harvest`].
pub async fn backfill(command: BackfillCommand) -> anyhow::Result<()> {
    use std::io::Write;
    let (args, did, pds) = match command {
        BackfillCommand::Did { args, did } => (args, Some(did), None),
        BackfillCommand::Pds { args, url } => (args, None, Some(url)),
        BackfillCommand::Arxiv(args) => return super::arxiv::harvest(args).await,
    };
    let log = open_log(&args.data)?;
    let resolver = args.network.resolver();
    let collections = &args.network.collections;
    let results = match (did, pds) {
        (Some(did), _) => vec![ingest::backfill::backfill_repo(log, &resolver, &did, collections).await],
        (_, Some(url)) => ingest::backfill::backfill_pds(log, &resolver, &url, collections).await?,
        _ => Vec::new(),
    };
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for result in results {
        let line = match result {
            Ok(r) => serde_json::json!({"did": r.did, "rev": r.rev, "records": r.records, "deletes": r.deletes}),
            Err(e) => {
                failed += 1;
                serde_json::json!({"error": e.to_string()})
            }
        };
        writeln!(out, "{line}")?;
    }
    if failed > 0 {
        anyhow::bail!("{failed} repositories could not be backfilled");
    }
    Ok(())
}
