//! A firehose frame through everything ingest does with it before appending: frame decoding,
//! the CAR with its hash checks, the commit block, and the operations turned into events.
//! Any input must give an error or a result, never a panic.
#![no_main]

use ingest::car::Car;
use ingest::commit::op_outcomes;
use ingest::frame::Frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(Frame::Commit(c)) = Frame::decode(data) else { return };
    let Ok(car) = Car::read(&c.blocks) else { return };
    let source = event_schema::Source::Manual { note: "fuzz".into() };
    let _ = op_outcomes(&source, &c.repo, &c.rev, &c.ops, &car, &["pub.svc.".to_owned()]);
    let _ = ingest::backfill::walk_mst(&car, &c.commit);
});
