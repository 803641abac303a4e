//! `sandboxctl directory apply FILE`.

use crate::connection::{Target, command_bus, operator_name};
use anyhow::Context;
use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use clap::Subcommand;
use std::path::PathBuf;

/// Directory commands.
#[derive(Debug, Subcommand)]
pub enum DirectoryCommand {
    /// Apply a directory file idempotently and print ids and credentials as JSON.
    Apply {
        /// The JSON file.
        file: PathBuf,
        /// Lifetime of the printed user tokens.
        #[arg(long, default_value = "24h")]
        token_ttl: humantime::Duration,
    },
}

/// Runs a directory command.
pub async fn run(target: &Target, command: DirectoryCommand) -> anyhow::Result<()> {
    let DirectoryCommand::Apply { file, token_ttl } = command;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let directory: DirectoryFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a valid directory file", file.display()))?;
    let pool = target.pool().await?;
    projections::db::migrate(&pool).await?;
    let (bus, cancel) = command_bus(&pool).await?;
    let jwt = target.jwt()?;
    let applier = Applier {
        bus: &bus,
        jwt: &jwt,
        token_ttl: chrono::Duration::from_std(token_ttl.into())?,
        metadata: operator_metadata(&operator_name()),
    };
    let applied = applier.apply(&directory).await?;
    cancel.cancel();
    println!("{}", serde_json::to_string_pretty(&applied)?);
    Ok(())
}
