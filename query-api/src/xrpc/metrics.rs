//! `pub.svc.metrics.*`: recording how eprints are read, and reading it back. Each `record*`
//! call is a `command.usage` event appended to the log before it has any effect (principle
//! 1); the usage model counts it by COUNTER's rules (`projections::usage`). The call answers
//! once the event is in the log, without waiting for the model: nobody reads a use back, and
//! a burst of them is written together (docs/decisions.md, "Usage is recorded, not read
//! back"). Reads are bounded reads of that model, now or as of a past time (`asOf`).

use chrono::{DateTime, SecondsFormat, Utc};
use data_encoding::BASE64URL_NOPAD;
use event_schema::{NewEvent, Payload, SearchImpression, Source, UsageAction, UsageEvent};
use projections::attached::collections::{Kind, Listing};
use projections::attached::read::AttachedReader;
use projections::eprints::read::EprintsReader;
use projections::usage::read::{TrendingPage, UsageReader};
use projections::usage::Window;
use projections::ProjectionError;
use serde::Serialize;
use serde_json::{json, Value};

use super::method::{Answer, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::identity::viewers::{is_robot, Viewers};
use crate::params::parse_record_uri;
use crate::reads::blocking;
use crate::state::AppState;
use crate::xrpc::Auth;

/// How far ahead of this node's clock a client's `asOf` may be.
const CLOCK_SKEW: chrono::Duration = chrono::Duration::seconds(60);

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .procedure("pub.svc.metrics.recordView", Auth::Open, record_view)
        .procedure("pub.svc.metrics.recordDownload", Auth::Open, record_download)
        .procedure("pub.svc.metrics.recordSearchClick", Auth::Open, record_search_click)
        .procedure("pub.svc.metrics.recordSearchDownload", Auth::Open, record_search_download)
        .procedure("pub.svc.metrics.recordDwellTime", Auth::Open, record_dwell_time)
        .query("pub.svc.metrics.getMetrics", Auth::Open, get_metrics)
        .query("pub.svc.metrics.getViewCount", Auth::Open, get_view_count)
        .query("pub.svc.metrics.getTrending", Auth::Open, get_trending)
}

