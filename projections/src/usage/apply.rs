//! Applying events to the usage read model.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use event_schema::{AdminAction, AdminCommand, Payload, SearchImpression, UsageAction, UsageEvent};
use lexicons::{Lexicons, SUBMISSION};
use rustc_hash::FxBuildHasher;
use store::{consumer_name, Columns, Scan, Store, TableRef, Value};
use tracing::warn;

use super::recent::{Kind, Seen, SeenWrites};
use super::sketch::Viewers;
use super::warm::{Leftover, Warm};
use super::{
    day_key, day_of, history_key, hour_key, hour_of, ln_add, parse_bucket_key, ranking_key, ranking_partition, table, zero_key, Point,
    Window, MODEL, SITE,
};
use crate::catalog::Mode;
use crate::eprints::read::{self as eprints_read, EprintsReader, Written};
use crate::rows::{is_stale, text, TAKEN_DOWN_REV};
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the usage read model (see the [module docs](super)).
pub struct UsageProjection {
    store: Arc<dyn Store>,
    lexicons: Arc<Lexicons>,
    version: u32,
    /// Rebuild mode: the flush makes every batch durable ([`crate::staged::settle`]).
    rebuild: bool,
    /// What the last batches left of their eprints' recent uses and days, decoded.
    warm: Warm,
}

/// What a use adds to an eprint's totals.
enum Counted {
    View,
    Download,
    /// Counted in its own total only (`searchClicks`, `dwells`…), not in the score.
    Other,
}

/// An eprint as a batch reads and changes it: its rows are written once, at the batch's
/// end (`UsageProjection::write`), however many of its events the batch holds, and its sketches
/// and recent uses are decoded once.
struct Eprint {
    /// Its `papers` row.
    row: Columns,
    /// Its places in the rankings when the batch first read it.
    ranked_as: Ranked,
    /// Its recent uses (its `seen` rows), once a use needed them.
    seen: Option<Seen>,
    /// Its new `before` row, once a counted use opened a day.
    before: Option<Columns>,
    /// The points of its history the batch's counted uses add, in order.
    points: Vec<Point>,
    /// The log position of the last event that changed it, once one has.
    position: Option<u64>,
    /// What the batch's counted uses add to its `hourly` rows, by hour.
    hours: BTreeMap<i64, Tally>,
}

/// A day of one eprint: its counts and its viewers' sketch (once decoded, the row holds
/// no `viewers` column after its batch is written).
pub(super) struct Day {
    row: Columns,
    viewers: Option<Viewers>,
    position: u64,
}

/// An eprint's entries in the rankings: its row there, and each (partition, key).
#[derive(PartialEq)]
struct Ranked(Columns, Vec<(String, Vec<u8>)>);

impl Ranked {
    /// Where `c` puts its eprint `uri` in the rankings: nowhere unless it is [`ranked`].
    fn of(uri: &str, c: &Columns) -> Ranked {
        if !ranked(c) {
            return Ranked(Columns::new(), Vec::new());
        }
        let fields = fields_of(c);
        let mut row = Columns::new();
        row.insert("fields".into(), Value::Text(serde_json::to_string(&fields).unwrap_or_default()));
        row.insert("title".into(), Value::Text(text(c, "title").unwrap_or_default()));
        let mut places = Vec::new();
        for window in Window::ALL {
            let key = ranking_key(float(c, window.column()), uri);
            let partitions = std::iter::once(None).chain(fields.iter().map(|f| Some(f.as_str())));
            places.extend(partitions.map(|f| (ranking_partition(window, f), key.clone())));
        }
        Ranked(row, places)
    }
}

/// The eprints and days a batch has read, by URI (eprints hashed: each event looks its
/// eprint up; days in order, for the range of an eprint's days), and what its counted uses
/// add to the site's buckets. The order eprints are written in does not matter: each
/// writes rows of its own.
#[derive(Default)]
struct Touched {
    eprints: HashMap<String, Eprint, FxBuildHasher>,
    days: BTreeMap<(String, Vec<u8>), Day>,
    site_days: BTreeMap<i64, Tally>,
    site_hours: BTreeMap<i64, Tally>,
    /// What earlier batches left, taken from as the batch needs it.
    warm: Warm,
}

