//! Scholarly identifiers in the search index: an arXiv id or a DOI typed as the query finds
//! its eprint first, in whichever common form it is written.

use serde_json::Value;

/// The normalized identifiers of a record: `arxiv:<id>` (without a version suffix) from
/// `externalIds.arxivId`, and `doi:<doi>` from `doi` and `externalIds.zenodoDoi`, lower-cased.
pub fn of_record(record: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let external = record.get("externalIds");
    if let Some(id) = text(external.and_then(|e| e.get("arxivId"))) {
        if let Some(id) = arxiv(id) {
            out.push(id);
        }
    }
    for doi_value in [record.get("doi"), external.and_then(|e| e.get("zenodoDoi"))] {
        if let Some(d) = text(doi_value).and_then(doi) {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// The title and [`of_record`] of a record held as JSON text, reading only those fields
/// (the rest of the record is skipped, not built); nothing for text that is not a JSON
/// object.
pub fn title_and_ids_of_json(record: &str) -> (Option<String>, Vec<String>) {
    #[derive(serde::Deserialize)]
    struct Fields {
        #[serde(default)]
        title: Value,
        #[serde(default)]
        doi: Value,
        #[serde(default, rename = "externalIds")]
        external_ids: Value,
    }
    let Ok(f) = serde_json::from_str::<Fields>(record) else { return (None, Vec::new()) };
    let mut fields = serde_json::Map::new();
    fields.insert("doi".into(), f.doi);
    fields.insert("externalIds".into(), f.external_ids);
    (f.title.as_str().map(str::to_owned), of_record(&Value::Object(fields)))
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The identifier a whole query names, normalized as [`of_record`] does, if it is one: an
/// arXiv id (`2507.10072`, `2507.10072v2`, `arXiv:2507.10072`, `hep-th/9901001`, an
/// `arxiv.org/abs/…` URL) or a DOI (`10.1234/x`, `doi:10.1234/x`, a `doi.org/…` URL).
pub fn of_query(query: &str) -> Option<String> {
    let q = query.trim();
    if q.is_empty() || q.contains(char::is_whitespace) {
        return None;
    }
    let lower = q.to_ascii_lowercase();
    let stripped = ["https://", "http://"].iter().find_map(|p| lower.strip_prefix(p)).unwrap_or(&lower);
    let stripped = stripped.strip_prefix("www.").unwrap_or(stripped);
    if let Some(rest) = stripped.strip_prefix("doi.org/").or_else(|| stripped.strip_prefix("dx.doi.org/")) {
        return doi(rest);
    }
    if let Some(rest) = stripped.strip_prefix("arxiv.org/abs/").or_else(|| stripped.strip_prefix("arxiv.org/pdf/")) {
        return arxiv(rest.trim_end_matches(".pdf"));
    }
    if let Some(rest) = stripped.strip_prefix("doi:") {
        return doi(rest);
    }
    if let Some(rest) = stripped.strip_prefix("arxiv:") {
        return arxiv(rest);
    }
    doi(stripped).or_else(|| arxiv(stripped))
}

/// The DOI arXiv registers for its papers: `10.48550/arXiv.<id>`.
const ARXIV_DOI: &str = "doi:10.48550/arxiv.";

/// Identifiers (as [`of_record`] gives them) with the other form of each arXiv paper's: its
/// arXiv id beside its arXiv DOI and the other way round, each once, in order.
pub fn with_aliases(ids: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(ids.len() * 2);
    for id in ids {
        let alias = match (id.strip_prefix(ARXIV_DOI), id.strip_prefix("arxiv:")) {
            (Some(arxiv_id), _) => arxiv(arxiv_id),
            (None, Some(arxiv_id)) => Some(format!("{ARXIV_DOI}{arxiv_id}")),
            _ => None,
        };
        for form in std::iter::once(id).chain(alias) {
            if !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}

/// `doi:<doi>` for a DOI (`10.<registrant>/<suffix>`), lower-cased as DOIs compare.
fn doi(s: &str) -> Option<String> {
    let s = s.trim().to_ascii_lowercase();
    let (prefix, suffix) = s.split_once('/')?;
    let registrant = prefix.strip_prefix("10.")?;
    let valid = !registrant.is_empty() && registrant.chars().all(|c| c.is_ascii_digit() || c == '.') && !suffix.is_empty();
    valid.then(|| format!("doi:{s}"))
}

/// `arxiv:<id>` for an arXiv id of either scheme, without its version suffix.
fn arxiv(s: &str) -> Option<String> {
    let s = s.trim().to_ascii_lowercase();
    let unversioned = match s.rfind('v') {
        Some(i) if i > 0 && s[i + 1..].chars().all(|c| c.is_ascii_digit()) && !s[i + 1..].is_empty() => &s[..i],
        _ => s.as_str(),
    };
    // New scheme: YYMM.NNNN or YYMM.NNNNN.
    let new_scheme = unversioned.split_once('.').is_some_and(|(a, b)| {
        a.len() == 4 && a.chars().all(|c| c.is_ascii_digit()) && (4..=5).contains(&b.len()) && b.chars().all(|c| c.is_ascii_digit())
    });
    // Old scheme: archive(.SUBJECT)/YYMMNNN.
    let old_scheme = unversioned.split_once('/').is_some_and(|(archive, number)| {
        !archive.is_empty()
            && archive.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c == '.')
            && number.len() == 7
            && number.chars().all(|c| c.is_ascii_digit())
    });
    (new_scheme || old_scheme).then(|| format!("arxiv:{unversioned}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn queries_name_identifiers_in_their_common_forms() {
        for q in ["2507.10072", "2507.10072v3", "arXiv:2507.10072", "https://arxiv.org/abs/2507.10072v1", " ARXIV:2507.10072 "] {
            assert_eq!(of_query(q).as_deref(), Some("arxiv:2507.10072"), "{q}");
        }
        assert_eq!(of_query("hep-th/9901001v2").as_deref(), Some("arxiv:hep-th/9901001"));
        assert_eq!(of_query("math.AG/0309136").as_deref(), Some("arxiv:math.ag/0309136"));
        for q in ["10.1103/PhysRevLett.116.061102", "doi:10.1103/physrevlett.116.061102", "https://doi.org/10.1103/PhysRevLett.116.061102"]
        {
            assert_eq!(of_query(q).as_deref(), Some("doi:10.1103/physrevlett.116.061102"), "{q}");
        }
        for q in ["graph neural networks", "2507", "10.1234", "v2", "attention", "1234.567", ""] {
            assert_eq!(of_query(q), None, "{q}");
        }
    }

    #[test]
    fn an_arxiv_paper_is_known_by_its_id_and_its_doi() {
        assert_eq!(with_aliases(vec!["arxiv:2507.10072".into()]), ["arxiv:2507.10072", "doi:10.48550/arxiv.2507.10072"]);
        assert_eq!(
            with_aliases(vec!["doi:10.48550/arxiv.2507.10072".into(), "arxiv:2507.10072".into()]),
            ["doi:10.48550/arxiv.2507.10072", "arxiv:2507.10072"]
        );
        assert_eq!(with_aliases(vec!["doi:10.1103/x".into()]), ["doi:10.1103/x"]);
    }

    #[test]
    fn records_give_the_same_forms() {
        let r = json!({"externalIds": {"arxivId": "2507.10072v2"}, "doi": "10.48550/arXiv.2507.10072"});
        assert_eq!(of_record(&r), vec!["arxiv:2507.10072", "doi:10.48550/arxiv.2507.10072"]);
        assert!(of_record(&json!({"title": "x"})).is_empty());
    }
}
