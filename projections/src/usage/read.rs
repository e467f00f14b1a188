//! Reading the usage read model (its active version): an eprint's counts as of any time, and
//! the trending eprints now or as of a past time. Every read is bounded: a few rows per
//! eprint (its totals, three or four points of its history, and now the day of its last use
//! with what the projection keeps of the days before, else 30 days of sketches), one page of a
//! ranking per page asked, except the ranking as of a past time (see [`UsageReader::trending`]).

use std::collections::BTreeSet;

use store::{Columns, Scan, Store, Value};

use super::sketch::Viewers;
use super::{
    day_key, day_of, history_after, hour_key, hour_of, parse_bucket_key, parse_ranking_key, ranking_partition, table, Point, Window, MODEL,
    SITE,
};
use crate::ProjectionError;

/// An eprint's totals of all time (as `getSubmission` and `getViewCount` report them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Counted views.
    pub views: u64,
    /// Counted downloads.
    pub downloads: u64,
}

/// An eprint's usage as of one time (`getMetrics`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Counted views up to then.
    pub views: u64,
    /// Counted downloads up to then.
    pub downloads: u64,
    /// Distinct viewers of all time (estimated; now only: the sketch of all time is not
    /// kept per instant, so as of a past time it is the distinct viewers of the 30 days up
    /// to then, merged).
    pub unique_views: u64,
    /// Views in the 24 hours, 7 days and 30 days up to then.
    pub views_in: [u64; 3],
    /// Downloads in the same windows.
    pub downloads_in: [u64; 3],
    /// Distinct viewers on the UTC days the windows touch (1, 7 and 30 days up to and with
    /// the day of the time asked), merged from daily sketches. (As of a past time, that day
    /// counts its viewers up to its end: a sketch is kept per day, not per instant.)
    pub unique_in: [u64; 3],
    /// Uses by robots, not counted (now).
    pub robots: u64,
    /// Clicks within 30 s of the same viewer's last, not counted again (now).
    pub double_clicks: u64,
    /// Search results opened (now).
    pub search_clicks: u64,
    /// Mean time on the eprint, in ms (now; 0 when none was recorded).
    pub mean_dwell_ms: u64,
    /// Views per UTC day, the 30 days up to and with the day asked: `(day, views)`, days
    /// since the epoch, oldest first, days without views left out.
    pub daily_views: Vec<(i64, u64)>,
}

/// An entry of a trending list.
#[derive(Debug, Clone, PartialEq)]
pub struct Trending {
    /// The eprint.
    pub uri: String,
    /// Its title.
    pub title: String,
    /// Its score at the time asked: its views and downloads, each weighted by
    /// `exp(−age/τ)`.
    pub score: f64,
    /// Whether it is in one of the fields asked for.
    pub in_fields: bool,
}

/// A page of a trending list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrendingPage {
    /// The entries, best first.
    pub entries: Vec<Trending>,
    /// Where the next page starts, if there may be one.
    pub cursor: Option<Vec<u8>>,
}

/// The width of a time series' buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    /// An hour.
    Hour,
    /// A UTC day.
    Day,
}

impl Granularity {
    /// The bucket's length in µs.
    pub fn micros(self) -> i64 {
        match self {
            Granularity::Hour => 3_600_000_000,
            Granularity::Day => 86_400_000_000,
        }
    }
}

/// One bucket of a time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// When it starts (µs).
    pub start: i64,
    /// Counted views in it.
    pub views: u64,
    /// Counted downloads in it.
    pub downloads: u64,
}

/// How an eprint's use moves: its counted views and downloads in a window up to a time,
/// against the window before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Velocity {
    /// Views in the window.
    pub views: u64,
    /// Downloads in the window.
    pub downloads: u64,
    /// Views and downloads in the window before.
    pub previous: u64,
    /// `(uses − previous) / max(previous, 1)`: 1.0 is twice the uses of the window before.
    pub velocity: f64,
}

/// How searches went, over every search svc recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchAnalytics {
    /// Result lists shown.
    pub impressions: u64,
    /// Of them, those that found nothing.
    pub zero_results: u64,
    /// Clicks on results (with or without an impression named).
    pub clicks: u64,
    /// Impressions with at least one click.
    pub clicked_impressions: u64,
    /// The mean over clicked impressions of 1 / the rank of their first click.
    pub mean_reciprocal_rank: f64,
    /// Downloads from result lists.
    pub search_downloads: u64,
    /// The queries that found nothing, most frequent first: `(query, times)`.
    pub zero_queries: Vec<(String, u64)>,
}

