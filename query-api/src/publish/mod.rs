//! Publishing approved governance proposals: svc writes the node or edge a proposal approves
//! to its own governance repository on its repository host (the only repository it writes
//! to, docs/spec details §1), and the change takes effect when that record comes back
//! through the firehose like any other.
//!
//! A pass reads the proposals whose tally is `approved` and that svc has not published
//! (the admin model's `published` rows), oldest first, and for each:
//!
//! 1. computes the record it writes ([`record`]): a new node or edge keyed by the
//!    proposal, or the named governance record with the proposal's changes;
//! 2. reads what the repository holds there: a record that already names the proposal
//!    (`proposalUri`) was written by an earlier attempt, and is not written again;
//! 3. otherwise writes it: `createRecord` under the key the proposal derives (a second
//!    create is refused by the host: the key is taken), or `putRecord` over the held CID;
//! 4. appends `governancePublished` to the log, which marks it published.
//!
//! A restart between 3 and 4 finds the record at 2 and only marks it: no change is lost or
//! made twice. Proposals are published one at a time, in order, so an earlier change is
//! marked before a later one to the same record is written. A proposal that cannot be
//! published (it names a record outside the governance repository, or the host refuses the
//! record) is marked with the reason, and not tried again.

pub mod record;

use std::sync::Arc;
use std::time::Duration;

use atproto::repo_writer::{RepoWriteError, RepoWriter};
use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source};
use projections::admin::read::AdminReader;
use projections::attached::collections::governance::all_proposals;
use projections::attached::collections::EDGE_PROPOSAL;
use serde_json::Value;
use tracing::{info, warn};

use crate::reads;
use crate::state::AppState;
use record::Proposal;

/// The most proposals a pass reads.
const MAX_PROPOSALS: usize = 100_000;

/// svc's governance repository, written as its owner, and how often it is published to.
pub struct Publisher {
    /// The repository's host and credentials.
    pub writer: RepoWriter,
    /// The pause between two passes.
    pub every: Duration,
}

/// What a pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Approved proposals not yet published when it began.
    pub pending: u64,
    /// Records written.
    pub written: u64,
    /// Records an earlier attempt had written, now marked.
    pub found: u64,
    /// Proposals that cannot be published, marked with the reason.
    pub refused: u64,
    /// Proposals left for the next pass (the record changed while it was written).
    pub deferred: u64,
}

/// An approved, unpublished proposal.
struct Pending {
    uri: String,
    edge: bool,
    view: Value,
}

/// The approved proposals svc has not published, oldest first.
fn pending(state: &AppState) -> Result<Vec<Pending>, String> {
    let gov = state.identity.governance_did.clone();
    let mut out = reads::attached(state, |r| {
        let admin = AdminReader::new(state.store.as_ref())?;
        let roles = projections::governance::read::GovernanceReader::new(state.store.as_ref())?;
        let mut out = Vec::new();
        for item in r.all(&all_proposals(), MAX_PROPOSALS)? {
            if crate::xrpc::governance::standing(r, &roles, &state.identity.consensus, &gov, &item)?.status != "approved"
                || admin.published(&item.uri)?.is_some()
            {
                continue;
            }
            out.push((item.created_at, Pending { edge: item.collection == EDGE_PROPOSAL, uri: item.uri, view: item.view }));
        }
        Ok(out)
    })
    .map_err(|e| e.message().to_owned())?;
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.uri.cmp(&b.1.uri)));
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

/// What publishing one proposal came to.
enum Outcome {
    Written { uri: String, cid: String },
    Found { uri: String, cid: String },
    Refused { uri: String, why: String },
    Deferred,
}

/// Whether a refusal is about the record (so trying again would be refused again), rather
/// than the host, the session or a race.
fn about_the_record(e: &RepoWriteError) -> bool {
    match e {
        RepoWriteError::Refused { method, status, error, .. } => {
            *status == 400
                && !method.ends_with("createSession")
                && !matches!(error.as_str(), "InvalidSwap" | "ExpiredToken" | "InvalidToken")
        }
        _ => false,
    }
}

