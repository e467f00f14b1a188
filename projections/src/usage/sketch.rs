//! Distinct viewers, estimated by HyperLogLog (Flajolet, Fusy, Gandouet and Meunier, 2007)
//! with the sparse representation of HyperLogLog++ (Heule, Nunkesser and Hall, 2013) and the
//! improved estimator of Ertl (2017, "New cardinality estimation algorithms for HyperLogLog
//! sketches", which needs no empirical bias tables). Sketches merge: the daily sketches of an
//! eprint combine into the distinct viewers of any run of days.
//!
//! Precision 12 (4,096 registers): a standard error of 1.04/√4096 ≈ 1.6 % once the sketch
//! is dense. Up to [`SPARSE_MAX`] viewers it is sparse: the viewers' 25-bit hash codes, exact
//! but for their collisions (linear counting over 2^25).
//!
//! Stored form, made to be read fast (`getMetrics` merges several per request) and written
//! fast (a busy eprint's day is rewritten by every batch): bytes (base64 text in rows of builds
//! before 2026-12), one tag byte, then either the sparse codes (`u32`, little-endian,
//! ascending) or the registers packed: the lowest register, then each register's excess over
//! it in four bits (two a byte, the lower register in the low bits), 15 for an excess of 15 or
//! more, whose registers follow, each as its index (`u16`, little-endian) and its value, in
//! order. Registers of one sketch sit within a few ranks of one another (about log2 of the
//! viewers a register), so a dense sketch takes some 2 KB, in a few microseconds, where
//! zstd took 16 (docs/performance.md, fifty-seventh session). (Sketches of builds before
//! 2026-12-05: the 4,096 registers, one byte each.)

use store::{Columns, Value};

use super::packed_bytes;

/// Registers: 2^12.
const PRECISION: u32 = 12;
const REGISTERS: usize = 1 << PRECISION;
/// The sparse representation's precision: codes index 2^25 buckets.
const SPARSE_PRECISION: u32 = 25;
/// Codes kept sparse; one more and the sketch turns dense (4 bytes a code: as large as the
/// registers).
const SPARSE_MAX: usize = REGISTERS / 4;
/// Bits of the hash after the register index: a register holds at most this + 1.
const REMAINDER: u32 = 64 - PRECISION;

const SPARSE_TAG: u8 = 1;
/// Registers one byte each (builds before 2026-12-05: read, no longer written).
const DENSE_TAG: u8 = 2;
/// Registers packed in four bits each (see the module docs).
const PACKED_TAG: u8 = 3;
/// The four bits of a register whose excess is at least this: its value follows the nibbles.
const ESCAPE: u8 = 15;

/// The 64-bit hash of a viewer's pseudonym (hex): its first 16 digits (pseudonyms are keyed
/// hashes, already uniform, and stable across builds, so sketches written by any svc merge),
/// or its bytes folded when it is not such a pseudonym.
pub(crate) fn viewer_hash(viewer: &str) -> u64 {
    viewer
        .get(..16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| viewer.bytes().fold(0, |h, b| h.rotate_left(8) ^ u64::from(b)))
}

/// A set of viewers, estimated.
#[derive(Clone, PartialEq)]
pub enum Viewers {
    /// Codes ascending, one per 25-bit bucket: the bucket in the high bits, the rank (see
    /// [`code`]) in the low 6.
    Sparse(Vec<u32>),
    /// The registers: the highest rank seen in each.
    Dense(Box<[u8; REGISTERS]>),
}

impl Default for Viewers {
    fn default() -> Self {
        Viewers::Sparse(Vec::new())
    }
}

impl std::fmt::Debug for Viewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Viewers::Sparse(codes) => write!(f, "Viewers::Sparse({} codes)", codes.len()),
            Viewers::Dense(_) => f.write_str("Viewers::Dense"),
        }
    }
}

/// The sparse code of `hash`: its top 25 bits, then the rank of the 39 bits below them (the
/// position of their first 1, counted from 1; 40 when they are all 0).
fn code(hash: u64) -> u32 {
    let bucket = (hash >> (64 - SPARSE_PRECISION)) as u32;
    let rest = hash << SPARSE_PRECISION;
    let rank = (rest.leading_zeros() + 1).min(64 - SPARSE_PRECISION + 1);
    (bucket << 6) | rank
}

