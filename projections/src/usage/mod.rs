//! The usage read model: how eprints are read, counted by the rules of the COUNTER Code of
//! Practice (release 5), from the `command.usage` events `pub.svc.metrics.record*` append.
//!
//! - Only what svc accepted is in the log (a view of an eprint it does not index is refused
//!   before); a use by a robot (a user agent on the COUNTER-Robots list, flagged by the API)
//!   is kept in the log and counted apart, never as a view or download.
//! - Double clicks: a view, download or search click by the same viewer of the same eprint within 30 s
//!   of that viewer's previous one is not counted again; a run of such clicks counts once.
//! - Totals and distinct viewers are kept apart: distinct viewers per UTC day in a
//!   HyperLogLog++ sketch ([`sketch`]), merged over any run of days, and one for all time.
//! - Trending is forward decay (Cormode, Shkapenyuk, Srivastava and Xu, ICDE 2009) with an
//!   exponential: an eprint's score at time `t` for a window of mean lifetime `τ` is
//!   `Σ exp(−(t − tᵢ)/τ)` over its counted views and downloads `tᵢ ≤ t`. It is kept as
//!   `ln Σ exp((tᵢ − L)/τ)` from a fixed landmark `L`, which only grows: ordering eprints by
//!   it orders them by score at any time after their last use, and the score at `t` is
//!   `exp(kept − (t − L)/τ)`. Each use also writes the eprint's running totals at its time
//!   (`history`), so every figure can be read as of any past instant.
//! - Viewers are pseudonyms (keyed hashes made by the API); rows hold no address and no DID.
//!
//! A batch reads each eprint's rows once and writes them once, at its end: a busy eprint's
//! sketches and recent uses are decoded and encoded once per batch, not once per use, and
//! its rankings move once from where they stood before the batch to where they stand after.
//! Its recent uses, its days, its hours and its `papers` row are not even read again by its
//! next batch: the model keeps them decoded while its batches follow on from one another
//! ([`warm`]).
//!
//! Tables of model `usage` (partition key → clustering key: columns):
//! - `papers`: eprint URI → ∅, from the eprint's first use on (its first use reads it from
//!   the eprints model's row; an eprint never used costs this model nothing): the eprint as
//!   the model knows it (`rev`, `live`, `title`, `fields`),
//!   its totals (`views`, `downloads`, `robots`, `doubleClicks`, `searchClicks`,
//!   `searchDownloads`, `dwells`, `dwellMs`), its decayed sums (`decay24h`, `decay7d`,
//!   `decay30d`), `lastAt` (µs) and `day`, the day of its newest `daily` row. Small:
//!   `getSubmission` reads it.
//! - `seen`: eprint URI → slot (2 s since the epoch): `recent`, the uses of that slot, for
//!   the double-click rule ([`recent`]); a batch rewrites the slots its uses fall in and
//!   deletes those older than 30 s before its newest use. (Rows of earlier builds: one per
//!   eprint, of an empty key, holding every use of the last 30 s; or slots of 10 s.)
//! - `before`: eprint URI → ∅: what the days before its newest `daily` row (`day`) add up
//!   to: `before7d`, `before30d` and `beforeAll` (the sketches of the 6 and 29 days before
//!   and of every day before, merged) and `days` (the views of the 29 days before, per
//!   day). Written when a counted use opens a day, so that `getMetrics` merges one day's
//!   sketch with these instead of thirty, and the distinct viewers of all time are this
//!   row's with the day's, never rewritten by a batch within the day.
//! - `history`: eprint URI → time (µs) ‖ log ordinal of a batch's first counted view or
//!   download of the eprint: `points`, the totals and decayed sums after each of the
//!   batch's counted uses of it, with its time and ordinal ([`Point`]). One row a batch, not
//!   one a use: a live batch under load writes a thousand rows, not fourteen thousand. (Rows
//!   of earlier builds hold one point, as columns: `views`, `downloads` and the decayed sums.)
//! - `daily`: eprint URI → UTC day number: `views`, `downloads`, `viewers` (sketch); and
//!   [`SITE`] → day: `views`, `downloads` of every eprint.
//! - `hourly`: eprint URI, and [`SITE`] → hours since the epoch: `views`, `downloads`.
//! - `ranking`: `{window}` and `{window} {field}` → decayed sum (descending) ‖ eprint URI:
//!   `title`, `fields`. The live eprints with a counted use, best first.
//! - `searches`: [`SITE`] → ∅: `impressions`, `zeroResults`, `clicks`, `clickedImpressions`,
//!   `reciprocalRanks` (the sum of 1/rank of each impression's first click), `searchDownloads`.
//! - `impressions`: impression id → ∅: `shown` (its `command.search` was applied), `hits`,
//!   `firstRank` (of its first click, 1-based). A click may be applied before its
//!   impression (they are keyed apart): an impression is counted clicked when both are in.
//! - `zero`: `q:{normalized query}` → ∅: `n`, how often it found nothing; and [`SITE`] → count
//!   (descending) ‖ query: ∅, the zero-result queries, most frequent first.

