//! Every read model of the service, one module per projection.

pub mod agent_proposals;
pub mod company_settings;
pub mod context_uploads;
pub mod directory;
pub mod environments;
pub mod notifications;
pub mod owned_objects;
pub mod page;
pub mod pricing;
pub mod public_tokens;
pub mod review;
mod rowset;
pub mod runs;
pub mod secrets;
pub mod sharing;
pub mod switches;
mod table;
pub mod table_commands;
pub mod table_tags;
pub mod tables;
pub mod tasks;
pub mod trigger_runs;

pub use rowset::RowSet;
pub use table::Table;

use crate::projection::Projection;
use std::sync::Arc;

/// Every projection, in the order the pump applies them.
pub fn all() -> Vec<Arc<dyn Projection>> {
    vec![
        Arc::new(directory::DirectoryProjection),
        Arc::new(company_settings::CompanySettingsProjection),
        Arc::new(pricing::PricingProjection),
        Arc::new(owned_objects::OwnedObjectsProjection),
        Arc::new(context_uploads::ContextUploadsProjection),
        Arc::new(environments::EnvironmentsProjection),
        Arc::new(notifications::NotificationsProjection),
        Arc::new(tables::CustomTablesProjection),
        Arc::new(public_tokens::PublicTokensProjection),
        Arc::new(table_commands::TableCommandsProjection),
        Arc::new(table_tags::TableTagsProjection),
        Arc::new(tasks::TasksProjection),
        Arc::new(sharing::SharingProjection),
        Arc::new(runs::RunsProjection),
        Arc::new(agent_proposals::AgentProposalsProjection),
        Arc::new(secrets::SecretsProjection),
        Arc::new(trigger_runs::TriggerRunsProjection),
        Arc::new(review::ReviewProjection),
        Arc::new(switches::SwitchesProjection),
    ]
}

pub(crate) use domain::wire::wire;
