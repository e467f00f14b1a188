//! Author profiles and per-account settings (discovery preferences, profile page
//! configuration): one each per account, record key `self`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Normalized, Record};

pub(super) fn profile(rec: &Record) -> Result<Normalized, String> {
    let (rkey, r) = (rec.rkey, rec.value);
    if rkey != "self" {
        return Err(format!("a profile's record key must be self, not {rkey}"));
    }
    let mut view = r.clone();
    if let Value::Object(m) = &mut view {
        m.remove("$type");
        m.remove("schemaRevision");
    }
    // A profile has no createdAt of its own: it lists nowhere but its repository.
    Ok(Normalized { view, created_at: DateTime::<Utc>::UNIX_EPOCH, lists: Vec::new(), sets: Vec::new() })
}

/// A settings record: its fields as written (the `$type` dropped); listed nowhere, read by
/// its URI.
pub(super) fn settings(rec: &Record) -> Result<Normalized, String> {
    let (rkey, r) = (rec.rkey, rec.value);
    if rkey != "self" {
        return Err(format!("a settings record's key must be self, not {rkey}"));
    }
    let mut view = r.clone();
    if let Value::Object(m) = &mut view {
        m.remove("$type");
    }
    Ok(Normalized { view, created_at: DateTime::<Utc>::UNIX_EPOCH, lists: Vec::new(), sets: Vec::new() })
}
