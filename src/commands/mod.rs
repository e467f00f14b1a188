//! The subcommands.

pub mod admin;
pub mod arxiv;
pub mod export;
pub mod log;
pub mod service;
pub mod snapshot;
pub mod up;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use eventlog::{EmbeddedLog, EventLog, KafkaConfig, KafkaLog};
use projections::catalog::Context;
use store::{EmbeddedStore, ScyllaConfig, ScyllaStore, Store};
use tracing::info;

use crate::config::{CompactArgs, DataArgs, DeadLetterArgs, ReplayArgs, SeedArgs};

/// The work group of projectors unless `--group` says otherwise.
pub const DEFAULT_GROUP: &str = "svc.project";

/// Roles as separate processes share a log and a store: the embedded ones belong to one
/// process.
pub fn require_shared(data: &DataArgs, role: &str) -> anyhow::Result<()> {
    if data.log_url.is_none() || data.store_url.is_none() {
        anyhow::bail!(
            "{role} runs one role against a shared log and store: set --log kafka://… and --store scylla://… \
             (SVC_LOG, SVC_STORE); on the embedded defaults run every role in one process with `svc up`"
        );
    }
    Ok(())
}

/// Opens the event log: Kafka when `--log` is set, else the embedded log of the data directory.
pub fn open_log(data: &DataArgs) -> anyhow::Result<Arc<dyn EventLog>> {
    if let Some(url) = &data.log_url {
        let config = KafkaConfig::from_url(url, data.partitions)?;
        let log = KafkaLog::open(config).with_context(|| format!("failed to open the Kafka log at {url}"))?;
        return Ok(Arc::new(log));
    }
    let log = EmbeddedLog::open_with(&data.data_dir, data.partitions, data.log_ack.into())
        .with_context(|| format!("failed to open the event log in {} (is another svc using it?)", data.data_dir.display()))?;
    Ok(Arc::new(log))
}

/// Opens the event log to read: Kafka when `--log` is set, else the data directory's log,
/// read-only beside a running svc if there is one (it reads up to the writer's latest
/// commit). A log no process has open that needs a repair (its writer was killed) is
/// opened as its writer, which repairs it, as `svc up` would.
pub fn open_log_to_read(data: &DataArgs) -> anyhow::Result<Arc<dyn EventLog>> {
    if data.log_url.is_some() {
        return open_log(data);
    }
    match EmbeddedLog::open_read_only(&data.data_dir) {
        Ok(log) => Ok(Arc::new(log)),
        Err(read_only) => open_log(data).with_context(|| format!("(opened to read only: {read_only})")),
    }
}

/// Opens the read-model store: ScyllaDB when `--store` is set, else the embedded store of
/// the data directory.
pub fn open_store(data: &DataArgs) -> anyhow::Result<Arc<dyn Store>> {
    if let Some(url) = &data.store_url {
        let config = ScyllaConfig::from_url(url)?;
        let store = ScyllaStore::connect(&config).with_context(|| format!("failed to open the ScyllaDB store at {url}"))?;
        return Ok(Arc::new(store));
    }
    let store = EmbeddedStore::open_with(&data.data_dir, data.caches())
        .with_context(|| format!("failed to open the store in {} (is another svc using it?)", data.data_dir.display()))?;
    Ok(Arc::new(store))
}

/// Opens the read-model context (store, this node's store, search indexes, lexicons).
///
/// With a shared store, a node that keeps node-local models (`with_node_models`: a query
/// node, `svc up`) registers their versions in an embedded store in its data directory; a
/// projector keeps none and opens nothing there, so several can share a working directory.
pub fn open_context(data: &DataArgs, with_node_models: bool) -> anyhow::Result<Context> {
    let store = open_store(data)?;
    let search_root = data.data_dir.join("search");
    if data.store_url.is_none() || !with_node_models {
        return Ok(Context::single(store, &search_root));
    }
    let node = EmbeddedStore::open_with(&data.data_dir, data.caches())
        .with_context(|| format!("failed to open this node's store in {} (is another svc using it?)", data.data_dir.display()))?;
    Ok(Context::with_node(store, Arc::new(node), &search_root))
}

/// Refuses a data directory that holds no `file` of svc's (a mistyped `--data-dir`):
/// commands that only read must not create one. Only `seed` and `up` create one.
pub(crate) fn require_data(data: &DataArgs, file: &str, what: &str) -> anyhow::Result<()> {
    let dir = &data.data_dir;
    if !dir.is_dir() {
        anyhow::bail!("--data-dir {} does not exist: nothing to {what} (svc seed or svc up create one)", dir.display());
    }
    if !dir.join(file).is_file() {
        anyhow::bail!("--data-dir {} holds no svc data (no {file}): nothing to {what} (svc seed or svc up create it)", dir.display());
    }
    Ok(())
}

/// Refuses a data directory without an embedded log, when the log is the embedded one.
pub(crate) fn require_log(data: &DataArgs, what: &str) -> anyhow::Result<()> {
    if data.log_url.is_some() {
        return Ok(());
    }
    require_data(data, eventlog::LOG_FILE, what)
}

