//! Encode and decode throughput of a typical record event.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use event_schema::{codec, NewEvent, Payload, Position, RecordWrite, Source};

fn event() -> NewEvent {
    let authors: Vec<_> = (1..=6)
        .map(|i| serde_json::json!({"name": format!("Author Number {i}"), "did": "did:plc:ewvi7nxzyoun6zhxrhs64oiz", "order": i}))
        .collect();
    NewEvent::repo(
        Source::Seed { file: "bench".into() },
        Payload::RecordCreate(RecordWrite {
            did: "did:plc:ewvi7nxzyoun6zhxrhs64oiz".into(),
            collection: "pub.svc.eprint.submission".into(),
            rkey: "3lbxqprzvpc2a".into(),
            cid: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".into(),
            rev: "3lbxqprzvpc2b".into(),
            record: serde_json::json!({"title": "A benchmark title of typical length for an eprint", "abstract": "word ".repeat(250),
                "authors": authors, "fields": ["cs.LG", "cs.AI"], "createdAt": "2025-01-01T00:00:00.000Z"}),
        }),
    )
}

fn bench(c: &mut Criterion) {
    let ev = event();
    let at = chrono::DateTime::from_timestamp_micros(1_750_000_000_000_000).unwrap();
    let bytes = codec::encode(&ev, at).unwrap();
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(1));
    g.bench_function("encode", |b| b.iter(|| codec::encode(&ev, at).unwrap()));
    g.bench_function("decode", |b| b.iter(|| codec::decode(Position { partition: 0, offset: 1 }, &bytes).unwrap()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
