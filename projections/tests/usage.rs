//! The usage model against the embedded store: COUNTER's rules (robots, double clicks,
//! totals apart from distinct viewers), counts and trending as of any time, fields first,
//! deletions, and a rebuild that gives the same answers. Events are given their log times
//! here, so the rules' clocks are the test's.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use event_schema::{Envelope, NewEvent, Payload, Position, RecordDelete, RecordWrite, Source, UsageAction, UsageEvent};
use projections::catalog::{self, Context, Mode};
use projections::usage::read::{Trending, UsageReader};
use projections::usage::{Window, MODEL};
use projections::{EventBatch, Projection};
use serde_json::json;
use store::{EmbeddedStore, Store};

const ALICE: &str = "did:plc:alice000000000000000000";
const T0: i64 = 1_780_000_000_000_000;
const SECOND: i64 = 1_000_000;
const DAY: i64 = 86_400 * SECOND;

fn uri(rkey: &str) -> String {
    format!("at://{ALICE}/pub.svc.eprint.submission/{rkey}")
}

/// A pseudonym as the API makes them (32 hex digits), one per viewer name.
fn viewer(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(name.as_bytes());
    h[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The usage model and the eprints model it reads an eprint from on its first use, live,
/// on an embedded store of their own (in the directory returned).
struct Models {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    ctx: Context,
    eprints: Box<dyn Projection>,
    usage: Box<dyn Projection>,
}

impl Models {
    fn live() -> Models {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
        let ctx = Context::single(store.clone(), &dir.path().join("search"));
        let open = |model: &str| catalog::open(&ctx, model, catalog::ensure_active(&ctx, model).unwrap(), Mode::Live).unwrap();
        let (eprints, usage) = (open(projections::eprints::MODEL), open(MODEL));
        Models { _dir: dir, store, ctx, eprints, usage }
    }

    /// Both models, the eprints model first, as a projector's worker applies a batch.
    fn both(&mut self) -> [&mut dyn Projection; 2] {
        [self.eprints.as_mut(), self.usage.as_mut()]
    }
}

#[derive(Default)]
struct Log {
    events: Vec<Envelope>,
}

impl Log {
    fn push(&mut self, at: i64, event: NewEvent) {
        let offset = self.events.len() as u64;
        self.events.push(Envelope {
            position: Position { partition: 0, offset },
            key: event.key,
            kind: event.payload.kind().as_str().into(),
            schema_version: 1,
            appended_at: DateTime::<Utc>::from_timestamp_micros(at).unwrap(),
            source: event.source,
            payload: event.payload,
        });
    }

    fn paper(&mut self, at: i64, rkey: &str, fields: &[&str]) {
        let record = json!({"title": rkey, "abstract": "a", "authors": [{"name": "A", "did": ALICE, "order": 1}], "fields": fields, "createdAt": "2026-01-01T00:00:00Z"});
        let w = RecordWrite {
            did: ALICE.into(),
            collection: "pub.svc.eprint.submission".into(),
            rkey: rkey.into(),
            cid: "bafy".into(),
            rev: format!("3l{at}"),
            record,
        };
        self.push(at, NewEvent::repo(src(), Payload::RecordCreate(w)));
    }

    fn delete(&mut self, at: i64, rkey: &str) {
        let d =
            RecordDelete { did: ALICE.into(), collection: "pub.svc.eprint.submission".into(), rkey: rkey.into(), rev: format!("3l{at}") };
        self.push(at, NewEvent::repo(src(), Payload::RecordDelete(d)));
    }

    fn used(&mut self, at: i64, rkey: &str, who: &str, action: UsageAction) {
        self.push(at, usage(rkey, who, false, action));
    }

    fn view(&mut self, at: i64, rkey: &str, who: &str) {
        self.used(at, rkey, who, UsageAction::View { source: None });
    }

    /// Applies every event from `from` to each of `models` in turn, in batches of 7.
    fn apply(&self, models: &mut [&mut dyn Projection], from: usize) {
        self.apply_in(models, from, 7);
    }

    /// Applies every event from `from` to each of `models` in turn, in batches of `size`.
    fn apply_in(&self, models: &mut [&mut dyn Projection], from: usize, size: usize) {
        for chunk in self.events[from..].chunks(size) {
            let last = chunk.last().unwrap().position.offset;
            let next: BTreeMap<u32, u64> = [(0, last + 1)].into();
            for p in models.iter_mut() {
                p.apply_batch(&EventBatch::new(chunk.to_vec(), next.clone())).unwrap();
            }
        }
        for p in models.iter_mut() {
            p.flush().unwrap();
        }
    }
}

fn src() -> Source {
    Source::Manual { note: "usage test".into() }
}

fn usage(rkey: &str, who: &str, robot: bool, action: UsageAction) -> NewEvent {
    let payload = Payload::Usage(UsageEvent { viewer: viewer(who), robot, uri: uri(rkey), action, at: None });
    NewEvent { key: uri(rkey), source: src(), payload }
}

/// Every eprint may be shown.
fn every(uris: &[&str]) -> Result<Vec<bool>, projections::ProjectionError> {
    Ok(vec![true; uris.len()])
}

fn ranked(page: &[Trending]) -> Vec<(String, bool)> {
    page.iter().map(|t| (t.uri.rsplit('/').next().unwrap().to_owned(), t.in_fields)).collect()
}

#[test]
fn uses_are_counted_by_counters_rules_as_of_any_time_and_a_rebuild_answers_the_same() {
    let mut m = Models::live();
    let (store, ctx) = (m.store.clone(), m.ctx.clone());
    let ctx = &ctx;
    let mut log = Log::default();

    log.paper(T0 - 10 * DAY, "p1", &["cs.LG"]);
    log.paper(T0 - 10 * DAY, "p2", &["math.CO"]);
    log.paper(T0 - 10 * DAY, "p3", &["cs.LG"]);
    // Two days ago, five readers of p2.
    for who in ["v1", "v2", "v3", "v4", "v5"] {
        log.view(T0 - 2 * DAY, "p2", who);
    }
    // Ana clicks p1 at 0, 10 and 35 s, each within 30 s of the one before (one click), and
    // again at 70 s; Ben once; a robot once. (Log times only grow, as a log's do.)
    log.view(T0, "p1", "ana");
    log.view(T0 + SECOND, "p1", "ben");
    log.push(T0 + 2 * SECOND, usage("p1", "crawler", true, UsageAction::View { source: None }));
    // A download, and the same viewer's download from a search's list 1 s later: one.
    log.used(T0 + 5 * SECOND, "p1", "ana", UsageAction::Download { format: Some("pdf".into()) });
    log.used(T0 + 6 * SECOND, "p1", "ana", UsageAction::SearchDownload { impression_id: "i1".into() });
    log.used(T0 + 7 * SECOND, "p1", "ana", UsageAction::SearchClick { impression_id: Some("i1".into()), query: None, position: 0 });
    log.used(T0 + 8 * SECOND, "p1", "ana", UsageAction::DwellTime { impression_id: None, duration_ms: 4_000 });
    log.used(T0 + 9 * SECOND, "p1", "ben", UsageAction::DwellTime { impression_id: None, duration_ms: 2_000 });
    log.view(T0 + 10 * SECOND, "p1", "ana");
    log.view(T0 + 35 * SECOND, "p1", "ana");
    log.view(T0 + 50 * SECOND, "p3", "ana");
    log.view(T0 + 70 * SECOND, "p1", "ana");
    log.apply(&mut m.both(), 0);

    let now = T0 + 100 * SECOND;
    let answers = |store: &dyn Store| {
        let r = UsageReader::new(store).unwrap();
        let p1 = r.usage(&uri("p1"), now).unwrap();
        let early = r.usage(&uri("p1"), T0 + 2 * SECOND).unwrap();
        let p2 = r.usage(&uri("p2"), now).unwrap();
        let trending = |w: Window, at: Option<i64>, fields: &[&str]| {
            let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
            ranked(&r.trending(w, at, &fields, 10, None, &every).unwrap().entries)
        };
        (
            format!("{p1:?} {early:?} {p2:?}"),
            vec![
                trending(Window::Day, Some(now), &[]),
                trending(Window::Month, Some(now), &[]),
                trending(Window::Day, Some(now), &["math.CO"]),
                trending(Window::Day, Some(T0 - DAY), &[]),
                trending(Window::Day, Some(T0 + SECOND / 2), &[]),
                trending(Window::Day, Some(T0 - 3 * DAY), &[]),
            ],
        )
    };

    let r = UsageReader::new(store.as_ref()).unwrap();
    let p1 = r.usage(&uri("p1"), now).unwrap();
    assert_eq!((p1.views, p1.downloads, p1.unique_views), (3, 1, 2), "{p1:?}");
    assert_eq!((p1.robots, p1.double_clicks, p1.search_clicks, p1.mean_dwell_ms), (1, 3, 1, 3_000), "{p1:?}");
    assert_eq!((p1.views_in, p1.downloads_in, p1.unique_in), ([3, 3, 3], [1, 1, 1], [2, 2, 2]));
    assert_eq!(p1.daily_views, vec![(projections::usage::day_of(T0), 3)]);
    assert_eq!(r.totals(&uri("p1")).unwrap().views, 3);
    // As of T0 + 2 s: Ana's first click and Ben's.
    let early = r.usage(&uri("p1"), T0 + 2 * SECOND).unwrap();
    assert_eq!((early.views, early.downloads, early.views_in[0]), (2, 0, 2));
    let p2 = r.usage(&uri("p2"), now).unwrap();
    assert_eq!((p2.views, p2.unique_views, p2.views_in, p2.unique_in), (5, 5, [0, 5, 5], [0, 5, 5]), "{p2:?}");

    // Time series: the eprint's hour, the site's days (p1's four uses and p3's view at T0;
    // p2's five two days before), empty buckets included.
    use projections::usage::read::{Bucket, Granularity};
    let hour = T0 - T0.rem_euclid(3_600_000_000);
    assert_eq!(r.series(Some(&uri("p1")), Granularity::Hour, T0, T0).unwrap(), vec![Bucket { start: hour, views: 3, downloads: 1 }]);
    let day = |d: i64| (T0.div_euclid(DAY) + d) * DAY;
    let site: Vec<(i64, u64, u64)> =
        r.series(None, Granularity::Day, T0 - 2 * DAY, now).unwrap().iter().map(|b| (b.start, b.views, b.downloads)).collect();
    assert_eq!(site, vec![(day(-2), 5, 0), (day(-1), 0, 0), (day(0), 4, 1)]);
    // Velocity: p1's four uses in the last 24 h against none the day before; p2's five in
    // the last week against none before.
    let v = r.velocity(&uri("p1"), Window::Day, now).unwrap();
    assert_eq!((v.views, v.downloads, v.previous, v.velocity), (3, 1, 0, 4.0));
    assert_eq!(r.velocity(&uri("p2"), Window::Week, now).unwrap().velocity, 5.0);
    assert_eq!(r.velocity(&uri("p2"), Window::Week, now + 7 * DAY).unwrap().velocity, -1.0);

    let (_, lists) = answers(store.as_ref());
    let names = |v: &[(&str, bool)]| v.iter().map(|(n, f)| (n.to_string(), *f)).collect::<Vec<_>>();
    // 24 h: p1 (four uses just now) > p3 (one) > p2 (five, two days ago: 5/e² ≈ 0.68).
    assert_eq!(lists[0], names(&[("p1", false), ("p3", false), ("p2", false)]));
    // 30 days: p2's five outweigh p1's four.
    assert_eq!(lists[1], names(&[("p2", false), ("p1", false), ("p3", false)]));
    assert_eq!(lists[2], names(&[("p2", true), ("p1", false), ("p3", false)]));
    // As of a day before T0, only p2 was used; as of T0 + 0.5 s, Ana's first click on p1
    // outweighs p2's older five; before anything, nothing.
    assert_eq!(lists[3], names(&[("p2", false)]));
    assert_eq!(lists[4], names(&[("p1", false), ("p2", false)]));
    assert!(lists[5].is_empty());
    // The ranking now (kept, not recomputed) gives the same order as the history at now.
    let kept_now = r.trending(Window::Day, None, &[], 10, None, &every).unwrap().entries;
    assert_eq!(ranked(&kept_now), lists[0]);
    assert_eq!(kept_now.iter().map(|t| t.title.as_str()).collect::<Vec<_>>(), ["p1", "p3", "p2"]);
    // Pages: one entry at a time, then the cursor ends.
    let first = r.trending(Window::Month, None, &["cs.LG".into()], 1, None, &every).unwrap();
    assert_eq!(ranked(&first.entries), names(&[("p1", true)]));
    let second = r.trending(Window::Month, None, &["cs.LG".into()], 1, first.cursor.as_deref(), &every).unwrap();
    assert_eq!(ranked(&second.entries), names(&[("p3", true)]));
    let third = r.trending(Window::Month, None, &["cs.LG".into()], 5, second.cursor.as_deref(), &every).unwrap();
    assert_eq!((ranked(&third.entries), third.cursor), (names(&[("p2", false)]), None));
    // What the caller does not show does not take a place.
    let shown =
        r.trending(Window::Day, None, &[], 2, None, &|uris: &[&str]| Ok(uris.iter().map(|u| !u.ends_with("/p1")).collect())).unwrap();
    assert_eq!(ranked(&shown.entries), names(&[("p3", false), ("p2", false)]));
    // Scores are the decayed sums: p2's five views two days old, for 24 h.
    let p2_score = r.trending(Window::Day, Some(T0), &["math.CO".into()], 1, None, &every).unwrap().entries[0].score;
    assert!((p2_score - 5.0 * (-2.0f64).exp()).abs() < 1e-9, "{p2_score}");

    // A rebuild from the log gives the same answers, the log in one batch (each eprint's
    // rows written once, its rankings moved once) as in batches of 7.
    let before = answers(store.as_ref());
    let v2 = store.create_version(MODEL).unwrap();
    let mut rebuilt = catalog::open(ctx, MODEL, v2, Mode::Rebuild).unwrap();
    log.apply_in(&mut [rebuilt.as_mut()], 0, log.events.len());
    store.set_active_version(MODEL, v2).unwrap();
    assert_eq!(answers(store.as_ref()), before);

    // A deleted eprint leaves the rankings; its counts stay in its history.
    let from = log.events.len();
    log.delete(now, "p3");
    log.apply(&mut [m.eprints.as_mut(), rebuilt.as_mut()], from);
    let r = UsageReader::new(store.as_ref()).unwrap();
    assert_eq!(ranked(&r.trending(Window::Day, None, &[], 10, None, &every).unwrap().entries), names(&[("p1", false), ("p2", false)]));
}

#[test]
fn ten_thousand_views_from_one_viewer_count_by_the_double_click_rule() {
    let mut m = Models::live();
    let store = m.store.clone();
    let mut log = Log::default();
    log.paper(T0 - DAY, "p1", &["cs.LG"]);
    log.paper(T0 - DAY, "p2", &["cs.LG"]);
    // Every 10 s on p1: one run of clicks. Every 31 s on p2: each one counts.
    for i in 0..10_000 {
        log.view(T0 + i * 10 * SECOND, "p1", "hostile");
        log.view(T0 + i * 31 * SECOND, "p2", "patient");
    }
    log.apply(&mut m.both(), 0);
    let r = UsageReader::new(store.as_ref()).unwrap();
    let end = T0 + 400 * DAY;
    let (p1, p2) = (r.usage(&uri("p1"), end).unwrap(), r.usage(&uri("p2"), end).unwrap());
    assert_eq!((p1.views, p1.double_clicks, p1.unique_views), (1, 9_999, 1));
    assert_eq!((p2.views, p2.double_clicks, p2.unique_views), (10_000, 0, 1));
}

#[test]
fn a_projector_that_takes_back_a_partition_another_applied_meanwhile_reads_its_rows_again() {
    // Two projectors of one model version, as two `svc project` of a group: `a` applies the
    // first batch of the partition, `b` (which took it over) the second, `a` the third. What
    // `a` kept of p1 after its first batch is stale by then: the third batch must read the
    // rows `b` wrote, or Ana's view at 45 s would count (45 s after her first, but 25 s
    // after the one `b` applied).
    let mut m = Models::live();
    let (store, ctx) = (m.store.clone(), m.ctx.clone());
    let version = store.active_version(MODEL).unwrap().unwrap();
    let mut b = catalog::open(&ctx, MODEL, version, Mode::Live).unwrap();
    let mut log = Log::default();
    log.paper(T0 - DAY, "p1", &["cs.LG"]);
    log.view(T0, "p1", "ana");
    log.apply_in(&mut m.both(), 0, log.events.len());
    let second = log.events.len();
    log.view(T0 + 20 * SECOND, "p1", "ana");
    log.view(T0 + 21 * SECOND, "p1", "ben");
    log.apply_in(&mut [m.eprints.as_mut(), b.as_mut()], second, 2);
    let third = log.events.len();
    log.view(T0 + 45 * SECOND, "p1", "ana");
    log.view(T0 + 46 * SECOND, "p1", "cy");
    log.apply_in(&mut m.both(), third, 2);
    let p1 = UsageReader::new(store.as_ref()).unwrap().usage(&uri("p1"), T0 + DAY / 2).unwrap();
    assert_eq!((p1.views, p1.double_clicks, p1.unique_views), (3, 2, 3), "{p1:?}");
    assert_eq!(p1.daily_views, vec![(projections::usage::day_of(T0), 3)]);
}

#[test]
fn a_projector_reads_an_eprints_row_again_once_another_applied_a_change_to_it_from_another_partition() {
    // `a` applies p1's record and a view of it in partition 0, and keeps p1's row; `b`, a
    // second projector of the version, applies p1's deletion, which came in partition 1 (a
    // repository's records and an eprint's uses are keyed apart); `a` then applies another
    // view in partition 0. It must read the row `b` wrote: the row it kept says p1 is live,
    // and written back it would put a deleted eprint in trending again.
    let mut m = Models::live();
    let (store, ctx) = (m.store.clone(), m.ctx.clone());
    let version = store.active_version(MODEL).unwrap().unwrap();
    let mut b = catalog::open(&ctx, MODEL, version, Mode::Live).unwrap();
    let mut log = Log::default();
    log.paper(T0 - DAY, "p1", &["cs.LG"]);
    log.view(T0, "p1", "ana");
    log.apply_in(&mut m.both(), 0, log.events.len());
    let mut deletion = Log::default();
    deletion.delete(T0 + SECOND, "p1");
    let mut deleted = deletion.events.pop().unwrap();
    deleted.position = Position { partition: 1, offset: 0 };
    let in_partition_1 = EventBatch::new(vec![deleted], [(1, 1)].into());
    for p in [m.eprints.as_mut(), b.as_mut()] {
        p.apply_batch(&in_partition_1).unwrap();
        p.flush().unwrap();
    }
    let third = log.events.len();
    log.view(T0 + 60 * SECOND, "p1", "ben");
    log.apply_in(&mut [m.usage.as_mut()], third, 1);
    let r = UsageReader::new(store.as_ref()).unwrap();
    let page = r.trending(Window::Day, Some(T0 + 120 * SECOND), &[], 10, None, &every).unwrap();
    assert!(page.entries.is_empty(), "a deleted eprint is trending: {:?}", ranked(&page.entries));
}

#[test]
fn counts_as_of_any_instant_are_exact_when_a_minute_holds_many_history_rows() {
    let mut m = Models::live();
    let store = m.store.clone();
    let mut log = Log::default();
    log.paper(T0 - DAY, "p5", &["cs.LG"]);
    // Twelve counted views in one minute, each applied in a batch of its own: twelve
    // history rows in the minute, more than one page of a point's lookup.
    let minute = 60 * SECOND;
    let start = T0 - T0.rem_euclid(minute) + minute;
    for i in 0..12 {
        log.view(start + i * 5 * SECOND, "p5", &format!("reader{i}"));
    }
    log.apply_in(&mut m.both(), 0, 1);
    let r = UsageReader::new(store.as_ref()).unwrap();
    let views_by = |at: i64| (0..12).filter(|i| start + i * 5 * SECOND <= at).count() as u64;
    for at in [start - 1, start, start + 1, start + 4 * SECOND, start + 30 * SECOND, start + 55 * SECOND - 1, start + 55 * SECOND] {
        // As of the instant itself, and as of a day later (the 24 h window then starts there).
        assert_eq!(r.usage(&uri("p5"), at).unwrap().views, views_by(at), "views as of {at}");
        let later = r.usage(&uri("p5"), at + DAY).unwrap();
        assert_eq!(later.views_in[0], 12 - views_by(at), "views in the 24 h up to {}", at + DAY);
    }
}

#[test]
fn distinct_viewers_over_days_read_from_the_days_kept_match_the_days_merged() {
    let mut m = Models::live();
    let (store, ctx) = (m.store.clone(), m.ctx.clone());
    let ctx = &ctx;
    let mut log = Log::default();
    log.paper(T0 - 40 * DAY, "p4", &["cs.LG"]);
    // Readers on four days; each day's two overlap the next day's by one, and one more
    // day, 40 days back, is outside every window.
    let days = [(-40, ["z", "a"]), (-20, ["a", "b"]), (-5, ["b", "c"]), (-1, ["c", "d"]), (0, ["d", "e"])];
    for (day, readers) in days {
        for (i, who) in readers.iter().enumerate() {
            log.view(T0 + day * DAY + i as i64 * SECOND, "p4", who);
        }
    }
    let last = T0 + SECOND;
    log.apply(&mut m.both(), 0);
    // And the same log in one batch, into a second version.
    let v2 = store.create_version(MODEL).unwrap();
    let mut one_batch = catalog::open(ctx, MODEL, v2, Mode::Rebuild).unwrap();
    log.apply_in(&mut [one_batch.as_mut()], 0, log.events.len());

    let read = |at: i64| UsageReader::new(store.as_ref()).unwrap().usage(&uri("p4"), at).unwrap();
    let d = |n: i64| projections::usage::day_of(T0) + n;
    // As of the last use: what the projection keeps of the days before today, with today's row.
    let kept = read(last);
    assert_eq!((kept.views, kept.unique_views, kept.unique_in), (10, 6, [2, 4, 5]), "{kept:?}");
    assert_eq!(kept.daily_views, vec![(d(-20), 2), (d(-5), 2), (d(-1), 2), (d(0), 2)]);
    // A µs before it: the days merged from their rows (today's sketch whole, its views up to then).
    let merged = read(last - 1);
    assert_eq!((merged.views, merged.unique_in), (9, [2, 4, 5]), "{merged:?}");
    assert_eq!(merged.daily_views, vec![(d(-20), 2), (d(-5), 2), (d(-1), 2), (d(0), 1)]);
    // A day later, nothing used since: merged too; every viewer of all time still counted
    // (the days before the newest, and the newest's).
    assert_eq!((read(last + DAY).unique_in, read(last + DAY).unique_views), ([0, 4, 5], 6));
    store.set_active_version(MODEL, v2).unwrap();
    assert_eq!(read(last), kept);
    assert_eq!(read(last - 1), merged);
}

#[test]
fn a_click_applied_before_its_impression_still_counts_it_clicked() {
    let mut m = Models::live();
    let store = m.store.clone();
    let mut log = Log::default();
    let shown = |id: &str, query: &str, hits: u64| NewEvent {
        key: id.into(),
        source: src(),
        payload: Payload::Search(event_schema::SearchImpression {
            impression_id: id.into(),
            viewer: String::new(),
            query: query.into(),
            hits,
        }),
    };
    log.paper(T0, "p1", &["cs.LG"]);
    // Keyed apart, a click may come first: impression i1 clicked at its second result.
    log.used(T0 + SECOND, "p1", "ana", UsageAction::SearchClick { impression_id: Some("i1".into()), query: None, position: 1 });
    log.push(T0 + 2 * SECOND, shown("i1", "sparse", 4));
    // i2 clicked at its first, after it was shown; i3 found nothing, like i4 (same words).
    log.push(T0 + 3 * SECOND, shown("i2", "sparse models", 9));
    log.used(T0 + 4 * SECOND, "p1", "ben", UsageAction::SearchClick { impression_id: Some("i2".into()), query: None, position: 0 });
    log.push(T0 + 5 * SECOND, shown("i3", "Quantum  gravity", 0));
    log.push(T0 + 6 * SECOND, shown("i4", "quantum gravity", 0));
    log.push(T0 + 7 * SECOND, shown("i5", "dark matter", 0));
    log.apply(&mut m.both(), 0);
    let s = UsageReader::new(store.as_ref()).unwrap().searches(10).unwrap();
    assert_eq!((s.impressions, s.clicks, s.clicked_impressions, s.zero_results), (5, 2, 2, 3));
    assert!((s.mean_reciprocal_rank - 0.75).abs() < 1e-9, "{s:?}");
    assert_eq!(s.zero_queries, vec![("quantum gravity".to_owned(), 2), ("dark matter".to_owned(), 1)]);
}

#[test]
fn an_eprint_costs_the_model_a_row_from_its_first_use_read_from_the_eprints_model() {
    let mut m = Models::live();
    let mut log = Log::default();
    log.paper(T0, "p1", &["cs.LG"]);
    log.paper(T0, "p2", &["math.CO"]);
    log.apply(&mut m.both(), 0);
    let version = m.store.active_version(MODEL).unwrap().unwrap();
    let papers = store::TableRef::new(MODEL, version, "papers");
    let store = m.store.clone();
    let row = |uri: &str| store.get(&papers, uri, &[]).unwrap();
    assert!(row(&uri("p1")).is_none() && row(&uri("p2")).is_none(), "no row for an eprint never used");

    // The usage model ahead of the eprints model: its first use of p3 waits for the
    // eprints model to apply it, then reads the title and fields it wrote.
    let from = log.events.len();
    log.paper(T0 + SECOND, "p3", &["cs.LG"]);
    log.view(T0 + 2 * SECOND, "p3", "ana");
    log.view(T0 + 2 * SECOND, "p3", "ben");
    log.view(T0 + 2 * SECOND, "p1", "ana");
    let Models { eprints, usage, .. } = &mut m;
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            log.apply(&mut [eprints.as_mut()], from);
        });
        log.apply(&mut [usage.as_mut()], from);
    });
    assert!(row(&uri("p2")).is_none());
    let r = UsageReader::new(m.store.as_ref()).unwrap();
    let page = r.trending(Window::Day, None, &["cs.LG".into()], 10, None, &every).unwrap().entries;
    let titles: Vec<(&str, bool)> = page.iter().map(|t| (t.title.as_str(), t.in_fields)).collect();
    assert_eq!(titles, [("p3", true), ("p1", true)]);

    // A later revision already in the eprints model when p2 is first used (a replay of the
    // usage model alone): the usage model starts from it, and the revision before is stale.
    let from = log.events.len();
    let renamed = json!({"title": "p2 renamed", "abstract": "a", "authors": [{"name": "A", "did": ALICE, "order": 1}], "fields": ["hep-th"], "createdAt": "2026-01-01T00:00:00Z"});
    log.view(T0 + 3 * SECOND, "p2", "ben");
    let write = RecordWrite {
        did: ALICE.into(),
        collection: "pub.svc.eprint.submission".into(),
        rkey: "p2".into(),
        cid: "bafy2".into(),
        rev: format!("3l{}", T0 + 4 * SECOND),
        record: renamed,
    };
    log.push(T0 + 4 * SECOND, NewEvent::repo(src(), Payload::RecordUpdate(write)));
    log.apply(&mut [m.eprints.as_mut()], from);
    log.apply(&mut [m.usage.as_mut()], from);
    let r = UsageReader::new(m.store.as_ref()).unwrap();
    let page = r.trending(Window::Day, None, &["hep-th".into()], 1, None, &every).unwrap().entries;
    assert_eq!((page[0].title.as_str(), page[0].in_fields), ("p2 renamed", true));
    assert_eq!(r.usage(&uri("p2"), T0 + 5 * SECOND).unwrap().views, 1);
}
