//! Per-collection normalization: what each attached collection's record becomes in the read
//! model (its view) and which listings it appears in. Adding a collection is one arm of
//! [`normalize`] and its lexicon.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// The collections of the model, by NSID.
pub const REVIEW: &str = "pub.svc.review.comment";
/// Inline annotations.
pub const ANNOTATION: &str = "pub.svc.annotation.comment";
/// Entity links on annotations.
pub const ANNOTATION_ENTITY_LINK: &str = "pub.svc.annotation.entityLink";
/// Entity links on reviews.
pub const REVIEW_ENTITY_LINK: &str = "pub.svc.review.entityLink";
/// Endorsements.
pub const ENDORSEMENT: &str = "pub.svc.review.endorsement";
/// User tags.
pub const USER_TAG: &str = "pub.svc.eprint.userTag";
/// Citations.
pub const CITATION: &str = "pub.svc.eprint.citation";
/// Related works.
pub const RELATED_WORK: &str = "pub.svc.eprint.relatedWork";
/// Versions.
pub const VERSION: &str = "pub.svc.eprint.version";
/// Changelogs.
pub const CHANGELOG: &str = "pub.svc.eprint.changelog";
/// Author profiles (record key `self`).
pub const PROFILE: &str = "pub.svc.actor.profile";

/// Every collection of the model.
pub const COLLECTIONS: &[&str] = &[
    REVIEW,
    ANNOTATION,
    ANNOTATION_ENTITY_LINK,
    REVIEW_ENTITY_LINK,
    ENDORSEMENT,
    USER_TAG,
    CITATION,
    RELATED_WORK,
    VERSION,
    CHANGELOG,
    PROFILE,
];

/// A listing: the partition of the `listing` table that lists some records, newest first.
/// Written `kind@what:key`, e.g. `review@eprint:at://…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing(pub String);

impl Listing {
    /// Records of `kind` about an eprint.
    pub fn on_eprint(kind: &str, eprint: &str) -> Listing {
        Listing(format!("{kind}@eprint:{eprint}"))
    }
    /// Records of `kind` written by an account.
    pub fn by_author(kind: &str, did: &str) -> Listing {
        Listing(format!("{kind}@author:{did}"))
    }
    /// Replies to a record of `kind`.
    pub fn replies(kind: &str, parent: &str) -> Listing {
        Listing(format!("{kind}@parent:{parent}"))
    }
    /// A sub-listing of `base` (a filter such as a motivation or a page).
    pub fn filtered(base: &Listing, filter: &str) -> Listing {
        Listing(format!("{}@{filter}", base.0))
    }
    /// Records of `kind` that point at `target` (a cited eprint, a related work).
    pub fn pointing_at(kind: &str, target: &str) -> Listing {
        Listing(format!("{kind}@target:{target}"))
    }
    /// Every tag record with a normalized tag.
    pub fn tagged(tag: &str) -> Listing {
        Listing(format!("tag@name:{tag}"))
    }
    /// Every tag record.
    pub fn all_tags() -> Listing {
        Listing("tag@all".into())
    }
    /// Every record of one collection (the admin listings and counts).
    pub fn collection(collection: &str) -> Listing {
        Listing(format!("all:{collection}"))
    }
    /// Every record of one repository (for deleting an account's records).
    pub fn repo(did: &str) -> Listing {
        Listing(format!("repo:{did}"))
    }
}

/// The listing kind of each collection.
pub fn kind(collection: &str) -> &'static str {
    match collection {
        REVIEW => "review",
        ANNOTATION => "annotation",
        ANNOTATION_ENTITY_LINK | REVIEW_ENTITY_LINK => "entityLink",
        ENDORSEMENT => "endorsement",
        USER_TAG => "tag",
        CITATION => "citation",
        RELATED_WORK => "relatedWork",
        VERSION => "version",
        CHANGELOG => "changelog",
        _ => "profile",
    }
}

