//! The one typed configuration of `svc`, from flags and `SVC_*` environment variables: the
//! command line and its rules here, what the long-running roles take in [`service`], what
//! the one-shot tools take in [`tools`].

#[cfg(test)]
mod reference;
mod service;
mod tools;

pub use service::{DataArgs, SourceArgs, UpArgs};
pub use tools::{
    AdminArgs, AdminCommand, ArxivHarvestArgs, AuthCommand, BackfillCommand, CompactArgs, DeadLetterArgs, ExportArgs, IngestArgs,
    LogCommand, ProjectArgs, ReplayArgs, SeedArgs, SnapshotCommand, TailArgs,
};

use clap::{Parser, Subcommand, ValueEnum};

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
    /// Give the space the embedded store's files hold free (pages of deleted rows and
    /// replaced pages) back to the file system, and rewrite each read model's file and the
    /// embedded log's with their rows in key order (full B-tree pages); with svc stopped,
    /// and room for a copy of the largest file. `svc replay` does it at its end; a first
    /// catch-up leaves that space in the files.
    Compact(CompactArgs),
    /// Bootstrap a new query node from another node's search index instead of a replay:
    /// `svc snapshot create` on a stopped node, `svc snapshot restore` on the new one.
    Snapshot {
        /// What to do.
        #[command(subcommand)]
        command: SnapshotCommand,
    },
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

/// Invalid combinations of settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The service DID is not a DID.
    #[error("--service-did {0:?} is not a valid DID")]
    ServiceDid(String),
    /// A DID argument is not a DID.
    #[error("{0:?} is not a valid DID")]
    Did(String),
    /// The governance repository's DID is not a DID.
    #[error("--governance-did {0:?} is not a valid DID")]
    GovernanceDid(String),
    /// A governance host without the password to sign in there.
    #[error("--governance-pds needs the governance account's password in SVC_GOVERNANCE_PASSWORD")]
    GovernancePassword,
    /// An ORCID client id without its secret.
    #[error("--orcid-client-id needs the client's secret in SVC_ORCID_CLIENT_SECRET")]
    OrcidSecret,
    /// A size must be positive.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A duration in seconds out of range.
    #[error("{0} must be a number of seconds above 0 and at most 86400")]
    Seconds(&'static str),
    /// A day is not one.
    #[error("{flag} {value:?} must be a day, YYYY-MM-DD")]
    Day {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
    },
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
                up.governance.validate()?;
                up.publish.validate()?;
                up.external.validate()?;
                if let Some(bad) = up
                    .approved_services
                    .iter()
                    .chain(&up.auth.admins())
                    .chain(&up.auth.governance_admins)
                    .find(|d| !lexicons::formats::is_did(d))
                {
                    return Err(ConfigError::Did(bad.clone()));
                }
                if up.batch_size == 0 {
                    return Err(ConfigError::Zero("--batch-size"));
                }
                up.http.validate()?;
                let stall = up.tap.log_subscriber_stall_seconds;
                if !(stall.is_finite() && stall > 0.0 && stall <= 86_400.0) {
                    return Err(ConfigError::Seconds("--log-subscriber-stall-seconds"));
                }
            }
            Command::Seed(seed) if seed.batch == 0 => return Err(ConfigError::Zero("--batch")),
            Command::Seed(seed) => seed.governance.validate()?,
            Command::Ingest(ingest) => {
                ingest.source.validate()?;
                ingest.governance.validate()?;
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
            Command::Backfill { command: BackfillCommand::Arxiv(args) } => args.validate()?,
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
