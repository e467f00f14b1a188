//! Every XRPC operation the API contract names (`public-api.md`, `admin-api.md`), plus the
//! operations whose identifiers the contract leaves to the references (related-works
//! listing, tag search, the alpha and notification namespaces), and the operations svc
//! knows beyond it ([`BEYOND`]). Those not served yet answer 501 `NotImplemented`;
//! docs/coverage.md lists the same sets.

/// The operations of the contract, sorted.
pub const OPERATIONS: &[&str] = &[
    "pub.svc.activity.getCorrelationMetrics",
    "pub.svc.activity.getFeed",
    "pub.svc.activity.log",
    "pub.svc.activity.markFailed",
    "pub.svc.actor.autocompleteAffiliation",
    "pub.svc.actor.autocompleteKeyword",
    "pub.svc.actor.autocompleteOrcid",
    "pub.svc.actor.discoverAuthorIds",
    "pub.svc.actor.getMyProfile",
    "pub.svc.actor.getMyRoles",
    "pub.svc.admin.assignRole",
    "pub.svc.admin.cancelBackfill",
    "pub.svc.admin.deleteContent",
    "pub.svc.admin.dismissDLQEntry",
    "pub.svc.admin.getActivityCorrelation",
    "pub.svc.admin.getAlphaApplication",
    "pub.svc.admin.getAlphaStats",
    "pub.svc.admin.getAuditLog",
    "pub.svc.admin.getBackfillHistory",
    "pub.svc.admin.getBackfillStatus",
    "pub.svc.admin.getEndpointMetrics",
    "pub.svc.admin.getFirehoseStatus",
    "pub.svc.admin.getGraphStats",
    "pub.svc.admin.getMetricsOverview",
    "pub.svc.admin.getNodeMetrics",
    "pub.svc.admin.getOverview",
    "pub.svc.admin.getPrometheusMetrics",
    "pub.svc.admin.getSearchAnalytics",
    "pub.svc.admin.getSystemHealth",
    "pub.svc.admin.getTrendingVelocity",
    "pub.svc.admin.getUserDetail",
    "pub.svc.admin.getViewDownloadTimeSeries",
    "pub.svc.admin.listAlphaApplications",
    "pub.svc.admin.listDLQEntries",
    "pub.svc.admin.listEndorsements",
    "pub.svc.admin.listEprints",
    "pub.svc.admin.listImports",
    "pub.svc.admin.listPDSes",
    "pub.svc.admin.listReviews",
    "pub.svc.admin.listViolations",
    "pub.svc.admin.listWarnings",
    "pub.svc.admin.purgeOldDLQ",
    "pub.svc.admin.rescanPDS",
    "pub.svc.admin.retryAllDLQ",
    "pub.svc.admin.retryDLQEntry",
    "pub.svc.admin.revokeRole",
    "pub.svc.admin.searchUsers",
    "pub.svc.admin.triggerBackfill",
    "pub.svc.admin.triggerCitationExtraction",
    "pub.svc.admin.triggerDIDSync",
    "pub.svc.admin.triggerFreshnessScan",
    "pub.svc.admin.triggerFullReindex",
    "pub.svc.admin.triggerGovernanceSync",
    "pub.svc.admin.triggerPDSScan",
    "pub.svc.admin.updateAlphaApplication",
    "pub.svc.alpha.apply",
    "pub.svc.alpha.checkStatus",
    "pub.svc.annotation.getThread",
    "pub.svc.annotation.listByAuthor",
    "pub.svc.annotation.listForEprint",
    "pub.svc.annotation.listForPage",
    "pub.svc.author.getProfile",
    "pub.svc.backlink.create",
    "pub.svc.backlink.delete",
    "pub.svc.backlink.getCounts",
    "pub.svc.backlink.list",
    "pub.svc.claiming.approveClaim",
    "pub.svc.claiming.approveCoauthor",
    "pub.svc.claiming.autocomplete",
    "pub.svc.claiming.completeClaim",
    "pub.svc.claiming.dismissSuggestion",
    "pub.svc.claiming.findClaimable",
    "pub.svc.claiming.getClaim",
    "pub.svc.claiming.getCoauthorRequests",
    "pub.svc.claiming.getMyCoauthorRequests",
    "pub.svc.claiming.getPendingClaims",
    "pub.svc.claiming.getSubmissionData",
    "pub.svc.claiming.getSuggestions",
    "pub.svc.claiming.getUserClaims",
    "pub.svc.claiming.rejectClaim",
    "pub.svc.claiming.rejectCoauthor",
    "pub.svc.claiming.requestCoauthorship",
    "pub.svc.claiming.searchEprints",
    "pub.svc.claiming.startClaim",
    "pub.svc.claiming.startClaimFromExternal",
    "pub.svc.discovery.getCitations",
    "pub.svc.discovery.getEnrichment",
    "pub.svc.discovery.getRecommendations",
    "pub.svc.discovery.getSimilar",
    "pub.svc.discovery.recordInteraction",
    "pub.svc.endorsement.getSummary",
    "pub.svc.endorsement.getUserEndorsement",
    "pub.svc.endorsement.listForEprint",
    "pub.svc.eprint.getSubmission",
    "pub.svc.eprint.listByAuthor",
    "pub.svc.eprint.listCitations",
    "pub.svc.eprint.listRelatedWorks",
    "pub.svc.eprint.searchSubmissions",
    "pub.svc.governance.getPendingCount",
    "pub.svc.governance.getProposal",
    "pub.svc.governance.getUserVote",
    "pub.svc.governance.listProposals",
    "pub.svc.governance.listVotes",
    "pub.svc.graph.browseFaceted",
    "pub.svc.graph.getAuthorityReconciliations",
    "pub.svc.graph.getField",
    "pub.svc.graph.getFieldEprints",
    "pub.svc.graph.getNode",
    "pub.svc.graph.listEdges",
    "pub.svc.graph.listFields",
    "pub.svc.graph.listNodes",
    "pub.svc.graph.searchNodes",
    "pub.svc.import.exists",
    "pub.svc.import.get",
    "pub.svc.import.search",
    "pub.svc.metrics.getMetrics",
    "pub.svc.metrics.getTrending",
    "pub.svc.metrics.getViewCount",
    "pub.svc.metrics.recordDownload",
    "pub.svc.metrics.recordDwellTime",
    "pub.svc.metrics.recordSearchClick",
    "pub.svc.metrics.recordView",
    "pub.svc.notification.listEndorsementsOnMyPapers",
    "pub.svc.notification.listReviewsOnMyPapers",
    "pub.svc.review.getThread",
    "pub.svc.review.listForAuthor",
    "pub.svc.review.listForEprint",
    "pub.svc.sync.checkStaleness",
    "pub.svc.sync.deleteRecord",
    "pub.svc.sync.refreshRecord",
    "pub.svc.sync.verify",
    "pub.svc.tag.getDetail",
    "pub.svc.tag.getSuggestions",
    "pub.svc.tag.getTrending",
    "pub.svc.tag.listForEprint",
    "pub.svc.tag.search",
];

