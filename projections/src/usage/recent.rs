//! The uses of an eprint in the last 30 s, for COUNTER's double-click rule, kept packed: 17
//! bytes a use (the viewer's 64-bit hash, the kind of use, its time in µs; base64 text in
//! rows of builds before 2026-12).
//! A busy eprint holds hundreds of them, so their form is what a view costs: they are kept
//! in slots of 2 s, a `seen` row each ([`Seen`]), so that a batch rewrites the slots its uses
//! fall in, not every use of the last 30 s (a row of 9 KB per busy eprint per batch, which
//! packing and writing made a fifth of the usage model's time; slots of 10 s still made a
//! batch rewrite 5 s of uses on average, slots of 2 s about 1 s beside its own).
//!
//! A [`Seen`] indexes its uses by viewer and kind, so the rule costs a use one lookup, not a
//! pass over every use of the last 30 s; and it stays valid after its batch is written
//! ([`Seen::written`]), so the model keeps it for the eprint's next batch (`Warm`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rustc_hash::FxBuildHasher;
use store::Value;

use super::sketch::viewer_hash;
use super::{day_key, packed_bytes, parse_bucket_key, DOUBLE_CLICK_MICROS};

const USE_BYTES: usize = 17;

/// The span of a slot (µs).
const SLOT_MICROS: i64 = 2_000_000;

/// The slot of a time (µs).
fn slot_of(at: i64) -> i64 {
    at.div_euclid(SLOT_MICROS)
}

/// The kinds of use the rule tells apart (a download from a search result is a download).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    View = 0,
    Download = 1,
    SearchClick = 2,
}

/// Uses, oldest first.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Recent(Vec<(u64, u8, i64)>);

impl Recent {
    /// The uses held in `value` (a `seen` row's `recent`); none when absent or unreadable.
    pub(crate) fn from_value(value: Option<&Value>) -> Recent {
        let bytes = packed_bytes(value).unwrap_or_default();
        Recent(
            bytes
                .chunks_exact(USE_BYTES)
                .map(|u| {
                    let viewer = u64::from_be_bytes(u[..8].try_into().expect("8 bytes"));
                    let at = i64::from_be_bytes(u[9..].try_into().expect("8 bytes"));
                    (viewer, u[8], at)
                })
                .collect(),
        )
    }

    /// The uses' stored form.
    pub(crate) fn to_value(&self) -> Value {
        let mut bytes = Vec::with_capacity(self.0.len() * USE_BYTES);
        for (viewer, kind, at) in &self.0 {
            bytes.extend_from_slice(&viewer.to_be_bytes());
            bytes.push(*kind);
            bytes.extend_from_slice(&at.to_be_bytes());
        }
        Value::Bytes(bytes)
    }
}

/// An eprint's uses of the last 30 s, by slot: what its `seen` rows hold (clustering key:
/// the slot, [`day_key`]'s form; column `recent`). Rows of earlier builds hold every recent
/// use in one row of an empty key: read into the slots, and deleted at the next write.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    slots: BTreeMap<i64, Recent>,
    /// The time of each viewer's last use of each kind (hash, kind), over every slot.
    last: HashMap<(u64, u8), i64, FxBuildHasher>,
    /// Slots a use was added to since they were read or written.
    changed: BTreeSet<i64>,
    /// Keys of rows read that no slot of this form will rewrite: an earlier build's (one row
    /// of every use, or slots of another span).
    stale: Vec<Vec<u8>>,
    /// The newest use's time.
    newest: i64,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen { slots: BTreeMap::new(), last: HashMap::default(), changed: BTreeSet::new(), stale: Vec::new(), newest: i64::MIN }
    }
}

