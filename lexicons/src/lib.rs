//! The `pub.svc.*` lexicon documents and what svc does with them: validate records, request
//! parameters and bodies, and render the OpenAPI 3.1 document of the XRPC surface.
//!
//! The documents live in `lexicons/` (one JSON file per NSID) and are compiled into the
//! binary, so a running svc needs no files beside it. Start with [`Lexicons::builtin`].
//!
//! ```
//! use lexicons::Lexicons;
//! let lex = Lexicons::builtin();
//! let record = serde_json::json!({
//!     "title": "On Lexicons", "abstract": "Short.",
//!     "authors": [{"name": "Ada", "order": 1}],
//!     "createdAt": "2025-01-01T00:00:00.000Z"
//! });
//! lex.validate_record("pub.svc.eprint.submission", &record).unwrap();
//! let params = lex.validate_params("pub.svc.eprint.listByAuthor", &[("author", "did:plc:abc")]).unwrap();
//! assert_eq!(params.int("limit"), Some(25));
//! ```
#![warn(missing_docs)]

mod error;
pub mod formats;
mod openapi;
mod params;
mod validate;

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

pub use error::{LexiconError, ValidationError};
pub use openapi::{format_pattern, ExtraRoute, DID_PATTERN, RECORD_URI_PATTERN};
pub use params::{ParamValue, Params};
pub use validate::integral;

/// The NSID of eprint submission records.
pub const SUBMISSION: &str = "pub.svc.eprint.submission";

/// Every document under `lexicons/`, compiled in (listed by `build.rs`).
const BUILTIN: &[&str] = include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// The kind of an XRPC method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// HTTP GET with parameters in the query string.
    Query,
    /// HTTP POST with a JSON body.
    Procedure,
}

/// A loaded set of lexicon documents.
#[derive(Debug, Clone)]
pub struct Lexicons {
    docs: BTreeMap<String, Value>,
    /// The `parameters` definition of every method that has one, compiled once at load.
    params: HashMap<String, params::ParamsSchema>,
    /// The input schema of every procedure that has one, found once at load.
    inputs: HashMap<String, Value>,
}

impl Lexicons {
    /// The documents shipped with svc.
    pub fn builtin() -> Lexicons {
        Lexicons::from_documents(BUILTIN.iter().map(|s| serde_json::from_str(s).expect("builtin lexicon is valid JSON")))
            .expect("builtin lexicons are well formed")
    }

    /// Loads documents.
    ///
    /// # Errors
    /// [`LexiconError::Malformed`] for a document without an `id` or `defs`.
    pub fn from_documents(docs: impl IntoIterator<Item = Value>) -> Result<Lexicons, LexiconError> {
        let mut map = BTreeMap::new();
        for doc in docs {
            let id = doc.get("id").and_then(Value::as_str).ok_or_else(|| LexiconError::Malformed("document without id".into()))?;
            if !doc.get("defs").is_some_and(Value::is_object) {
                return Err(LexiconError::Malformed(format!("{id}: no defs")));
            }
            map.insert(id.to_owned(), doc);
        }
        let params = map
            .iter()
            .filter_map(|(nsid, d)| Some((nsid.clone(), params::ParamsSchema::compile(d.pointer("/defs/main/parameters")?))))
            .collect();
        let inputs = map.iter().filter_map(|(nsid, d)| Some((nsid.clone(), d.pointer("/defs/main/input/schema")?.clone()))).collect();
        Ok(Lexicons { docs: map, params, inputs })
    }

    /// The document of an NSID.
    pub fn document(&self, nsid: &str) -> Option<&Value> {
        self.docs.get(nsid)
    }

    /// A definition by reference (`nsid`, `nsid#name` or, relative to `base`, `#name`).
    pub fn resolve(&self, base: &str, reference: &str) -> Option<(String, &Value)> {
        let (nsid, name) = match reference.split_once('#') {
            Some(("", name)) => (base, name),
            Some((nsid, name)) => (nsid, name),
            None => (reference, "main"),
        };
        let def = self.docs.get(nsid)?.get("defs")?.get(name)?;
        Some((nsid.to_owned(), def))
    }

    /// The XRPC methods (queries and procedures) the documents define.
    pub fn methods(&self) -> Vec<(String, MethodKind)> {
        self.docs
            .iter()
            .filter_map(|(id, doc)| match doc.pointer("/defs/main/type").and_then(Value::as_str) {
                Some("query") => Some((id.clone(), MethodKind::Query)),
                Some("procedure") => Some((id.clone(), MethodKind::Procedure)),
                _ => None,
            })
            .collect()
    }

    /// Validates a record of `collection` against its lexicon.
    ///
    /// # Errors
    /// [`LexiconError::UnknownLexicon`] when no record lexicon exists for the collection,
    /// [`LexiconError::Invalid`] naming the first offending path otherwise.
    pub fn validate_record(&self, collection: &str, record: &Value) -> Result<(), LexiconError> {
        let main = self
            .docs
            .get(collection)
            .and_then(|d| d.pointer("/defs/main"))
            .filter(|m| m.get("type").and_then(Value::as_str) == Some("record"))
            .ok_or_else(|| LexiconError::UnknownLexicon(collection.to_owned()))?;
        let schema = main.get("record").ok_or_else(|| LexiconError::Malformed(format!("{collection}: record without schema")))?;
        if let Some(t) = record.get("$type").and_then(Value::as_str) {
            if t != collection {
                return Err(ValidationError::new("$type", format!("must be {collection}, not {t}")).into());
            }
        }
        validate::Validator { lexicons: self, integral_floats: false }.value(collection, schema, record, "").map_err(Into::into)
    }

    /// Validates and types the query-string parameters of a query, applying defaults.
    ///
    /// # Errors
    /// [`LexiconError::Invalid`] naming the offending parameter.
    pub fn validate_params<K: AsRef<str>, V: AsRef<str>>(&self, nsid: &str, raw: &[(K, V)]) -> Result<Params, LexiconError> {
        match self.params.get(nsid) {
            Some(schema) => schema.parse(raw).map_err(Into::into),
            // A method without parameters accepts (and ignores) any.
            None => Ok(Params::default()),
        }
    }

    /// Validates the JSON input body of a procedure against its lexicon.
    ///
    /// # Errors
    /// [`LexiconError::UnknownLexicon`] for a method without a JSON input schema,
    /// [`LexiconError::Invalid`] naming the first offending path.
    pub fn validate_input(&self, nsid: &str, body: &Value) -> Result<(), LexiconError> {
        let schema = self.inputs.get(nsid).ok_or_else(|| LexiconError::UnknownLexicon(nsid.to_owned()))?;
        validate::Validator { lexicons: self, integral_floats: true }.value(nsid, schema, body, "").map_err(Into::into)
    }

    /// Renders the OpenAPI 3.1 document of every method, plus the given non-XRPC routes.
    pub fn openapi(&self, title: &str, version: &str, extra: &[ExtraRoute]) -> Value {
        openapi::render(self, title, version, extra)
    }
}
