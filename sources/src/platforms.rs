//! The code and data platforms an eprint's record links to (`repositories.code`,
//! `repositories.data`): GitHub, GitLab, Zenodo and the Software Heritage archive, asked
//! through their public APIs for what `GET /api/v1/eprints/{uri}/integrations` shows. Each
//! answer is kept an hour (the [`Fetcher`]'s cache), as the contract asks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{encode, json, Etiquette, Fetcher, SourceError};

/// GitHub's REST API.
pub const GITHUB_URL: &str = "https://api.github.com";
/// GitLab's (gitlab.com) REST API host.
pub const GITLAB_URL: &str = "https://gitlab.com";
/// Zenodo.
pub const ZENODO_URL: &str = "https://zenodo.org";
/// The Software Heritage archive.
pub const SWH_URL: &str = "https://archive.softwareheritage.org";

/// Where each platform's API is.
#[derive(Debug, Clone)]
pub struct PlatformUrls {
    /// GitHub's API.
    pub github: String,
    /// GitLab's host.
    pub gitlab: String,
    /// Zenodo.
    pub zenodo: String,
    /// Software Heritage.
    pub swh: String,
}

impl Default for PlatformUrls {
    fn default() -> PlatformUrls {
        PlatformUrls { github: GITHUB_URL.into(), gitlab: GITLAB_URL.into(), zenodo: ZENODO_URL.into(), swh: SWH_URL.into() }
    }
}

impl PlatformUrls {
    /// Every platform at one base URL (a fixture server answering for all of them).
    pub fn all_at(url: &str) -> PlatformUrls {
        PlatformUrls { github: url.into(), gitlab: url.into(), zenodo: url.into(), swh: url.into() }
    }
}

/// A GitHub repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GithubRepo {
    /// `github`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The owner's login.
    pub owner: String,
    /// The repository's name.
    pub repo: String,
    /// Its page.
    pub url: String,
    /// Stars.
    pub stars: u64,
    /// Forks.
    pub forks: u64,
    /// The main language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its license (SPDX id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// When it was last pushed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// Its topics.
    pub topics: Vec<String>,
}

/// A GitLab project.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GitlabProject {
    /// `gitlab`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `group/project`.
    pub path_with_namespace: String,
    /// Its name.
    pub name: String,
    /// Its page.
    pub url: String,
    /// Stars.
    pub stars: u64,
    /// Forks.
    pub forks: u64,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `public`, `internal`, `private`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Its topics.
    pub topics: Vec<String>,
    /// Its last activity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity_at: Option<String>,
}

/// A Zenodo record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZenodoRecord {
    /// `zenodo`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The version's DOI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// The DOI of every version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concept_doi: Option<String>,
    /// Its title.
    pub title: String,
    /// Its page.
    pub url: String,
    /// `dataset`, `software`, `publication`…
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// `open`, `embargoed`, `restricted`, `closed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_right: Option<String>,
    /// Its version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `{downloads, views}`.
    pub stats: Value,
}

/// A repository's state in the Software Heritage archive.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedOrigin {
    /// `softwareHeritage`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The repository's URL (the archive's origin).
    pub origin_url: String,
    /// Whether the archive has a full visit of it.
    pub archived: bool,
    /// When it was last visited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_visit: Option<String>,
    /// The SWHID of the last snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_snapshot_swhid: Option<String>,
    /// Where to browse it.
    pub browse_url: String,
}

/// The platforms' clients.
pub struct Platforms {
    github: Fetcher,
    gitlab: Fetcher,
    zenodo: Fetcher,
    swh: Fetcher,
}

fn etiquette(name: &'static str, url: &str, accept: &'static str) -> Etiquette {
    let mut e = Etiquette::new(name, url);
    e.deadline = std::time::Duration::from_secs(5);
    e.retries = 1;
    e.accept = accept;
    e
}

/// `owner/repo` of a GitHub repository URL.
pub fn github_repo(url: &str) -> Option<(String, String)> {
    let rest = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let rest = rest.strip_prefix("https://github.com/").or_else(|| rest.strip_prefix("http://github.com/"))?;
    let mut parts = rest.split('/');
    let (owner, repo) = (parts.next()?, parts.next()?);
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (ok(owner) && ok(repo)).then(|| (owner.to_owned(), repo.to_owned()))
}

