//! The consensus rule of governance proposals (docs/spec details §7), as a pure function of
//! the votes svc has indexed: anyone replaying the log tallies the same outcome.
//!
//! Each voter counts once, by their newest vote (a second vote record replaces the first).
//! With at least [`Rule::min_votes`] voters (approve, reject and abstain all count), a
//! proposal is approved when approvals are at least [`Rule::approve_percent`] % of the
//! approvals and rejections, rejected when under [`Rule::reject_percent`] %, and pending
//! otherwise. Shares are compared in integers (`100·approve ≥ 67·(approve + reject)`), so
//! a threshold is met exactly, never by a rounding.

use petgraph::algo::astar;
use petgraph::graphmap::DiGraphMap;
use serde::Serialize;

/// The vote values a vote record may carry (the lexicon's known values, and abstain, which
/// the rule counts toward the minimum).
pub const VOTES: &[&str] = &["approve", "reject", "abstain"];

/// A consensus rule, reported with every proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Its name and version.
    pub rule: &'static str,
    /// The fewest voters a decision needs.
    pub min_votes: u64,
    /// Approved at or above this share of approvals among approvals and rejections (%).
    pub approve_percent: u64,
    /// Rejected below this share (%).
    pub reject_percent: u64,
    /// Each vote weighs 1 (the weighted option of details §7 is not applied).
    pub weighted: bool,
}

/// The rule svc applies.
pub const RULE: Rule = Rule { rule: "simple-majority/1", min_votes: 3, approve_percent: 67, reject_percent: 33, weighted: false };

/// One vote as indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ballot<'a> {
    /// The voter's DID.
    pub voter: &'a str,
    /// approve, reject or abstain.
    pub vote: &'a str,
    /// The vote's `createdAt` (µs): the newest of a voter's votes counts.
    pub at: i64,
    /// The vote record's URI: orders two votes of one voter with the same time.
    pub uri: &'a str,
}

/// Where a proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No decision yet.
    Pending,
    /// Consensus to make the change.
    Approved,
    /// Consensus against it.
    Rejected,
}

impl Status {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Rejected => "rejected",
        }
    }
}

/// The counted votes of a proposal and its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Voters whose newest vote approves.
    pub approve: u64,
    /// … rejects.
    pub reject: u64,
    /// … abstains.
    pub abstain: u64,
    /// Voters counted (each once).
    pub total: u64,
    /// The outcome.
    pub status: Status,
}

/// Tallies `ballots` by [`RULE`].
pub fn tally(ballots: &[Ballot]) -> Tally {
    tally_by(&RULE, ballots)
}

/// Tallies `ballots` by `rule`.
pub fn tally_by(rule: &Rule, ballots: &[Ballot]) -> Tally {
    let mut newest: std::collections::BTreeMap<&str, &Ballot> = std::collections::BTreeMap::new();
    for b in ballots {
        let entry = newest.entry(b.voter).or_insert(b);
        if (b.at, b.uri) > (entry.at, entry.uri) {
            *entry = b;
        }
    }
    let count = |v: &str| newest.values().filter(|b| b.vote == v).count() as u64;
    let (approve, reject, abstain) = (count("approve"), count("reject"), count("abstain"));
    let total = newest.len() as u64;
    let decided = approve + reject;
    let status = if total < rule.min_votes || decided == 0 {
        Status::Pending
    } else if 100 * approve >= rule.approve_percent * decided {
        Status::Approved
    } else if 100 * approve < rule.reject_percent * decided {
        Status::Rejected
    } else {
        Status::Pending
    };
    Tally { approve, reject, abstain, total, status }
}

