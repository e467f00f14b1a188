//! Validation of values against lexicon definitions.

use serde_json::Value;

use crate::{formats, Lexicons, ValidationError};

pub(crate) struct Validator<'a> {
    pub lexicons: &'a Lexicons,
    /// Whether an integer may come as a float with no fraction (`228.0`): in a method's JSON
    /// input, as JSON writers print numbers, yes; in a record, whose data model has no
    /// floats, no.
    pub integral_floats: bool,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn err<T>(path: &str, message: impl Into<String>) -> Result<T, ValidationError> {
    Err(ValidationError::new(path, message))
}

fn int_prop(schema: &Value, key: &str) -> Option<i64> {
    schema.get(key).and_then(Value::as_i64)
}

/// The integer a JSON number holds: an integer, or a float with no fraction within the
/// exactly representable range (`228.0`, as some JSON writers print integers).
pub fn integral(value: &Value) -> Option<i64> {
    // Integral floats within the 64-bit range count (JSON Schema's integers include 2.0).
    value
        .as_i64()
        .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && (i64::MIN as f64..-(i64::MIN as f64)).contains(f)).map(|f| f as i64))
}

impl Validator<'_> {
    /// Validates `value` against `schema`, a definition of the document `base`.
    pub fn value(&self, base: &str, schema: &Value, value: &Value, path: &str) -> Result<(), ValidationError> {
        let kind = schema.get("type").and_then(Value::as_str).unwrap_or("unknown");
        match kind {
            "object" | "params" => self.object(base, schema, value, path),
            "record" => match schema.get("record") {
                Some(inner) => self.value(base, inner, value, path),
                None => Ok(()),
            },
            "ref" => {
                let reference = schema.get("ref").and_then(Value::as_str).unwrap_or_default();
                let Some((nsid, def)) = self.lexicons.resolve(base, reference) else {
                    return err(path, format!("unresolvable reference {reference}"));
                };
                self.value(&nsid, def, value, path)
            }
            "union" => self.union(base, schema, value, path),
            "array" => {
                let Value::Array(items) = value else { return err(path, format!("expected array, got {}", type_name(value))) };
                if let Some(min) = int_prop(schema, "minLength") {
                    if (items.len() as i64) < min {
                        return err(path, format!("must have at least {min} items"));
                    }
                }
                if let Some(max) = int_prop(schema, "maxLength") {
                    if items.len() as i64 > max {
                        return err(path, format!("must have at most {max} items"));
                    }
                }
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.value(base, item_schema, item, &format!("{path}[{i}]"))?;
                    }
                }
                Ok(())
            }
            "string" | "token" => {
                let Value::String(s) = value else { return err(path, format!("expected string, got {}", type_name(value))) };
                string(schema, s, path)
            }
            "integer" => {
                let n = if self.integral_floats { integral(value) } else { value.as_i64() };
                let Some(n) = n else { return err(path, format!("expected integer, got {}", type_name(value))) };
                integer(schema, n, path)
            }
            "boolean" => match value {
                Value::Bool(_) => Ok(()),
                other => err(path, format!("expected boolean, got {}", type_name(other))),
            },
            "blob" => blob(schema, value, path),
            "cid-link" => match value.get("$link").and_then(Value::as_str) {
                Some(cid) if formats::is_cid(cid) => Ok(()),
                _ => err(path, "expected a cid-link object {\"$link\": cid}"),
            },
            "bytes" => match value.get("$bytes").and_then(Value::as_str) {
                Some(_) => Ok(()),
                None => err(path, "expected a bytes object {\"$bytes\": base64}"),
            },
            _ => Ok(()),
        }
    }

    fn object(&self, base: &str, schema: &Value, value: &Value, path: &str) -> Result<(), ValidationError> {
        let Value::Object(map) = value else { return err(path, format!("expected object, got {}", type_name(value))) };
        let nullable: Vec<&str> =
            schema.get("nullable").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                match map.get(key) {
                    None => return err(&join(path, key), "required field missing"),
                    Some(Value::Null) if !nullable.contains(&key) => return err(&join(path, key), "required field is null"),
                    _ => {}
                }
            }
        }
        if let Some(Value::Object(props)) = schema.get("properties") {
            for (key, prop) in props {
                match map.get(key) {
                    None => {}
                    Some(Value::Null) if nullable.contains(&key.as_str()) => {}
                    Some(v) => self.value(base, prop, v, &join(path, key))?,
                }
            }
        }
        Ok(())
    }

    fn union(&self, base: &str, schema: &Value, value: &Value, path: &str) -> Result<(), ValidationError> {
        let refs: Vec<&str> =
            schema.get("refs").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let normalize = |r: &str| if let Some(name) = r.strip_prefix('#') { format!("{base}#{name}") } else { r.to_owned() };
        let Some(t) = value.get("$type").and_then(Value::as_str) else {
            // Members that carry a `type` const (selectors, linked entities, rich-text items)
            // are recognized by it when a writer left `$type` out.
            let kind = value.get("type").and_then(Value::as_str);
            let member = kind.and_then(|kind| {
                refs.iter().find_map(|r| {
                    let (nsid, def) = self.lexicons.resolve(base, &normalize(r))?;
                    (def.pointer("/properties/type/const").and_then(Value::as_str) == Some(kind)).then_some((nsid, def))
                })
            });
            return match member {
                Some((nsid, def)) => self.value(&nsid, def, value, path),
                None => err(path, "union member must have a $type"),
            };
        };
        let wanted = t.strip_suffix("#main").unwrap_or(t);
        match refs.iter().find(|r| normalize(r).trim_end_matches("#main") == wanted) {
            Some(r) => {
                let reference = normalize(r);
                let Some((nsid, def)) = self.lexicons.resolve(base, &reference) else {
                    return err(path, format!("unresolvable reference {reference}"));
                };
                self.value(&nsid, def, value, path)
            }
            None if schema.get("closed").and_then(Value::as_bool) == Some(true) => {
                err(path, format!("$type {t} is not one of the union's members"))
            }
            None => Ok(()),
        }
    }
}