/// What a batch's counted uses add to one `daily` or `hourly` bucket: read and written once,
/// at the batch's end, however many uses fall in it.
#[derive(Default)]
struct Tally {
    views: i64,
    downloads: i64,
    /// The log position of the last use counted in it.
    position: u64,
}

impl Tally {
    /// Counts one use (a view or a download: other uses are in no bucket).
    fn count(&mut self, counted: &Counted, position: u64) {
        match counted {
            Counted::View => self.views += 1,
            Counted::Download => self.downloads += 1,
            Counted::Other => return,
        }
        self.position = position;
    }

    /// Adds the tally to the bucket `partition`/`key` of `name`, as the store has it.
    fn add_to(&self, st: &mut Staged, store: &dyn Store, name: TableRef, partition: &str, key: Vec<u8>) -> Result<(), ProjectionError> {
        let bucket = self.added_to(st.get(store, &name, partition, &key)?.unwrap_or_default());
        st.put(&name, partition, key, bucket, self.position);
        Ok(())
    }

    /// The bucket `bucket` with the tally added.
    fn added_to(&self, mut bucket: Columns) -> Columns {
        for (column, by) in [("views", self.views), ("downloads", self.downloads)] {
            if by != 0 {
                add(&mut bucket, column, by);
            }
        }
        bucket
    }
}

/// The most `seen` rows an eprint can have: the 4 slots of 30 s, and one of an earlier
/// build's form; far more, to read every row however they came to be.
const SEEN_ROWS: usize = 64;

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

fn float(c: &Columns, k: &str) -> f64 {
    c.get(k).and_then(Value::as_float).unwrap_or(f64::NEG_INFINITY)
}

fn add(c: &mut Columns, k: &str, by: i64) {
    let n = int(c, k);
    c.insert(k.to_owned(), Value::Int(n + by));
}

fn fields_of(c: &Columns) -> Vec<String> {
    text(c, "fields").and_then(|f| serde_json::from_str(&f).ok()).unwrap_or_default()
}

/// Whether an eprint holds a place in the rankings: indexed, and used at least once.
fn ranked(c: &Columns) -> bool {
    c.get("live").and_then(Value::as_bool) == Some(true) && float(c, Window::Month.column()).is_finite()
}

