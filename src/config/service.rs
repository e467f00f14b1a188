//! What the long-running roles take: the data directory, the network they follow, the
//! HTTP server and the identity layer.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::ConfigError;

/// Where the embedded log, store and search indexes live.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    /// The data directory.
    #[arg(long, env = "SVC_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Partitions of a new log (an existing log keeps its own count).
    #[arg(long, env = "SVC_PARTITIONS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub partitions: u32,

    /// The event log: `kafka://HOST:PORT[,HOST:PORT][?topic=NAME&replication=N&rdkafka.KEY=VALUE]`
    /// for Kafka; unset, the embedded log in the data directory.
    #[arg(long = "log", env = "SVC_LOG")]
    pub log_url: Option<String>,

    /// When the embedded log acknowledges an append: `written`, once the kernel holds its
    /// journal write (it survives svc being killed; a power loss may lose the last few
    /// milliseconds), or `synced`, once that write is on the disk (an `msync` of its pages
    /// per append, which concurrent procedures share). Kafka acknowledges as its `acks` say.
    #[arg(long, env = "SVC_LOG_ACK", value_enum, default_value_t = LogAckArg::Written)]
    pub log_ack: LogAckArg,

    /// The read-model store: `scylla://HOST:PORT[,HOST:PORT][/KEYSPACE][?replication_factor=N]`
    /// for ScyllaDB; unset, the embedded store in the data directory. Search indexes stay in
    /// the data directory either way (each query node keeps its own).
    #[arg(long = "store", env = "SVC_STORE")]
    pub store_url: Option<String>,

    /// The embedded store's page cache for `store.redb`, in MiB (each model version's file
    /// has its own of `--version-page-cache-mib`). Both fill as pages are read and stay
    /// full: with the row cache they bound what the store keeps in memory.
    #[arg(long, env = "SVC_PAGE_CACHE_MIB", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub page_cache_mib: u64,

    /// The embedded store's page cache for each model version's file, in MiB.
    #[arg(long, env = "SVC_VERSION_PAGE_CACHE_MIB", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub version_page_cache_mib: u64,

    /// The embedded store's page cache for the usage model's files instead, in MiB: a batch
    /// of a stream of views rewrites tens of MB of their pages, and half of this cache must
    /// hold them (docs/performance.md, fifty-third session). It fills as the model is written.
    #[arg(long, env = "SVC_USAGE_PAGE_CACHE_MIB", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub usage_page_cache_mib: u64,

    /// The embedded store's row cache (rows read recently, kept exact under writes), in MiB.
    #[arg(long, env = "SVC_ROW_CACHE_MIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub row_cache_mib: u64,
}

impl DataArgs {
    /// The embedded store's cache sizes these arguments ask for.
    pub fn caches(&self) -> store::CacheSizes {
        let mib = |n: u64| n << 20;
        store::CacheSizes {
            store_pages: mib(self.page_cache_mib) as usize,
            version_pages: mib(self.version_page_cache_mib) as usize,
            streamed_models: &[projections::usage::MODEL],
            streamed_pages: mib(self.usage_page_cache_mib) as usize,
            rows: mib(self.row_cache_mib),
        }
    }
}

/// When the embedded log acknowledges an append (`--log-ack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogAckArg {
    /// Once the kernel holds the journal's write.
    Written,
    /// Once the journal's write is on the disk.
    Synced,
}

impl From<LogAckArg> for eventlog::LogAck {
    fn from(ack: LogAckArg) -> Self {
        match ack {
            LogAckArg::Written => eventlog::LogAck::Written,
            LogAckArg::Synced => eventlog::LogAck::Synced,
        }
    }
}

/// Where ingest follows the network.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// A relay's or PDS's `ws://` or `wss://` base URL: follow its
    /// `com.atproto.sync.subscribeRepos` stream.
    #[arg(long, env = "SVC_FIREHOSE", conflicts_with = "jetstream")]
    pub firehose: Option<String>,
    /// A Jetstream instance's `ws://` or `wss://` base URL: follow its JSON stream instead
    /// (not signed, so not verified: the instance is trusted).
    #[arg(long, env = "SVC_JETSTREAM")]
    pub jetstream: Option<String>,

    #[command(flatten)]
    pub network: NetworkArgs,
}

