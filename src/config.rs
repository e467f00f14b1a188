//! The one typed configuration of `svc`, from flags and `SVC_*` environment variables.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// svc: an AppView for scholarly eprints on the AT Protocol.
#[derive(Debug, Parser)]
#[command(name = "svc", version, about)]
pub struct Cli {
    /// Log line format.
    #[arg(long, env = "SVC_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,

    /// Seconds between progress log lines of long work (seeding, catching up, replaying)
    /// when stderr is not a terminal (on a terminal a progress bar shows it).
    #[arg(long, env = "SVC_PROGRESS_INTERVAL", default_value_t = 5.0, global = true)]
    pub progress_interval: f64,

    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands, one per role or tool.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every role in one process (on the embedded log and store by default).
    Up(UpArgs),
    /// The ingest role: append what the sources give to the log (for now a seed file).
    Ingest(IngestArgs),
    /// The projector role: build the shared read models, sharing the log's partitions with
    /// every other projector of the same group.
    Project(ProjectArgs),
    /// The query role: serve the API from the shared read models and this node's own search
    /// index, which it builds from its own reading of the log.
    Serve(UpArgs),
    /// Turn a file of papers (arXiv JSON lines, plain or gzip) into events in the log.
    Seed(SeedArgs),
    /// Rebuild read models from position 0 into new versions, then swap them in.
    Replay(ReplayArgs),
    /// Bring the read models to repositories' current state, fetched whole and verified.
    Backfill {
        /// Which repositories.
        #[command(subcommand)]
        command: BackfillCommand,
    },
    /// List the events a read model could not apply (its dead letters), as JSON lines.
    DeadLetters(DeadLetterArgs),
    /// Read the event log.
    Log {
        /// What to do with the log.
        #[command(subcommand)]
        command: LogCommand,
    },
    /// Operate a running node through its admin API over HTTP: `svc admin login …`, then
    /// `svc admin <operation> [name=value …]` (e.g. `svc admin getOverview`,
    /// `svc admin deleteContent uri=at://… collection=pub.svc.review.comment`); triggers
    /// follow their operation with a progress bar until it ends.
    Admin(AdminArgs),
    /// Manage svc's token keys.
    Auth {
        /// What to do.
        #[command(subcommand)]
        command: AuthCommand,
    },
}

/// `svc admin …`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The node's base URL.
    #[arg(long, env = "SVC_URL", default_value = "http://127.0.0.1:3000")]
    pub url: String,

    /// An admin's credential: the access token `svc admin login` prints, or a service-auth
    /// token of an admin's PDS for the operation.
    #[arg(long, env = "SVC_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// What `svc admin` does.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Log in the AT Protocol way: a session on the admin's PDS, a service-auth token from
    /// it for svc, the PKCE code exchange; prints svc's tokens as JSON (export the
    /// `access_token` as SVC_ADMIN_TOKEN).
    Login {
        /// The PDS holding the admin's account.
        #[arg(long)]
        pds: String,
        /// The admin's handle or DID.
        #[arg(long)]
        identifier: String,
        /// The account's (app) password.
        #[arg(long, env = "SVC_ADMIN_PASSWORD", hide_env_values = true)]
        password: String,
    },
    /// One admin operation by name (`getOverview`) or NSID, then its parameters or input
    /// fields as `name=value`; `--no-wait` returns at once from a trigger.
    #[command(external_subcommand)]
    Call(Vec<String>),
}

