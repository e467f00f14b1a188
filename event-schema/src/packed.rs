//! Large stored values kept compressed: the embedded log's events and the stores' rows. A
//! value of at least [`THRESHOLD`] bytes is stored as a zero byte (which starts no CBOR map,
//! the form of every event and row) followed by its zstd frame, when that is shorter; any
//! other value as it is. [`unpack`] takes either form, so files written before stay
//! readable.

use std::borrow::Cow;
use std::cell::RefCell;

use zstd::bulk::{Compressor, Decompressor};

/// Values shorter than this are stored as they are: their frame would save little.
pub const THRESHOLD: usize = 512;
/// The first byte of a compressed value.
const MARK: u8 = 0;
/// zstd's level: its default, several hundred MB/s on one core.
const LEVEL: i32 = 3;
/// A thread keeps its compression context while it is at most this big: contexts grow to
/// fit the largest value they compressed, and a thread that once packed a large one should
/// not hold that much for good.
const KEPT_CONTEXT_BYTES: usize = 256 * 1024;
/// The largest value a frame may claim to hold (a damaged header must not allocate more).
const MAX_UNPACKED: u64 = 1 << 30;

thread_local! {
    // One context per thread, reused: creating one costs more than packing a row (a
    // profile of `recordView` had 10 % of svc's time in zstd's context constructors).
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// The stored form of `bytes` (a CBOR map).
pub fn pack(bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() < THRESHOLD {
        return bytes;
    }
    let frame = COMPRESSOR.with_borrow_mut(|kept| {
        let compressor = match kept {
            Some(c) => c,
            None => kept.insert(Compressor::new(LEVEL).ok()?),
        };
        let frame = compressor.compress(&bytes).ok();
        if compressor.context_mut().sizeof() > KEPT_CONTEXT_BYTES {
            *kept = None;
        }
        frame
    });
    match frame {
        // The frame records the value's size, which `unpack` allocates at once.
        Some(mut frame) if frame.len() + 1 < bytes.len() => {
            frame.insert(0, MARK);
            frame
        }
        _ => bytes,
    }
}

/// The value stored as `stored` by [`pack`] (or stored before values were packed).
///
/// # Errors
/// The reason, when a compressed value does not decompress.
pub fn unpack(stored: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    let Some((&MARK, frame)) = stored.split_first() else { return Ok(Cow::Borrowed(stored)) };
    // Frames written before values recorded their size: a guess, doubled until it fits.
    let (mut capacity, known) = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size <= MAX_UNPACKED => (size as usize, true),
        _ => (frame.len().saturating_mul(8).max(4096), false),
    };
    DECOMPRESSOR
        .with_borrow_mut(|kept| {
            let decompressor = match kept {
                Some(d) => d,
                None => kept.insert(Decompressor::new()?),
            };
            loop {
                match decompressor.decompress(frame, capacity) {
                    Err(e) if !known && capacity < MAX_UNPACKED as usize && is_too_small(&e) => capacity *= 2,
                    done => return done,
                }
            }
        })
        .map(Cow::Owned)
        .map_err(|e| format!("compressed value: {e}"))
}

/// Whether zstd refused to decompress into a buffer too small for the value.
fn is_too_small(e: &std::io::Error) -> bool {
    // zstd returns an error as the negated code; the crate's error carries its name.
    let code = 0usize.wrapping_sub(zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize);
    let too_small = zstd::zstd_safe::get_error_name(code);
    e.to_string() == too_small
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_values_are_compressed_and_every_value_comes_back() {
        let small = vec![0xA1, 0x61, b'k', 0x01];
        assert_eq!(pack(small.clone()), small, "below the threshold: as it is");
        let mut text = vec![0x78, 0x19, 0x08, 0x00];
        text.extend("an abstract that repeats itself ".repeat(100).bytes());
        let packed = pack(text.clone());
        assert_eq!(packed[0], MARK);
        assert!(packed.len() < text.len() / 4, "{} of {}", packed.len(), text.len());
        assert_eq!(unpack(&packed).unwrap(), text.as_slice());
        assert_eq!(unpack(&small).unwrap(), small.as_slice(), "a value stored before: as it is");
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..2_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 56) as u8
            })
            .collect();
        assert_eq!(pack(noise.clone()), noise, "no shorter once compressed: as it is");
        assert!(unpack(&[MARK, 1, 2, 3]).is_err());
    }

    #[test]
    fn frames_written_before_they_recorded_their_size_still_unpack() {
        // Compressed 1,000 to 1 or so: the first guess at its size is far too small.
        let text = "a row packed by a streaming encoder ".repeat(20_000).into_bytes();
        let mut old = vec![MARK];
        zstd::stream::copy_encode(text.as_slice(), &mut old, LEVEL).unwrap();
        assert_eq!(zstd::zstd_safe::get_frame_content_size(&old[1..]).unwrap(), None, "no size in the frame");
        assert_eq!(unpack(&old).unwrap(), text.as_slice());
        let new = pack(text.clone());
        assert_eq!(zstd::zstd_safe::get_frame_content_size(&new[1..]).unwrap(), Some(text.len() as u64));
    }
}
