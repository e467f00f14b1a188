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

/// The regular expression (ECMA 262, as JSON Schema reads `pattern`) of each string format
/// svc checks, matching exactly what [`crate::formats::check`] accepts, so that a client
/// generated from the document sends what svc takes. AT URIs are those of records named by
/// DID (`at://did/collection/rkey`): the only AT URIs svc's operations take.
pub fn format_pattern(format: &str) -> Option<&'static str> {
    Some(match format {
        "did" => DID_PATTERN,
        "at-uri" => RECORD_URI_PATTERN,
        "cid" => "^(b[a-z2-7]{7,255}|Qm[A-Za-z0-9]{44})$",
        "nsid" => "^[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63})+\\.[A-Za-z][A-Za-z0-9]{0,62}$",
        "handle" => "^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$",
        "tid" => "^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$",
        "record-key" => "^[A-Za-z0-9_:~-][A-Za-z0-9._:~-]{0,511}$",
        _ => return None,
    })
}

/// A DID: `did:<method>:<id>`.
pub const DID_PATTERN: &str = "^did:[a-z]+:[A-Za-z0-9._:%-]*[A-Za-z0-9._-]$";

/// The AT URI of a record named by DID: `at://<did>/<collection NSID>/<record key>`.
pub const RECORD_URI_PATTERN: &str = "^at://did:[a-z]+:[A-Za-z0-9._:%-]*[A-Za-z0-9._-]/[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63})+\\.[A-Za-z][A-Za-z0-9]{0,62}/[A-Za-z0-9_:~-][A-Za-z0-9._:~-]{0,511}$";

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
                if let Some(pattern) = format_pattern(f) {
                    out.insert("pattern".into(), json!(pattern));
                }
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
            // A lexicon integer is 64-bit: a larger one is refused, so the document says so.
            out.entry("minimum").or_insert(json!(i64::MIN));
            out.entry("maximum").or_insert(json!(i64::MAX));
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
        // An output that is not JSON (a PDF) is bytes of its encoding.
        let encoding = main.pointer("/output/encoding").and_then(Value::as_str).unwrap_or("application/json");
        let output_content = if encoding == "application/json" {
            json!({"application/json": {"schema": output}})
        } else {
            json!({encoding: {"schema": {"type": "string", "format": "binary"}}})
        };
        let mut op = json!({
            "operationId": nsid,
            "summary": main.get("description").cloned().unwrap_or(json!(nsid)),
            "tags": [nsid.rsplit_once('.').map_or("xrpc", |(ns, _)| ns)],
            "responses": {
                "200": {"description": "OK", "content": output_content},
                "400": error_response("InvalidRequest: a parameter or the body is invalid"),
                "404": error_response("RecordNotFound"),
                "405": error_response("InvalidRequest: wrong HTTP method (the Allow header names the right one)"),
                "414": error_response("InvalidRequest: the URI is too long"),
                "500": error_response("InternalError"),
                "503": error_response("ServiceUnavailable: a dependency is unavailable, or the request timed out")
            }
        });
        let method = match kind {
            MethodKind::Query => {
                op["parameters"] = Value::Array(parameters(&nsid, main.get("parameters")));
                "get"
            }
            MethodKind::Procedure => {
                if let Some(input) = main.pointer("/input/schema") {
                    // A body is required when the input requires a field; otherwise svc takes
                    // a missing body as an empty object.
                    let required = input.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
                    op["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": schema(&nsid, input)}}});
                }
                // Every procedure svc serves acts for a caller: a service-auth token.
                op["security"] = json!([{"serviceAuth": []}]);
                op["responses"]["401"] = error_response("AuthRequired, InvalidToken or ExpiredToken: no valid service-auth token");
                op["responses"]["403"] = error_response("Forbidden: the caller may not act on this record");
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
        "components": {
            "schemas": components,
            "securitySchemes": {
                "serviceAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "An AT Protocol service-auth token (com.atproto.server.getServiceAuth): aud = svc's DID, lxm = the method, signed by the issuer's #atproto key; each token is accepted once."
                },
                "session": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "An svc access token (typ at+jwt, ES256, one hour) from /oauth/token; docs/auth.md."
                }
            }
        }
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

    /// Each pattern accepts exactly what svc's format check accepts, on both sides of it.
    #[test]
    fn patterns_agree_with_the_format_checks() {
        let cases: &[(&str, &[&str])] = &[
            (
                "did",
                &[
                    "did:plc:ewvi7nxzyoun6zhxrhs64oiz",
                    "did:web:example.com",
                    "did:plc:",
                    "did::x",
                    "did:PLC:x",
                    "did:plc:a b",
                    "did:plc:x:",
                    "did:plc:x%",
                    "",
                ],
            ),
            (
                "cid",
                &[
                    "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
                    "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
                    "xyz",
                    "bafy",
                    "BAFYREIE5737",
                ],
            ),
            (
                "nsid",
                &["pub.svc.eprint.submission", "com.example.fooBar", "a-b.c.d", "pub.svc", "pub..svc.x", "pub.svc.x-y", "pub.svc.1x", ""],
            ),
            ("tid", &["3lbxqprzvpc2a", "3lbxqprzvpc2", "zzzzzzzzzzzzz"]),
            ("record-key", &["3kabc", "self", "a.b", ".", "..", "bad key", ""]),
            ("handle", &["alice.test", "a-b.c.example", "alice", "-a.test", "a-.test", "alice.1test", "a_b.test", "a..test"]),
        ];
        for (format, values) in cases {
            let pattern = super::format_pattern(format).unwrap();
            let re = regex_lite::Regex::new(pattern).unwrap();
            for v in *values {
                assert_eq!(re.is_match(v), crate::formats::check(format, v), "{format} {v:?} against {pattern}");
            }
        }
        let re = regex_lite::Regex::new(super::RECORD_URI_PATTERN).unwrap();
        for (uri, ok) in [
            ("at://did:plc:abc/pub.svc.eprint.submission/3kabc", true),
            ("at://alice.test/pub.svc.eprint.submission/3kabc", false),
            ("at://did:plc:abc/pub.svc.eprint.submission", false),
            ("at://did:plc:abc/notnsid/x", false),
            ("at://did:plc:abc/pub.svc.a.b/bad key", false),
        ] {
            assert_eq!(re.is_match(uri), ok, "{uri}");
            if ok {
                assert!(crate::formats::parse_at_uri(uri).is_some_and(|u| u.rkey.is_some() && crate::formats::is_did(u.authority)));
            }
        }
    }
}