fn string(schema: &Value, s: &str, path: &str) -> Result<(), ValidationError> {
    if let Some(c) = schema.get("const").and_then(Value::as_str) {
        if s != c {
            return err(path, format!("must be {c:?}"));
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        if !values.iter().any(|v| v.as_str() == Some(s)) {
            let list: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            return err(path, format!("must be one of {}", list.join(", ")));
        }
    }
    let chars = s.chars().count() as i64;
    if let Some(max) = int_prop(schema, "maxLength").or_else(|| int_prop(schema, "maxGraphemes")) {
        if chars > max {
            return err(path, format!("must be at most {max} characters"));
        }
    }
    if let Some(min) = int_prop(schema, "minLength").or_else(|| int_prop(schema, "minGraphemes")) {
        if chars < min {
            return err(path, format!("must be at least {min} characters"));
        }
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        if !formats::check(format, s) {
            return err(path, format!("must be a valid {format}"));
        }
    }
    Ok(())
}

fn integer(schema: &Value, n: i64, path: &str) -> Result<(), ValidationError> {
    if let Some(min) = int_prop(schema, "minimum") {
        if n < min {
            return err(path, format!("must be at least {min}"));
        }
    }
    if let Some(max) = int_prop(schema, "maximum") {
        if n > max {
            return err(path, format!("must be at most {max}"));
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        if !values.iter().any(|v| v.as_i64() == Some(n)) {
            return err(path, "is not an allowed value");
        }
    }
    Ok(())
}

fn blob(schema: &Value, value: &Value, path: &str) -> Result<(), ValidationError> {
    let Value::Object(map) = value else { return err(path, "expected a blob reference object") };
    let (cid, mime, size) = if map.get("$type").and_then(Value::as_str) == Some("blob") {
        (
            map.get("ref").and_then(|r| r.get("$link")).and_then(Value::as_str),
            map.get("mimeType").and_then(Value::as_str),
            map.get("size").and_then(Value::as_i64),
        )
    } else {
        // The legacy blob form: {cid, mimeType}.
        (map.get("cid").and_then(Value::as_str), map.get("mimeType").and_then(Value::as_str), Some(0))
    };
    let Some(cid) = cid.filter(|c| formats::is_cid(c)) else { return err(path, "blob reference needs ref.$link with a CID") };
    let Some(mime) = mime else { return err(path, "blob reference needs a mimeType") };
    let Some(size) = size.filter(|s| *s >= 0) else { return err(path, "blob reference needs a size") };
    let _ = cid;
    if let Some(accept) = schema.get("accept").and_then(Value::as_array) {
        let ok = accept.iter().filter_map(Value::as_str).any(|pattern| match pattern.strip_suffix("/*") {
            Some(prefix) => mime.starts_with(prefix) && mime.as_bytes().get(prefix.len()) == Some(&b'/'),
            None => pattern == "*/*" || pattern == mime,
        });
        if !ok {
            return err(path, format!("mimeType {mime} is not accepted"));
        }
    }
    if let Some(max) = int_prop(schema, "maxSize") {
        if size > max {
            return err(path, format!("blob is larger than {max} bytes"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{LexiconError, Lexicons, SUBMISSION};

    fn base() -> serde_json::Value {
        json!({
            "$type": "pub.svc.eprint.submission",
            "title": "A title",
            "abstract": "An abstract.",
            "authors": [{"name": "Ada", "did": "did:plc:abc", "order": 1}],
            "fields": ["cs.DL"],
            "createdAt": "2025-01-02T03:04:05.000Z"
        })
    }

    fn invalid(record: serde_json::Value) -> String {
        match Lexicons::builtin().validate_record(SUBMISSION, &record) {
            Err(LexiconError::Invalid(e)) => e.to_string(),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn an_integer_may_be_written_with_a_zero_fraction_and_not_with_another() {
        assert_eq!(crate::integral(&json!(228.0)), Some(228));
        assert_eq!(crate::integral(&json!(-3)), Some(-3));
        assert_eq!(crate::integral(&json!(228.5)), None);
        assert_eq!(crate::integral(&json!(1e18)), Some(1_000_000_000_000_000_000));
        assert_eq!(crate::integral(&json!(1e19)), None, "beyond 64 bits");
        assert_eq!(crate::integral(&json!(1e300)), None);
        assert_eq!(crate::integral(&json!("7")), None);
        // In a method's input, yes; in a record (no floats in its data model), no.
        let input = json!({"uri": "at://did:plc:abc/pub.svc.eprint.submission/3k", "position": 2.0});
        assert!(Lexicons::builtin().validate_input("pub.svc.metrics.recordSearchClick", &input).is_ok());
        let mut record = base();
        record["authors"][0]["order"] = json!(1.0);
        assert!(invalid(record).contains("expected integer"));
    }

    #[test]
    fn accepts_the_contract_and_the_rich_shape() {
        let lex = Lexicons::builtin();
        lex.validate_record(SUBMISSION, &base()).unwrap();
        let rich = json!({
            "title": "Rich",
            "abstract": [{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": "Hi"}],
            "abstractPlainText": "Hi",
            "document": {"$type": "blob", "ref": {"$link": "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}, "mimeType": "application/pdf", "size": 10},
            "authors": [{"name": "Bo", "order": 1, "affiliations": [{"name": "Uni"}]}],
            "submittedBy": "did:plc:abc",
            "licenseSlug": "CC-BY-4.0",
            "fieldUris": ["at://did:plc:gov/pub.svc.graph.node/abc"],
            "createdAt": "2025-01-02T03:04:05Z"
        });
        lex.validate_record(SUBMISSION, &rich).unwrap();
    }

    #[test]
    fn names_the_offending_path() {
        let mut r = base();
        r.as_object_mut().unwrap().remove("title");
        assert!(invalid(r).starts_with("title: required"));
        let mut r = base();
        r["authors"] = json!([]);
        assert!(invalid(r).starts_with("authors: must have at least 1"));
        let mut r = base();
        r["authors"][0]["did"] = json!("not-a-did");
        assert!(invalid(r).starts_with("authors[0].did: must be a valid did"));
        let mut r = base();
        r["createdAt"] = json!("yesterday");
        assert!(invalid(r).contains("createdAt"));
        let mut r = base();
        r["title"] = json!(42);
        assert!(invalid(r).contains("expected string"));
        let mut r = base();
        r["authors"][0]["affiliations"] = json!([{"rorId": "x"}]);
        assert!(invalid(r).starts_with("authors[0].affiliations[0].name"));
        let mut r = base();
        r["$type"] = json!("pub.svc.review.comment");
        assert!(invalid(r).starts_with("$type"));
        let mut r = base();
        r["pdfBlob"] = json!({"$type": "blob", "ref": {"$link": "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}, "mimeType": "image/png", "size": 1});
        assert!(invalid(r).contains("not accepted"));
    }
}
