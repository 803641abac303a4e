//! Rollup and lookup columns (spec section 2): values read through a link column
//! from the records it links to, stored as the resolved configuration (internal
//! keys and the target's types) and computed on read under the caller's
//! permissions on the target table.

pub use super::fallback::{
    Fallback, FallbackPair, FallbackTables, FallbackValue, MAX_FALLBACK_MATCH,
};

use super::fallback::fallback;
use super::{Cardinality, ColumnDef, ColumnType, LinkFacts};
use crate::tables::TableError;
use crate::tables::query::{self, AggregateOp, Condition, Field};
use crate::tables::scope::{Placement, may_link};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

/// A rollup: an aggregate over the records a link column of this table links to
/// (outgoing), or over the records of a source table whose link columns link to
/// this record (incoming).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// The link column (internal key) of an outgoing rollup.
    pub link_field: Option<String>,
    /// The table whose records are aggregated: the link's target, or an incoming
    /// rollup's source table.
    pub target_table: Uuid,
    /// An incoming rollup's `match`: 1 to 3 pairs, all of which a source record
    /// must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming: Option<Vec<MatchPair>>,
    /// The aggregate.
    pub aggregation: AggregateOp,
    /// The aggregated target column (internal key) and its type; none for `count`.
    pub target_column: Option<(String, ColumnType)>,
    /// Predicates (ANDed) a linked record must match to count, naming target
    /// columns by internal key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Vec<Value>>,
}

/// A pair of an incoming rollup's `match`: a link column of the source table and
/// the record of this table it must link to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchPair {
    /// The source table's link column (internal key).
    pub source: String,
    /// This table's cardinality-one link column whose record it must link to, or
    /// `None` for `$self` (this record).
    pub mine: Option<String>,
}

/// Pairs of an incoming rollup's `match` at most.
pub const MAX_MATCH: usize = 3;

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
    /// Where the value comes from when the linked record gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
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

    /// The fallback table's columns it reads (internal keys and types).
    pub fn fallback_columns(&self) -> Vec<(String, ColumnType)> {
        let Some(fallback) = &self.fallback else {
            return Vec::new();
        };
        let mut out: Vec<(String, ColumnType)> =
            fallback.pairs.iter().map(|p| p.column.clone()).collect();
        out.push(fallback.target_column.clone());
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
pub(super) fn target<'a>(
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

/// Where an incoming rollup's source table sits, as the caller looked it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming<'a> {
    /// The table the column is added to.
    pub table_id: Uuid,
    /// Where that table sits.
    pub placement: &'a Placement,
    /// The source table's company and scope, when it exists in the company.
    pub source: Option<LinkFacts>,
}

/// Builds a rollup from the ColumnCreate fields and the columns of the table it
/// aggregates (the link's target, or the incoming source table).
pub fn rollup(
    fields: &BTreeMap<&'static str, Value>,
    existing: &[ColumnDef],
    targets: &[ColumnDef],
    incoming: Incoming<'_>,
) -> Result<Rollup, TableError> {
    let (link_field, target_table, pairs) = match text(fields, "direction").as_deref() {
        None | Some("outgoing") => {
            for field in ["source_table_id", "match"] {
                if fields.contains_key(field) {
                    return Err(TableError::config(format!(
                        "{field} is only allowed on incoming rollups"
                    )));
                }
            }
            let (link, target_table) = link(fields, existing)?;
            (Some(link.key.clone()), target_table, None)
        }
        Some("incoming") => {
            if fields.contains_key("link_field") {
                return Err(TableError::config(
                    "link_field is only allowed on outgoing rollups; incoming rollups take source_table_id and match",
                ));
            }
            let (source, pairs) = incoming_pairs(fields, existing, targets, incoming)?;
            (None, source, Some(pairs))
        }
        Some(_) => return Err(TableError::config("direction must be outgoing or incoming")),
    };
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
        link_field,
        target_table,
        incoming: pairs,
        aggregation,
        target_column,
        filter: fields
            .get("filter")
            .map(|filter| rollup_filter(filter, targets))
            .transpose()?,
    })
}

