//! What packing a row costs, at the log's level ([`packed::pack`]) and at the level rows are
//! written with live ([`packed::pack_live`]): the rows a busy eprint's usage rewrites at every
//! batch (its viewers' dense sketch, its recent viewers) and eprints' records from the
//! committed sample. Between two packs it touches 16 MB of other memory, as a projection does
//! between rows, so zstd's tables and the dictionary are cold as they are in svc.
//!
//! ```sh
//! cargo run --release -p event-schema --example pack_rows
//! ```

use std::io::{BufRead, BufReader};
use std::time::Instant;

use data_encoding::BASE64_NOPAD;
use event_schema::packed;

/// Packs of each row per level.
const ROUNDS: usize = 400;

fn main() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // 400 uses of 17 bytes (a viewer's hash, the kind, the time): 30 s of a busy eprint.
    let recent: Vec<u8> = (0..400 * 17).map(|_| random() as u8).collect();
    // 4,096 registers of a dense sketch: ranks as HyperLogLog gives them.
    let sketch: Vec<u8> = std::iter::once(2).chain((0..4096).map(|_| (random().trailing_zeros().min(40) + 1) as u8)).collect();
    let mut rows = vec![
        ("recent uses (400)".to_owned(), BASE64_NOPAD.encode(&recent).into_bytes()),
        ("dense sketch".to_owned(), BASE64_NOPAD.encode(&sketch).into_bytes()),
    ];
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz");
    let papers = BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(&sample).expect("the committed sample")));
    for (i, line) in papers.lines().take(3).enumerate() {
        rows.push((format!("eprint record {}", i + 1), line.expect("a line").into_bytes()));
    }

    let mut other = vec![0u8; 16 << 20];
    println!("| row | bytes | level 3 µs | level 3 bytes | live rows' level µs | live rows' level bytes |");
    println!("|---|---|---|---|---|---|");
    for (name, row) in &rows {
        let mut figures = Vec::new();
        for pack in [packed::pack as fn(Vec<u8>, usize) -> Vec<u8>, packed::pack_live] {
            let (mut seconds, mut bytes) = (0.0, 0);
            for round in 0..ROUNDS {
                other.iter_mut().step_by(64).for_each(|b| *b = b.wrapping_add(round as u8));
                let started = Instant::now();
                bytes = pack(row.clone(), 0).len();
                seconds += started.elapsed().as_secs_f64();
            }
            figures.push((seconds / ROUNDS as f64 * 1e6, bytes));
        }
        let [(a, a_bytes), (b, b_bytes)] = [figures[0], figures[1]];
        println!("| {name} | {} | {a:.1} | {a_bytes} | {b:.1} | {b_bytes} |", row.len());
    }
}