mod apply;
pub mod read;
mod recent;
pub mod sketch;
mod warm;

pub use apply::UsageProjection;

use std::borrow::Cow;

use data_encoding::BASE64_NOPAD;
use store::{Columns, TableRef, Value};

/// The model name.
pub const MODEL: &str = "usage";

/// The bytes a packed column holds (a sketch, recent uses, history points): stored as bytes,
/// or as base64 text by builds before 2026-12 (read alike, rewritten as bytes).
pub(crate) fn packed_bytes(value: Option<&Value>) -> Option<Cow<'_, [u8]>> {
    match value? {
        Value::Bytes(bytes) => Some(Cow::Borrowed(bytes)),
        Value::Text(text) => BASE64_NOPAD.decode(text.as_bytes()).ok().map(Cow::Owned),
        _ => None,
    }
}

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["papers", "seen", "before", "history", "daily", "hourly", "ranking", "searches", "impressions", "zero"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["papers", "seen", "before", "daily", "hourly", "ranking", "searches", "impressions", "zero"];

/// The partition of `daily` and `hourly` that counts every eprint (no URI starts with `*`).
pub const SITE: &str = "*";

/// Tables whose rows every batch that uses their eprint rewrites, stored uncompressed
/// ([`TableRef::rewritten_often`]): an eprint's day (its counts and its viewers' sketch,
/// packed already: [`sketch`]) and its recent uses (their viewers' hashes, which compress
/// no shorter).
const REWRITTEN_OFTEN: &[&str] = &["daily", "seen"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    let table = TableRef::new(MODEL, version, name);
    if REWRITTEN_OFTEN.contains(&name) {
        table.rewritten_often()
    } else {
        table
    }
}

/// The landmark of the decayed sums: 2020-01-01T00:00:00Z, in seconds.
pub const LANDMARK: i64 = 1_577_836_800;

/// Two uses by one viewer closer than this (µs) are one click (COUNTER's double-click rule).
pub const DOUBLE_CLICK_MICROS: i64 = 30_000_000;

/// A trending window: the mean lifetime of a use's weight in the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// 24 hours.
    Day,
    /// 7 days.
    Week,
    /// 30 days.
    Month,
}

impl Window {
    /// Every window.
    pub const ALL: [Window; 3] = [Window::Day, Window::Week, Window::Month];

    /// Its name in the API (`24h`, `7d`, `30d`).
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Day => "24h",
            Window::Week => "7d",
            Window::Month => "30d",
        }
    }

    /// The window of a name: `24h`, `7d`, `30d`, or the contract's `day`, `week`, `month`.
    pub fn parse(s: &str) -> Option<Window> {
        match s {
            "24h" | "day" => Some(Window::Day),
            "7d" | "week" => Some(Window::Week),
            "30d" | "month" => Some(Window::Month),
            _ => None,
        }
    }

    /// Its length in seconds.
    pub fn seconds(self) -> i64 {
        match self {
            Window::Day => 86_400,
            Window::Week => 7 * 86_400,
            Window::Month => 30 * 86_400,
        }
    }

    /// The column of `papers` and `history` holding this window's decayed sum.
    pub fn column(self) -> &'static str {
        match self {
            Window::Day => "decay24h",
            Window::Week => "decay7d",
            Window::Month => "decay30d",
        }
    }

    /// The exponent of one use at `at` (µs): `(at − L)/τ`.
    pub fn exponent(self, at: i64) -> f64 {
        (at as f64 / 1e6 - LANDMARK as f64) / self.seconds() as f64
    }

    /// The score at `at` (µs) of a decayed sum `kept`.
    pub fn score(self, kept: f64, at: i64) -> f64 {
        (kept - self.exponent(at)).exp()
    }
}

