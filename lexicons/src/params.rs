//! Typed XRPC query-string parameters, checked against a lexicon `params` definition.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{formats, ValidationError};

/// One typed parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A repeated parameter.
    List(Vec<ParamValue>),
}

/// Validated parameters with defaults applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub BTreeMap<String, ParamValue>);

impl Params {
    /// A string parameter.
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(ParamValue::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// An integer parameter.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.0.get(name) {
            Some(ParamValue::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// A boolean parameter.
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.0.get(name) {
            Some(ParamValue::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// The string items of an array parameter (empty when absent).
    pub fn strs(&self, name: &str) -> Vec<String> {
        match self.0.get(name) {
            Some(ParamValue::List(items)) => items
                .iter()
                .filter_map(|i| match i {
                    ParamValue::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            Some(ParamValue::Str(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }
}

/// A method's `parameters` definition, compiled once at load: checking a query string walks
/// these structs instead of looking names up in the JSON schema on every request.
#[derive(Debug, Clone, Default)]
pub(crate) struct ParamsSchema {
    /// In the definition's order, which is the order errors are found in.
    params: Vec<Param>,
    required: Vec<String>,
}

#[derive(Debug, Clone)]
struct Param {
    name: String,
    kind: Kind,
    default: Option<ParamValue>,
}

#[derive(Debug, Clone)]
enum Kind {
    Scalar(Scalar),
    /// A repeated parameter: `maxLength` bounds the number of items.
    Array {
        items: Scalar,
        max_items: Option<i64>,
    },
}

/// The checks on one value: its type and the constraints the lexicon gives it.
#[derive(Debug, Clone)]
struct Scalar {
    ty: ScalarType,
    minimum: Option<i64>,
    maximum: Option<i64>,
    one_of: Option<Vec<String>>,
    min_length: Option<i64>,
    max_length: Option<i64>,
    format: Option<String>,
}

#[derive(Debug, Clone, Copy)]
enum ScalarType {
    Str,
    Int,
    Bool,
}

impl ParamsSchema {
    /// Compiles a `parameters` definition (`{type: "params", properties, required}`).
    pub(crate) fn compile(schema: &Value) -> ParamsSchema {
        let params = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| props.iter().map(|(name, prop)| Param::compile(name, prop)).collect())
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        ParamsSchema { params, required }
    }

    /// Parses raw query-string pairs. Unknown parameters are ignored, as XRPC asks; a scalar
    /// parameter given twice is an error.
    pub(crate) fn parse<K: AsRef<str>, V: AsRef<str>>(&self, raw: &[(K, V)]) -> Result<Params, ValidationError> {
        let mut out = BTreeMap::new();
        for param in &self.params {
            let mut given = raw.iter().filter(|(k, _)| k.as_ref() == param.name).map(|(_, v)| v.as_ref());
            let Some(first) = given.next() else {
                if let Some(default) = &param.default {
                    out.insert(param.name.clone(), default.clone());
                }
                continue;
            };
            let value = match &param.kind {
                Kind::Scalar(scalar) => {
                    if given.next().is_some() {
                        return Err(ValidationError::new(param.name.as_str(), "given more than once"));
                    }
                    scalar.parse(first, &param.name)?
                }
                Kind::Array { items, max_items } => {
                    let values = std::iter::once(first)
                        .chain(given)
                        .enumerate()
                        .map(|(i, raw)| items.parse(raw, &format!("{}[{i}]", param.name)))
                        .collect::<Result<Vec<_>, _>>()?;
                    if let Some(max) = max_items.filter(|max| values.len() as i64 > *max) {
                        return Err(ValidationError::new(param.name.as_str(), format!("must have at most {max} items")));
                    }
                    ParamValue::List(values)
                }
            };
            out.insert(param.name.clone(), value);
        }
        if let Some(missing) = self.required.iter().find(|name| !out.contains_key(name.as_str())) {
            return Err(ValidationError::new(missing.as_str(), "required parameter missing"));
        }
        Ok(Params(out))
    }
}

impl Param {
    fn compile(name: &str, prop: &Value) -> Param {
        let kind = if prop.get("type").and_then(Value::as_str) == Some("array") {
            Kind::Array {
                items: Scalar::compile(prop.get("items").unwrap_or(&Value::Null)),
                max_items: prop.get("maxLength").and_then(Value::as_i64),
            }
        } else {
            Kind::Scalar(Scalar::compile(prop))
        };
        let default = match prop.get("default") {
            Some(Value::Number(n)) => n.as_i64().map(ParamValue::Int),
            Some(Value::Bool(b)) => Some(ParamValue::Bool(*b)),
            Some(Value::String(s)) => Some(ParamValue::Str(s.clone())),
            _ => None,
        };
        Param { name: name.to_owned(), kind, default }
    }
}

impl Scalar {
    fn compile(schema: &Value) -> Scalar {
        let ty = match schema.get("type").and_then(Value::as_str) {
            Some("integer") => ScalarType::Int,
            Some("boolean") => ScalarType::Bool,
            _ => ScalarType::Str,
        };
        Scalar {
            ty,
            minimum: schema.get("minimum").and_then(Value::as_i64),
            maximum: schema.get("maximum").and_then(Value::as_i64),
            one_of: schema
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| values.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
            min_length: schema.get("minLength").and_then(Value::as_i64),
            max_length: schema.get("maxLength").and_then(Value::as_i64),
            format: schema.get("format").and_then(Value::as_str).map(str::to_owned),
        }
    }

    /// Parses one raw value and checks it; `name` is the path errors name.
    fn parse(&self, raw: &str, name: &str) -> Result<ParamValue, ValidationError> {
        match self.ty {
            ScalarType::Int => {
                let n: i64 = raw.trim().parse().map_err(|_| ValidationError::new(name, format!("expected an integer, got {raw:?}")))?;
                if let Some(min) = self.minimum.filter(|min| n < *min) {
                    return Err(ValidationError::new(name, format!("must be at least {min}")));
                }
                if let Some(max) = self.maximum.filter(|max| n > *max) {
                    return Err(ValidationError::new(name, format!("must be at most {max}")));
                }
                Ok(ParamValue::Int(n))
            }
            ScalarType::Bool => match raw {
                "true" | "1" => Ok(ParamValue::Bool(true)),
                "false" | "0" => Ok(ParamValue::Bool(false)),
                _ => Err(ValidationError::new(name, format!("expected true or false, got {raw:?}"))),
            },
            ScalarType::Str => {
                if let Some(values) = self.one_of.as_ref().filter(|values| !values.iter().any(|v| v == raw)) {
                    return Err(ValidationError::new(name, format!("must be one of {}", values.join(", "))));
                }
                if let Some(min) = self.min_length.filter(|min| (raw.chars().count() as i64) < *min) {
                    return Err(ValidationError::new(name, format!("must be at least {min} characters")));
                }
                if let Some(max) = self.max_length.filter(|max| raw.chars().count() as i64 > *max) {
                    return Err(ValidationError::new(name, format!("must be at most {max} characters")));
                }
                if let Some(format) = self.format.as_deref().filter(|format| !formats::check(format, raw)) {
                    return Err(ValidationError::new(name, format!("must be a valid {format}")));
                }
                Ok(ParamValue::Str(raw.to_owned()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{LexiconError, Lexicons};

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn types_defaults_and_errors() {
        let lex = Lexicons::builtin();
        let nsid = "pub.svc.eprint.searchSubmissions";
        let p = lex
            .validate_params(
                nsid,
                &pairs(&[("query", "graphs"), ("fields", "cs.LG"), ("fields", "cs.AI"), ("limit", "5"), ("x", "ignored")]),
            )
            .unwrap();
        assert_eq!(p.str("query"), Some("graphs"));
        assert_eq!(p.strs("fields"), vec!["cs.LG", "cs.AI"]);
        assert_eq!(p.int("limit"), Some(5));
        assert_eq!(p.str("sort"), Some("relevance"));
        for (bad, what) in [
            (vec![("limit", "5")], "query"),
            (vec![("query", "x"), ("limit", "0")], "limit"),
            (vec![("query", "x"), ("limit", "101")], "limit"),
            (vec![("query", "x"), ("limit", "ten")], "limit"),
            (vec![("query", "x"), ("sortBy", "random")], "sortBy"),
            (vec![("query", "x"), ("authors", "nope")], "authors[0]"),
            (vec![("query", "x"), ("query", "y")], "query"),
        ] {
            match lex.validate_params(nsid, &pairs(&bad)) {
                Err(LexiconError::Invalid(e)) => assert_eq!(e.path, what, "{e}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