/// How ingest reads repositories: where DIDs resolve, and which collections it indexes.
#[derive(Debug, Clone, Args)]
pub struct NetworkArgs {
    /// The did:plc directory.
    #[arg(long, env = "SVC_PLC_URL", default_value = atproto::identity::DEFAULT_PLC_URL)]
    pub plc_url: String,

    /// The collections to index, comma-separated: NSIDs, or prefixes ending in `.` (svc's
    /// own, and Margin's annotations and highlights, listed on the eprints they target).
    #[arg(long, env = "SVC_COLLECTIONS", default_value = "pub.svc.,at.margin.annotation,at.margin.highlight", value_delimiter = ',')]
    pub collections: Vec<String>,
    /// Resolve handles through this service's `com.atproto.identity.resolveHandle` (an
    /// `http(s)://` XRPC base) instead of DNS and HTTPS.
    #[arg(long, env = "SVC_HANDLE_RESOLVER")]
    pub handle_resolver: Option<String>,
}

/// The shared knowledge graph's governance repository.
#[derive(Debug, Clone, Args)]
pub struct GovernanceArgs {
    /// The DID of the governance repository: its `pub.svc.graph.node` and `pub.svc.graph.edge`
    /// records are the shared knowledge graph, anyone else's are their personal graph; the
    /// seeded taxonomy is written to it.
    #[arg(long, env = "SVC_GOVERNANCE_DID", default_value = "did:web:localhost")]
    pub governance_did: String,
}

impl GovernanceArgs {
    /// Checks that the governance repository is named by a DID.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !lexicons::formats::is_did(&self.governance_did) {
            return Err(ConfigError::GovernanceDid(self.governance_did.clone()));
        }
        Ok(())
    }
}

/// Publishing approved proposals to the governance repository on its host: the only
/// writes svc makes to a repository. Unset, svc publishes nothing (the shared graph changes
/// only by what the governance repository's owner writes).
#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    /// The `http(s)://` base URL of the governance repository's host (PDS): svc signs in
    /// there and writes each approved node or edge to the repository.
    #[arg(long, env = "SVC_GOVERNANCE_PDS")]
    pub governance_pds: Option<String>,
    /// The account svc signs in as on that host (its handle or DID); default: the
    /// governance DID.
    #[arg(long, env = "SVC_GOVERNANCE_IDENTIFIER")]
    pub governance_identifier: Option<String>,
    /// The account's password or app password. Give it in the environment, not as a flag.
    #[arg(long, env = "SVC_GOVERNANCE_PASSWORD", hide_env_values = true)]
    pub governance_password: Option<String>,
    /// Seconds between two publishing passes (each also runs on `triggerGovernanceSync`).
    #[arg(long, env = "SVC_GOVERNANCE_PUBLISH_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub governance_publish_seconds: u64,
}

impl PublishArgs {
    /// Checks that a host comes with a password and is an HTTP URL.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let Some(url) = &self.governance_pds else { return Ok(()) };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError::SourceUrl { flag: "--governance-pds", url: url.clone(), schemes: "http:// or https://" });
        }
        if self.governance_password.as_deref().is_none_or(str::is_empty) {
            return Err(ConfigError::GovernancePassword);
        }
        Ok(())
    }
}

