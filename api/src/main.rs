//! `sandbox-api`: the server binary.

use api::config::Config;
use clap::{Parser, Subcommand};

/// The sandbox job execution and custom-tables service.
#[derive(Parser)]
#[command(name = "sandbox-api", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (starts a private PostgreSQL when DATABASE_URL is unset).
    Serve(Config),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve(config) => api::server::serve(config).await,
    }
}