/// `group/…/project` of a gitlab.com project URL.
pub fn gitlab_project(url: &str) -> Option<String> {
    let rest = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let rest = rest.strip_prefix("https://gitlab.com/").or_else(|| rest.strip_prefix("http://gitlab.com/"))?;
    let path = rest.split("/-/").next()?;
    let ok = path.split('/').count() >= 2
        && path.split('/').all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
    ok.then(|| path.to_owned())
}

/// The record id of a Zenodo DOI (`10.5281/zenodo.123`) or record URL (`zenodo.org/records/123`).
pub fn zenodo_record(doi_or_url: &str) -> Option<String> {
    let s = doi_or_url.trim().to_ascii_lowercase();
    let id = if let Some(i) = s.find("10.5281/zenodo.") {
        &s[i + "10.5281/zenodo.".len()..]
    } else if let Some(i) = s.find("zenodo.org/records/").or_else(|| s.find("zenodo.org/record/")) {
        s[i..].split_once("/record").map(|(_, r)| r.trim_start_matches('s').trim_start_matches('/'))?
    } else {
        return None;
    };
    let id: String = id.chars().take_while(char::is_ascii_digit).collect();
    (!id.is_empty()).then_some(id)
}

impl Platforms {
    /// Clients of the platforms at `urls`.
    pub fn new(urls: &PlatformUrls) -> Platforms {
        Platforms {
            github: Fetcher::new(etiquette("github", &urls.github, "application/vnd.github+json")),
            gitlab: Fetcher::new(etiquette("gitlab", &urls.gitlab, "application/json")),
            zenodo: Fetcher::new(etiquette("zenodo", &urls.zenodo, "application/json")),
            swh: Fetcher::new(etiquette("softwareHeritage", &urls.swh, "application/json")),
        }
    }

    /// A GitHub repository (`GET /repos/{owner}/{repo}`), `None` when GitHub has none.
    ///
    /// # Errors
    /// [`SourceError`] when GitHub gives no usable answer.
    pub async fn github(&self, owner: &str, repo: &str) -> Result<Option<GithubRepo>, SourceError> {
        #[derive(Deserialize)]
        struct Repo {
            name: String,
            owner: Owner,
            html_url: String,
            #[serde(default)]
            stargazers_count: u64,
            #[serde(default)]
            forks_count: u64,
            language: Option<String>,
            description: Option<String>,
            license: Option<License>,
            pushed_at: Option<String>,
            #[serde(default)]
            topics: Vec<String>,
        }
        #[derive(Deserialize)]
        struct Owner {
            login: String,
        }
        #[derive(Deserialize)]
        struct License {
            spdx_id: Option<String>,
        }
        let Some(body) = self.github.get(&format!("/repos/{}/{}", encode(owner), encode(repo))).await? else { return Ok(None) };
        let r: Repo = json("github", &body)?;
        Ok(Some(GithubRepo {
            kind: "github",
            owner: r.owner.login,
            repo: r.name,
            url: r.html_url,
            stars: r.stargazers_count,
            forks: r.forks_count,
            language: r.language,
            description: r.description,
            license: r.license.and_then(|l| l.spdx_id).filter(|l| l != "NOASSERTION"),
            last_updated: r.pushed_at,
            topics: r.topics,
        }))
    }

    /// A gitlab.com project (`GET /api/v4/projects/{path, encoded}`), `None` when GitLab has none.
    ///
    /// # Errors
    /// [`SourceError`] when GitLab gives no usable answer.
    pub async fn gitlab(&self, path: &str) -> Result<Option<GitlabProject>, SourceError> {
        #[derive(Deserialize)]
        struct Project {
            path_with_namespace: String,
            name: String,
            web_url: String,
            #[serde(default)]
            star_count: u64,
            #[serde(default)]
            forks_count: u64,
            description: Option<String>,
            visibility: Option<String>,
            #[serde(default)]
            topics: Vec<String>,
            last_activity_at: Option<String>,
        }
        let Some(body) = self.gitlab.get(&format!("/api/v4/projects/{}", encode(path))).await? else { return Ok(None) };
        let p: Project = json("gitlab", &body)?;
        Ok(Some(GitlabProject {
            kind: "gitlab",
            path_with_namespace: p.path_with_namespace,
            name: p.name,
            url: p.web_url,
            stars: p.star_count,
            forks: p.forks_count,
            description: p.description.filter(|d| !d.is_empty()),
            visibility: p.visibility,
            topics: p.topics,
            last_activity_at: p.last_activity_at,
        }))
    }

