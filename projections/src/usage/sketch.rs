//! Distinct viewers, estimated by HyperLogLog++ (Heule, Nunkesser and Hall, 2013; the
//! `hyperloglogplus` crate) and kept in a row as text. Sketches merge: the daily sketches of
//! an eprint combine into the distinct viewers of any run of days.
//!
//! Precision 12 (4,096 registers): a standard error of 1.04/√4096 ≈ 1.6 % once the sketch
//! is dense (at most about 3.3 KB); below a few thousand viewers the sparse representation
//! holds the viewers' 25-bit hash codes and is exact but for their collisions.

use std::hash::{BuildHasher, Hasher};

use data_encoding::BASE64_NOPAD;
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use serde::{Deserialize, Serialize};
use store::{Columns, Value};

/// Registers: 2^12.
const PRECISION: u8 = 12;

/// Viewers are pseudonyms made by a keyed hash: already uniform, so their first 8 bytes are
/// the sketch's hash as they are (stable across builds and Rust releases, unlike std's
/// hashers, so sketches written by any svc merge).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Uniform;

/// The hasher of [`Uniform`]: keeps the last `u64` written.
#[derive(Default)]
pub struct Taken(u64);

impl Hasher for Taken {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u64` keys; folds anything else.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl BuildHasher for Uniform {
    type Hasher = Taken;

    fn build_hasher(&self) -> Taken {
        Taken(0)
    }
}

/// The 64-bit hash of a viewer's pseudonym (hex): its first 16 digits, or its bytes folded
/// when it is not such a pseudonym.
pub(crate) fn viewer_hash(viewer: &str) -> u64 {
    viewer.get(..16).and_then(|h| u64::from_str_radix(h, 16).ok()).unwrap_or_else(|| {
        let mut h = Taken(0);
        h.write(viewer.as_bytes());
        h.finish()
    })
}

/// A set of viewers, estimated.
#[derive(Clone)]
pub struct Viewers(HyperLogLogPlus<u64, Uniform>);

impl Default for Viewers {
    fn default() -> Self {
        Viewers(HyperLogLogPlus::new(PRECISION, Uniform).expect("a valid precision"))
    }
}

impl std::fmt::Debug for Viewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Viewers")
    }
}

impl Viewers {
    /// The sketch held in `text` (as [`Viewers::to_text`] wrote it); empty when absent or
    /// unreadable.
    pub fn from_text(text: Option<&str>) -> Viewers {
        text.and_then(|t| BASE64_NOPAD.decode(t.as_bytes()).ok())
            .and_then(|b| cbor4ii::serde::from_slice::<HyperLogLogPlus<u64, Uniform>>(&b).ok())
            .map_or_else(Viewers::default, Viewers)
    }

    /// The sketch a row holds in `column` (see [`Viewers::from_text`]).
    pub fn in_column(row: &Columns, column: &str) -> Viewers {
        Viewers::from_text(row.get(column).and_then(Value::as_text))
    }

    /// The sketch as text (CBOR, base64).
    pub fn to_text(&mut self) -> String {
        // Counting folds the pending hash codes into the sparse list first, so the text
        // holds no hash set (whose order would vary).
        self.0.count();
        BASE64_NOPAD.encode(&cbor4ii::serde::to_vec(Vec::new(), &self.0).expect("a sketch serializes"))
    }

    /// Adds the viewer whose pseudonym is `viewer` (see [`viewer_hash`]).
    pub fn insert(&mut self, viewer: &str) {
        self.0.insert(&viewer_hash(viewer));
    }

    /// Adds every viewer of `other`.
    pub fn merge(&mut self, other: &Viewers) {
        // Same precision by construction.
        let _ = self.0.merge(&other.0);
    }

    /// How many distinct viewers, estimated.
    pub fn count(&mut self) -> u64 {
        self.0.count().round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudonym(i: u64) -> String {
        // A keyed hash stands in: splitmix64 spreads the bits as one does.
        let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        format!("{:016x}{:016x}", z ^ (z >> 31), i)
    }

    #[test]
    fn small_sets_are_exact_large_ones_within_the_error_and_sketches_merge_and_survive_text() {
        let mut few = Viewers::default();
        for i in 0..100 {
            few.insert(&pseudonym(i % 37));
        }
        assert_eq!(few.count(), 37);
        let mut day1 = Viewers::default();
        let mut day2 = Viewers::default();
        for i in 0..60_000 {
            day1.insert(&pseudonym(i));
        }
        for i in 40_000..100_000 {
            day2.insert(&pseudonym(i));
        }
        let mut both = Viewers::from_text(Some(&day1.to_text()));
        both.merge(&Viewers::from_text(Some(&day2.to_text())));
        let n = both.count() as f64;
        assert!((n - 100_000.0).abs() / 100_000.0 < 0.05, "{n}");
        assert!(day1.to_text().len() < 6_000, "{}", day1.to_text().len());
        assert_eq!(Viewers::from_text(Some("not a sketch")).count(), 0);
    }
}