impl Seen {
    /// The uses held by an eprint's `seen` rows: (clustering key, `recent`) each.
    pub(crate) fn from_rows<'r>(rows: impl IntoIterator<Item = (&'r [u8], Option<&'r Value>)>) -> Seen {
        let mut seen = Seen::default();
        for (key, value) in rows {
            let uses = Recent::from_value(value);
            match parse_bucket_key(key).filter(|slot| uses.0.iter().all(|u| slot_of(u.2) == *slot)) {
                Some(slot) => {
                    seen.slots.insert(slot, uses);
                }
                None => {
                    seen.stale.push(key.to_vec());
                    for u in uses.0 {
                        let slot = slot_of(u.2);
                        seen.slots.entry(slot).or_default().0.push(u);
                        seen.changed.insert(slot);
                    }
                }
            }
        }
        for &(hash, kind, at) in seen.slots.values().flat_map(|r| r.0.iter()) {
            let last = seen.last.entry((hash, kind)).or_insert(at);
            *last = (*last).max(at);
            seen.newest = seen.newest.max(at);
        }
        seen
    }

    /// The newest use's time (µs), `i64::MIN` for none.
    pub(crate) fn newest(&self) -> i64 {
        self.newest
    }

    /// Records a use by `viewer` at `at` (µs, never before the newest use): whether it is
    /// a double click, the same viewer's same kind of use within 30 s of their last.
    pub(crate) fn double_click(&mut self, viewer: &str, kind: Kind, at: i64) -> bool {
        let (hash, kind) = (viewer_hash(viewer), kind as u8);
        let slot = slot_of(at);
        let last = self.last.insert((hash, kind), at);
        let double = last.is_some_and(|last| at - last < DOUBLE_CLICK_MICROS);
        let uses = self.slots.entry(slot).or_default();
        // Only the viewer's last use of a kind matters: an earlier one in the slot goes.
        if last.is_some_and(|last| slot_of(last) == slot) {
            uses.0.retain(|u| !(u.0 == hash && u.1 == kind));
        }
        uses.0.push((hash, kind, at));
        self.changed.insert(slot);
        self.newest = self.newest.max(at);
        double
    }

    /// What the eprint's `seen` rows become; the uses are left as those rows hold them once
    /// written (the slots older than 30 s before the newest use dropped), to read the
    /// eprint's next uses against.
    pub(crate) fn written(&mut self) -> SeenWrites {
        let kept_from = slot_of(self.newest.saturating_sub(DOUBLE_CLICK_MICROS));
        let mut deletes = std::mem::take(&mut self.stale);
        let mut puts = Vec::new();
        let changed = std::mem::take(&mut self.changed);
        let kept = self.slots.split_off(&kept_from);
        deletes.extend(self.slots.keys().map(|slot| day_key(*slot)));
        self.slots = kept;
        for slot in changed.range(kept_from..) {
            puts.push((day_key(*slot), self.slots[slot].to_value()));
        }
        let oldest = self.newest.saturating_sub(DOUBLE_CLICK_MICROS);
        self.last.retain(|_, at| *at >= oldest);
        SeenWrites { puts, deletes }
    }
}

/// What a batch does to an eprint's `seen` rows.
pub(crate) struct SeenWrites {
    /// The rows to write: key, `recent`.
    pub puts: Vec<(Vec<u8>, Value)>,
    /// The keys of the rows to delete: slots older than 30 s before the newest use, rows of
    /// an earlier build's form.
    pub deletes: Vec<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `uses` (viewer, kind, time, whether a double click), writing after each, twice:
    /// reading the rows back before each use, as a batch does on an eprint's first use, and
    /// keeping the `Seen` the last write left, as the model does while its batches follow
    /// on. Both must agree on every use and write the same rows; returns the last write.
    fn run(uses: &[(&str, Kind, i64, bool)], rows: &mut BTreeMap<Vec<u8>, Value>) -> SeenWrites {
        let start = rows.clone();
        let mut kept = Seen::from_rows(rows.iter().map(|(k, v)| (k.as_slice(), Some(v))));
        let mut kept_rows = start;
        let mut last = None;
        for (i, &(viewer, kind, at, double)) in uses.iter().enumerate() {
            let mut reread = Seen::from_rows(rows.iter().map(|(k, v)| (k.as_slice(), Some(v))));
            assert_eq!(reread.double_click(viewer, kind, at), double, "use {i} (rows read back)");
            assert_eq!(kept.double_click(viewer, kind, at), double, "use {i} (kept)");
            let (a, b) = (reread.written(), kept.written());
            assert_eq!((&a.puts, &a.deletes), (&b.puts, &b.deletes), "use {i}: the same rows written");
            write(rows, &a);
            write(&mut kept_rows, &b);
            last = Some(a);
        }
        assert_eq!(rows, &kept_rows);
        last.expect("a use")
    }

