//! The integrations of an eprint (`GET /api/v1/eprints/{uri}/integrations`): what the code
//! and data platforms its record links to (`repositories.code`, `repositories.data`) say of
//! those links, asked at once, each platform's answer kept an hour
//! ([`sources::platforms`]). A platform that fails is named in `sourceErrors`; the others'
//! answers stand.

use serde_json::{json, Map, Value};
use sources::platforms::{github_repo, gitlab_project, zenodo_record};
use sources::SourceError;

use crate::state::AppState;

/// The links of `record` (an eprint record), with what their platforms say: `eprintUri`,
/// `lastUpdated`, and `github`, `gitlab`, `zenodo`, `softwareHeritage`, `datasets`,
/// `sourceErrors` when not empty.
pub async fn of(state: &AppState, uri: &str, record: &Value) -> Value {
    let links = |kind: &str| record["repositories"][kind].as_array().cloned().unwrap_or_default();
    let (code, data) = (links("code"), links("data"));
    let text = |v: &Value, k: &str| v[k].as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let code_urls: Vec<String> = code.iter().filter_map(|c| text(c, "url")).collect();
    let p = &state.platforms;

    let github =
        futures::future::join_all(code_urls.iter().filter_map(|u| github_repo(u)).map(|(o, r)| async move { p.github(&o, &r).await }));
    let gitlab =
        futures::future::join_all(code_urls.iter().filter_map(|u| gitlab_project(u)).map(|path| async move { p.gitlab(&path).await }));
    // The archive keeps origins of any code host.
    let archived = futures::future::join_all(
        code_urls.iter().filter(|u| u.starts_with("https://") || u.starts_with("http://")).map(|u| p.software_heritage(u)),
    );
    let mut datasets = Vec::new();
    let mut zenodo_ids = Vec::new();
    for d in &data {
        match text(d, "doi").as_deref().and_then(zenodo_record).or_else(|| text(d, "url").as_deref().and_then(zenodo_record)) {
            Some(id) => zenodo_ids.push(id),
            None if text(d, "doi").is_some() || text(d, "url").is_some() => {
                let mut item = Map::new();
                item.insert("type".into(), json!(text(d, "platformSlug").unwrap_or_else(|| "dataset".into())));
                for (field, from) in [("doi", "doi"), ("title", "label"), ("url", "url"), ("description", "accessStatement")] {
                    if let Some(v) = text(d, from) {
                        item.insert(field.into(), json!(v));
                    }
                }
                datasets.push(Value::Object(item));
            }
            None => {}
        }
    }
    let zenodo = futures::future::join_all(zenodo_ids.iter().map(|id| p.zenodo(id)));
    let (github, gitlab, archived, zenodo) = tokio::join!(github, gitlab, archived, zenodo);

    let mut errors: Vec<SourceError> = Vec::new();
    let mut out = json!({"eprintUri": uri, "lastUpdated": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)});
    let mut put = |key: &str, items: Vec<Value>| {
        if !items.is_empty() {
            out[key] = Value::Array(items);
        }
    };
    put("github", answered(github, &mut errors));
    put("gitlab", answered(gitlab, &mut errors));
    put("zenodo", answered(zenodo, &mut errors));
    put("softwareHeritage", answered(archived.into_iter().map(|r| r.map(Some)).collect(), &mut errors));
    put("datasets", datasets);
    if !errors.is_empty() {
        let mut named: Vec<Value> = Vec::new();
        for e in errors {
            if !named.iter().any(|n| n["source"] == e.source_name()) {
                named.push(json!({"source": e.source_name(), "message": e.to_string()}));
            }
        }
        out["sourceErrors"] = Value::Array(named);
    }
    out
}

/// The items the platform knows, serialized; its failures gathered in `errors`.
fn answered<T: serde::Serialize>(results: Vec<Result<Option<T>, SourceError>>, errors: &mut Vec<SourceError>) -> Vec<Value> {
    let mut items = Vec::new();
    for r in results {
        match r {
            Ok(Some(item)) => items.extend(serde_json::to_value(item).ok()),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    items
}
