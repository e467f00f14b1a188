//! The activity model with the log's times given: an activity still pending an hour after it
//! was logged reads as `timeout`, a write arriving after that hour does not confirm it, the
//! counts say so, a deleted account's activities leave, and a rebuild answers the same.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use event_schema::{
    AccountChange, AccountStatus, Envelope, LoggedActivity, NewEvent, Payload, Position, RecordWrite, Source, UserAction, UserCommand,
};
use projections::activity::read::ActivityReader;
use projections::activity::MODEL;
use projections::catalog::{self, Context, Mode};
use projections::{EventBatch, Projection};
use serde_json::json;
use store::{EmbeddedStore, Store};

const ALICE: &str = "did:plc:alice000000000000000000";
const T0: i64 = 1_780_000_000_000_000;
const MINUTE: i64 = 60_000_000;

fn src() -> Source {
    Source::Manual { note: "activity test".into() }
}

fn envelope(offset: u64, at: i64, event: NewEvent) -> Envelope {
    Envelope {
        position: Position { partition: 0, offset },
        key: event.key,
        kind: event.payload.kind().as_str().into(),
        schema_version: 1,
        appended_at: DateTime::<Utc>::from_timestamp_micros(at).unwrap(),
        source: event.source,
        payload: event.payload,
    }
}

fn logged(rkey: &str) -> NewEvent {
    let action = UserAction::ActivityLogged(Box::new(LoggedActivity {
        collection: "pub.svc.review.comment".into(),
        rkey: rkey.into(),
        write: "create".into(),
        category: "review_create".into(),
        target_uri: None,
        target_title: None,
        trace_id: None,
        span_id: None,
        ui_context: None,
    }));
    NewEvent { key: ALICE.into(), source: src(), payload: Payload::User(UserCommand { caller: ALICE.into(), action }) }
}

fn written(rkey: &str) -> NewEvent {
    let record = json!({"eprintUri": "at://did:plc:x/pub.svc.eprint.submission/p", "body": [], "createdAt": "2026-01-01T00:00:00Z"});
    let w = RecordWrite {
        did: ALICE.into(),
        collection: "pub.svc.review.comment".into(),
        rkey: rkey.into(),
        cid: "bafy".into(),
        rev: "3l".into(),
        record,
    };
    NewEvent::repo(src(), Payload::RecordCreate(w))
}

fn apply(p: &mut dyn Projection, events: &[(i64, NewEvent)], from: u64) {
    let envelopes: Vec<Envelope> = events.iter().enumerate().map(|(i, (at, e))| envelope(from + i as u64, *at, e.clone())).collect();
    let next: BTreeMap<u32, u64> = [(0, from + events.len() as u64)].into();
    p.apply_batch(&EventBatch::new(envelopes, next)).unwrap();
    p.flush().unwrap();
}

#[test]
fn an_activity_times_out_after_its_hour_and_a_late_write_does_not_confirm_it() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    let version = catalog::ensure_active(&ctx, MODEL).unwrap();
    let mut p = catalog::open(&ctx, MODEL, version, Mode::Live).unwrap();
    let events = vec![
        (T0, logged("quick")),
        (T0 + MINUTE, logged("slow")),
        (T0 + 2 * MINUTE, written("quick")),
        (T0 + 3 * MINUTE, logged("never")),
        // Seventy minutes after it was logged: too late.
        (T0 + 71 * MINUTE, written("slow")),
    ];
    apply(p.as_mut(), &events, 0);
    let statuses = |store: &dyn Store, now: i64| {
        let page = ActivityReader::new(store).unwrap().feed(ALICE, None, None, 10, None, now).unwrap();
        page.activities
            .iter()
            .map(|a| (a["rkey"].as_str().unwrap().to_owned(), a["status"].as_str().unwrap().to_owned()))
            .collect::<Vec<_>>()
    };
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    // Half an hour in: one confirmed, two pending.
    assert_eq!(statuses(store.as_ref(), T0 + 30 * MINUTE), pairs(&[("never", "pending"), ("slow", "pending"), ("quick", "confirmed")]));
    // Two hours in: the two pending ones timed out; the late write confirmed nothing.
    let later = T0 + 120 * MINUTE;
    assert_eq!(statuses(store.as_ref(), later), pairs(&[("never", "timeout"), ("slow", "timeout"), ("quick", "confirmed")]));
    let r = ActivityReader::new(store.as_ref()).unwrap();
    assert_eq!(r.feed(ALICE, None, Some("timeout"), 10, None, later).unwrap().activities.len(), 2);
    assert_eq!(r.feed(ALICE, None, Some("pending"), 10, None, later).unwrap().activities.len(), 0);
    let quick = &r.feed(ALICE, None, Some("confirmed"), 10, None, later).unwrap().activities[0];
    assert_eq!(quick["latencyMs"], json!(120_000));
    let (rows, pending) = r.correlation(later).unwrap();
    let all = &rows[0];
    assert_eq!(
        (all.logged, all.confirmed, all.failed, all.timed_out, all.pending, all.mean_latency_ms, pending),
        (3, 1, 0, 2, 0, 120_000, 0)
    );
    let (rows, pending) = r.correlation(T0 + 30 * MINUTE).unwrap();
    assert_eq!((rows[0].timed_out, rows[0].pending, pending), (0, 2, 2));

    // A rebuild gives the same; a deleted account's activities leave it.
    let before = statuses(store.as_ref(), later);
    let v2 = store.create_version(MODEL).unwrap();
    let mut rebuilt = catalog::open(&ctx, MODEL, v2, Mode::Rebuild).unwrap();
    apply(rebuilt.as_mut(), &events, 0);
    store.set_active_version(MODEL, v2).unwrap();
    assert_eq!(statuses(store.as_ref(), later), before);
    let gone =
        NewEvent::repo(src(), Payload::Account(AccountChange { did: ALICE.into(), active: false, status: Some(AccountStatus::Deleted) }));
    apply(rebuilt.as_mut(), &[(later, gone)], events.len() as u64);
    assert!(statuses(store.as_ref(), later).is_empty());
}