/// `svc seed`: prints a JSON line with what it appended and what it skipped, by reason.
pub fn seed(args: SeedArgs) -> anyhow::Result<()> {
    let log = open_log(&args.data)?;
    let started = Instant::now();
    let options = ingest::seed::SeedOptions {
        batch_papers: args.batch,
        limit: args.limit,
        strict: args.strict,
        social: args.social,
        taxonomy: (args.taxonomy || args.social).then(|| args.governance.governance_did.clone()),
        imports: args.imports,
    };
    let mut progress: Option<crate::progress::Progress> = None;
    let report = ingest::seed::seed_file(&args.file, log.as_ref(), &options, &mut |p| {
        progress.get_or_insert_with(|| crate::progress::Progress::new("seeding", "bytes", p.total_bytes)).set(p.bytes);
    })
    .with_context(|| format!("failed to seed from {}", args.file.display()))?;
    drop(progress);
    let secs = started.elapsed().as_secs_f64();
    let skipped = report.skipped_lines();
    info!(papers = report.papers, events = report.events, skipped, seconds = secs, "seeded");
    for (reason, skips) in &report.skipped {
        tracing::warn!(count = skips.count, first_lines = ?skips.lines, reason, "skipped lines that cannot become valid records");
    }
    let line = serde_json::json!({
        "papers": report.papers,
        "events": report.events,
        "skippedLines": skipped,
        "skipped": report.skipped.iter().map(|(reason, s)| serde_json::json!({"reason": reason, "count": s.count, "firstLines": s.lines})).collect::<Vec<_>>(),
        "layer": report.layer,
        "seconds": secs,
        "eventsPerSecond": report.events as f64 / secs.max(1e-9),
    });
    writeln!(std::io::stdout(), "{line}")?;
    Ok(())
}

/// `svc replay`.
pub fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    let data = &args.data;
    let shared = data.store_url.is_some();
    let models: Vec<&'static str> = if args.models.is_empty() {
        if shared {
            projections::catalog::SHARED_MODELS.to_vec()
        } else {
            projections::catalog::MODELS.to_vec()
        }
    } else {
        projections::catalog::MODELS.iter().copied().filter(|m| args.models.iter().any(|a| a == m)).collect()
    };
    let node_models = models.iter().any(|m| projections::catalog::NODE_MODELS.contains(m));
    let grace = Duration::from_secs(args.grace_seconds.unwrap_or(if shared { 10 } else { 0 }));
    require_log(data, "replay")?;
    let log = open_log(data)?;
    let ctx = open_context(data, node_models)?;
    let total = log.events_behind(&Default::default())?;
    let progress = crate::progress::Progress::new("replaying", "events", total);
    let options = replay::RebuildOptions { models, grace, batch_size: replay::REBUILD_BATCH };
    let rebuilt = replay::rebuild_all_reporting(
        log.as_ref(),
        &ctx,
        &options,
        &|read| {
            progress.set(read);
            true
        },
        replay::NO_PAUSE,
    );
    if rebuilt.is_err() {
        // What the failed replay built is retired: nothing serves it.
        replay::drop_retired_versions(&ctx, &options.models);
    }
    let reports = rebuilt?;
    progress.finish();
    // The dropped versions' pages go back to the file system (the embedded store's file
    // would otherwise keep twice the space of its models).
    for store in ctx.stores() {
        store.compact().context("failed to compact the store after the replay")?;
    }
    // The embedded log's file too (the replay only read it): its leaves fill up.
    if data.log_url.is_none() {
        drop(log);
        let sizes = eventlog::repack(&data.data_dir).context("failed to repack the event log's file after the replay")?;
        tracing::info!(bytes_before = sizes.before, bytes_after = sizes.after, "repacked the event log's file");
    }
    let mut out = std::io::stdout().lock();
    for r in reports {
        let line = serde_json::json!({
            "model": r.model,
            "oldVersion": r.old_version,
            "newVersion": r.new_version,
            "events": r.events,
            "seconds": r.elapsed.as_secs_f64(),
            "oldVersionDropped": r.old_dropped,
        });
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Opens the embedded store of `dir` for an offline command (its lock refuses a running svc).
pub(crate) fn open_stopped_store(dir: &std::path::Path) -> anyhow::Result<EmbeddedStore> {
    EmbeddedStore::open(dir).with_context(|| format!("failed to open the store in {} (is svc running on it?)", dir.display()))
}

/// `svc compact`: compacts this node's store files (`store.redb` and the versions' files)
/// and repacks the embedded log's file, svc stopped; prints their sizes before and after as
/// a JSON line (the store's total, then the log's).
pub fn compact(args: CompactArgs) -> anyhow::Result<()> {
    require_data(&args.data, store::STORE_FILE, "compact")?;
    let dir = &args.data.data_dir;
    let size = || -> anyhow::Result<u64> {
        let files = store::store_files(dir).with_context(|| format!("failed to list the store files in {}", dir.display()))?;
        files.iter().map(|f| Ok(std::fs::metadata(f).with_context(|| format!("failed to read {}", f.display()))?.len())).sum()
    };
    let before = size()?;
    let store = open_stopped_store(dir)?;
    store.compact().context("failed to compact the store")?;
    drop(store);
    let mut line = serde_json::json!({"dataDir": dir.display().to_string(), "bytesBefore": before, "bytesAfter": size()?});
    if args.data.log_url.is_none() && dir.join(eventlog::LOG_FILE).exists() {
        // Opening the log moves what its journal holds into the file, which the repack
        // copies (and refuses a log another svc has open).
        drop(open_log(&args.data)?);
        let log = eventlog::repack(dir).context("failed to repack the event log's file")?;
        line["logBytesBefore"] = log.before.into();
        line["logBytesAfter"] = log.after.into();
    }
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// `svc dead-letters`.
pub fn dead_letters(args: DeadLetterArgs) -> anyhow::Result<()> {
    if args.data.store_url.is_none() {
        require_data(&args.data, store::STORE_FILE, "list")?;
    }
    let store = open_store(&args.data)?;
    let Some(version) = store.active_version(&args.model)? else { return Ok(()) };
    let mut out = std::io::stdout().lock();
    for letter in projections::deadletter::list(store.as_ref(), &args.model, version, args.limit)? {
        writeln!(out, "{}", serde_json::to_string(&letter)?)?;
    }
    Ok(())
}
