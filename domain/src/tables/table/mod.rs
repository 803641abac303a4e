//! The Table aggregate: one per custom table (id = table id). It holds the schema,
//! the stored views and the background migration that holds the table.

mod aggregate;
mod commands;
mod events;
mod views;

pub use aggregate::CustomTable;
pub use commands::TableCommand;
pub use events::{MigrationInfo, TableEvent};
pub use views::{SortKey, ViewDef, ViewSpec};
pub(crate) use views::{keyed, names_column};