/// The cycle a new broader edge `narrower → broader` would close among `edges` (pairs
/// narrower → broader): the path from `broader` back up to `narrower` that already exists,
/// or `None` when the edge closes none. An edge from a node to itself is a cycle of one.
pub fn broader_cycle<'a>(edges: &[(&'a str, &'a str)], narrower: &'a str, broader: &'a str) -> Option<Vec<&'a str>> {
    if narrower == broader {
        return Some(vec![narrower]);
    }
    let graph: DiGraphMap<&str, ()> = DiGraphMap::from_edges(edges.iter().copied());
    if !(graph.contains_node(narrower) && graph.contains_node(broader)) {
        return None;
    }
    astar(&graph, broader, |n| n == narrower, |_| 1u32, |_| 0).map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ballots(votes: &[(&'static str, &'static str, i64)]) -> Vec<Ballot<'static>> {
        votes.iter().map(|&(voter, vote, at)| Ballot { voter, vote, at, uri: "at://x" }).collect()
    }

    #[test]
    fn every_threshold_edge() {
        let status = |v: &[(&'static str, &'static str, i64)]| tally(&ballots(v)).status;
        // Under the minimum: pending whatever the votes.
        assert_eq!(status(&[("a", "approve", 1), ("b", "approve", 1)]), Status::Pending);
        // Three approvals: approved; abstentions count toward the minimum only.
        assert_eq!(status(&[("a", "approve", 1), ("b", "approve", 1), ("c", "approve", 1)]), Status::Approved);
        assert_eq!(status(&[("a", "approve", 1), ("b", "abstain", 1), ("c", "abstain", 1)]), Status::Approved);
        assert_eq!(status(&[("a", "abstain", 1), ("b", "abstain", 1), ("c", "abstain", 1)]), Status::Pending);
        // 2 of 3 is 66.7 %: under 67 %, pending; 67 of 100 exactly: approved; 66 of 100 not.
        assert_eq!(status(&[("a", "approve", 1), ("b", "approve", 1), ("c", "reject", 1)]), Status::Pending);
        let mut many: Vec<(&'static str, &'static str, i64)> = Vec::new();
        let voters: Vec<&'static str> = (0..100).map(|i| &*Box::leak(format!("v{i}").into_boxed_str())).collect();
        for (i, v) in voters.iter().enumerate() {
            many.push((v, if i < 67 { "approve" } else { "reject" }, 1));
        }
        assert_eq!(status(&many), Status::Approved);
        many[66].1 = "reject";
        assert_eq!(status(&many), Status::Pending, "66 %");
        // Rejected under 33 %: 33 of 100 is not under, 32 is.
        for (i, b) in many.iter_mut().enumerate() {
            b.1 = if i < 33 { "approve" } else { "reject" };
        }
        assert_eq!(status(&many), Status::Pending, "33 %");
        many[32].1 = "reject";
        assert_eq!(status(&many), Status::Rejected, "32 %");
        assert_eq!(status(&[("a", "reject", 1), ("b", "reject", 1), ("c", "reject", 1)]), Status::Rejected);
        // A voter's newest vote counts, once.
        assert_eq!(status(&[("a", "reject", 1), ("a", "approve", 2), ("b", "approve", 1), ("c", "approve", 1)]), Status::Approved);
        assert_eq!(status(&[("a", "approve", 1), ("a", "approve", 2), ("a", "approve", 3)]), Status::Pending, "one voter is one vote");
    }

    #[test]
    fn a_broader_edge_that_closes_a_cycle_is_found_with_its_path() {
        let edges = [("cs.LG", "cs"), ("cs", "science"), ("math.CO", "math")];
        assert_eq!(broader_cycle(&edges, "science", "cs.LG"), Some(vec!["cs.LG", "cs", "science"]));
        assert_eq!(broader_cycle(&edges, "cs", "cs"), Some(vec!["cs"]));
        assert_eq!(broader_cycle(&edges, "math", "cs"), None, "joining two trees closes nothing");
        assert_eq!(broader_cycle(&edges, "cs.LG", "science"), None, "a shortcut along the same direction is no cycle");
        assert_eq!(broader_cycle(&edges, "new", "cs"), None);
    }

    /// The rule written out the long way: shares as exact fractions, the voter's newest vote
    /// by sorting.
    fn reference(votes: &[(u8, u8, i64)]) -> (u64, u64, u64, Status) {
        let mut sorted = votes.to_vec();
        sorted.sort_by_key(|&(voter, _, at)| (voter, at));
        let mut last: Vec<(u8, u8)> = Vec::new();
        for (voter, vote, _) in sorted {
            match last.iter_mut().find(|(v, _)| *v == voter) {
                Some(entry) => entry.1 = vote,
                None => last.push((voter, vote)),
            }
        }
        let n = |k: u8| last.iter().filter(|(_, v)| *v == k).count() as u64;
        let (a, r, x) = (n(0), n(1), n(2));
        let status = if (last.len() as u64) < 3 || a + r == 0 {
            Status::Pending
        } else {
            // a / (a + r) against 67/100 and 33/100, as fractions over a common denominator.
            let (share, whole) = (a * 100, (a + r) * 100);
            if share * 100 >= 67 * whole {
                Status::Approved
            } else if share * 100 < 33 * whole {
                Status::Rejected
            } else {
                Status::Pending
            }
        };
        (a, r, x, status)
    }

    proptest! {
        #[test]
        fn the_tally_matches_the_reference(votes in proptest::collection::vec((0u8..12, 0u8..3, 0i64..5), 0..40)) {
            // Distinct times per voter, so "newest" is the same under both orders.
            let mut seen = std::collections::BTreeSet::new();
            let votes: Vec<(u8, u8, i64)> = votes.into_iter().filter(|&(v, _, at)| seen.insert((v, at))).collect();
            let names: Vec<String> = (0..12).map(|i| format!("did:plc:v{i}")).collect();
            let ballots: Vec<Ballot> = votes.iter().map(|&(v, k, at)| Ballot { voter: &names[v as usize], vote: VOTES[k as usize], at, uri: "at://x" }).collect();
            let t = tally(&ballots);
            let (a, r, x, status) = reference(&votes);
            prop_assert_eq!((t.approve, t.reject, t.abstain, t.status), (a, r, x, status));
        }
    }
}
