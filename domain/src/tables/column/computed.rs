//! Rollup and lookup columns (spec section 2): values read through a link column
//! from the records it links to, stored as the resolved configuration (internal
//! keys and the target's types) and computed on read under the caller's
//! permissions on the target table.

use super::{Cardinality, ColumnDef, ColumnType};
use crate::tables::TableError;
use crate::tables::query::{self, AggregateOp, Condition, Field};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

/// An outgoing rollup: an aggregate over the records a link column links to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// The link column (internal key).
    pub link_field: String,
    /// The table the link targets.
    pub target_table: Uuid,
    /// The aggregate.
    pub aggregation: AggregateOp,
    /// The aggregated target column (internal key) and its type; none for `count`.
    pub target_column: Option<(String, ColumnType)>,
    /// Predicates (ANDed) a linked record must match to count, naming target
    /// columns by internal key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Vec<Value>>,
}

/// A lookup: a target column surfaced through a link column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lookup {
    /// The link column (internal key).
    pub link_field: String,
    /// The table the link targets.
    pub target_table: Uuid,
    /// The surfaced target column (internal key) and its type.
    pub target_column: (String, ColumnType),
    /// Whether the link holds many records (and no `pick` makes the value one).
    pub many: bool,
    /// Turns a many-lookup into one value.
    pub pick: Option<Pick>,
}

/// `pick`: which linked record's value a many-lookup surfaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// An orderable target column (internal key) and its type.
    pub order_column: (String, ColumnType),
    /// `desc` surfaces the record with the largest value, `asc` the smallest.
    pub descending: bool,
}

impl Rollup {
    /// The type of its values.
    pub fn value_type(&self) -> ColumnType {
        match (self.aggregation, &self.target_column) {
            (AggregateOp::Count | AggregateOp::CountDistinct, _) | (_, None) => ColumnType::Integer,
            (AggregateOp::Avg, _) => ColumnType::Float,
            (AggregateOp::Sum, Some((_, ColumnType::Integer))) => ColumnType::Integer,
            (AggregateOp::Sum, _) => ColumnType::Float,
            (_, Some((_, t))) => *t,
        }
    }
}

impl Lookup {
    /// The target columns it reads (internal keys and types).
    pub fn target_columns(&self) -> Vec<(String, ColumnType)> {
        let mut out = vec![self.target_column.clone()];
        out.extend(self.pick.iter().map(|p| p.order_column.clone()));
        out
    }

    /// The type of its values: the target column's, or json (a list) for a
    /// many-lookup without `pick`.
    pub fn value_type(&self) -> ColumnType {
        if self.many && self.pick.is_none() {
            ColumnType::Json
        } else {
            self.target_column.1
        }
    }
}

fn text(fields: &BTreeMap<&'static str, Value>, name: &str) -> Option<String> {
    fields.get(name).and_then(Value::as_str).map(str::to_string)
}

/// The link column a rollup or lookup reads through, with its target table.
fn link<'a>(
    fields: &BTreeMap<&'static str, Value>,
    existing: &'a [ColumnDef],
) -> Result<(&'a ColumnDef, Uuid), TableError> {
    let reference = text(fields, "link_field").ok_or_else(|| {
        TableError::config("link_field is required for outgoing rollups and lookups")
    })?;
    let column = existing
        .iter()
        .find(|c| c.is_named(&reference))
        .ok_or_else(|| TableError::config(format!("link_field '{reference}' does not exist")))?;
    match (column.column_type, column.target_table_id) {
        (ColumnType::Link, Some(target)) => Ok((column, target)),
        _ => Err(TableError::config(format!(
            "link_field '{reference}' is not a link column"
        ))),
    }
}

/// A stored, non-computed column of the target by display name or internal key.
fn target<'a>(
    reference: &str,
    field: &str,
    targets: &'a [ColumnDef],
) -> Result<&'a ColumnDef, TableError> {
    targets
        .iter()
        .find(|c| c.is_named(reference))
        .filter(|c| c.column_type.is_stored() && c.column_type != ColumnType::Link)
        .ok_or_else(|| {
            TableError::config(format!(
                "{field} '{reference}' is not a stored column of the target table"
            ))
        })
}

fn not_yet(fields: &BTreeMap<&'static str, Value>, names: &[&str]) -> Result<(), TableError> {
    for name in names {
        if fields.contains_key(name) {
            return Err(TableError::config(format!(
                "{name} is not available yet on this service"
            )));
        }
    }
    Ok(())
}

