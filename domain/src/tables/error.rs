//! Refusals of custom-table commands and queries, each with a stable code.

use uuid::Uuid;

/// How the API answers an error (spec section 7: 400 for invalid configuration and
/// values, 409 for conflicts with usage counts, 423 while a migration holds a table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableErrorKind {
    /// 400.
    Invalid,
    /// 404 (uniform).
    NotFound,
    /// 409.
    Conflict,
    /// 423.
    Locked,
}

/// A refusal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    /// The column configuration breaks a ColumnCreate or ColumnUpdate rule.
    #[error("{0}")]
    ColumnConfig(String),
    /// Another column of the table has this name.
    #[error("a column named '{0}' already exists in this table")]
    DuplicateName(String),
    /// The name is reserved.
    #[error("'{0}' is a reserved column name")]
    ReservedName(String),
    /// The type is accepted but its columns cannot be created in this release.
    #[error("{0} columns are not available yet")]
    TypeUnsupported(&'static str),
    /// Existing rows would have no value for a new required column.
    #[error("{0} existing record(s) need a value for the required column; give a default_value")]
    DefaultNeeded(i64),
    /// A column made required while live records leave it empty.
    #[error("{0} live record(s) have no value in this column; fill them before making it required")]
    RequiredButEmpty(i64),
    /// A table setting is invalid (name, description).
    #[error("{0}")]
    TableConfig(String),
    /// A cell value does not fit its column.
    #[error("column '{column}': {message}")]
    InvalidValue {
        /// The column's display name.
        column: String,
        /// What is wrong.
        message: String,
    },
    /// A filter, sort, projection or aggregation is invalid.
    #[error("{0}")]
    InvalidQuery(String),
    /// A select option that live records use would be removed.
    #[error("option(s) {options:?} are used by {count} live record(s)")]
    OptionInUse {
        /// The options.
        options: Vec<String>,
        /// Live records using them.
        count: i64,
    },
    /// Saved views filter, sort or project by the column being deleted.
    #[error("the column is used by view(s) {0:?}; change or delete them first")]
    ColumnInView(Vec<String>),
    /// The column is the table's channel scope column.
    #[error("the column is the table's channel scope column; clear channel_scope_column first")]
    ChannelScopeColumn,
    /// A background migration holds the table.
    #[error("migration {0} holds this table; retry when it has finished")]
    MigrationInProgress(Uuid),
    /// The table, column, view or record does not exist (or is deleted).
    #[error("{0} not found")]
    NotFound(&'static str),
}

impl TableError {
    /// The API class of the error.
    pub fn kind(&self) -> TableErrorKind {
        match self {
            Self::OptionInUse { .. } | Self::ColumnInView(_) | Self::ChannelScopeColumn => {
                TableErrorKind::Conflict
            }
            Self::MigrationInProgress(_) => TableErrorKind::Locked,
            Self::NotFound(_) => TableErrorKind::NotFound,
            _ => TableErrorKind::Invalid,
        }
    }

    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ColumnConfig(_) => "column_config_invalid",
            Self::DuplicateName(_) => "column_name_taken",
            Self::ReservedName(_) => "column_name_reserved",
            Self::TypeUnsupported(_) => "column_type_unsupported",
            Self::DefaultNeeded(_) => "column_default_required",
            Self::RequiredButEmpty(_) => "column_required_has_empty_cells",
            Self::TableConfig(_) => "table_config_invalid",
            Self::InvalidValue { .. } => "invalid_record_value",
            Self::InvalidQuery(_) => "invalid_query",
            Self::OptionInUse { .. } => "option_in_use",
            Self::ColumnInView(_) => "column_used_by_view",
            Self::ChannelScopeColumn => "column_is_channel_scope",
            Self::MigrationInProgress(_) => "table_locked",
            Self::NotFound(_) => "not_found",
        }
    }

    /// A column configuration error.
    pub fn config(message: impl Into<String>) -> Self {
        Self::ColumnConfig(message.into())
    }
}
