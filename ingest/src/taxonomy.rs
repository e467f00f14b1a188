//! The arXiv category taxonomy as records of the governance repository: one established
//! `pub.svc.graph.node` of subkind `field` per group, archive and category (its slug the
//! arXiv code the data set's `fields` use, so every seeded eprint's fields resolve), a
//! `broader` edge from each to its archive or group, a `related` edge for each of arXiv's
//! aliases, and the nodes the graph's vocabulary needs (the subkinds, the relations). The
//! data is `data/arxiv-taxonomy.json` (its README says where it comes from).
//!
//! Record keys are UUIDs derived from the slug (v5), so a reseed writes the same URIs.

use chrono::{DateTime, Utc};
use event_schema::{NewEvent, Payload, RecordWrite, Source};
use lexicons::Lexicons;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::repo::{record_cid, tid};
use crate::IngestError;

/// The committed taxonomy file.
const ARXIV: &str = include_str!("../data/arxiv-taxonomy.json");

/// The node collection.
pub const NODE: &str = "pub.svc.graph.node";
/// The edge collection.
pub const EDGE: &str = "pub.svc.graph.edge";

/// When the seeded records say they were created: fixed, so a reseed writes the same records.
const CREATED_AT: &str = "2020-01-01T00:00:00.000Z";

/// The relations the graph's edges use, as nodes of subkind `relation`: slug, label, inverse,
/// symmetric, transitive.
const RELATIONS: &[(&str, &str, &str, bool, bool)] = &[
    ("broader", "Broader", "narrower", false, true),
    ("narrower", "Narrower", "broader", false, true),
    ("related", "Related", "related", true, false),
    ("contains", "Contains", "contained-by", false, false),
];

/// The subkinds of nodes svc uses, as nodes of subkind `subkind`: slug, label.
const SUBKINDS: &[(&str, &str)] =
    &[("field", "Field"), ("relation", "Relation"), ("subkind", "Subkind"), ("collection", "Collection"), ("facet", "Facet")];

#[derive(Debug, Deserialize)]
struct TaxonomyFile {
    nodes: Vec<Category>,
}

/// One group, archive or category.
#[derive(Debug, Clone, Deserialize)]
pub struct Category {
    /// The arXiv code (`cs.LG`, `astro-ph`, `grp_physics`).
    pub slug: String,
    /// Its name.
    pub label: String,
    /// `group`, `archive` or `category`.
    pub level: String,
    /// The archive or group it belongs to.
    pub broader: Vec<String>,
    /// For an alias, the canonical category.
    #[serde(rename = "sameAs")]
    pub same_as: Option<String>,
}

/// The arXiv taxonomy.
#[derive(Debug, Clone)]
pub struct Taxonomy {
    /// Its groups, archives and categories, groups first.
    pub categories: Vec<Category>,
}

/// The record key (a UUID) of the seeded node or edge named `name`.
pub fn record_id(name: &str) -> String {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, format!("https://svc.pub/taxonomy/{name}").as_bytes()).to_string()
}

impl Taxonomy {
    /// The committed arXiv taxonomy.
    pub fn arxiv() -> Taxonomy {
        let file: TaxonomyFile = serde_json::from_str(ARXIV).expect("data/arxiv-taxonomy.json is valid (a test reads it)");
        Taxonomy { categories: file.nodes }
    }

    /// The URI of the field node of `slug` in the governance repository `governance`.
    pub fn node_uri(governance: &str, slug: &str) -> String {
        format!("at://{governance}/{NODE}/{}", record_id(&format!("field/{slug}")))
    }

