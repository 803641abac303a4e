//! `sandboxctl`: the operator and auditor CLI.
//!
//! It works on the same database as the server: `DATABASE_URL`, or the URL the
//! server wrote to `$SANDBOX_DATA_DIR/database.url` when it started its embedded
//! cluster.

mod bench;
mod connection;
mod db;
mod directory;
mod environments;
mod events;
mod pricing;
mod progress;
mod rebuild;
mod runner;
mod switch;
mod tasks;
mod token;
mod turn;

use clap::{Parser, Subcommand};
use connection::Target;

/// Operator and auditor CLI of the sandbox service.
#[derive(Parser)]
#[command(name = "sandboxctl", version, about)]
struct Cli {
    #[command(flatten)]
    target: Target,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Benchmarks that print the figures the issues ask for.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Database maintenance.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// The tenant directory.
    #[command(subcommand)]
    Directory(directory::DirectoryCommand),
    /// Curated environments.
    #[command(subcommand)]
    Environments(environments::EnvironmentCommand),
    /// The event log: export, hash chain verification, chain checkpoints.
    #[command(subcommand)]
    Events(events::EventsCommand),
    /// The pricing envelope: region prices and company budgets.
    #[command(subcommand)]
    Pricing(pricing::PricingAction),
    /// Read models: status, rebuild, point-in-time builds, digests.
    #[command(subcommand)]
    Projections(rebuild::ProjectionsCommand),
    /// Runner releases: which ones task bundles may run on.
    #[command(subcommand)]
    Runner(runner::RunnerCommand),
    /// The operator's kill switches (deployment-wide or per company).
    #[command(subcommand)]
    Switch(switch::SwitchAction),
    /// Task versions: scrubbing their content.
    #[command(subcommand)]
    Tasks(tasks::TaskCommand),
    /// User and operator tokens.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Agent turn contexts (`X-Sandbox-Turn`).
    #[command(subcommand)]
    Turn(turn::TurnCommand),
}

/// Logs go to standard error: standard output carries the command's data (an export
/// is piped), which a log line must never interleave.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[tokio::main]
async fn main() {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(command) => bench::run(&cli.target, command).await,
        Command::Db(command) => db::run(&cli.target, command).await,
        Command::Directory(command) => directory::run(&cli.target, command).await,
        Command::Environments(command) => environments::run(&cli.target, command).await,
        Command::Events(command) => events::run(&cli.target, command).await,
        Command::Pricing(command) => pricing::run(&cli.target, command).await,
        Command::Projections(command) => rebuild::run(&cli.target, command).await,
        Command::Runner(command) => runner::run(&cli.target, command).await,
        Command::Switch(command) => switch::run(&cli.target, command).await,
        Command::Tasks(command) => tasks::run(&cli.target, command).await,
        Command::Token(command) => token::run(&cli.target, command).await,
        Command::Turn(command) => turn::run(&cli.target, command).await,
    };
    if let Err(error) = result {
        eprintln!("sandboxctl: {error:#}");
        std::process::exit(1);
    }
}