    /// Uses in the form builds before 2026-12 wrote them: base64 text.
    fn as_text(uses: &Recent) -> Value {
        Value::Text(data_encoding::BASE64_NOPAD.encode(uses.to_value().as_bytes().expect("bytes")))
    }

    fn write(rows: &mut BTreeMap<Vec<u8>, Value>, w: &SeenWrites) {
        rows.extend(w.puts.iter().cloned());
        for key in &w.deletes {
            rows.remove(key);
        }
    }

    #[test]
    fn a_use_within_30_s_of_the_same_viewers_last_is_a_double_click_and_uses_survive_their_rows() {
        let (a, b) = ("0123456789abcdef0000", "fedcba98765432100000");
        let mut rows = BTreeMap::new();
        run(
            &[
                (a, Kind::View, 0, false),
                (b, Kind::View, 1_000_000, false),
                (a, Kind::Download, 2_000_000, false),
                (a, Kind::View, 29_000_000, true),
                // A run of clicks counts once: each restarts the 30 s, across slots and rows.
                (a, Kind::View, 58_000_000, true),
            ],
            &mut rows,
        );
        assert_eq!(rows.keys().map(|k| parse_bucket_key(k).unwrap()).collect::<Vec<_>>(), vec![14, 29], "the slots of 29 s and 58 s");
        let last = run(&[(a, Kind::View, 88_000_001, false)], &mut rows);
        // Only the slots of the last 30 s are kept: the one of 29 s goes (those of b's use
        // and a's download went at 58 s), the one of 58 s stays as it was.
        assert_eq!(last.puts, vec![(day_key(44), Recent(vec![(viewer_hash(a), 0, 88_000_001)]).to_value())]);
        assert_eq!(last.deletes, vec![day_key(14)]);
        assert_eq!(Recent::from_value(Some(&Value::Text("not base64!".into()))), Recent::default());
    }

    #[test]
    fn a_row_of_every_recent_use_is_read_into_slots_and_deleted() {
        let a = "0123456789abcdef0000";
        let old = Recent(vec![(viewer_hash(a), Kind::View as u8, 5_000_000), (viewer_hash("b"), Kind::View as u8, 12_000_000)]);
        let mut rows = BTreeMap::from([(Vec::new(), as_text(&old))]);
        let last = run(&[(a, Kind::View, 20_000_000, true)], &mut rows);
        assert_eq!(last.deletes, vec![Vec::<u8>::new()], "the earlier build's uses still count");
        assert_eq!(last.puts.iter().map(|(k, _)| parse_bucket_key(k).unwrap()).collect::<Vec<_>>(), vec![2, 6, 10]);
    }

    #[test]
    fn slots_of_another_span_are_read_into_slots_of_this_one_and_deleted() {
        let a = "0123456789abcdef0000";
        // A slot of 10 s (an earlier build's): its key says slot 1, its uses are at 12 and 15 s.
        let old = Recent(vec![(viewer_hash("b"), Kind::View as u8, 12_000_000), (viewer_hash(a), Kind::View as u8, 15_000_000)]);
        let mut rows = BTreeMap::from([(day_key(1), as_text(&old))]);
        let last = run(&[(a, Kind::View, 40_000_000, true)], &mut rows);
        assert_eq!(last.deletes, vec![day_key(1)]);
        assert_eq!(rows.keys().map(|k| parse_bucket_key(k).unwrap()).collect::<Vec<_>>(), vec![6, 7, 20]);
    }
}
