//! Reading the activity read model (its active version). A pending activity whose hour has
//! passed reads as `timeout`.

use serde_json::{json, Value as Json};
use store::{Columns, Scan, Store, Value};

use super::{feed_key, id_of, record_key, table, ALL, CATEGORIES, MODEL, TIMEOUT_MICROS};
use crate::ProjectionError;

/// A page of a user's activities, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedPage {
    /// The activities (`#activityView`).
    pub activities: Vec<Json>,
    /// Where the next page starts, if there may be one.
    pub next: Option<Vec<u8>>,
}

/// How the activities of one category (or all) went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Correlation {
    /// The category, or `*` for all.
    pub category: String,
    /// Logged.
    pub logged: u64,
    /// Confirmed by their record's write.
    pub confirmed: u64,
    /// Marked failed.
    pub failed: u64,
    /// Pending past their hour.
    pub timed_out: u64,
    /// Pending within their hour.
    pub pending: u64,
    /// Mean time from the log to the write, over the confirmed ones (ms).
    pub mean_latency_ms: u64,
}

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

fn micros_to_rfc3339(us: i64) -> Json {
    chrono::DateTime::from_timestamp_micros(us).map_or(Json::Null, |t| json!(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
}

/// The `#activityView` of an item, its status as of `now` (µs).
fn view(did: &str, id: u64, c: &Columns, now: i64) -> Json {
    let text = |k: &str| c.get(k).and_then(Value::as_text);
    let initiated = int(c, "initiatedAt");
    let mut status = text("status").unwrap_or_default();
    if status == "pending" && now - initiated > TIMEOUT_MICROS {
        status = "timeout";
    }
    let mut v = json!({
        "id": id.to_string(),
        "actorDid": did,
        "collection": text("collection"),
        "rkey": text("rkey"),
        "action": text("action"),
        "category": text("category"),
        "status": status,
        "initiatedAt": micros_to_rfc3339(initiated),
    });
    for k in ["firehoseUri", "firehoseCid", "targetUri", "targetTitle", "errorCode", "errorMessage"] {
        if let Some(t) = text(k) {
            v[k] = json!(t);
        }
    }
    if let Some(at) = c.get("confirmedAt").and_then(Value::as_int) {
        v["confirmedAt"] = micros_to_rfc3339(at);
        v["latencyMs"] = json!(int(c, "latencyMs"));
    }
    v
}

/// Reads the active version of the activity model.
pub struct ActivityReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> ActivityReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<ActivityReader<'a>, ProjectionError> {
        Ok(ActivityReader { store, version: store.active_version(MODEL)? })
    }

    /// Whether `did` has an activity pending within its hour for the record.
    pub fn is_pending(&self, did: &str, collection: &str, rkey: &str, now: i64) -> Result<bool, ProjectionError> {
        let Some(v) = self.version else { return Ok(false) };
        let Some(open) = self.store.get(&table(v, "open"), &record_key(did, collection, rkey), &[])? else { return Ok(false) };
        let id = int(&open, "id") as u64;
        let item = self.store.get(&table(v, "items"), did, &id.to_be_bytes())?;
        Ok(item.is_some_and(|c| now - int(&c, "initiatedAt") <= TIMEOUT_MICROS))
    }

    /// A page of `did`'s activities, newest first, of one category and one status (as of
    /// `now`, µs) when asked, after `after`.
    pub fn feed(
        &self,
        did: &str,
        category: Option<&str>,
        status: Option<&str>,
        limit: usize,
        after: Option<Vec<u8>>,
        now: i64,
    ) -> Result<FeedPage, ProjectionError> {
        let Some(v) = self.version else { return Ok(FeedPage::default()) };
        // `timeout` and `pending` share the pending listing, split at an hour ago.
        let listed = match status {
            Some("timeout") => Some("pending"),
            other => other,
        };
        let mut partition = did.to_owned();
        if let Some(s) = listed {
            partition.push_str(&format!(" s:{s}"));
        }
        if let Some(c) = category {
            partition.push_str(&format!(" c:{c}"));
        }
        let hour_ago = feed_key(now - TIMEOUT_MICROS, u64::MAX);
        let after = match (status, after) {
            (Some("timeout"), None) => Some(hour_ago.clone()),
            (_, after) => after,
        };
        let mut rows = self.store.scan(&table(v, "feed"), &partition, &Scan { after, limit: limit + 1, reverse: true })?.rows;
        if status == Some("pending") {
            rows.retain(|r| r.clustering > hour_ago);
        }
        let next = crate::rows::cut_page(&mut rows, limit);
        let ids: Vec<u64> = rows.iter().filter_map(|r| id_of(&r.clustering)).collect();
        let items_table = table(v, "items");
        let clusterings: Vec<[u8; 8]> = ids.iter().map(|id| id.to_be_bytes()).collect();
        let keys: Vec<(&store::TableRef, &str, &[u8])> = clusterings.iter().map(|c| (&items_table, did, &c[..])).collect();
        let items = self.store.get_each(&keys)?;
        let activities = ids.iter().zip(items).filter_map(|(id, item)| item.map(|c| view(did, *id, &c, now))).collect();
        Ok(FeedPage { activities, next })
    }

    /// How the activities went, in all and per category, as of `now` (µs); the pending ones
    /// within their hour, in all.
    pub fn correlation(&self, now: i64) -> Result<(Vec<Correlation>, u64), ProjectionError> {
        let Some(v) = self.version else { return Ok((Vec::new(), 0)) };
        let hour_ago = feed_key(now - TIMEOUT_MICROS, u64::MAX);
        let mut out = Vec::new();
        let mut live_all = 0;
        for category in std::iter::once(ALL).chain(CATEGORIES) {
            let stats = self.store.get(&table(v, "stats"), category, &[])?.unwrap_or_default();
            let logged = int(&stats, "logged").max(0) as u64;
            if logged == 0 && category != ALL {
                continue;
            }
            let pending_all = self.store.count(&table(v, "pending"), category)?;
            // The pending ones of the last hour: a scan of those alone, newest first.
            let mut live = 0;
            let mut after = None;
            loop {
                let page = self.store.scan(&table(v, "pending"), category, &Scan { after, limit: 500, reverse: true })?;
                let fresh = page.rows.iter().take_while(|r| r.clustering > hour_ago).count();
                live += fresh as u64;
                if fresh < page.rows.len() || page.next.is_none() {
                    break;
                }
                after = page.next;
            }
            if category == ALL {
                live_all = live;
            }
            let confirmed = int(&stats, "confirmed").max(0) as u64;
            out.push(Correlation {
                category: category.to_owned(),
                logged,
                confirmed,
                failed: int(&stats, "failed").max(0) as u64,
                timed_out: pending_all.saturating_sub(live),
                pending: live,
                mean_latency_ms: (int(&stats, "latencyMs").max(0) as u64).checked_div(confirmed).unwrap_or(0),
            });
        }
        Ok((out, live_all))
    }
}