fn input_str(c: &Call, name: &str) -> Option<String> {
    c.input.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// An integer of the input, validated by the lexicon (not negative where these are read).
fn input_u64(c: &Call, name: &str) -> Option<u64> {
    c.input.get(name).and_then(lexicons::integral).map(|n| n.max(0) as u64)
}

/// Records one use of the eprint named by the input's `uri` as `nsid`: `NotFound` for an
/// eprint svc does not index (or hides), `RateLimitExceeded` past the viewer's limit;
/// otherwise appended, and answered `{success: true}` once in the log.
async fn record(c: Call, nsid: &str, action: UsageAction) -> Answer {
    let uri = input_str(&c, "uri").unwrap_or_default();
    shown_eprint(&c, &uri)?;
    // A `viewerDid` is the caller's own or nothing: anyone could send another's.
    let caller = c.caller.as_ref().map(|caller| caller.did.as_str());
    let viewer = Viewers::pseudonym(&c.state.auth.keys, caller, c.client.ip, c.client.user_agent.as_deref());
    if !c.state.auth.viewers.allow(&viewer) {
        return Err(ApiError::rate_limited(format!(
            "this viewer recorded more than {} uses in the last minute",
            crate::identity::viewers::USES_PER_MINUTE
        )));
    }
    let robot = is_robot(c.client.user_agent.as_deref());
    let event = NewEvent {
        key: uri.clone(),
        // Uses carry no identity: the source names no caller.
        source: Source::Command { nsid: nsid.into(), caller: "anonymous".into(), host: c.state.identity.public_url.clone() },
        payload: Payload::Usage(UsageEvent { viewer, robot, uri, action, at: None }),
    };
    // Appended durably; the counts follow within about a second (docs/metrics.md).
    crate::command::append_unwaited(&c.state, event).await?;
    Body::json(&json!({"success": true}))
}

/// `recordView {uri, source?, viewerDid?}`.
async fn record_view(c: Call) -> Answer {
    let action = UsageAction::View { source: input_str(&c, "source") };
    record(c, "pub.svc.metrics.recordView", action).await
}

/// `recordDownload {uri, format?, viewerDid?}`.
async fn record_download(c: Call) -> Answer {
    let action = UsageAction::Download { format: input_str(&c, "format") };
    record(c, "pub.svc.metrics.recordDownload", action).await
}

/// `recordSearchClick {uri, position, query?, impressionId?}`.
async fn record_search_click(c: Call) -> Answer {
    let position = input_u64(&c, "position").unwrap_or_default() as u32;
    let action = UsageAction::SearchClick { impression_id: input_str(&c, "impressionId"), query: input_str(&c, "query"), position };
    record(c, "pub.svc.metrics.recordSearchClick", action).await
}

/// `recordSearchDownload {impressionId, uri}` (beyond the spec).
async fn record_search_download(c: Call) -> Answer {
    let action = UsageAction::SearchDownload { impression_id: input_str(&c, "impressionId").unwrap_or_default() };
    record(c, "pub.svc.metrics.recordSearchDownload", action).await
}

/// `recordDwellTime {uri, durationMs | dwellTimeMs, impressionId?}`.
async fn record_dwell_time(c: Call) -> Answer {
    let duration = ["durationMs", "dwellTimeMs"].iter().find_map(|k| input_u64(&c, k));
    let Some(duration_ms) = duration else {
        return Err(ApiError::invalid_request("durationMs (or dwellTimeMs) is required: milliseconds, not negative"));
    };
    let action = UsageAction::DwellTime { impression_id: input_str(&c, "impressionId"), duration_ms };
    record(c, "pub.svc.metrics.recordDwellTime", action).await
}

/// The `asOf` parameter in µs (now when absent): 400 for one in the future.
fn as_of(c: &Call) -> Result<(i64, bool), ApiError> {
    let now = Utc::now();
    let Some(raw) = c.params.str("asOf") else { return Ok((now.timestamp_micros(), false)) };
    let at = DateTime::parse_from_rfc3339(raw).map_err(|_| ApiError::invalid_param("asOf", "must be an RFC 3339 datetime"))?;
    if at.with_timezone(&Utc) > now + CLOCK_SKEW {
        return Err(ApiError::invalid_param("asOf", "must not be in the future"));
    }
    Ok((at.timestamp_micros().min(now.timestamp_micros()), true))
}

fn rfc3339(micros: i64) -> String {
    DateTime::from_timestamp_micros(micros).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Checks that `uri` names an eprint svc shows: `NotFound` otherwise (a record of another
/// collection included: svc indexes no eprint there).
fn shown_eprint(c: &Call, uri: &str) -> Result<(), ApiError> {
    let eprint = parse_record_uri("uri", uri)?.collection == Some(lexicons::SUBMISSION);
    if eprint && shown(&c.state, uri)? {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("svc indexes no eprint at {uri}")))
    }
}

/// Whether svc shows the eprint at `uri`, kept per state of the eprints model's rows beside
/// the kept answers (`super::kept`, exact in the same way, [`EprintsReader::state_mark`]): a
/// stream of views of a busy eprint reads its rows once per state of that model, not once a
/// view, and the usage model's writes of those views do not move it.
fn shown(state: &AppState, uri: &str) -> Result<bool, ApiError> {
    let reader = EprintsReader::new(state.store.as_ref())?;
    let mark = reader.state_mark();
    if let Some(shown) = mark.and_then(|mark| state.kept_answers.shown(uri, mark)) {
        return Ok(shown);
    }
    let shown = blocking(state, || -> Result<bool, ApiError> { Ok(reader.detail(uri)?.is_some_and(|d| !d.hidden())) })?;
    if let Some(mark) = mark.filter(|mark| reader.unchanged_since(*mark)) {
        state.kept_answers.keep_shown(uri, mark, shown);
    }
    Ok(shown)
}

/// `getMetrics {uri, asOf?}`: the contract's fields, the reference's, and svc's own (see
/// the lexicon).
fn get_metrics(c: &Call) -> Answer {
    let uri = c.str("uri");
    shown_eprint(c, uri)?;
    let (at, _) = as_of(c)?;
    let (usage, counts) = blocking(&c.state, || -> Result<_, ApiError> {
        let usage = UsageReader::new(c.state.store.as_ref())?.usage(uri, at)?;
        let lists =
            [Listing::on_eprint(Kind::Review, uri), Listing::on_eprint(Kind::Endorsement, uri), Listing::pointing_at(Kind::Citation, uri)];
        let counts = AttachedReader::new(c.state.store.as_ref())?.counts(&lists)?;
        Ok((usage, counts))
    })?;
    let windows = |v: [u64; 3]| Windows { day: v[0], week: v[1], month: v[2] };
    Body::json(&MetricsAnswer {
        uri,
        views: usage.views,
        downloads: usage.downloads,
        citations: counts[2],
        endorsements: counts[1],
        reviews: counts[0],
        history: History { views: usage.daily_views.iter().map(|(day, n)| DayCount { date: iso_date(*day), count: *n }).collect() },
        total_views: usage.views,
        unique_views: usage.unique_views,
        total_downloads: usage.downloads,
        views_24h: usage.views_in[0],
        views_7d: usage.views_in[1],
        views_30d: usage.views_in[2],
        downloads_in: windows(usage.downloads_in),
        unique_viewers_in: windows(usage.unique_in),
        search_clicks: usage.search_clicks,
        mean_dwell_time_ms: usage.mean_dwell_ms,
        robot_requests: usage.robots,
        double_clicks: usage.double_clicks,
        as_of: rfc3339(at),
    })
}

/// A UTC day (days since the epoch) as `YYYY-MM-DD`.
fn iso_date(day: i64) -> String {
    DateTime::from_timestamp(day * 86_400, 0).unwrap_or_default().format("%Y-%m-%d").to_string()
}

/// `getMetrics`' answer: the contract's fields, the reference's, and svc's own (see the
/// lexicon), written straight from the counts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetricsAnswer<'a> {
    uri: &'a str,
    views: u64,
    downloads: u64,
    citations: u64,
    endorsements: u64,
    reviews: u64,
    history: History,
    total_views: u64,
    unique_views: u64,
    total_downloads: u64,
    #[serde(rename = "views24h")]
    views_24h: u64,
    #[serde(rename = "views7d")]
    views_7d: u64,
    #[serde(rename = "views30d")]
    views_30d: u64,
    downloads_in: Windows,
    unique_viewers_in: Windows,
    search_clicks: u64,
    mean_dwell_time_ms: u64,
    robot_requests: u64,
    double_clicks: u64,
    as_of: String,
}

