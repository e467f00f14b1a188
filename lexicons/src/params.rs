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

fn scalar(schema: &Value, raw: &str, name: &str) -> Result<ParamValue, ValidationError> {
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("string");
    let value = match kind {
        "integer" => {
            let n: i64 = raw.trim().parse().map_err(|_| ValidationError::new(name, format!("expected an integer, got {raw:?}")))?;
            ParamValue::Int(n)
        }
        "boolean" => match raw {
            "true" | "1" => ParamValue::Bool(true),
            "false" | "0" => ParamValue::Bool(false),
            _ => return Err(ValidationError::new(name, format!("expected true or false, got {raw:?}"))),
        },
        _ => ParamValue::Str(raw.to_owned()),
    };
    check(schema, &value, name)?;
    Ok(value)
}

fn check(schema: &Value, value: &ParamValue, name: &str) -> Result<(), ValidationError> {
    match value {
        ParamValue::Int(n) => {
            if let Some(min) = schema.get("minimum").and_then(Value::as_i64) {
                if *n < min {
                    return Err(ValidationError::new(name, format!("must be at least {min}")));
                }
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_i64) {
                if *n > max {
                    return Err(ValidationError::new(name, format!("must be at most {max}")));
                }
            }
        }
        ParamValue::Str(s) => {
            if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                if !values.iter().any(|v| v.as_str() == Some(s)) {
                    let list: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                    return Err(ValidationError::new(name, format!("must be one of {}", list.join(", "))));
                }
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_i64) {
                if s.chars().count() as i64 > max {
                    return Err(ValidationError::new(name, format!("must be at most {max} characters")));
                }
            }
            if let Some(format) = schema.get("format").and_then(Value::as_str) {
                if !formats::check(format, s) {
                    return Err(ValidationError::new(name, format!("must be a valid {format}")));
                }
            }
        }
        ParamValue::Bool(_) | ParamValue::List(_) => {}
    }
    Ok(())
}

/// Parses raw query-string pairs against a `params` definition. Unknown parameters are
/// ignored, as XRPC asks; a scalar parameter given twice is an error.
pub(crate) fn parse(schema: &Value, raw: &[(String, String)]) -> Result<Params, ValidationError> {
    let empty = serde_json::Map::new();
    let props = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut out = BTreeMap::new();
    for (name, prop) in props {
        let given: Vec<&str> = raw.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect();
        if given.is_empty() {
            if let Some(default) = prop.get("default") {
                let value = match default {
                    Value::Number(n) => n.as_i64().map(ParamValue::Int),
                    Value::Bool(b) => Some(ParamValue::Bool(*b)),
                    Value::String(s) => Some(ParamValue::Str(s.clone())),
                    _ => None,
                };
                if let Some(v) = value {
                    out.insert(name.clone(), v);
                }
            }
            continue;
        }
        if prop.get("type").and_then(Value::as_str) == Some("array") {
            let item_schema = prop.get("items").cloned().unwrap_or(Value::Null);
            let items = given
                .iter()
                .enumerate()
                .map(|(i, raw)| scalar(&item_schema, raw, &format!("{name}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(max) = prop.get("maxLength").and_then(Value::as_i64) {
                if items.len() as i64 > max {
                    return Err(ValidationError::new(name.as_str(), format!("must have at most {max} items")));
                }
            }
            out.insert(name.clone(), ParamValue::List(items));
        } else {
            if given.len() > 1 {
                return Err(ValidationError::new(name.as_str(), "given more than once"));
            }
            out.insert(name.clone(), scalar(prop, given[0], name)?);
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !out.contains_key(name) {
                return Err(ValidationError::new(name, "required parameter missing"));
            }
        }
    }
    Ok(Params(out))
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