/// The external scholarly sources papers are imported from (for claiming): where each is
/// and how svc identifies itself to them. Tests point them at local fixture servers.
#[derive(Debug, Clone, Args)]
pub struct ExternalArgs {
    /// arXiv's API host (its `/api/query`).
    #[arg(long, env = "SVC_ARXIV_URL", default_value = sources::arxiv::BASE_URL)]
    pub arxiv_url: String,
    /// Where arXiv's PDFs are fetched from (`claiming.fetchExternalPdf`: the `/pdf/…` paths
    /// of arXiv's links).
    #[arg(long, env = "SVC_ARXIV_PDF_URL", default_value = sources::arxiv::PDF_URL)]
    pub arxiv_pdf_url: String,
    /// Milliseconds between two requests to arXiv (arXiv asks for 3,000).
    #[arg(long, env = "SVC_ARXIV_INTERVAL_MS", default_value_t = 3000, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub arxiv_interval_ms: u64,
    /// A contact e-mail address given to the sources in the user agent, as their
    /// etiquette asks.
    #[arg(long, env = "SVC_SOURCES_CONTACT")]
    pub sources_contact: Option<String>,
    /// ORCID's public API host (people: `actor.autocompleteOrcid`, `discoverAuthorIds`).
    #[arg(long, env = "SVC_ORCID_URL", default_value = sources::registries::ORCID_URL)]
    pub orcid_url: String,
    /// ROR's API host (organizations: `actor.autocompleteAffiliation`).
    #[arg(long, env = "SVC_ROR_URL", default_value = sources::registries::ROR_URL)]
    pub ror_url: String,
    /// Wikidata's host (concepts: `actor.autocompleteKeyword`).
    #[arg(long, env = "SVC_WIKIDATA_URL", default_value = sources::registries::WIKIDATA_URL)]
    pub wikidata_url: String,
    /// OCLC FAST's host (subject headings: `actor.autocompleteKeyword`).
    #[arg(long, env = "SVC_FAST_URL", default_value = sources::registries::FAST_URL)]
    pub fast_url: String,
    /// Crossref's REST API host (works: a source of papers, by DOI).
    #[arg(long, env = "SVC_CROSSREF_URL", default_value = sources::crossref::BASE_URL)]
    pub crossref_url: String,
    /// Semantic Scholar's API host (its Academic Graph: a source of papers).
    #[arg(long, env = "SVC_SEMANTIC_SCHOLAR_URL", default_value = sources::semantic_scholar::BASE_URL)]
    pub semantic_scholar_url: String,
    /// A Semantic Scholar API key (sent as `x-api-key`; without one, svc uses the shared
    /// public pool). Give it in the environment, not as a flag.
    #[arg(long, env = "SVC_SEMANTIC_SCHOLAR_API_KEY", hide_env_values = true)]
    pub semantic_scholar_api_key: Option<String>,
    /// OpenAlex's API host (works: a source of papers; authors: `discoverAuthorIds`).
    #[arg(long, env = "SVC_OPENALEX_URL", default_value = sources::registries::OPENALEX_URL)]
    pub openalex_url: String,
    /// ORCID's OAuth host (ORCID verification: `author.initiateOrcidVerification`).
    #[arg(long, env = "SVC_ORCID_OAUTH_URL", default_value = sources::orcid_oauth::OAUTH_URL)]
    pub orcid_oauth_url: String,
    /// svc's client id at ORCID (its developer tools); ORCID verification is off without it.
    #[arg(long, env = "SVC_ORCID_CLIENT_ID")]
    pub orcid_client_id: Option<String>,
    /// The client's secret. Give it in the environment, not as a flag.
    #[arg(long, env = "SVC_ORCID_CLIENT_SECRET", hide_env_values = true)]
    pub orcid_client_secret: Option<String>,
    /// Where the browser goes after ORCID verification, with `orcidVerification=success` or
    /// `=error&reason=…` added (the web client's page); default: the public URL.
    #[arg(long, env = "SVC_ORCID_RETURN_URL")]
    pub orcid_return_url: Option<String>,
    /// GitHub's API host (an eprint's code repositories: the integrations route).
    #[arg(long, env = "SVC_GITHUB_URL", default_value = sources::platforms::GITHUB_URL)]
    pub github_url: String,
    /// GitLab's host (gitlab.com projects: the integrations route).
    #[arg(long, env = "SVC_GITLAB_URL", default_value = sources::platforms::GITLAB_URL)]
    pub gitlab_url: String,
    /// Zenodo's host (an eprint's data records: the integrations route).
    #[arg(long, env = "SVC_ZENODO_URL", default_value = sources::platforms::ZENODO_URL)]
    pub zenodo_url: String,
    /// The Software Heritage archive's host (archived code: the integrations route).
    #[arg(long, env = "SVC_SWH_URL", default_value = sources::platforms::SWH_URL)]
    pub swh_url: String,
    /// OpenReview's API host (profiles: `actor.autocompleteOpenReview`).
    #[arg(long, env = "SVC_OPENREVIEW_URL", default_value = sources::registries::OPENREVIEW_URL)]
    pub openreview_url: String,
}