/// Checks an incoming rollup's `source_table_id` (a table of the company in this
/// scope or an ancestor, as for link targets) and `match` (1 to 3 pairs of a
/// source link column and `$self` or a cardinality-one link column of this table
/// that targets the same table).
fn incoming_pairs(
    fields: &BTreeMap<&'static str, Value>,
    existing: &[ColumnDef],
    sources: &[ColumnDef],
    incoming: Incoming<'_>,
) -> Result<(Uuid, Vec<MatchPair>), TableError> {
    let source: Uuid = text(fields, "source_table_id")
        .ok_or_else(|| TableError::config("source_table_id is required for incoming rollups"))?
        .parse()
        .map_err(|_| TableError::config("source_table_id must be a table id"))?;
    let facts = incoming
        .source
        .ok_or_else(|| TableError::config(format!("source table {source} does not exist")))?;
    if !may_link(incoming.placement, facts.company_id, facts.scope) {
        return Err(TableError::config(
            "source_table_id must be a table of this scope or an ancestor scope (own chatroom, owning department or company)",
        ));
    }
    let Some(Value::Object(pairs)) = fields.get("match") else {
        return Err(TableError::config(
            "match is required for incoming rollups: a map of source link column to $self or a link column of this table",
        ));
    };
    if !(1..=MAX_MATCH).contains(&pairs.len()) {
        return Err(TableError::config(format!(
            "match holds 1..{MAX_MATCH} pairs"
        )));
    }
    pairs
        .iter()
        .map(|(theirs, mine)| {
            let theirs_column = sources
                .iter()
                .find(|c| c.is_named(theirs))
                .filter(|c| c.column_type == ColumnType::Link)
                .ok_or_else(|| {
                    TableError::config(format!(
                        "match: '{theirs}' is not a link column of the source table"
                    ))
                })?;
            let links_to = theirs_column.target_table_id;
            let mine = match mine.as_str() {
                Some("$self") if links_to == Some(incoming.table_id) => None,
                Some("$self") => {
                    return Err(TableError::config(format!(
                        "match: '{theirs}' does not link to this table, so it cannot match $self"
                    )));
                }
                Some(reference) => {
                    let column = existing
                        .iter()
                        .find(|c| c.is_named(reference))
                        .filter(|c| {
                            c.column_type == ColumnType::Link
                                && c.link_cardinality() == Cardinality::One
                        })
                        .ok_or_else(|| {
                            TableError::config(format!(
                                "match: '{reference}' is not a cardinality-one link column of this table"
                            ))
                        })?;
                    if column.target_table_id != links_to {
                        return Err(TableError::config(format!(
                            "match: '{theirs}' and '{reference}' must link to the same table"
                        )));
                    }
                    Some(column.key.clone())
                }
                None => {
                    return Err(TableError::config(
                        "match values are $self or a column name",
                    ));
                }
            };
            Ok(MatchPair {
                source: theirs_column.key.clone(),
                mine,
            })
        })
        .collect::<Result<_, _>>()
        .map(|pairs| (source, pairs))
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
                } if column.reads_tables().is_empty() => {
                    let mut keyed = predicate.clone();
                    keyed["column"] = Value::String(column.key.clone());
                    Ok(keyed)
                }
                _ => Err(invalid(
                    "filter on a stored or formula column of the aggregated table".into(),
                )),
            }
        })
        .collect()
}

/// Predicates of a rollup filter at most.
pub const MAX_FILTER: usize = 10;

/// Builds a lookup from the ColumnCreate fields, the link target's columns and,
/// for a `fallback`, the defaults table.
pub fn lookup(
    fields: &BTreeMap<&'static str, Value>,
    existing: &[ColumnDef],
    targets: &[ColumnDef],
    tables: FallbackTables<'_>,
) -> Result<Lookup, TableError> {
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
    let many = link.link_cardinality() == Cardinality::Many;
    let fallback = match fields.get("fallback") {
        None | Some(Value::Null) => None,
        Some(_) if many && pick.is_none() => {
            return Err(TableError::config(
                "fallback is valid only on a cardinality-one link or a picked lookup",
            ));
        }
        Some(spec) => Some(fallback(spec, existing, column, tables)?),
    };
    Ok(Lookup {
        link_field: link.key.clone(),
        target_table,
        target_column: (column.key.clone(), column.column_type),
        many,
        pick,
        fallback,
    })
}
