//! Stored views: a saved filter, sort and projection. Column references are stored
//! as internal keys, so renaming a column keeps its views working.

use crate::tables::TableError;
use crate::tables::column::ColumnDef;
use crate::tables::query::{self, Field};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// One sort key of a view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortKey {
    /// Internal key or system field (`id`, `created_at`, `updated_at`).
    pub column: String,
    /// `asc` or `desc`.
    pub order: String,
}

/// A view as requested (references by key or display name).
#[derive(Debug, Clone, PartialEq)]
pub struct ViewSpec {
    /// Display name.
    pub name: String,
    /// Row filter (the boolean tree of [`query`]).
    pub filter: Option<Value>,
    /// Sort keys.
    pub sort: Vec<SortKey>,
    /// Projected columns; `None` means all.
    pub columns: Option<Vec<String>>,
}

/// A stored view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    /// Id.
    pub id: Uuid,
    /// Display name.
    pub name: String,
    /// Row filter with internal keys.
    pub filter: Option<Value>,
    /// Sort keys with internal keys.
    pub sort: Vec<SortKey>,
    /// Projected columns (internal keys); `None` means all.
    pub columns: Option<Vec<String>>,
}

fn key_of(field: &Field, reference: &str) -> String {
    match field {
        Field::Column(c) => c.key.clone(),
        _ => reference.to_string(),
    }
}

/// Rewrites every `column` of a filter tree to its internal key.
pub(crate) fn keyed(node: &Value, columns: &[ColumnDef]) -> Value {
    match node {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("column", Value::String(r)) => match query::field(columns, r) {
                            Ok(field) => Value::String(key_of(&field, r)),
                            Err(_) => v.clone(),
                        },
                        _ => keyed(v, columns),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| keyed(i, columns)).collect()),
        other => other.clone(),
    }
}

impl ViewDef {
    /// Whether the view filters, sorts or projects by the column.
    pub fn uses(&self, key: &str) -> bool {
        self.filters_or_sorts_by(key)
            || self
                .columns
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| c == key))
    }

    /// Whether the view's rows or their order depend on the column (a caller from
    /// whom the column is hidden must not use such a view: its rows would tell the
    /// column's values).
    pub fn filters_or_sorts_by(&self, key: &str) -> bool {
        self.sort.iter().any(|s| s.column == key) || self.filters_by(key)
    }

    /// Whether the view's filter names the column.
    pub fn filters_by(&self, key: &str) -> bool {
        self.filter.as_ref().is_some_and(|f| names_column(f, key))
    }
}

/// Whether a filter tree names the column anywhere.
pub(crate) fn names_column(node: &Value, key: &str) -> bool {
    match node {
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| (k == "column" && v.as_str() == Some(key)) || names_column(v, key)),
        Value::Array(items) => items.iter().any(|v| names_column(v, key)),
        _ => false,
    }
}

impl ViewSpec {
    /// Validates the view against the columns and stores references as keys.
    pub fn resolve(self, id: Uuid, columns: &[ColumnDef]) -> Result<ViewDef, TableError> {
        let n = self.name.chars().count();
        if self.name.trim().is_empty() || n > 100 {
            return Err(TableError::InvalidQuery(
                "view name must be 1..100 characters".into(),
            ));
        }
        let filter = match self.filter {
            Some(filter) => {
                query::resolve_filter(&filter, columns)?;
                Some(keyed(&filter, columns))
            }
            None => None,
        };
        let mut sort = Vec::with_capacity(self.sort.len());
        for key in self.sort {
            if !["asc", "desc"].contains(&key.order.as_str()) {
                return Err(TableError::InvalidQuery(
                    "sort order must be asc or desc".into(),
                ));
            }
            let field = query::sort_field(columns, &key.column)?;
            sort.push(SortKey {
                column: key_of(&field, &key.column),
                order: key.order,
            });
        }
        let columns = match self.columns {
            Some(names) => Some(
                names
                    .iter()
                    .map(|r| match query::field(columns, r)? {
                        Field::Column(c) => Ok(c.key.clone()),
                        _ => Err(TableError::InvalidQuery(format!("'{r}' is not a column"))),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        Ok(ViewDef {
            id,
            name: self.name,
            filter,
            sort,
            columns,
        })
    }
}
