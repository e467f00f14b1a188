//! The communities job: computes the communities of the shared knowledge graph by each
//! algorithm ([`projections::governance::communities`]) from the graph as indexed, and
//! appends each result that changed as a command event (`communitiesComputed`), which the
//! governance model keeps for `getCommunities`. A request never computes them.

use std::time::Duration;

use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source};
use projections::attached::collections::{Kind, Listing};
use projections::governance::communities::{communities, ALGORITHMS};
use projections::governance::read::GovernanceReader;
use tracing::{info, warn};

use crate::error::ApiError;
use crate::reads;
use crate::state::AppState;

/// The key of the job's events.
pub const COMMUNITIES_KEY: &str = "svc:communities";

/// The most nodes and edges the job reads.
const MAX_GRAPH: usize = 200_000;

/// Computes the communities by every algorithm and appends those that differ from what
/// the model holds; how many were appended.
pub async fn compute(state: &AppState) -> Result<usize, ApiError> {
    let gov = state.identity.governance_did.clone();
    let (nodes, edges) = reads::attached(state, |r| {
        let nodes: Vec<String> = r
            .all(&Listing::by_author(Kind::GraphNode, &gov), MAX_GRAPH)?
            .into_iter()
            .filter(|n| n.view["status"] != "deprecated")
            .map(|n| n.uri)
            .collect();
        let edges: Vec<(String, String)> = r
            .all(&Listing::by_author(Kind::GraphEdge, &gov), MAX_GRAPH)?
            .into_iter()
            .filter(|e| e.view["status"] != "deprecated")
            .map(|e| {
                (e.view["sourceUri"].as_str().unwrap_or_default().to_owned(), e.view["targetUri"].as_str().unwrap_or_default().to_owned())
            })
            .collect();
        Ok((nodes, edges))
    })?;
    let mut appended = 0;
    for algorithm in ALGORITHMS {
        let (n, e) = (nodes.clone(), edges.clone());
        let found = tokio::task::spawn_blocking(move || communities(algorithm, &n, &e).unwrap_or_default())
            .await
            .map_err(|e| ApiError::internal(format!("the communities job failed: {e}")))?;
        let held = reads::blocking(state, || GovernanceReader::new(state.store.as_ref())?.communities(algorithm))?;
        if held.as_ref().is_some_and(|h| h.communities == found && h.nodes == nodes.len() as u64) {
            continue;
        }
        let action = AdminAction::CommunitiesComputed {
            algorithm: (*algorithm).to_owned(),
            nodes: nodes.len() as u64,
            edges: edges.len() as u64,
            communities: found,
        };
        let service = state.auth.service_did.clone();
        let event = NewEvent {
            key: COMMUNITIES_KEY.to_owned(),
            source: Source::Command { nsid: "svc".into(), caller: service.clone(), host: String::new() },
            payload: Payload::Admin(AdminCommand { actor: service, action }),
        };
        crate::command::append(state, event).await?;
        appended += 1;
    }
    Ok(appended)
}

/// Runs the job every `every` until `stop` completes (first after one period, when the
/// graph has been read from the log).
pub async fn run(state: AppState, every: Duration, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(every) => {}
        }
        match compute(&state).await {
            Ok(0) => {}
            Ok(n) => info!(results = n, "graph communities computed"),
            Err(e) => warn!(error = e.message(), "the graph communities job failed; trying again at the next period"),
        }
    }
}
