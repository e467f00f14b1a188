//! The OpenAPI 3.1 document: the XRPC methods from the lexicons, plus the REST, health and
//! identity routes described here.

use lexicons::{ExtraRoute, Lexicons, DID_PATTERN, RECORD_URI_PATTERN};
use serde_json::{json, Value};

/// A date bound as the search operations take it: a date (`YYYY-MM-DD`) or an RFC 3339
/// datetime, with a year from 1000 to 9999.
fn date_bound() -> Value {
    json!({"anyOf": [
        {"type": "string", "format": "date", "pattern": "^[1-9][0-9]{3}-"},
        {"type": "string", "format": "date-time", "pattern": "^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T"}
    ]})
}

/// DIDs separated by commas.
fn did_list() -> Value {
    let one = DID_PATTERN.trim_start_matches('^').trim_end_matches('$');
    json!({"type": "string", "pattern": format!("^{one}(,{one})*$")})
}

fn did() -> Value {
    json!({"type": "string", "format": "did", "pattern": DID_PATTERN})
}

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
            "405": err("wrong HTTP method (the Allow header names the right one)"),
            "414": err("the URI is too long"),
            "500": err("server error"),
            "503": err("a dependency is unavailable, or the request timed out")
        }
    })
}

/// A route answering an HTML page.
fn page(id: &str, summary: &str) -> Value {
    json!({
        "operationId": id,
        "summary": summary,
        "parameters": [],
        "responses": {"200": {"description": "OK", "content": {"text/html": {"schema": {"type": "string"}}}}}
    })
}

fn q(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

fn path(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": schema, "description": description})
}

fn record_uri() -> Value {
    json!({"type": "string", "format": "at-uri", "pattern": RECORD_URI_PATTERN})
}

/// The routes that are not XRPC methods.
pub fn extra_routes() -> Vec<ExtraRoute> {
    let search_params = json!([
        q("q", json!({"type": "string", "maxLength": 1000}), "search words; empty lists everything"),
        q("field", json!({"type": "string", "pattern": "^[^,]+(,[^,]+)*$"}), "field codes, comma-separated (or repeat the parameter)"),
        q("author", did_list(), "author DIDs, comma-separated (or repeat the parameter)"),
        q("from", date_bound(), "ISO 8601 date or RFC 3339 datetime, inclusive"),
        q("to", date_bound(), "ISO 8601 date or RFC 3339 datetime, inclusive (a date includes its whole day)"),
        q("sort", json!({"type": "string", "enum": ["relevance", "date", "citations"]}), "order"),
        q("limit", json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 25}), "page size"),
        q("cursor", json!({"type": "string"}), "opaque cursor of the previous page"),
    ]);
    let route = |path: &str, operation: Value| ExtraRoute { path: path.to_owned(), method: "get", operation };
    vec![
        route("/api/v1/eprints", op("rest.listEprints", "Search or list eprints", search_params.clone(), true)),
        route("/api/v1/search", op("rest.search", "Search eprints (alias of /api/v1/eprints)", search_params, true)),
        route(
            "/api/v1/eprints/{uri}",
            op("rest.getEprint", "One eprint", json!([path("uri", record_uri(), "URL-encoded AT URI of the eprint")]), true),
        ),
        route(
            "/api/v1/eprints/{uri}/integrations",
            op(
                "rest.getIntegrations",
                "What the code and data platforms an eprint links to say of those links (GitHub, GitLab, Zenodo, Software Heritage; datasets as the record gives them), each platform's answer kept an hour",
                json!([path("uri", record_uri(), "URL-encoded AT URI of the eprint")]),
                true,
            ),
        ),
        route(
            "/api/v1/authors/{did}/eprints",
            op(
                "rest.listAuthorEprints",
                "Eprints of an author, newest first",
                json!([
                    path("did", did(), "author DID"),
                    q("limit", json!({"type": "integer", "minimum": 1, "maximum": 100}), "page size"),
                    q("cursor", json!({"type": "string"}), "cursor")
                ]),
                true,
            ),
        ),
        route("/health/liveness", op("health.liveness", "200 while the process runs", json!([]), false)),
        route("/health/readiness", op("health.readiness", "200 when log, store and search index answer", json!([]), false)),
        route("/health", op("health.health", "200 while the process runs: status, timestamp, version, uptime", json!([]), false)),
        route("/ready", op("health.ready", "each backend's status, latency and message; healthy, degraded (200) or unhealthy (503)", json!([]), false)),
        route("/.well-known/did.json", op("identity.didDocument", "The service DID document", json!([]), false)),
        route("/openapi.json", op("spec.openapi", "This document", json!([]), false)),
        route("/docs", page("spec.docs", "An interactive reference over this document (Swagger UI), served by svc")),
    ]
}

/// The query parameters of the XRPC method `nsid` in `doc`.
fn query_params<'a>(doc: &'a mut Value, nsid: &str) -> Option<&'a mut Vec<Value>> {
    doc.pointer_mut(&format!("/paths/~1xrpc~1{nsid}/get/parameters")).and_then(Value::as_array_mut)
}

