//! Stored values kept compressed: the embedded log's events and the stores' rows. A value
//! of at least the caller's threshold ([`ROW_THRESHOLD`] for rows, [`EVENT_THRESHOLD`] for
//! events) is stored as a zero byte (which starts no CBOR map, the form of every event and
//! row) followed by its zstd frame, when that is shorter; any other value as it is.
//! [`unpack`] takes either form, so files written before stay readable.
//!
//! Frames are compressed with a dictionary built into svc ([`DICTIONARIES`], trained on
//! the events of the committed sample and its made-up layer: `eventlog`'s
//! `train_dictionary` example): events and rows are small and alike, and one compressed
//! alone shares nothing with the others; the dictionary holds what they have in common
//! (field names, collection NSIDs, identifier prefixes, the words of abstracts). A frame
//! names its dictionary, so a later one can be added without rewriting anything: the
//! newest compresses, each one decompresses the frames that name it, and frames of no
//! dictionary (written before there was one) decompress without.

use std::borrow::Cow;
use std::cell::RefCell;
use std::num::NonZeroU32;
use std::sync::LazyLock;

use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// Rows shorter than this are stored as they are: their frame would save little, and the
/// hot rows (counters, rankings) are small and written often.
pub const ROW_THRESHOLD: usize = 512;
/// Events shorter than this are stored as they are. With the dictionary even an event of
/// a hundred bytes (an identity, a view) shrinks by half; each is packed once.
pub const EVENT_THRESHOLD: usize = 64;
/// The first byte of a compressed value.
const MARK: u8 = 0;
/// zstd's default level, several hundred MB/s on one core ([`pack`]).
const LEVEL: i32 = 3;
/// zstd's level for what is written live ([`pack_live`]): rows and the log's blocks. A
/// busy eprint's usage rows (its recent viewers, its history: kilobytes each) are rewritten
/// at every batch, and at level 3 packing them was a quarter of the usage model's time.
/// Level 1 packs them in 55–85 % of the time (records 13–21 % larger: the `pack_rows`
/// example). The log's blocks of views pack 3.3 times as fast and 3 % smaller than at level
/// 3, blocks of arXiv records 1.7 times as fast and 10 % larger (`zstd -b` with the
/// dictionary on 45 KB blocks, docs/performance.md, fifty-seventh session). A repack
/// ([`pack_small`]) shrinks both again.
const LIVE_LEVEL: i32 = 1;
/// zstd's level for values rewritten offline ([`pack_small`]): about 4 times slower to
/// compress than [`LEVEL`], some 7 % smaller on the log's blocks, as fast to decompress.
const SMALL_LEVEL: i32 = 9;
/// A thread keeps its compression context while it is at most this big: contexts grow to
/// fit the largest value they compressed, and a thread that once packed a large one should
/// not hold that much for good. Big enough for the log's blocks (about 45 KB of events
/// each, a context of about 590 KB): the log's flusher, which packs nothing else, keeps
/// its context instead of building one per block.
const KEPT_CONTEXT_BYTES: usize = 1024 * 1024;
/// The largest value a frame may claim to hold (a damaged header must not allocate more).
const MAX_UNPACKED: u64 = 1 << 30;

/// The dictionaries built in, oldest first: the last compresses new values. Never remove
/// one: stored frames name it.
pub const DICTIONARIES: &[&[u8]] = &[include_bytes!("../dictionaries/1.zdict")];

/// The built-in dictionaries, prepared once per process.
struct Prepared {
    /// The newest, for compressing.
    encoder: EncoderDictionary<'static>,
    /// Each, by the id frames name it with.
    decoders: Vec<(NonZeroU32, DecoderDictionary<'static>)>,
}

static PREPARED: LazyLock<Prepared> = LazyLock::new(|| Prepared {
    encoder: newest_prepared(LEVEL),
    decoders: DICTIONARIES
        .iter()
        .map(|d| (zstd::zstd_safe::get_dict_id_from_dict(d).expect("a trained dictionary has an id"), DecoderDictionary::copy(d)))
        .collect(),
});

/// The newest dictionary prepared for [`LIVE_LEVEL`].
static PREPARED_LIVE: LazyLock<EncoderDictionary<'static>> = LazyLock::new(|| newest_prepared(LIVE_LEVEL));

/// The newest dictionary prepared for [`SMALL_LEVEL`].
static PREPARED_SMALL: LazyLock<EncoderDictionary<'static>> = LazyLock::new(|| newest_prepared(SMALL_LEVEL));

/// The newest built-in dictionary, prepared for compressing at `level`.
fn newest_prepared(level: i32) -> EncoderDictionary<'static> {
    EncoderDictionary::copy(DICTIONARIES.last().expect("a dictionary is built in"), level)
}