/// Reads the active version of the usage model.
pub struct UsageReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

fn int(c: &Columns, k: &str) -> u64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0).max(0) as u64
}

/// A point of an eprint's history is looked up from the end of the minute that holds it
/// (µs), [`POINT_SCAN_ROWS`] rows at a time ([`UsageReader::point`]).
const POINT_SCAN_SPAN: i64 = 60_000_000;
const POINT_SCAN_ROWS: usize = 4;

/// A cursor of a trending list: `0` then a ranking key (in the fields asked), `1` then a
/// ranking key (the rest), or `2` then a count of entries given (as of a past time).
const IN_FIELDS: u8 = 0;
const REST: u8 = 1;
const OFFSET: u8 = 2;

/// Which of a batch of eprints (by URI) a listing may show, in order: the caller's rule (say,
/// none of a hidden account's), asked once per page of ranking rows read.
pub type Shown<'k> = dyn Fn(&[&str]) -> Result<Vec<bool>, ProjectionError> + 'k;

/// Decides a walk's [`Step`] for an eprint from its ranking key and fields.
type StepFn<'s> = dyn FnMut(&[u8], &Ranked) -> Result<Step, ProjectionError> + 's;

/// What a ranking row holds of its eprint.
#[derive(Debug, Clone, Default)]
struct Ranked {
    title: String,
    /// Its fields, a JSON array of text, parsed only when a listing filters by field.
    fields: String,
    /// Whether the listing may show it ([`Shown`]).
    shown: bool,
}

impl Ranked {
    /// Whether the eprint is in any of `fields` (none when `fields` is empty).
    fn in_any(&self, fields: &BTreeSet<&str>) -> bool {
        !fields.is_empty()
            && serde_json::from_str::<Vec<String>>(&self.fields).is_ok_and(|of| of.iter().any(|f| fields.contains(f.as_str())))
    }
}

/// What a walk over a ranking does with an eprint.
enum Step {
    Take,
    Skip,
    Stop,
}