impl ExternalArgs {
    /// Checks the sources' URLs.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (flag, url) in [
            ("--arxiv-url", &self.arxiv_url),
            ("--arxiv-pdf-url", &self.arxiv_pdf_url),
            ("--orcid-url", &self.orcid_url),
            ("--ror-url", &self.ror_url),
            ("--wikidata-url", &self.wikidata_url),
            ("--fast-url", &self.fast_url),
            ("--openalex-url", &self.openalex_url),
            ("--crossref-url", &self.crossref_url),
            ("--semantic-scholar-url", &self.semantic_scholar_url),
            ("--openreview-url", &self.openreview_url),
            ("--orcid-oauth-url", &self.orcid_oauth_url),
            ("--github-url", &self.github_url),
            ("--gitlab-url", &self.gitlab_url),
            ("--zenodo-url", &self.zenodo_url),
            ("--swh-url", &self.swh_url),
        ] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::SourceUrl { flag, url: url.clone(), schemes: "http:// or https://" });
            }
        }
        if self.orcid_client_id.is_some() && self.orcid_client_secret.as_deref().is_none_or(str::is_empty) {
            return Err(ConfigError::OrcidSecret);
        }
        Ok(())
    }

    /// The registries, as configured; ORCID verification returns users to `public_url`'s
    /// `/v1/auth/orcid/callback`.
    pub fn registries(&self, public_url: &str) -> sources::registries::Registries {
        let registries = sources::registries::Registries::new(&sources::registries::RegistryUrls {
            orcid: self.orcid_url.clone(),
            ror: self.ror_url.clone(),
            wikidata: self.wikidata_url.clone(),
            fast: self.fast_url.clone(),
            openalex: self.openalex_url.clone(),
            openreview: self.openreview_url.clone(),
            contact: self.sources_contact.clone(),
        });
        match (&self.orcid_client_id, &self.orcid_client_secret) {
            (Some(id), Some(secret)) => {
                let public = public_url.trim_end_matches('/');
                let callback = format!("{public}/v1/auth/orcid/callback");
                let return_to = self.orcid_return_url.clone().unwrap_or_else(|| format!("{public}/"));
                registries.with_orcid_oauth(sources::orcid_oauth::OrcidOAuth::new(&self.orcid_oauth_url, id, secret, &callback, &return_to))
            }
            _ => registries,
        }
    }

    /// The code and data platforms, as configured.
    pub fn platforms(&self) -> sources::platforms::Platforms {
        sources::platforms::Platforms::new(&sources::platforms::PlatformUrls {
            github: self.github_url.clone(),
            gitlab: self.gitlab_url.clone(),
            zenodo: self.zenodo_url.clone(),
            swh: self.swh_url.clone(),
        })
    }

    /// The sources, as configured.
    pub fn sources(&self) -> sources::Sources {
        let mut arxiv = sources::arxiv::etiquette(&self.arxiv_url, self.sources_contact.as_deref());
        arxiv.interval = std::time::Duration::from_millis(self.arxiv_interval_ms);
        let pdfs = sources::arxiv::pdf_etiquette(&self.arxiv_pdf_url, self.sources_contact.as_deref());
        let arxiv = sources::arxiv::Arxiv::new(arxiv).with_pdfs(pdfs);
        let contact = self.sources_contact.as_deref();
        let openalex = sources::openalex::OpenAlex::new(sources::openalex::etiquette(&self.openalex_url, contact));
        let crossref = sources::crossref::Crossref::new(sources::crossref::etiquette(&self.crossref_url, contact));
        let s2 = sources::semantic_scholar::etiquette(&self.semantic_scholar_url, self.semantic_scholar_api_key.as_deref());
        let s2 = sources::semantic_scholar::SemanticScholar::new(s2);
        sources::Sources::new([
            std::sync::Arc::new(arxiv) as std::sync::Arc<dyn sources::Source>,
            std::sync::Arc::new(crossref),
            std::sync::Arc::new(openalex),
            std::sync::Arc::new(s2),
        ])
    }
}

