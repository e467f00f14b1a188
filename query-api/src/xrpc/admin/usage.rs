//! Usage analytics for admins, from the usage model (docs/metrics.md): the trending overview,
//! how the trending eprints move, and views and downloads over time.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use projections::eprints::read::EprintsReader;
use projections::usage::read::{Granularity, UsageReader};
use projections::usage::Window;
use serde_json::{json, Value};

use crate::body::Body;
use crate::error::ApiError;
use crate::params::parse_record_uri;
use crate::reads::blocking;
use crate::xrpc::method::{Answer, Call};

/// The most buckets a time series answers (a month of hours).
const MAX_BUCKETS: i64 = 744;

fn rfc3339(micros: i64) -> String {
    DateTime::from_timestamp_micros(micros).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The trending eprints of `window` now, best first: `(uri, title, score)`.
fn trending(c: &Call, window: Window, limit: usize) -> Result<Vec<(String, String, f64)>, ApiError> {
    let page = crate::xrpc::metrics::trending_page(c, window, None, &[], limit, None)?;
    Ok(page.entries.into_iter().map(|t| (t.uri, t.title, t.score)).collect())
}

/// `getMetricsOverview {days}` → `{trending: [{uri, title, score}], periodInfo: {days,
/// startDate, endDate}, period}`: 1 day is the 24h window, 2 to 7 the 7d, more the 30d.
pub(super) fn metrics_overview(c: &Call) -> Answer {
    let days = c.params.int("days").unwrap_or(7).clamp(1, 90);
    let window = match days {
        1 => Window::Day,
        2..=7 => Window::Week,
        _ => Window::Month,
    };
    let trending: Vec<Value> =
        trending(c, window, 20)?.into_iter().map(|(uri, title, score)| json!({"uri": uri, "title": title, "score": score})).collect();
    let end = Utc::now();
    let start = end - Duration::days(days);
    Body::json(&json!({
        "trending": trending,
        "periodInfo": {"days": days, "startDate": start.to_rfc3339_opts(SecondsFormat::Secs, true), "endDate": end.to_rfc3339_opts(SecondsFormat::Secs, true)},
        "period": window.as_str(),
    }))
}

/// `getTrendingVelocity {limit, window}` → `{items: [{uri, title, velocity, views, downloads,
/// previousUses, trend}], window}`: the window's trending eprints, fastest first.
pub(super) fn trending_velocity(c: &Call) -> Answer {
    let window = Window::parse(c.params.str("window").unwrap_or("24h")).unwrap_or(Window::Day);
    let now = Utc::now().timestamp_micros();
    let candidates = trending(c, window, c.limit(20))?;
    let mut items = blocking(&c.state, || -> Result<Vec<(f64, Value)>, ApiError> {
        let usage = UsageReader::new(c.state.store.as_ref())?;
        let mut items = Vec::with_capacity(candidates.len());
        for (uri, title, _) in candidates {
            let v = usage.velocity(&uri, window, now)?;
            let trend = if v.velocity > 0.1 {
                "rising"
            } else if v.velocity < -0.1 {
                "falling"
            } else {
                "stable"
            };
            let item = json!({"uri": uri, "title": title, "velocity": v.velocity, "views": v.views, "downloads": v.downloads, "previousUses": v.previous, "trend": trend});
            items.push((v.velocity, item));
        }
        Ok(items)
    })?;
    items.sort_by(|a, b| b.0.total_cmp(&a.0));
    Body::json(&json!({"items": items.into_iter().map(|(_, i)| i).collect::<Vec<_>>(), "window": window.as_str()}))
}

/// A time parameter, or `default`.
fn time_param(c: &Call, name: &str, default: DateTime<Utc>) -> Result<DateTime<Utc>, ApiError> {
    match c.params.str(name) {
        None => Ok(default),
        Some(raw) => DateTime::parse_from_rfc3339(raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| ApiError::invalid_param(name, "must be an RFC 3339 datetime")),
    }
}

/// `getViewDownloadTimeSeries {uri?, granularity, from?, to?}` → `{uri?, granularity, from,
/// to, series: [{time, views, downloads}], totalViews, totalDownloads}`.
pub(super) fn view_download_time_series(c: &Call) -> Answer {
    let granularity = match c.params.str("granularity").unwrap_or("day") {
        "hour" => Granularity::Hour,
        _ => Granularity::Day,
    };
    let uri = c.params.str("uri");
    if let Some(uri) = uri {
        parse_record_uri("uri", uri)?;
        let known = blocking(&c.state, || EprintsReader::new(c.state.store.as_ref())?.get(uri))?.is_some();
        if !known {
            return Err(super::not_found_error(format!("svc indexes no eprint at {uri}")));
        }
    }
    let to = time_param(c, "to", Utc::now())?;
    let span = match granularity {
        Granularity::Hour => Duration::hours(48),
        Granularity::Day => Duration::days(30),
    };
    let from = time_param(c, "from", to - span)?;
    if from > to {
        return Err(ApiError::invalid_param("from", "must not be after to"));
    }
    let (from, to) = (from.timestamp_micros(), to.timestamp_micros());
    if (to - from) / granularity.micros() >= MAX_BUCKETS {
        return Err(ApiError::invalid_param("from", format!("at most {MAX_BUCKETS} buckets of the granularity asked")));
    }
    let series = blocking(&c.state, || UsageReader::new(c.state.store.as_ref())?.series(uri, granularity, from, to))?;
    let (views, downloads) = series.iter().fold((0, 0), |(v, d), b| (v + b.views, d + b.downloads));
    let points: Vec<Value> = series.iter().map(|b| json!({"time": rfc3339(b.start), "views": b.views, "downloads": b.downloads})).collect();
    let mut out = json!({
        "granularity": if granularity == Granularity::Hour { "hour" } else { "day" },
        "from": rfc3339(from),
        "to": rfc3339(to),
        "series": points,
        "totalViews": views,
        "totalDownloads": downloads,
    });
    if let Some(uri) = uri {
        out["uri"] = json!(uri);
    }
    Body::json(&out)
}

/// `getSearchAnalytics` → `{impressions, clicks, clickedImpressions, clickThroughRate,
/// meanReciprocalRank, searchDownloads, zeroResults, zeroResultRate, zeroResultQueries}`.
pub(super) fn search_analytics(c: &Call) -> Answer {
    let s = blocking(&c.state, || UsageReader::new(c.state.store.as_ref())?.searches(20))?;
    let rate = |n: u64| if s.impressions == 0 { 0.0 } else { n as f64 / s.impressions as f64 };
    let zero: Vec<Value> = s.zero_queries.iter().map(|(q, n)| json!({"query": q, "count": n})).collect();
    Body::json(&json!({
        "impressions": s.impressions,
        "clicks": s.clicks,
        "clickedImpressions": s.clicked_impressions,
        "clickThroughRate": rate(s.clicked_impressions),
        "meanReciprocalRank": s.mean_reciprocal_rank,
        "searchDownloads": s.search_downloads,
        "zeroResults": s.zero_results,
        "zeroResultRate": rate(s.zero_results),
        "zeroResultQueries": zero,
    }))
}
