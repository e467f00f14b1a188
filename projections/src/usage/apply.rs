//! Applying events to the usage read model.

use std::sync::Arc;

use event_schema::{AdminAction, AdminCommand, Payload, SearchImpression, UsageAction, UsageEvent};
use lexicons::{Lexicons, SUBMISSION};
use serde::{Deserialize, Serialize};
use store::{consumer_name, Columns, Store, Value};

use super::sketch::Viewers;
use super::{
    day_key, day_of, history_key, hour_key, hour_of, ln_add, ranking_key, ranking_partition, table, zero_key, Window, DOUBLE_CLICK_MICROS,
    MODEL, SITE,
};
use crate::catalog::Mode;
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
}

/// One use of the last 30 s: who, what, when (µs).
#[derive(Serialize, Deserialize)]
struct Recent(String, String, i64);

/// What a use adds to an eprint's totals.
enum Counted {
    View,
    Download,
    /// Counted in its own total only (`searchClicks`, `dwells`…), not in the score.
    Other,
}

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
        UsageProjection { store, lexicons, version, rebuild: mode == Mode::Rebuild }
    }

    fn paper(&self, st: &mut Staged, uri: &str) -> Result<Columns, ProjectionError> {
        Ok(st.get(self.store.as_ref(), &table(self.version, "papers"), uri, &[])?.unwrap_or_default())
    }

    /// Takes the eprint out of the rankings (`by` false) or puts it in (`by` true), as `c` says.
    fn rank(&self, st: &mut Staged, uri: &str, c: &Columns, put: bool, position: u64) {
        if !ranked(c) {
            return;
        }
        let fields = fields_of(c);
        let mut row = Columns::new();
        row.insert("fields".into(), Value::Text(serde_json::to_string(&fields).unwrap_or_default()));
        row.insert("title".into(), Value::Text(text(c, "title").unwrap_or_default()));
        for window in Window::ALL {
            let key = ranking_key(float(c, window.column()), uri);
            let partitions = std::iter::once(None).chain(fields.iter().map(|f| Some(f.as_str())));
            for partition in partitions.map(|f| ranking_partition(window, f)) {
                if put {
                    st.put(&table(self.version, "ranking"), &partition, key.clone(), row.clone(), position);
                } else {
                    st.delete(&table(self.version, "ranking"), &partition, key.clone(), position);
                }
            }
        }
    }

    /// A submission at `rev`: live with its title and fields, or gone (deleted, taken down).
    fn eprint(&self, st: &mut Staged, uri: &str, rev: &str, live: Option<(&str, &[String])>, position: u64) -> Result<(), ProjectionError> {
        let mut c = self.paper(st, uri)?;
        if is_stale(Some(&c).filter(|c| c.contains_key("rev")), rev) {
            return Ok(());
        }
        self.rank(st, uri, &c, false, position);
        c.insert("rev".into(), Value::Text(rev.to_owned()));
        c.insert("live".into(), Value::Bool(live.is_some()));
        let (title, fields) = live.unwrap_or_default();
        c.insert("title".into(), Value::Text(title.to_owned()));
        c.insert("fields".into(), Value::Text(serde_json::to_string(fields).unwrap_or_default()));
        self.rank(st, uri, &c, true, position);
        st.put(&table(self.version, "papers"), uri, Vec::new(), c, position);
        Ok(())
    }

    /// One use of an eprint at `time` (µs), counted by the rules of the module docs.
    fn used(&self, st: &mut Staged, u: &UsageEvent, time: i64, position: u64) -> Result<(), ProjectionError> {
        let mut c = self.paper(st, &u.uri)?;
        // Uses of one eprint are applied in log order; their times never go back.
        let at = time.max(int(&c, "lastAt"));
        c.insert("lastAt".into(), Value::Int(at));
        if u.robot {
            add(&mut c, "robots", 1);
            st.put(&table(self.version, "papers"), &u.uri, Vec::new(), c, position);
            return Ok(());
        }
        let (counted, total) = match &u.action {
            UsageAction::View { .. } => (Counted::View, "views"),
            UsageAction::Download { .. } => (Counted::Download, "downloads"),
            UsageAction::SearchDownload { .. } => (Counted::Download, "downloads"),
            UsageAction::SearchClick { .. } => (Counted::Other, "searchClicks"),
            UsageAction::DwellTime { duration_ms, .. } => {
                add(&mut c, "dwellMs", *duration_ms as i64);
                (Counted::Other, "dwells")
            }
        };
        if let UsageAction::SearchDownload { .. } = u.action {
            add(&mut c, "searchDownloads", 1);
        }
        if let UsageAction::DwellTime { .. } = u.action {
            // A time spent, not a click: every one counts toward the mean.
            add(&mut c, total, 1);
            st.put(&table(self.version, "papers"), &u.uri, Vec::new(), c, position);
            return Ok(());
        }
        // The double-click rule: the uses of the last 30 s, this one's replacing its viewer's.
        let mut recent: Vec<Recent> = text(&c, "recent").and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default();
        recent.retain(|r| at - r.2 < DOUBLE_CLICK_MICROS);
        let action = match counted {
            Counted::View => "view",
            Counted::Download => "download",
            Counted::Other => u.action.name(),
        };
        let double = recent.iter().any(|r| r.0 == u.viewer && r.1 == action);
        recent.retain(|r| !(r.0 == u.viewer && r.1 == action));
        recent.push(Recent(u.viewer.clone(), action.to_owned(), at));
        c.insert("recent".into(), Value::Text(serde_json::to_string(&recent).unwrap_or_default()));
        if double {
            add(&mut c, "doubleClicks", 1);
            st.put(&table(self.version, "papers"), &u.uri, Vec::new(), c, position);
            return Ok(());
        }
        add(&mut c, total, 1);
        match &u.action {
            UsageAction::SearchClick { impression_id, position: rank, .. } => {
                self.clicked(st, impression_id.as_deref(), *rank, position)?
            }
            UsageAction::SearchDownload { .. } => self.searched(st, "searchDownloads", 1, position)?,
            _ => {}
        }
        if matches!(counted, Counted::Other) {
            st.put(&table(self.version, "papers"), &u.uri, Vec::new(), c, position);
            return Ok(());
        }
        self.rank(st, &u.uri, &c, false, position);
        for window in Window::ALL {
            let kept = ln_add(float(&c, window.column()), window.exponent(at));
            c.insert(window.column().into(), Value::Float(kept));
        }
        // The eprint's and the site's buckets; distinct viewers of all time and of the day.
        let day = day_key(day_of(at));
        let mut daily = st.get(self.store.as_ref(), &table(self.version, "daily"), &u.uri, &day)?.unwrap_or_default();
        add(&mut daily, total, 1);
        if matches!(counted, Counted::View) {
            for row in [&mut c, &mut daily] {
                let mut viewers = Viewers::from_text(row.get("viewers").and_then(Value::as_text));
                viewers.insert(&u.viewer);
                row.insert("viewers".into(), Value::Text(viewers.to_text()));
            }
        }
        st.put(&table(self.version, "daily"), &u.uri, day.clone(), daily, position);
        let hour = hour_key(hour_of(at));
        for (name, partition, key) in [("daily", SITE, &day), ("hourly", SITE, &hour), ("hourly", u.uri.as_str(), &hour)] {
            let mut bucket = st.get(self.store.as_ref(), &table(self.version, name), partition, key)?.unwrap_or_default();
            add(&mut bucket, total, 1);
            st.put(&table(self.version, name), partition, key.clone(), bucket, position);
        }
        let mut point = Columns::new();
        for k in ["views", "downloads"] {
            point.insert(k.into(), Value::Int(int(&c, k)));
        }
        for window in Window::ALL {
            point.insert(window.column().into(), Value::Float(float(&c, window.column())));
        }
        st.put(&table(self.version, "history"), &u.uri, history_key(at, position), point, position);
        self.rank(st, &u.uri, &c, true, position);
        st.put(&table(self.version, "papers"), &u.uri, Vec::new(), c, position);
        Ok(())
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
        for event in batch.iter() {
            let e = event.envelope;
            let position = e.position.ordinal();
            match &e.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) if w.collection == SUBMISSION => {
                    if let Some((w, Ok(s))) = event.submission(&self.lexicons) {
                        self.eprint(&mut st, &w.uri(), &w.rev, Some((&s.title, &s.fields)), position)?;
                    }
                }
                Payload::RecordDelete(d) if d.collection == SUBMISSION => self.eprint(&mut st, &d.uri(), &d.rev, None, position)?,
                Payload::Admin(AdminCommand { action: AdminAction::ContentDeleted { uri, collection, .. }, .. })
                    if collection == SUBMISSION =>
                {
                    self.eprint(&mut st, uri, TAKEN_DOWN_REV, None, position)?
                }
                Payload::Usage(u) => self.used(&mut st, u, u.at.unwrap_or(e.appended_at).timestamp_micros(), position)?,
                Payload::Search(s) => self.impression(&mut st, s, position)?,
                _ => {}
            }
        }
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next())?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        crate::staged::settle(self.store.as_ref(), self.rebuild)?;
        Ok(())
    }
}