/// The register and rank a sparse code stands for in the dense representation.
fn register_of(code: u32) -> (usize, u8) {
    let bucket = code >> 6;
    let register = (bucket >> (SPARSE_PRECISION - PRECISION)) as usize;
    let between = bucket & ((1 << (SPARSE_PRECISION - PRECISION)) - 1);
    let rank = if between == 0 {
        SPARSE_PRECISION - PRECISION + (code & 0x3f)
    } else {
        between.leading_zeros() - (32 - (SPARSE_PRECISION - PRECISION)) + 1
    };
    (register, rank as u8)
}

/// Raises the register a sparse code falls in to the code's rank.
fn raise(registers: &mut [u8; REGISTERS], code: u32) {
    let (r, rank) = register_of(code);
    registers[r] = registers[r].max(rank);
}

/// Merges two ascending code lists into one, keeping the highest rank of a bucket.
fn merge_codes(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        match (x >> 6).cmp(&(y >> 6)) {
            std::cmp::Ordering::Less => {
                out.push(x);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(y);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(x.max(y));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Appends the packed form of `registers` to `out` (see the module docs).
fn pack_registers(registers: &[u8; REGISTERS], out: &mut Vec<u8>) {
    let base = registers.iter().copied().min().unwrap_or(0);
    out.reserve(1 + REGISTERS / 2);
    out.push(base);
    let excess = |r: u8| (r - base).min(ESCAPE);
    out.extend(registers.chunks_exact(2).map(|pair| excess(pair[0]) | excess(pair[1]) << 4));
    for (i, &r) in registers.iter().enumerate().filter(|(_, &r)| r - base >= ESCAPE) {
        out.extend_from_slice(&(i as u16).to_le_bytes());
        out.push(r);
    }
}

/// The registers packed in `body` (after the tag); `None` unless it is whole and exact:
/// every escaped register's value given once, in order, and nothing more.
fn unpack_registers(body: &[u8]) -> Option<Box<[u8; REGISTERS]>> {
    let (&base, rest) = body.split_first()?;
    let (nibbles, escaped) = rest.split_at_checked(REGISTERS / 2)?;
    let nibble = |i: usize| if i.is_multiple_of(2) { nibbles[i / 2] & 0x0f } else { nibbles[i / 2] >> 4 };
    let mut registers = Box::new([0u8; REGISTERS]);
    for (i, r) in registers.iter_mut().enumerate() {
        *r = base.checked_add(nibble(i))?;
    }
    if escaped.len() % 3 != 0 || escaped.len() / 3 != (0..REGISTERS).filter(|&i| nibble(i) == ESCAPE).count() {
        return None;
    }
    let mut after = 0;
    for entry in escaped.chunks_exact(3) {
        let (i, value) = (usize::from(u16::from_le_bytes([entry[0], entry[1]])), entry[2]);
        let exact = i >= after && i < REGISTERS && nibble(i) == ESCAPE && value >= registers[i] && u32::from(value) <= REMAINDER + 1;
        if !exact {
            return None;
        }
        registers[i] = value;
        after = i + 1;
    }
    Some(registers)
}

/// Ertl's σ (2017, algorithm 6).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's τ (2017, algorithm 6).
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

impl Viewers {
    /// The sketch held in `value` (as [`Viewers::to_value`] wrote it, or an earlier build's
    /// text); empty when absent or unreadable.
    pub fn from_value(value: Option<&Value>) -> Viewers {
        packed_bytes(value).and_then(|b| Viewers::from_bytes(&b)).unwrap_or_default()
    }

    fn from_bytes(bytes: &[u8]) -> Option<Viewers> {
        let (tag, body) = bytes.split_first()?;
        match *tag {
            SPARSE_TAG if body.len() % 4 == 0 => {
                let codes: Vec<u32> = body.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                codes.windows(2).all(|w| w[0] >> 6 < w[1] >> 6).then_some(Viewers::Sparse(codes))
            }
            DENSE_TAG => Some(Viewers::Dense(Box::new(body.try_into().ok()?))),
            PACKED_TAG => unpack_registers(body).map(Viewers::Dense),
            _ => None,
        }
    }

    /// The sketch a row holds in `column` (see [`Viewers::from_value`]).
    pub fn in_column(row: &Columns, column: &str) -> Viewers {
        Viewers::from_value(row.get(column))
    }

    /// The sketch's stored form (see the module docs).
    pub fn to_value(&self) -> Value {
        let mut bytes = Vec::new();
        match self {
            Viewers::Sparse(codes) => {
                bytes.reserve(1 + 4 * codes.len());
                bytes.push(SPARSE_TAG);
                codes.iter().for_each(|c| bytes.extend_from_slice(&c.to_le_bytes()));
            }
            Viewers::Dense(registers) => {
                bytes.push(PACKED_TAG);
                pack_registers(registers, &mut bytes);
            }
        }
        Value::Bytes(bytes)
    }

    /// Adds the viewer whose pseudonym is `viewer` (see [`viewer_hash`]).
    pub fn insert(&mut self, viewer: &str) {
        let code = code(viewer_hash(viewer));
        match self {
            Viewers::Sparse(codes) => {
                match codes.binary_search_by_key(&(code >> 6), |c| c >> 6) {
                    Ok(i) => codes[i] = codes[i].max(code),
                    Err(i) => codes.insert(i, code),
                }
                self.densify_if_full();
            }
            Viewers::Dense(registers) => raise(registers, code),
        }
    }

    /// Adds every viewer of `other`.
    pub fn merge(&mut self, other: &Viewers) {
        match (&mut *self, other) {
            (Viewers::Sparse(mine), Viewers::Sparse(theirs)) => {
                if theirs.is_empty() {
                    return;
                }
                *mine = if mine.is_empty() { theirs.clone() } else { merge_codes(mine, theirs) };
                self.densify_if_full();
            }
            (Viewers::Dense(registers), Viewers::Sparse(codes)) => codes.iter().for_each(|&c| raise(registers, c)),
            (Viewers::Dense(mine), Viewers::Dense(theirs)) => {
                mine.iter_mut().zip(theirs.iter()).for_each(|(m, t)| *m = (*m).max(*t));
            }
            (Viewers::Sparse(_), Viewers::Dense(theirs)) => {
                let mut merged = Viewers::Dense(theirs.clone());
                merged.merge(self);
                *self = merged;
            }
        }
    }

    /// Turns a sparse sketch past [`SPARSE_MAX`] codes dense.
    fn densify_if_full(&mut self) {
        if let Viewers::Sparse(codes) = self {
            if codes.len() > SPARSE_MAX {
                let mut registers = Box::new([0u8; REGISTERS]);
                codes.iter().for_each(|&c| raise(&mut registers, c));
                *self = Viewers::Dense(registers);
            }
        }
    }

    /// How many distinct viewers, estimated.
    pub fn count(&self) -> u64 {
        match self {
            Viewers::Sparse(codes) => {
                // Linear counting over the 2^25 buckets.
                let m = f64::from(1u32 << SPARSE_PRECISION);
                (m * (m / (m - codes.len() as f64)).ln()).round() as u64
            }
            Viewers::Dense(registers) => {
                let mut histogram = [0u32; REMAINDER as usize + 2];
                registers.iter().for_each(|&r| histogram[usize::from(r)] += 1);
                let m = REGISTERS as f64;
                let q = REMAINDER as usize;
                let mut z = m * tau(1.0 - f64::from(histogram[q + 1]) / m);
                for k in (1..=q).rev() {
                    z = 0.5 * (z + f64::from(histogram[k]));
                }
                z += m * sigma(f64::from(histogram[0]) / m);
                (m * m / (2.0 * std::f64::consts::LN_2) / z).round() as u64
            }
        }
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

    fn of(range: std::ops::Range<u64>) -> Viewers {
        let mut v = Viewers::default();
        range.for_each(|i| v.insert(&pseudonym(i)));
        v
    }

    #[test]
    fn small_sets_are_exact_large_ones_within_the_error_and_sketches_merge_and_survive_their_stored_forms() {
        let mut few = Viewers::default();
        for i in 0..100 {
            few.insert(&pseudonym(i % 37));
        }
        assert_eq!(few.count(), 37);
        let (day1, day2) = (of(0..60_000), of(40_000..100_000));
        let mut both = Viewers::from_value(Some(&day1.to_value()));
        both.merge(&Viewers::from_value(Some(&day2.to_value())));
        let n = both.count() as f64;
        assert!((n - 100_000.0).abs() / 100_000.0 < 0.05, "{n}");
        assert!(day1.to_value().as_bytes().map(<[u8]>::len) < Some(2 + REGISTERS / 2 + 3 * 8), "packed in four bits a register");
        // An earlier build's text reads as the same sketch.
        let text = Value::Text(data_encoding::BASE64_NOPAD.encode(day1.to_value().as_bytes().unwrap()));
        assert!(Viewers::from_value(Some(&text)) == day1);
        assert_eq!(Viewers::from_value(Some(&Value::Text("not a sketch".into()))).count(), 0);
        assert_eq!(Viewers::from_value(Some(&Value::Bytes(vec![9, 9]))).count(), 0);
        assert_eq!(Viewers::from_value(None).count(), 0);
    }

    #[test]
    fn registers_packed_read_back_whole_with_their_escapes_and_the_earlier_form_reads_alike() {
        for n in [1_025, 5_000, 300_000, 2_000_000] {
            let Viewers::Dense(mut registers) = of(0..n) else { panic!("{n} viewers make a dense sketch") };
            // Registers far above the rest, as a viewer whose hash begins with many zeros
            // makes: escaped, first, last and in between.
            for (i, r) in [(0, 40), (1, 53), (2_047, 30), (4_095, 52)] {
                registers[i] = r;
            }
            let sketch = Viewers::Dense(registers.clone());
            let stored = sketch.to_value();
            let bytes = stored.as_bytes().unwrap();
            assert_eq!(bytes[0], PACKED_TAG);
            assert_eq!(Viewers::from_value(Some(&stored)), sketch, "{n} viewers");
            let mut earlier = vec![DENSE_TAG];
            earlier.extend_from_slice(&registers[..]);
            assert_eq!(Viewers::from_value(Some(&Value::Bytes(earlier))), sketch, "one byte a register, as builds before wrote");
            // Cut short, an escape dropped or added, a value below its escape: not a sketch.
            let broken = |bytes: Vec<u8>| Viewers::from_value(Some(&Value::Bytes(bytes))).count();
            assert_eq!(broken(bytes[..bytes.len() - 1].to_vec()), 0);
            assert_eq!(broken(bytes[..bytes.len() - 3].to_vec()), 0);
            assert_eq!(broken([bytes, &[4, 0, 60]].concat()), 0);
            let mut low = bytes.to_vec();
            *low.last_mut().unwrap() = 1;
            assert_eq!(broken(low), 0);
        }
    }

    #[test]
    fn the_estimate_stays_within_four_standard_errors_across_the_range() {
        // 1.04/√4096 ≈ 1.6 %; sparse sketches are nearly exact.
        for n in [1, 10, 500, 1_024, 1_025, 2_000, 5_000, 20_000, 300_000, 2_000_000] {
            let estimate = of(0..n).count() as f64;
            let error = (estimate - n as f64).abs() / n as f64;
            let bound = if n <= SPARSE_MAX as u64 { 0.001 } else { 0.065 };
            assert!(error <= bound, "{n} viewers estimated {estimate}");
        }
    }

    #[test]
    fn merging_is_the_union_whatever_the_representations_and_order() {
        let pairs = [(0..300, 200..700), (0..300, 100..3_000), (0..5_000, 4_000..4_100), (0..9_000, 3_000..20_000)];
        for (a, b) in pairs {
            let union = of(a.start.min(b.start)..a.end.max(b.end));
            let (mut ab, mut ba) = (of(a.clone()), of(b.clone()));
            ab.merge(&of(b.clone()));
            ba.merge(&of(a.clone()));
            // The same sketch as inserting the union: HyperLogLog's merge loses nothing.
            let dense = |mut v: Viewers| {
                v.merge(&Viewers::Dense(Box::new([0; REGISTERS])));
                v
            };
            assert_eq!(dense(ab.clone()), dense(union.clone()), "{a:?} ∪ {b:?}");
            assert_eq!(ab.count(), ba.count());
            assert_eq!(ab.count(), union.count());
        }
    }

    #[test]
    fn a_sparse_sketch_turns_dense_past_its_limit_and_counts_the_same_way() {
        let sparse = of(0..SPARSE_MAX as u64);
        assert!(matches!(sparse, Viewers::Sparse(_)));
        let dense = of(0..SPARSE_MAX as u64 + 1);
        assert!(matches!(dense, Viewers::Dense(_)));
        let n = dense.count() as f64;
        assert!((n - 1_025.0).abs() / 1_025.0 < 0.05, "{n}");
        assert_eq!(Viewers::from_value(Some(&dense.to_value())), dense);
        assert_eq!(Viewers::from_value(Some(&sparse.to_value())), sparse);
    }
}
