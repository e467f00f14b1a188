//! Large stored values kept compressed: the embedded log's events and the stores' rows. A
//! value of at least [`THRESHOLD`] bytes is stored as a zero byte (which starts no CBOR map,
//! the form of every event and row) followed by its zstd frame, when that is shorter; any
//! other value as it is. [`unpack`] takes either form, so files written before stay
//! readable.

use std::borrow::Cow;

/// Values shorter than this are stored as they are: their frame would save little.
pub const THRESHOLD: usize = 512;
/// The first byte of a compressed value.
const MARK: u8 = 0;
/// zstd's level: its default, several hundred MB/s on one core.
const LEVEL: i32 = 3;

/// The stored form of `bytes` (a CBOR map).
pub fn pack(bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() < THRESHOLD {
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len() / 2 + 16);
    out.push(MARK);
    match zstd::stream::copy_encode(bytes.as_slice(), &mut out, LEVEL) {
        Ok(()) if out.len() < bytes.len() => out,
        _ => bytes,
    }
}

/// The value stored as `stored` by [`pack`] (or stored before values were packed).
///
/// # Errors
/// The reason, when a compressed value does not decompress.
pub fn unpack(stored: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    match stored.split_first() {
        Some((&MARK, frame)) => zstd::stream::decode_all(frame).map(Cow::Owned).map_err(|e| format!("compressed value: {e}")),
        _ => Ok(Cow::Borrowed(stored)),
    }
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
}