/// `svc up` and `svc serve`.
#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub data: DataArgs,

    #[command(flatten)]
    pub source: SourceArgs,

    /// The address the API listens on.
    #[arg(long, env = "SVC_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// The service's DID, served in `/.well-known/did.json` (the `aud` of service auth).
    #[arg(long, env = "SVC_SERVICE_DID", default_value = "did:web:localhost")]
    pub service_did: String,

    /// The public base URL clients reach the API at; defaults to `http://<listen>`.
    #[arg(long, env = "SVC_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// DIDs of the services approved to call `pub.svc.sync.refreshRecord` and `deleteRecord`
    /// on any repository's records, comma-separated (a repository may always act on its own).
    #[arg(long, env = "SVC_APPROVED_SERVICES", value_delimiter = ',')]
    pub approved_services: Vec<String>,

    /// Events per projection batch once caught up; under a stream each batch takes what came in, up to 32,768.
    #[arg(long, env = "SVC_BATCH_SIZE", default_value_t = 2000)]
    pub batch_size: usize,

    /// Seconds without a report after which a running backfill operation is taken for
    /// interrupted (its node stopped) and reported failed; a running one reports at least
    /// 12 times in this span.
    #[arg(long, env = "SVC_OPERATION_STALE_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub operation_stale_seconds: u64,

    /// Seconds between two runs of the job that finds the communities of the shared
    /// knowledge graph (`getCommunities`); each run appends only the results that changed.
    #[arg(long, env = "SVC_COMMUNITIES_SECONDS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub communities_seconds: u64,

    /// The consensus rule governance proposals are tallied by: `simple` (one voter, one
    /// vote) or `weighted` (votes weigh by governance role, trusted editors' approvals
    /// needed, an administrator's veto; docs/graph.md). Every query node must use the same.
    #[arg(long, env = "SVC_GOVERNANCE_CONSENSUS", default_value = "simple", value_parser = ["simple", "weighted"])]
    pub governance_consensus: String,

    /// Where `pub.svc.admin.createSnapshot` writes snapshots of this node's search index, a
    /// folder each (default: `snapshots` in the data directory). On the data directory's
    /// file system the index's files are hard links, taken in an instant; elsewhere they
    /// are copied while the node's projections wait.
    #[arg(long, env = "SVC_SNAPSHOT_DIR")]
    pub snapshot_dir: Option<std::path::PathBuf>,

    /// After a first catch-up of at least this many events, the process restarts itself in
    /// place (same PID, arguments and listening socket: connections wait, none is refused)
    /// to hand back the memory the catch-up left with the allocator; 0 never restarts
    /// (docs/operator-guide.md).
    #[arg(long, env = "SVC_RESTART_AFTER_CATCH_UP", default_value_t = 100_000)]
    pub restart_after_catch_up: u64,

    #[command(flatten)]
    pub http: HttpArgs,

    #[command(flatten)]
    pub tap: TapArgs,

    #[command(flatten)]
    pub auth: AuthArgs,

    #[command(flatten)]
    pub governance: GovernanceArgs,

    #[command(flatten)]
    pub publish: PublishArgs,

    #[command(flatten)]
    pub external: ExternalArgs,
}

