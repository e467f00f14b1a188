//! Search queries on a realistic index: the words people type, taken from real titles.
//!
//! Indexes the committed sample (3,000 papers), or the papers of `SVC_BENCH_PAPERS` (any
//! file `svc seed` reads, such as the full arXiv set), then runs the load test's query mix:
//! the first three words of 200 titles, one query per iteration, round robin.
//!
//! `cargo bench -p projections --bench search` (add `SVC_BENCH_PAPERS=/absolute/path` for another set: benches run in the crate directory).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use eventlog::EmbeddedLog;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use projections::search::{SearchRequest, SortOrder};

// The allocator of the `svc` binary, so that allocation costs are the ones it pays.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn papers() -> PathBuf {
    std::env::var_os("SVC_BENCH_PAPERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz"))
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    ingest::seed::seed_file(&papers(), log.as_ref(), &Default::default(), &mut |_| {}).unwrap();
    let ctx = Context::single(Arc::new(store::EmbeddedStore::open(&dir.path().join("store")).unwrap()), &dir.path().join("search"));
    // Hits show the eprints model's rows.
    let eprints = catalog::ensure_active(&ctx, "eprints").unwrap();
    let mut model = catalog::open(&ctx, "eprints", eprints, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), model.as_mut(), 8192).unwrap();
    model.flush().unwrap();
    let version = catalog::ensure_active(&ctx, "search").unwrap();
    let mut projection = catalog::open(&ctx, "search", version, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), projection.as_mut(), 8192).unwrap();
    projection.flush().unwrap();
    let index = ctx.search.open(version).unwrap();

    // The load test's mix: the first three words of the newest titles.
    let newest = index.search(&SearchRequest { limit: 200, ..SearchRequest::new("*", SortOrder::Date) }).unwrap();
    let queries: Vec<SearchRequest> = newest
        .hits
        .iter()
        .map(|hit| {
            let summary: serde_json::Value = serde_json::from_str(hit).unwrap();
            let title = summary["title"].as_str().unwrap_or_default();
            SearchRequest::new(&title.split_whitespace().take(3).collect::<Vec<_>>().join(" "), SortOrder::Relevance)
        })
        .collect();

    let mut g = c.benchmark_group("search");
    let mut next = 0;
    g.bench_function("title_words", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            index.search(&queries[next]).unwrap()
        })
    });
    g.bench_function("all_by_date", |b| b.iter(|| index.search(&SearchRequest::new("*", SortOrder::Date)).unwrap()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
