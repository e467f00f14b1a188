//! `pub.svc.graph.*` in process, on the seeded arXiv taxonomy in the governance repository,
//! a few eprints naming its fields (by code and by node URI), a personal node and edge, and
//! a reconciliation: every operation answers from what was written, and bad input is
//! refused in the envelope.

use crate::support;

use axum::http::StatusCode;
use event_schema::Source;
use ingest::taxonomy::Taxonomy;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";

fn paper(title: &str, did: &str, fields: &[&str]) -> Value {
    let mut p = submission(title, did, "2025-01-01T00:00:00Z");
    p["fields"] = json!(fields);
    p
}

fn uris(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|n| n["uri"].as_str().unwrap().to_owned()).collect()
}

fn slugs(list: &Value, key: &str) -> Vec<String> {
    let mut s: Vec<String> = list[key].as_array().unwrap().iter().map(|n| n["slug"].as_str().unwrap_or_default().to_owned()).collect();
    s.sort();
    s
}

async fn ok(f: &Fixture, path: &str) -> Value {
    let (status, body) = f.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_answers_from_the_seeded_taxonomy_and_what_users_wrote() {
    let mut f = Fixture::new();
    let lexicons = lexicons::Lexicons::builtin();
    let source = Source::Seed { file: "taxonomy".into() };
    let mut events = Taxonomy::arxiv().events(GOVERNANCE_DID, &source, &lexicons).unwrap();
    let cs_lg = Taxonomy::node_uri(GOVERNANCE_DID, "cs.LG");
    let cs = Taxonomy::node_uri(GOVERNANCE_DID, "cs");
    let sub = "pub.svc.eprint.submission";
    let mut by_uri = submission("Learning by Node URI", BOB, "2025-01-03T00:00:00Z");
    by_uri["fieldUris"] = json!([cs_lg]);
    events.extend([
        create(ALICE, sub, "p1", "3l0000000000a", paper("Sparse Attention", ALICE, &["cs.LG", "stat.ML"])),
        create(ALICE, sub, "p2", "3l0000000000a", paper("Planning Agents", ALICE, &["cs.AI"])),
        create(BOB, sub, "p3", "3l0000000000a", paper("Graph Colourings", BOB, &["math.CO"])),
        create(BOB, sub, "p4", "3l0000000000a", by_uri),
        // A facet of the shared graph, and a paper naming it.
        create(
            GOVERNANCE_DID,
            "pub.svc.graph.node",
            "f-europe",
            "3l0000000000b",
            json!({
            "id": "f-europe", "slug": "europe", "kind": "object", "subkind": "facet", "label": "Europe", "status": "established",
            "createdAt": "2025-01-01T00:00:00Z"}),
        ),
        create(ALICE, sub, "p5", "3l0000000000a", {
            let mut p = paper("European Transformers", ALICE, &["q-bio.NC"]);
            p["facetUris"] = json!([format!("at://{GOVERNANCE_DID}/pub.svc.graph.node/f-europe")]);
            p
        }),
        // Alice's personal graph: a collection holding cs.LG.
        create(
            ALICE,
            "pub.svc.graph.node",
            "c1",
            "3l0000000000a",
            json!({
            "id": "c1", "kind": "object", "subkind": "collection", "label": "Reading list", "status": "established",
            "createdAt": "2025-02-01T00:00:00Z"}),
        ),
        create(
            ALICE,
            "pub.svc.graph.edge",
            "e1",
            "3l0000000000a",
            json!({
            "id": "e1", "sourceUri": format!("at://{ALICE}/pub.svc.graph.node/c1"), "targetUri": cs_lg, "relationSlug": "contains",
            "status": "established", "createdAt": "2025-02-01T00:00:00Z"}),
        ),
        create(
            BOB,
            "pub.svc.graph.reconciliation",
            "r1",
            "3l0000000000a",
            json!({
            "sourceUri": cs_lg, "targetSystem": "wikidata", "targetId": "Q2539", "confidence": 950, "matchType": "exact",
            "status": "verified", "createdAt": "2025-02-02T00:00:00Z"}),
        ),
    ]);
    f.apply(events);

    // A node by slug, by record key and by URI; with its edges.
    let node = ok(&f, "/xrpc/pub.svc.graph.getNode?id=cs.LG&includeEdges=true").await;
    assert_eq!(
        (node["uri"].as_str(), node["label"].as_str(), node["owner"].as_str()),
        (Some(cs_lg.as_str()), Some("Machine Learning"), Some(GOVERNANCE_DID))
    );
    let edges: Vec<(&str, &str)> =
        node["edges"].as_array().unwrap().iter().map(|e| (e["relationSlug"].as_str().unwrap(), e["targetUri"].as_str().unwrap())).collect();
    assert!(edges.contains(&("broader", cs.as_str())) && edges.contains(&("contains", cs_lg.as_str())), "{node}");
    let id = node["id"].as_str().unwrap();
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.graph.getNode?id={id}")).await["uri"], json!(cs_lg));
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.graph.getNode?id={}", enc(&cs_lg))).await["slug"], "cs.LG");
    let (status, body) = f.get("/xrpc/pub.svc.graph.getNode?id=no-such-node").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")));

    // Listings of the shared graph: a personal node is not in them.
    let fields = ok(&f, "/xrpc/pub.svc.graph.listNodes?subkind=field&limit=100").await;
    assert_eq!(
        (fields["total"].as_u64(), fields["nodes"].as_array().unwrap().len(), fields["hasMore"].as_bool()),
        (Some(167), 100, Some(true))
    );
    let rest =
        ok(&f, &format!("/xrpc/pub.svc.graph.listNodes?subkind=field&limit=100&cursor={}", fields["cursor"].as_str().unwrap())).await;
    let mut all = uris(&fields, "nodes");
    all.extend(uris(&rest, "nodes"));
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 167, "two pages give every field once");
    let relations = ok(&f, "/xrpc/pub.svc.graph.listNodes?kind=type&subkind=relation&status=established").await;
    assert_eq!(slugs(&relations, "nodes"), ["broader", "contains", "narrower", "related"]);
    let collections = ok(&f, "/xrpc/pub.svc.graph.listNodes?subkind=collection").await;
    assert_eq!(collections["total"], 0, "a personal node is not the shared graph's: {collections}");

    // Search by word prefixes, every word.
    let found = ok(&f, "/xrpc/pub.svc.graph.searchNodes?query=mach%20lear").await;
    assert_eq!(slugs(&found, "nodes"), ["cs.LG", "stat.ML"]);
    let found = ok(&f, "/xrpc/pub.svc.graph.searchNodes?query=Quantum&subkind=field").await;
    let found = slugs(&found, "nodes");
    assert!(
        found.contains(&"quant-ph".to_owned()) && found.contains(&"math.QA".to_owned()) && !found.contains(&"q-bio".to_owned()),
        "{found:?}"
    );

    // Edges: the 40 categories under cs, in pages.
    let under = ok(&f, "/xrpc/pub.svc.graph.listEdges?nodeId=cs&direction=incoming&relationSlug=broader&limit=30").await;
    assert_eq!((under["total"].as_u64(), under["hasMore"].as_bool()), (Some(40), Some(true)));
    let next = ok(
        &f,
        &format!(
            "/xrpc/pub.svc.graph.listEdges?targetUri={}&relationSlug=broader&limit=30&cursor={}",
            enc(&cs),
            under["cursor"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(next["edges"].as_array().unwrap().len(), 10);
    let edge_uri = under["edges"][0]["uri"].as_str().unwrap();
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.graph.getEdge?uri={}", enc(edge_uri))).await["targetUri"], json!(cs));
    let related = ok(&f, "/xrpc/pub.svc.graph.listEdges?relationSlug=related").await;
    assert_eq!(related["total"], 6, "arXiv's six aliases: {related}");

    // Fields: detail, top level, children, search; their eprints, by code and by node URI.
    let field = ok(&f, "/xrpc/pub.svc.graph.getField?id=cs.LG").await;
    assert_eq!((field["name"].as_str(), field["eprintCount"].as_u64()), (Some("Machine Learning"), Some(2)), "{field}");
    assert_eq!(field["parents"][0]["slug"], "cs");
    let top = ok(&f, "/xrpc/pub.svc.graph.listFields").await;
    assert_eq!(slugs(&top, "fields"), ["cs", "econ", "eess", "grp_physics", "math", "q-bio", "q-fin", "stat"]);
    assert_eq!(top["fields"][0]["name"], "Computer Science", "by label");
    let physics = ok(&f, "/xrpc/pub.svc.graph.listFields?parent=grp_physics&limit=10").await;
    assert_eq!((physics["total"].as_u64(), physics["hasMore"].as_bool()), (Some(13), Some(true)));
    let more =
        ok(&f, &format!("/xrpc/pub.svc.graph.listFields?parent=grp_physics&limit=10&cursor={}", physics["cursor"].as_str().unwrap())).await;
    assert_eq!(more["fields"].as_array().unwrap().len(), 3);
    let eprints = ok(&f, "/xrpc/pub.svc.graph.getFieldEprints?field=cs&includeChildren=true").await;
    assert_eq!(eprints["total"], 3, "cs.LG twice (by code, by node URI) and cs.AI: {eprints}");
    assert_eq!(ok(&f, "/xrpc/pub.svc.graph.getFieldEprints?field=cs").await["total"], 0, "no eprint names the group itself");
    // Faceted browsing: a subject (a field), and a place among the facets; counts of both.
    let browsed = ok(&f, "/xrpc/pub.svc.graph.browseFaceted?personality=cs.LG,q-bio.NC").await;
    assert_eq!(browsed["total"], 3, "p1 and p5 by code, p4 by node URI: {browsed}");
    assert!(browsed["impressionId"].as_str().is_some_and(|i| !i.is_empty()), "{browsed}");
    let both = ok(&f, "/xrpc/pub.svc.graph.browseFaceted?personality=cs.LG&personality=q-bio.NC&space=europe").await;
    assert_eq!((both["total"].as_u64(), both["hits"][0]["title"].as_str()), (Some(1), Some("European Transformers")), "{both}");
    assert_eq!(both["facets"]["facet"], json!([{"value": "f-europe", "count": 1}]), "{both}");
    assert_eq!(both["facets"]["fields"], json!([{"value": "q-bio.NC", "count": 1}]), "{both}");
    let by_uri =
        ok(&f, &format!("/xrpc/pub.svc.graph.browseFaceted?space={}", enc(&format!("at://{GOVERNANCE_DID}/pub.svc.graph.node/f-europe"))))
            .await;
    assert_eq!(by_uri["total"], 1);
    let worded = ok(&f, "/xrpc/pub.svc.graph.browseFaceted?q=transformers&personality=q-bio.NC,stat.ML").await;
    assert_eq!(worded["total"], 1, "{worded}");
    assert_eq!(ok(&f, "/xrpc/pub.svc.graph.browseFaceted?time=no-such-era").await["total"], 0);
    let math = ok(&f, "/xrpc/pub.svc.graph.getFieldEprints?field=math.CO").await;
    assert_eq!(math["eprints"][0]["title"], "Graph Colourings");

    // The vocabulary, the hierarchy, a subgraph.
    assert_eq!(ok(&f, "/xrpc/pub.svc.graph.getRelations").await["relations"].as_array().unwrap().len(), 4);
    assert_eq!(ok(&f, "/xrpc/pub.svc.graph.getSubkinds").await["subkinds"].as_array().unwrap().len(), 5);
    let tree = ok(&f, "/xrpc/pub.svc.graph.getHierarchy?subkind=field").await;
    let roots = tree["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 8);
    let physics = roots.iter().find(|r| r["node"]["slug"] == "grp_physics").unwrap();
    assert_eq!(physics["children"].as_array().unwrap().len(), 13);
    let sub = ok(&f, &format!("/xrpc/pub.svc.graph.expandSubgraph?rootUris={}&depth=1", enc(&cs_lg))).await;
    assert_eq!(
        (sub["nodes"].as_array().unwrap().len(), sub["truncated"].as_bool()),
        (3, Some(false)),
        "cs.LG, cs and the collection: {sub}"
    );
    let cut = ok(&f, &format!("/xrpc/pub.svc.graph.expandSubgraph?rootUris={}&depth=2&maxNodes=5", enc(&cs_lg))).await;
    assert_eq!((cut["nodes"].as_array().unwrap().len(), cut["truncated"].as_bool()), (5, Some(true)));

    // Reconciliations, and the personal graph (signed in).
    let rec = ok(&f, "/xrpc/pub.svc.graph.getAuthorityReconciliations?id=cs.LG").await;
    assert_eq!(rec["reconciliations"][0]["targetId"], "Q2539");
    let (status, body) = f.get("/xrpc/pub.svc.graph.listPersonalNodes").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));
    f.live();
    let token = login(&f, ALICE, "graph-1").await;
    // The admin overview counts collections: Alice's one.
    query_api::xrpc::admin::bootstrap(&f.state, &[BOB.to_owned()]).await.unwrap();
    let admin = login(&f, BOB, "graph-admin").await;
    let (status, overview) = f.get_as("/xrpc/pub.svc.admin.getOverview", &admin).await;
    assert_eq!((status, overview["collections"].as_u64()), (StatusCode::OK, Some(1)), "{overview}");
    // Communities: none before the job's first run, then its result, by either algorithm.
    assert_eq!(ok(&f, "/xrpc/pub.svc.graph.getCommunities").await["total"], 0);
    assert_eq!(query_api::communities::compute(&f.state).await.unwrap(), 2);
    assert_eq!(query_api::communities::compute(&f.state).await.unwrap(), 0, "an unchanged graph appends nothing");
    for algorithm in ["louvain", "label-propagation"] {
        let found = ok(&f, &format!("/xrpc/pub.svc.graph.getCommunities?algorithm={algorithm}&limit=100")).await;
        let sizes: Vec<u64> = found["communities"].as_array().unwrap().iter().map(|c| c["size"].as_u64().unwrap()).collect();
        assert!(sizes.len() >= 8 && sizes.iter().all(|s| *s >= 2) && sizes.windows(2).all(|w| w[0] >= w[1]), "{algorithm}: {sizes:?}");
        assert!(found["generatedAt"].is_string() && found["nodeCount"].as_u64() > Some(170), "{found}");
        let cs = found["communities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["members"].as_array().unwrap().iter().any(|m| m["slug"] == "cs.LG"))
            .cloned();
        let cs = cs.expect("cs.LG is in a community");
        assert!(cs["members"].as_array().unwrap().iter().any(|m| m["slug"] == "cs.AI" || m["slug"] == "cs"), "{algorithm}: {cs}");
    }
    let (status, e) = f.get("/xrpc/pub.svc.graph.getCommunities?algorithm=walktrap").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");

    // The graph's statistics count the shared graph only, as its listings do.
    let (status, stats) = f.get_as("/xrpc/pub.svc.admin.getGraphStats", &admin).await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    let all = ok(&f, "/xrpc/pub.svc.graph.listNodes?limit=1").await;
    let fields = ok(&f, "/xrpc/pub.svc.graph.listNodes?subkind=field&limit=1").await;
    let edges = ok(&f, "/xrpc/pub.svc.graph.listEdges?limit=1").await;
    assert_eq!(
        (&stats["totalNodes"], &stats["fieldNodes"], &stats["totalEdges"], &stats["pendingProposals"]),
        (&all["total"], &fields["total"], &edges["total"], &json!(0)),
        "{stats}"
    );
    assert!(stats["fieldNodes"].as_u64() > Some(140) && stats["totalEdges"].as_u64() > Some(140), "the taxonomy: {stats}");
    assert_eq!((&stats["nodeCount"], &stats["edgeCount"]), (&stats["totalNodes"], &stats["totalEdges"]));
    let (status, _) = f.get_as("/xrpc/pub.svc.admin.getGraphStats", &token).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "admins only");
    let (status, mine) = f.get_as("/xrpc/pub.svc.graph.listPersonalNodes?subkind=collection", &token).await;
    assert_eq!((status, mine["nodes"][0]["label"].as_str()), (StatusCode::OK, Some("Reading list")), "{mine}");
    let (_, types) = f.get_as("/xrpc/pub.svc.graph.listPersonalEdgeTypes", &token).await;
    let contains = types["relationTypes"].as_array().unwrap().iter().find(|t| t["slug"] == "contains").cloned();
    assert_eq!(contains.map(|t| t["count"].clone()), Some(json!(1)), "{types}");

    // Bad input: the envelope, never a 500.
    for bad in [
        "/xrpc/pub.svc.graph.listNodes?kind=thing",
        "/xrpc/pub.svc.graph.listNodes?externalIdSystem=wikidata",
        "/xrpc/pub.svc.graph.searchNodes",
        "/xrpc/pub.svc.graph.expandSubgraph?rootUris=x&depth=9",
        "/xrpc/pub.svc.graph.getEdge?uri=not-a-uri",
        "/xrpc/pub.svc.graph.listNodes?cursor=%%%",
    ] {
        let (status, body) = f.get(bad).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {body}");
    }
    let (status, _) = f.get("/xrpc/pub.svc.graph.getFieldEprints?field=nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
