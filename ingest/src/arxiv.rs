//! The two JSON-lines forms of arXiv metadata a seed file may hold, told apart per line:
//!
//! - **the data set's** (`shared/data`, the committed sample): `authors` an array of names,
//!   `categories` an array, `date` the announcement day;
//! - **the metadata snapshot's** (arXiv's bulk `arxiv-metadata-oai-snapshot.json`, as
//!   published on Kaggle): `authors` one string (names with TeX accents) beside
//!   `authors_parsed` (`[last, first, suffix]`, accents decoded), `categories`
//!   space-separated, no `date` but `versions` (`created`, RFC 2822) and `update_date`.
//!
//! Both become one [`Paper`]. In the snapshot's form the names come from `authors_parsed`
//! (`first last suffix`), or, without it, from `authors` split at commas and `and`; the date
//! is the day of the first version, else `update_date`.

use chrono::DateTime;
use serde::Deserialize;

/// One paper, whichever form its line had (the fields seeding uses).
#[derive(Debug, Clone, Deserialize)]
pub struct Paper {
    /// The arXiv id, e.g. `2507.10072`.
    pub id: String,
    /// The title.
    pub title: String,
    /// The abstract.
    #[serde(rename = "abstract", default)]
    pub abstract_text: String,
    /// Author names in order.
    pub authors: Vec<String>,
    /// arXiv categories, primary first.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The day the paper appeared, `YYYY-MM-DD`.
    pub date: String,
    /// The DOI.
    #[serde(default)]
    pub doi: Option<String>,
}

/// A list, or the snapshot's one string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ListOrText {
    List(Vec<String>),
    Text(String),
}

/// A version of a paper in the snapshot.
#[derive(Debug, Deserialize)]
struct Version {
    created: String,
}

/// A line in either form.
#[derive(Debug, Deserialize)]
struct Line {
    id: String,
    title: String,
    #[serde(rename = "abstract", default)]
    abstract_text: String,
    authors: ListOrText,
    #[serde(default)]
    authors_parsed: Option<Vec<Vec<String>>>,
    #[serde(default)]
    categories: Option<ListOrText>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    versions: Option<Vec<Version>>,
    #[serde(default)]
    update_date: Option<String>,
    #[serde(default)]
    doi: Option<String>,
}

impl Paper {
    /// The paper of one line of a seed file, in either form.
    ///
    /// # Errors
    /// The JSON error for a line that is neither form (no `id`, `title` or `authors`, or
    /// not JSON).
    pub fn from_line(line: &str) -> Result<Paper, serde_json::Error> {
        let l: Line = serde_json::from_str(line)?;
        let authors = match (l.authors, l.authors_parsed) {
            (ListOrText::List(names), _) => names,
            (ListOrText::Text(_), Some(parsed)) if !parsed.is_empty() => parsed.iter().map(|p| parsed_name(p)).collect(),
            (ListOrText::Text(text), _) => split_names(&text),
        };
        let categories = match l.categories {
            Some(ListOrText::List(codes)) => codes,
            Some(ListOrText::Text(codes)) => codes.split_whitespace().map(str::to_owned).collect(),
            None => Vec::new(),
        };
        let first_version = l.versions.as_ref().and_then(|v| v.first()).and_then(|v| DateTime::parse_from_rfc2822(&v.created).ok());
        let date = l.date.or_else(|| first_version.map(|d| d.format("%Y-%m-%d").to_string())).or(l.update_date).unwrap_or_default();
        Ok(Paper {
            id: l.id,
            title: l.title,
            abstract_text: l.abstract_text,
            authors,
            categories,
            date,
            doi: l.doi.filter(|d| !d.is_empty()),
        })
    }
}