/// Builds an outgoing rollup from the ColumnCreate fields and the link target's
/// columns. Incoming rollups and rollup filters are refused as not available yet.
pub fn rollup(
    fields: &BTreeMap<&'static str, Value>,
    existing: &[ColumnDef],
    targets: &[ColumnDef],
) -> Result<Rollup, TableError> {
    if text(fields, "direction").is_some_and(|d| d != "outgoing") {
        return Err(TableError::config(
            "incoming rollups (direction, source_table_id, match) are not available yet on this service",
        ));
    }
    not_yet(fields, &["source_table_id", "match"])?;
    let (link, target_table) = link(fields, existing)?;
    let name = text(fields, "aggregation")
        .ok_or_else(|| TableError::config("aggregation is required for rollups"))?;
    let aggregation = AggregateOp::parse(&name).ok_or_else(|| {
        TableError::config("aggregation must be count, count_distinct, sum, avg, min or max")
    })?;
    let target_column = match text(fields, "target_column") {
        None if aggregation == AggregateOp::Count => None,
        None => {
            return Err(TableError::config(format!(
                "target_column is required for {name}"
            )));
        }
        Some(reference) => {
            let column = target(&reference, "target_column", targets)?;
            let t = column.column_type;
            let fits = match aggregation {
                AggregateOp::Count => true,
                AggregateOp::CountDistinct => t.is_scalar(),
                AggregateOp::Sum | AggregateOp::Avg => t.is_numeric(),
                AggregateOp::Min | AggregateOp::Max => {
                    t.is_numeric() || matches!(t, ColumnType::Date | ColumnType::Datetime)
                }
            };
            if !fits {
                return Err(TableError::config(format!(
                    "{name} cannot aggregate the {} column '{}'",
                    t.as_str(),
                    column.name
                )));
            }
            Some((column.key.clone(), t))
        }
    };
    Ok(Rollup {
        link_field: link.key.clone(),
        target_table,
        aggregation,
        target_column,
        filter: fields
            .get("filter")
            .map(|filter| rollup_filter(filter, targets))
            .transpose()?,
    })
}

/// Checks a rollup `filter` (at most [`MAX_FILTER`] predicates, `in` lists of at
/// most 100) against the target's columns; returns it naming columns by key.
fn rollup_filter(filter: &Value, targets: &[ColumnDef]) -> Result<Vec<Value>, TableError> {
    let Value::Array(predicates) = filter else {
        return Err(TableError::config("filter must be a list of predicates"));
    };
    if predicates.len() > MAX_FILTER {
        return Err(TableError::config(format!(
            "filter holds at most {MAX_FILTER} predicates"
        )));
    }
    predicates
        .iter()
        .enumerate()
        .map(|(i, predicate)| {
            let invalid = |message: String| TableError::config(format!("filter[{i}]: {message}"));
            if !predicate.get("column").is_some_and(Value::is_string) {
                return Err(invalid("a predicate is {column, op, value}".into()));
            }
            match query::resolve_filter(predicate, targets).map_err(|e| invalid(e.to_string()))? {
                Condition::Test {
                    field: Field::Column(column),
                    ..
                } => {
                    let mut keyed = predicate.clone();
                    keyed["column"] = Value::String(column.key.clone());
                    Ok(keyed)
                }
                _ => Err(invalid("filter on a column of the target table".into())),
            }
        })
        .collect()
}

/// Predicates of a rollup filter at most.
pub const MAX_FILTER: usize = 10;

/// Builds a lookup from the ColumnCreate fields and the link target's columns. The
/// defaults-table `fallback` is refused as not available yet.
pub fn lookup(
    fields: &BTreeMap<&'static str, Value>,
    existing: &[ColumnDef],
    targets: &[ColumnDef],
) -> Result<Lookup, TableError> {
    not_yet(fields, &["fallback"])?;
    let (link, target_table) = link(fields, existing)?;
    let reference = text(fields, "target_column")
        .ok_or_else(|| TableError::config("target_column is required for lookups"))?;
    let column = target(&reference, "target_column", targets)?;
    let pick = match fields.get("pick") {
        None => None,
        Some(Value::Object(pick)) => {
            let order = pick
                .get("order_column")
                .and_then(Value::as_str)
                .ok_or_else(|| TableError::config("pick.order_column is required"))?;
            let order = target(order, "pick.order_column", targets)?;
            if !matches!(
                order.column_type,
                ColumnType::Integer | ColumnType::Float | ColumnType::Date | ColumnType::Datetime
            ) {
                return Err(TableError::config(
                    "pick.order_column must be an integer, float, date or datetime column",
                ));
            }
            let descending = match pick.get("direction").and_then(Value::as_str) {
                Some("desc") => true,
                Some("asc") => false,
                _ => return Err(TableError::config("pick.direction must be asc or desc")),
            };
            if pick.keys().any(|k| k != "order_column" && k != "direction") {
                return Err(TableError::config(
                    "pick takes order_column and direction only",
                ));
            }
            Some(Pick {
                order_column: (order.key.clone(), order.column_type),
                descending,
            })
        }
        Some(_) => return Err(TableError::config("pick must be an object")),
    };
    Ok(Lookup {
        link_field: link.key.clone(),
        target_table,
        target_column: (column.key.clone(), column.column_type),
        many: link.link_cardinality() == Cardinality::Many,
        pick,
    })
}
