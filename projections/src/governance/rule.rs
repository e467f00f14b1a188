//! The consensus rule of governance proposals (docs/spec details §7), as a pure function of
//! the votes svc has indexed: anyone replaying the log tallies the same outcome.
//!
//! Each voter counts once, by their newest vote (a second vote record replaces the first).
//! With at least [`Rule::min_votes`] voters (approve, reject and abstain all count), a
//! proposal is approved when approvals are at least [`Rule::approve_percent`] % of the
//! approvals and rejections, rejected when under [`Rule::reject_percent`] %, and pending
//! otherwise. Shares are compared in integers (`100·approve ≥ 67·(approve + reject)`), so
//! a threshold is met exactly, never by a rounding.
//!
//! The weighted option ([`WEIGHTED`], details §7) weighs each vote by its voter's governance
//! role ([`weight`]), needs [`Rule::min_trusted_approvals`] approvals by trusted editors or
//! above, and lets an administrator's rejection veto the proposal.

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
    /// Each vote weighs by its voter's role ([`weight`]) instead of 1.
    pub weighted: bool,
    /// Approvals by trusted editors (or a higher role) an approval needs.
    pub min_trusted_approvals: u64,
    /// An administrator's rejection rejects the proposal whatever the other votes.
    pub administrator_veto: bool,
}

/// The rule svc applies by default: one voter, one vote.
pub const RULE: Rule = Rule {
    rule: "simple-majority/1",
    min_votes: 3,
    approve_percent: 67,
    reject_percent: 33,
    weighted: false,
    min_trusted_approvals: 0,
    administrator_veto: false,
};

/// The weighted option of details §7: votes weigh by role, at least 5 voters, a weighted
/// approve share of 66 %, two approvals by trusted editors or above, an administrator's
/// veto. (The specification gives no rejection share for it: under 33 % rejects, as the
/// simple rule does.)
pub const WEIGHTED: Rule = Rule {
    rule: "weighted/1",
    min_votes: 5,
    approve_percent: 66,
    reject_percent: 33,
    weighted: true,
    min_trusted_approvals: 2,
    administrator_veto: true,
};

/// The rule of a name (`simple`, `weighted`).
pub fn rule_named(name: &str) -> Option<Rule> {
    match name {
        "simple" => Some(RULE),
        "weighted" => Some(WEIGHTED),
        _ => None,
    }
}

