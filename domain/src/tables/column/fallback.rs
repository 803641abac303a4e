//! Lookup `fallback` (spec section 2): the defaults-table record whose column a
//! lookup shows when the linked record gives no value, checked when the column is
//! created.

use super::computed::target;
use super::{ColumnDef, ColumnType, OtherTable};
use crate::tables::TableError;
use crate::tables::scope::{Placement, may_link};
use crate::tables::values;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// `fallback`: the defaults-table record whose column a lookup shows when the
/// linked record gives no value (never when the caller may not read what it links
/// to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    /// The defaults table.
    pub table: Uuid,
    /// One or two equality pairs the defaults record must satisfy.
    pub pairs: Vec<FallbackPair>,
    /// The defaults table's column shown (internal key), of the lookup's type.
    pub target_column: (String, ColumnType),
}

/// A pair of a fallback's `match`: a column of the defaults table and what it must
/// equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FallbackPair {
    /// The defaults table's column (internal key) and its type.
    pub column: (String, ColumnType),
    /// What it must equal.
    pub value: FallbackValue,
}

/// The right-hand side of a fallback pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackValue {
    /// `$row.<column>`: a stored column of the looking-up record (internal key).
    Row(String),
    /// A literal in the defaults column's canonical form.
    Literal(Value),
}

/// Pairs of a fallback's `match` at most.
pub const MAX_FALLBACK_MATCH: usize = 2;

/// The tables a lookup's fallback may read, as the caller looked them up.
#[derive(Debug, Clone, Copy)]
pub struct FallbackTables<'a> {
    /// Where the looking-up table sits.
    pub placement: &'a Placement,
    /// The tables found in the company.
    pub others: &'a [OtherTable],
}

/// Column types a fallback's `match` compares.
fn matchable(t: ColumnType) -> bool {
    use ColumnType as T;
    matches!(
        t,
        T::String
            | T::Text
            | T::Select
            | T::Integer
            | T::Float
            | T::Boolean
            | T::Date
            | T::Datetime
    )
}

/// Whether values of two column types compare with `=`.
fn comparable(a: ColumnType, b: ColumnType) -> bool {
    let text = |t: ColumnType| t.is_textual() || t == ColumnType::Select;
    (a.is_numeric() && b.is_numeric()) || (text(a) && text(b)) || a == b
}

/// Checks a lookup's `fallback`: `{table_id, match, target_column}` with a defaults
/// table of this scope or an ancestor, 1..2 pairs of a defaults column and
/// `$row.<my column>` or a literal, and a target column of the lookup's type.
pub(super) fn fallback(
    spec: &Value,
    existing: &[ColumnDef],
    looked_up: &ColumnDef,
    tables: FallbackTables<'_>,
) -> Result<Fallback, TableError> {
    let bad = |message: String| TableError::config(format!("fallback: {message}"));
    let Value::Object(spec) = spec else {
        return Err(bad("an object {table_id, match, target_column}".into()));
    };
    if let Some(extra) = spec
        .keys()
        .find(|k| !["table_id", "match", "target_column"].contains(&k.as_str()))
    {
        return Err(bad(format!("unknown key '{extra}'")));
    }
    let table: Uuid = spec
        .get("table_id")
        .and_then(Value::as_str)
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| bad("table_id must be a table id".into()))?;
    let defaults = tables
        .others
        .iter()
        .find(|o| o.id == table)
        .ok_or_else(|| bad(format!("table {table} does not exist")))?;
    if !may_link(
        tables.placement,
        defaults.facts.company_id,
        defaults.facts.scope,
    ) {
        return Err(bad(
            "table_id must be a table of this scope or an ancestor scope (own chatroom, owning department or company)".into(),
        ));
    }
    let reference = spec
        .get("target_column")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("target_column is required".into()))?;
    let shown = target(reference, "fallback.target_column", &defaults.columns)?;
    if shown.column_type != looked_up.column_type {
        return Err(bad(format!(
            "target_column '{reference}' is a {} column; the lookup shows {} values",
            shown.column_type.as_str(),
            looked_up.column_type.as_str()
        )));
    }
    let Some(Value::Object(pairs)) = spec.get("match") else {
        return Err(bad(
            "match is required: a map of defaults-table column to $row.<column> or a literal"
                .into(),
        ));
    };
    if !(1..=MAX_FALLBACK_MATCH).contains(&pairs.len()) {
        return Err(bad(format!("match holds 1..{MAX_FALLBACK_MATCH} pairs")));
    }
    let pairs = pairs
        .iter()
        .map(|(theirs, value)| {
            let column = target(theirs, "fallback.match", &defaults.columns)?;
            if !matchable(column.column_type) {
                return Err(bad(format!(
                    "match: '{theirs}' is a {} column, which match cannot compare",
                    column.column_type.as_str()
                )));
            }
            let value = match value.as_str().and_then(|v| v.strip_prefix("$row.")) {
                Some(mine) => {
                    let my = existing
                        .iter()
                        .find(|c| c.is_named(mine))
                        .filter(|c| c.column_type.is_stored())
                        .ok_or_else(|| {
                            bad(format!(
                                "match: '{mine}' is not a stored column of this table"
                            ))
                        })?;
                    if !comparable(my.column_type, column.column_type) {
                        return Err(bad(format!(
                            "match: '{mine}' ({}) cannot be compared with '{theirs}' ({})",
                            my.column_type.as_str(),
                            column.column_type.as_str()
                        )));
                    }
                    FallbackValue::Row(my.key.clone())
                }
                None if value.is_string() || value.is_number() || value.is_boolean() => {
                    let literal = values::normalize(column, value, &mut Vec::new())
                        .map_err(|m| bad(format!("match: '{theirs}': {m}")))?;
                    FallbackValue::Literal(literal)
                }
                None => {
                    return Err(bad(
                        "match values are $row.<column> or a string, number or boolean".into(),
                    ));
                }
            };
            Ok(FallbackPair {
                column: (column.key.clone(), column.column_type),
                value,
            })
        })
        .collect::<Result<_, TableError>>()?;
    Ok(Fallback {
        table,
        pairs,
        target_column: (shown.key.clone(), shown.column_type),
    })
}
