//! The OpenAPI 3.1 document: the XRPC methods from the lexicons, plus the REST, health and
//! identity routes described here.

use lexicons::{ExtraRoute, Lexicons};
use serde_json::{json, Value};

fn op(id: &str, summary: &str, params: Value, rest: bool) -> Value {
    let error_schema = if rest {
        json!({"type": "object", "properties": {"error": {"type": "object", "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}})
    } else {
        json!({"$ref": "#/components/schemas/XrpcError"})
    };
    let err = |d: &str| json!({"description": d, "content": {"application/json": {"schema": error_schema.clone()}}});
    json!({
        "operationId": id,
        "summary": summary,
        "parameters": params,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
            "400": err("bad request"),
            "404": err("not found"),
            "500": err("server error")
        }
    })
}

fn q(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

fn path(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}, "description": description})
}

/// The routes that are not XRPC methods.
pub fn extra_routes() -> Vec<ExtraRoute> {
    let search_params = json!([
        q("q", json!({"type": "string"}), "search words; empty lists everything"),
        q("field", json!({"type": "string"}), "field code (repeat or comma-separate for several)"),
        q("author", json!({"type": "string", "format": "did"}), "author DID (repeat or comma-separate for several)"),
        q("from", json!({"type": "string"}), "ISO 8601 date or datetime, inclusive"),
        q("to", json!({"type": "string"}), "ISO 8601 date or datetime, inclusive"),
        q("sort", json!({"type": "string", "enum": ["relevance", "date", "citations"]}), "order"),
        q("limit", json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 25}), "page size"),
        q("cursor", json!({"type": "string"}), "opaque cursor of the previous page"),
    ]);
    let route = |path: &str, operation: Value| ExtraRoute { path: path.to_owned(), method: "get", operation };
    vec![
        route("/api/v1/eprints", op("rest.listEprints", "Search or list eprints", search_params.clone(), true)),
        route("/api/v1/search", op("rest.search", "Search eprints (alias of /api/v1/eprints)", search_params, true)),
        route("/api/v1/eprints/{uri}", op("rest.getEprint", "One eprint", json!([path("uri", "URL-encoded AT URI")]), true)),
        route(
            "/api/v1/eprints/{uri}/integrations",
            op(
                "rest.getIntegrations",
                "Integration data of an eprint (not implemented yet: 501)",
                json!([path("uri", "URL-encoded AT URI")]),
                true,
            ),
        ),
        route(
            "/api/v1/authors/{did}/eprints",
            op(
                "rest.listAuthorEprints",
                "Eprints of an author, newest first",
                json!([
                    path("did", "author DID"),
                    q("limit", json!({"type": "integer", "minimum": 1, "maximum": 100}), "page size"),
                    q("cursor", json!({"type": "string"}), "cursor")
                ]),
                true,
            ),
        ),
        route("/health/liveness", op("health.liveness", "200 while the process runs", json!([]), false)),
        route("/health/readiness", op("health.readiness", "200 when log, store and search index answer", json!([]), false)),
        route("/.well-known/did.json", op("identity.didDocument", "The service DID document", json!([]), false)),
        route("/openapi.json", op("spec.openapi", "This document", json!([]), false)),
    ]
}

/// Renders the whole document.
pub fn document(lexicons: &Lexicons) -> Value {
    lexicons.openapi("svc", env!("CARGO_PKG_VERSION"), &extra_routes())
}