/// `svc auth …`.
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Add a token-signing key to the key file: it signs from the next start of each query
    /// node on; the older keys (the newest three are kept) still verify what they signed, so
    /// nobody is logged out.
    RotateKey {
        #[command(flatten)]
        data: DataArgs,

        /// The key file (default: `auth-keys.json` in the data directory).
        #[arg(long, env = "SVC_AUTH_KEYS")]
        auth_keys: Option<PathBuf>,
    },
}

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

    /// The read-model store: `scylla://HOST:PORT[,HOST:PORT][/KEYSPACE][?replication_factor=N]`
    /// for ScyllaDB; unset, the embedded store in the data directory. Search indexes stay in
    /// the data directory either way (each query node keeps its own).
    #[arg(long = "store", env = "SVC_STORE")]
    pub store_url: Option<String>,
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

    /// The collections to index, comma-separated: NSIDs, or prefixes ending in `.`.
    #[arg(long, env = "SVC_COLLECTIONS", default_value = "pub.svc.", value_delimiter = ',')]
    pub collections: Vec<String>,
    /// Resolve handles through this service's `com.atproto.identity.resolveHandle` (an
    /// `http(s)://` XRPC base) instead of DNS and HTTPS.
    #[arg(long, env = "SVC_HANDLE_RESOLVER")]
    pub handle_resolver: Option<String>,
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

    /// Events per projection batch.
    #[arg(long, env = "SVC_BATCH_SIZE", default_value_t = 2000)]
    pub batch_size: usize,

    /// Seconds without a report after which a running backfill operation is taken for
    /// interrupted (its node stopped) and reported failed; a running one reports at least
    /// 12 times in this span.
    #[arg(long, env = "SVC_OPERATION_STALE_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub operation_stale_seconds: u64,

    #[command(flatten)]
    pub http: HttpArgs,

    #[command(flatten)]
    pub auth: AuthArgs,
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
    query_api::auth::limits::parse_tiers(s).map(RateTiers)
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
    pub fn limits(&self) -> query_api::auth::limits::LimitSettings {
        query_api::auth::limits::LimitSettings {
            tiers: self.rate_limits.0,
            nodes: self.rate_limit_nodes,
            trusted_proxies: self.trusted_proxies.clone(),
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

    fn validate(&self) -> Result<(), ConfigError> {
        for (flag, secs) in [("--header-read-timeout", self.header_read_timeout), ("--request-timeout", self.request_timeout)] {
            if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                return Err(ConfigError::Seconds(flag));
            }
        }
        Ok(())
    }
}

/// `svc seed`.
#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// The file of papers.
    pub file: PathBuf,

    /// Stop after this many papers.
    #[arg(long)]
    pub limit: Option<usize>,

    /// Papers per append (one durable write each).
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,

    /// Stop at the first line that cannot become a valid record (appending nothing of its
    /// batch) instead of skipping it.
    #[arg(long)]
    pub strict: bool,

    /// Also write a scholarly layer for the papers: reviews with replies, annotations,
    /// endorsements, tags, citations, related works, versions and profiles by made-up
    /// accounts, deterministically (docs/seeding.md).
    #[arg(long)]
    pub social: bool,
}

/// `svc ingest`.
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    #[command(flatten)]
    pub data: DataArgs,

    #[command(flatten)]
    pub source: SourceArgs,

    /// A file of papers to append first (arXiv JSON lines, plain or gzip).
    #[arg(long, env = "SVC_SEED")]
    pub seed: Option<PathBuf>,

    /// Stop after this many papers of the seed file.
    #[arg(long)]
    pub limit: Option<usize>,

    /// Papers per append (one durable write each).
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,

    /// With the seed, the scholarly layer about its papers, as `svc seed --social` writes it.
    #[arg(long, requires = "seed")]
    pub social: bool,
}

/// `svc project`.
#[derive(Debug, Clone, Args)]
pub struct ProjectArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// The work group: projectors of one group split the log's partitions between them.
    #[arg(long, env = "SVC_GROUP", default_value = "svc.project")]
    pub group: String,

    /// Events per projection batch.
    #[arg(long, env = "SVC_BATCH_SIZE", default_value_t = 2000)]
    pub batch_size: usize,

    /// Seconds without a report after which a running backfill operation is taken for
    /// interrupted (its node stopped) and reported failed; a running one reports at least
    /// 12 times in this span.
    #[arg(long, env = "SVC_OPERATION_STALE_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub operation_stale_seconds: u64,
}

/// `svc replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// A read model to rebuild (repeatable). Default: every model on the embedded store;
    /// with `--store`, the shared models (each query node rebuilds its own search index).
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,

    /// Seconds to keep an old version after the swap before dropping it, so that live
    /// workers in other processes move to the new one first. Default: 0 on the embedded store
    /// (nothing else can have it open), 10 with `--store`.
    #[arg(long)]
    pub grace_seconds: Option<u64>,
}

/// `svc backfill …`.
#[derive(Debug, Subcommand)]
pub enum BackfillCommand {
    /// One repository (`com.atproto.sync.getRepo` from its PDS).
    Did {
        #[command(flatten)]
        args: BackfillArgs,
        /// The repository's DID.
        did: String,
    },
    /// Every repository a PDS hosts (`com.atproto.sync.listRepos`; 10 per page, 2 at a time).
    Pds {
        #[command(flatten)]
        args: BackfillArgs,
        /// The PDS's `http://` or `https://` base URL.
        url: String,
    },
}

