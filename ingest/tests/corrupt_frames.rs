//! A corpus of truncated and corrupted firehose frames through everything ingest does with a
//! frame before appending (frame decoding, CAR reading with hash checks, the signature
//! check, operations to events): every one is an error or a clean result, never a panic,
//! and no corruption of the commit or the record gets through.

use ingest::car::Car;
use ingest::commit::{op_outcomes, verify_commit};
use ingest::frame::Frame;
use ingest::identity::PublicKey;
use ingest::testing::commit_frame;

/// What ingest does with one frame; `Err` for any refusal.
fn process(bytes: &[u8], key: &PublicKey) -> Result<usize, String> {
    let Frame::Commit(c) = Frame::decode(bytes).map_err(|e| e.to_string())? else { return Ok(0) };
    let car = Car::read(&c.blocks).map_err(|e| e.to_string())?;
    verify_commit(&car, &c.commit, &c.repo, key).map_err(|e| e.to_string())?;
    let source = event_schema::Source::Manual { note: "corpus".into() };
    Ok(op_outcomes(&source, &c.repo, &c.rev, &c.ops, &car, &["pub.svc.".to_owned()]).len())
}

fn find(haystack: &[u8], needle: &[u8]) -> std::ops::Range<usize> {
    let start = haystack.windows(needle.len()).position(|w| w == needle).expect("the block is in the frame");
    start..start + needle.len()
}

#[test]
fn truncated_and_corrupted_frames_are_errors_never_panics() {
    let secret = k256::ecdsa::SigningKey::from_slice(&[11u8; 32]).unwrap();
    let key = PublicKey::from_k256(secret.verifying_key());
    let frame = commit_frame(&secret, "did:plc:corpus", 1);
    assert_eq!(process(&frame, &key), Ok(1), "the intact frame is accepted");

    for n in 0..frame.len() {
        assert!(process(&frame[..n], &key).is_err(), "a frame cut at {n} of {} was accepted", frame.len());
    }

    // Every single-bit flip of every byte. A flip inside the commit block or the record
    // block must be refused (hash and signature checks); flips elsewhere (seq, time, the
    // CAR's root list) may decode, but never panic.
    let Frame::Commit(c) = Frame::decode(&frame).unwrap() else { panic!("not a commit") };
    let car = Car::read(&c.blocks).unwrap();
    let guarded = [find(&frame, car.get(&c.commit).unwrap()), find(&frame, car.get(&c.ops[0].cid.unwrap()).unwrap())];
    for i in 0..frame.len() {
        for bit in 0..8 {
            let mut bad = frame.clone();
            bad[i] ^= 1 << bit;
            let result = process(&bad, &key);
            if guarded.iter().any(|r| r.contains(&i)) {
                assert!(result.is_err(), "a flip of bit {bit} at byte {i} (inside a signed or hashed block) was accepted");
            }
        }
    }

    // Random garbage of many lengths.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..2000 {
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let _ = process(&garbage, &key);
    }
}