thread_local! {
    // One context per thread, reused: creating one costs more than packing a row (a
    // profile of `recordView` had 10 % of svc's time in zstd's context constructors).
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static LIVE_COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static SMALL_COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    /// Per dictionary id (0: none), the thread's decompression context.
    static DECOMPRESSORS: RefCell<Vec<(u32, Decompressor<'static>)>> = const { RefCell::new(Vec::new()) };
}

/// The stored form of `bytes` (a CBOR map), compressed when it is at least `threshold`
/// bytes long and its frame is shorter.
pub fn pack(bytes: Vec<u8>, threshold: usize) -> Vec<u8> {
    pack_with(bytes, threshold, &COMPRESSOR, &PREPARED.encoder)
}

/// As [`pack`], compressed faster (zstd's level 1 instead of 3): for what is written live,
/// rows and the log's blocks ([`LIVE_LEVEL`]).
pub fn pack_live(bytes: Vec<u8>, threshold: usize) -> Vec<u8> {
    pack_with(bytes, threshold, &LIVE_COMPRESSOR, &PREPARED_LIVE)
}

/// As [`pack`], compressed harder (zstd's level 9 instead of 3): for values written once by
/// offline work (a file repacked after a replay), where a few seconds more buy a smaller
/// file. Read back by [`unpack`] as fast.
pub fn pack_small(bytes: Vec<u8>, threshold: usize) -> Vec<u8> {
    pack_with(bytes, threshold, &SMALL_COMPRESSOR, &PREPARED_SMALL)
}

fn pack_with(
    bytes: Vec<u8>,
    threshold: usize,
    context: &'static std::thread::LocalKey<RefCell<Option<Compressor<'static>>>>,
    dictionary: &'static EncoderDictionary<'static>,
) -> Vec<u8> {
    if bytes.len() < threshold {
        return bytes;
    }
    let frame = context.with_borrow_mut(|kept| {
        let compressor = match kept {
            Some(c) => c,
            None => kept.insert(Compressor::with_prepared_dictionary(dictionary).ok()?),
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

/// Whether `stored` is a compressed value (a frame [`pack`] made), not one kept as it is.
pub fn is_packed(stored: &[u8]) -> bool {
    stored.first() == Some(&MARK)
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
    let dictionary = zstd::zstd_safe::get_dict_id_from_frame(frame);
    DECOMPRESSORS
        .with_borrow_mut(|kept| {
            let id = dictionary.map_or(0, NonZeroU32::get);
            let at = match kept.iter().position(|(i, _)| *i == id) {
                Some(at) => at,
                None => {
                    kept.push((id, decompressor(dictionary)?));
                    kept.len() - 1
                }
            };
            let decompressor = &mut kept[at].1;
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

/// A decompression context for frames of `dictionary` (none: no dictionary).
fn decompressor(dictionary: Option<NonZeroU32>) -> std::io::Result<Decompressor<'static>> {
    let Some(id) = dictionary else { return Decompressor::new() };
    match PREPARED.decoders.iter().find(|(i, _)| *i == id) {
        Some((_, prepared)) => Decompressor::with_prepared_dictionary(prepared),
        None => Err(std::io::Error::other(format!("compressed with dictionary {id}, which this build does not have"))),
    }
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
        assert_eq!(pack(small.clone(), ROW_THRESHOLD), small, "below the threshold: as it is");
        let mut text = vec![0x78, 0x19, 0x08, 0x00];
        text.extend("an abstract that repeats itself ".repeat(100).bytes());
        let packed = pack(text.clone(), ROW_THRESHOLD);
        assert_eq!(packed[0], MARK);
        assert!(packed.len() < text.len() / 4, "{} of {}", packed.len(), text.len());
        assert_eq!(unpack(&packed).unwrap(), text.as_slice());
        assert_eq!(unpack(&small).unwrap(), small.as_slice(), "a value stored before: as it is");
        let row = pack_live(text.clone(), ROW_THRESHOLD);
        assert!(row[0] == MARK && row.len() < text.len() / 4, "a row packed fast: {} of {}", row.len(), text.len());
        assert_eq!(unpack(&row).unwrap(), text.as_slice());
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..2_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 56) as u8
            })
            .collect();
        assert_eq!(pack(noise.clone(), ROW_THRESHOLD), noise, "no shorter once compressed: as it is");
        assert!(unpack(&[MARK, 1, 2, 3]).is_err());
    }

    #[test]
    fn values_packed_small_unpack_alike_and_are_no_larger() {
        let text: Vec<u8> =
            (0..400).flat_map(|i| format!("{{\"title\": \"paper {i} on graphs\", \"did\": \"did:plc:{i:024}\"}}").into_bytes()).collect();
        let (fast, small) = (pack(text.clone(), 0), pack_small(text.clone(), 0));
        assert!(small.len() <= fast.len(), "{} > {}", small.len(), fast.len());
        assert_eq!(unpack(&small).unwrap(), text.as_slice());
        assert_eq!(pack_small(vec![0xA0], 64), vec![0xA0], "below the threshold: as it is");
    }

    #[test]
    fn frames_written_before_they_recorded_their_size_still_unpack() {
        // Compressed 1,000 to 1 or so: the first guess at its size is far too small.
        let text = "a row packed by a streaming encoder ".repeat(20_000).into_bytes();
        let mut old = vec![MARK];
        zstd::stream::copy_encode(text.as_slice(), &mut old, LEVEL).unwrap();
        assert_eq!(zstd::zstd_safe::get_frame_content_size(&old[1..]).unwrap(), None, "no size in the frame");
        assert_eq!(unpack(&old).unwrap(), text.as_slice());
        let new = pack(text.clone(), ROW_THRESHOLD);
        assert_eq!(zstd::zstd_safe::get_frame_content_size(&new[1..]).unwrap(), Some(text.len() as u64));
    }

    #[test]
    fn frames_of_no_dictionary_still_unpack_and_an_unknown_dictionary_is_named() {
        let text = "a row compressed before svc had a dictionary ".repeat(40).into_bytes();
        let mut old = vec![MARK];
        old.extend(zstd::bulk::compress(&text, LEVEL).unwrap());
        assert_eq!(zstd::zstd_safe::get_dict_id_from_frame(&old[1..]), None);
        assert_eq!(unpack(&old).unwrap(), text.as_slice());
        let new = pack(text.clone(), ROW_THRESHOLD);
        assert!(zstd::zstd_safe::get_dict_id_from_frame(&new[1..]).is_some(), "compressed with the dictionary");
        assert_eq!(unpack(&new).unwrap(), text.as_slice());

        let foreign = zstd::dict::from_continuous(&text.repeat(20), &[text.len(); 20], 4_096).unwrap_or_else(|_| {
            // Too little to train on: any dictionary with an id of its own will do.
            let mut d = DICTIONARIES[0].to_vec();
            d[4..8].copy_from_slice(&7_777_777u32.to_le_bytes());
            d
        });
        let mut other = vec![MARK];
        other.extend(zstd::bulk::Compressor::with_dictionary(LEVEL, &foreign).unwrap().compress(&text).unwrap());
        let err = unpack(&other).unwrap_err();
        assert!(err.contains("dictionary") && err.contains("this build does not have"), "{err}");
    }

    #[test]
    fn the_dictionary_compresses_a_small_event() {
        // The CBOR of a seeded identity event's payload, about 120 bytes: alone, zstd
        // cannot shorten it; with the dictionary it can.
        let mut event = vec![0xA3];
        for (k, v) in
            [("did", "did:plc:hklf5nsjlsd62bboiqhoz6qk"), ("handle", "xianming-zeng-hklf.arxiv.test"), ("displayName", "Xianming Zeng")]
        {
            event.push(0x60 + k.len() as u8);
            event.extend(k.bytes());
            event.push(0x78);
            event.push(v.len() as u8);
            event.extend(v.bytes());
        }
        let plain = zstd::bulk::compress(&event, LEVEL).unwrap().len();
        let packed = pack(event.clone(), EVENT_THRESHOLD);
        assert!(plain >= event.len() - 10, "zstd alone: {plain} of {}", event.len());
        assert!(packed.len() < event.len() * 3 / 4, "with the dictionary: {} of {}", packed.len(), event.len());
        assert_eq!(unpack(&packed).unwrap(), event.as_slice());
        assert_eq!(pack(event[..40].to_vec(), EVENT_THRESHOLD), event[..40], "below the events' threshold: as it is");
    }

    #[test]
    fn a_thread_keeps_its_context_after_packing_a_log_block() {
        // About what a block of the log's events holds before it is compressed.
        let block: Vec<u8> = (0..45_000u32).map(|i| (i.wrapping_mul(7919) % 251) as u8 ^ (i / 13) as u8).collect();
        pack(block, EVENT_THRESHOLD);
        assert!(COMPRESSOR.with_borrow(Option::is_some), "the context is kept for the next block");
    }

    #[test]
    fn the_built_in_dictionaries_have_ids_of_their_own() {
        let ids: std::collections::BTreeSet<_> = PREPARED.decoders.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids.len(), DICTIONARIES.len());
    }
}
