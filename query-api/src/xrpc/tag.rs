//! `pub.svc.tag.*`: user tags on eprints: per eprint, per tag, searched, suggested and
//! trending, from the attached model. Tag forms, the quality score and the spam rule are
//! described in docs/decisions.md ("Tags").

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{Duration, Utc};
use projections::attached::collections::tag::stats;
use projections::attached::collections::{normalize_tag, Kind, Listing};
use projections::attached::read::{AttachedReader, Item};
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::params::uri_param;
use crate::reads;
use crate::views::attached;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.tag.listForEprint", Auth::Open, list_for_eprint)
        .kept()
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.tag.getDetail", Auth::Open, get_detail)
        .kept()
        .query("pub.svc.tag.search", Auth::Open, search)
        .kept()
        .aliases(&[("q", "query")])
        .query("pub.svc.tag.getSuggestions", Auth::Open, get_suggestions)
        .kept()
        .aliases(&[("text", "q")])
        .query("pub.svc.tag.getTrending", Auth::Open, get_trending)
        .query_async("pub.svc.tag.listEprints", Auth::Open, list_eprints)
}

/// `pub.svc.tag.listEprints` (beyond the contract): `{eprints, total, cursor?}`, the
/// eprints carrying the tag (in any of its forms), newest first, from the search index
/// (each document carries its tags: an exact match, no cap); `TagNotFound` when none does.
async fn list_eprints(c: Call) -> Answer {
    let tag = c.params.str("tag").unwrap_or_default().to_owned();
    if normalize_tag(&tag).is_empty() {
        return Err(ApiError::invalid_param("tag", "must hold a letter or a digit"));
    }
    let args = crate::search::SearchArgs {
        query: "*".into(),
        sort: Some(projections::search::SortOrder::Date),
        limit: c.limit(25),
        cursor: c.params.str("cursor").map(str::to_owned),
        tags: vec![tag.clone()],
        ..Default::default()
    };
    let page = crate::search::search(&c.state, args).await?;
    if page.total == 0 {
        return Err(ApiError::new(ErrorCode::TagNotFound, format!("no eprint is tagged {tag:?}")));
    }
    page.into_body("eprints")
}

/// The most tags one eprint's answer lists.
const MAX_ON_EPRINT: usize = 500;

/// What svc knows of one tag, from the counts the attached model keeps ([`stats`]): a
/// handful of row reads, however much the tag is used.
#[derive(Default)]
struct TagStats {
    /// Its written forms with their uses, most used first.
    forms: Vec<(String, u64)>,
    uses: u64,
    eprints: u64,
    taggers: u64,
}

/// The most written forms of one tag a summary reads.
const MAX_FORMS: usize = 50;

impl TagStats {
    /// The statistics of the normalized `tag`.
    fn of(r: &AttachedReader, tag: &str) -> Result<TagStats, ProjectionError> {
        let uses = r.count(&Listing::tagged(tag))?;
        if uses == 0 {
            return Ok(TagStats::default());
        }
        let mut forms = Vec::new();
        for form in r.keys(&stats::forms(tag), MAX_FORMS)? {
            let n = r.count(&stats::in_form(tag, &form))?;
            forms.push((form, n));
        }
        forms.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(TagStats { forms, uses, eprints: r.count(&stats::eprints(tag))?, taggers: r.count(&stats::taggers(tag))? })
    }

    /// Spam: a form no reader can use (a link, or longer than 50 characters), or one account
    /// putting the tag on 20 eprints or more with nobody else using it.
    fn is_spam(&self, tag: &str) -> bool {
        let looks_like_link = tag.contains("http") || tag.contains("www.") || tag.contains(".com");
        let one_account_flood = self.taggers == 1 && self.eprints >= 20;
        looks_like_link || tag.chars().count() > 50 || one_account_flood
    }

    /// Quality 0–100: how many accounts use the tag (up to 5: 50 points), on how many
    /// eprints (up to 5: 30 points), and a usable form (2 to 30 characters with a letter:
    /// 20 points). Spam scores 0.
    fn quality(&self, tag: &str) -> u64 {
        if self.is_spam(tag) {
            return 0;
        }
        let taggers = self.taggers.min(5) * 10;
        let spread = self.eprints.min(5) * 6;
        let len = tag.chars().count();
        let form = if (2..=30).contains(&len) && tag.chars().any(char::is_alphabetic) { 20 } else { 0 };
        taggers + spread + form
    }

    /// The forms people wrote, most used first.
    fn display_forms(&self) -> Vec<&str> {
        self.forms.iter().map(|(f, _)| f.as_str()).collect()
    }

    /// The `#tagSummary` view.
    fn summary(&self, tag: &str) -> Value {
        json!({
            "normalizedForm": tag,
            "displayForms": self.display_forms(),
            "usageCount": self.uses,
            "eprintCount": self.eprints,
            "taggerCount": self.taggers,
            "qualityScore": self.quality(tag),
            "isSpam": self.is_spam(tag),
            "isPromoted": false,
        })
    }
}

