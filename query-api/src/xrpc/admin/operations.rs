//! Backfill operations: each is a command event (`command.admin` `operationStarted`), run
//! by the node that took the call, which reports progress (and a heartbeat) as events and
//! ends it with one; the admin model holds their state, so every node answers
//! `getBackfillStatus` alike and a replay keeps the history.
//!
//! - `fullReindex` is an online replay of the log into new versions of every read model
//!   (the `replay` crate), swapped in when complete while the API keeps serving;
//! - `didSync` backfills one repository, `pdsScan` every repository of the known hosts;
//! - `freshnessScan` compares every indexed record with its repository and refreshes
//!   those that changed or went away;
//! - `governanceSync` reads the governance repository from its host and publishes the
//!   approved proposals to it ([`crate::publish`]);
//! - `triggerBackfill` starts the work of the type it names (the reference only records it).
//!
//! `cancelBackfill` appends a cancel request; the running node sees it within a second and
//! stops (a cancelled reindex stops within the batch it applies and retires its half-built
//! versions, dropped once it has ended: the old ones go on serving).
//! An operation whose node stopped (a crash, a restart) sends no heartbeat: after
//! `--operation-stale-seconds` (60) it is reported failed, and the next status read ends it in
//! the log.

use projections::access::Role;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source, OPERATIONS_KEY};
use projections::admin::read::{AdminReader, Operation};
use projections::catalog;
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::params::check_did;
use crate::reads::blocking;
use crate::state::AppState;
use crate::xrpc::method::{Answer, Auth, Call, Routes};

/// A running operation reports (its heartbeat) this many times per
/// [`Shared::operation_stale_after`](crate::state::Shared::operation_stale_after) span at least.
const HEARTBEATS_PER_SPAN: u32 = 12;
/// How long a reindex keeps the old versions after the swap, for the live workers to move.
const SWAP_GRACE: Duration = Duration::from_secs(3);

/// Events per batch of an online reindex: small enough to report progress and stop on a
/// cancel soon (a cancel waits for the batch each model is applying), large enough to cost
/// little over a rebuild's (512 made live writes wait longer: docs/performance.md).
const REINDEX_BATCH: usize = 2048;

/// The operation types of the contract.
const TYPES: &[&str] = &["pdsScan", "freshnessScan", "citationExtraction", "fullReindex", "governanceSync", "didSync"];

pub(super) fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .procedure("pub.svc.admin.triggerFullReindex", admin, trigger_full_reindex)
        .procedure("pub.svc.admin.triggerPDSScan", admin, trigger_pds_scan)
        .procedure("pub.svc.admin.triggerFreshnessScan", admin, trigger_freshness_scan)
        .procedure("pub.svc.admin.triggerDIDSync", admin, trigger_did_sync)
        .procedure("pub.svc.admin.triggerCitationExtraction", admin, trigger_citation_extraction)
        .procedure("pub.svc.admin.triggerGovernanceSync", admin, trigger_governance_sync)
        .procedure("pub.svc.admin.triggerBackfill", admin, trigger_backfill)
        .query_async("pub.svc.admin.getBackfillStatus", admin, status)
        .query_async("pub.svc.admin.getBackfillHistory", admin, history)
        .procedure("pub.svc.admin.cancelBackfill", admin, cancel)
}

/// `triggerFullReindex`: every read model rebuilt from the log.
async fn trigger_full_reindex(c: Call) -> Answer {
    trigger(c, "fullReindex", json!({})).await
}

/// `triggerPDSScan`: every account of the hosts svc knows.
async fn trigger_pds_scan(c: Call) -> Answer {
    trigger(c, "pdsScan", json!({})).await
}

/// `triggerFreshnessScan`: every indexed record compared with its repository.
async fn trigger_freshness_scan(c: Call) -> Answer {
    trigger(c, "freshnessScan", json!({})).await
}

/// `triggerGovernanceSync`: the governance repository read from its host, and the approved
/// proposals published to it.
async fn trigger_governance_sync(c: Call) -> Answer {
    trigger(c, "governanceSync", json!({})).await
}

