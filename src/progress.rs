//! Progress of long work (seeding, catching up, replaying): a bar with rate and ETA on a
//! terminal, and a log line every few seconds otherwise (a service's log, CI, a pipe).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tracing::info;

/// How often a log line reports progress when stderr is not a terminal (`--progress-interval`).
static LOG_EVERY: OnceLock<Duration> = OnceLock::new();

/// Sets how often progress is logged when stderr is not a terminal (once, at start).
pub fn set_log_interval(every: Duration) {
    let _ = LOG_EVERY.set(every);
}

fn log_every() -> Duration {
    LOG_EVERY.get().copied().unwrap_or(Duration::from_secs(5))
}

/// One piece of long work, measured in `unit`s out of a known total.
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    total: AtomicU64,
    started: Instant,
    bar: Option<ProgressBar>,
    last_log: Mutex<Instant>,
}

impl Progress {
    /// Starts showing progress of `what` (e.g. "seeding"), `total` `unit`s in all.
    pub fn new(what: &'static str, unit: &'static str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let template = format!("{{msg}} [{{bar:40}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec}}, ETA {{eta}})");
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(what);
            bar
        });
        let now = Instant::now();
        Progress { what, unit, total: AtomicU64::new(total), started: now, bar, last_log: Mutex::new(now) }
    }

    /// The total grew (more work arrived meanwhile).
    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.set_length(total);
        }
    }

    /// `done` units are done.
    pub fn set(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        let Ok(mut last) = self.last_log.lock() else { return };
        if last.elapsed() < log_every() {
            return;
        }
        *last = Instant::now();
        let total = self.total.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let rate = done as f64 / secs.max(1e-9);
        let eta = (rate > 0.0).then(|| (total.saturating_sub(done)) as f64 / rate);
        let percent = if total == 0 { 100.0 } else { 100.0 * done as f64 / total as f64 };
        info!(
            done,
            total,
            unit = self.unit,
            percent = format!("{percent:.1}"),
            per_second = rate.round() as u64,
            eta_seconds = eta.map(|e| e.round() as u64),
            "{}",
            self.what
        );
    }

    /// The work is over: the bar is cleared (the caller reports the outcome).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
