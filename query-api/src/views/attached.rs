//! The views' common parts over the attached read model: the author summary, an item's
//! view (uri, cid, author, the stored view, indexedAt), and listing answers with their
//! cursors.

use data_encoding::BASE64URL_NOPAD;
use projections::attached::read::{Item, Page};
use projections::eprints::read::Account;
use serde_json::{json, Map, Value};

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
