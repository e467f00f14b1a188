//! Firehose ingest throughput on recorded-shape frames: `#commit` frames of one signed commit
//! and one `pub.svc.eprint.submission` record each (the shape a PDS sends for a createRecord),
//! made and signed here with secp256k1. Three stages, in the same run, so their ratios hold
//! on a noisy machine: decode (frame + CAR with block hash checks), + signature check and
//! events, + append to the embedded log in batches of 512; and the follower's path, where
//! commits are checked 64 at a time on every core.
//!
//! `cargo bench -p ingest --bench firehose`; figures in docs/performance.md.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use event_schema::Source;
use eventlog::{EmbeddedLog, EventLog};
use ingest::car::Car;
use ingest::commit::{op_outcomes, verify_commit, OpOutcome};
use ingest::frame::Frame;
use ingest::identity::PublicKey;
use ingest::testing::commit_frame;
use ingest::verify;

const FRAMES: usize = 2000;

fn decode(frame: &[u8]) -> (ingest::frame::Commit, Car) {
    let Frame::Commit(c) = Frame::decode(frame).unwrap() else { panic!("not a commit") };
    let car = Car::read(&c.blocks).unwrap();
    (*c, car)
}

fn fresh_log() -> (tempfile::TempDir, EmbeddedLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = EmbeddedLog::open(dir.path(), 4).unwrap();
    (dir, log)
}

fn verify_and_map(c: &ingest::frame::Commit, car: &Car, key: &PublicKey, collections: &[String]) -> Vec<event_schema::NewEvent> {
    verify_commit(car, &c.commit, &c.repo, key).unwrap();
    events(c, car, collections)
}

/// A verified commit's events.
fn events(c: &ingest::frame::Commit, car: &Car, collections: &[String]) -> Vec<event_schema::NewEvent> {
    let source = Source::Firehose { url: "ws://bench".into(), seq: c.seq };
    op_outcomes(&source, &c.repo, &c.rev, &c.ops, car, collections)
        .into_iter()
        .map(|o| match o {
            OpOutcome::Event(e) => *e,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let secret = k256::ecdsa::SigningKey::from_slice(&[5u8; 32]).unwrap();
    let key = PublicKey::from_k256(secret.verifying_key());
    let frames: Vec<Vec<u8>> = (0..FRAMES as i64).map(|i| commit_frame(&secret, &format!("did:plc:bench{:04}", i % 500), i + 1)).collect();
    let collections = vec!["pub.svc.".to_owned()];
    let mut group = c.benchmark_group("firehose");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(10);
    group.bench_function("decode", |b| b.iter(|| frames.iter().map(|f| decode(f).1.len()).sum::<usize>()));
    group.bench_function("decode+verify+events", |b| {
        b.iter(|| {
            frames
                .iter()
                .map(|f| {
                    let (c, car) = decode(f);
                    verify_and_map(&c, &car, &key, &collections).len()
                })
                .sum::<usize>()
        })
    });
    // The follower's path: frames decoded, their commits checked 64 at a time on every core
    // (`verify::check_all`), then turned into events and appended in order.
    group.bench_function("decode+verify(all cores)+events+append", |b| {
        b.iter_batched(
            fresh_log,
            |(_dir, log)| {
                let mut pending = Vec::new();
                for window in frames.chunks(64) {
                    let commits: Vec<_> = window
                        .iter()
                        .map(|f| match Frame::decode(f).unwrap() {
                            Frame::Commit(c) => *c,
                            _ => panic!("not a commit"),
                        })
                        .collect();
                    let jobs: Vec<verify::Job<'_>> =
                        commits.iter().map(|c| verify::Job { blocks: &c.blocks, root: &c.commit, did: &c.repo, key: &key }).collect();
                    for (c, car) in commits.iter().zip(verify::check_all(&jobs)) {
                        pending.extend(events(c, &car.unwrap(), &collections));
                    }
                    if pending.len() >= 512 {
                        log.append(&pending).unwrap();
                        pending.clear();
                    }
                }
                log.append(&pending).unwrap();
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("decode+verify+events+append", |b| {
        b.iter_batched(
            fresh_log,
            |(_dir, log)| {
                let mut pending = Vec::new();
                for f in &frames {
                    let (c, car) = decode(f);
                    pending.extend(verify_and_map(&c, &car, &key, &collections));
                    if pending.len() >= 512 {
                        log.append(&pending).unwrap();
                        pending.clear();
                    }
                }
                log.append(&pending).unwrap();
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
