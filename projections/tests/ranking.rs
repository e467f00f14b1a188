//! A judged query set over the committed sample of real arXiv papers, so that a change to
//! the ranking cannot make it silently worse: known-item queries (a paper's whole title,
//! the first words of its title, words of its abstract, its arXiv id in two forms), scored
//! by mean reciprocal rank over the first 10 hits, and topical queries judged by the papers'
//! arXiv categories, scored by nDCG over the first 10 hits. The figures are in docs/search.md; the floors below sit just
//! under them.

use std::io::BufRead;
use std::sync::Arc;

use eventlog::EmbeddedLog;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use projections::search::{SearchRequest, SortOrder};
use store::EmbeddedStore;

/// Every `STRIDE`-th paper of the sample is a known item.
const STRIDE: usize = 10;
/// Hits looked at per query.
const DEPTH: usize = 10;

struct Paper {
    id: String,
    title: String,
    abstract_text: String,
    categories: Vec<String>,
}

fn sample() -> Vec<Paper> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz");
    let lines = std::io::BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())).lines();
    lines
        .map(|l| serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap())
        .map(|v| Paper {
            id: v["id"].as_str().unwrap().to_owned(),
            title: v["title"].as_str().unwrap().split_whitespace().collect::<Vec<_>>().join(" "),
            abstract_text: v["abstract"].as_str().unwrap_or_default().to_owned(),
            categories: v["categories"]
                .as_array()
                .map(|a| a.iter().filter_map(|c| c.as_str()).map(str::to_owned).collect())
                .unwrap_or_default(),
        })
        .collect()
}

/// The mean reciprocal rank of the papers `queries` look for (0 when not in the first
/// [`DEPTH`] hits).
fn mrr(index: &projections::search::SearchIndex, queries: &[(String, String)]) -> f64 {
    let mut sum = 0.0;
    for (query, title) in queries {
        let request = SearchRequest { limit: DEPTH, ..SearchRequest::new(query, SortOrder::Relevance) };
        let hits = index.search(&request).unwrap().hits;
        let rank = hits.iter().position(|h| serde_json::from_str::<serde_json::Value>(h).unwrap()["title"].as_str() == Some(title));
        sum += rank.map_or(0.0, |r| 1.0 / (r + 1) as f64);
    }
    sum / queries.len() as f64
}

#[test]
fn known_item_queries_find_their_papers() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let sample_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz");
    ingest::seed::seed_file(&sample_path, log.as_ref(), &Default::default(), &mut |_| {}).unwrap();
    let ctx = Context::single(Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap()), &dir.path().join("search"));
    // Hits show the eprints model's rows.
    let eprints = catalog::ensure_active(&ctx, "eprints").unwrap();
    catch_up(log.as_ref(), catalog::open(&ctx, "eprints", eprints, Mode::Rebuild).unwrap().as_mut(), 16_384).unwrap();
    let version = catalog::ensure_active(&ctx, "search").unwrap();
    let mut projection = catalog::open(&ctx, "search", version, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), projection.as_mut(), 16_384).unwrap();
    let index = ctx.search.open(version).unwrap();

    let items: Vec<Paper> = sample().into_iter().step_by(STRIDE).collect();
    let with = |query: &dyn Fn(&Paper) -> String| items.iter().map(|p| (query(p), p.title.clone())).collect::<Vec<_>>();
    let titles = mrr(&index, &with(&|p| p.title.clone()));
    let words = |text: &str, skip: usize, take: usize| text.split_whitespace().skip(skip).take(take).collect::<Vec<_>>().join(" ");
    let prefixes = mrr(&index, &with(&|p| words(&p.title, 0, 4)));
    let short = mrr(&index, &with(&|p| words(&p.title, 0, 2)));
    let from_abstract = mrr(&index, &with(&|p| words(&p.abstract_text, 10, 4)));
    let ids = mrr(&index, &with(&|p| p.id.clone()));
    let prefixed_ids = mrr(&index, &with(&|p| format!("arXiv:{}", p.id)));
    println!(
        "known items: {} papers; MRR@{DEPTH}: whole title {titles:.3}, first 4 title words {prefixes:.3}, first 2 title words \
         {short:.3}, 4 words of the abstract {from_abstract:.3}, id {ids:.3}, arXiv:id {prefixed_ids:.3}",
        items.len()
    );
    assert!(titles >= 0.99, "whole titles: MRR {titles:.3}");
    assert!(prefixes >= 0.97, "first 4 title words: MRR {prefixes:.3}");
    assert!(short >= 0.84, "first 2 title words: MRR {short:.3}");
    assert!(from_abstract >= 0.59, "4 words of the abstract: MRR {from_abstract:.3}");
    assert_eq!((ids, prefixed_ids), (1.0, 1.0), "identifiers find their paper first");

    // Topical queries, judged by the papers' arXiv categories: grade 2 when the query's
    // category is a paper's primary one, 1 when it is one of its others, 0 otherwise.
    let ndcg = topical_ndcg(&index, &sample());
    println!("topical queries: {} judged by category; nDCG@{DEPTH} {ndcg:.3}", TOPICAL.len());
    assert!(ndcg >= 0.36, "topical queries: nDCG {ndcg:.3}");
}

/// Topical queries and the arXiv category that judges them.
const TOPICAL: &[(&str, &str)] = &[
    ("channel capacity coding", "cs.IT"),
    ("wireless communication beamforming", "cs.IT"),
    ("game theory equilibrium", "cs.GT"),
    ("mechanism design auction", "cs.GT"),
    ("robot manipulation", "cs.RO"),
    ("rendering meshes", "cs.GR"),
    ("finite element simulation", "cs.CE"),
    ("user study interaction", "cs.HC"),
    ("speech audio", "cs.SD"),
    ("machine translation", "cs.CL"),
    ("object detection", "cs.CV"),
    ("image compression", "eess.IV"),
];

/// Mean nDCG over the first [`DEPTH`] hits of the [`TOPICAL`] queries.
fn topical_ndcg(index: &projections::search::SearchIndex, papers: &[Paper]) -> f64 {
    let grade = |categories: &[String], category: &str| -> f64 {
        match categories.iter().position(|c| c == category) {
            Some(0) => 2.0,
            Some(_) => 1.0,
            None => 0.0,
        }
    };
    let dcg = |grades: &[f64]| grades.iter().enumerate().map(|(i, g)| (2f64.powf(*g) - 1.0) / ((i + 2) as f64).log2()).sum::<f64>();
    let mut total = 0.0;
    for (query, category) in TOPICAL {
        let request = SearchRequest { limit: DEPTH, ..SearchRequest::new(query, SortOrder::Relevance) };
        let hits = index.search(&request).unwrap().hits;
        let grades: Vec<f64> = hits
            .iter()
            .map(|h| {
                let hit: serde_json::Value = serde_json::from_str(h).unwrap();
                let fields: Vec<String> = hit["fields"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect();
                grade(&fields, category)
            })
            .collect();
        let mut ideal: Vec<f64> = papers.iter().map(|p| grade(&p.categories, category)).filter(|g| *g > 0.0).collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        ideal.truncate(DEPTH);
        let score = dcg(&grades) / dcg(&ideal);
        println!("  {query:?} ({category}): nDCG@{DEPTH} {score:.3}");
        total += score;
    }
    total / TOPICAL.len() as f64
}
