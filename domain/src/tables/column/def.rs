//! The stored definition of a column.

use super::ColumnType;
use super::computed::{FallbackValue, Lookup, Rollup};
use crate::tables::formula::Formula;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// How many target records a link cell holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cardinality {
    /// At most one.
    One,
    /// Any number.
    Many,
}

/// A column as the table stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Internal key, `col_<hex>`: the physical column and the stable reference.
    pub key: String,
    /// Display name, unique in the table.
    pub name: String,
    /// Type.
    #[serde(rename = "type")]
    pub column_type: ColumnType,
    /// Whether every record must hold a value.
    pub required: bool,
    /// Applied to existing rows when added and to new records without a value.
    pub default_value: Option<Value>,
    /// Free text.
    pub description: Option<String>,
    /// Characters at most (string, text).
    pub max_length: Option<i64>,
    /// Allowed values (select, multi_select).
    pub options: Option<Vec<String>>,
    /// Allowed MIME types (attachment); empty or absent means any.
    pub allowed_mime_types: Option<Vec<String>>,
    /// Files per cell (attachment).
    pub max_count: Option<i64>,
    /// Bytes per file (attachment).
    pub max_file_bytes: Option<i64>,
    /// The table a link points to.
    pub target_table_id: Option<Uuid>,
    /// Link cardinality (immutable).
    pub cardinality: Option<Cardinality>,
    /// A formula column's resolved expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formula: Option<Box<Formula>>,
    /// A rollup column's resolved configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollup: Option<Box<Rollup>>,
    /// A lookup column's resolved configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup: Option<Box<Lookup>>,
}

/// Whether a string is an internal column key (`col_` and 1 to 32 lowercase hex
/// digits), which makes it safe as a SQL identifier.
pub fn is_column_key(key: &str) -> bool {
    key.strip_prefix("col_").is_some_and(|hex| {
        (1..=32).contains(&hex.len())
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl ColumnDef {
    /// A column with only a key, a name and a type (not required, no default, no
    /// type settings): the shape tests and internal operands start from.
    pub fn new(key: impl Into<String>, name: impl Into<String>, column_type: ColumnType) -> Self {
        Self {
            key: key.into(),
            name: name.into(),
            column_type,
            required: false,
            default_value: None,
            description: None,
            max_length: None,
            options: None,
            allowed_mime_types: None,
            max_count: None,
            max_file_bytes: None,
            target_table_id: None,
            cardinality: None,
            formula: None,
            rollup: None,
            lookup: None,
        }
    }

    /// Link cardinality, defaulting to many.
    pub fn link_cardinality(&self) -> Cardinality {
        self.cardinality.unwrap_or(Cardinality::Many)
    }

    /// The type its values read as: a formula's result type, else its own.
    pub fn value_type(&self) -> ColumnType {
        match (&self.formula, &self.rollup, &self.lookup) {
            (Some(formula), ..) => formula.kind.column_type(),
            (_, Some(rollup), _) => rollup.value_type(),
            (.., Some(lookup)) => lookup.value_type(),
            _ => self.column_type,
        }
    }

    /// Whether records show a value of it: stored and computed columns.
    pub fn is_readable(&self) -> bool {
        self.column_type.is_stored()
            || self.formula.is_some()
            || self.rollup.is_some()
            || self.lookup.is_some()
    }

    /// The other tables it reads: a rollup's or lookup's linked table, a lookup's
    /// fallback table, the tables a formula's cross-table references read.
    pub fn reads_tables(&self) -> Vec<uuid::Uuid> {
        let mut out = Vec::new();
        match (&self.formula, &self.rollup, &self.lookup) {
            (Some(formula), ..) => out.extend(formula.linked().into_iter().map(|(t, ..)| t)),
            (_, Some(rollup), _) => out.push(rollup.target_table),
            (.., Some(lookup)) => {
                out.push(lookup.target_table);
                out.extend(lookup.fallback.iter().map(|f| f.table));
            }
            _ => {}
        }
        let mut tables: Vec<uuid::Uuid> = Vec::new();
        for table in out {
            if !tables.contains(&table) {
                tables.push(table);
            }
        }
        tables
    }

    /// Whether it is evaluate-only: shown in records but never filtered or sorted
    /// by (a lookup with a fallback, a formula with a cross-table reference).
    pub fn is_eval_only(&self) -> bool {
        self.lookup.as_ref().is_some_and(|l| l.fallback.is_some())
            || self
                .formula
                .as_ref()
                .is_some_and(|f| !f.linked().is_empty())
    }

    /// The columns of its own table it reads (internal keys): a formula's
    /// references, a rollup's or lookup's link column, a fallback's `$row` columns.
    pub fn reads(&self) -> Vec<String> {
        match (&self.formula, &self.rollup, &self.lookup) {
            (Some(formula), ..) => formula.references(),
            (_, Some(rollup), _) => match &rollup.incoming {
                Some(pairs) => pairs.iter().filter_map(|p| p.mine.clone()).collect(),
                None => rollup.link_field.iter().cloned().collect(),
            },
            (.., Some(lookup)) => {
                let mut out = vec![lookup.link_field.clone()];
                for pair in lookup.fallback.iter().flat_map(|f| &f.pairs) {
                    if let FallbackValue::Row(key) = &pair.value
                        && !out.contains(key)
                    {
                        out.push(key.clone());
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// Whether `reference` names this column (internal key or display name).
    pub fn is_named(&self, reference: &str) -> bool {
        self.key == reference || self.name == reference
    }
}

#[cfg(test)]
mod tests {
    use super::is_column_key;

    #[test]
    fn keys_are_safe_identifiers() {
        assert!(is_column_key("col_0a1b"));
        assert!(!is_column_key("col_"));
        assert!(!is_column_key("col_XYZ"));
        assert!(!is_column_key("col_a; drop table x"));
        assert!(!is_column_key(&format!("col_{}", "a".repeat(33))));
    }
}
