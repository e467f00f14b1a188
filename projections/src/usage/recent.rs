//! The uses of an eprint in the last 30 s, for COUNTER's double-click rule, kept packed as
//! text: 17 bytes a use (the viewer's 64-bit hash, the kind of use, its time in µs), base64.
//! A busy eprint holds hundreds of them, so their form is what a view costs: they are kept
//! in slots of 10 s, a `seen` row each ([`Seen`]), so that a batch rewrites the slot its uses
//! fall in, not every use of the last 30 s (a row of 9 KB per busy eprint per batch, which
//! packing and writing made a fifth of the usage model's time).

use std::collections::{BTreeMap, BTreeSet};

use data_encoding::BASE64_NOPAD;

use super::sketch::viewer_hash;
use super::{day_key, parse_bucket_key, DOUBLE_CLICK_MICROS};

const USE_BYTES: usize = 17;

/// The span of a slot (µs).
const SLOT_MICROS: i64 = 10_000_000;

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
    /// The uses held in `text`; none when absent or unreadable.
    pub(crate) fn from_text(text: Option<&str>) -> Recent {
        let bytes = text.and_then(|t| BASE64_NOPAD.decode(t.as_bytes()).ok()).unwrap_or_default();
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

    /// The uses as text.
    pub(crate) fn to_text(&self) -> String {
        let mut bytes = Vec::with_capacity(self.0.len() * USE_BYTES);
        for (viewer, kind, at) in &self.0 {
            bytes.extend_from_slice(&viewer.to_be_bytes());
            bytes.push(*kind);
            bytes.extend_from_slice(&at.to_be_bytes());
        }
        BASE64_NOPAD.encode(&bytes)
    }
}

/// An eprint's uses of the last 30 s, by slot: what its `seen` rows hold (clustering key:
/// the slot, [`day_key`]'s form; column `recent`). Rows of earlier builds hold every recent
/// use in one row of an empty key: read into the slots, and deleted at the next write.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    slots: BTreeMap<i64, Recent>,
    /// Slots a use was added to since they were read.
    changed: BTreeSet<i64>,
    /// Keys of rows read that no slot of this form will rewrite (an earlier build's).
    stale: Vec<Vec<u8>>,
    /// The newest use's time.
    newest: i64,
}

impl Seen {
    /// The uses held by an eprint's `seen` rows: (clustering key, `recent` text) each.
    pub(crate) fn from_rows<'r>(rows: impl IntoIterator<Item = (&'r [u8], Option<&'r str>)>) -> Seen {
        let mut seen = Seen::default();
        for (key, text) in rows {
            let uses = Recent::from_text(text);
            match parse_bucket_key(key) {
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
        seen.newest = seen.slots.values().flat_map(|r| r.0.iter().map(|u| u.2)).max().unwrap_or(i64::MIN);
        seen
    }

    /// Records a use by `viewer` at `at` (µs, never before the newest use): whether it is
    /// a double click, the same viewer's same kind of use within 30 s of their last.
    pub(crate) fn double_click(&mut self, viewer: &str, kind: Kind, at: i64) -> bool {
        let (hash, kind) = (viewer_hash(viewer), kind as u8);
        let double = self
            .slots
            .range(slot_of(at - DOUBLE_CLICK_MICROS)..)
            .any(|(_, r)| r.0.iter().any(|u| u.0 == hash && u.1 == kind && at - u.2 < DOUBLE_CLICK_MICROS));
        let slot = slot_of(at);
        let uses = self.slots.entry(slot).or_default();
        // Only the viewer's last use of a kind matters: an earlier one in the slot goes.
        uses.0.retain(|u| !(u.0 == hash && u.1 == kind));
        uses.0.push((hash, kind, at));
        self.changed.insert(slot);
        self.newest = self.newest.max(at);
        double
    }

    /// What the eprint's `seen` rows become.
    pub(crate) fn into_rows(self) -> SeenWrites {
        let kept_from = slot_of(self.newest.saturating_sub(DOUBLE_CLICK_MICROS));
        let mut deletes = self.stale;
        let mut puts = Vec::new();
        for (slot, uses) in self.slots {
            if slot < kept_from {
                deletes.push(day_key(slot));
            } else if self.changed.contains(&slot) {
                puts.push((day_key(slot), uses.to_text()));
            }
        }
        SeenWrites { puts, deletes }
    }
}

/// What a batch does to an eprint's `seen` rows.
pub(crate) struct SeenWrites {
    /// The rows to write: key, `recent` text.
    pub puts: Vec<(Vec<u8>, String)>,
    /// The keys of the rows to delete: slots older than 30 s before the newest use, rows of
    /// an earlier build's form.
    pub deletes: Vec<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_within_30_s_of_the_same_viewers_last_is_a_double_click_and_uses_survive_their_rows() {
        let (a, b) = ("0123456789abcdef0000", "fedcba98765432100000");
        let mut seen = Seen::default();
        assert!(!seen.double_click(a, Kind::View, 0));
        assert!(!seen.double_click(b, Kind::View, 1_000_000));
        assert!(!seen.double_click(a, Kind::Download, 2_000_000));
        let mut rows = BTreeMap::new();
        let mut seen = reread(seen, &mut rows);
        assert!(seen.double_click(a, Kind::View, 29_000_000));
        // A run of clicks counts once: each restarts the 30 s, across slots and rows.
        let mut seen = reread(seen, &mut rows);
        assert!(seen.double_click(a, Kind::View, 58_000_000));
        let mut seen = reread(seen, &mut rows);
        assert_eq!(rows.len(), 2, "the slots of 29 s and 58 s");
        assert!(!seen.double_click(a, Kind::View, 88_000_001));
        // Only the slots of the last 30 s are kept: the one of 29 s goes (that of b's use
        // went at 58 s), the one of 58 s stays as it was.
        let SeenWrites { puts, deletes } = seen.into_rows();
        assert_eq!(puts, vec![(day_key(8), Recent(vec![(viewer_hash(a), 0, 88_000_001)]).to_text())]);
        assert_eq!(deletes, vec![day_key(2)]);
        assert_eq!(Recent::from_text(Some("not base64!")), Recent::default());
    }

    #[test]
    fn a_row_of_every_recent_use_is_read_into_slots_and_deleted() {
        let a = "0123456789abcdef0000";
        let old = Recent(vec![(viewer_hash(a), Kind::View as u8, 5_000_000), (viewer_hash("b"), Kind::View as u8, 12_000_000)]);
        let text = old.to_text();
        let mut seen = Seen::from_rows([(&[][..], Some(text.as_str()))]);
        assert!(seen.double_click(a, Kind::View, 20_000_000), "the earlier build's uses still count");
        let SeenWrites { puts, deletes } = seen.into_rows();
        assert_eq!(deletes, vec![Vec::<u8>::new()]);
        assert_eq!(puts.iter().map(|(k, _)| parse_bucket_key(k).unwrap()).collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    /// `seen` written to `rows` as a batch writes it, and read back by the next batch.
    fn reread(seen: Seen, rows: &mut BTreeMap<Vec<u8>, String>) -> Seen {
        let SeenWrites { puts, deletes } = seen.into_rows();
        rows.extend(puts);
        for key in deletes {
            rows.remove(&key);
        }
        Seen::from_rows(rows.iter().map(|(k, v)| (k.as_slice(), Some(v.as_str()))))
    }
}