/// `ln(eᵃ + eᵇ)`, without overflow.
pub(crate) fn ln_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// The partition of `ranking` for `window`, and for one field.
pub(crate) fn ranking_partition(window: Window, field: Option<&str>) -> String {
    match field {
        Some(f) => format!("{} {f}", window.as_str()),
        None => window.as_str().to_owned(),
    }
}

/// The clustering key of an eprint in `ranking`: its decayed sum, highest first, then its URI.
pub(crate) fn ranking_key(kept: f64, uri: &str) -> Vec<u8> {
    let bits = kept.to_bits();
    let ascending = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    let mut k = (!ascending).to_be_bytes().to_vec();
    k.extend_from_slice(uri.as_bytes());
    k
}

/// The decayed sum and URI of a `ranking` key.
pub(crate) fn parse_ranking_key(key: &[u8]) -> Option<(f64, &str)> {
    let ascending = !u64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let bits = if ascending >> 63 == 1 { ascending & !(1 << 63) } else { !ascending };
    Some((f64::from_bits(bits), std::str::from_utf8(&key[8..]).ok()?))
}

/// The clustering key of a `history` row: the time (µs), then the log ordinal.
pub(crate) fn history_key(at: i64, ordinal: u64) -> Vec<u8> {
    let mut k = ((at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&ordinal.to_be_bytes());
    k
}

/// The `history` key just after every row at or before `at`.
pub(crate) fn history_after(at: i64) -> Vec<u8> {
    history_key(at.saturating_add(1), 0)
}

/// One point of an eprint's history: its running totals and decayed sums after a counted
/// use at `at` (µs), the use's log ordinal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    pub at: i64,
    pub ordinal: u64,
    pub views: i64,
    pub downloads: i64,
    /// The decayed sums, in the order of [`Window::ALL`].
    pub decayed: [f64; 3],
}

/// The bytes of a [`Point`] in a `history` row's `points`.
const POINT_BYTES: usize = 56;

impl Point {
    /// The point an eprint's `papers` row `c` stands at after its counted use at `at`.
    pub(crate) fn after(at: i64, ordinal: u64, c: &Columns) -> Point {
        let int = |k: &str| c.get(k).and_then(Value::as_int).unwrap_or(0);
        let float = |k: &str| c.get(k).and_then(Value::as_float).unwrap_or(f64::NEG_INFINITY);
        Point { at, ordinal, views: int("views"), downloads: int("downloads"), decayed: Window::ALL.map(|w| float(w.column())) }
    }

    /// The `history` row of `points`, a batch's counted uses of one eprint in order (keyed
    /// by the first): each point's eight-byte fields, big-endian.
    pub(crate) fn row(points: &[Point]) -> Columns {
        let mut bytes = Vec::with_capacity(points.len() * POINT_BYTES);
        for p in points {
            bytes.extend_from_slice(&p.at.to_be_bytes());
            bytes.extend_from_slice(&p.ordinal.to_be_bytes());
            bytes.extend_from_slice(&p.views.to_be_bytes());
            bytes.extend_from_slice(&p.downloads.to_be_bytes());
            p.decayed.iter().for_each(|d| bytes.extend_from_slice(&d.to_bits().to_be_bytes()));
        }
        Columns::from([("points".to_owned(), Value::Bytes(bytes))])
    }

    /// The last point of the `history` row `c` (keyed `key`) at or before `at` (µs): of its
    /// `points`, or the one point a row of an earlier build holds as columns.
    pub(crate) fn last_of_row(key: &[u8], c: &Columns, at: i64) -> Option<Point> {
        let Some(points) = c.get("points") else {
            let (time, ordinal) = parse_history_key(key)?;
            return Some(Point::after(time, ordinal, c)).filter(|p| p.at <= at);
        };
        let bytes = packed_bytes(Some(points))?;
        let field = |chunk: &[u8], i: usize| u64::from_be_bytes(chunk[8 * i..8 * i + 8].try_into().expect("eight bytes"));
        bytes
            .chunks_exact(POINT_BYTES)
            .map(|p| Point {
                at: field(p, 0) as i64,
                ordinal: field(p, 1),
                views: field(p, 2) as i64,
                downloads: field(p, 3) as i64,
                decayed: [0, 1, 2].map(|i| f64::from_bits(field(p, 4 + i))),
            })
            .take_while(|p| p.at <= at)
            .last()
    }

    /// The columns a reader takes of it: `views`, `downloads` and the decayed sums.
    pub(crate) fn columns(&self) -> Columns {
        let mut c = Columns::from([("views".to_owned(), Value::Int(self.views)), ("downloads".to_owned(), Value::Int(self.downloads))]);
        for (window, d) in Window::ALL.iter().zip(self.decayed) {
            c.insert(window.column().into(), Value::Float(d));
        }
        c
    }
}

