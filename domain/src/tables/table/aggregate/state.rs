//! Helpers of the Table aggregate: grants by subject, the channel scope column of
//! a department table, and the state changes several events share.

use super::CustomTable;
use crate::tables::TableError;
use crate::tables::column::ColumnDef;
use crate::tables::grants::{Grant, Subject};
use crate::tables::scope::ScopeKind;
use crate::tables::table::MigrationInfo;

impl CustomTable {
    /// The grant of a subject.
    pub fn grant(&self, subject: &Subject) -> Option<&Grant> {
        self.grants
            .iter()
            .find(|(s, _)| s == subject)
            .map(|(_, g)| g)
    }

    /// The channel scope column a change asks for: only department tables have one.
    pub(super) fn channel_scope(
        &self,
        column: Option<String>,
    ) -> Result<Option<String>, TableError> {
        if self.scope.map(|s| s.kind) != Some(ScopeKind::Department) {
            return Err(TableError::TableConfig(
                "only department tables have a channel scope column".into(),
            ));
        }
        column.map(|c| self.scope_column(&c)).transpose()
    }

    /// The internal key of a column fit to scope a channel policy: a stored scalar
    /// column named by internal key or display name.
    fn scope_column(&self, reference: &str) -> Result<String, TableError> {
        self.columns
            .iter()
            .find(|c| c.key == reference)
            .or_else(|| self.columns.iter().find(|c| c.name == reference))
            .filter(|c| c.column_type.is_stored() && c.column_type.is_scalar())
            .map(|c| c.key.clone())
            .ok_or_else(|| {
                TableError::TableConfig(format!(
                    "channel_scope_column: '{reference}' is not a stored scalar column of this table"
                ))
            })
    }

    /// Puts a changed column in its place.
    pub(super) fn replace(&mut self, column: ColumnDef) {
        if let Some(slot) = self.columns.iter_mut().find(|c| c.key == column.key) {
            *slot = column;
        }
    }

    /// Holds the table while a background migration runs.
    pub(super) fn hold(&mut self, migration: Option<&MigrationInfo>) {
        if let Some(m) = migration.filter(|m| m.background) {
            self.migration = Some(m.migration_id);
        }
    }
}
