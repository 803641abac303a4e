//! `sandboxctl runner approve|withdraw|status`: the operator's decisions on runner
//! releases. A task bundle runs only on an environment version whose release is
//! approved; the release this service builds with is approved until withdrawn.

use crate::connection::{Target, command_bus, operator_name};
use api::admin::operator_metadata;
use clap::Subcommand;
use domain::runner_release::{BUILT_IN, ReleaseCommand, RunnerRelease};

/// Runner release commands.
#[derive(Debug, Subcommand)]
pub enum RunnerCommand {
    /// Approve a release: bundles run on environment versions built with it.
    Approve {
        /// The release (for example 5.21.0).
        #[arg(long)]
        release: String,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Withdraw a release: bundle versions on it answer 409
    /// `task_bundle_runner_unsupported` until their owners rebuild.
    Withdraw {
        /// The release.
        #[arg(long)]
        release: String,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Print the built-in release and every decision, as JSON.
    Status,
}

/// Runs a runner release command.
pub async fn run(target: &Target, command: RunnerCommand) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    let (command, done) = match command {
        RunnerCommand::Status => {
            let decisions: Vec<(String, bool, String, String, chrono::DateTime<chrono::Utc>)> =
                sqlx::query_as(
                    "SELECT release, approved, reason, changed_by, changed_at FROM runner_releases
                      ORDER BY release",
                )
                .fetch_all(&pool)
                .await?;
            let decisions: Vec<_> = decisions
                .into_iter()
                .map(|(release, approved, reason, by, at)| {
                    serde_json::json!({"release": release, "approved": approved, "reason": reason,
                                       "changed_by": by, "changed_at": at})
                })
                .collect();
            let status = serde_json::json!({"built_in": BUILT_IN, "decisions": decisions});
            println!("{}", serde_json::to_string_pretty(&status)?);
            return Ok(());
        }
        RunnerCommand::Approve { release, reason } => {
            let done = format!("{release} approved");
            (ReleaseCommand::Approve { release, reason }, done)
        }
        RunnerCommand::Withdraw { release, reason } => {
            let done = format!("{release} withdrawn");
            (ReleaseCommand::Withdraw { release, reason }, done)
        }
    };
    let id = match &command {
        ReleaseCommand::Approve { release, .. } | ReleaseCommand::Withdraw { release, .. } => {
            release.clone()
        }
    };
    let (bus, cancel) = command_bus(&pool).await?;
    let result = bus
        .execute::<RunnerRelease>(&id, command, &operator_metadata(&operator_name()))
        .await;
    cancel.cancel();
    result?;
    println!("{done}");
    Ok(())
}
