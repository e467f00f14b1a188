//! What tantivy alone costs to index the papers, field by field: the floor under the search
//! projection's share of a replay (no log, no store, no validation; documents built up front).
//!
//! `cargo run --release -p projections --example index_floor -- PAPERS.jsonl.gz FIELDS`
//!
//! FIELDS is `min` (one stemmed text field with positions holding title, abstract, author
//! names and categories: the least a search box needs) plus any of `title`, `authors`, `did`,
//! `field`, `uri`, `rev`, `fast`, `summary`, comma-separated, or `full` for all of them (the search
//! projection's schema). Indexes on two threads with the projection's memory budget.

use std::io::BufRead;
use std::time::Instant;

use ingest::seed::{account_for, Paper};
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING};
use tantivy::{Index, IndexWriter, TantivyDocument};

#[path = "support/cpu.rs"]
mod cpu;
use cpu::cpu_seconds;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn text(tokenizer: &str) -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(tokenizer).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(fields)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: index_floor PAPERS.jsonl.gz min[,title,authors,did,field,uri,rev,fast,summary] | full");
        std::process::exit(2);
    };
    let has = |f: &str| fields.split(',').any(|v| v == f || v == "full");
    let file = std::fs::File::open(path).expect("cannot open the papers");
    let papers: Vec<Paper> = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file))
        .lines()
        .map(|l| serde_json::from_str(&l.expect("cannot read the papers")).expect("a paper per line"))
        .collect();

    let mut b = Schema::builder();
    let all = b.add_text_field("all", text("en_fold"));
    let title = b.add_text_field("title", text("en_fold"));
    let authors = b.add_text_field("authors", text("default"));
    let did = b.add_text_field("author_did", STRING);
    let field = b.add_text_field("field", STRING);
    let uri = b.add_text_field("uri", STRING | STORED);
    let rev = b.add_text_field("rev", STRING | STORED);
    let created = b.add_i64_field("created", INDEXED | FAST);
    let seq = b.add_u64_field("seq", FAST);
    let summary = b.add_text_field("summary", STORED);
    // Documents are built before the clock starts: only tantivy is timed.
    let docs: Vec<TantivyDocument> = papers
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut d = TantivyDocument::default();
            for t in [&p.title, &p.abstract_text].into_iter().chain(&p.authors).chain(&p.categories) {
                d.add_text(all, t);
            }
            let repo = account_for(p.authors.first().map_or("", String::as_str)).did;
            if has("title") {
                d.add_text(title, &p.title);
            }
            for name in &p.authors {
                if has("authors") {
                    d.add_text(authors, name);
                }
                if has("did") {
                    d.add_text(did, account_for(name).did);
                }
            }
            if has("field") {
                for c in &p.categories {
                    d.add_text(field, c);
                }
            }
            if has("uri") {
                d.add_text(uri, format!("at://{repo}/pub.svc.eprint.submission/{}", p.id));
            }
            if has("rev") {
                d.add_text(rev, format!("3m{:011x}", i * 104_729));
            }
            if has("fast") {
                d.add_i64(created, i as i64);
                d.add_u64(seq, i as u64);
            }
            if has("summary") {
                d.add_text(summary, serde_json::json!({"title": p.title, "abstract": p.abstract_text, "authors": p.authors}).to_string());
            }
            d
        })
        .collect();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let index = Index::create_in_dir(dir.path(), b.build()).expect("a new index");
    index.tokenizers().register("en_fold", projections::search::en_fold());
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let mut writer: IndexWriter<TantivyDocument> = index.writer_with_num_threads(2, 192 << 20).expect("a writer");
    for d in docs {
        writer.add_document(d).expect("indexed");
    }
    writer.commit().expect("committed");
    println!("{fields}: {} papers in {:.2} s wall, {:.2} s CPU", papers.len(), t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
}