impl UsageProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, lexicons: Arc<Lexicons>, version: u32, mode: Mode) -> UsageProjection {
        UsageProjection { store, lexicons, version, rebuild: mode == Mode::Rebuild, warm: Warm::default() }
    }

    /// The eprint `uri` as the batch has it, read on its first use: `None` while the model
    /// holds no row of it (it was never used).
    fn eprint<'t>(
        &self,
        st: &mut Staged,
        t: &'t mut HashMap<String, Eprint, FxBuildHasher>,
        warm: &mut Warm,
        uri: &str,
    ) -> Result<Option<&'t mut Eprint>, ProjectionError> {
        if !t.contains_key(uri) {
            let papers = table(self.version, "papers");
            let row = match warm.papers.remove(uri) {
                Some(row) => {
                    // Written as a row read from: as if the batch had read it.
                    st.read_from(&papers);
                    row
                }
                None => {
                    let Some(row) = st.get(self.store.as_ref(), &papers, uri, &[])? else { return Ok(None) };
                    row
                }
            };
            let ranked_as = Ranked::of(uri, &row);
            t.insert(
                uri.to_owned(),
                Eprint { row, ranked_as, seen: None, before: None, points: Vec::new(), position: None, hours: BTreeMap::new() },
            );
        }
        Ok(t.get_mut(uri))
    }

    /// Gives each eprint the batch uses that the model holds no row of its row, from the
    /// eprints model's record row once that model has applied the use (see
    /// [`EprintsReader::past`]): its revision, whether it is live, its title and fields. A
    /// row that model wrote later than the use is the state this model's own later events
    /// of the eprint bring it to; those are then stale. An eprint that model holds no row
    /// of (not written yet, or parked) is not live, at no revision: its record's event,
    /// when it comes, makes it live.
    fn first_uses(&self, st: &mut Staged, t: &mut Touched, batch: &EventBatch) -> Result<(), ProjectionError> {
        let mut first: BTreeMap<String, u64> = BTreeMap::new();
        for event in batch.events() {
            let Payload::Usage(u) = &event.payload else { continue };
            if first.contains_key(&u.uri) || self.eprint(st, &mut t.eprints, &mut t.warm, &u.uri)?.is_some() {
                continue;
            }
            first.insert(u.uri.clone(), event.position.ordinal());
        }
        if first.is_empty() {
            return Ok(());
        }
        let ordinals: Vec<u64> = first.values().copied().collect();
        let (eprints, past) = EprintsReader::past(self.store.as_ref(), &ordinals, eprints_read::WAIT)?;
        if !past {
            warn!(eprints = first.len(), "the eprints model is behind the usage model: first uses read what it holds");
        }
        let uris: Vec<&str> = first.keys().map(String::as_str).collect();
        for (uri, written) in uris.iter().zip(eprints.written_each(&uris)?) {
            let mut row = Columns::new();
            let submission = written.as_ref().and_then(Written::submission);
            if let Some(w) = &written {
                row.insert("rev".into(), Value::Text(w.rev.clone()));
            }
            row.insert("live".into(), Value::Bool(submission.is_some()));
            if let Some(s) = submission {
                row.insert("title".into(), Value::Text(s.title));
                row.insert("fields".into(), Value::Text(serde_json::to_string(&s.fields).unwrap_or_default()));
            }
            let ranked_as = Ranked::of(uri, &row);
            t.eprints.insert(
                (*uri).to_owned(),
                Eprint { row, ranked_as, seen: None, before: None, points: Vec::new(), position: None, hours: BTreeMap::new() },
            );
        }
        Ok(())
    }

    /// The recent uses of `uri` (its `seen` rows), as the last batch left them or read on
    /// its first use. The batch writes them at its end, so the store's are those before it.
    fn seen<'e>(&self, e: &'e mut Eprint, warm: &mut Warm, uri: &str) -> Result<&'e mut Seen, ProjectionError> {
        if e.seen.is_none() {
            e.seen = warm.seen.remove(uri);
        }
        if e.seen.is_none() {
            let rows = self.store.scan(&table(self.version, "seen"), uri, &Scan { after: None, limit: SEEN_ROWS, reverse: false })?.rows;
            e.seen = Some(Seen::from_rows(rows.iter().map(|r| (r.clustering.as_slice(), r.columns.get("recent")))));
        }
        Ok(e.seen.as_mut().expect("read"))
    }

    /// What the days before `day` add up to for `uri` (`getMetrics` reads it instead of
    /// merging them), its `before` row: written when a counted use opens a day, from the
    /// `before` row of the day it last opened (`previous`, none for its first) and the days
    /// since. The days are the store's, under the batch's own (`days`).
    fn days_before(
        &self,
        st: &mut Staged,
        days: &BTreeMap<(String, Vec<u8>), Day>,
        uri: &str,
        day: i64,
        previous: Option<Columns>,
    ) -> Result<Columns, ProjectionError> {
        let first = day_key(day - 29);
        let scan = Scan { after: Some(day_key(day - 30)), limit: 30, reverse: false };
        let mut rows: BTreeMap<i64, (i64, Viewers)> = BTreeMap::new();
        // The batch writes its `daily` rows at its end, so the store's are those before it.
        for row in self.store.scan(&table(self.version, "daily"), uri, &scan)?.rows {
            let sketch = Viewers::in_column(&row.columns, "viewers");
            rows.extend(parse_bucket_key(&row.clustering).map(|d| (d, (int(&row.columns, "views"), sketch))));
        }
        for ((_, key), d) in days.range((uri.to_owned(), first)..).take_while(|((u, _), _)| u == uri) {
            let sketch = d.viewers.clone().unwrap_or_else(|| Viewers::in_column(&d.row, "viewers"));
            rows.extend(parse_bucket_key(key).map(|n| (n, (int(&d.row, "views"), sketch))));
        }
        let (mut week, mut month, mut views) = (Viewers::default(), Viewers::default(), Vec::new());
        for (d, (n, sketch)) in rows.range(day - 29..day) {
            if day - d < Window::Week.seconds() / 86_400 {
                week.merge(sketch);
            }
            month.merge(sketch);
            if *n > 0 {
                views.push((*d, *n));
            }
        }
        // Every viewer before: those before the day last opened, and that day's (its row was
        // the eprint's newest: no use came between it and `day`).
        let previous = previous.unwrap_or_default();
        let mut all = Viewers::in_column(&previous, "beforeAll");
        if let Some(last) = previous.get("day").and_then(Value::as_int) {
            let in_batch = days.get(&(uri.to_owned(), day_key(last)));
            let last_day = match (in_batch, rows.get(&last)) {
                (Some(d), _) => d.viewers.clone().unwrap_or_else(|| Viewers::in_column(&d.row, "viewers")),
                (None, Some((_, sketch))) => sketch.clone(),
                (None, None) => Viewers::in_column(
                    &st.get(self.store.as_ref(), &table(self.version, "daily"), uri, &day_key(last))?.unwrap_or_default(),
                    "viewers",
                ),
            };
            all.merge(&last_day);
        }
        let mut before = Columns::new();
        before.insert("day".into(), Value::Int(day));
        before.insert("beforeAll".into(), all.to_value());
        before.insert("before7d".into(), week.to_value());
        before.insert("before30d".into(), month.to_value());
        before.insert("days".into(), Value::Text(serde_json::to_string(&views).unwrap_or_default()));
        Ok(before)
    }

    /// The day `day` of `uri` as the batch has it: as the last batch left it, or read on
    /// its first use.
    fn day<'t>(
        &self,
        st: &mut Staged,
        t: &'t mut BTreeMap<(String, Vec<u8>), Day>,
        warm: &mut Warm,
        uri: &str,
        day: Vec<u8>,
    ) -> Result<&'t mut Day, ProjectionError> {
        let key = (uri.to_owned(), day);
        if !t.contains_key(&key) {
            let d = match warm.days.remove(&key) {
                Some(d) => d,
                None => Day {
                    row: st.get(self.store.as_ref(), &table(self.version, "daily"), uri, &key.1)?.unwrap_or_default(),
                    viewers: None,
                    position: 0,
                },
            };
            t.insert(key.clone(), d);
        }
        Ok(t.get_mut(&key).expect("inserted"))
    }

    /// A submission at `rev`: live with its title and fields, or gone (deleted, taken down).
    fn submission(
        &self,
        st: &mut Staged,
        t: &mut Touched,
        uri: &str,
        rev: &str,
        live: Option<(&str, &[String])>,
        position: u64,
    ) -> Result<(), ProjectionError> {
        // An eprint never used has no row: its first use reads it from the eprints model.
        let Some(e) = self.eprint(st, &mut t.eprints, &mut t.warm, uri)? else { return Ok(()) };
        if is_stale(Some(&e.row).filter(|c| c.contains_key("rev")), rev) {
            return Ok(());
        }
        e.row.insert("rev".into(), Value::Text(rev.to_owned()));
        e.row.insert("live".into(), Value::Bool(live.is_some()));
        let (title, fields) = live.unwrap_or_default();
        e.row.insert("title".into(), Value::Text(title.to_owned()));
        e.row.insert("fields".into(), Value::Text(serde_json::to_string(fields).unwrap_or_default()));
        e.position = Some(position);
        Ok(())
    }

    /// One use of an eprint at `time` (µs), counted by the rules of the module docs.
    fn used(&self, st: &mut Staged, t: &mut Touched, u: &UsageEvent, time: i64, position: u64) -> Result<(), ProjectionError> {
        let Some(e) = self.eprint(st, &mut t.eprints, &mut t.warm, &u.uri)? else {
            return Err(ProjectionError::Corrupt(format!("no row of {} after its first use was read", u.uri)));
        };
        e.position = Some(position);
        // Uses of one eprint are applied in log order; their times never go back.
        let at = time.max(int(&e.row, "lastAt"));
        e.row.insert("lastAt".into(), Value::Int(at));
        if u.robot {
            add(&mut e.row, "robots", 1);
            return Ok(());
        }
        let (counted, kind, total) = match &u.action {
            UsageAction::View { .. } => (Counted::View, Kind::View, "views"),
            UsageAction::Download { .. } | UsageAction::SearchDownload { .. } => (Counted::Download, Kind::Download, "downloads"),
            UsageAction::SearchClick { .. } => (Counted::Other, Kind::SearchClick, "searchClicks"),
            UsageAction::DwellTime { duration_ms, .. } => {
                // A time spent, not a click: every one counts toward the mean.
                add(&mut e.row, "dwellMs", *duration_ms as i64);
                add(&mut e.row, "dwells", 1);
                return Ok(());
            }
        };
        if let UsageAction::SearchDownload { .. } = u.action {
            add(&mut e.row, "searchDownloads", 1);
        }
        if self.seen(e, &mut t.warm, &u.uri)?.double_click(&u.viewer, kind, at) {
            add(&mut e.row, "doubleClicks", 1);
            return Ok(());
        }
        add(&mut e.row, total, 1);
        match &u.action {
            UsageAction::SearchClick { impression_id, position: rank, .. } => {
                self.clicked(st, impression_id.as_deref(), *rank, position)?
            }
            UsageAction::SearchDownload { .. } => self.searched(st, "searchDownloads", 1, position)?,
            _ => {}
        }
        if matches!(counted, Counted::Other) {
            return Ok(());
        }
        for window in Window::ALL {
            let kept = ln_add(float(&e.row, window.column()), window.exponent(at));
            e.row.insert(window.column().into(), Value::Float(kept));
        }
        e.points.push(Point::after(at, position, &e.row));
        // The eprint's first counted use of a day: what the days before add up to.
        if e.row.get("day").and_then(Value::as_int) != Some(day_of(at)) {
            let previous = match e.before.take() {
                Some(before) => Some(before),
                None => st.get(self.store.as_ref(), &table(self.version, "before"), &u.uri, &[])?,
            };
            e.before = Some(self.days_before(st, &t.days, &u.uri, day_of(at), previous)?);
            e.row.insert("day".into(), Value::Int(day_of(at)));
        }
        // The eprint's and the site's buckets; distinct viewers of the day.
        let day = day_key(day_of(at));
        let d = self.day(st, &mut t.days, &mut t.warm, &u.uri, day.clone())?;
        d.position = position;
        add(&mut d.row, total, 1);
        if matches!(counted, Counted::View) {
            d.viewers.get_or_insert_with(|| Viewers::in_column(&d.row, "viewers")).insert(&u.viewer);
        }
        e.hours.entry(hour_of(at)).or_default().count(&counted, position);
        t.site_days.entry(day_of(at)).or_default().count(&counted, position);
        t.site_hours.entry(hour_of(at)).or_default().count(&counted, position);
        Ok(())
    }

    /// Writes what the batch changed of its eprints and days: each row once, and an
    /// eprint's rankings moved from where it stood before the batch to where it stands after.
    /// Returns what to keep for the next batches ([`Warm`]).
    fn write(&self, st: &mut Staged, t: Touched, batch: &EventBatch) -> Result<Warm, ProjectionError> {
        let store = self.store.as_ref();
        let mut warm = t.warm;
        let mut kept = Leftover::default();
        let hourly = table(self.version, "hourly");
        for (uri, e) in t.eprints {
            // An eprint's recent uses are read only by a use, which gives it a position.
            let Some(position) = e.position else { continue };
            for (hour, tally) in &e.hours {
                let row = match warm.hours.remove(&(uri.clone(), *hour)) {
                    Some(row) => {
                        st.read_from(&hourly);
                        row
                    }
                    None => st.get(store, &hourly, &uri, &hour_key(*hour))?.unwrap_or_default(),
                };
                let row = tally.added_to(row);
                st.put(&hourly, &uri, hour_key(*hour), row.clone(), tally.position);
                kept.hours.push(((uri.clone(), *hour), row));
            }
            let now = Ranked::of(&uri, &e.row);
            if now != e.ranked_as {
                let ranking = table(self.version, "ranking");
                let same_row = now.0 == e.ranked_as.0;
                let stays = |places: &[(String, Vec<u8>)], place: &(String, Vec<u8>)| same_row && places.contains(place);
                for place in e.ranked_as.1.iter().filter(|p| !stays(&now.1, p)) {
                    st.delete(&ranking, &place.0, place.1.clone(), position);
                }
                for place in now.1.iter().filter(|p| !stays(&e.ranked_as.1, p)) {
                    st.put(&ranking, &place.0, place.1.clone(), now.0.clone(), position);
                }
            }
            if let Some(mut seen) = e.seen {
                let SeenWrites { puts, deletes } = seen.written();
                for key in deletes {
                    st.delete(&table(self.version, "seen"), &uri, key, position);
                }
                for (key, recent) in puts {
                    st.put(&table(self.version, "seen"), &uri, key, Columns::from([("recent".to_owned(), recent)]), position);
                }
                kept.seen.insert(uri.clone(), seen);
            }
            if let Some(before) = e.before {
                st.put(&table(self.version, "before"), &uri, Vec::new(), before, position);
            }
            if let Some(first) = e.points.first() {
                let key = history_key(first.at, first.ordinal);
                st.put(&table(self.version, "history"), &uri, key, Point::row(&e.points), position);
            }
            st.put(&table(self.version, "papers"), &uri, Vec::new(), e.row.clone(), position);
            kept.papers.push((uri, e.row));
        }
        for ((uri, day), mut d) in t.days {
            // Kept decoded: the kept row holds the counts alone.
            if d.viewers.is_some() {
                d.row.remove("viewers");
            }
            let mut row = d.row.clone();
            if let Some(viewers) = &d.viewers {
                row.insert("viewers".into(), viewers.to_value());
            }
            st.put(&table(self.version, "daily"), &uri, day.clone(), row, d.position);
            kept.days.push(((uri, day), Day { row: d.row, viewers: d.viewers, position: 0 }));
        }
        for (day, tally) in &t.site_days {
            tally.add_to(st, store, table(self.version, "daily"), SITE, day_key(*day))?;
        }
        for (hour, tally) in &t.site_hours {
            tally.add_to(st, store, table(self.version, "hourly"), SITE, hour_key(*hour))?;
        }
        Ok(warm.after(batch, kept))
    }
}