/// Views per day, oldest first.
#[derive(Serialize)]
struct History {
    views: Vec<DayCount>,
}

/// One day's views.
#[derive(Serialize)]
struct DayCount {
    date: String,
    count: u64,
}

/// A figure for each window.
#[derive(Serialize)]
struct Windows {
    #[serde(rename = "24h")]
    day: u64,
    #[serde(rename = "7d")]
    week: u64,
    #[serde(rename = "30d")]
    month: u64,
}

/// `getViewCount {uri}` → `{uri, count}`: the counted views of all time.
fn get_view_count(c: &Call) -> Answer {
    let uri = c.str("uri");
    shown_eprint(c, uri)?;
    let totals = blocking(&c.state, || UsageReader::new(c.state.store.as_ref())?.totals(uri))?;
    Body::json(&json!({"uri": uri, "count": totals.views}))
}

/// `getTrending {window | period, field?, fieldUris?, limit, cursor?, asOf?}` →
/// `{trending: [{uri, title, score, inUserFields?}], window, cursor?, hasMore}`.
fn get_trending(c: &Call) -> Answer {
    let p = &c.params;
    let window = match (p.str("window"), p.str("period")) {
        (Some(w), _) | (None, Some(w)) => Window::parse(w).ok_or_else(|| ApiError::invalid_param("window", "must be 24h, 7d or 30d"))?,
        (None, None) => Window::Week,
    };
    let mut fields: Vec<String> =
        p.strs("fieldUris").iter().flat_map(|f| f.split(',')).map(str::trim).filter(|f| !f.is_empty()).map(str::to_owned).collect();
    fields.extend(p.str("field").map(str::to_owned));
    fields.sort();
    fields.dedup();
    let (at, asked) = as_of(c)?;
    let cursor = p
        .str("cursor")
        .map(|s| BASE64URL_NOPAD.decode(s.as_bytes()).map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing")))
        .transpose()?;
    let page = trending_page(c, window, asked.then_some(at), &fields, c.limit(20), cursor.as_deref())?;
    let trending = page
        .entries
        .iter()
        .map(|t| TrendingEntry {
            uri: &t.uri,
            title: &t.title,
            score: t.score,
            in_user_fields: (!fields.is_empty()).then_some(t.in_fields),
        })
        .collect();
    Body::json(&TrendingAnswer {
        trending,
        window: window.as_str(),
        has_more: page.cursor.is_some(),
        as_of: rfc3339(at),
        cursor: page.cursor.map(|next| BASE64URL_NOPAD.encode(&next)),
    })
}

/// `getTrending`'s answer, written straight from the page (no JSON tree between).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TrendingAnswer<'a> {
    trending: Vec<TrendingEntry<'a>>,
    window: &'static str,
    has_more: bool,
    as_of: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
}

