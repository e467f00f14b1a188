//! Author profiles and per-account settings (discovery preferences, profile page
//! configuration): one each per account, record key `self`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Normalized, Record};

pub(super) fn profile(rec: &Record) -> Result<Normalized, String> {
    self_record(rec, "profile", &["$type", "schemaRevision"])
}

/// A settings record: its fields as written (the `$type` dropped); listed nowhere, read by
/// its URI.
pub(super) fn settings(rec: &Record) -> Result<Normalized, String> {
    self_record(rec, "settings record", &["$type"])
}

/// A record keyed `self` (one per account), its fields as written without `drop`. It has
/// no createdAt of its own: it lists nowhere but its repository.
fn self_record(rec: &Record, what: &str, drop: &[&str]) -> Result<Normalized, String> {
    if rec.rkey != "self" {
        return Err(format!("a {what}'s record key must be self, not {}", rec.rkey));
    }
    let mut view = rec.value.clone();
    if let Value::Object(m) = &mut view {
        for field in drop {
            m.remove(*field);
        }
    }
    Ok(Normalized { view, created_at: DateTime::<Utc>::UNIX_EPOCH, lists: Vec::new(), sets: Vec::new() })
}
