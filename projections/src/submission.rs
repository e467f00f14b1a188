//! Eprint submission records in the shape the API answers with.
//!
//! Records come from other people's repositories in two shapes: the one the public API
//! shows (`abstract` a string, `fields`, `pdfBlob`) and the rich one of the record reference
//! (`abstract` as rich-text items with `abstractPlainText`, `document`, `fieldUris`).
//! [`normalize`] accepts both and yields the contract's shape, keeping every other field.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An author as listed on an eprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Author {
    /// The display name.
    pub name: String,
    /// The author's DID, when they have an account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub did: Option<String>,
    /// The 1-based position in the author list.
    pub order: i64,
}

/// A submission reduced to what the read models need.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The record in the contract's shape.
    pub record: Value,
    /// The title.
    pub title: String,
    /// The abstract as plain text.
    pub abstract_text: String,
    /// The authors in order.
    pub authors: Vec<Author>,
    /// Field codes.
    pub fields: Vec<String>,
    /// The codes (record keys) of its facet and topic nodes (`facetUris`, `topicUris`).
    pub facets: Vec<String>,
    /// Author keywords.
    pub keywords: Vec<String>,
    /// When the author says the eprint was created.
    pub created_at: DateTime<Utc>,
}

impl Submission {
    /// The summary shown in listings and search results.
    pub fn summary(&self, uri: &str, cid: &str, indexed_at: &str) -> Value {
        summary_of(uri, cid, &self.record, indexed_at)
    }

    /// The DIDs this eprint is listed under: the repository owner's, then each author's,
    /// without repeats.
    pub fn listed_dids(&self, repo_did: &str) -> Vec<String> {
        let mut dids = vec![repo_did.to_owned()];
        for a in &self.authors {
            if let Some(d) = &a.did {
                if !dids.contains(d) {
                    dids.push(d.clone());
                }
            }
        }
        dids
    }
}

/// The summary of a normalized record (see [`normalize`]): uri, cid, title, authors,
/// abstract, fields, createdAt, indexedAt.
pub fn summary_of(uri: &str, cid: &str, record: &Value, indexed_at: &str) -> Value {
    let get = |k: &str| record.get(k).cloned().unwrap_or(Value::Null);
    serde_json::json!({
        "uri": uri,
        "cid": cid,
        "title": get("title"),
        "authors": get("authors"),
        "abstract": get("abstract"),
        "fields": get("fields"),
        "createdAt": get("createdAt"),
        "indexedAt": indexed_at,
    })
}

/// An eprint's summary (as [`summary_of`] gives it) kept as JSON text: written from the
/// record's JSON text without building the record, and served as it is.
#[derive(Debug, Clone)]
pub struct SummaryJson {
    uri: String,
    json: Box<serde_json::value::RawValue>,
}

/// The fields of a record its summary shows, borrowed from the record's text.
#[derive(Deserialize)]
struct SummaryFields<'a> {
    #[serde(borrow, default)]
    title: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    authors: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, rename = "abstract")]
    abstract_text: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    fields: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default, rename = "createdAt")]
    created_at: Option<&'a serde_json::value::RawValue>,
}

impl SummaryJson {
    /// The summary of the normalized record whose JSON text is `record`: the same members
    /// as [`summary_of`], in the order a `serde_json::Value` writes them (by name).
    ///
    /// # Errors
    /// The text is not the JSON of a record.
    pub fn of_record(uri: &str, cid: &str, record: &str, indexed_at: &str) -> Result<SummaryJson, serde_json::Error> {
        let f: SummaryFields<'_> = serde_json::from_str(record)?;
        let raw = |v: Option<&serde_json::value::RawValue>| v.map_or("null", serde_json::value::RawValue::get).to_owned();
        let text = |s: &str| serde_json::to_string(s);
        let mut out = String::with_capacity(record.len() + uri.len() + 128);
        for (name, value) in [
            ("abstract", raw(f.abstract_text)),
            ("authors", raw(f.authors)),
            ("cid", text(cid)?),
            ("createdAt", raw(f.created_at)),
            ("fields", raw(f.fields)),
            ("indexedAt", text(indexed_at)?),
            ("title", raw(f.title)),
            ("uri", text(uri)?),
        ] {
            out.push(if out.is_empty() { '{' } else { ',' });
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
            out.push_str(&value);
        }
        out.push('}');
        Ok(SummaryJson { uri: uri.to_owned(), json: serde_json::value::RawValue::from_string(out)? })
    }

    /// The eprint's AT URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The summary's JSON text.
    pub fn as_str(&self) -> &str {
        self.json.get()
    }

    /// The summary as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.json.get()).unwrap_or_default()
    }
}

impl PartialEq for SummaryJson {
    fn eq(&self, other: &SummaryJson) -> bool {
        self.json.get() == other.json.get()
    }
}

impl Serialize for SummaryJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(s)
    }
}

fn rich_text(items: &[Value]) -> Result<String, String> {
    let mut parts = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(map) = item else { return Err(format!("abstract[{i}]: expected a rich-text item object")) };
        let text = map.get("content").or_else(|| map.get("label")).or_else(|| map.get("tag")).and_then(Value::as_str).unwrap_or_default();
        if !text.is_empty() {
            parts.push(text);
        }
    }
    Ok(parts.join(" "))
}

