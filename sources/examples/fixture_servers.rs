//! The sources' fixture servers as a process of their own, for load scripts and demos
//! (`scripts/loadtest/claiming.sh`): prints one JSON line with each server's base URL,
//! then serves until its standard input closes.
//!
//! `cargo run --release -p sources --example fixture_servers`

use std::io::Read;

use sources::fixtures::FixtureServer;

#[tokio::main]
async fn main() {
    let (arxiv, registries, crossref) = (FixtureServer::arxiv().await, FixtureServer::registries().await, FixtureServer::crossref().await);
    println!("{}", serde_json::json!({"arxiv": arxiv.url, "registries": registries.url, "crossref": crossref.url}));
    // Until whoever started it closes our standard input (or ends).
    let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await;
}
