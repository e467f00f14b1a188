//! Rendering the OpenAPI 3.1 document from the lexicons.

use serde_json::{json, Map, Value};

use crate::{Lexicons, MethodKind};

/// A route that is not an XRPC method (REST, health, identity), described by its caller.
#[derive(Debug, Clone)]
pub struct ExtraRoute {
    /// The OpenAPI path, e.g. `/api/v1/eprints/{uri}`.
    pub path: String,
    /// The lowercase HTTP method.
    pub method: &'static str,
    /// The OpenAPI operation object.
    pub operation: Value,
}

fn component_name(nsid: &str, def: &str) -> String {
    if def == "main" {
        nsid.to_owned()
    } else {
        format!("{nsid}.{def}")
    }
}

fn reference(base: &str, r: &str) -> Value {
    let (nsid, def) = match r.split_once('#') {
        Some(("", def)) => (base, def),
        Some((nsid, def)) => (nsid, def),
        None => (r, "main"),
    };
    json!({"$ref": format!("#/components/schemas/{}", component_name(nsid, def))})
}

/// Converts a lexicon schema into a JSON Schema (the dialect of OpenAPI 3.1).
fn schema(base: &str, s: &Value) -> Value {
    let kind = s.get("type").and_then(Value::as_str).unwrap_or("unknown");
    let mut out = Map::new();
    match kind {
        "object" | "params" => {
            out.insert("type".into(), json!("object"));
            if let Some(req) = s.get("required") {
                out.insert("required".into(), req.clone());
            }
            let props: Map<String, Value> = s
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), schema(base, v))).collect())
                .unwrap_or_default();
            out.insert("properties".into(), Value::Object(props));
        }
        "record" => return s.get("record").map(|r| schema(base, r)).unwrap_or(json!({})),
        "ref" => return reference(base, s.get("ref").and_then(Value::as_str).unwrap_or_default()),
        "union" => {
            let refs: Vec<Value> = s
                .get("refs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(|r| reference(base, r)).collect())
                .unwrap_or_default();
            out.insert("anyOf".into(), Value::Array(refs));
        }
        "array" => {
            out.insert("type".into(), json!("array"));
            if let Some(items) = s.get("items") {
                out.insert("items".into(), schema(base, items));
            }
            for (from, to) in [("minLength", "minItems"), ("maxLength", "maxItems")] {
                if let Some(v) = s.get(from) {
                    out.insert(to.into(), v.clone());
                }
            }
        }
        "string" | "token" => {
            out.insert("type".into(), json!("string"));
            for key in ["maxLength", "minLength", "enum", "const", "default"] {
                if let Some(v) = s.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            if let Some(f) = s.get("format").and_then(Value::as_str) {
                let f = if f == "datetime" { "date-time" } else { f };
                out.insert("format".into(), json!(f));
            }
            if let Some(known) = s.get("knownValues") {
                out.insert("examples".into(), known.clone());
            }
        }
        "integer" => {
            out.insert("type".into(), json!("integer"));
            for key in ["minimum", "maximum", "enum", "const", "default"] {
                if let Some(v) = s.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
        "boolean" => {
            out.insert("type".into(), json!("boolean"));
            if let Some(v) = s.get("default") {
                out.insert("default".into(), v.clone());
            }
        }
        "blob" => {
            return json!({
                "type": "object",
                "required": ["$type", "ref", "mimeType", "size"],
                "properties": {
                    "$type": {"const": "blob"},
                    "ref": {"type": "object", "properties": {"$link": {"type": "string"}}},
                    "mimeType": {"type": "string"},
                    "size": {"type": "integer"}
                }
            })
        }
        "cid-link" => return json!({"type": "object", "properties": {"$link": {"type": "string"}}}),
        "bytes" => return json!({"type": "object", "properties": {"$bytes": {"type": "string"}}}),
        _ => {}
    }
    if let Some(d) = s.get("description") {
        out.insert("description".into(), d.clone());
    }
    Value::Object(out)
}

fn parameters(base: &str, params: Option<&Value>) -> Vec<Value> {
    let Some(params) = params else { return Vec::new() };
    let required: Vec<&str> =
        params.get("required").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    params
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let mut param = json!({
                        "name": name,
                        "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": schema(base, p),
                    });
                    if p.get("type").and_then(Value::as_str) == Some("array") {
                        param["style"] = json!("form");
                        param["explode"] = json!(true);
                    }
                    if let Some(d) = p.get("description") {
                        param["description"] = d.clone();
                    }
                    param
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn render(lex: &Lexicons, title: &str, version: &str, extra: &[ExtraRoute]) -> Value {
    let mut components = Map::new();
    components.insert(
        "XrpcError".into(),
        json!({
            "type": "object",
            "required": ["error", "message"],
            "properties": {"error": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}
        }),
    );
    for (nsid, doc) in &lex.docs {
        for (def_name, def) in doc.get("defs").and_then(Value::as_object).into_iter().flatten() {
            let kind = def.get("type").and_then(Value::as_str).unwrap_or_default();
            if matches!(kind, "query" | "procedure" | "subscription") {
                continue;
            }
            components.insert(component_name(nsid, def_name), schema(nsid, def));
        }
    }
    let error_response = |description: &str| json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/XrpcError"}}}});
    let mut paths = Map::new();
    for (nsid, kind) in lex.methods() {
        let Some(main) = lex.document(&nsid).and_then(|d| d.pointer("/defs/main")) else { continue };
        let output = main.pointer("/output/schema").map(|s| schema(&nsid, s)).unwrap_or(json!({"type": "object"}));
        let mut op = json!({
            "operationId": nsid,
            "summary": main.get("description").cloned().unwrap_or(json!(nsid)),
            "tags": [nsid.rsplit_once('.').map_or("xrpc", |(ns, _)| ns)],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": output}}},
                "400": error_response("InvalidRequest"),
                "404": error_response("RecordNotFound"),
                "500": error_response("InternalError")
            }
        });
        let method = match kind {
            MethodKind::Query => {
                op["parameters"] = Value::Array(parameters(&nsid, main.get("parameters")));
                "get"
            }
            MethodKind::Procedure => {
                if let Some(input) = main.pointer("/input/schema") {
                    op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": schema(&nsid, input)}}});
                }
                "post"
            }
        };
        paths.insert(format!("/xrpc/{nsid}"), json!({ method: op }));
    }
    for route in extra {
        let entry = paths.entry(route.path.clone()).or_insert_with(|| json!({}));
        entry[route.method] = route.operation.clone();
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": components}
    })
}

#[cfg(test)]
mod tests {
    use crate::Lexicons;

    #[test]
    fn every_method_is_a_path_and_every_ref_resolves() {
        let lex = Lexicons::builtin();
        let doc = lex.openapi("svc", "0", &[]);
        assert_eq!(doc["openapi"], "3.1.0");
        for (nsid, _) in lex.methods() {
            assert!(doc["paths"].get(format!("/xrpc/{nsid}")).is_some(), "{nsid}");
        }
        let text = doc.to_string();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &piece[..piece.find('"').unwrap()];
            assert!(doc["components"]["schemas"].get(name).is_some(), "dangling ref {name}");
        }
    }
}