impl<'a> UsageReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<UsageReader<'a>, ProjectionError> {
        Ok(UsageReader { store, version: store.active_version(MODEL)? })
    }

    /// Whether the model has an active version.
    pub fn is_built(&self) -> bool {
        self.version.is_some()
    }

    /// The totals of `uri` now: one row read.
    pub fn totals(&self, uri: &str) -> Result<Totals, ProjectionError> {
        let Some(v) = self.version else { return Ok(Totals::default()) };
        let c = self.store.get(&table(v, "papers"), uri, &[])?.unwrap_or_default();
        Ok(Totals { views: int(&c, "views"), downloads: int(&c, "downloads") })
    }

    /// The running totals of `uri` at `at` (µs): the last point at or before then, of the
    /// last `history` row keyed at or before then.
    ///
    /// The rows are read back from the end of `at`'s minute, a few at a time, and those
    /// after `at` skipped: every read within a minute asks the same page of the partition,
    /// which the store's row cache then answers (a window's start moves with the clock, so
    /// a scan from `at` itself would be asked once and cached for nothing). Only when a
    /// minute holds more rows than that page does a second scan start from `at`.
    fn point(&self, v: u32, uri: &str, at: i64) -> Result<Option<Columns>, ProjectionError> {
        let minute_end = at - at.rem_euclid(POINT_SCAN_SPAN) + (POINT_SCAN_SPAN - 1);
        let scan = Scan { after: Some(history_after(minute_end)), limit: POINT_SCAN_ROWS, reverse: true };
        let page = self.store.scan(&table(v, "history"), uri, &scan)?.rows;
        let (full, bound) = (page.len() == POINT_SCAN_ROWS, history_after(at));
        let row = match page.into_iter().find(|r| r.clustering < bound) {
            Some(row) => Some(row),
            None if !full => None,
            None => {
                let scan = Scan { after: Some(bound), limit: 1, reverse: true };
                self.store.scan(&table(v, "history"), uri, &scan)?.rows.into_iter().next()
            }
        };
        Ok(row.and_then(|r| Point::last_of_row(&r.clustering, &r.columns, at)).map(|p| p.columns()))
    }

    /// The usage of `uri` as of `at` (µs), now included.
    pub fn usage(&self, uri: &str, at: i64) -> Result<Usage, ProjectionError> {
        let Some(v) = self.version else { return Ok(Usage::default()) };
        let paper = self.store.get(&table(v, "papers"), uri, &[])?.unwrap_or_default();
        // Nothing used after `at`: the totals and today's bucket are the figures asked for,
        // with no history read for them.
        let now_or_later = at >= paper.get("lastAt").and_then(Value::as_int).unwrap_or(i64::MIN);
        let point = if now_or_later { None } else { Some(self.point(v, uri, at)?.unwrap_or_default()) };
        let then = point.as_ref().unwrap_or(&paper);
        let mut out = Usage {
            views: int(then, "views"),
            downloads: int(then, "downloads"),
            robots: int(&paper, "robots"),
            double_clicks: int(&paper, "doubleClicks"),
            search_clicks: int(&paper, "searchClicks"),
            mean_dwell_ms: int(&paper, "dwellMs").checked_div(int(&paper, "dwells")).unwrap_or(0),
            ..Usage::default()
        };
        for (i, window) in Window::ALL.into_iter().enumerate() {
            let before = self.point(v, uri, at - window.seconds() * 1_000_000)?.unwrap_or_default();
            out.views_in[i] = out.views.saturating_sub(int(&before, "views"));
            out.downloads_in[i] = out.downloads.saturating_sub(int(&before, "downloads"));
        }
        let last = day_of(at);
        let before = if now_or_later { self.store.get(&table(v, "before"), uri, &[])? } else { None };
        let newest = before.as_ref().and_then(|b| b.get("day").and_then(Value::as_int));
        let newest_sketch = match before.as_ref().filter(|_| newest == Some(last)) {
            Some(before) => Some(self.days_kept(v, uri, last, before, &mut out)?),
            None => {
                self.days_scanned(v, uri, last, now_or_later, &mut out)?;
                None
            }
        };
        // Every viewer: those of the days before the newest, and the newest's.
        out.unique_views = match (&before, newest) {
            (Some(before), Some(day)) => {
                let mut all = Viewers::in_column(before, "beforeAll");
                let newest = match newest_sketch {
                    Some(sketch) => sketch,
                    None => Viewers::in_column(&self.store.get(&table(v, "daily"), uri, &day_key(day))?.unwrap_or_default(), "viewers"),
                };
                all.merge(&newest);
                all.count()
            }
            _ if now_or_later => 0,
            _ => out.unique_in[2],
        };
        Ok(out)
    }

    /// The distinct viewers in each window and the views per day up to `last`, the day of
    /// the eprint's last use, from what the projection keeps of the days before it (its
    /// `before` row) and that day's row: two reads. Returns that day's sketch.
    fn days_kept(&self, v: u32, uri: &str, last: i64, before: &Columns, out: &mut Usage) -> Result<Viewers, ProjectionError> {
        let today = self.store.get(&table(v, "daily"), uri, &day_key(last))?.unwrap_or_default();
        let sketch = Viewers::in_column(&today, "viewers");
        let [mut week, mut month] = ["before7d", "before30d"].map(|k| Viewers::in_column(before, k));
        week.merge(&sketch);
        month.merge(&sketch);
        out.unique_in = [sketch.count(), week.count(), month.count()];
        let days = before.get("days").and_then(Value::as_text);
        out.daily_views = days.and_then(|d| serde_json::from_str(d).ok()).unwrap_or_default();
        if int(&today, "views") > 0 {
            out.daily_views.push((last, int(&today, "views")));
        }
        Ok(sketch)
    }

    /// The same, as of any day `last`: thirty days of sketches merged, one scan.
    fn days_scanned(&self, v: u32, uri: &str, last: i64, now_or_later: bool, out: &mut Usage) -> Result<(), ProjectionError> {
        let scan = Scan { after: Some(day_key(last + 1)), limit: 30, reverse: true };
        let days = self.store.scan(&table(v, "daily"), uri, &scan)?.rows;
        // Newest first, merged into one sketch: the windows are nested, so each is counted
        // once the days before it begin.
        let spans = Window::ALL.map(|w| w.seconds() / 86_400);
        let mut merged = Viewers::default();
        let mut counted = 0;
        for row in &days {
            let Some(day) = parse_bucket_key(&row.clustering).filter(|d| *d > last - 30) else { continue };
            while counted < spans.len() && last - day >= spans[counted] {
                out.unique_in[counted] = merged.count();
                counted += 1;
            }
            merged.merge(&Viewers::in_column(&row.columns, "viewers"));
            // The day of `at` counts only its views up to `at`, from the history.
            let views = if day == last && !now_or_later {
                let day_start = last * 86_400_000_000;
                out.views.saturating_sub(int(&self.point(v, uri, day_start - 1)?.unwrap_or_default(), "views"))
            } else {
                int(&row.columns, "views")
            };
            if views > 0 {
                out.daily_views.push((day, views));
            }
        }
        while counted < spans.len() {
            out.unique_in[counted] = merged.count();
            counted += 1;
        }
        out.daily_views.reverse();
        Ok(())
    }

    /// The views and downloads of `uri` (or of every eprint) per bucket, from the bucket
    /// holding `from` to the one holding `to` (µs), empty buckets included: one scan.
    pub fn series(&self, uri: Option<&str>, granularity: Granularity, from: i64, to: i64) -> Result<Vec<Bucket>, ProjectionError> {
        let (first, last) = match granularity {
            Granularity::Hour => (hour_of(from), hour_of(to)),
            Granularity::Day => (day_of(from), day_of(to)),
        };
        let mut out: Vec<Bucket> = (first..=last).map(|b| Bucket { start: b * granularity.micros(), views: 0, downloads: 0 }).collect();
        let Some(v) = self.version else { return Ok(out) };
        let (name, key) = match granularity {
            Granularity::Hour => ("hourly", hour_key as fn(i64) -> Vec<u8>),
            Granularity::Day => ("daily", day_key as fn(i64) -> Vec<u8>),
        };
        let scan = Scan { after: Some(key(first - 1)), limit: out.len(), reverse: false };
        for row in self.store.scan(&table(v, name), uri.unwrap_or(SITE), &scan)?.rows {
            let Some(b) = parse_bucket_key(&row.clustering).filter(|b| (first..=last).contains(b)) else { continue };
            let bucket = &mut out[(b - first) as usize];
            bucket.views = int(&row.columns, "views");
            bucket.downloads = int(&row.columns, "downloads");
        }
        Ok(out)
    }

    /// How the use of `uri` moves in `window` up to `at` (µs): four history reads.
    pub fn velocity(&self, uri: &str, window: Window, at: i64) -> Result<Velocity, ProjectionError> {
        let Some(v) = self.version else { return Ok(Velocity { views: 0, downloads: 0, previous: 0, velocity: 0.0 }) };
        let w = window.seconds() * 1_000_000;
        let [now, start, before] = [at, at - w, at - 2 * w].map(|t| self.point(v, uri, t).map(Option::unwrap_or_default));
        let (now, start, before) = (now?, start?, before?);
        let uses = |c: &Columns| int(c, "views") + int(c, "downloads");
        let views = int(&now, "views").saturating_sub(int(&start, "views"));
        let downloads = int(&now, "downloads").saturating_sub(int(&start, "downloads"));
        let previous = uses(&start).saturating_sub(uses(&before));
        let velocity = ((views + downloads) as f64 - previous as f64) / previous.max(1) as f64;
        Ok(Velocity { views, downloads, previous, velocity })
    }

    /// How searches went, with the `top` most frequent zero-result queries: two reads.
    pub fn searches(&self, top: usize) -> Result<SearchAnalytics, ProjectionError> {
        let Some(v) = self.version else { return Ok(SearchAnalytics::default()) };
        let c = self.store.get(&table(v, "searches"), SITE, &[])?.unwrap_or_default();
        let clicked = int(&c, "clickedImpressions");
        let zero = self.store.scan(&table(v, "zero"), SITE, &Scan::first(top))?.rows;
        let zero_queries = zero
            .iter()
            .filter_map(|r| {
                let n = !u64::from_be_bytes(r.clustering.get(..8)?.try_into().ok()?);
                Some((String::from_utf8(r.clustering[8..].to_vec()).ok()?, n))
            })
            .collect();
        Ok(SearchAnalytics {
            impressions: int(&c, "impressions"),
            zero_results: int(&c, "zeroResults"),
            clicks: int(&c, "clicks"),
            clicked_impressions: clicked,
            mean_reciprocal_rank: if clicked == 0 { 0.0 } else { int(&c, "reciprocalRanks") as f64 / 1e6 / clicked as f64 },
            search_downloads: int(&c, "searchDownloads"),
            zero_queries,
        })
    }

    /// The decayed sum of `uri` for `window` at `at` (µs), from its history.
    fn kept_at(&self, v: u32, uri: &str, window: Window, at: i64) -> Result<f64, ProjectionError> {
        let point = self.point(v, uri, at)?;
        Ok(point.and_then(|c| c.get(window.column()).and_then(Value::as_float)).unwrap_or(f64::NEG_INFINITY))
    }

    /// A page of the trending eprints for `window`, best first, that `keep` accepts (the
    /// caller drops eprints it does not show, such as those of hidden accounts). With
    /// `fields`, the eprints in any of them come first, marked.
    ///
    /// `at` is `None` for now: one page of the kept ranking per page asked. As of a past
    /// time, the ranking kept now bounds every eprint's sum then from above (sums only grow),
    /// so the eprints are read in today's order, each one's sum then looked up in its
    /// history, until the next one's sum today cannot enter the page (Fagin's threshold
    /// algorithm): exact, and reading as far down today's ranking as the past's leaders sit.
    pub fn trending(
        &self,
        window: Window,
        at: Option<i64>,
        fields: &[String],
        limit: usize,
        cursor: Option<&[u8]>,
        keep: &Shown<'_>,
    ) -> Result<TrendingPage, ProjectionError> {
        let Some(v) = self.version else { return Ok(TrendingPage::default()) };
        let fields: BTreeSet<&str> = fields.iter().map(String::as_str).collect();
        match at {
            None => self.trending_now(v, window, &fields, limit, cursor, keep),
            Some(at) => self.trending_then(v, window, at, &fields, limit, cursor, keep),
        }
    }

    /// Walks the ranking rows of `partitions` after `after`, merged in ranking order, each
    /// eprint once, asking `step` of each (its key and fields) until it says stop or `want`
    /// were taken or the rows end; the keys taken.
    fn merged(
        &self,
        v: u32,
        partitions: &[String],
        after: Option<Vec<u8>>,
        want: usize,
        keep: &Shown<'_>,
        step: &mut StepFn<'_>,
    ) -> Result<Vec<(Vec<u8>, Ranked)>, ProjectionError> {
        struct Cursor {
            /// The rows read and not yet walked, each with whether it may be shown.
            rows: std::collections::VecDeque<(store::Row, bool)>,
            after: Option<Vec<u8>>,
            done: bool,
        }
        let page = want.clamp(8, 200);
        let mut cursors: Vec<Cursor> =
            partitions.iter().map(|_| Cursor { rows: Default::default(), after: after.clone(), done: false }).collect();
        let mut out = Vec::new();
        loop {
            for (c, partition) in cursors.iter_mut().zip(partitions) {
                if c.rows.is_empty() && !c.done {
                    let p =
                        self.store.scan(&table(v, "ranking"), partition, &Scan { after: c.after.clone(), limit: page, reverse: false })?;
                    c.done = p.rows.len() < page;
                    if let Some(last) = p.rows.last() {
                        c.after = Some(last.clustering.clone());
                    }
                    let uris: Vec<&str> = p.rows.iter().map(|r| parse_ranking_key(&r.clustering).map_or("", |(_, uri)| uri)).collect();
                    let shown = keep(&uris)?;
                    c.rows.extend(p.rows.into_iter().zip(shown));
                }
            }
            // The smallest head is the next in ranking order; an eprint in several of the
            // partitions heads each of them with the same key.
            let Some(key) = cursors.iter().filter_map(|c| c.rows.front()).map(|(r, _)| r.clustering.clone()).min() else {
                return Ok(out);
            };
            let mut ranked = Ranked::default();
            for c in cursors.iter_mut() {
                if c.rows.front().is_some_and(|(r, _)| r.clustering == key) {
                    let (mut row, shown) = c.rows.pop_front().expect("a head");
                    let mut text = |k: &str| match row.columns.remove(k) {
                        Some(Value::Text(t)) => t,
                        _ => String::new(),
                    };
                    ranked = Ranked { title: text("title"), fields: text("fields"), shown };
                }
            }
            match step(&key, &ranked)? {
                Step::Stop => return Ok(out),
                Step::Skip => {}
                Step::Take => {
                    out.push((key, ranked));
                    if out.len() == want {
                        return Ok(out);
                    }
                }
            }
        }
    }

    fn trending_now(
        &self,
        v: u32,
        window: Window,
        fields: &BTreeSet<&str>,
        limit: usize,
        cursor: Option<&[u8]>,
        keep: &Shown<'_>,
    ) -> Result<TrendingPage, ProjectionError> {
        let now = chrono::Utc::now().timestamp_micros();
        let (mut phase, mut after) = match cursor {
            Some([phase @ (IN_FIELDS | REST), key @ ..]) => (*phase, Some(key.to_vec())),
            _ => (if fields.is_empty() { REST } else { IN_FIELDS }, None),
        };
        let mut entries = Vec::new();
        let mut last: Option<(u8, Vec<u8>)> = None;
        let mut more = false;
        while entries.len() <= limit {
            let (partitions, in_fields): (Vec<String>, bool) = if phase == IN_FIELDS {
                (fields.iter().map(|f| ranking_partition(window, Some(f))).collect(), true)
            } else {
                (vec![ranking_partition(window, None)], false)
            };
            let want = limit + 1 - entries.len();
            let mut take = |key: &[u8], of: &Ranked| -> Result<Step, ProjectionError> {
                let shown = parse_ranking_key(key).is_some() && (in_fields || !of.in_any(fields)) && of.shown;
                Ok(if shown { Step::Take } else { Step::Skip })
            };
            let keys = self.merged(v, &partitions, after.take(), want, keep, &mut take)?;
            let found = keys.len();
            for (key, ranked) in keys {
                if entries.len() == limit {
                    more = true;
                    break;
                }
                let (kept, uri) = parse_ranking_key(&key).expect("a ranking key");
                entries.push(Trending { uri: uri.to_owned(), title: ranked.title, score: window.score(kept, now), in_fields });
                last = Some((phase, key));
            }
            if more || phase == REST {
                break;
            }
            if found < want {
                phase = REST;
            }
        }
        let cursor = more.then(|| last.map(|(p, k)| [vec![p], k].concat())).flatten();
        Ok(TrendingPage { entries, cursor })
    }

    #[allow(clippy::too_many_arguments)]
    fn trending_then(
        &self,
        v: u32,
        window: Window,
        at: i64,
        fields: &BTreeSet<&str>,
        limit: usize,
        cursor: Option<&[u8]>,
        keep: &Shown<'_>,
    ) -> Result<TrendingPage, ProjectionError> {
        let offset = match cursor {
            Some([OFFSET, n @ ..]) => n.try_into().map(u64::from_be_bytes).unwrap_or(0) as usize,
            _ => 0,
        };
        let want = offset + limit + 1;
        // The best `want` of one sequence of partitions as of `at`: (sum then, URI, title).
        let best_of = |partitions: Vec<String>, in_fields: bool| -> Result<Vec<(f64, String, String)>, ProjectionError> {
            let mut best: Vec<(f64, String, String)> = Vec::new();
            let mut take = |key: &[u8], of: &Ranked| -> Result<Step, ProjectionError> {
                let Some((today, uri)) = parse_ranking_key(key) else { return Ok(Step::Skip) };
                // Stop once today's sum cannot beat the last of a full list.
                if best.len() >= want && best.last().is_some_and(|(then, ..)| today <= *then) {
                    return Ok(Step::Stop);
                }
                if !in_fields && of.in_any(fields) || !of.shown {
                    return Ok(Step::Skip);
                }
                let then = self.kept_at(v, uri, window, at)?;
                if then.is_finite() {
                    best.push((then, uri.to_owned(), of.title.clone()));
                    best.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                    best.truncate(want);
                }
                Ok(Step::Skip)
            };
            self.merged(v, &partitions, None, usize::MAX, keep, &mut take)?;
            Ok(best)
        };
        let mut all: Vec<(f64, String, String, bool)> = Vec::new();
        if !fields.is_empty() {
            let partitions = fields.iter().map(|f| ranking_partition(window, Some(f))).collect();
            all.extend(best_of(partitions, true)?.into_iter().map(|(k, u, t)| (k, u, t, true)));
        }
        if all.len() < want {
            all.extend(best_of(vec![ranking_partition(window, None)], false)?.into_iter().map(|(k, u, t)| (k, u, t, false)));
        }
        let more = all.len() > offset + limit;
        let entries = all
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(kept, uri, title, in_fields)| Trending { uri, title, score: window.score(kept, at), in_fields })
            .collect();
        let cursor = more.then(|| [vec![OFFSET], ((offset + limit) as u64).to_be_bytes().to_vec()].concat());
        Ok(TrendingPage { entries, cursor })
    }
}