/// `triggerCitationExtraction {uri?}`: what OpenAlex knows of every indexed eprint with a
/// DOI (or of the one named), appended as enrichments.
async fn trigger_citation_extraction(c: Call) -> Answer {
    let mut metadata = json!({});
    if let Some(uri) = c.input["uri"].as_str() {
        crate::params::parse_record_uri("uri", uri)?;
        metadata["uri"] = json!(uri);
    }
    trigger(c, "citationExtraction", metadata).await
}

/// `triggerDIDSync`: one account's records indexed from its repository.
async fn trigger_did_sync(c: Call) -> Answer {
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    check_did("did", &did)?;
    trigger(c, "didSync", json!({"did": did})).await
}

fn event(state: &AppState, actor: &str, nsid: &str, action: AdminAction) -> NewEvent {
    NewEvent {
        key: OPERATIONS_KEY.to_owned(),
        source: Source::Command { nsid: nsid.to_owned(), caller: actor.to_owned(), host: state.identity.public_url.clone() },
        payload: Payload::Admin(AdminCommand { actor: actor.to_owned(), action }),
    }
}

fn operation(state: &AppState, id: &str) -> Result<Option<Operation>, ApiError> {
    blocking(state, || Ok(AdminReader::new(state.store.as_ref())?.operation(id)?))
}

/// Appends the start of an operation and answers its id.
async fn start(c: &Call, nsid: &str, kind: &str, metadata: &Value) -> Result<String, ApiError> {
    let admin = c.caller()?.did.clone();
    let id = uuid::Uuid::new_v4().to_string();
    let action =
        AdminAction::OperationStarted { id: id.clone(), operation: kind.to_owned(), runs: true, metadata: Some(metadata.to_string()) };
    crate::command::append(&c.state, event(&c.state, &admin, nsid, action)).await?;
    metrics::counter!("svc_admin_actions_total", "action" => "backfill", "target" => kind.to_owned()).increment(1);
    Ok(id)
}

/// `trigger*`: `{operationId, status: running}` (and `did` for `triggerDIDSync`); the work
/// runs in the background on this node.
async fn trigger(c: Call, kind: &'static str, metadata: Value) -> Answer {
    let nsid = format!("pub.svc.admin.trigger{}", trigger_suffix(kind));
    let id = launch(&c, &nsid, kind, &metadata).await?;
    let mut out = json!({"operationId": id, "status": "running"});
    if let Some(did) = metadata.get("did") {
        out["did"] = did.clone();
    }
    Body::json(&out)
}

/// The `trigger…` operation of a type.
fn trigger_suffix(kind: &str) -> &'static str {
    match kind {
        "fullReindex" => "FullReindex",
        "pdsScan" => "PDSScan",
        "freshnessScan" => "FreshnessScan",
        "citationExtraction" => "CitationExtraction",
        "governanceSync" => "GovernanceSync",
        _ => "DIDSync",
    }
}

/// The operations that work on every record or read model: one of each kind at a time (a
/// second full reindex beside the first would rebuild everything twice, each slowing the
/// other and the API).
const ONE_AT_A_TIME: &[&str] = &["fullReindex", "pdsScan", "freshnessScan", "governanceSync", "citationExtraction"];

/// The methods that answer `OperationInProgress` (409) while an operation of their kind
/// runs: the triggers of the kinds in [`ONE_AT_A_TIME`], and `triggerBackfill`.
pub(crate) fn one_at_a_time_methods() -> Vec<String> {
    ONE_AT_A_TIME
        .iter()
        .map(|kind| format!("pub.svc.admin.trigger{}", trigger_suffix(kind)))
        .chain(["pub.svc.admin.triggerBackfill".to_owned()])
        .collect()
}