/// A record reduced to what the model keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The record in the view shape of its operations (without the fields the reader adds:
    /// uri, cid, author, indexedAt, counts).
    pub view: Value,
    /// When the author says it was created.
    pub created_at: DateTime<Utc>,
    /// The listings it appears in (besides its repository's).
    pub lists: Vec<Listing>,
}

fn text<'a>(r: &'a Value, k: &str) -> Option<&'a str> {
    r.get(k).and_then(Value::as_str)
}

fn created_at(r: &Value) -> Result<DateTime<Utc>, String> {
    text(r, "createdAt")
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc))
        .ok_or_else(|| "createdAt: must be an RFC 3339 datetime".to_owned())
}

/// The plain text of rich-text items (their `content`, or a reference's `label`), joined by
/// spaces; a plain string is itself.
pub fn plain_text(body: &Value) -> String {
    match body {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.as_str()),
                other => text(other, "content").or_else(|| text(other, "text")).or_else(|| text(other, "label")),
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        Value::Object(_) => text(body, "text").unwrap_or_default().to_owned(),
        _ => String::new(),
    }
}

/// The normalized form of a tag: lower case, `#` and surrounding spaces and punctuation
/// dropped, runs of spaces, `_` and `-` one `-`. "Machine Learning", "#machine_learning" and
/// "machine-learning" are one tag.
pub fn normalize_tag(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    let mut pending_dash = false;
    for ch in tag.trim().trim_start_matches('#').chars().flat_map(char::to_lowercase) {
        if ch.is_whitespace() || ch == '_' || ch == '-' {
            pending_dash = !out.is_empty();
        } else if ch.is_alphanumeric() || "+.#/&'".contains(ch) {
            if pending_dash {
                out.push('-');
                pending_dash = false;
            }
            out.push(ch);
        }
    }
    out.trim_end_matches(['.', '/', '&', '\'']).to_owned()
}

/// The page of a comment's text-span target, 1-indexed as the API numbers pages: the
/// refinement's `pageNumber` (0-indexed in the record) plus one, else the bounding box's
/// `pageNumber` (1-indexed in the record).
pub fn target_page(target: &Value) -> Option<i64> {
    let refined = target.get("refinedBy")?;
    refined
        .get("pageNumber")
        .and_then(Value::as_i64)
        .map(|p| p + 1)
        .or_else(|| refined.pointer("/boundingRect/pageNumber").and_then(Value::as_i64))
}

/// The motivation of a review or annotation: the fallback, else the last segment of the
/// motivation node's URI, else `replying` for a reply and `commenting` otherwise.
fn motivation(r: &Value, parent: Option<&str>) -> String {
    if let Some(m) = text(r, "motivationFallback") {
        return m.to_owned();
    }
    if let Some(uri) = text(r, "motivationUri") {
        if let Some(last) = uri.rsplit('/').next().filter(|s| !s.is_empty()) {
            return last.to_owned();
        }
    }
    if parent.is_some() { "replying" } else { "commenting" }.to_owned()
}

fn object(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
}

fn get(r: &Value, k: &str) -> Value {
    r.get(k).cloned().unwrap_or(Value::Null)
}

