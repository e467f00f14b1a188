//! What the namespaces over the attached read model share: reading it off the request's
//! task, cursors of its listings, and the views' common parts (uri, cid, the author
//! summary, indexedAt).

use data_encoding::BASE64URL_NOPAD;
use projections::attached::read::{AttachedReader, Item, Page};
use projections::eprints::read::Account;
use projections::rows::is_listing_key;
use projections::ProjectionError;
use serde_json::{json, Map, Value};

use crate::eprints::{blocking, parse_record_uri};
use crate::error::ApiError;
use crate::state::AppState;
use crate::xrpc::Call;

/// The most records a filter without a listing of its own reads (see
/// [`AttachedReader::filtered_page`]).
pub const FILTER_MAX: usize = 10_000;

/// Runs `f` on a reader of the attached model (and the eprints model's accounts).
pub fn read<T>(state: &AppState, f: impl FnOnce(&AttachedReader) -> Result<T, ProjectionError>) -> Result<T, ApiError> {
    Ok(blocking(state, || f(&AttachedReader::new(state.store.as_ref())?))?)
}

/// The `cursor` parameter: the listing key a previous page ended at.
pub fn cursor(c: &Call) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(raw) = c.params.str("cursor") else { return Ok(None) };
    match BASE64URL_NOPAD.decode(raw.as_bytes()) {
        Ok(key) if is_listing_key(&key) => Ok(Some(key)),
        _ => Err(ApiError::invalid_param("cursor", "not a cursor of this listing")),
    }
}

/// A required AT URI parameter, checked to name a record by DID.
pub fn uri_param<'a>(c: &'a Call, name: &str) -> Result<&'a str, ApiError> {
    let uri = c.str(name);
    parse_record_uri(name, uri)?;
    Ok(uri)
}

/// The author summary of an account: `{did, handle, displayName?}`.
pub fn author(did: &str, account: &Account) -> Value {
    let mut a = json!({"did": did, "handle": account.handle.as_deref().unwrap_or("handle.invalid")});
    if let Some(n) = &account.display_name {
        a["displayName"] = json!(n);
    }
    a
}

/// An item's view: `uri`, `cid`, the author summary under `author_field`, the stored view's
/// fields, `indexedAt`.
pub fn view(item: &Item, author_field: &str) -> Value {
    let mut out = Map::new();
    out.insert("uri".into(), json!(item.uri));
    out.insert("cid".into(), json!(item.cid));
    out.insert(author_field.into(), author(&item.did, &item.account));
    if let Value::Object(fields) = &item.view {
        out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out.insert("indexedAt".into(), json!(item.indexed_at));
    Value::Object(out)
}

/// The cursor of the page after `page`.
pub fn next_cursor(page: &Page) -> Option<String> {
    page.next.as_ref().map(|k| BASE64URL_NOPAD.encode(k))
}

/// A listing answer: `{<name>: items, cursor?, hasMore, total}`.
pub fn list_answer(name: &str, items: Vec<Value>, page: &Page) -> Value {
    let mut out = json!({ name: items, "hasMore": page.next.is_some(), "total": page.total });
    if let Some(c) = next_cursor(page) {
        out["cursor"] = json!(c);
    }
    out
}