/// Appends an operation's start and runs it on this node in the background: its id.
/// `OperationInProgress` (409) while an operation of a kind in [`ONE_AT_A_TIME`] runs (on
/// any node: the admin model is shared; two calls at the same moment on two nodes may
/// both start).
async fn launch(c: &Call, nsid: &str, kind: &'static str, metadata: &Value) -> Result<String, ApiError> {
    // One check and start at a time on this node, so two calls cannot both pass the check.
    static LAUNCHING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _launching = LAUNCHING.lock().await;
    if ONE_AT_A_TIME.contains(&kind) {
        let all = blocking(&c.state, || AdminReader::new(c.state.store.as_ref())?.operations())?;
        for op in all.into_iter().filter(|o| o.kind == kind && o.runs && o.status == "running") {
            let id = op.id.clone();
            if view(&c.state, op).await["status"] == "running" {
                return Err(ApiError::new(
                    ErrorCode::OperationInProgress,
                    format!("a {kind} is running already ({id}): wait for it to end, or cancel it (cancelBackfill)"),
                ));
            }
        }
    }
    let id = start(c, nsid, kind, metadata).await?;
    let runner = Runner {
        state: c.state.clone(),
        id: id.clone(),
        processed: Arc::new(AtomicU64::new(0)),
        total: Arc::new(Mutex::new(None)),
        cancelled: Arc::new(AtomicBool::new(false)),
    };
    tokio::spawn(runner.run(kind, metadata.clone()));
    Ok(id)
}

/// The operation types a node can run.
const RUNNABLE: &[&str] = &["fullReindex", "didSync", "pdsScan", "freshnessScan", "governanceSync", "citationExtraction"];

