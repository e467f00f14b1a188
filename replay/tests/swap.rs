//! An online rebuild swaps its versions in without taking anything back: a query that
//! follows the active version never sees it hold less than a moment before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_schema::{IdentityChange, NewEvent, Payload, Source};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{Context, FollowActive};
use projections::{Projection, Worker, WorkerConfig};
use store::{EmbeddedStore, Store};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "admin";
const PARTITIONS: u32 = 2;

fn events(from: usize, n: usize) -> Vec<NewEvent> {
    (from..from + n)
        .map(|i| {
            let change = IdentityChange { did: format!("did:plc:swap{}", i % 97), handle: Some(format!("h{i}.test")), display_name: None };
            NewEvent::repo(Source::Manual { note: "swap test".into() }, Payload::Identity(change))
        })
        .collect()
}

/// The active version of [`MODEL`] and where it stands in each partition of the log, as a
/// query would find it.
fn active_holds(store: &dyn Store) -> Option<(u32, Vec<u64>)> {
    let version = store.active_version(MODEL).ok()??;
    let checkpoints = store.checkpoints(&store::consumer_name(MODEL, version)).ok()?;
    Some((version, (0..PARTITIONS).map(|p| checkpoints.get(&p).copied().unwrap_or(0)).collect()))
}

/// A live worker follows the model while events keep coming and three rebuilds swap new
/// versions in, each holding the worker (`replay::Pause`) for its last catch-up and swap:
/// what the active version holds only grows, and the worker goes on from each new version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_online_rebuild_never_swaps_in_a_version_behind_the_one_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> = Arc::new(EmbeddedLog::open(&dir.path().join("log"), PARTITIONS).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    log.append(&events(0, 3_000)).unwrap();

    let live: Box<dyn Projection> = Box::new(FollowActive::open(&ctx, MODEL).unwrap());
    let worker = Worker::new(log.clone(), vec![live], WorkerConfig::default()).unwrap();
    let hold = worker.hold_handle();
    let cancel = CancellationToken::new();
    let running = tokio::spawn(worker.run(cancel.clone()));

    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut next = 3_000;
            while !stop.load(Ordering::Relaxed) {
                log.append(&events(next, 3)).unwrap();
                next += 3;
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let watcher = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen: Vec<(u32, Vec<u64>)> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(now) = active_holds(store.as_ref()) {
                    if seen.last() != Some(&now) {
                        seen.push(now);
                    }
                }
            }
            seen
        })
    };

    let runtime = tokio::runtime::Handle::current();
    let rebuilding = log.clone();
    let rebuilt = tokio::task::spawn_blocking(move || {
        let log = rebuilding;
        let options = replay::RebuildOptions { models: vec![MODEL], grace: Duration::from_millis(200), batch_size: 500 };
        let pause = || vec![runtime.block_on(hold.hold()).unwrap()];
        (0..3).map(|_| replay::rebuild_all_reporting(log.as_ref(), &ctx, &options, &|_| true, &pause).unwrap()).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    appender.join().unwrap();
    let end = log.end_offsets().unwrap();
    let seen = watcher.join().unwrap();

    let versions: Vec<u32> = rebuilt.iter().map(|r| r[0].new_version).collect();
    assert_eq!(versions.len(), 3, "{rebuilt:?}");
    let went_back: Vec<_> = seen.windows(2).filter(|w| w[1].1.iter().zip(&w[0].1).any(|(now, before)| now < before)).collect();
    assert!(went_back.is_empty(), "the active version held less after a swap: {went_back:?} (seen {} states)", seen.len());
    let swaps: Vec<u32> = seen.windows(2).filter(|w| w[1].0 != w[0].0).map(|w| w[1].0).collect();
    assert_eq!(swaps, versions, "every swap was seen, in order");

    // The worker went on from the last version: it reaches every event appended.
    let deadline = Instant::now() + Duration::from_secs(30);
    while active_holds(store.as_ref()) != Some((versions[2], end.clone())) {
        assert!(
            Instant::now() < deadline,
            "the live worker did not go on from the new version: {:?}, the log ends at {end:?}",
            active_holds(store.as_ref())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    running.await.unwrap().unwrap();
}

/// A stopped rebuild ends without waiting for its half-built versions to be dropped: they
/// are retired, the old ones stay active, and `drop_retired_versions` drops them after; a
/// stop asked before any version is made makes none.
#[test]
fn a_cancelled_rebuild_retires_what_it_built_and_the_caller_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> = Arc::new(EmbeddedLog::open(&dir.path().join("log"), PARTITIONS).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    log.append(&events(0, 3_000)).unwrap();
    let models = vec![MODEL, "inbox"];
    let options = replay::RebuildOptions { models: models.clone(), grace: Duration::ZERO, batch_size: 500 };
    let first = replay::rebuild_all(log.as_ref(), &ctx, &options).unwrap();
    let active: Vec<u32> = first.iter().map(|r| r.new_version).collect();
    let states = |model: &str| store.versions(model).unwrap().into_iter().collect::<Vec<_>>();
    let cancelled = |r: Result<Vec<replay::RebuildReport>, replay::ReplayError>| {
        matches!(r, Err(replay::ReplayError::Projection { source: projections::ProjectionError::Cancelled, .. }))
    };

    // Stopped after the first batch: every model's half-built version is retired.
    let stopped = replay::rebuild_all_reporting(log.as_ref(), &ctx, &options, &|read| read == 0, replay::NO_PAUSE);
    assert!(cancelled(stopped));
    for (model, active) in models.iter().zip(&active) {
        assert_eq!(store.active_version(model).unwrap(), Some(*active));
        assert_eq!(states(model), vec![(*active, store::VersionState::Active), (active + 1, store::VersionState::Retired)], "{model}");
    }
    replay::drop_retired_versions(&ctx, &models);
    for (model, active) in models.iter().zip(&active) {
        assert_eq!(states(model), vec![(*active, store::VersionState::Active)], "{model}: the abandoned version is dropped");
    }

    // Stopped while the versions are being made: the first is retired, no other is made.
    let asked = std::sync::atomic::AtomicU32::new(0);
    let stopped =
        replay::rebuild_all_reporting(log.as_ref(), &ctx, &options, &|_| asked.fetch_add(1, Ordering::Relaxed) == 0, replay::NO_PAUSE);
    assert!(cancelled(stopped));
    assert_eq!(states(MODEL), vec![(active[0], store::VersionState::Active), (active[0] + 2, store::VersionState::Retired)]);
    assert_eq!(states("inbox"), vec![(active[1], store::VersionState::Active)], "no version made after the stop");

    // The next rebuild drops what is left and swaps in.
    let next = replay::rebuild_all(log.as_ref(), &ctx, &options).unwrap();
    for (model, r) in models.iter().zip(&next) {
        assert_eq!(states(model), vec![(r.new_version, store::VersionState::Active)], "{model}");
    }
}
