//! `sandboxctl tasks scrub`: removing a task version's owner-only content for good.

use crate::connection::{Target, operator_name, service_state};
use api::admin::scrub;
use clap::Subcommand;
use uuid::Uuid;

/// Task commands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Scrub a task version: its scripts, work command and ordinary env are removed
    /// from the read models and from the event log (the hash chain still verifies);
    /// it is never run, shared or enabled again (`content_scrubbed_irreversible`).
    /// Prints what was removed as JSON.
    Scrub {
        /// The task version.
        #[arg(long)]
        version: Uuid,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
}

/// Runs a task command.
pub async fn run(target: &Target, command: TaskCommand) -> anyhow::Result<()> {
    let TaskCommand::Scrub { version, reason } = command;
    let started = service_state(target).await?;
    let state = started.state.clone();
    let result = scrub::scrub_version(&state, &operator_name(), version, &reason).await;
    state.shutdown.cancel();
    println!("{}", serde_json::to_string_pretty(&result?)?);
    Ok(())
}