/// `triggerBackfill`: `{operation}`: starts the work of `type` (unlike the reference, which
/// only records it), with the rest of the input as its metadata (`did` for a `didSync`,
/// `uri` for a `citationExtraction`).
async fn trigger_backfill(c: Call) -> Answer {
    let kind = c.input["type"].as_str().unwrap_or_default().to_owned();
    let Some(kind) = RUNNABLE.iter().copied().find(|k| *k == kind) else {
        if TYPES.contains(&kind.as_str()) {
            return Err(ApiError::not_implemented(&format!("pub.svc.admin.trigger{}", trigger_suffix(&kind))));
        }
        return Err(ApiError::invalid_param("type", format!("one of {}", TYPES.join(", "))));
    };
    let mut metadata = c.input.clone();
    if let Some(m) = metadata.as_object_mut() {
        m.remove("type");
    }
    if kind == "didSync" {
        check_did("did", metadata["did"].as_str().unwrap_or_default())?;
    }
    let id = launch(&c, "pub.svc.admin.triggerBackfill", kind, &metadata).await?;
    // The answer is the admin model's row: wait for it past the usual read-your-writes wait
    // (a rebuild running beside it can slow the model down).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(op) = operation(&c.state, &id)? {
            return Body::json(&json!({"operation": op.view}));
        }
        if Instant::now() > deadline {
            return Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                format!("operation {id} started, but this node has not applied it yet: see getBackfillStatus"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The view of an operation, reporting one whose node went silent as failed (and ending it
/// in the log, once).
async fn view(state: &AppState, op: Operation) -> Value {
    let stale = op.status == "running"
        && op.runs
        && chrono::DateTime::parse_from_rfc3339(&op.updated_at).is_ok_and(|t| {
            (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).to_std().is_ok_and(|age| age > state.operation_stale_after)
        });
    let mut view = op.view.clone();
    if stale {
        let error = format!("interrupted: its node sent no report since {} (stopped or restarted)", op.updated_at);
        view["status"] = json!("failed");
        view["error"] = json!(error);
        let processed = view["recordsProcessed"].as_u64().unwrap_or(0);
        let end = AdminAction::OperationEnded { id: op.id.clone(), status: "failed".into(), processed, error: Some(error) };
        let log = state.log.clone();
        let e = event(state, &state.auth.service_did, "pub.svc.admin.getBackfillStatus", end);
        if let Err(e) = tokio::task::spawn_blocking(move || log.append(&[e])).await {
            warn!(error = %e, "could not end an interrupted operation");
        }
    } else if op.status == "running" {
        if let (Some(done), Some(total), Ok(started)) =
            (view["recordsProcessed"].as_u64(), view["recordsTotal"].as_u64(), chrono::DateTime::parse_from_rfc3339(&op.started_at))
        {
            let elapsed = (chrono::Utc::now() - started.with_timezone(&chrono::Utc)).num_milliseconds().max(0) as f64 / 1000.0;
            if done > 0 && total >= done {
                view["etaSeconds"] = json!(((total - done) as f64 * elapsed / done as f64).round() as u64);
            }
        }
    }
    view
}

/// `getBackfillStatus`: `{operation}` for an `id`, `{operations}` (of one `status` when
/// given) otherwise; `NotFoundError` for an unknown id.
async fn status(c: Call) -> Answer {
    if let Some(id) = c.params.str("id") {
        let op = operation(&c.state, id)?.ok_or_else(|| super::not_found_error(format!("no operation {id}")))?;
        return Body::json(&json!({"operation": view(&c.state, op).await}));
    }
    let wanted = c.params.str("status").map(str::to_owned);
    let all = blocking(&c.state, || AdminReader::new(c.state.store.as_ref())?.operations())?;
    let mut out = Vec::new();
    for op in all {
        let v = view(&c.state, op).await;
        if wanted.as_deref().is_none_or(|s| v["status"] == s) {
            out.push(v);
        }
    }
    Body::json(&json!({"operations": out}))
}

/// `getBackfillHistory`: the finished operations, newest start first.
async fn history(c: Call) -> Answer {
    let all = blocking(&c.state, || AdminReader::new(c.state.store.as_ref())?.operations())?;
    let mut out = Vec::new();
    for op in all {
        let v = view(&c.state, op).await;
        if v["status"] != "running" {
            out.push(v);
        }
    }
    Body::json(&json!({"operations": out}))
}

/// How long `cancelBackfill` waits for a running operation to stop (a running one checks
/// for a cancel about once a second; a reindex stops once each model has applied the batch
/// it is on: 7 s for 2,048 events on the CQL test server, under load).
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// `cancelBackfill`: `{success, id, status}`. It asks the operation to stop and waits for
/// it to end: `success` is true only when it ended cancelled; a cancel that came too late
/// (the work was done, or it failed) answers false with the status it ended with, as does
/// one for an operation that had ended already. An operation still running after
/// [`CANCEL_WAIT`] answers false with status `running` (the request stays recorded: follow
/// `getBackfillStatus`). An unknown id answers false without a status.
async fn cancel(c: Call) -> Answer {
    let admin = c.caller()?.did.clone();
    let id = c.input["id"].as_str().unwrap_or_default().to_owned();
    let Some(op) = operation(&c.state, &id)? else { return Body::json(&json!({"success": false, "id": id})) };
    let status = view(&c.state, op).await["status"].clone();
    if status != "running" {
        return Body::json(&json!({"success": false, "id": id, "status": status}));
    }
    let action = AdminAction::OperationCancelRequested { id: id.clone() };
    crate::command::append(&c.state, event(&c.state, &admin, "pub.svc.admin.cancelBackfill", action)).await?;
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let status = match operation(&c.state, &id)? {
            Some(op) => view(&c.state, op).await["status"].clone(),
            None => json!("running"),
        };
        if status != "running" {
            return Body::json(&json!({"success": status == "cancelled", "id": id, "status": status}));
        }
        if tokio::time::Instant::now() >= deadline {
            return Body::json(&json!({"success": false, "id": id, "status": "running"}));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How an operation's work stopped, when it did not fail.
enum Stopped {
    /// All of it was done (a cancel that came too late changes nothing).
    Done,
    /// A cancel stopped it; nothing it built was kept.
    Cancelled,
}

/// How long a reindex waits for each of this node's workers to hold before it swaps
/// without it (a worker retrying a failed batch holds only after its wait).
const HOLD_WAIT: Duration = Duration::from_secs(30);

/// Holds every projection worker of this node, for a reindex's swap ([`replay::Pause`]);
/// one that does not hold within [`HOLD_WAIT`] (or has stopped) is left running.
fn hold_workers(runtime: &tokio::runtime::Handle, workers: &[projections::HoldHandle]) -> Vec<projections::Held> {
    runtime.block_on(async {
        let mut held = Vec::with_capacity(workers.len());
        for worker in workers {
            match tokio::time::timeout(HOLD_WAIT, worker.hold()).await {
                Ok(Ok(h)) => held.push(h),
                Ok(Err(e)) => warn!(error = %e, "a reindex swaps without holding a projection worker"),
                Err(_) => warn!(wait_s = HOLD_WAIT.as_secs(), "a projection worker did not hold in time; the reindex swaps without it"),
            }
        }
        held
    })
}

/// Runs one operation on this node and reports it.
#[derive(Clone)]
struct Runner {
    state: AppState,
    id: String,
    processed: Arc<AtomicU64>,
    total: Arc<Mutex<Option<u64>>>,
    cancelled: Arc<AtomicBool>,
}

impl Runner {
    fn report(&self, action: AdminAction) {
        let e = event(&self.state, &self.state.auth.service_did, "svc", action);
        if let Err(err) = self.state.log.append(&[e]) {
            warn!(id = self.id, error = %err, "could not report an operation's progress");
        }
    }

    /// Reports progress, and so that the operation is alive: also once all of it is read,
    /// while the work ends (a reindex's last catch-up and swap), until the end report (the
    /// admin model shows at most 99 % while an operation runs, and ignores a report that
    /// lands after its end). A reindex holds this node's workers while its new versions
    /// read the last events and swap in, so they hold every report the old ones did: a
    /// status read never goes back across the swap.
    fn progressed(&self) {
        let total = *self.total.lock().expect("total");
        let processed = self.processed.load(Ordering::Relaxed);
        self.report(AdminAction::OperationProgressed { id: self.id.clone(), processed, total });
    }

    /// Whether an admin asked the operation to stop (read from the admin model).
    fn cancel_requested(&self) -> bool {
        if self.cancelled.load(Ordering::Relaxed) {
            return true;
        }
        let asked = AdminReader::new(self.state.store.as_ref())
            .and_then(|r| r.operation(&self.id))
            .ok()
            .flatten()
            .is_some_and(|o| o.cancel_requested);
        self.cancelled.store(asked, Ordering::Relaxed);
        asked
    }

    async fn run(self, kind: &'static str, metadata: Value) {
        info!(id = self.id, kind, "operation started");
        let beat = {
            let me = self.clone();
            tokio::spawn(async move {
                let every = (me.state.operation_stale_after / HEARTBEATS_PER_SPAN).max(Duration::from_millis(50));
                loop {
                    tokio::time::sleep(every).await;
                    let me2 = me.clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        me2.cancel_requested();
                        me2.progressed();
                    })
                    .await;
                }
            })
        };
        let result = match kind {
            "fullReindex" => self.reindex().await,
            "didSync" => self.did_sync(metadata["did"].as_str().unwrap_or_default()).await,
            "freshnessScan" => self.freshness_scan().await,
            "governanceSync" => self.governance_sync().await,
            "citationExtraction" => self.citation_extraction(metadata["uri"].as_str()).await,
            _ => self.pds_scan().await,
        };
        beat.abort();
        let processed = self.processed.load(Ordering::Relaxed);
        let (status, error) = match result {
            Ok(Stopped::Cancelled) => ("cancelled", None),
            Ok(Stopped::Done) => ("completed", None),
            Err(e) => ("failed", Some(e)),
        };
        info!(id = self.id, kind, status, processed, error, "operation ended");
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            me.report(AdminAction::OperationEnded { id: me.id.clone(), status: status.into(), processed, error });
            // A reindex that stopped retired what it had built; its tables go now that the
            // end is reported (a cancel waits for the end, not for them).
            if kind == "fullReindex" && status != "completed" {
                replay::drop_retired_versions(&me.state.context(), &catalog::MODELS);
                info!(id = me.id, "the stopped reindex's versions are dropped");
            }
        })
        .await;
    }

    /// Replays the log into new versions of every read model and swaps them in.
    async fn reindex(&self) -> Result<Stopped, String> {
        let me = self.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || -> Result<Stopped, String> {
            let s = &me.state;
            let ctx = s.context();
            let total: u64 = s.log.events_behind(&Default::default()).map_err(|e| e.to_string())?;
            *me.total.lock().expect("total") = Some(total);
            let options = replay::RebuildOptions { models: catalog::MODELS.to_vec(), grace: SWAP_GRACE, batch_size: REINDEX_BATCH };
            let last = Mutex::new(Instant::now());
            let on_read = |read: u64| {
                me.processed.store(read.min(total), Ordering::Relaxed);
                let mut last = last.lock().expect("last");
                if last.elapsed() >= Duration::from_secs(1) {
                    *last = Instant::now();
                    me.progressed();
                }
                !me.cancel_requested()
            };
            let result = replay::rebuild_all_reporting(s.log.as_ref(), &ctx, &options, &on_read, &|| hold_workers(&runtime, &s.workers));
            match result {
                Ok(_) => Ok(Stopped::Done),
                Err(replay::ReplayError::Projection { source: projections::ProjectionError::Cancelled, .. }) => Ok(Stopped::Cancelled),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Backfills one repository.
    async fn did_sync(&self, did: &str) -> Result<Stopped, String> {
        *self.total.lock().expect("total") = Some(1);
        let resolver = self.state.sync.fetcher.resolver().clone();
        let report = ingest::backfill::backfill_repo(self.state.log.clone(), &resolver, did, &self.state.sync.collections)
            .await
            .map_err(|e| e.to_string())?;
        self.processed.store((report.records + report.deletes) as u64, Ordering::Relaxed);
        Ok(Stopped::Done)
    }

    /// One governance sync cycle: the governance repository backfilled from its host (its
    /// records indexed, what it deleted dropped), then, when svc may write to it, the
    /// approved proposals not yet published written to it ([`crate::publish`]). Progress
    /// counts the repository, then each proposal.
    async fn governance_sync(&self) -> Result<Stopped, String> {
        let gov = self.state.identity.governance_did.clone();
        *self.total.lock().expect("total") = Some(1);
        let resolver = self.state.sync.fetcher.resolver().clone();
        ingest::backfill::backfill_repo(self.state.log.clone(), &resolver, &gov, &self.state.sync.collections)
            .await
            .map_err(|e| format!("the governance repository {gov} could not be read: {e}"))?;
        self.processed.store(1, Ordering::Relaxed);
        let Some(publisher) = self.state.sync.publisher.clone() else { return Ok(Stopped::Done) };
        let pass = crate::publish::publish(&self.state, &publisher.writer, &|done, total| {
            *self.total.lock().expect("total") = Some(1 + total);
            self.processed.store(1 + done, Ordering::Relaxed);
        })
        .await?;
        info!(id = self.id, ?pass, "governance sync: publishing pass done");
        Ok(Stopped::Done)
    }

    /// What OpenAlex knows of each indexed eprint with a DOI (the one of `only`, when given),
    /// with the works it references (its extracted citations), appended as an
    /// `external.enrichment` event per eprint it knows; eprints read in pages
    /// of 500, progress reported every 10, a cancel seen at each report. An eprint OpenAlex
    /// does not know is counted and skipped; OpenAlex failing ends the operation failed.
    async fn citation_extraction(&self, only: Option<&str>) -> Result<Stopped, String> {
        let me = self.clone();
        let only = only.map(str::to_owned);
        // (uri, DOI) of every eprint with one.
        let eprints = tokio::task::spawn_blocking(move || -> Result<Vec<(String, String)>, String> {
            let reader = projections::eprints::read::EprintsReader::new(me.state.store.as_ref()).map_err(|e| e.to_string())?;
            let uris: Vec<String> = match only {
                Some(uri) => vec![uri],
                None => me.indexed()?.into_iter().map(|(uri, _)| uri).filter(|u| u.contains("/pub.svc.eprint.submission/")).collect(),
            };
            let mut out = Vec::new();
            for chunk in uris.chunks(500) {
                for uri in chunk {
                    let Some(e) = reader.get(uri).map_err(|e| e.to_string())? else { continue };
                    let record: Value = serde_json::from_str(&e.record).unwrap_or_default();
                    if let Some(doi) = record["doi"].as_str().filter(|d| !d.is_empty()) {
                        out.push((uri.clone(), doi.to_owned()));
                    }
                }
            }
            Ok(out)
        })
        .await
        .map_err(|e| e.to_string())??;
        *self.total.lock().expect("total") = Some(eprints.len() as u64);
        let mut unknown = 0u64;
        for (i, (uri, doi)) in eprints.iter().enumerate() {
            if i % 10 == 0 && i > 0 {
                let me = self.clone();
                if tokio::task::spawn_blocking(move || {
                    me.progressed();
                    me.cancel_requested()
                })
                .await
                .unwrap_or(false)
                {
                    return Ok(Stopped::Cancelled);
                }
            }
            let Some(work) = self.state.registries.openalex_work(doi).await.map_err(|e| format!("OpenAlex: {e}"))? else {
                unknown += 1;
                self.processed.store(i as u64 + 1, Ordering::Relaxed);
                continue;
            };
            let cited_works = self.state.registries.openalex_cited_works(&work.references).await.map_err(|e| format!("OpenAlex: {e}"))?;
            let enrichment = event_schema::Enrichment {
                eprint_uri: uri.clone(),
                source: "openalex".into(),
                work_id: work.id,
                doi: doi.clone(),
                cited_by_count: work.cited_by_count,
                referenced_works_count: work.referenced_works_count,
                references: work.references,
                topics: work.topics.into_iter().map(|(name, score)| event_schema::Topic { name, score }).collect(),
                open_access_url: work.open_access_url,
                fetched_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                cited_works,
            };
            let e = NewEvent {
                key: uri.clone(),
                source: Source::Command {
                    nsid: "pub.svc.admin.triggerCitationExtraction".into(),
                    caller: self.state.auth.service_did.clone(),
                    host: self.state.identity.public_url.clone(),
                },
                payload: Payload::Enrichment(Box::new(enrichment)),
            };
            let log = self.state.log.clone();
            tokio::task::spawn_blocking(move || log.append(&[e])).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
            self.processed.store(i as u64 + 1, Ordering::Relaxed);
        }
        info!(id = self.id, eprints = eprints.len(), unknown, "citation extraction: done");
        Ok(Stopped::Done)
    }

    /// Every indexed record: `(uri, cid)`; eprints from this node's search index, the
    /// attached collections from their listings.
    fn indexed(&self) -> Result<Vec<(String, String)>, String> {
        let s = &self.state;
        let mut out = Vec::new();
        if let Some(index) = s.search_index().map_err(|e| e.to_string())? {
            let mut request = projections::search::SearchRequest::new("*", projections::search::SortOrder::Date);
            request.limit = index.num_docs() as usize + 1;
            for hit in index.search(&request).map_err(|e| e.to_string())?.hits {
                let v: Value = serde_json::from_str(&hit).map_err(|e| e.to_string())?;
                out.push((v["uri"].as_str().unwrap_or_default().to_owned(), v["cid"].as_str().unwrap_or_default().to_owned()));
            }
        }
        let reader = projections::attached::read::AttachedReader::new(s.store.as_ref()).map_err(|e| e.to_string())?;
        for collection in projections::attached::collections::COLLECTIONS {
            let listing = projections::attached::collections::Listing::collection(collection.nsid);
            for item in reader.all(&listing, usize::MAX).map_err(|e| e.to_string())?.into_iter().filter(|i| !i.deleted) {
                out.push((item.uri, item.cid));
            }
        }
        Ok(out)
    }

    /// Compares every indexed record with its repository; refreshes each that changed or
    /// went away (the repository's proven record, or its deletion, as a command event).
    async fn freshness_scan(&self) -> Result<Stopped, String> {
        let me = self.clone();
        let records = tokio::task::spawn_blocking(move || me.indexed()).await.map_err(|e| e.to_string())??;
        *self.total.lock().expect("total") = Some(records.len() as u64);
        let (mut refreshed, mut unreachable) = (0u64, 0u64);
        for (i, (uri, cid)) in records.iter().enumerate() {
            if i % 20 == 0 {
                let me = self.clone();
                if tokio::task::spawn_blocking(move || me.cancel_requested()).await.unwrap_or(false) {
                    return Ok(Stopped::Cancelled);
                }
            }
            self.processed.store(i as u64, Ordering::Relaxed);
            let Some(parsed) = lexicons::formats::parse_at_uri(uri) else { continue };
            let (Some(collection), Some(rkey)) = (parsed.collection, parsed.rkey) else { continue };
            let proven = match self.state.sync.fetcher.fetch(parsed.authority, collection, rkey).await {
                Ok(p) => p,
                Err(e) => {
                    unreachable += 1;
                    tracing::debug!(uri, error = %e, "freshness scan: the repository did not answer");
                    continue;
                }
            };
            let held = proven.record.as_ref().map(|(c, _)| c.to_string());
            if held.as_deref() == Some(cid.as_str()) {
                continue;
            }
            let source = Source::Command {
                nsid: "pub.svc.admin.triggerFreshnessScan".into(),
                caller: self.state.auth.service_did.clone(),
                host: proven.pds.clone(),
            };
            match proven.event(&source) {
                Ok(e) => {
                    let log = self.state.log.clone();
                    tokio::task::spawn_blocking(move || log.append(&[e])).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
                    refreshed += 1;
                }
                Err(why) => warn!(uri, why, "freshness scan: the repository's record is unusable"),
            }
        }
        self.processed.store(records.len() as u64, Ordering::Relaxed);
        info!(id = self.id, records = records.len(), refreshed, unreachable, "freshness scan done");
        if unreachable > 0 && unreachable == records.len() as u64 {
            return Err(format!("no repository answered for the {unreachable} records"));
        }
        Ok(Stopped::Done)
    }

    /// Backfills every repository of every known host that has records in the index.
    async fn pds_scan(&self) -> Result<Stopped, String> {
        let s = self.state.clone();
        let hosts = tokio::task::spawn_blocking(move || AdminReader::new(s.store.as_ref()).and_then(|r| r.hosts()))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let urls: Vec<String> = hosts
            .iter()
            .filter(|h| h["recordCount"].as_i64() > Some(0))
            .filter_map(|h| h["pdsUrl"].as_str().map(as_http))
            .filter(|u| u.starts_with("http"))
            .collect();
        *self.total.lock().expect("total") = Some(urls.len() as u64);
        let resolver = self.state.sync.fetcher.resolver().clone();
        let mut failures = Vec::new();
        let mut urls = urls;
        urls.dedup();
        for url in urls {
            let me = self.clone();
            if tokio::task::spawn_blocking(move || me.cancel_requested()).await.unwrap_or(false) {
                return Ok(Stopped::Cancelled);
            }
            match ingest::backfill::backfill_pds(self.state.log.clone(), &resolver, &url, &self.state.sync.collections).await {
                Ok(repos) => failures.extend(repos.into_iter().filter_map(Result::err).map(|e| e.to_string())),
                Err(e) => failures.push(format!("{url}: {e}")),
            }
            self.processed.fetch_add(1, Ordering::Relaxed);
        }
        if failures.is_empty() {
            Ok(Stopped::Done)
        } else {
            Err(format!("{} repositories failed; first: {}", failures.len(), failures[0]))
        }
    }
}

/// A host's HTTP base URL: a firehose's `ws(s)://` address becomes `http(s)://`.
fn as_http(url: &str) -> String {
    url.replacen("wss://", "https://", 1).replacen("ws://", "http://", 1)
}
