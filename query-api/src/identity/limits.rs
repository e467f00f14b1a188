//! Rate limits: the contract's four tiers (requests per minute), each a keyed GCRA limiter
//! of `governor`, keyed by IP for anonymous callers and by DID otherwise. A refused request
//! costs nothing (the limiter takes a cell only when it lets one through), and nothing here
//! needs another server, so the limits never fail closed.
//!
//! Several query nodes: each enforces its share of a tier, `ceil(limit / nodes)`
//! (`--rate-limit-nodes`), so a caller whose requests a load balancer spreads over the nodes
//! gets about the tier's limit in all, and never more.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

/// A tier of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Unauthenticated requests, per IP.
    Anonymous,
    /// A signed-in user or a user's service-auth token.
    Authenticated,
    /// Verified researchers and institutions: holders of `premium` or `admin`.
    Elevated,
    /// Approved server-to-server applications.
    Service,
}

impl Tier {
    fn index(self) -> usize {
        self as usize
    }

    /// The tier's name.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Anonymous => "anonymous",
            Tier::Authenticated => "authenticated",
            Tier::Elevated => "elevated",
            Tier::Service => "service",
        }
    }
}

/// The contract's limits, requests per minute, by tier.
pub const CONTRACT_TIERS: [u32; 4] = [60, 300, 1000, 5000];

/// The rate-limit settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSettings {
    /// Requests per minute of each tier (anonymous, authenticated, elevated, service), or
    /// `None`: no limits.
    pub tiers: Option<[u32; 4]>,
    /// The number of query nodes sharing each limit.
    pub nodes: u32,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpAddr>,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings { tiers: Some(CONTRACT_TIERS), nodes: 1, trusted_proxies: Vec::new() }
    }
}

/// Parses `--rate-limits`: `off`, or four numbers separated by commas.
pub fn parse_tiers(s: &str) -> Result<Option<[u32; 4]>, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let numbers: Vec<u32> = s.split(',').map(|n| n.trim().parse::<u32>()).collect::<Result<_, _>>().map_err(|e| format!("{s:?}: {e}"))?;
    match <[u32; 4]>::try_from(numbers) {
        Ok(t) if t.iter().all(|n| *n > 0) => Ok(Some(t)),
        _ => Err(format!("{s:?}: give four positive numbers (anonymous,authenticated,elevated,service) or off")),
    }
}

type Limiter = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// What the limiter decided about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The limit that applies (this node's share), per minute.
    pub limit: u32,
    /// Requests left before a refusal.
    pub remaining: u32,
    /// Seconds until the full limit is available again.
    pub reset_after: u64,
    /// Seconds to wait before a retry, when refused.
    pub retry_after: Option<u64>,
}

impl Verdict {
    /// Whether the request may go on.
    pub fn allowed(&self) -> bool {
        self.retry_after.is_none()
    }

    /// Sets the contract's `X-RateLimit-*` headers and the IETF draft's `RateLimit-Policy`
    /// and `RateLimit` fields (and `Retry-After` when refused).
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        let reset_at = chrono::Utc::now().timestamp() as u64 + self.reset_after;
        let mut set = |name: &'static str, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), v);
            }
        };
        set("x-ratelimit-limit", self.limit.to_string());
        set("x-ratelimit-remaining", self.remaining.to_string());
        set("x-ratelimit-reset", reset_at.to_string());
        set("ratelimit-policy", format!("{};w=60", self.limit));
        set("ratelimit", format!("limit={}, remaining={}, reset={}", self.limit, self.remaining, self.reset_after));
        if let Some(s) = self.retry_after {
            set("retry-after", s.to_string());
        }
    }
}

/// The limiters of one node.
pub struct RateLimits {
    tiers: Option<Vec<(u32, Limiter)>>,
    trusted_proxies: Vec<IpAddr>,
    checks: AtomicU64,
    clock: DefaultClock,
}

/// Checks between two sweeps of keys whose limit is full again.
const SWEEP_EVERY: u64 = 10_000;

