//! `svc`: one binary, one subcommand per role. This file only parses the configuration,
//! sets up logging and hands over to the command; the work lives in the crates.

mod commands;
mod config;
mod memory;
mod progress;
mod restart;
mod telemetry;

use clap::Parser;

/// The indexing hot paths allocate heavily: jemalloc is markedly faster there than glibc's,
/// and, unlike mimalloc, hands back what any thread freed (`memory`).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use crate::config::{AuthCommand, Cli, Command, LogCommand, SnapshotCommand};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.validate()?;
    telemetry::init(cli.log_format);
    progress::set_log_interval(std::time::Duration::from_secs_f64(cli.progress_interval));
    match cli.command {
        Command::Up(args) => serve_until_stopped(commands::up::up(args)),
        Command::Project(args) => runtime()?.block_on(commands::up::project(args)),
        Command::Serve(args) => serve_until_stopped(commands::up::serve(args)),
        Command::Ingest(args) => runtime()?.block_on(commands::up::ingest(args)),
        Command::Seed(args) => commands::seed(args),
        Command::Replay(args) => commands::replay(args),
        Command::DeadLetters(args) => commands::dead_letters(args),
        Command::Compact(args) => commands::compact(args),
        Command::Backfill { command } => runtime()?.block_on(commands::up::backfill(command)),
        Command::Log { command: LogCommand::Tail(args) } => commands::log::tail(args),
        Command::Log { command: LogCommand::Export(args) } => commands::export::export(args),
        Command::Snapshot { command: SnapshotCommand::Create { data, to } } => commands::snapshot::create(data, &to),
        Command::Snapshot { command: SnapshotCommand::Restore { data, from } } => commands::snapshot::restore(data, &from),
        Command::Admin(args) => runtime()?.block_on(commands::admin::run(args)),
        Command::Auth { command: AuthCommand::RotateKey { data, auth_keys } } => {
            let file = auth_keys.unwrap_or_else(|| data.data_dir.join("auth-keys.json"));
            let kid = query_api::identity::keys::KeySet::rotate(&file)?;
            println!("{}", serde_json::json!({"rotated": file.display().to_string(), "kid": kid}));
            Ok(())
        }
    }
}

/// Runs a serving role until it stops; restarts it in place if it asked to
/// ([`restart`]), once the runtime has stopped and dropped every task (and with them the
/// log and stores, which close cleanly).
fn serve_until_stopped(role: impl std::future::Future<Output = anyhow::Result<restart::Stopped>>) -> anyhow::Result<()> {
    restart::announce();
    let runtime = runtime()?;
    let stopped = runtime.block_on(role);
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    match stopped? {
        restart::Stopped::Done => Ok(()),
        restart::Stopped::Restart(listener, caught_up) => Err(restart::exec(listener, caught_up)),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| anyhow::anyhow!("failed to start the tokio runtime: {e}"))
}
