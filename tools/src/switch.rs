//! `sandboxctl switch off|on|status`: the operator's kill switches, for the whole
//! deployment or one company (`--company`, a reference of the directory file).
//! Each change is a `SandboxSwitchSet` event naming the operator and the reason.

use crate::connection::{Target, command_bus, operator_name};
use api::admin::directory::company_id;
use api::admin::operator_metadata;
use clap::Subcommand;
use domain::switch::{SandboxSwitch, SwitchChange, SwitchCommand, switch_id};
use projections::read_models::switches;

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
    /// Print every switch ever set, as JSON.
    Status,
}

/// Runs a switch command.
pub async fn run(target: &Target, command: SwitchAction) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    let (company, enabled, reason) = match command {
        SwitchAction::Status => {
            let rows = switches::all(&pool).await?;
            println!("{}", serde_json::to_string_pretty(&rows)?);
            return Ok(());
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