/// What a vote weighs under the weighted option, by the voter's governance role:
/// community member 1, trusted editor 2 (and graph editor, the role between them and
/// domain experts), domain expert 3, administrator 5.
pub fn weight(role: &str) -> u64 {
    match role {
        "administrator" => 5,
        "domain-expert" => 3,
        "trusted-editor" | "graph-editor" => 2,
        _ => 1,
    }
}

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
    /// The voter's governance role (`community-member` when none).
    pub role: &'a str,
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
    /// The approvals' weight (their number, unweighted).
    pub weighted_approve: u64,
    /// The rejections' weight.
    pub weighted_reject: u64,
    /// Whether an administrator's rejection vetoed it.
    pub vetoed: bool,
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
    let weigh = |v: &str| newest.values().filter(|b| b.vote == v).map(|b| if rule.weighted { weight(b.role) } else { 1 }).sum::<u64>();
    let (weighted_approve, weighted_reject) = (weigh("approve"), weigh("reject"));
    let trusted = newest.values().filter(|b| b.vote == "approve" && weight(b.role) >= 2).count() as u64;
    let vetoed = rule.administrator_veto && newest.values().any(|b| b.vote == "reject" && b.role == "administrator");
    let decided = weighted_approve + weighted_reject;
    let status = if vetoed {
        Status::Rejected
    } else if total < rule.min_votes || decided == 0 {
        Status::Pending
    } else if 100 * weighted_approve >= rule.approve_percent * decided && trusted >= rule.min_trusted_approvals {
        Status::Approved
    } else if 100 * weighted_approve < rule.reject_percent * decided {
        Status::Rejected
    } else {
        Status::Pending
    };
    Tally { approve, reject, abstain, total, weighted_approve, weighted_reject, vetoed, status }
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
        votes.iter().map(|&(voter, vote, at)| Ballot { voter, vote, at, uri: "at://x", role: "community-member" }).collect()
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
    fn every_edge_of_the_weighted_option() {
        let status = |v: &[(&'static str, &'static str, &'static str)]| {
            let ballots: Vec<Ballot> = v.iter().map(|&(voter, vote, role)| Ballot { voter, vote, at: 1, uri: "at://x", role }).collect();
            tally_by(&WEIGHTED, &ballots)
        };
        let (m, t, d, a) = ("community-member", "trusted-editor", "domain-expert", "administrator");
        // Four voters are under the minimum of five, whatever they weigh.
        assert_eq!(status(&[("1", "approve", a), ("2", "approve", t), ("3", "approve", t), ("4", "approve", d)]).status, Status::Pending);
        // Five approvals, two by trusted editors: approved; one by a trusted editor: pending.
        let five = [("1", "approve", t), ("2", "approve", t), ("3", "approve", m), ("4", "approve", m), ("5", "abstain", m)];
        assert_eq!(status(&five).status, Status::Approved);
        let mut one_trusted = five;
        one_trusted[1].2 = m;
        assert_eq!(status(&one_trusted).status, Status::Pending, "two approvals by trusted editors are needed");
        // Weights: 2+2 approve against 1+1 reject is 66.7 %: approved; a domain expert's
        // rejection (3) makes it 4 of 8, 50 %: pending.
        let w = status(&[("1", "approve", t), ("2", "approve", t), ("3", "reject", m), ("4", "reject", m), ("5", "abstain", m)]);
        assert_eq!((w.weighted_approve, w.weighted_reject, w.status), (4, 2, Status::Approved));
        let w = status(&[("1", "approve", t), ("2", "approve", t), ("3", "reject", d), ("4", "reject", m), ("5", "abstain", m)]);
        assert_eq!((w.weighted_approve, w.weighted_reject, w.status), (4, 4, Status::Pending));
        // 9 of 15 is 60 %: under 66 %, and not under 33 %: pending.
        let w = status(&[("1", "approve", a), ("2", "approve", t), ("3", "approve", t), ("4", "reject", d), ("5", "reject", d)]);
        assert_eq!((w.weighted_approve, w.weighted_reject, w.status), (9, 6, Status::Pending));
        // An administrator's rejection vetoes, whatever the rest.
        let w = status(&[("1", "approve", d), ("2", "approve", t), ("3", "approve", t), ("4", "approve", d), ("5", "reject", a)]);
        assert_eq!((w.vetoed, w.status), (true, Status::Rejected));
        // Under 33 % weighted: rejected.
        let w = status(&[("1", "reject", d), ("2", "reject", t), ("3", "approve", m), ("4", "abstain", m), ("5", "abstain", m)]);
        assert_eq!((w.weighted_approve, w.weighted_reject, w.status), (1, 5, Status::Rejected));
        // Under the simple rule the same votes weigh 1 each.
        let ballots = [
            Ballot { voter: "1", vote: "reject", at: 1, uri: "at://x", role: a },
            Ballot { voter: "2", vote: "approve", at: 1, uri: "at://x", role: m },
            Ballot { voter: "3", vote: "approve", at: 1, uri: "at://x", role: m },
        ];
        let simple = tally_by(&RULE, &ballots);
        assert_eq!((simple.weighted_approve, simple.vetoed, simple.status), (2, false, Status::Pending));
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

    /// Each voter's newest vote, `(voter, vote)`, by sorting `(voter, vote, at)`.
    fn newest(votes: &[(u8, u8, i64)]) -> Vec<(u8, u8)> {
        let mut sorted = votes.to_vec();
        sorted.sort_by_key(|&(voter, _, at)| (voter, at));
        let mut last: Vec<(u8, u8)> = Vec::new();
        for (voter, vote, _) in sorted {
            match last.iter_mut().find(|(v, _)| *v == voter) {
                Some(entry) => entry.1 = vote,
                None => last.push((voter, vote)),
            }
        }
        last
    }

    /// The rule written out the long way: shares as exact fractions, the voter's newest vote
    /// by sorting.
    fn reference(votes: &[(u8, u8, i64)]) -> (u64, u64, u64, Status) {
        let last = newest(votes);
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

    /// The weighted option written out the long way, a voter's role fixed by their number.
    fn reference_weighted(votes: &[(u8, u8, i64)]) -> Status {
        const ROLES: [(&str, u64); 4] = [("community-member", 1), ("trusted-editor", 2), ("domain-expert", 3), ("administrator", 5)];
        let last = newest(votes);
        let role = |voter: u8| ROLES[voter as usize % 4];
        if last.iter().any(|&(v, k)| k == 1 && role(v).0 == "administrator") {
            return Status::Rejected;
        }
        let sum = |k: u8| last.iter().filter(|(_, v)| *v == k).map(|&(voter, _)| role(voter).1).sum::<u64>();
        let (a, r) = (sum(0), sum(1));
        let trusted = last.iter().filter(|&&(voter, k)| k == 0 && role(voter).1 >= 2).count();
        if last.len() < 5 || a + r == 0 {
            Status::Pending
        } else if a * 100 >= 66 * (a + r) && trusted >= 2 {
            Status::Approved
        } else if a * 100 < 33 * (a + r) {
            Status::Rejected
        } else {
            Status::Pending
        }
    }

    proptest! {
        #[test]
        fn the_weighted_tally_matches_the_reference(votes in proptest::collection::vec((0u8..12, 0u8..3, 0i64..5), 0..40)) {
            const ROLES: [&str; 4] = ["community-member", "trusted-editor", "domain-expert", "administrator"];
            let mut seen = std::collections::BTreeSet::new();
            let votes: Vec<(u8, u8, i64)> = votes.into_iter().filter(|&(v, _, at)| seen.insert((v, at))).collect();
            let names: Vec<String> = (0..12).map(|i| format!("did:plc:v{i}")).collect();
            let ballots: Vec<Ballot> = votes
                .iter()
                .map(|&(v, k, at)| Ballot { voter: &names[v as usize], vote: VOTES[k as usize], at, uri: "at://x", role: ROLES[v as usize % 4] })
                .collect();
            prop_assert_eq!(tally_by(&WEIGHTED, &ballots).status, reference_weighted(&votes));
        }

        #[test]
        fn the_tally_matches_the_reference(votes in proptest::collection::vec((0u8..12, 0u8..3, 0i64..5), 0..40)) {
            // Distinct times per voter, so "newest" is the same under both orders.
            let mut seen = std::collections::BTreeSet::new();
            let votes: Vec<(u8, u8, i64)> = votes.into_iter().filter(|&(v, _, at)| seen.insert((v, at))).collect();
            let names: Vec<String> = (0..12).map(|i| format!("did:plc:v{i}")).collect();
            let ballots: Vec<Ballot> = votes.iter().map(|&(v, k, at)| Ballot { voter: &names[v as usize], vote: VOTES[k as usize], at, uri: "at://x", role: "community-member" }).collect();
            let t = tally(&ballots);
            let (a, r, x, status) = reference(&votes);
            prop_assert_eq!((t.approve, t.reject, t.abstain, t.status), (a, r, x, status));
        }
    }
}