/// `[last, first, suffix]` as `first last suffix`.
fn parsed_name(parts: &[String]) -> String {
    let get = |i: usize| parts.get(i).map(|s| s.trim()).unwrap_or_default();
    [get(1), get(0), get(2)].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// The snapshot's author string split into names: at commas and at the word `and`.
fn split_names(text: &str) -> Vec<String> {
    text.split(',')
        .flat_map(|part| part.split(" and "))
        .map(|name| name.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|name| !name.is_empty())
        .collect()
}

/// The first line of arXiv's metadata snapshot (paper 0704.0001; arXiv metadata is CC0).
#[cfg(test)]
pub(crate) const SNAPSHOT_LINE: &str = r#"{"id":"0704.0001","submitter":"Pavel Nadolsky","authors":"C. Bal\\'azs, E. L. Berger, P. M. Nadolsky, C.-P. Yuan","title":"Calculation of prompt diphoton production cross sections at Tevatron and\n  LHC energies","comments":"37 pages, 15 figures; published version","journal-ref":"Phys.Rev.D76:013009,2007","doi":"10.1103/PhysRevD.76.013009","report-no":"ANL-HEP-PR-07-12","categories":"hep-ph","license":null,"abstract":"  A fully differential calculation in perturbative quantum chromodynamics is\npresented for the production of massive photon pairs at hadron colliders. All\nnext-to-leading order perturbative contributions from quark-antiquark,\ngluon-(anti)quark, and gluon-gluon subprocesses are included, as well as\nall-orders resummation of initial-state gluon radiation valid at\nnext-to-next-to-leading logarithmic accuracy. The region of phase space is\nspecified in which the calculation is most reliable. Good agreement is\ndemonstrated with data from the Fermilab Tevatron, and predictions are made for\nmore detailed tests with CDF and DO data. Predictions are shown for\ndistributions of diphoton pairs produced at the energy of the Large Hadron\nCollider (LHC). Distributions of the diphoton pairs from the decay of a Higgs\nboson are contrasted with those produced from QCD processes at the LHC, showing\nthat enhanced sensitivity to the signal can be obtained with judicious\nselection of events.\n","versions":[{"version":"v1","created":"Mon, 2 Apr 2007 19:18:42 GMT"},{"version":"v2","created":"Tue, 24 Jul 2007 20:10:27 GMT"}],"update_date":"2008-11-26","authors_parsed":[["Bal\u00e1zs","C.",""],["Berger","E. L.",""],["Nadolsky","P. M.",""],["Yuan","C. -P.",""]]}"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_line_reads_its_parsed_authors_categories_and_first_version() {
        let p = Paper::from_line(SNAPSHOT_LINE).unwrap();
        assert_eq!(p.id, "0704.0001");
        assert_eq!(p.authors, ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]);
        assert_eq!(p.categories, ["hep-ph"]);
        assert_eq!(p.date, "2007-04-02");
        assert_eq!(p.doi.as_deref(), Some("10.1103/PhysRevD.76.013009"));
        assert!(p.title.starts_with("Calculation of prompt diphoton"));
    }

    #[test]
    fn without_authors_parsed_the_author_string_is_split() {
        let mut line: serde_json::Value = serde_json::from_str(SNAPSHOT_LINE).unwrap();
        line.as_object_mut().unwrap().remove("authors_parsed");
        line["authors"] = "Ada Lovelace, Alan Turing and Grace Hopper".into();
        line["categories"] = "cs.LG stat.ML".into();
        line.as_object_mut().unwrap().remove("versions");
        let p = Paper::from_line(&line.to_string()).unwrap();
        assert_eq!(p.authors, ["Ada Lovelace", "Alan Turing", "Grace Hopper"]);
        assert_eq!(p.categories, ["cs.LG", "stat.ML"]);
        assert_eq!(p.date, "2008-11-26", "update_date without versions");
    }

    #[test]
    fn a_data_set_line_reads_as_before() {
        let line = r#"{"id":"2507.10072","title":"T","abstract":"A.","authors":["Ada Lovelace"],"categories":["cs.LG","cs.AI"],"date":"2025-07-15","doi":"10.48550/arXiv.2507.10072"}"#;
        let p = Paper::from_line(line).unwrap();
        assert_eq!(
            (p.authors, p.categories, p.date.as_str()),
            (vec!["Ada Lovelace".to_owned()], vec!["cs.LG".to_owned(), "cs.AI".to_owned()], "2025-07-15")
        );
    }
}
