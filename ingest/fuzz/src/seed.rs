//! Writes the starting corpus of the fuzz targets: a valid signed commit frame
//! (`corpus/frame/`) and its CAR (`corpus/car/`), so fuzzing starts from inputs that get past
//! decoding.

use ingest::frame::Frame;

fn main() -> std::io::Result<()> {
    let secret = k256::ecdsa::SigningKey::from_slice(&[11u8; 32]).expect("a valid secret key");
    let frame = ingest::testing::commit_frame(&secret, "did:plc:fuzzseed", 1);
    let Ok(Frame::Commit(commit)) = Frame::decode(&frame) else { panic!("the seed frame decodes") };
    for (dir, bytes) in [("corpus/frame", &frame), ("corpus/car", &commit.blocks)] {
        std::fs::create_dir_all(dir)?;
        std::fs::write(format!("{dir}/seed"), bytes)?;
    }
    Ok(())
}
