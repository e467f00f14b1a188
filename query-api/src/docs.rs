//! `GET /docs`: an interactive reference over `/openapi.json` (Swagger UI). Its script and
//! style sheet come from the `swagger-ui-dist` crate, built into the binary; the page and
//! the script that starts it are svc's own, so the page needs no inline script: its
//! Content-Security-Policy is every response's (`default-src 'self'`) with one addition,
//! images from `data:` URLs, which Swagger UI's style sheet draws its icons with.

use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use swagger_ui_dist::{ApiDefinition, OpenApiSource};
use tower::ServiceExt;

use crate::error::ApiError;
use crate::state::AppState;

/// Where the assets are served.
const ASSETS: &str = "/docs/assets";

/// The assets of Swagger UI svc serves (the crate's router also serves a page of its own,
/// with an inline script: not served).
const ASSET_FILES: &[&str] = &["swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-bundle.js.map", "swagger-ui.css.map"];

/// The crate's routes, made once.
static SWAGGER: LazyLock<axum::Router> = LazyLock::new(|| {
    swagger_ui_dist::generate_routes(ApiDefinition { uri_prefix: ASSETS, api_definition: OpenApiSource::Uri("/openapi.json"), title: None })
});

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc API reference</title>
<link rel="icon" type="image/svg+xml" href="/favicon.svg">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
"#;

const START: &str = include_str!("../assets/docs-start.js");

/// The page's policy: scripts, styles and calls from svc only; images also from `data:`.
const PAGE_POLICY: &str = "default-src 'self'; img-src 'self' data:";

/// The icon of svc's pages.
const FAVICON: &str = include_str!("../assets/favicon.svg");

/// The API reference's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/docs", get(page))
        .route("/docs/start.js", get(start))
        .route("/docs/assets/{file}", get(asset))
        .route("/favicon.svg", get(favicon))
}

async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CONTENT_SECURITY_POLICY, PAGE_POLICY)], PAGE).into_response()
}

async fn favicon() -> Response {
    ([(header::CONTENT_TYPE, "image/svg+xml"), (header::CACHE_CONTROL, "public, max-age=86400")], FAVICON).into_response()
}

async fn start() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], START).into_response()
}

/// One of [`ASSET_FILES`], from the crate's routes, cached a day by the browser (the
/// files change only with svc's build).
async fn asset(Path(file): Path<String>) -> Response {
    if !ASSET_FILES.contains(&file.as_str()) {
        return ApiError::not_found(format!("no asset {file}")).into_response();
    }
    let request = Request::get(format!("{ASSETS}/{file}")).body(Body::empty()).expect("a static path is a valid request");
    let mut response = match SWAGGER.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    response
}