/// The tags in use with a word starting with the first word of `q` whose normalized form
/// contains `q`, with their statistics: a range of the model's word index, then a few rows
/// per tag.
fn matching(r: &AttachedReader, q: &str) -> Result<Vec<(String, TagStats)>, ProjectionError> {
    let first = q.split('-').find(|w| !w.is_empty()).unwrap_or_default();
    let mut names: Vec<String> = r
        .keys_from(&stats::word_index(), first, usize::MAX)?
        .iter()
        .map(|k| stats::tag_of(k).to_owned())
        .filter(|t| t.contains(q))
        .collect();
    names.sort();
    names.dedup();
    names.into_iter().map(|t| Ok((t.clone(), TagStats::of(r, &t)?))).collect()
}

fn tag_view(item: &Item) -> Value {
    let mut v = attached::view(item, "author");
    v["displayForm"] = v["tag"].clone();
    v
}

/// The tags that co-occur with any of `held` (an eprint's tags), without `held` and spam,
/// best first: each scored by the most eprints it shares with one of them (`matchedTerm`),
/// ties by name; `#tagSuggestion`s with a confidence of 0–100 relative to the best.
///
/// Exact, from the ranked listings the attached model keeps per tag
/// ([`stats::cooccurring`]): the top `depth` of each is merged, the first sight of a tag
/// being its best score, and the depth doubles until `limit` tags survive or every listing
/// was read whole.
fn cooccurring(r: &AttachedReader, held: &BTreeSet<String>, limit: usize) -> Result<Vec<Value>, ProjectionError> {
    let mut depth = limit + held.len();
    loop {
        let mut candidates: Vec<(u64, String, &String)> = Vec::new();
        let mut cut_short = false;
        for tag in held {
            let ranked = r.ranked(&stats::cooccurring(tag), depth)?;
            cut_short |= ranked.len() == depth;
            candidates.extend(ranked.into_iter().filter(|(other, _)| !held.contains(other)).map(|(other, n)| (n, other, tag)));
        }
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut seen = BTreeSet::new();
        let mut out: Vec<(u64, String, &String, String)> = Vec::new();
        for (n, other, matched) in candidates {
            if out.len() == limit {
                break;
            }
            if !seen.insert(other.clone()) {
                continue;
            }
            let stats = TagStats::of(r, &other)?;
            if stats.uses == 0 || stats.is_spam(&other) {
                continue;
            }
            let form = stats.display_forms().first().map_or(other.clone(), |f| (*f).to_owned());
            out.push((n, other, matched, form));
        }
        if out.len() == limit || !cut_short {
            let top = out.first().map_or(1, |s| s.0.max(1));
            return Ok(out
                .into_iter()
                .map(|(n, tag, matched, form)| {
                    json!({"displayForm": form, "normalizedForm": tag, "confidence": n * 100 / top, "source": "cooccurrence", "matchedTerm": matched})
                })
                .collect());
        }
        depth *= 2;
    }
}

/// `pub.svc.tag.listForEprint`: `{tags, suggestions}`.
fn list_for_eprint(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    let answer = reads::attached(&c.state, |r| {
        let items = r.all(&Listing::on_eprint(Kind::Tag, eprint), MAX_ON_EPRINT)?;
        let held = r.keys(&stats::on_eprint_distinct(eprint), usize::MAX)?.into_iter().collect();
        let suggestions = cooccurring(r, &held, 5)?;
        Ok(json!({"tags": items.iter().map(tag_view).collect::<Vec<_>>(), "suggestions": suggestions}))
    })?;
    Body::json(&answer)
}

/// `pub.svc.tag.getDetail`: the `#tagSummary` of a tag in any of its forms; 404
/// `TagNotFound` for a tag nobody uses.
fn get_detail(c: &Call) -> Answer {
    let tag = normalize_tag(c.str("tag"));
    let stats = reads::attached(&c.state, |r| TagStats::of(r, &tag))?;
    if stats.uses == 0 {
        return Err(ApiError::new(ErrorCode::TagNotFound, format!("no eprint is tagged {tag:?}")));
    }
    Body::json(&stats.summary(&tag))
}

/// `pub.svc.tag.search`: tags whose normalized form contains the normalized words and has
/// a word starting with their first, those starting with them first, then by use;
/// `minQuality` and `includeSpam` filter.
fn search(c: &Call) -> Answer {
    let q = normalize_tag(c.str("query"));
    let min_quality = c.params.int("minQuality").unwrap_or(0).max(0) as u64;
    let include_spam = c.params.bool("includeSpam") == Some(true);
    let offset = match c.params.str("cursor") {
        Some(raw) => raw.parse::<usize>().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing"))?,
        None => 0,
    };
    let tags = reads::attached(&c.state, |r| matching(r, &q))?;
    let mut hits: Vec<(bool, u64, &String, &TagStats)> = tags
        .iter()
        .filter(|(tag, stats)| (include_spam || !stats.is_spam(tag)) && stats.quality(tag) >= min_quality)
        .map(|(tag, stats)| (tag.starts_with(q.as_str()), stats.uses, tag, stats))
        .collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
    let total = hits.len();
    let limit = c.limit(50);
    let page: Vec<Value> = hits.iter().skip(offset).take(limit).map(|(_, _, tag, stats)| stats.summary(tag)).collect();
    let has_more = offset + page.len() < total;
    let mut out = json!({"tags": page, "hasMore": has_more, "total": total});
    if has_more {
        out["cursor"] = json!((offset + limit).to_string());
    }
    Body::json(&out)
}