/// The operations beyond the contract, sorted: those `operations.md` lists beyond the spec
/// (and the spec gaps the contract does not name: eprint update and delete), and svc's own
/// (`notification.updateSeen`, `notification.getUnreadCount`).
pub const BEYOND: &[&str] = &[
    "pub.svc.actor.autocompleteOpenReview",
    "pub.svc.actor.getDiscoverySettings",
    "pub.svc.actor.getProfileConfig",
    "pub.svc.admin.createSnapshot",
    "pub.svc.admin.traceRecord",
    "pub.svc.author.initiateOrcidVerification",
    "pub.svc.author.searchAuthors",
    "pub.svc.claiming.fetchExternalPdf",
    "pub.svc.collaboration.listCollaborators",
    "pub.svc.collaboration.listInvites",
    "pub.svc.collection.findContainsEdge",
    "pub.svc.collection.get",
    "pub.svc.collection.getContaining",
    "pub.svc.collection.getFeed",
    "pub.svc.collection.getFollowStatus",
    "pub.svc.collection.getFollowerCount",
    "pub.svc.collection.getMarginAnnotations",
    "pub.svc.collection.getParent",
    "pub.svc.collection.getSubcollections",
    "pub.svc.collection.listByOwner",
    "pub.svc.collection.listPublic",
    "pub.svc.collection.search",
    "pub.svc.endorsement.listForAuthorPapers",
    "pub.svc.endorsement.listForUser",
    "pub.svc.eprint.deleteSubmission",
    "pub.svc.eprint.getChangelog",
    "pub.svc.eprint.listChangelogs",
    "pub.svc.eprint.updateSubmission",
    "pub.svc.governance.approveElevation",
    "pub.svc.governance.getEditorStatus",
    "pub.svc.governance.grantDelegation",
    "pub.svc.governance.listDelegations",
    "pub.svc.governance.listElevationRequests",
    "pub.svc.governance.listTrustedEditors",
    "pub.svc.governance.rejectElevation",
    "pub.svc.governance.requestElevation",
    "pub.svc.governance.revokeDelegation",
    "pub.svc.governance.revokeRole",
    "pub.svc.graph.expandSubgraph",
    "pub.svc.graph.getCommunities",
    "pub.svc.graph.getEdge",
    "pub.svc.graph.getHierarchy",
    "pub.svc.graph.getRelations",
    "pub.svc.graph.getSubkinds",
    "pub.svc.graph.listPersonalEdgeTypes",
    "pub.svc.graph.listPersonalNodes",
    "pub.svc.log.subscribe",
    "pub.svc.metrics.recordSearchDownload",
    "pub.svc.moderation.createReport",
    "pub.svc.notification.getUnreadCount",
    "pub.svc.notification.updateSeen",
    "pub.svc.resolve.byExternalId",
    "pub.svc.sync.indexRecord",
    "pub.svc.sync.registerPDS",
    "pub.svc.tag.listEprints",
];

