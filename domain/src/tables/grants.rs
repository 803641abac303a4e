//! Grants on a table (spec section 2, "Effective permissions"): who they are for and
//! what they give. A grant gives `can_read` (`all`, `own`, `filtered` by its row
//! policy, or `none`), `can_insert`, `can_edit` (`all` readable rows, `own` readable
//! rows the caller created, or `none`) and hidden columns; a chatroom grant on a
//! department table also declares the `scope_values` of the table's channel policy.

use super::TableError;
use super::column::ColumnDef;
use super::policy::{self, Mode, Targets};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Scope values one chatroom grant may declare.
pub const MAX_SCOPE_VALUES: usize = 100;

/// Which rows a grant reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// No row.
    None,
    /// Every row.
    All,
    /// Rows the caller created.
    Own,
    /// Rows the grant's row policy admits.
    Filtered,
}

/// Which readable rows a grant edits (and deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditMode {
    /// No row.
    None,
    /// Every readable row.
    All,
    /// Readable rows the caller created (own-only edit).
    Own,
}

/// Who a grant is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Subject {
    /// One user.
    User(Uuid),
    /// One social media client (`PUT .../client-permissions/{client_id}`).
    SocialClient(Uuid),
    /// Members of a department.
    Department(Uuid),
    /// Members of a chatroom (an internal grant).
    Chatroom(Uuid),
    /// Everyone who enters the owning scope and matches no other step.
    Default,
}

impl Subject {
    /// The kind's wire name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::User(_) => "user",
            Self::SocialClient(_) => "social_client",
            Self::Department(_) => "department",
            Self::Chatroom(_) => "chatroom",
            Self::Default => "default",
        }
    }

    /// The subject's id (nil for the default grant).
    pub fn id(&self) -> Uuid {
        match self {
            Self::User(id) | Self::SocialClient(id) | Self::Department(id) | Self::Chatroom(id) => {
                *id
            }
            Self::Default => Uuid::nil(),
        }
    }
}

/// What a grant gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// Rows read.
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// Rows edited and deleted (always within the rows read).
    pub can_edit: EditMode,
    /// The row policy of `can_read: filtered`.
    pub row_filter: Option<Value>,
    /// Internal keys of the columns hidden from the grantee.
    pub hidden_columns: Vec<String>,
    /// Values of the channel scope column this room may reach (chatroom grants).
    pub scope_values: Vec<String>,
}

impl Grant {
    /// The default grant of a table nobody configured: every row read, records
    /// inserted, own rows edited.
    pub fn standard_default() -> Self {
        Self {
            can_read: ReadMode::All,
            can_insert: true,
            can_edit: EditMode::Own,
            row_filter: None,
            hidden_columns: Vec::new(),
            scope_values: Vec::new(),
        }
    }

    /// Checks the grant against the table's columns for `subject` and returns it
    /// with hidden columns named by internal key.
    pub fn checked(
        mut self,
        subject: &Subject,
        columns: &[ColumnDef],
        targets: &Targets,
    ) -> Result<Self, TableError> {
        let invalid = |m: &str| TableError::InvalidQuery(m.to_string());
        match (self.can_read, &self.row_filter) {
            (ReadMode::Filtered, None) => {
                return Err(invalid("`can_read: filtered` needs a `row_filter`"));
            }
            (ReadMode::Filtered, Some(filter)) => {
                policy::compile(filter, columns, targets, Mode::Author)?;
            }
            (_, Some(_)) => {
                return Err(invalid(
                    "`row_filter` is only read with `can_read: filtered`",
                ));
            }
            (_, None) => {}
        }
        let mut hidden = Vec::new();
        for reference in &self.hidden_columns {
            let column = columns
                .iter()
                .find(|c| c.key == *reference)
                .or_else(|| columns.iter().find(|c| c.name == *reference))
                .ok_or_else(|| {
                    TableError::InvalidQuery(format!(
                        "hidden_columns: Column '{reference}' does not exist in table schema"
                    ))
                })?;
            if !hidden.contains(&column.key) {
                hidden.push(column.key.clone());
            }
        }
        self.hidden_columns = hidden;
        if !self.scope_values.is_empty() && !matches!(subject, Subject::Chatroom(_)) {
            return Err(invalid("`scope_values` belong to chatroom grants"));
        }
        if self.scope_values.len() > MAX_SCOPE_VALUES
            || self
                .scope_values
                .iter()
                .any(|v| v.is_empty() || v.chars().count() > 200)
        {
            return Err(invalid(
                "`scope_values` holds at most 100 values of 1..200 characters",
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::column::ColumnType;
    use serde_json::json;

    fn columns() -> Vec<ColumnDef> {
        vec![ColumnDef::new("col_a", "Amount", ColumnType::Integer)]
    }

    #[test]
    fn a_filter_belongs_to_filtered_reads_only() {
        let mut grant = Grant::standard_default();
        grant.row_filter = Some(json!({"column": "col_a", "op": "gt", "value": 1}));
        let subject = Subject::Default;
        assert!(
            grant
                .clone()
                .checked(&subject, &columns(), &Targets::new())
                .is_err()
        );
        grant.can_read = ReadMode::Filtered;
        assert!(
            grant
                .clone()
                .checked(&subject, &columns(), &Targets::new())
                .is_ok()
        );
        grant.row_filter = None;
        assert!(
            grant
                .checked(&subject, &columns(), &Targets::new())
                .is_err()
        );
    }

    #[test]
    fn hidden_columns_are_stored_by_key() {
        let grant = Grant {
            hidden_columns: vec!["Amount".into(), "col_a".into()],
            ..Grant::standard_default()
        };
        let checked = grant
            .checked(&Subject::Default, &columns(), &Targets::new())
            .unwrap();
        assert_eq!(checked.hidden_columns, vec!["col_a".to_string()]);
        let unknown = Grant {
            hidden_columns: vec!["nope".into()],
            ..Grant::standard_default()
        };
        assert!(
            unknown
                .checked(&Subject::Default, &columns(), &Targets::new())
                .is_err()
        );
    }

    #[test]
    fn scope_values_only_on_chatroom_grants() {
        let grant = Grant {
            scope_values: vec!["north".into()],
            ..Grant::standard_default()
        };
        assert!(
            grant
                .clone()
                .checked(&Subject::Default, &columns(), &Targets::new())
                .is_err()
        );
        assert!(
            grant
                .checked(&Subject::Chatroom(Uuid::nil()), &columns(), &Targets::new())
                .is_ok()
        );
    }
}
