//! Custom-table errors as HTTP answers: 400 for invalid configuration, values and
//! queries, 409 with a usage count, 423 while a migration holds the table, the
//! uniform 404.

use crate::error::{ApiError, from_command, from_spec};
use domain::tables::TableError;
use projections::CommandError;

/// The answer to a custom-table refusal.
pub fn refusal(error: TableError) -> ApiError {
    let api = from_spec(&error);
    match error {
        TableError::OptionInUse { options, count } => {
            api.with("usage_count", count).with("options", options)
        }
        TableError::MigrationInProgress(id) => api.with("migration_id", id.to_string()),
        TableError::DefaultNeeded(count) => api.with("records", count),
        _ => api,
    }
}

/// The answer to a failed custom-table command.
pub fn command(error: CommandError<TableError>) -> ApiError {
    from_command(error, refusal)
}

/// `Result` of custom-table commands.
pub trait CommandResultExt<T> {
    /// Maps the error to its answer.
    fn answer(self) -> Result<T, ApiError>;
}

impl<T> CommandResultExt<T> for Result<T, CommandError<TableError>> {
    fn answer(self) -> Result<T, ApiError> {
        self.map_err(command)
    }
}

impl<T> CommandResultExt<T> for Result<T, TableError> {
    fn answer(self) -> Result<T, ApiError> {
        self.map_err(refusal)
    }
}
