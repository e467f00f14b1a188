//! What a counted view costs the usage model, as a live node applies them under `recordView`
//! load: 1,000 eprints of the committed sample, each viewed by distinct viewers at ~10
//! views/s an eprint (so every view is counted, its sketches grow and its recent uses fill
//! the 30 s of the double-click rule), applied in batches of BATCH events (4,096 unless
//! given) as the live worker reads them. Prints the time per view of the measured views,
//! after the warm-up ones, in time taken and in CPU time (docs/performance.md, "recordView:
//! what a live batch costs").
//!
//! `cargo run --release -p projections --example usage_views -- [WARM_UP_VIEWS] [VIEWS] [BATCH]`
//!
//! A warm-up of a million views or more gives each eprint over 1,024 viewers, so its
//! sketches are dense (4,096 registers), as a busy eprint's are.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use event_schema::{NewEvent, Payload, Source, UsageAction, UsageEvent};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{self, Context, Mode};
use projections::catch_up;

#[path = "support/cpu.rs"]
mod cpu;
use cpu::cpu_seconds;

const EPRINTS: usize = 1_000;

/// svc's allocator: the model's batches allocate and free heavily, and glibc's malloc would
/// cost them differently than a live node pays.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number of views")).collect();
    let (warm_up, measured) = (args.first().copied().unwrap_or(300_000), args.get(1).copied().unwrap_or(200_000));
    let batch = args.get(2).copied().unwrap_or(4_096);
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(dir.path(), 4).unwrap());
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz");
    let options = ingest::seed::SeedOptions { limit: Some(EPRINTS), ..Default::default() };
    ingest::seed::seed_file(&sample, log.as_ref(), &options, &mut |_| {}).unwrap();
    let uris: Vec<String> = (0..log.partitions())
        .flat_map(|p| log.read(p, 0, usize::MAX).unwrap())
        .filter_map(|e| match &e.payload {
            Payload::RecordCreate(w) if w.collection == lexicons::SUBMISSION => Some(w.uri()),
            _ => None,
        })
        .collect();
    assert_eq!(uris.len(), EPRINTS);

    let ctx = Context::single(Arc::new(store::EmbeddedStore::open(dir.path()).unwrap()), &dir.path().join("search"));
    let version = catalog::ensure_active(&ctx, "usage").unwrap();
    let mut usage = catalog::open(&ctx, "usage", version, Mode::Live).unwrap();
    let start = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
    let mut n = 0usize;
    let mut views = |count: usize| {
        let events: Vec<NewEvent> = (n..n + count)
            .map(|i| {
                let uri = uris[i % EPRINTS].clone();
                // 10,000 views a second over the 1,000 eprints; each viewer new.
                let at = start + Duration::from_micros(100 * i as u64);
                let usage = UsageEvent {
                    viewer: pseudonym(i as u64),
                    robot: false,
                    uri: uri.clone(),
                    action: UsageAction::View { source: None },
                    at: Some(at),
                };
                NewEvent { key: uri, source: Source::Manual { note: "usage_views".into() }, payload: Payload::Usage(usage) }
            })
            .collect();
        n += count;
        events.chunks(4_096).for_each(|c| {
            log.append(c).unwrap();
        });
    };
    views(warm_up);
    // The warm-up in large batches: what it leaves matters, not what it costs.
    catch_up(log.as_ref(), usage.as_mut(), 32_768).unwrap();
    usage.flush().unwrap();
    views(measured);
    let (started, cpu) = (Instant::now(), cpu_seconds());
    catch_up(log.as_ref(), usage.as_mut(), batch).unwrap();
    let (elapsed, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    println!(
        "{measured} views after {warm_up}, batches of {batch}: {elapsed:.2} s, {:.1} µs a view ({:.1} µs of CPU)",
        elapsed * 1e6 / measured as f64,
        cpu * 1e6 / measured as f64
    );
}

/// The pseudonym of viewer `i`: uniform in its first 64 bits, as the API's keyed hashes
/// are (the sketches read those bits), splitmix64 standing in for the key.
fn pseudonym(i: u64) -> String {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    format!("{:016x}{i:016x}", z ^ (z >> 31))
}
