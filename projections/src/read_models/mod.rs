//! Every read model of the service, one module per projection.

pub mod company_settings;
pub mod directory;
mod rowset;
mod table;
pub mod tables;

pub use rowset::RowSet;
pub use table::Table;

use crate::projection::Projection;
use std::sync::Arc;

/// Every projection, in the order the pump applies them.
pub fn all() -> Vec<Arc<dyn Projection>> {
    vec![
        Arc::new(directory::DirectoryProjection),
        Arc::new(company_settings::CompanySettingsProjection),
        Arc::new(tables::CustomTablesProjection),
    ]
}
