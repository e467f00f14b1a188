//! A circuit breaker: after `threshold` failures in a row a source is not called for
//! `cool_down`; then one call is let through, and its outcome closes the circuit or opens
//! it again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct Breaker {
    threshold: u32,
    cool_down: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
}

impl Breaker {
    pub(crate) fn new(threshold: u32, cool_down: Duration) -> Breaker {
        Breaker { threshold: threshold.max(1), cool_down, state: Mutex::new(State::default()) }
    }

    /// `Err(time left)` while the circuit is open.
    pub(crate) fn check(&self) -> Result<(), Duration> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.open_until {
            Some(until) if until > Instant::now() => Err(until - Instant::now()),
            Some(_) => {
                // Half open: this call is the trial; its failure opens the circuit again
                // at once (the count is still at the threshold).
                s.open_until = None;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Records a call's outcome.
    pub(crate) fn record(&self, ok: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if ok {
            *s = State::default();
            return;
        }
        s.failures = s.failures.saturating_add(1);
        if s.failures >= self.threshold {
            s.open_until = Some(Instant::now() + self.cool_down);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_and_lets_one_trial_through_after_the_cool_down() {
        let b = Breaker::new(3, Duration::from_millis(40));
        for _ in 0..2 {
            b.record(false);
            assert!(b.check().is_ok(), "below the threshold");
        }
        b.record(false);
        assert!(b.check().is_err(), "open at the threshold");
        std::thread::sleep(Duration::from_millis(50));
        assert!(b.check().is_ok(), "a trial after the cool-down");
        b.record(false);
        assert!(b.check().is_err(), "a failed trial opens it again at once");
        std::thread::sleep(Duration::from_millis(50));
        assert!(b.check().is_ok());
        b.record(true);
        b.record(false);
        assert!(b.check().is_ok(), "a success closes it: one failure is below the threshold");
    }
}
