//! The subcommands.

pub mod up;

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use eventlog::{EmbeddedLog, EventLog, KafkaConfig, KafkaLog};
use projections::catalog::Context;
use projections::search::SearchIndexes;
use store::{EmbeddedStore, ScyllaConfig, ScyllaStore, Store};
use tracing::info;

use crate::config::{DataArgs, SeedArgs};

/// Opens the event log: Kafka when `--log` is set, else the embedded log of the data directory.
pub fn open_log(data: &DataArgs) -> anyhow::Result<Arc<dyn EventLog>> {
    if let Some(url) = &data.log_url {
        let config = KafkaConfig::from_url(url, data.partitions)?;
        let log = KafkaLog::open(config).with_context(|| format!("failed to open the Kafka log at {url}"))?;
        return Ok(Arc::new(log));
    }
    let log = EmbeddedLog::open(&data.data_dir, data.partitions)
        .with_context(|| format!("failed to open the event log in {} (is another svc using it?)", data.data_dir.display()))?;
    Ok(Arc::new(log))
}

/// Opens the read-model store: ScyllaDB when `--store` is set, else the embedded store of
/// the data directory.
pub fn open_store(data: &DataArgs) -> anyhow::Result<Arc<dyn Store>> {
    if let Some(url) = &data.store_url {
        let config = ScyllaConfig::from_url(url)?;
        let store = ScyllaStore::connect(&config).with_context(|| format!("failed to open the ScyllaDB store at {url}"))?;
        return Ok(Arc::new(store));
    }
    let store = EmbeddedStore::open(&data.data_dir)
        .with_context(|| format!("failed to open the store in {} (is another svc using it?)", data.data_dir.display()))?;
    Ok(Arc::new(store))
}

/// Opens the read-model context (store, search indexes, lexicons).
pub fn open_context(data: &DataArgs) -> anyhow::Result<Context> {
    Ok(Context {
        store: open_store(data)?,
        search: Arc::new(SearchIndexes::new(&data.data_dir.join("search"))),
        lexicons: Arc::new(lexicons::Lexicons::builtin()),
    })
}

/// `svc seed`.
pub fn seed(args: SeedArgs) -> anyhow::Result<()> {
    let log = open_log(&args.data)?;
    let started = Instant::now();
    let report = ingest::seed::seed_file(&args.file, log.as_ref(), args.batch, args.limit)
        .with_context(|| format!("failed to seed from {}", args.file.display()))?;
    let secs = started.elapsed().as_secs_f64();
    info!(papers = report.papers, events = report.events, seconds = secs, "seeded");
    let line = serde_json::json!({
        "papers": report.papers,
        "events": report.events,
        "seconds": secs,
        "eventsPerSecond": report.events as f64 / secs.max(1e-9),
    });
    writeln!(std::io::stdout(), "{line}")?;
    Ok(())
}

/// `svc replay`.
pub fn replay(data: DataArgs) -> anyhow::Result<()> {
    let log = open_log(&data)?;
    let ctx = open_context(&data)?;
    let reports = replay::rebuild_all(log.as_ref(), &ctx)?;
    let mut out = std::io::stdout().lock();
    for r in reports {
        let line = serde_json::json!({
            "model": r.model,
            "oldVersion": r.old_version,
            "newVersion": r.new_version,
            "events": r.events,
            "seconds": r.elapsed.as_secs_f64(),
        });
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `svc log tail`.
pub fn log_tail(data: DataArgs, from: u64, limit: Option<usize>) -> anyhow::Result<()> {
    let log = open_log(&data)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut next = from;
    let mut left = limit.unwrap_or(usize::MAX);
    while left > 0 {
        let page = log.read_merged(next, left.min(1000))?;
        let Some(last) = page.last() else { break };
        next = last.position.offset + 1;
        left -= page.len();
        for event in &page {
            match writeln!(out, "{}", event.to_json()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                other => other?,
            }
        }
    }
    out.flush().or_else(|e| if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) })?;
    Ok(())
}
