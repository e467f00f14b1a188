//! How far behind the log each read model is, in events and in time, now and over the last
//! hour: the operator console's lag chart (`pub.svc.admin.getSystemHealth`'s `lagHistory`).
//!
//! A model is as many events behind as the log holds past its checkpoints, and as far behind
//! in time as the oldest of those events has waited (now minus when the log accepted the
//! first event it has not applied, over its partitions): 0 when it has applied everything.
//! A node samples every [`SAMPLE_EVERY`] and keeps an hour of samples in memory.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::state::AppState;

/// How often a node samples its models' lag.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(30);

/// How many samples a node keeps: an hour's.
const KEPT: usize = 120;

/// One model's lag.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelLag {
    /// The model.
    pub model: &'static str,
    /// Events in the log it has not applied.
    pub lag: u64,
    /// How long the oldest of them has waited, in milliseconds (0 when none waits).
    pub behind_ms: u64,
}

/// The models' lag at one instant.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// When.
    pub at: DateTime<Utc>,
    /// Each model's.
    pub models: Vec<ModelLag>,
}

/// The samples of the last hour, oldest first.
#[derive(Default)]
pub struct LagHistory(Mutex<VecDeque<Sample>>);

impl LagHistory {
    /// Keeps `sample`, dropping those older than an hour's worth.
    pub fn push(&self, sample: Sample) {
        let mut samples = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if samples.len() == KEPT {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// The samples kept, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }
}

/// Every model's lag now (blocking: reads the log and the store). Models whose checkpoints
/// cannot be read are left out.
pub fn measure(state: &AppState) -> Vec<ModelLag> {
    let Ok(ends) = state.log.end_offsets() else { return Vec::new() };
    let now = Utc::now();
    let mut out = Vec::new();
    for model in projections::catalog::MODELS.iter() {
        let checkpoints = match state.progress.iter().find(|(m, _)| m == model) {
            Some((_, rx)) => rx.borrow().checkpoints.clone(),
            None => {
                let registry = if projections::catalog::NODE_MODELS.contains(model) { &state.node } else { &state.store };
                match registry.active_version(model) {
                    Ok(Some(v)) => match registry.checkpoints(&store::consumer_name(model, v)) {
                        Ok(c) => c,
                        Err(_) => continue,
                    },
                    _ => continue,
                }
            }
        };
        let Ok(lag) = state.log.events_behind(&checkpoints) else { continue };
        let mut behind = 0u64;
        for (partition, end) in ends.iter().enumerate() {
            let at = checkpoints.get(&(partition as u32)).copied().unwrap_or(0);
            if at >= *end {
                continue;
            }
            if let Ok(Some(first)) = state.log.read(partition as u32, at, 1).map(|e| e.into_iter().next()) {
                behind = behind.max((now - first.appended_at).num_milliseconds().max(0) as u64);
            }
        }
        out.push(ModelLag { model, lag, behind_ms: behind });
    }
    out
}

/// Samples the models' lag every [`SAMPLE_EVERY`] into the node's history, for as long as
/// the node serves.
pub async fn sample_forever(state: AppState) {
    let mut every = tokio::time::interval(SAMPLE_EVERY);
    loop {
        every.tick().await;
        let s = state.clone();
        if let Ok(models) = tokio::task::spawn_blocking(move || measure(&s)).await {
            state.lag_history.push(Sample { at: Utc::now(), models });
        }
    }
}