/// What every backfill needs.
#[derive(Debug, Clone, Args)]
pub struct BackfillArgs {
    #[command(flatten)]
    pub data: DataArgs,

    #[command(flatten)]
    pub network: NetworkArgs,
}

/// `svc dead-letters`.
#[derive(Debug, Clone, Args)]
pub struct DeadLetterArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// The read model whose dead letters to list (of its active version).
    #[arg(long, default_value = "eprints")]
    pub model: String,

    /// List at most this many, oldest first.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
}

/// `svc log …`.
#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print events as JSON lines, in append order.
    Tail {
        #[command(flatten)]
        data: DataArgs,

        /// The first position (offset) to print.
        #[arg(long, default_value_t = 0)]
        from: u64,

        /// Print at most this many events.
        #[arg(long)]
        limit: Option<usize>,
    },
}

/// Invalid combinations of settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The service DID is not a DID.
    #[error("--service-did {0:?} is not a valid DID")]
    ServiceDid(String),
    /// A DID argument is not a DID.
    #[error("{0:?} is not a valid DID")]
    Did(String),
    /// A size must be positive.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A duration in seconds out of range.
    #[error("{0} must be a number of seconds above 0 and at most 86400")]
    Seconds(&'static str),
    /// A source URL is not one.
    #[error("{flag} {url:?} must be a {schemes} URL")]
    SourceUrl {
        /// The flag.
        flag: &'static str,
        /// The value given.
        url: String,
        /// What it must start with.
        schemes: &'static str,
    },
    /// `--model` names no read model.
    #[error("--model {0:?} is not a read model (known: {known})", known = projections::catalog::MODELS.join(", "))]
    UnknownModel(String),
    /// `--model` names a read model without dead letters.
    #[error("--model {0:?} keeps no dead letters (models that do: {known})", known = projections::catalog::DEAD_LETTER_MODELS.join(", "))]
    NoDeadLetters(String),
}

impl Cli {
    /// Cross-field checks that clap cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.progress_interval.is_finite() && self.progress_interval > 0.0 && self.progress_interval <= 86_400.0) {
            return Err(ConfigError::Seconds("--progress-interval"));
        }
        match &self.command {
            Command::Up(up) | Command::Serve(up) => {
                up.source.validate()?;
                if !lexicons::formats::is_did(&up.service_did) {
                    return Err(ConfigError::ServiceDid(up.service_did.clone()));
                }
                if let Some(bad) = up.approved_services.iter().chain(&up.auth.admins()).find(|d| !lexicons::formats::is_did(d)) {
                    return Err(ConfigError::Did(bad.clone()));
                }
                if up.batch_size == 0 {
                    return Err(ConfigError::Zero("--batch-size"));
                }
                up.http.validate()?;
            }
            Command::Seed(seed) if seed.batch == 0 => return Err(ConfigError::Zero("--batch")),
            Command::Ingest(ingest) => {
                ingest.source.validate()?;
                if ingest.batch == 0 {
                    return Err(ConfigError::Zero("--batch"));
                }
            }
            Command::Project(project) if project.batch_size == 0 => return Err(ConfigError::Zero("--batch-size")),
            Command::Backfill { command: BackfillCommand::Did { args, did } } => {
                args.network.validate()?;
                if !lexicons::formats::is_did(did) {
                    return Err(ConfigError::Did(did.clone()));
                }
            }
            Command::Backfill { command: BackfillCommand::Pds { args, url } } => {
                args.network.validate()?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::SourceUrl { flag: "svc backfill pds", url: url.clone(), schemes: "http:// or https://" });
                }
            }
            Command::DeadLetters(d) if !projections::catalog::MODELS.contains(&d.model.as_str()) => {
                return Err(ConfigError::UnknownModel(d.model.clone()));
            }
            Command::DeadLetters(d) if !projections::catalog::DEAD_LETTER_MODELS.contains(&d.model.as_str()) => {
                return Err(ConfigError::NoDeadLetters(d.model.clone()));
            }
            Command::Replay(replay) => {
                if let Some(unknown) = replay.models.iter().find(|m| !projections::catalog::MODELS.contains(&m.as_str())) {
                    return Err(ConfigError::UnknownModel(unknown.clone()));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl SourceArgs {
    fn validate(&self) -> Result<(), ConfigError> {
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
    fn validate(&self) -> Result<(), ConfigError> {
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
