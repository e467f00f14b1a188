//! What the usage model's batches leave of the rows only an eprint's own uses change (its
//! recent uses, its days and hours), kept decoded for the eprint's next batch, so that a busy
//! eprint's 30 s of recent uses and its day's sketch are read and decoded once, not at every
//! batch (they were a sixth of the model's time under a stream of views); and its `papers`
//! row, which other events change too (see below).
//!
//! The store holds what was kept for as long as nothing else wrote those rows: they are
//! written only by the batches that apply the eprint's uses, in one partition of the log
//! (its uses are keyed by its URI), and a batch commits its rows with its checkpoints. So
//! what is kept holds while the model's checkpoints in the store are those this instance
//! committed last, in each partition of the batch: when they are not (another projector
//! took the partition meanwhile and applied some of it), the batch starts from nothing
//! kept, as does the batch after a failed one (the failed batch took what was kept and did
//! not give it back).
//!
//! An eprint's `papers` row is written by the events of other partitions too (its record's
//! changes, its take-down): it is kept only while the model's checkpoints in every partition
//! are those this instance committed last, that is while no other projector committed
//! anything since.

use std::collections::{BTreeSet, HashMap};

use rustc_hash::FxBuildHasher;

use store::Columns;

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
    /// The model's checkpoints in every partition once the last batch committed, when this
    /// instance knows them (the store's before the batch, and the batch's own).
    committed: Option<Checkpoints>,
    /// Eprints' recent uses (`seen` rows), by URI, as written.
    pub seen: HashMap<String, Seen, FxBuildHasher>,
    /// Eprints' days (`daily` rows), by URI and day key, as written.
    pub days: HashMap<(String, Vec<u8>), Day, FxBuildHasher>,
    /// Eprints' hours (`hourly` rows), by URI and hour, as written.
    pub hours: HashMap<(String, i64), Columns, FxBuildHasher>,
    /// Eprints' `papers` rows, by URI, as written (see the module docs).
    pub papers: HashMap<String, Columns, FxBuildHasher>,
}

/// What a batch wrote that the next batches may keep ([`Warm::after`]).
#[derive(Default)]
pub(super) struct Leftover {
    pub seen: HashMap<String, Seen, FxBuildHasher>,
    pub days: Vec<((String, Vec<u8>), Day)>,
    pub hours: Vec<((String, i64), Columns)>,
    pub papers: Vec<(String, Columns)>,
}

impl Warm {
    /// What is kept for `batch`, given the model's checkpoints in the store: everything,
    /// when in every partition they are those this instance committed last; all but the
    /// `papers` rows when they are in each partition of the batch; nothing otherwise.
    pub fn for_batch(mut self, stored: &Checkpoints, batch: &EventBatch) -> Warm {
        let partitions: BTreeSet<u32> = batch.events().iter().map(|e| e.position.partition).collect();
        let follows = partitions.iter().all(|p| self.applied.get(p).is_none_or(|applied| stored.get(p) == Some(applied)));
        if !follows {
            tracing::debug!(?stored, applied = ?self.applied, "the model's checkpoints moved since its last batch: nothing kept");
            self = Warm::default();
        } else if self.committed.as_ref() != Some(stored) {
            self.papers.clear();
        }
        self.committed = Some(stored.clone());
        self
    }

    /// What to keep after `batch` was committed: the eprints it wrote (`written`), then those
    /// kept before of eprints used within 30 s of its newest use, up to [`KEPT_EPRINTS`]
    /// eprints, with their days, hours and `papers` rows.
    pub fn after(mut self, batch: &EventBatch, written: Leftover) -> Warm {
        let Leftover { seen, days, hours, papers } = written;
        self.applied.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
        let committed = self.committed.map(|mut c| {
            c.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
            c
        });
        let newest = seen.values().map(Seen::newest).max().unwrap_or(i64::MIN);
        let mut kept = Warm { applied: self.applied, committed, seen, ..Warm::default() };
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
        // Hours kept before that end before the newest use's hour are let go: a use in one reads
        // its row again.
        let hour = super::hour_of(newest.max(0));
        let earlier = self.hours.into_iter().filter(|((_, h), _)| *h >= hour);
        let hours: Vec<_> = hours.into_iter().chain(earlier).filter(|((uri, _), _)| held(uri)).collect();
        for (key, row) in hours {
            kept.hours.entry(key).or_insert(row);
        }
        let papers: Vec<_> = papers.into_iter().chain(self.papers).filter(|(uri, _)| held(uri)).collect();
        for (uri, row) in papers {
            kept.papers.entry(uri).or_insert(row);
        }
        kept
    }
}
