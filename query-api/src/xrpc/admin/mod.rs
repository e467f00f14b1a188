//! `pub.svc.admin.*`: the admin surface, every method registered here for the admin role,
//! one concern a file: [`roles`] (and the bootstrap of the first admins), [`audit`],
//! [`alpha`] applications, system [`health`], the [`node`]'s metrics, [`content`] (counts,
//! users, listings, take-downs), the [`dlq`], backfill [`operations`], [`hosts`] (event
//! sources and repository hosts), [`moderation`] (warnings and violations), [`usage`]
//! analytics and a [`snapshot`] of the node's search index.

mod alpha;
mod audit;
mod content;
mod dlq;
mod health;
mod hosts;
mod moderation;
mod node;
mod operations;
pub(crate) use operations::one_at_a_time_methods;
mod roles;
mod snapshot;
mod trace;
mod usage;

use projections::access::Role;

use super::method::{Auth, Routes};
use crate::error::{ApiError, ErrorCode};
pub use roles::bootstrap;

/// The namespace's methods.
pub fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .procedure("pub.svc.admin.assignRole", admin, roles::assign)
        .query("pub.svc.admin.listImports", admin, super::import::list_imports)
        .procedure("pub.svc.admin.revokeRole", admin, roles::revoke)
        .query_async("pub.svc.admin.getSystemHealth", admin, health::system_health)
        .query_async("pub.svc.admin.getNodeMetrics", admin, node::node_metrics)
        .query_async("pub.svc.admin.getPrometheusMetrics", admin, node::prometheus_metrics)
        .query_async("pub.svc.admin.getEndpointMetrics", admin, node::endpoint_metrics)
        .query("pub.svc.admin.getAuditLog", admin, audit::get_audit_log)
        .query("pub.svc.admin.listAlphaApplications", admin, alpha::list_alpha)
        .query("pub.svc.admin.getAlphaApplication", admin, alpha::get_alpha)
        .procedure("pub.svc.admin.updateAlphaApplication", admin, alpha::update_alpha)
        .query("pub.svc.admin.getAlphaStats", admin, alpha::alpha_stats)
        .query("pub.svc.admin.getMetricsOverview", admin, usage::metrics_overview)
        .query("pub.svc.admin.getTrendingVelocity", admin, usage::trending_velocity)
        .query("pub.svc.admin.getViewDownloadTimeSeries", admin, usage::view_download_time_series)
        .query("pub.svc.admin.getActivityCorrelation", admin, crate::xrpc::activity::admin_correlation)
        .query("pub.svc.admin.getSearchAnalytics", admin, usage::search_analytics)
        .query_async("pub.svc.admin.traceRecord", admin, trace::trace_record)
        .procedure("pub.svc.admin.createSnapshot", admin, snapshot::create_snapshot)
        .merge(content::routes())
        .merge(dlq::routes())
        .merge(operations::routes())
        .merge(hosts::routes())
        .merge(moderation::routes())
}

/// 404 `NotFoundError` (the admin contract's code for a missing resource).
pub(crate) fn not_found_error(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::NotFoundError, message)
}