/// `pub.svc.tag.getSuggestions`: tags starting with (then containing) `q`, most used first,
/// and with `uri`, the tags that co-occur with the eprint's own.
fn get_suggestions(c: &Call) -> Answer {
    let q = normalize_tag(c.params.str("q").unwrap_or_default());
    let limit = c.limit(10);
    let eprint = c.params.str("uri").map(|_| uri_param(&c.params, "uri")).transpose()?;
    let suggestions = reads::attached(&c.state, |r| {
        let mut out = Vec::new();
        if let Some(eprint) = eprint {
            let held = r.keys(&stats::on_eprint_distinct(eprint), usize::MAX)?.into_iter().collect();
            out = cooccurring(r, &held, limit)?;
        }
        if !q.is_empty() {
            let tags = matching(r, &q)?;
            let mut matches: Vec<(&String, &TagStats)> = tags.iter().filter(|(t, s)| !s.is_spam(t)).map(|(t, s)| (t, s)).collect();
            matches.sort_by(|a, b| b.0.starts_with(q.as_str()).cmp(&a.0.starts_with(q.as_str())).then(b.1.uses.cmp(&a.1.uses)));
            let top = matches.first().map_or(1, |m| m.1.uses.max(1));
            for (tag, stats) in matches {
                if out.len() >= limit {
                    break;
                }
                if out.iter().any(|s: &Value| s["normalizedForm"] == tag.as_str()) {
                    continue;
                }
                let form = stats.display_forms().first().copied().unwrap_or(tag).to_owned();
                out.push(json!({"displayForm": form, "normalizedForm": tag, "confidence": stats.uses * 100 / top, "source": "authority", "matchedTerm": q}));
            }
        }
        out.truncate(limit);
        Ok(out)
    })?;
    Body::json(&json!({ "suggestions": suggestions }))
}

/// `pub.svc.tag.getTrending`: the tags whose use grew most in the window (`day`, `week`,
/// `month`: the last 1, 7 or 30 days, today included, by the records' `createdAt`) over the
/// window before it, from the uses per day the attached model keeps: each
/// `{normalizedForm, displayForm, count, previousCount, growth, eprintCount, taggerCount}`
/// (the last two over all time).
fn get_trending(c: &Call) -> Answer {
    let window = c.params.str("timeWindow").unwrap_or("week").to_owned();
    let days = match window.as_str() {
        "day" => 1,
        "month" => 30,
        _ => 7,
    };
    let today = Utc::now().date_naive();
    let (uses, previous, stats) = reads::attached(&c.state, |r| {
        let mut uses: BTreeMap<String, u64> = BTreeMap::new();
        let mut previous: HashMap<String, u64> = HashMap::new();
        for back in 0..2 * days {
            let day = (today - Duration::days(back)).format("%Y-%m-%d").to_string();
            for tag in r.keys(&stats::day(&day), usize::MAX)? {
                let n = r.count(&stats::used_on(&day, &tag))?;
                *if back < days { uses.entry(tag).or_default() } else { previous.entry(tag).or_default() } += n;
            }
        }
        let mut stats: BTreeMap<String, TagStats> = BTreeMap::new();
        for tag in uses.keys() {
            stats.insert(tag.clone(), TagStats::of(r, tag)?);
        }
        Ok((uses, previous, stats))
    })?;
    let current: BTreeMap<&String, (u64, &TagStats)> = uses.iter().filter_map(|(t, n)| Some((t, (*n, stats.get(t)?)))).collect();
    let mut ranked: Vec<(i64, u64, &String, &TagStats)> = current
        .iter()
        .filter(|(tag, (_, stats))| !stats.is_spam(tag))
        .map(|(tag, (n, stats))| (*n as i64 - *previous.get(*tag).unwrap_or(&0) as i64, *n, *tag, *stats))
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
    let tags: Vec<Value> = ranked
        .into_iter()
        .take(c.limit(20))
        .map(|(growth, uses, tag, stats)| {
            json!({
                "normalizedForm": tag,
                "displayForm": stats.display_forms().first().copied().unwrap_or(tag),
                "count": uses,
                "previousCount": previous.get(tag).copied().unwrap_or(0),
                "growth": growth,
                "eprintCount": stats.eprints,
                "taggerCount": stats.taggers,
            })
        })
        .collect();
    Body::json(&json!({"tags": tags, "timeWindow": window}))
}
