//! Refusals of custom-table commands and queries, each with a stable code.

use crate::error::{Code, SpecError};
use uuid::Uuid;

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
    /// Computed columns read the column being deleted or retyped.
    #[error("computed column(s) {0:?} depend on the column; delete them first")]
    ColumnInComputed(Vec<String>),
    /// The column is the table's channel scope column.
    #[error("the column is the table's channel scope column; clear channel_scope_column first")]
    ChannelScopeColumn,
    /// A background migration holds the table.
    #[error("migration {0} holds this table; retry when it has finished")]
    MigrationInProgress(Uuid),
    /// A trigger set breaks a trigger rule.
    #[error("{0}")]
    TriggerConfig(String),
    /// An approval rule set breaks a rule.
    #[error("{0}")]
    RuleConfig(String),
    /// A trigger's cron expression is not five POSIX fields.
    #[error("{0}")]
    InvalidCron(String),
    /// A trigger's schedule type changed under its id.
    #[error("{0}")]
    ScheduleKindChange(String),
    /// A trigger action executes a Command, and Commands are not built yet.
    #[error("execute_command actions need Commands, which this service does not offer yet")]
    CommandsUnavailable,
    /// A column a trigger reads would be deleted or retyped.
    #[error("trigger(s) {0:?} read the column; change them first")]
    ColumnInTrigger(Vec<String>),
    /// The table, column, view or record does not exist (or is deleted).
    #[error("{0} not found")]
    NotFound(&'static str),
}

impl SpecError for TableError {
    /// Spec section 7: 400 for invalid configuration and values, 409 for conflicts
    /// with usage counts, 423 while a migration holds a table, the uniform 404.
    fn code(&self) -> Code {
        match self {
            Self::ColumnConfig(_) => Code::ColumnConfigInvalid,
            Self::DuplicateName(_) => Code::ColumnNameTaken,
            Self::ReservedName(_) => Code::ColumnNameReserved,
            Self::DefaultNeeded(_) => Code::ColumnDefaultRequired,
            Self::RequiredButEmpty(_) => Code::ColumnRequiredHasEmptyCells,
            Self::TableConfig(_) => Code::TableConfigInvalid,
            Self::InvalidValue { .. } => Code::InvalidRecordValue,
            Self::InvalidQuery(_) => Code::InvalidQuery,
            Self::OptionInUse { .. } => Code::OptionInUse,
            Self::ColumnInView(_) => Code::ColumnUsedByView,
            Self::ColumnInComputed(_) => Code::ColumnUsedByComputedColumn,
            Self::ChannelScopeColumn => Code::ColumnIsChannelScope,
            Self::MigrationInProgress(_) => Code::TableLocked,
            Self::TriggerConfig(_) => Code::TriggerConfigInvalid,
            Self::RuleConfig(_) => Code::RuleConfigInvalid,
            Self::InvalidCron(_) => Code::InvalidCronExpression,
            Self::ScheduleKindChange(_) => Code::ScheduleKindChangeRequiresNewTriggerId,
            Self::CommandsUnavailable => Code::CommandsNotAvailable,
            Self::ColumnInTrigger(_) => Code::ColumnUsedByTrigger,
            Self::NotFound(_) => Code::NotFound,
        }
    }

    /// 409s name the usage count, 423 the migration holding the table.
    fn details(&self) -> Vec<(&'static str, serde_json::Value)> {
        match self {
            Self::OptionInUse { options, count } => {
                vec![
                    ("usage_count", (*count).into()),
                    ("options", options.clone().into()),
                ]
            }
            Self::MigrationInProgress(id) => vec![("migration_id", id.to_string().into())],
            Self::DefaultNeeded(count) => vec![("records", (*count).into())],
            Self::ColumnInComputed(columns) => vec![
                ("usage_count", columns.len().into()),
                ("columns", columns.clone().into()),
            ],
            _ => Vec::new(),
        }
    }
}

impl TableError {
    /// A column configuration error.
    pub fn config(message: impl Into<String>) -> Self {
        Self::ColumnConfig(message.into())
    }
}
