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
    /// Run every role in one process on the embedded log and store.
    Up(UpArgs),
    /// Turn a file of papers (arXiv JSON lines, plain or gzip) into events in the log.
    Seed(SeedArgs),
    /// Rebuild every read model from position 0 into a new version, then swap it in.
    Replay(DataArgs),
    /// Read the event log.
    Log {
        /// What to do with the log.
        #[command(subcommand)]
        command: LogCommand,
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

/// `svc up`.
#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub data: DataArgs,

    /// The address the API listens on.
    #[arg(long, env = "SVC_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// The service's DID, served in `/.well-known/did.json` (the `aud` of service auth).
    #[arg(long, env = "SVC_SERVICE_DID", default_value = "did:web:localhost")]
    pub service_did: String,

    /// The public base URL clients reach the API at; defaults to `http://<listen>`.
    #[arg(long, env = "SVC_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Events per projection batch.
    #[arg(long, env = "SVC_BATCH_SIZE", default_value_t = 2000)]
    pub batch_size: usize,
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
    /// A size must be positive.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
}

impl Cli {
    /// Cross-field checks that clap cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match &self.command {
            Command::Up(up) => {
                if !lexicons::formats::is_did(&up.service_did) {
                    return Err(ConfigError::ServiceDid(up.service_did.clone()));
                }
                if up.batch_size == 0 {
                    return Err(ConfigError::Zero("--batch-size"));
                }
            }
            Command::Seed(seed) if seed.batch == 0 => return Err(ConfigError::Zero("--batch")),
            _ => {}
        }
        Ok(())
    }
}