impl UsageProjection {
    /// Adds `by` to one of the site's search counts.
    fn searched(&self, st: &mut Staged, column: &str, by: i64, position: u64) -> Result<(), ProjectionError> {
        let mut c = st.get(self.store.as_ref(), &table(self.version, "searches"), SITE, &[])?.unwrap_or_default();
        add(&mut c, column, by);
        st.put(&table(self.version, "searches"), SITE, Vec::new(), c, position);
        Ok(())
    }

    /// Counts an impression clicked once both it and its first click are in.
    fn join(&self, st: &mut Staged, row: &Columns, position: u64) -> Result<(), ProjectionError> {
        if row.get("shown").and_then(Value::as_bool) == Some(true) && int(row, "firstRank") > 0 {
            self.searched(st, "clickedImpressions", 1, position)?;
            // The reciprocal ranks are kept in millionths, summed as integers.
            self.searched(st, "reciprocalRanks", 1_000_000 / int(row, "firstRank"), position)?;
        }
        Ok(())
    }

    /// A click on a search result at `rank` (0-based), of an impression when named.
    fn clicked(&self, st: &mut Staged, impression: Option<&str>, rank: u32, position: u64) -> Result<(), ProjectionError> {
        self.searched(st, "clicks", 1, position)?;
        let Some(id) = impression.filter(|i| !i.is_empty()) else { return Ok(()) };
        let mut row = st.get(self.store.as_ref(), &table(self.version, "impressions"), id, &[])?.unwrap_or_default();
        if int(&row, "firstRank") > 0 {
            return Ok(());
        }
        row.insert("firstRank".into(), Value::Int(i64::from(rank) + 1));
        self.join(st, &row, position)?;
        st.put(&table(self.version, "impressions"), id, Vec::new(), row, position);
        Ok(())
    }

