//! `sandboxctl switch off|on|status`: the operator's kill switches, for the whole
//! deployment or one company (`--company`, a reference of the directory file), and
//! `switch fence-builds|unfence-builds`: the build admission fence. Each change is
//! an event naming the operator and the reason.

use crate::connection::{Target, command_bus, operator_name};
use api::admin::directory::company_id;
use api::admin::operator_metadata;
use clap::Subcommand;
use domain::build_fence::{BuildFence, FENCE, FenceCommand};
use domain::switch::{SandboxSwitch, SwitchChange, SwitchCommand, switch_id};
use projections::read_models::switches;
use sqlx::PgPool;

/// Switch commands.
#[derive(Debug, Subcommand)]
pub enum SwitchAction {
    /// Turn the sandbox off: non-GET sandbox changes answer 503 `sandbox_disabled`.
    Off {
        /// Only this company (its directory reference); default: everyone.
        #[arg(long)]
        company: Option<String>,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Turn it on again.
    On {
        /// Only this company (its directory reference); default: the global switch.
        #[arg(long)]
        company: Option<String>,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Fence build admission (stage-image rollout): build submissions and retries
    /// answer 503 `build_admission_fenced` with this wait.
    FenceBuilds {
        /// The wait the refusals advise, in seconds (1..86400).
        #[arg(long)]
        retry_after: i64,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Lift the build admission fence.
    UnfenceBuilds {
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
    },
    /// Print every switch ever set and the build fence, as JSON.
    Status,
}

/// Runs a switch command.
pub async fn run(target: &Target, command: SwitchAction) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    let (company, enabled, reason) = match command {
        SwitchAction::Status => {
            let status = serde_json::json!({
                "switches": switches::all(&pool).await?,
                "build_fence_retry_after_seconds": switches::build_fence(&pool).await?,
            });
            println!("{}", serde_json::to_string_pretty(&status)?);
            return Ok(());
        }
        SwitchAction::FenceBuilds {
            retry_after,
            reason,
        } => {
            let command = FenceCommand::Raise {
                retry_after_seconds: retry_after,
                reason,
            };
            return fence(&pool, command, "builds fenced").await;
        }
        SwitchAction::UnfenceBuilds { reason } => {
            return fence(&pool, FenceCommand::Lift { reason }, "builds open").await;
        }
        SwitchAction::Off { company, reason } => (company, false, reason),
        SwitchAction::On { company, reason } => (company, true, reason),
    };
    let company_id = company.as_deref().map(company_id);
    let (bus, cancel) = command_bus(&pool).await?;
    let change = SwitchChange {
        company_id,
        enabled,
        reason,
    };
    let result = bus
        .execute::<SandboxSwitch>(
            &switch_id(company_id),
            SwitchCommand::Set(change),
            &operator_metadata(&operator_name()),
        )
        .await;
    cancel.cancel();
    result?;
    let state = if enabled { "on" } else { "off" };
    println!("{} {state}", switch_id(company_id));
    Ok(())
}

/// Raises or lifts the build admission fence.
async fn fence(pool: &PgPool, command: FenceCommand, done: &str) -> anyhow::Result<()> {
    let (bus, cancel) = command_bus(pool).await?;
    let result = bus
        .execute::<BuildFence>(FENCE, command, &operator_metadata(&operator_name()))
        .await;
    cancel.cancel();
    result?;
    println!("{done}");
    Ok(())
}