/// The time (µs) and log ordinal of a `history` key.
pub(crate) fn parse_history_key(key: &[u8]) -> Option<(i64, u64)> {
    let time = u64::from_be_bytes(key.get(..8)?.try_into().ok()?) ^ (1 << 63);
    Some((time as i64, u64::from_be_bytes(key.get(8..16)?.try_into().ok()?)))
}

/// The UTC day (days since the epoch) of a time in µs.
pub fn day_of(at: i64) -> i64 {
    at.div_euclid(86_400_000_000)
}

/// The clustering key of a `daily` row.
pub(crate) fn day_key(day: i64) -> Vec<u8> {
    ((day as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

/// The hour (hours since the epoch) of a time in µs.
pub fn hour_of(at: i64) -> i64 {
    at.div_euclid(3_600_000_000)
}

/// The clustering key of an `hourly` row.
pub(crate) fn hour_key(hour: i64) -> Vec<u8> {
    day_key(hour)
}

/// The clustering key of a zero-result query in `zero`: its count, highest first, then it.
pub(crate) fn zero_key(count: i64, query: &str) -> Vec<u8> {
    let mut k = (!(count as u64)).to_be_bytes().to_vec();
    k.extend_from_slice(query.as_bytes());
    k
}

/// The bucket number of a `daily` or `hourly` key.
pub(crate) fn parse_bucket_key(key: &[u8]) -> Option<i64> {
    Some((u64::from_be_bytes(key.try_into().ok()?) ^ (1 << 63)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_keys_order_by_decayed_sum_highest_first_and_parse_back() {
        let sums = [2500.5, 3.0, 0.0, -1.5, -700.0];
        let mut keys: Vec<Vec<u8>> = sums.iter().map(|s| ranking_key(*s, "at://x")).collect();
        keys.sort();
        let back: Vec<f64> = keys.iter().map(|k| parse_ranking_key(k).unwrap().0).collect();
        assert_eq!(back, sums);
        assert_eq!(parse_ranking_key(&ranking_key(1.25, "at://did:plc:a/c/r")).unwrap(), (1.25, "at://did:plc:a/c/r"));
    }

    #[test]
    fn a_history_row_gives_back_its_last_point_at_or_before_a_time() {
        let point =
            |at: i64, views: i64| Point { at, ordinal: at as u64 + 7, views, downloads: 1, decayed: [0.5, -1.25, f64::NEG_INFINITY] };
        let points = [point(100, 1), point(200, 2), point(200, 3), point(300, 4)];
        let row = Point::row(&points);
        let key = history_key(100, 107);
        assert_eq!(Point::last_of_row(&key, &row, 99), None);
        assert_eq!(Point::last_of_row(&key, &row, 100), Some(points[0].clone()));
        assert_eq!(Point::last_of_row(&key, &row, 299), Some(points[2].clone()));
        assert_eq!(Point::last_of_row(&key, &row, i64::MAX), Some(points[3].clone()));
        // Rows of earlier builds: the points as base64 text; one point, as columns, at its key.
        let text = Value::Text(BASE64_NOPAD.encode(row["points"].as_bytes().expect("bytes")));
        let text_row = Columns::from([("points".to_owned(), text)]);
        assert_eq!(Point::last_of_row(&key, &text_row, 299), Some(points[2].clone()));
        let old = points[1].columns();
        assert_eq!(Point::last_of_row(&history_key(200, 207), &old, 250), Some(points[1].clone()));
        assert_eq!(Point::last_of_row(&history_key(200, 207), &old, 199), None);
        assert_eq!(parse_history_key(&history_key(-5, 9)), Some((-5, 9)));
    }

    #[test]
    fn a_score_is_the_sum_of_its_uses_decayed_to_the_time_asked() {
        let w = Window::Day;
        let t0 = 1_780_000_000_000_000;
        let kept = ln_add(ln_add(f64::NEG_INFINITY, w.exponent(t0)), w.exponent(t0 + 86_400_000_000));
        // At the second use: e^-1 + 1.
        assert!((w.score(kept, t0 + 86_400_000_000) - (1.0 + (-1.0f64).exp())).abs() < 1e-9);
        assert!((w.score(kept, t0 + 2 * 86_400_000_000) - ((-1.0f64).exp() + (-2.0f64).exp())).abs() < 1e-9);
    }
}