    /// A search's results shown.
    fn impression(&self, st: &mut Staged, s: &SearchImpression, position: u64) -> Result<(), ProjectionError> {
        let mut row = st.get(self.store.as_ref(), &table(self.version, "impressions"), &s.impression_id, &[])?.unwrap_or_default();
        if row.get("shown").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        row.insert("shown".into(), Value::Bool(true));
        row.insert("hits".into(), Value::Int(s.hits as i64));
        self.searched(st, "impressions", 1, position)?;
        self.join(st, &row, position)?;
        st.put(&table(self.version, "impressions"), &s.impression_id, Vec::new(), row, position);
        if s.hits == 0 {
            self.searched(st, "zeroResults", 1, position)?;
            let query = s.query.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
            let query: String = query.chars().take(200).collect();
            let counted = format!("q:{query}");
            let mut zero = st.get(self.store.as_ref(), &table(self.version, "zero"), &counted, &[])?.unwrap_or_default();
            let n = int(&zero, "n");
            st.delete(&table(self.version, "zero"), SITE, zero_key(n, &query), position);
            zero.insert("n".into(), Value::Int(n + 1));
            st.put(&table(self.version, "zero"), &counted, Vec::new(), zero, position);
            st.put(&table(self.version, "zero"), SITE, zero_key(n + 1, &query), Columns::new(), position);
        }
        Ok(())
    }
}

