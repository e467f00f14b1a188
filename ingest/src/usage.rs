//! Deterministic reading of seeded papers (`svc seed --social`): views, downloads and search
//! clicks over the 60 days after each paper's announcement, as `command.usage` events with
//! their own times, so demos, tests and benchmarks have counts, windows and a trending list.
//! The same papers in the same order always give the same events. docs/seeding.md has the
//! distributions.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use event_schema::{NewEvent, Payload, Source, UsageAction, UsageEvent};
use sha2::{Digest, Sha256};

use crate::social::{Rng, SeededPaper};

/// Made-up readers: pseudonyms drawn from this many.
pub const READERS: u64 = 20_000;
/// Days of reading after a paper's announcement.
pub const DAYS: i64 = 60;
/// The most views one paper gets.
const MAX_VIEWS: f64 = 2_000.0;
/// Share of views (in percent) followed by a download from the same reader.
const DOWNLOAD_PERCENT: u64 = 25;
/// Share of views (in percent) that came from a search result.
const SEARCH_PERCENT: u64 = 30;

/// The relative weight of each UTC hour: a daily rhythm peaking in the afternoon (UTC, the
/// hours where Europe and the Americas overlap) and lowest before dawn.
const HOURLY: [u64; 24] = [3, 2, 2, 2, 2, 3, 4, 6, 8, 9, 10, 10, 11, 12, 12, 12, 11, 10, 9, 8, 7, 6, 5, 4];

/// The pseudonym of made-up reader `i` (32 hex digits, as the API's).
fn reader(i: u64) -> String {
    Sha256::digest(format!("svc-seed-reader/{i}").as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A uniform number in (0, 1].
fn unit(rng: &mut Rng) -> f64 {
    ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// Generates the uses of each seeded paper.
pub struct UsageGenerator {
    source: Source,
    /// Events written, for the report.
    pub events: usize,
}

impl UsageGenerator {
    /// A generator writing events with `source`.
    pub fn new(source: Source) -> UsageGenerator {
        UsageGenerator { source, events: 0 }
    }

    /// The uses of `paper`, in time order.
    ///
    /// - Views per paper are log-normal (`exp(0.9 + 1.2·z)`, floored: median 2, mean about
    ///   4, a heavy tail: 1 % of papers pass about 40), at most 2,000; a quarter are followed by a download 1 to 10 minutes later, and
    ///   30 % come from a search result (a click at a position drawn 0 to 9, smaller more
    ///   likely, just before the view).
    /// - A view's day is skewed to the first days after the announcement (day = 60·u²);
    ///   its hour follows [`HOURLY`]; its reader is one of [`READERS`], the popular ones
    ///   more often.
    pub fn events_for(&mut self, paper: &SeededPaper) -> Vec<NewEvent> {
        let Some(start) = NaiveDate::parse_from_str(&paper.date, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|d| d.and_utc())
        else {
            return Vec::new();
        };
        let mut rng = Rng::new(&format!("usage/{}", paper.uri));
        // Log-normal: exp(μ + σ·z), z standard normal by Box–Muller.
        let z = (-2.0 * unit(&mut rng).ln()).sqrt() * (std::f64::consts::TAU * unit(&mut rng)).cos();
        let views = (0.9 + 1.2 * z).exp().min(MAX_VIEWS).floor() as u64;
        let hours_total: u64 = HOURLY.iter().sum();
        let mut uses: Vec<(DateTime<Utc>, String, UsageAction)> = Vec::new();
        for _ in 0..views {
            let day = (DAYS as f64 * unit(&mut rng).powi(2)).floor() as i64;
            let mut pick = rng.below(hours_total);
            let hour = HOURLY
                .iter()
                .position(|w| {
                    pick < *w || {
                        pick -= w;
                        false
                    }
                })
                .unwrap_or(12) as i64;
            let at = start + Duration::days(day.min(DAYS - 1)) + Duration::hours(hour) + Duration::seconds(rng.below(3_600) as i64);
            // Readers: the square skews towards low numbers, who read more.
            let who = reader((READERS as f64 * unit(&mut rng).powi(2)) as u64 % READERS);
            if rng.chance(SEARCH_PERCENT) {
                let position = (10.0 * unit(&mut rng).powi(3)) as u32 % 10;
                let action = UsageAction::SearchClick { impression_id: None, query: None, position };
                uses.push((at - Duration::seconds(2), who.clone(), action));
            }
            uses.push((at, who.clone(), UsageAction::View { source: None }));
            if rng.chance(DOWNLOAD_PERCENT) {
                let later = at + Duration::seconds(60 + rng.below(540) as i64);
                uses.push((later, who, UsageAction::Download { format: Some("pdf".into()) }));
            }
        }
        uses.sort_by_key(|u| u.0);
        self.events += uses.len();
        uses.into_iter()
            .map(|(at, viewer, action)| NewEvent {
                key: paper.uri.clone(),
                source: self.source.clone(),
                payload: Payload::Usage(UsageEvent { viewer, robot: false, uri: paper.uri.clone(), action, at: Some(at) }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::SeedAccount;

    fn paper(i: usize) -> SeededPaper {
        SeededPaper {
            uri: format!("at://did:plc:seed{i:020}/pub.svc.eprint.submission/p{i}"),
            title: format!("Paper {i}"),
            owner: SeedAccount { did: format!("did:plc:seed{i:020}"), handle: String::new() },
            date: "2025-03-01".into(),
        }
    }

    #[test]
    fn uses_are_deterministic_in_time_order_within_sixty_days_and_heavy_tailed() {
        let mut g = UsageGenerator::new(Source::Manual { note: "t".into() });
        let first: Vec<NewEvent> = g.events_for(&paper(1));
        assert_eq!(first, UsageGenerator::new(Source::Manual { note: "t".into() }).events_for(&paper(1)));
        let start = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc();
        let mut views = Vec::new();
        for i in 0..2_000 {
            let events = g.events_for(&paper(i));
            let times: Vec<DateTime<Utc>> = events
                .iter()
                .map(|e| match &e.payload {
                    Payload::Usage(u) => u.at.unwrap(),
                    _ => unreachable!(),
                })
                .collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]));
            assert!(times.iter().all(|t| *t >= start - Duration::seconds(2) && *t < start + Duration::days(DAYS) + Duration::minutes(11)));
            views.push(
                events.iter().filter(|e| matches!(&e.payload, Payload::Usage(u) if matches!(u.action, UsageAction::View { .. }))).count(),
            );
        }
        views.sort_unstable();
        let (median, p99, total) = (views[1_000], views[1_980], views.iter().sum::<usize>());
        assert!((2..=4).contains(&median), "median {median}");
        assert!(p99 >= 30, "p99 {p99}");
        assert!(total > 2_000 * 4 && total < 2_000 * 12, "{total}");
    }
}
