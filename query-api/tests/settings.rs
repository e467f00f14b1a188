//! `pub.svc.actor.getDiscoverySettings` and `getProfileConfig` in process: the records of
//! the caller's (and anyone's) repository over their defaults, a settings record under
//! another key refused, a later write replacing an earlier one.

use crate::support;

use axum::http::StatusCode;
use serde_json::json;
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_records_are_read_over_their_defaults() {
    let mut f = Fixture::new();
    let field = "at://did:plc:governance22222222222222/pub.svc.graph.node/cs-lg";
    f.apply(vec![
        create(
            ALICE,
            "pub.svc.discovery.settings",
            "self",
            "3l0000000000a",
            json!({
            "recommendationDiversity": "high", "followedFieldUris": [field],
            "relatedPapersWeights": {"semantic": 60}, "trendingPreferences": {"defaultWindow": "30d"}}),
        ),
        create(
            ALICE,
            "pub.svc.actor.profileConfig",
            "self",
            "3l0000000000a",
            json!({
            "profileType": "lab", "sections": [{"type": "featured"}], "createdAt": "2025-01-01T00:00:00Z"}),
        ),
        // Not keyed self: not Alice's settings.
        create(BOB, "pub.svc.discovery.settings", "other", "3l0000000000a", json!({"recommendationDiversity": "low"})),
    ]);
    f.live();
    let alice = login(&f, ALICE, "s-alice").await;
    let (status, mine) = f.get_as("/xrpc/pub.svc.actor.getDiscoverySettings", &alice).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!((mine["recommendationDiversity"].as_str(), mine["followedFieldUris"][0].as_str()), (Some("high"), Some(field)));
    assert_eq!(
        (mine["relatedPapersWeights"]["semantic"].as_u64(), mine["relatedPapersWeights"]["coCitation"].as_u64()),
        (Some(60), Some(25)),
        "{mine}"
    );
    assert_eq!(
        (mine["trendingPreferences"]["defaultWindow"].as_str(), mine["trendingPreferences"]["defaultLimit"].as_u64()),
        (Some("30d"), Some(20))
    );
    assert_eq!(mine["enablePersonalization"], true);
    let bob = login(&f, BOB, "s-bob").await;
    assert_eq!(f.get_as("/xrpc/pub.svc.actor.getDiscoverySettings", &bob).await.1["recommendationDiversity"], "medium", "the defaults");
    assert_eq!(f.get("/xrpc/pub.svc.actor.getDiscoverySettings").await.0, StatusCode::UNAUTHORIZED);

    let config = f.get(&format!("/xrpc/pub.svc.actor.getProfileConfig?did={ALICE}")).await.1;
    assert_eq!((config["profileType"].as_str(), config["sections"].as_array().map(Vec::len)), (Some("lab"), Some(1)), "{config}");
    assert_eq!(config["uri"], format!("at://{ALICE}/pub.svc.actor.profileConfig/self"));
    assert_eq!(
        f.get(&format!("/xrpc/pub.svc.actor.getProfileConfig?did={BOB}")).await.1,
        json!({"did": BOB, "profileType": "individual", "sections": []})
    );
    assert_eq!(f.get("/xrpc/pub.svc.actor.getProfileConfig?did=nope").await.0, StatusCode::BAD_REQUEST);

    f.apply(vec![update(ALICE, "pub.svc.actor.profileConfig", "self", "3l0000000000b", json!({"profileType": "individual"}))]);
    f.settled("attached").await;
    assert_eq!(
        f.get(&format!("/xrpc/pub.svc.actor.getProfileConfig?did={ALICE}")).await.1["sections"],
        json!([]),
        "the newer record replaces the older"
    );
}
