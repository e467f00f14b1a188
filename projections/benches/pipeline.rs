//! The embedded pipeline on real papers (the committed sample): log append and read, and
//! each projection's apply. Searches have their own bench, `benches/search.rs`.

use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{self, Context, Mode};
use projections::catch_up;

fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz")
}

fn seeded(papers: usize) -> (tempfile::TempDir, Arc<EmbeddedLog>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(dir.path(), 4).unwrap());
    let report = ingest::seed::seed_file(
        &sample(),
        log.as_ref(),
        &ingest::seed::SeedOptions { limit: Some(papers), ..Default::default() },
        &mut |_| {},
    )
    .unwrap();
    (dir, log, report.events)
}

fn context(dir: &Path) -> Context {
    Context::single(Arc::new(store::EmbeddedStore::open(dir).unwrap()), &dir.join("search"))
}

fn bench(c: &mut Criterion) {
    let (_dir, log, events) = seeded(1000);
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events as u64));
    g.bench_function("log_read_all", |b| b.iter(|| (0..4).map(|p| log.read(p, 0, usize::MAX).unwrap().len()).sum::<usize>()));
    for model in catalog::MODELS.iter() {
        g.bench_function(format!("project_{model}"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().unwrap();
                    let ctx = context(dir.path());
                    let v = catalog::ensure_active(&ctx, model).unwrap();
                    let p = catalog::open(&ctx, model, v, Mode::Rebuild).unwrap();
                    (dir, ctx, p)
                },
                |(_dir, _ctx, mut p)| catch_up(log.as_ref(), p.as_mut(), 8192).unwrap(),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