impl Projection for UsageProjection {
    fn model(&self) -> &'static str {
        MODEL
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.store.checkpoints(&consumer_name(MODEL, self.version))?)
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        let mut st = Staged::default();
        // Taken: a batch that fails leaves nothing kept (see `Warm`).
        let warm = std::mem::take(&mut self.warm).for_batch(&self.checkpoints()?, batch);
        let mut touched = Touched { warm, ..Touched::default() };
        self.first_uses(&mut st, &mut touched, batch)?;
        for event in batch.iter() {
            let e = event.envelope;
            let position = e.position.ordinal();
            match &e.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if w.collection == SUBMISSION => {
                    if let Some((w, Ok(s))) = event.submission(&self.lexicons) {
                        self.submission(&mut st, &mut touched, &w.uri(), &w.rev, Some((&s.title, &s.fields)), position)?;
                    }
                }
                Payload::RecordDelete(d) if d.collection == SUBMISSION => {
                    self.submission(&mut st, &mut touched, &d.uri(), &d.rev, None, position)?
                }
                Payload::Admin(AdminCommand { action: AdminAction::ContentDeleted { uri, collection, .. }, .. })
                    if collection == SUBMISSION =>
                {
                    self.submission(&mut st, &mut touched, uri, TAKEN_DOWN_REV, None, position)?
                }
                Payload::Usage(u) => self.used(&mut st, &mut touched, u, u.at.unwrap_or(e.appended_at).timestamp_micros(), position)?,
                Payload::Search(s) => self.impression(&mut st, s, position)?,
                _ => {}
            }
        }
        let warm = self.write(&mut st, touched, batch)?;
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next())?;
        self.warm = warm;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        crate::staged::settle(self.store.as_ref(), MODEL, self.version, self.rebuild)?;
        Ok(())
    }
}
