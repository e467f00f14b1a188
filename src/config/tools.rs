//! What the one-shot tools take: `svc admin`, `auth`, `seed`, `ingest`, `project`,
//! `replay`, `backfill`, `dead-letters` and `log`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::service::{DataArgs, GovernanceArgs, NetworkArgs, SourceArgs};

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
    /// accounts, deterministically (docs/seeding.md). Implies `--taxonomy`.
    #[arg(long)]
    pub social: bool,

    /// Also write the arXiv category taxonomy to the governance repository, as knowledge
    /// graph nodes and edges the papers' fields resolve to (docs/seeding.md).
    #[arg(long)]
    pub taxonomy: bool,

    /// Also write each paper as imported from arXiv (an `external.paper` event), so that
    /// `import.search`, `findClaimable` and `claiming.autocomplete` have papers to find
    /// (docs/claiming.md).
    #[arg(long)]
    pub imports: bool,

    #[command(flatten)]
    pub governance: GovernanceArgs,
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

    #[command(flatten)]
    pub governance: GovernanceArgs,
}

/// `svc project`.
#[derive(Debug, Clone, Args)]
pub struct ProjectArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// The work group: projectors of one group split the log's partitions between them.
    #[arg(long, env = "SVC_GROUP", default_value = "svc.project")]
    pub group: String,

    /// Events per projection batch once caught up; under a stream each batch takes what came in, up to 32,768.
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
    /// Import arXiv's papers of a period or category through its OAI-PMH interface
    /// (`ListRecords`): one `external.paper` event per paper, as claiming imports them.
    Arxiv(ArxivHarvestArgs),
}

/// `svc backfill arxiv`.
#[derive(Debug, Clone, Args)]
pub struct ArxivHarvestArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// arXiv's OAI-PMH base URL.
    #[arg(long, env = "SVC_ARXIV_OAI_URL", default_value = sources::arxiv_oai::BASE_URL)]
    pub arxiv_oai_url: String,
    /// A contact e-mail address given to arXiv in the user agent.
    #[arg(long, env = "SVC_SOURCES_CONTACT")]
    pub sources_contact: Option<String>,
    /// Papers announced or changed on or after this day (`YYYY-MM-DD`).
    #[arg(long)]
    pub from: Option<String>,
    /// Papers announced or changed on or before this day (`YYYY-MM-DD`).
    #[arg(long)]
    pub until: Option<String>,
    /// An OAI set: an archive (`cs`, `math`) or a physics archive (`physics:hep-th`).
    #[arg(long)]
    pub set: Option<String>,
    /// Go on with a harvest that stopped, from the resumption token it printed.
    #[arg(long)]
    pub resume: Option<String>,
    /// Stop after this many pages (arXiv's pages hold up to 1,000 papers); no bound by
    /// default.
    #[arg(long)]
    pub max_pages: Option<u64>,
}

impl ArxivHarvestArgs {
    /// Checks the URL and the days.
    pub(super) fn validate(&self) -> Result<(), super::ConfigError> {
        if !(self.arxiv_oai_url.starts_with("http://") || self.arxiv_oai_url.starts_with("https://")) {
            return Err(super::ConfigError::SourceUrl {
                flag: "--arxiv-oai-url",
                url: self.arxiv_oai_url.clone(),
                schemes: "http:// or https://",
            });
        }
        for (flag, day) in [("--from", &self.from), ("--until", &self.until)] {
            if let Some(day) = day {
                if chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_err() {
                    return Err(super::ConfigError::Day { flag, value: day.clone() });
                }
            }
        }
        Ok(())
    }
}

/// What every backfill needs.
#[derive(Debug, Clone, Args)]
pub struct BackfillArgs {
    #[command(flatten)]
    pub data: DataArgs,

    #[command(flatten)]
    pub network: NetworkArgs,
}

/// `svc compact`.
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub data: DataArgs,
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

/// `svc snapshot …`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Copy this node's search index (its active version, with the node store's rows for
    /// it and where it stands in the log) into a folder, svc stopped on this data directory.
    Create {
        #[command(flatten)]
        data: DataArgs,

        /// The folder to write (created; it must not exist): a shared directory, or one
        /// copied to the new node.
        #[arg(long)]
        to: PathBuf,
    },
    /// Make a snapshot this node's search index, before its first start: `svc serve` then
    /// follows the log from where the snapshot stands instead of from position 0.
    Restore {
        #[command(flatten)]
        data: DataArgs,

        /// The folder `svc snapshot create` wrote.
        #[arg(long)]
        from: PathBuf,
    },
}

/// `svc log …`.
#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Print events as JSON lines, in append order: from the data directory's log (svc
    /// stopped) or the Kafka log, or with `--url` from a running node's stream.
    Tail(TailArgs),
    /// Write a stretch of the log to a file for analytics: JSON lines or Parquet (a row per
    /// event, typed columns for the common fields).
    Export(ExportArgs),
}

/// `svc log export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// Where to start: a cursor as `svc log tail --from` takes it.
    #[arg(long, default_value = "0")]
    pub from: String,

    /// Where to stop (exclusive): a cursor or an RFC 3339 time; the end of the log when the
    /// export starts by default.
    #[arg(long)]
    pub to: Option<String>,

    /// `jsonl` (the lines of `svc log tail`) or `parquet`.
    #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "parquet"])]
    pub format: String,

    /// Every event, commands too (secrets redacted, as an admin's stream shows them);
    /// without it, the public events only.
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub filter: EventFilterArgs,

    /// The file to write (replaced if it exists).
    pub file: std::path::PathBuf,
}

/// Which events `svc log tail --url` and `svc log export` take (the log stream's
/// `wantedKinds`, `wantedCollections` and `wantedDids`).
#[derive(Debug, Clone, Args)]
pub struct EventFilterArgs {
    /// Only these event kinds (`repo.record.create`, `repo.*`…), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,

    /// Only records of these collections (NSIDs, or prefixes ending in `.*`), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub collections: Vec<String>,

    /// Only events of these DIDs, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub dids: Vec<String>,
}

impl EventFilterArgs {
    /// Whether any filter is set.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty() && self.collections.is_empty() && self.dids.is_empty()
    }

    /// The filter for `audience`.
    pub fn filter(&self, audience: query_api::tap::Audience) -> Result<query_api::tap::Filter, query_api::error::ApiError> {
        query_api::tap::Filter::new(&self.kinds, &self.collections, &self.dids, audience)
    }
}

/// `svc log tail`.
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// Where to start: an offset for every partition, an offset per partition
    /// comma-separated (a stream message's `cursor`), or an RFC 3339 time. By default the
    /// start of the log, or with `--url` live from now.
    #[arg(long)]
    pub from: Option<String>,

    /// Print at most this many events.
    #[arg(long)]
    pub limit: Option<usize>,

    /// Follow a running node's log stream (`pub.svc.log.subscribe`) at this base URL,
    /// e.g. `https://svc.example`, instead of opening a log: public events, or every event
    /// (secrets redacted) with an admin's `--token`. Needs `--follow`.
    #[arg(long, requires = "follow")]
    pub url: Option<String>,

    /// Keep following new events once the end is reached, reconnecting from the last
    /// cursor when the connection drops (with `--url`).
    #[arg(long, requires = "url")]
    pub follow: bool,

    /// An access token (an admin's: the stream then includes commands).
    #[arg(long, env = "SVC_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    #[command(flatten)]
    pub filter: EventFilterArgs,
}