    /// A Zenodo record (`GET /api/records/{id}`), `None` when Zenodo has none.
    ///
    /// # Errors
    /// [`SourceError`] when Zenodo gives no usable answer.
    pub async fn zenodo(&self, id: &str) -> Result<Option<ZenodoRecord>, SourceError> {
        #[derive(Deserialize)]
        struct Record {
            doi: Option<String>,
            conceptdoi: Option<String>,
            metadata: Metadata,
            #[serde(default)]
            stats: Value,
            links: Links,
        }
        #[derive(Deserialize)]
        struct Metadata {
            title: String,
            resource_type: Option<ResourceType>,
            access_right: Option<String>,
            version: Option<String>,
        }
        #[derive(Deserialize)]
        struct ResourceType {
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        #[derive(Deserialize)]
        struct Links {
            html: Option<String>,
            self_html: Option<String>,
        }
        let Some(body) = self.zenodo.get(&format!("/api/records/{}", encode(id))).await? else { return Ok(None) };
        let r: Record = json("zenodo", &body)?;
        let stats =
            serde_json::json!({"downloads": r.stats["downloads"].as_u64().unwrap_or(0), "views": r.stats["views"].as_u64().unwrap_or(0)});
        Ok(Some(ZenodoRecord {
            kind: "zenodo",
            doi: r.doi,
            concept_doi: r.conceptdoi,
            title: r.metadata.title,
            url: r.links.html.or(r.links.self_html).unwrap_or_else(|| format!("https://zenodo.org/records/{id}")),
            resource_type: r.metadata.resource_type.and_then(|t| t.kind),
            access_right: r.metadata.access_right,
            version: r.metadata.version,
            stats,
        }))
    }

    /// A repository's latest visit by the Software Heritage archive
    /// (`GET /api/1/origin/{url}/visit/latest/`); not archived when the archive has none.
    ///
    /// # Errors
    /// [`SourceError`] when the archive gives no usable answer.
    pub async fn software_heritage(&self, origin: &str) -> Result<ArchivedOrigin, SourceError> {
        #[derive(Deserialize)]
        struct Visit {
            date: Option<String>,
            status: Option<String>,
            snapshot: Option<String>,
        }
        let browse_url = format!("https://archive.softwareheritage.org/browse/origin/?origin_url={}", encode(origin));
        let visit = match self.swh.get(&format!("/api/1/origin/{origin}/visit/latest/?require_snapshot=true")).await? {
            Some(body) => Some(json::<Visit>("softwareHeritage", &body)?),
            None => None,
        };
        let archived = visit.as_ref().is_some_and(|v| v.status.as_deref() == Some("full"));
        Ok(ArchivedOrigin {
            kind: "softwareHeritage",
            origin_url: origin.to_owned(),
            archived,
            last_visit: visit.as_ref().and_then(|v| v.date.clone()),
            last_snapshot_swhid: visit.and_then(|v| v.snapshot).map(|s| format!("swh:1:snp:{s}")),
            browse_url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_links_are_read_from_their_urls() {
        assert_eq!(github_repo("https://github.com/rust-lang/rust.git"), Some(("rust-lang".into(), "rust".into())));
        assert_eq!(github_repo("https://github.com/rust-lang"), None);
        assert_eq!(github_repo("https://example.org/a/b"), None);
        assert_eq!(gitlab_project("https://gitlab.com/gitlab-org/gitlab/-/tree/master"), Some("gitlab-org/gitlab".into()));
        assert_eq!(gitlab_project("https://gitlab.com/solo"), None);
        assert_eq!(zenodo_record("10.5281/zenodo.7654321"), Some("7654321".into()));
        assert_eq!(zenodo_record("https://doi.org/10.5281/ZENODO.42"), Some("42".into()));
        assert_eq!(zenodo_record("https://zenodo.org/records/123?x=1"), Some("123".into()));
        assert_eq!(zenodo_record("https://zenodo.org/record/99"), Some("99".into()));
        assert_eq!(zenodo_record("10.1234/other"), None);
    }
}