/// A review or an annotation.
fn comment(collection: &str, did: &str, r: &Value) -> Result<Normalized, String> {
    let kind = kind(collection);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let parent_field = if collection == REVIEW { "parentComment" } else { "parentAnnotation" };
    let parent = text(r, parent_field);
    let motivation = motivation(r, parent);
    let body = r.get("body").cloned().unwrap_or(Value::Null);
    let content = plain_text(&body);
    let target = r.get("target").cloned();
    let page = target.as_ref().and_then(target_page);
    let parent_key = if collection == REVIEW { "parentReviewUri" } else { "parentAnnotationUri" };
    let mut view = object(vec![
        ("eprintUri", json!(eprint)),
        ("content", json!(content)),
        ("body", json!({"text": content, "facets": [], "items": body})),
        ("motivation", json!(motivation)),
        ("motivationUri", get(r, "motivationUri")),
        ("createdAt", get(r, "createdAt")),
    ]);
    view[parent_key] = parent.map_or(Value::Null, |p| json!(p));
    if let Some(t) = &target {
        let mut t = t.clone();
        if let Some(p) = page {
            t["page"] = json!(p);
        }
        if t.get("source").is_none() {
            t["source"] = json!(eprint);
        }
        view["target"] = t;
    }
    let on_eprint = Listing::on_eprint(kind, eprint);
    let by_author = Listing::by_author(kind, did);
    let mut lists = vec![
        Listing::filtered(&on_eprint, &format!("motivation:{motivation}")),
        Listing::filtered(&by_author, &format!("motivation:{motivation}")),
    ];
    if target.is_some() {
        lists.push(Listing::filtered(&on_eprint, "inline"));
        lists.push(Listing::filtered(&by_author, "inline"));
    }
    if let Some(p) = page {
        lists.push(Listing::filtered(&on_eprint, &format!("page:{p}")));
    }
    if let Some(parent) = parent {
        lists.push(Listing::replies(kind, parent));
    }
    lists.push(on_eprint);
    lists.push(by_author);
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

fn entity_link(collection: &str, did: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut target = get(r, "target");
    // 0-indexed in annotation entity links, 1-indexed in review entity links (records.md).
    let offset = if collection == ANNOTATION_ENTITY_LINK { 1 } else { 0 };
    let page = target.pointer("/refinedBy/pageNumber").and_then(Value::as_i64).map(|p| p + offset);
    if let Some(p) = page {
        target["page"] = json!(p);
    }
    let mut entity = get(r, "linkedEntity");
    if entity.get("$type").is_none() {
        if let Some(t) = text(&entity, "type") {
            let member = match t {
                "graphNode" => "graphNodeLink",
                "externalId" => "externalIdLink",
                "author" => "authorLink",
                _ => "eprintLink",
            };
            entity["$type"] = json!(format!("pub.svc.annotation.listForEprint#{member}"));
        }
    }
    if let Some(id) = text(&entity, "id").map(str::to_owned) {
        entity["nodeId"] = json!(id);
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("target", target),
        ("linkedEntity", entity),
        ("confidence", r.get("confidence").and_then(Value::as_i64).map_or(Value::Null, |c| json!(c as f64 / 1000.0))),
        ("source", json!(if collection == REVIEW_ENTITY_LINK { "review" } else { "annotation" })),
        ("createdAt", get(r, "createdAt")),
    ]);
    let on_eprint = Listing::on_eprint("entityLink", eprint);
    let mut lists = vec![Listing::by_author("entityLink", did)];
    if let Some(p) = page {
        lists.push(Listing::filtered(&on_eprint, &format!("page:{p}")));
    }
    lists.push(on_eprint);
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

fn endorsement(did: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut contributions: Vec<String> = Vec::new();
    for c in r.get("contributions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if contributions.iter().any(|h| h == c) {
            return Err(format!("contributions: {c} is listed twice"));
        }
        contributions.push(c.to_owned());
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("contributions", json!(contributions)),
        ("comment", get(r, "comment")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let on_eprint = Listing::on_eprint("endorsement", eprint);
    let lists = vec![Listing::filtered(&on_eprint, &format!("by:{did}")), Listing::by_author("endorsement", did), on_eprint];
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

fn user_tag(did: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let tag = text(r, "tag").ok_or("tag missing")?;
    let normalized = normalize_tag(tag);
    if normalized.is_empty() {
        return Err(format!("tag: {tag:?} has no letters or digits"));
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("tag", json!(tag)),
        ("normalizedForm", json!(normalized)),
        ("nodeUri", get(r, "nodeUri")),
        ("nodeSlug", get(r, "nodeSlug")),
        ("nodeSubkind", get(r, "nodeSubkind")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![Listing::on_eprint("tag", eprint), Listing::by_author("tag", did), Listing::tagged(&normalized), Listing::all_tags()];
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

fn citation(did: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let cited = get(r, "citedWork");
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("citedWork", cited.clone()),
        ("citationType", json!(text(r, "citationType").unwrap_or("cites"))),
        ("context", get(r, "context")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let mut lists = vec![Listing::on_eprint("citation", eprint), Listing::by_author("citation", did)];
    if let Some(target) = text(&cited, "svcUri") {
        lists.push(Listing::pointing_at("citation", target));
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

fn related_work(did: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let related = text(r, "relatedUri").ok_or("relatedUri missing")?;
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("relatedUri", json!(related)),
        ("relationType", get(r, "relationType")),
        ("description", get(r, "description")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![
        Listing::on_eprint("relatedWork", eprint),
        Listing::by_author("relatedWork", did),
        Listing::pointing_at("relatedWork", related),
    ];
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}

/// A version or a changelog: the record as written, listed on its eprint.
fn history(collection: &str, r: &Value) -> Result<Normalized, String> {
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut view = r.clone();
    if let Value::Object(m) = &mut view {
        m.remove("$type");
        m.remove("schemaRevision");
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists: vec![Listing::on_eprint(kind(collection), eprint)] })
}

fn profile(rkey: &str, r: &Value) -> Result<Normalized, String> {
    if rkey != "self" {
        return Err(format!("a profile's record key must be self, not {rkey}"));
    }
    let mut view = r.clone();
    if let Value::Object(m) = &mut view {
        m.remove("$type");
        m.remove("schemaRevision");
    }
    // A profile has no createdAt of its own: it lists nowhere but its repository.
    Ok(Normalized { view, created_at: DateTime::<Utc>::UNIX_EPOCH, lists: Vec::new() })
}

/// Normalizes a record of an attached collection that passed lexicon validation; `None`
/// for a collection the model does not keep.
///
/// # Errors
/// A reason (the dead-letter reason) for a record the lexicon allows but the model cannot
/// use, for example an endorsement naming a contribution twice.
pub fn normalize(collection: &str, did: &str, rkey: &str, record: &Value) -> Option<Result<Normalized, String>> {
    Some(match collection {
        REVIEW | ANNOTATION => comment(collection, did, record),
        ANNOTATION_ENTITY_LINK | REVIEW_ENTITY_LINK => entity_link(collection, did, record),
        ENDORSEMENT => endorsement(did, record),
        USER_TAG => user_tag(did, record),
        CITATION => citation(did, record),
        RELATED_WORK => related_work(did, record),
        VERSION | CHANGELOG => history(collection, record),
        PROFILE => profile(rkey, record),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_forms_are_one_tag() {
        for form in ["Machine Learning", "#machine_learning", "machine-learning", "  MACHINE  learning "] {
            assert_eq!(normalize_tag(form), "machine-learning", "{form}");
        }
        assert_eq!(normalize_tag("C++"), "c++");
        assert_eq!(normalize_tag("!!!"), "");
    }

    #[test]
    fn rich_text_becomes_plain_text() {
        let body = json!([{"type": "text", "content": "See"}, {"type": "nodeRef", "label": "graphs"}, {"type": "text", "content": ""}]);
        assert_eq!(plain_text(&body), "See graphs");
    }

    #[test]
    fn a_reply_is_listed_under_its_parent() {
        let r = json!({"eprintUri": "at://did:plc:a/pub.svc.eprint.submission/1", "body": [{"type": "text", "content": "Yes"}],
                       "parentComment": "at://did:plc:b/pub.svc.review.comment/1", "createdAt": "2025-01-01T00:00:00Z"});
        let n = normalize(REVIEW, "did:plc:c", "r", &r).unwrap().unwrap();
        assert_eq!(n.view["motivation"], "replying");
        assert_eq!(n.view["parentReviewUri"], "at://did:plc:b/pub.svc.review.comment/1");
        assert!(n.lists.contains(&Listing::replies("review", "at://did:plc:b/pub.svc.review.comment/1")));
    }
}
