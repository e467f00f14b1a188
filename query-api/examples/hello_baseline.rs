//! The baseline of the load test: an axum "hello world" on the same runtime settings as
//! `svc up`, so that svc's figures can be read as a ratio of what this machine can serve.
//! An optional second argument makes the body that many bytes instead (to separate the cost
//! of sending a detail-sized answer from the cost of producing it).
//!
//! `cargo run --release -p query-api --example hello_baseline -- 127.0.0.1:3999 [BYTES]`

use axum::routing::get;
use axum::Router;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:3999".into());
    let app = match args.next().and_then(|n| n.parse::<usize>().ok()) {
        Some(bytes) => {
            let body = axum::body::Bytes::from("x".repeat(bytes));
            Router::new().route("/", get(move || async move { body }))
        }
        None => Router::new().route("/", get(|| async { "hello, world" })),
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