/// Whether the contract names this operation.
pub fn is_named(nsid: &str) -> bool {
    OPERATIONS.binary_search(&nsid).is_ok()
}

/// Whether this operation is one svc knows beyond the contract.
pub fn is_beyond(nsid: &str) -> bool {
    BEYOND.binary_search(&nsid).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sorted_and_unique() {
        assert!(super::OPERATIONS.windows(2).all(|w| w[0] < w[1]));
        assert!(super::BEYOND.windows(2).all(|w| w[0] < w[1]));
        assert!(super::BEYOND.iter().all(|b| !super::is_named(b)), "an operation in both lists");
    }
}

#[cfg(test)]
mod coverage {
    /// docs/coverage.md lists every operation with its real status.
    #[test]
    fn the_coverage_table_matches_the_router() {
        let table = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/coverage.md")).unwrap();
        let served_set = crate::xrpc::served();
        for nsid in super::OPERATIONS {
            let served = served_set.contains(nsid);
            let row = format!("| `{nsid}` | {} |", if served { "served" } else { "not yet (501 `NotImplemented`)" });
            assert!(table.contains(&row), "docs/coverage.md lacks: {row}");
        }
        for nsid in super::BEYOND {
            let served = served_set.contains(nsid);
            let row = format!("| `{nsid}` | {} · beyond the contract |", if served { "served" } else { "not yet (501 `NotImplemented`)" });
            assert!(table.contains(&row), "docs/coverage.md lacks: {row}");
        }
        for nsid in &served_set {
            assert!(super::is_named(nsid) || super::is_beyond(nsid), "{nsid} is served but not in the catalog");
        }
    }

    /// The README's status line counts what the router serves.
    #[test]
    fn the_readme_counts_what_is_served() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap().replace('\n', " ");
        let served = crate::xrpc::served();
        let named = super::OPERATIONS.iter().filter(|n| served.contains(n)).count();
        let beyond = super::BEYOND.iter().filter(|n| served.contains(n)).count();
        let (all, all_beyond) = (super::OPERATIONS.len(), super::BEYOND.len());
        let contract = if named == all {
            vec![format!("All {all} XRPC operations of the contract are served")]
        } else {
            vec![format!("{named} of the contract's {all} XRPC operations are served"), format!("the other {} answer 501", all - named)]
        };
        let beyond_claim = if beyond == all_beyond {
            format!("all {all_beyond} are served")
        } else {
            format!("{beyond} are served and {} ", all_beyond - beyond)
        };
        for claim in contract.into_iter().chain([format!("Of the {all_beyond} operations svc knows beyond the contract"), beyond_claim]) {
            assert!(readme.contains(&claim), "the README should say: {claim}");
        }
    }
}