/// Renders the whole document.
pub fn document(lexicons: &Lexicons) -> Value {
    let mut doc = lexicons.openapi("svc", env!("CARGO_PKG_VERSION"), &extra_routes());
    // What the lexicons cannot state: the date bounds' forms and range, and the aliases the
    // XRPC methods accept (`q` for `query`, `author` for `authors`, `did` for `author`).
    if let Some(list) = query_params(&mut doc, "pub.svc.eprint.searchSubmissions") {
        for param in list.iter_mut() {
            match param["name"].as_str() {
                Some("dateFrom" | "dateTo") => param["schema"] = date_bound(),
                Some("query") => {
                    param["required"] = json!(false);
                    param["description"] = json!("Search words; `*` or an empty string matches every eprint. Required, as `query` or `q`.");
                }
                _ => {}
            }
        }
        list.push(q("q", json!({"type": "string", "maxLength": 1000}), "alias of `query` (used when `query` is absent)"));
        list.push(json!({"name": "author", "in": "query", "required": false, "style": "form", "explode": true,
            "schema": {"type": "array", "maxItems": 20, "items": did()}, "description": "alias of `authors` (used when `authors` is absent)"}));
    }
    if let Some(list) = query_params(&mut doc, "pub.svc.eprint.listByAuthor") {
        for param in list.iter_mut().filter(|p| p["name"] == "author") {
            param["required"] = json!(false);
            param["description"] = json!("The author's DID. Required, as `author` or `did`.");
        }
        list.push(q("did", did(), "alias of `author` (used when `author` is absent)"));
    }
    // The methods registered as needing a caller: a service-auth token or a session, and 401
    // without one (403 without the role, for those that need one, named in `x-svc-role`). Procedures anyone may
    // call (`metrics.record*`, `sync.registerPDS`) take a credential when one is sent. A
    // caller may still be refused with 403 where the method checks more than who it is
    // (a record's owner, a governance administrator).
    for method in crate::xrpc::methods().methods() {
        let verb = match method.kind {
            // A subscription has no path in the document (OpenAPI describes no WebSocket).
            crate::xrpc::Kind::Query | crate::xrpc::Kind::Subscription => "get",
            crate::xrpc::Kind::Procedure => "post",
        };
        let Some(op) = doc.pointer_mut(&format!("/paths/~1xrpc~1{}/{verb}", method.nsid)) else { continue };
        let error =
            |d: &str| json!({"description": d, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/XrpcError"}}}});
        match method.auth {
            crate::xrpc::Auth::Open if method.kind == crate::xrpc::Kind::Procedure => {
                op["security"] = json!([{}, {"serviceAuth": []}, {"session": []}]);
                op["responses"]["401"] = error("InvalidToken, ExpiredToken or RevokedToken: a credential was sent and is not valid");
                if let Some(responses) = op["responses"].as_object_mut() {
                    responses.remove("403");
                }
            }
            crate::xrpc::Auth::Open => {}
            auth => {
                op["security"] = json!([{"serviceAuth": []}, {"session": []}]);
                op["responses"]["401"] = error("AuthRequired, InvalidToken, ExpiredToken or RevokedToken: no valid credential");
                op["responses"]["403"] = match auth {
                    crate::xrpc::Auth::Role(role) => {
                        op["x-svc-role"] = json!(role.to_string());
                        error(&format!("Forbidden or AuthorizationError: the caller does not hold the {role} role"))
                    }
                    _ => error("Forbidden or Unauthorized: the caller may not do this (not its owner, or without the standing it needs)"),
                };
            }
        }
    }
    // The operations of which one of a kind runs at a time.
    for nsid in crate::xrpc::admin::one_at_a_time_methods() {
        if let Some(op) = doc.pointer_mut(&format!("/paths/~1xrpc~1{nsid}/post")) {
            op["responses"]["409"] = json!({
                "description": "OperationInProgress: an operation of this kind is running already",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/XrpcError"}}}
            });
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_states_the_date_bounds_and_the_auth_of_procedures() {
        let doc = document(&Lexicons::builtin());
        let params = doc.pointer("/paths/~1xrpc~1pub.svc.eprint.searchSubmissions/get/parameters").unwrap().as_array().unwrap();
        let date_from = params.iter().find(|p| p["name"] == "dateFrom").unwrap();
        assert_eq!(date_from["schema"], date_bound());
        let refresh = doc.pointer("/paths/~1xrpc~1pub.svc.sync.refreshRecord/post").unwrap();
        assert_eq!(refresh["security"], json!([{"serviceAuth": []}, {"session": []}]));
        assert!(doc.pointer("/paths/~1xrpc~1pub.svc.admin.assignRole/post/responses/403").is_some());
        assert_eq!(doc.pointer("/paths/~1xrpc~1pub.svc.admin.assignRole/post/x-svc-role"), Some(&json!("admin")));
        assert_eq!(refresh.get("x-svc-role"), None, "a caller, no role");
        assert!(refresh["responses"].get("401").is_some());
        assert_eq!(doc.pointer("/components/securitySchemes/serviceAuth/scheme"), Some(&json!("bearer")));
        let get = doc.pointer("/paths/~1xrpc~1pub.svc.eprint.getSubmission/get/parameters").unwrap().as_array().unwrap();
        let uri = get.iter().find(|p| p["name"] == "uri").unwrap();
        assert_eq!(uri["schema"]["pattern"], json!(RECORD_URI_PATTERN));
        let pdf = doc.pointer("/paths/~1xrpc~1pub.svc.claiming.fetchExternalPdf/get/responses/200/content").unwrap();
        assert_eq!(pdf, &json!({"application/pdf": {"schema": {"type": "string", "format": "binary"}}}), "bytes, not JSON");
    }
}
