//! What the usage model's batches leave of the rows only an eprint's own uses change (its
//! recent uses and its days), kept decoded for the eprint's next batch, so that a busy
//! eprint's 30 s of recent uses and its day's sketch are read and decoded once, not at every
//! batch (they were a sixth of the model's time under a stream of views).
//!
//! The store holds what was kept for as long as nothing else wrote those rows: they are
//! written only by the batches that apply the eprint's uses, in one partition of the log
//! (its uses are keyed by its URI), and a batch commits its rows with its checkpoints. So
//! what is kept holds while the model's checkpoints in the store are those this instance
//! committed last, in each partition of the batch: when they are not (another projector
//! took the partition meanwhile and applied some of it), the batch starts from nothing
//! kept, as does the batch after a failed one (the failed batch took what was kept and did
//! not give it back).

use std::collections::{BTreeSet, HashMap};

use rustc_hash::FxBuildHasher;

use super::apply::Day;
use super::recent::Seen;
use super::DOUBLE_CLICK_MICROS;
use crate::{Checkpoints, EventBatch};

/// The most eprints kept: those of the last batch first, then those used within 30 s. An
/// eprint's are some 60 bytes a use of its last 30 s (its uses, indexed) and its day's
/// sketch (up to 4 KB): some 60 KB for one viewed 30 times a second.
const KEPT_EPRINTS: usize = 10_000;

/// The rows kept decoded between batches (see the module docs).
#[derive(Default)]
pub(super) struct Warm {
    /// Where the last batch applied left each partition it had events of.
    applied: Checkpoints,
    /// Eprints' recent uses (`seen` rows), by URI, as written.
    pub seen: HashMap<String, Seen, FxBuildHasher>,
    /// Eprints' days (`daily` rows), by URI and day key, as written.
    pub days: HashMap<(String, Vec<u8>), Day, FxBuildHasher>,
}

impl Warm {
    /// What is kept for `batch`, given the model's checkpoints in the store: everything,
    /// when in each partition of the batch they are those this instance committed last;
    /// nothing otherwise.
    pub fn for_batch(self, stored: &Checkpoints, batch: &EventBatch) -> Warm {
        let partitions: BTreeSet<u32> = batch.events().iter().map(|e| e.position.partition).collect();
        let follows = partitions.iter().all(|p| self.applied.get(p).is_none_or(|applied| stored.get(p) == Some(applied)));
        if follows {
            self
        } else {
            tracing::debug!(?stored, applied = ?self.applied, "the model's checkpoints moved since its last batch: nothing kept");
            Warm::default()
        }
    }

    /// What to keep after `batch` was committed: its eprints and days (`seen`, `days`, as it
    /// wrote them), then those kept before of eprints used within 30 s of its newest use, up
    /// to [`KEPT_EPRINTS`] eprints.
    pub fn after(mut self, batch: &EventBatch, seen: HashMap<String, Seen, FxBuildHasher>, days: Vec<((String, Vec<u8>), Day)>) -> Warm {
        self.applied.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
        let newest = seen.values().map(Seen::newest).max().unwrap_or(i64::MIN);
        let mut kept = Warm { applied: self.applied, seen, days: HashMap::default() };
        if kept.seen.len() > KEPT_EPRINTS {
            kept.seen.clear();
        }
        let recent = self.seen.into_iter().filter(|(_, s)| s.newest() >= newest.saturating_sub(DOUBLE_CLICK_MICROS));
        let room = KEPT_EPRINTS - kept.seen.len();
        for (uri, s) in recent.take(room) {
            kept.seen.entry(uri).or_insert(s);
        }
        let held = |uri: &String| kept.seen.contains_key(uri);
        let days: Vec<_> = days.into_iter().chain(self.days).filter(|((uri, _), _)| held(uri)).collect();
        for (key, day) in days {
            kept.days.entry(key).or_insert(day);
        }
        kept
    }
}