impl UpArgs {
    /// Where snapshots of this node's search index are written.
    pub fn snapshot_dir(&self) -> std::path::PathBuf {
        self.snapshot_dir.clone().unwrap_or_else(|| self.data.data_dir.join("snapshots"))
    }
}

/// The identity layer: keys, the first admins, rate limits.
#[derive(Debug, Clone, Args)]
pub struct AuthArgs {
    /// The file of svc's token-signing and sealing keys, shared by every query node; created
    /// on first start. Default: `auth-keys.json` in the data directory.
    #[arg(long, env = "SVC_AUTH_KEYS")]
    pub auth_keys: Option<PathBuf>,

    /// DIDs granted the admin role at start (idempotent), comma-separated; `ADMIN_DIDS` is
    /// read too when this is unset.
    #[arg(long, env = "SVC_ADMIN_DIDS", value_delimiter = ',')]
    pub admin_dids: Vec<String>,

    /// DIDs granted the governance role `administrator` at start (idempotent),
    /// comma-separated: they decide elevation requests, grant and revoke delegations and
    /// revoke governance roles (the governance repository's DID always may).
    #[arg(long, env = "SVC_GOVERNANCE_ADMINS", value_delimiter = ',')]
    pub governance_admins: Vec<String>,

    /// Requests per minute of the four rate-limit tiers (anonymous, authenticated, elevated,
    /// service), comma-separated, or `off`.
    #[arg(long, env = "SVC_RATE_LIMITS", default_value = "60,300,1000,5000", value_parser = parse_rate_limits)]
    pub rate_limits: RateTiers,

    /// The number of query nodes sharing each limit: each enforces `ceil(limit / nodes)`.
    #[arg(long, env = "SVC_RATE_LIMIT_NODES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub rate_limit_nodes: u32,

    /// Proxies whose `X-Forwarded-For` names the client, comma-separated IP addresses.
    #[arg(long, env = "SVC_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

/// The value of `--rate-limits`: four tiers, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateTiers(pub Option<[u32; 4]>);

fn parse_rate_limits(s: &str) -> Result<RateTiers, String> {
    query_api::identity::limits::parse_tiers(s).map(RateTiers)
}

impl AuthArgs {
    /// The admins to bootstrap: `--admin-dids`, else `ADMIN_DIDS`.
    pub fn admins(&self) -> Vec<String> {
        if !self.admin_dids.is_empty() {
            return self.admin_dids.clone();
        }
        std::env::var("ADMIN_DIDS")
            .map(|v| v.split(',').map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()).collect())
            .unwrap_or_default()
    }

    /// The key file.
    pub fn key_file(&self, data: &DataArgs) -> PathBuf {
        self.auth_keys.clone().unwrap_or_else(|| data.data_dir.join("auth-keys.json"))
    }

    /// The rate-limit settings.
    pub fn limits(&self) -> query_api::identity::limits::LimitSettings {
        query_api::identity::limits::LimitSettings {
            tiers: self.rate_limits.0,
            nodes: self.rate_limit_nodes,
            trusted_proxies: self.trusted_proxies.clone(),
        }
    }
}

/// The bounds of the live tap of the log (`pub.svc.log.subscribe`).
#[derive(Debug, Clone, Args)]
pub struct TapArgs {
    /// Subscribers of the log's stream this node serves at once; more are refused with a
    /// `ServiceUnavailable` frame (0: the stream is off).
    #[arg(long, env = "SVC_MAX_LOG_SUBSCRIBERS", default_value_t = 256, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub max_log_subscribers: u64,
    /// Seconds a subscriber's socket may accept nothing (it does not read) before it is cut
    /// off with a `ConsumerTooSlow` frame.
    #[arg(long, env = "SVC_LOG_SUBSCRIBER_STALL_SECONDS", default_value_t = 10.0)]
    pub log_subscriber_stall_seconds: f64,
}

