//! Communities of the shared knowledge graph: groups of nodes more densely linked to each
//! other than to the rest, by Louvain modularity optimisation (graphrs) or by label
//! propagation. Computed by a job over the graph as indexed, whose output is a command
//! event (`communitiesComputed`), never per request: a replay reads the same communities.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use graphrs::{Edge, Graph, GraphSpecs, Node};

/// The algorithms, by the names the API takes.
pub const ALGORITHMS: &[&str] = &["louvain", "label-propagation"];

/// The seed of Louvain's node order: the same graph gives the same communities.
const SEED: u64 = 1;

/// The most rounds label propagation runs before it stops (it usually settles in a few).
const MAX_ROUNDS: usize = 50;

/// The undirected simple graph of `edges` (pairs of node ids) over `nodes`: each pair once,
/// no loops, no edge to a node not listed.
fn adjacency(nodes: &[String], edges: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut adj: BTreeMap<String, BTreeSet<String>> = nodes.iter().map(|n| (n.clone(), BTreeSet::new())).collect();
    for (a, b) in edges {
        if a == b || !adj.contains_key(a) || !adj.contains_key(b) {
            continue;
        }
        adj.get_mut(a).map(|s| s.insert(b.clone()));
        adj.get_mut(b).map(|s| s.insert(a.clone()));
    }
    adj
}

/// Communities, each sorted, largest first (ties by first member).
fn ordered(mut communities: Vec<Vec<String>>) -> Vec<Vec<String>> {
    for c in &mut communities {
        c.sort();
    }
    communities.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    communities
}

/// The communities of the graph by `algorithm` ([`ALGORITHMS`]); `None` for another name.
pub fn communities(algorithm: &str, nodes: &[String], edges: &[(String, String)]) -> Option<Vec<Vec<String>>> {
    match algorithm {
        "louvain" => Some(louvain(nodes, edges)),
        "label-propagation" => Some(label_propagation(nodes, edges)),
        _ => None,
    }
}

/// Louvain modularity optimisation (graphrs, a fixed seed). A node without edges is a
/// community of its own.
pub fn louvain(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    let adj = adjacency(nodes, edges);
    let mut pairs = Vec::new();
    for (a, neighbours) in &adj {
        for b in neighbours.iter().filter(|b| a < *b) {
            pairs.push(Edge::<String, ()>::new(a.clone(), b.clone()));
        }
    }
    let linked: Vec<Arc<Node<String, ()>>> = adj.iter().filter(|(_, n)| !n.is_empty()).map(|(a, _)| Node::from_name(a.clone())).collect();
    let mut out: Vec<Vec<String>> = adj.iter().filter(|(_, n)| n.is_empty()).map(|(a, _)| vec![a.clone()]).collect();
    if !pairs.is_empty() {
        let found = Graph::new_from_nodes_and_edges(linked, pairs, GraphSpecs::undirected())
            .and_then(|g| graphrs::algorithms::community::louvain::louvain_communities(&g, false, None, None, Some(SEED)));
        match found {
            Ok(groups) => out.extend(groups.into_iter().map(|g| g.into_iter().collect())),
            // (It finds no partition only of a graph without edges, handled above.)
            Err(_) => out.extend(adj.iter().filter(|(_, n)| !n.is_empty()).map(|(a, _)| vec![a.clone()])),
        }
    }
    ordered(out)
}

/// Label propagation, deterministic: every node starts with its own label; in rounds over
/// the nodes in order, each takes the label that weighs most among its neighbours (ties:
/// its own when it is among them, else the smallest), until no label changes. A neighbour
/// weighs one more than the neighbours the two share, so that a label crosses a lone
/// bridge between two dense groups less readily than it spreads within one (with every
/// neighbour weighing the same, the first label taken floods such a bridge).
pub fn label_propagation(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    let adj = adjacency(nodes, edges);
    let weight = |a: &str, b: &str| 1 + adj[a].intersection(&adj[b]).count();
    let mut label: BTreeMap<&str, &str> = adj.keys().map(|n| (n.as_str(), n.as_str())).collect();
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for (node, neighbours) in &adj {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for n in neighbours {
                *counts.entry(label[n.as_str()]).or_default() += weight(node, n);
            }
            let Some(best) = counts.values().max().copied() else { continue };
            let own = label[node.as_str()];
            let pick =
                if counts.get(own) == Some(&best) { own } else { counts.iter().find(|(_, c)| **c == best).map(|(l, _)| *l).unwrap_or(own) };
            if pick != own {
                label.insert(node.as_str(), pick);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (node, l) in label {
        groups.entry(l).or_default().push(node.to_owned());
    }
    ordered(groups.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Two triangles joined by one edge, and a lone node.
    fn graph() -> (Vec<String>, Vec<(String, String)>) {
        let nodes = s(&["a", "b", "c", "d", "e", "f", "z"]);
        let edges = [("a", "b"), ("b", "c"), ("a", "c"), ("d", "e"), ("e", "f"), ("d", "f"), ("c", "d"), ("a", "a"), ("a", "nowhere")];
        (nodes, edges.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect())
    }

    #[test]
    fn both_algorithms_find_the_two_triangles_and_the_lone_node() {
        let (nodes, edges) = graph();
        for algorithm in ALGORITHMS {
            let found = communities(algorithm, &nodes, &edges).unwrap();
            assert_eq!(found, vec![s(&["a", "b", "c"]), s(&["d", "e", "f"]), s(&["z"])], "{algorithm}");
            assert_eq!(communities(algorithm, &nodes, &edges).unwrap(), found, "{algorithm} is deterministic");
        }
        assert!(communities("walktrap", &nodes, &edges).is_none());
    }
}