async fn publish_one(writer: &RepoWriter, gov: &str, p: &Pending) -> Result<Outcome, RepoWriteError> {
    let proposal = Proposal { uri: &p.uri, edge: p.edge, view: &p.view };
    let target = match record::target(&proposal, gov) {
        Ok(t) => t,
        Err(why) => return Ok(Outcome::Refused { uri: p.view["targetUri"].as_str().unwrap_or_default().to_owned(), why }),
    };
    let uri = format!("at://{gov}/{}/{}", target.collection, target.rkey);
    let held = writer.get(target.collection, &target.rkey).await?;
    if let Some(h) = &held {
        if h.value["proposalUri"].as_str() == Some(&p.uri) {
            return Ok(Outcome::Found { uri, cid: h.cid.clone() });
        }
    }
    if !target.new && held.is_none() {
        return Ok(Outcome::Refused { uri, why: "the governance repository holds no such record".into() });
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let value = match record::record(&proposal, gov, held.as_ref().filter(|_| !target.new).map(|h| &h.value), &now) {
        Ok(v) => v,
        Err(why) => return Ok(Outcome::Refused { uri, why }),
    };
    let result = match &held {
        Some(h) if !target.new => writer.put(target.collection, &target.rkey, &value, &h.cid).await,
        _ => writer.create(target.collection, &target.rkey, &value).await,
    };
    match result {
        Ok(w) => Ok(Outcome::Written { uri: w.uri, cid: w.cid }),
        Err(e) if matches!(e.error_name(), Some("InvalidSwap")) => Ok(Outcome::Deferred),
        Err(e) if about_the_record(&e) => Ok(Outcome::Refused { uri, why: e.to_string() }),
        Err(e) => Err(e),
    }
}

/// One pass (see the [module docs](self)); `progress(done, total)` after each proposal.
/// Fails when the host cannot be reached or refuses the session: what was published
/// before is marked, the rest waits for the next pass.
pub async fn publish(state: &AppState, writer: &RepoWriter, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<Pass, String> {
    let gov = state.identity.governance_did.clone();
    let st = state.clone();
    let pending = tokio::task::spawn_blocking(move || pending(&st)).await.map_err(|e| e.to_string())??;
    let mut pass = Pass { pending: pending.len() as u64, ..Pass::default() };
    for (i, p) in pending.iter().enumerate() {
        let outcome = publish_one(writer, &gov, p).await.map_err(|e| e.to_string())?;
        let (uri, cid, error) = match outcome {
            Outcome::Written { uri, cid } => {
                pass.written += 1;
                info!(proposal = p.uri, uri, "published an approved proposal to the governance repository");
                (uri, Some(cid), None)
            }
            Outcome::Found { uri, cid } => {
                pass.found += 1;
                (uri, Some(cid), None)
            }
            Outcome::Refused { uri, why } => {
                pass.refused += 1;
                warn!(proposal = p.uri, why, "an approved proposal cannot be published");
                (uri, None, Some(why))
            }
            Outcome::Deferred => {
                pass.deferred += 1;
                continue;
            }
        };
        let action = AdminAction::GovernancePublished { proposal: p.uri.clone(), uri, cid, error };
        let event = NewEvent {
            key: gov.clone(),
            source: Source::Command { nsid: "svc".into(), caller: state.auth.service_did.clone(), host: String::new() },
            payload: Payload::Admin(AdminCommand { actor: state.auth.service_did.clone(), action }),
        };
        crate::command::append(state, event).await.map_err(|e| e.message().to_owned())?;
        progress(i as u64 + 1, pass.pending);
    }
    Ok(pass)
}

/// Publishes every [`Publisher::every`] until `stop` completes; a failed pass is logged and
/// tried again at the next.
pub async fn run(state: AppState, publisher: Arc<Publisher>, stop: impl std::future::Future<Output = ()>) {
    info!(repository = publisher.writer.did(), every = ?publisher.every, "publishing approved proposals to the governance repository");
    tokio::pin!(stop);
    loop {
        match publish(&state, &publisher.writer, &|_, _| {}).await {
            Ok(pass) if pass.pending > 0 => info!(?pass, "governance publishing pass"),
            Ok(_) => {}
            Err(e) => warn!(error = e, "a governance publishing pass failed; trying again at the next"),
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(publisher.every) => {}
        }
    }
}