fn field_code(uri_or_code: &str) -> String {
    match uri_or_code.strip_prefix("at://") {
        Some(rest) => rest.rsplit('/').next().unwrap_or(rest).to_owned(),
        None => uri_or_code.to_owned(),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// Normalizes a submission record that passed lexicon validation.
///
/// # Errors
/// A reason, for a record whose parts have shapes no accepted form allows (for example an
/// abstract that is neither a string nor rich-text items).
pub fn normalize(record: &Value) -> Result<Submission, String> {
    let Value::Object(src) = record else { return Err("record is not an object".into()) };
    let title = src.get("title").and_then(Value::as_str).ok_or("title missing")?.to_owned();
    let abstract_text = match (src.get("abstract"), src.get("abstractPlainText").and_then(Value::as_str)) {
        (_, Some(plain)) => plain.to_owned(),
        (Some(Value::String(s)), None) => s.clone(),
        (Some(Value::Array(items)), None) => rich_text(items)?,
        (None | Some(Value::Null), None) => String::new(),
        (Some(_), None) => return Err("abstract: must be a string or an array of rich-text items".into()),
    };
    let authors: Vec<Author> = src
        .get("authors")
        .and_then(Value::as_array)
        .ok_or("authors missing")?
        .iter()
        .enumerate()
        .map(|(i, a)| Author {
            name: a.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
            did: a.get("did").and_then(Value::as_str).map(str::to_owned),
            order: a.get("order").and_then(Value::as_i64).unwrap_or(i as i64 + 1),
        })
        .collect();
    let mut fields = strings(src.get("fields"));
    for uri in strings(src.get("fieldUris")) {
        let code = field_code(&uri);
        if !fields.contains(&code) {
            fields.push(code);
        }
    }
    let mut facets = Vec::new();
    for uri in strings(src.get("facetUris")).into_iter().chain(strings(src.get("topicUris"))) {
        let code = field_code(&uri);
        if !facets.contains(&code) {
            facets.push(code);
        }
    }
    let keywords = strings(src.get("keywords"));
    let created_at = src
        .get("createdAt")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .ok_or("createdAt: must be an RFC 3339 datetime")?
        .with_timezone(&Utc);

    let mut out = Map::new();
    for (k, v) in src {
        match k.as_str() {
            "abstract" | "abstractPlainText" | "fields" | "document" | "pdfBlob" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("abstract".into(), Value::String(abstract_text.clone()));
    if let Some(rich @ Value::Array(_)) = src.get("abstract") {
        out.insert("abstractRich".into(), rich.clone());
    }
    out.insert("fields".into(), Value::Array(fields.iter().cloned().map(Value::String).collect()));
    if let Some(blob) = src.get("pdfBlob").or_else(|| src.get("document")) {
        out.insert("pdfBlob".into(), blob.clone());
    }
    Ok(Submission { record: Value::Object(out), title, abstract_text, authors, fields, facets, keywords, created_at })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The summary written from a record's text is the one built from its value, member
    /// for member and byte for byte (escapes and absent fields included).
    #[test]
    fn a_summary_from_text_is_the_summary_from_the_value() {
        let record = json!({"title": "Q\"uotes \u{e9}", "abstract": "A <b>", "authors": [{"name": "N", "order": 1}],
                            "createdAt": "2025-01-01T00:00:00Z", "license": "cc-by", "externalIds": {"arxivId": "2501.00001"}});
        let (uri, cid, at) = ("at://did:plc:x/pub.svc.eprint.submission/1", "bafy\"c", "2025-01-02T00:00:00.000Z");
        let from_text = SummaryJson::of_record(uri, cid, &record.to_string(), at).unwrap();
        let from_value = summary_of(uri, cid, &record, at);
        assert_eq!(from_text.to_value(), from_value);
        assert_eq!(serde_json::to_string(&from_text).unwrap(), serde_json::to_string(&from_value).unwrap());
        assert_eq!(from_text.uri(), uri);
        assert!(SummaryJson::of_record(uri, cid, "{\"title\": ", at).is_err());
    }

    #[test]
    fn contract_shape_passes_through() {
        let r = json!({"title": "T", "abstract": "A b.", "authors": [{"name": "N", "did": "did:plc:x", "order": 1}],
                       "fields": ["cs.LG"], "createdAt": "2025-01-01T00:00:00Z"});
        let s = normalize(&r).unwrap();
        assert_eq!(s.abstract_text, "A b.");
        assert_eq!(s.record["abstract"], "A b.");
        assert_eq!(s.fields, vec!["cs.LG"]);
        assert_eq!(s.listed_dids("did:plc:repo"), vec!["did:plc:repo", "did:plc:x"]);
    }

    #[test]
    fn rich_shape_becomes_the_contract_shape() {
        let blob = json!({"$type": "blob", "ref": {"$link": "bafkrei"}, "mimeType": "application/pdf", "size": 3});
        let r = json!({"title": "T",
            "abstract": [{"type": "text", "content": "Hello"}, {"type": "nodeRef", "uri": "at://x/y/z", "label": "graphs"}],
            "document": blob.clone(),
            "authors": [{"name": "N", "order": 1}],
            "fieldUris": ["at://did:plc:gov/pub.svc.graph.node/cs-ai"],
            "licenseSlug": "MIT",
            "createdAt": "2025-01-01T00:00:00Z"});
        let s = normalize(&r).unwrap();
        assert_eq!(s.record["abstract"], "Hello graphs");
        assert_eq!(s.record["pdfBlob"], blob);
        assert_eq!(s.record["fields"], json!(["cs-ai"]));
        assert_eq!(s.record["licenseSlug"], "MIT");
        assert!(s.record.get("document").is_none());
    }

    #[test]
    fn refuses_an_abstract_of_another_shape() {
        let r = json!({"title": "T", "abstract": 3, "authors": [], "createdAt": "2025-01-01T00:00:00Z"});
        assert!(normalize(&r).unwrap_err().starts_with("abstract"));
    }
}