/// One eprint of `getTrending`'s answer; `inUserFields` only when fields were asked for.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TrendingEntry<'a> {
    uri: &'a str,
    title: &'a str,
    score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    in_user_fields: Option<bool>,
}

/// A page of the trending eprints (see `UsageReader::trending`), without those of hidden
/// accounts: one account row read per repository on the page.
pub(crate) fn trending_page(
    c: &Call,
    window: Window,
    at: Option<i64>,
    fields: &[String],
    limit: usize,
    cursor: Option<&[u8]>,
) -> Result<TrendingPage, ApiError> {
    blocking(&c.state, || {
        let eprints = EprintsReader::new(c.state.store.as_ref())?;
        // The accounts of a page of ranking rows in one read (from the row cache, shared).
        let keep = |uris: &[&str]| -> Result<Vec<bool>, ProjectionError> {
            let repos: Vec<&str> =
                uris.iter().map(|uri| uri.strip_prefix("at://").and_then(|r| r.split('/').next()).unwrap_or_default()).collect();
            Ok(eprints.hidden(&repos)?.into_iter().map(|hidden| !hidden).collect())
        };
        Ok(UsageReader::new(c.state.store.as_ref())?.trending(window, at, fields, limit, cursor, &keep)?)
    })
}

/// Records that a search's results were shown, as a `command.search` event appended in the
/// background (the search does not wait for the log); the impression's id, which the
/// client names in `recordSearchClick` and `recordSearchDownload`.
pub(crate) fn record_impression(c: &Call, nsid: &str, query: String, hits: u64) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let viewer = c.caller.as_ref().map(|caller| Viewers::pseudonym(&c.state.auth.keys, Some(&caller.did), None, None)).unwrap_or_default();
    let event = NewEvent {
        key: id.clone(),
        source: Source::Command { nsid: nsid.into(), caller: "anonymous".into(), host: c.state.identity.public_url.clone() },
        payload: Payload::Search(SearchImpression { impression_id: id.clone(), viewer, query, hits }),
    };
    let state = c.state.clone();
    tokio::spawn(async move {
        if let Err(e) = state.appender.append(&state.log, vec![event]).await {
            tracing::warn!(error = e.message(), "a search impression was not recorded");
        }
    });
    id
}