impl TapArgs {
    /// The tap's settings.
    pub fn settings(&self) -> query_api::tap::TapSettings {
        query_api::tap::TapSettings {
            max_subscribers: self.max_log_subscribers as usize,
            stall: std::time::Duration::from_secs_f64(self.log_subscriber_stall_seconds),
        }
    }
}

/// The bounds of the HTTP server.
#[derive(Debug, Clone, Args)]
pub struct HttpArgs {
    /// Seconds a client may take to send a request's head (request line and headers) before
    /// its connection is closed.
    #[arg(long, env = "SVC_HEADER_READ_TIMEOUT", default_value_t = 10.0)]
    pub header_read_timeout: f64,
    /// Seconds a request may take in all (reading its body included) before it is answered
    /// 503.
    #[arg(long, env = "SVC_REQUEST_TIMEOUT", default_value_t = 30.0)]
    pub request_timeout: f64,
    /// Connections served at once; more wait in the listen backlog.
    #[arg(long, env = "SVC_MAX_CONNECTIONS", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// The longest request URI accepted, in bytes (longer: 414).
    #[arg(long, env = "SVC_MAX_URI_BYTES", default_value_t = 8192, value_parser = clap::value_parser!(u64).range(256..))]
    pub max_uri_bytes: u64,
    /// The answers a node keeps per state of the embedded store (eprint details, listings:
    /// computed once, served until a write), in MiB for all its methods together; 0 keeps
    /// none. With the store's caches this bounds what a node holds in memory.
    #[arg(long, env = "SVC_KEPT_ANSWERS_MIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    pub kept_answers_mib: u64,
}

impl HttpArgs {
    /// The server limits these flags set.
    pub fn limits(&self) -> query_api::server::ServerLimits {
        query_api::server::ServerLimits {
            header_read_timeout: std::time::Duration::from_secs_f64(self.header_read_timeout),
            request_timeout: std::time::Duration::from_secs_f64(self.request_timeout),
            max_connections: self.max_connections as usize,
            max_uri_bytes: self.max_uri_bytes as usize,
        }
    }

    /// The kept answers these flags make room for.
    pub fn kept_answers(&self) -> query_api::xrpc::kept::KeptAnswers {
        query_api::xrpc::kept::KeptAnswers::new(self.kept_answers_mib << 20)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (flag, secs) in [("--header-read-timeout", self.header_read_timeout), ("--request-timeout", self.request_timeout)] {
            if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                return Err(ConfigError::Seconds(flag));
            }
        }
        Ok(())
    }
}

impl SourceArgs {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (flag, url) in [("--firehose", &self.firehose), ("--jetstream", &self.jetstream)] {
            if let Some(url) = url {
                if !(url.starts_with("ws://") || url.starts_with("wss://")) {
                    return Err(ConfigError::SourceUrl { flag, url: url.clone(), schemes: "ws:// or wss://" });
                }
            }
        }
        self.network.validate()
    }
}

impl NetworkArgs {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.plc_url.starts_with("http://") || self.plc_url.starts_with("https://")) {
            return Err(ConfigError::SourceUrl { flag: "--plc-url", url: self.plc_url.clone(), schemes: "http:// or https://" });
        }
        if let Some(url) = self.handle_resolver.as_ref().filter(|u| !(u.starts_with("http://") || u.starts_with("https://"))) {
            return Err(ConfigError::SourceUrl { flag: "--handle-resolver", url: url.clone(), schemes: "http:// or https://" });
        }
        Ok(())
    }

    /// A handle resolver: `--handle-resolver`, or DNS and HTTPS; answers kept for an hour.
    pub fn handles(&self) -> atproto::handle::HandleResolver {
        atproto::handle::HandleResolver::new(self.handle_resolver.as_deref(), std::time::Duration::from_secs(3600))
    }

    /// A DID resolver on `--plc-url`, caching documents for an hour.
    pub fn resolver(&self) -> atproto::identity::Resolver {
        atproto::identity::Resolver::new(&self.plc_url, std::time::Duration::from_secs(3600))
    }
}
