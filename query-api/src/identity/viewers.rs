//! Who uses an eprint, as `pub.svc.metrics.record*` counts them: a pseudonym per viewer,
//! robots told apart by the COUNTER-Robots list, and a limit per viewer beyond the request
//! rate limits, so that one client cannot inflate a paper's counts.
//!
//! A signed-in caller is one viewer wherever they read from (a pseudonym of their DID); an
//! anonymous one is their address and user agent together, as COUNTER identifies a session
//! without a login. The pseudonym is a keyed hash ([`KeySet::pseudonym`]): the log and the
//! read models never hold an address or a DID for a use.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::LazyLock;

use governor::clock::DefaultClock;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use regex::{RegexSet, RegexSetBuilder};

use super::keys::KeySet;

/// Uses one viewer may record per minute (all `record*` calls together), in a burst or
/// spread: a reader opening, reading and downloading a paper every few seconds stays well
/// under it; more is refused (429) and not recorded.
pub const USES_PER_MINUTE: u32 = 60;

/// The COUNTER-Robots list (`query-api/data/README.md` says where it comes from).
const ROBOTS: &str = include_str!("../../data/COUNTER_Robots_list.txt");

static ROBOT_PATTERNS: LazyLock<RegexSet> = LazyLock::new(|| {
    let patterns: Vec<&str> = ROBOTS.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    RegexSetBuilder::new(patterns).case_insensitive(true).size_limit(64 << 20).build().expect("the committed list compiles")
});

/// Whether `user_agent` is a robot's by the COUNTER-Robots list. A request without a user
/// agent matches the list's `^.?$` (an empty one).
pub fn is_robot(user_agent: Option<&str>) -> bool {
    ROBOT_PATTERNS.is_match(user_agent.unwrap_or_default())
}

type Limiter = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock>;

/// The viewer side of the identity layer.
pub struct Viewers {
    limiter: Option<Limiter>,
}

impl Viewers {
    /// Viewers limited to [`USES_PER_MINUTE`] each, or not limited (`limited` false: the
    /// request rate limits are off, as in load tests).
    pub fn new(limited: bool) -> Viewers {
        let quota = Quota::per_minute(NonZeroU32::new(USES_PER_MINUTE).expect("positive"));
        Viewers { limiter: limited.then(|| RateLimiter::keyed(quota)) }
    }

    /// The pseudonym of a viewer: the verified caller's DID, else the client's address and
    /// user agent.
    pub fn pseudonym(keys: &KeySet, caller: Option<&str>, ip: Option<IpAddr>, user_agent: Option<&str>) -> String {
        match caller {
            Some(did) => keys.pseudonym(&[b"did ", did.as_bytes()]),
            None => {
                let ip = ip.map(|i| i.to_string()).unwrap_or_default();
                keys.pseudonym(&[b"client ", ip.as_bytes(), b" ", user_agent.unwrap_or_default().as_bytes()])
            }
        }
    }

    /// Takes one use of `viewer`; `false` when the viewer is over the limit.
    pub fn allow(&self, viewer: &str) -> bool {
        let Some(limiter) = &self.limiter else { return true };
        if limiter.len() > 100_000 {
            limiter.retain_recent();
        }
        limiter.check_key(&viewer.to_owned()).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_are_told_by_the_counter_list_and_browsers_are_not() {
        assert!(is_robot(Some("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")));
        assert!(is_robot(Some("python-requests/2.31")));
        assert!(is_robot(None));
        assert!(!is_robot(Some("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")));
    }

    #[test]
    fn pseudonyms_are_stable_per_viewer_and_differ_between_them() {
        let keys = KeySet::ephemeral();
        let ip: Option<IpAddr> = Some("10.0.0.1".parse().unwrap());
        let a = Viewers::pseudonym(&keys, None, ip, Some("Firefox"));
        assert_eq!(a, Viewers::pseudonym(&keys, None, ip, Some("Firefox")));
        assert_eq!(a.len(), 32);
        assert_ne!(a, Viewers::pseudonym(&keys, None, ip, Some("Chrome")));
        let did = Viewers::pseudonym(&keys, Some("did:plc:a"), ip, Some("Firefox"));
        assert_eq!(did, Viewers::pseudonym(&keys, Some("did:plc:a"), None, None));
        assert!(!did.contains("plc"));
        assert_ne!(did, Viewers::pseudonym(&KeySet::ephemeral(), Some("did:plc:a"), None, None));
    }

    #[test]
    fn a_viewer_past_the_limit_is_refused_and_others_are_not() {
        let v = Viewers::new(true);
        let allowed = (0..1_000).filter(|_| v.allow("x")).count();
        assert_eq!(allowed, USES_PER_MINUTE as usize);
        assert!(v.allow("y"));
        assert!((0..1_000).all(|_| Viewers::new(false).allow("x")));
    }
}
