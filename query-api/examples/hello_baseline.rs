//! The baseline of the load test: an axum "hello world" on the same runtime settings as
//! `svc up`, so that svc's figures can be read as a ratio of what this machine can serve.
//!
//! `cargo run --release -p query-api --example hello_baseline -- 127.0.0.1:3999`

use axum::routing::get;
use axum::Router;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3999".into());
    let app = Router::new().route("/", get(|| async { "hello, world" }));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