    /// The records of the taxonomy in the governance repository `governance`, as events:
    /// subkind and relation nodes, field nodes, then their edges.
    ///
    /// # Errors
    /// [`IngestError::BadRecord`] if a record fails its lexicon (a bug in the data).
    pub fn events(&self, governance: &str, source: &Source, lexicons: &Lexicons) -> Result<Vec<NewEvent>, IngestError> {
        let created: DateTime<Utc> = CREATED_AT.parse().unwrap_or_default();
        let micros = created.timestamp_micros() as u64;
        let mut records: Vec<(&str, String, Value)> = Vec::new();
        let node = |id: String, slug: &str, label: &str, subkind: &str, order: usize, metadata: Value| {
            let mut r = json!({
                "$type": NODE, "id": id, "slug": slug, "kind": "type", "subkind": subkind, "label": label,
                "status": "established", "createdAt": CREATED_AT, "createdBy": governance,
                "metadata": {"displayOrder": order},
            });
            if let (Value::Object(m), Value::Object(extra)) = (&mut r["metadata"], metadata) {
                m.extend(extra);
            }
            r
        };
        for (i, (slug, label)) in SUBKINDS.iter().enumerate() {
            let id = record_id(&format!("subkind/{slug}"));
            records.push((NODE, id.clone(), node(id, slug, label, "subkind", i, json!({}))));
        }
        for (i, (slug, label, inverse, symmetric, transitive)) in RELATIONS.iter().enumerate() {
            let id = record_id(&format!("relation/{slug}"));
            let metadata = json!({"inverseSlug": inverse, "symmetric": symmetric, "transitive": transitive});
            records.push((NODE, id.clone(), node(id, slug, label, "relation", i, metadata)));
        }
        let field_kind = format!("at://{governance}/{NODE}/{}", record_id("subkind/field"));
        for (i, c) in self.categories.iter().enumerate() {
            let id = record_id(&format!("field/{}", c.slug));
            let mut r = node(id.clone(), &c.slug, &c.label, "field", i, json!({}));
            r["subkindUri"] = json!(field_kind);
            r["description"] = json!(format!("arXiv {} {}", c.level, c.slug.trim_start_matches("grp_")));
            records.push((NODE, id, r));
        }
        let edge = |name: String, from: &str, to: &str, relation: &str| {
            let id = record_id(&name);
            let r = json!({
                "$type": EDGE, "id": id, "sourceUri": Self::node_uri(governance, from), "targetUri": Self::node_uri(governance, to),
                "relationUri": format!("at://{governance}/{NODE}/{}", record_id(&format!("relation/{relation}"))),
                "relationSlug": relation, "status": "established", "createdAt": CREATED_AT, "createdBy": governance,
            });
            (EDGE, id, r)
        };
        for c in &self.categories {
            for parent in &c.broader {
                records.push(edge(format!("broader/{}/{parent}", c.slug), &c.slug, parent, "broader"));
            }
            if let Some(canonical) = &c.same_as {
                records.push(edge(format!("related/{}/{canonical}", c.slug), &c.slug, canonical, "related"));
            }
        }
        let mut events = Vec::with_capacity(records.len());
        for (i, (collection, rkey, record)) in records.into_iter().enumerate() {
            lexicons
                .validate_record(collection, &record)
                .map_err(|e| IngestError::BadRecord(format!("taxonomy record {rkey} of {collection}: {e}")))?;
            let cid = record_cid(&record)?;
            let rev = tid(micros + i as u64 + 1, 0);
            let write = RecordWrite { did: governance.to_owned(), collection: collection.to_owned(), rkey, cid, rev, record };
            events.push(NewEvent::repo(source.clone(), Payload::RecordCreate(write)));
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_of_the_data_is_a_node_under_a_known_parent() {
        let t = Taxonomy::arxiv();
        let slugs: Vec<&str> = t.categories.iter().map(|c| c.slug.as_str()).collect();
        assert_eq!(slugs.len(), 167);
        for c in &t.categories {
            assert!(c.broader.iter().all(|b| slugs.contains(&b.as_str())), "{} has an unknown parent", c.slug);
            assert!(c.same_as.iter().all(|s| slugs.contains(&s.as_str())), "{} is an alias of an unknown category", c.slug);
        }
        let file = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/arxiv-sample-3k.jsonl.gz")).unwrap();
        for line in std::io::BufRead::lines(std::io::BufReader::new(flate2::read::GzDecoder::new(file))) {
            let paper = crate::arxiv::Paper::from_line(&line.unwrap()).unwrap();
            for code in &paper.categories {
                assert!(slugs.contains(&code.as_str()), "{code} ({}) is not in the taxonomy", paper.id);
            }
        }
    }

    #[test]
    fn the_records_are_valid_and_the_same_every_time() {
        let lexicons = Lexicons::builtin();
        let source = Source::Seed { file: "taxonomy".into() };
        let a = Taxonomy::arxiv().events("did:web:svc.example", &source, &lexicons).unwrap();
        let b = Taxonomy::arxiv().events("did:web:svc.example", &source, &lexicons).unwrap();
        assert_eq!(a.len(), 5 + 4 + 167 + (167 - 8) + 6);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let cs_lg = Taxonomy::node_uri("did:web:svc.example", "cs.LG");
        assert!(a.iter().any(|e| matches!(&e.payload, Payload::RecordCreate(w)
            if format!("at://{}/{}/{}", w.did, w.collection, w.rkey) == cs_lg && w.record["label"] == "Machine Learning")));
    }
}