impl RateLimits {
    /// Limiters for `settings`.
    pub fn new(settings: &LimitSettings) -> RateLimits {
        let nodes = settings.nodes.max(1);
        let tiers = settings.tiers.map(|t| {
            t.iter()
                .map(|per_minute| {
                    let share = per_minute.div_ceil(nodes).max(1);
                    let quota = Quota::per_minute(NonZeroU32::new(share).expect("positive"));
                    (share, RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>())
                })
                .collect()
        });
        RateLimits { tiers, trusted_proxies: settings.trusted_proxies.clone(), checks: AtomicU64::new(0), clock: DefaultClock::default() }
    }

    /// Whether limits are on.
    pub fn enabled(&self) -> bool {
        self.tiers.is_some()
    }

    /// Takes one request of `key` in `tier`, if the limit allows; `None` when limits are off.
    pub fn check(&self, tier: Tier, key: &str) -> Option<Verdict> {
        let tiers = self.tiers.as_ref()?;
        let (limit, limiter) = &tiers[tier.index()];
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            for (_, l) in tiers {
                l.retain_recent();
            }
        }
        let per_cell = 60.0 / f64::from(*limit);
        Some(match limiter.check_key(&key.to_owned()) {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity();
                Verdict {
                    limit: *limit,
                    remaining,
                    reset_after: (f64::from(limit - remaining) * per_cell).ceil() as u64,
                    retry_after: None,
                }
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Verdict {
                    limit: *limit,
                    remaining: 0,
                    reset_after: (f64::from(*limit) * per_cell).ceil() as u64,
                    retry_after: Some(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)),
                }
            }
        })
    }

    /// The client's address: the peer's, or the nearest untrusted address in
    /// `X-Forwarded-For` when the peer is a trusted proxy.
    pub fn client_ip(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?;
        if !self.trusted_proxies.contains(&peer) {
            return Some(peer);
        }
        let forwarded: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse().ok())
            .collect();
        Some(forwarded.into_iter().rev().find(|a| !self.trusted_proxies.contains(a)).unwrap_or(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tier_lets_its_limit_through_then_refuses_with_a_wait() {
        let limits = RateLimits::new(&LimitSettings::default());
        for i in 0..60 {
            let v = limits.check(Tier::Anonymous, "1.2.3.4").unwrap();
            assert!(v.allowed(), "request {i}");
            assert_eq!(v.remaining, 59 - i);
        }
        let v = limits.check(Tier::Anonymous, "1.2.3.4").unwrap();
        assert!(!v.allowed());
        assert!((1..=60).contains(&v.retry_after.unwrap()), "{v:?}");
        assert!(limits.check(Tier::Anonymous, "5.6.7.8").unwrap().allowed(), "per key");
        assert!(limits.check(Tier::Authenticated, "1.2.3.4").unwrap().allowed(), "per tier");
    }

    #[test]
    fn each_node_enforces_its_share_and_off_means_off() {
        let settings = LimitSettings { nodes: 2, ..LimitSettings::default() };
        let (a, b) = (RateLimits::new(&settings), RateLimits::new(&settings));
        let allowed = (0..61).filter(|i| if i % 2 == 0 { &a } else { &b }.check(Tier::Anonymous, "ip").unwrap().allowed()).count();
        assert_eq!(allowed, 60, "two nodes at 30 each let the tier's 60 through in all");
        assert_eq!(a.check(Tier::Anonymous, "x").unwrap().limit, 30);
        let off = RateLimits::new(&LimitSettings { tiers: None, ..LimitSettings::default() });
        assert!(off.check(Tier::Anonymous, "ip").is_none());
        assert_eq!(parse_tiers("off").unwrap(), None);
        assert_eq!(parse_tiers("1,2,3,4").unwrap(), Some([1, 2, 3, 4]));
        assert!(parse_tiers("1,2,3").is_err() && parse_tiers("0,1,2,3").is_err() && parse_tiers("a,b,c,d").is_err());
    }

    #[test]
    fn forwarded_for_is_believed_from_trusted_proxies_only() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let limits = RateLimits::new(&LimitSettings { trusted_proxies: vec![proxy], ..LimitSettings::default() });
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "203.0.113.9, 10.0.0.1".parse().unwrap());
        assert_eq!(limits.client_ip(Some(proxy), &h), Some("203.0.113.9".parse().unwrap()));
        let stranger: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(limits.client_ip(Some(stranger), &h), Some(stranger), "a client cannot pick its own address");
    }
}
