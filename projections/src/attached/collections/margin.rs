//! Margin's annotations and highlights (`at.margin.annotation`, `at.margin.highlight`): web
//! annotations written with margin.at, listed on the eprint their target names. A target
//! names an eprint by its AT-URI, or by a web page of it: a URL whose path is `/eprints/`
//! and the eprint's percent-encoded AT-URI (the path svc's `webPath`s give). Records about
//! any other page are kept in their repository's listing only.

use lexicons::formats::{is_did, parse_at_uri};
use serde_json::{json, Value};

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

/// Margin's annotations.
pub const ANNOTATION: &str = "at.margin.annotation";
/// Margin's highlights.
pub const HIGHLIGHT: &str = "at.margin.highlight";

pub(super) fn margin(rec: &Record) -> Result<Normalized, String> {
    let r = rec.value;
    let target = r.get("target").ok_or("target missing")?;
    let source = text(target, "source").ok_or("target.source missing")?;
    let body = r.get("body");
    let view = object(vec![
        ("recordType", json!(if rec.collection == HIGHLIGHT { "highlight" } else { "annotation" })),
        ("source", json!(source)),
        ("motivation", get(r, "motivation")),
        ("body", body.map_or(Value::Null, |b| get(b, "value"))),
        ("bodyFormat", body.map_or(Value::Null, |b| get(b, "format"))),
        ("pageTitle", get(target, "title")),
        ("selector", get(target, "selector")),
        ("color", get(r, "color")),
        ("tags", get(r, "tags")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = eprint_of(source).map(|eprint| vec![Listing::on_eprint(Kind::Margin, &eprint)]).unwrap_or_default();
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

/// The eprint a target's source names, if it names one.
pub fn eprint_of(source: &str) -> Option<String> {
    let uri = if source.starts_with("at://") {
        source.to_owned()
    } else {
        let rest = source.strip_prefix("https://").or_else(|| source.strip_prefix("http://"))?;
        let path = &rest[rest.find('/')?..];
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let encoded = path.split_once("/eprints/")?.1;
        percent_encoding::percent_decode_str(encoded).decode_utf8().ok()?.into_owned()
    };
    let parsed = parse_at_uri(&uri)?;
    let rkey = parsed.rkey?;
    (parsed.collection == Some(lexicons::SUBMISSION) && is_did(parsed.authority))
        .then(|| format!("at://{}/{}/{rkey}", parsed.authority, lexicons::SUBMISSION))
}

#[cfg(test)]
mod tests {
    use super::eprint_of;

    const EPRINT: &str = "at://did:plc:abc/pub.svc.eprint.submission/3kabc";

    #[test]
    fn a_target_names_an_eprint_by_its_uri_or_its_web_page() {
        assert_eq!(eprint_of(EPRINT).as_deref(), Some(EPRINT));
        let page = "https://svc.example/eprints/at%3A%2F%2Fdid%3Aplc%3Aabc%2Fpub.svc.eprint.submission%2F3kabc?tab=reviews#x";
        assert_eq!(eprint_of(page).as_deref(), Some(EPRINT));
        assert_eq!(eprint_of("http://localhost:3000/eprints/at://did:plc:abc/pub.svc.eprint.submission/3kabc").as_deref(), Some(EPRINT));
    }

    #[test]
    fn other_targets_name_no_eprint() {
        for source in [
            "https://example.com/some/article",
            "https://svc.example/authors/did%3Aplc%3Aabc",
            "at://did:plc:abc/pub.svc.review.comment/3kabc",
            "at://did:plc:abc/pub.svc.eprint.submission",
            "https://svc.example/eprints/not-a-uri",
            "https://svc.example/eprints/%FF",
            "urn:isbn:0451450523",
            "at://alice.example/pub.svc.eprint.submission/3kabc",
        ] {
            assert_eq!(eprint_of(source), None, "{source}");
        }
    }
}
