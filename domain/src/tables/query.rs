//! Filters, sorts and aggregations over records, resolved against a table's columns.
//!
//! A filter is the boolean tree of the spec's row policy: `{and: [...]}`,
//! `{or: [...]}`, `{not: node}` or a predicate `{column, op, value}`. Columns are
//! named by internal key or display name; operands are checked against the column's
//! type (principal operands must be tagged). Resolution is pure; the SQL compiler
//! lives with the storage.

use super::TableError;
use super::column::{ColumnDef, ColumnType};
use super::values;
use serde_json::Value;
use uuid::Uuid;

/// Deepest filter tree (a bare predicate is depth 1).
pub const MAX_DEPTH: usize = 5;
/// Predicates in one filter.
pub const MAX_PREDICATES: usize = 24;
/// Entries of one `in` list.
pub const MAX_IN: usize = 100;

/// A predicate operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Equal.
    Eq,
    /// Not equal (empty cells never match).
    Neq,
    /// Greater than.
    Gt,
    /// Greater or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less or equal.
    Lte,
    /// One of a list.
    In,
    /// Substring (string, text) or element (multi_select, link).
    Contains,
    /// Empty cell.
    IsNull,
    /// Non-empty cell.
    IsNotNull,
    /// The named person's name equals (user, social_client).
    NameEq,
    /// The named person's name contains (user, social_client).
    NameContains,
}

impl Op {
    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "eq" => Self::Eq,
            "neq" => Self::Neq,
            "gt" => Self::Gt,
            "gte" => Self::Gte,
            "lt" => Self::Lt,
            "lte" => Self::Lte,
            "in" => Self::In,
            "contains" => Self::Contains,
            "is_null" => Self::IsNull,
            "is_not_null" => Self::IsNotNull,
            "name_eq" => Self::NameEq,
            "name_contains" => Self::NameContains,
            _ => return None,
        })
    }
}

/// What a predicate tests: a column or a system field of the record.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// A stored column.
    Column(Box<ColumnDef>),
    /// The record id.
    Id,
    /// Creation time.
    CreatedAt,
    /// Last change.
    UpdatedAt,
    /// The creator's principal reference (grants' own-row tests; never named by a
    /// caller).
    CreatedBy,
}

impl Field {
    /// The type values of the field have.
    pub fn value_type(&self) -> ColumnType {
        match self {
            Self::Column(c) => c.value_type(),
            Self::Id => ColumnType::User,
            Self::CreatedAt | Self::UpdatedAt => ColumnType::Datetime,
            Self::CreatedBy => ColumnType::String,
        }
    }
}

/// A resolved filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// All of.
    And(Vec<Condition>),
    /// Any of.
    Or(Vec<Condition>),
    /// Not.
    Not(Box<Condition>),
    /// One predicate; operands are canonical values of the field's type.
    Test {
        /// The field.
        field: Field,
        /// The operator.
        op: Op,
        /// Operands (none for the null tests, several for `in`).
        operands: Vec<Value>,
    },
    /// Whether the inner condition is true (never unknown: an unknown inner
    /// condition is false here).
    IsTrue(Box<Condition>),
    /// A constant: `Some(true)` every row, `Some(false)` none, `None` SQL's unknown
    /// (what an unresolvable row-policy node becomes: it never admits a row, not even
    /// under a `not`).
    Const(Option<bool>),
    /// A row-policy link leaf: follows one link hop to the target table's records.
    Link {
        /// The link column (internal key).
        column: String,
        /// The table the link targets.
        target_table: Uuid,
        /// `any` or `all` linked records must match.
        quantifier: Quantifier,
        /// With `all`: at least one live linked record is required.
        require_present: bool,
        /// The condition on a linked record.
        target: Box<Condition>,
    },
}

/// The quantifier of a link leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    /// Some linked record matches.
    Any,
    /// Every linked record matches (vacuously true without one unless
    /// `require_present`).
    All,
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Ascending, empty cells last.
    Asc,
    /// Descending, empty cells last.
    Desc,
}

/// Finds a field by internal key, display name or system name.
pub fn field(columns: &[ColumnDef], reference: &str) -> Result<Field, TableError> {
    match reference {
        "id" => return Ok(Field::Id),
        "created_at" => return Ok(Field::CreatedAt),
        "updated_at" => return Ok(Field::UpdatedAt),
        _ => {}
    }
    columns
        .iter()
        .find(|c| c.key == reference)
        .or_else(|| columns.iter().find(|c| c.name == reference))
        .filter(|c| c.is_readable())
        .map(|c| Field::Column(Box::new(c.clone())))
        .ok_or_else(|| {
            TableError::InvalidQuery(format!(
                "Column '{reference}' does not exist in table schema"
            ))
        })
}

/// Whether a value operator applies to values of a type (`name_eq` and
/// `name_contains` aside).
pub(crate) fn op_applies(op: Op, t: ColumnType) -> bool {
    use ColumnType as T;
    match op {
        Op::IsNull | Op::IsNotNull => true,
        Op::Eq | Op::Neq | Op::In => t.is_scalar(),
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            t.is_numeric() || t.is_textual() || matches!(t, T::Date | T::Datetime | T::Interval)
        }
        Op::Contains => t.is_textual() || t.is_list(),
        Op::NameEq | Op::NameContains => false,
    }
}

fn invalid(path: &str, message: impl std::fmt::Display) -> TableError {
    TableError::InvalidQuery(format!("filter{path}: {message}"))
}

/// Resolves a filter tree against the columns.
pub fn resolve_filter(node: &Value, columns: &[ColumnDef]) -> Result<Condition, TableError> {
    let mut predicates = 0;
    resolve_node(node, columns, "", 1, &mut predicates)
}

fn resolve_node(
    node: &Value,
    columns: &[ColumnDef],
    path: &str,
    depth: usize,
    predicates: &mut usize,
) -> Result<Condition, TableError> {
    let Value::Object(fields) = node else {
        return Err(invalid(path, "a node must be an object"));
    };
    if depth > MAX_DEPTH {
        return Err(invalid(path, format!("deeper than {MAX_DEPTH} levels")));
    }
    for key in ["and", "or"] {
        if !fields.contains_key(key) {
            continue;
        }
        let Some(Value::Array(items)) = fields.get(key).filter(|_| fields.len() == 1) else {
            return Err(invalid(
                path,
                format!("`{key}` takes a non-empty list and nothing else"),
            ));
        };
        if items.is_empty() {
            return Err(invalid(path, format!("`{key}` takes a non-empty list")));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let child = format!("{path}.{key}[{i}]");
            out.push(resolve_node(item, columns, &child, depth + 1, predicates)?);
        }
        return Ok(if key == "and" {
            Condition::And(out)
        } else {
            Condition::Or(out)
        });
    }
    if let Some(inner) = fields.get("not") {
        if fields.len() != 1 {
            return Err(invalid(path, "`not` takes one node and nothing else"));
        }
        let inner = resolve_node(
            inner,
            columns,
            &format!("{path}.not"),
            depth + 1,
            predicates,
        )?;
        return Ok(Condition::Not(Box::new(inner)));
    }
    *predicates += 1;
    if *predicates > MAX_PREDICATES {
        return Err(invalid(
            path,
            format!("more than {MAX_PREDICATES} predicates"),
        ));
    }
    predicate(fields, columns, path)
}

/// The `column` and `op` of a predicate node that holds only `column`, `op` and
/// `value`.
pub(crate) fn predicate_parts(
    fields: &serde_json::Map<String, Value>,
) -> Result<(&str, &str), String> {
    if let Some(extra) = fields
        .keys()
        .find(|k| !["column", "op", "value"].contains(&k.as_str()))
    {
        return Err(format!("unknown key `{extra}`"));
    }
    let column = fields
        .get("column")
        .and_then(Value::as_str)
        .ok_or("a predicate needs `column`")?;
    let op = fields
        .get("op")
        .and_then(Value::as_str)
        .ok_or("a predicate needs `op`")?;
    Ok((column, op))
}

fn predicate(
    fields: &serde_json::Map<String, Value>,
    columns: &[ColumnDef],
    path: &str,
) -> Result<Condition, TableError> {
    let (reference, op_name) = predicate_parts(fields).map_err(|m| invalid(path, m))?;
    let op = Op::parse(op_name).ok_or_else(|| invalid(path, format!("unknown op `{op_name}`")))?;
    let field = field(columns, reference)?;
    eval_only(&field, "filter", reference)?;
    let t = field.value_type();
    use ColumnType as T;
    let allowed = match op {
        Op::NameEq | Op::NameContains => {
            if t == T::Principal {
                return Err(invalid(
                    path,
                    format!(
                        "{op_name} is not supported on principal columns; filter with a tagged operand (user:<id>, smc:<id>, room:<id>)"
                    ),
                ));
            }
            matches!(t, T::User | T::SocialClient) && matches!(field, Field::Column(_))
        }
        _ => op_applies(op, t),
    };
    if !allowed || (field == Field::Id && !matches!(op, Op::Eq | Op::Neq | Op::In)) {
        return Err(invalid(
            path,
            format!("op `{op_name}` does not apply to a {} column", t.as_str()),
        ));
    }
    let value = fields.get("value").unwrap_or(&Value::Null);
    let operands = match op {
        Op::IsNull | Op::IsNotNull => Vec::new(),
        Op::In => {
            let Value::Array(items) = value else {
                return Err(invalid(path, "`in` takes a list"));
            };
            if items.len() > MAX_IN {
                return Err(invalid(
                    path,
                    format!("`in` lists hold at most {MAX_IN} entries"),
                ));
            }
            items
                .iter()
                .map(|v| operand(&field, v).map_err(|m| invalid(path, m)))
                .collect::<Result<_, _>>()?
        }
        Op::NameEq | Op::NameContains => match value {
            Value::String(s) if !s.is_empty() => vec![value.clone()],
            _ => {
                return Err(invalid(
                    path,
                    format!("`{op_name}` takes a non-empty string"),
                ));
            }
        },
        Op::Contains if t.is_textual() => match value {
            Value::String(s) if !s.is_empty() => vec![value.clone()],
            _ => return Err(invalid(path, "`contains` takes a non-empty string")),
        },
        Op::Contains => {
            let element = match &field {
                Field::Column(c) if t == T::Link => ColumnDef {
                    column_type: T::User,
                    ..(**c).clone()
                },
                Field::Column(c) => ColumnDef {
                    column_type: T::String,
                    ..(**c).clone()
                },
                _ => unreachable!("system fields are not lists"),
            };
            vec![operand(&Field::Column(Box::new(element)), value).map_err(|m| invalid(path, m))?]
        }
        _ => vec![operand(&field, value).map_err(|m| invalid(path, m))?],
    };
    Ok(Condition::Test {
        field,
        op,
        operands,
    })
}

/// Checks one operand against the field's type and returns its canonical form.
pub(crate) fn operand(field: &Field, value: &Value) -> Result<Value, String> {
    if value.is_null() {
        return Err("use is_null / is_not_null to test empty cells".into());
    }
    let column = match field {
        Field::Column(c) => ColumnDef {
            column_type: match c.value_type() {
                ColumnType::Select => ColumnType::String,
                other => other,
            },
            max_length: None,
            formula: None,
            rollup: None,
            lookup: None,
            ..(**c).clone()
        },
        other => ColumnDef::new(String::new(), String::new(), other.value_type()),
    };
    values::normalize(&column, value, &mut Vec::new())
}

/// Refuses to filter or sort by an evaluate-only column (a lookup with a
/// fallback, a formula with a cross-table reference).
fn eval_only(field: &Field, what: &str, reference: &str) -> Result<(), TableError> {
    match field {
        Field::Column(c) if c.is_eval_only() => Err(TableError::InvalidQuery(format!(
            "Cannot {what} on evaluate-only column '{reference}'"
        ))),
        _ => Ok(()),
    }
}

/// Resolves a sort key; only scalar stored columns (not principal) and the system
/// fields sort.
pub fn sort_field(columns: &[ColumnDef], reference: &str) -> Result<Field, TableError> {
    let field = field(columns, reference)?;
    eval_only(&field, "sort", reference)?;
    let t = field.value_type();
    if t == ColumnType::Principal {
        return Err(TableError::InvalidQuery(format!(
            "principal columns are not sortable ('{reference}')"
        )));
    }
    if matches!(field, Field::Column(_)) && !t.is_sortable() {
        return Err(TableError::InvalidQuery(format!(
            "Cannot sort on {} column '{reference}'",
            t.as_str()
        )));
    }
    Ok(field)
}

mod aggregation;

pub use aggregation::{AggregateOp, group_field};

#[cfg(test)]
mod tests;

/// Operators that match people by their directory names: never on public reads
/// (names are not published, and their answers would depend on the directory),
/// throttled on private ones.
pub const NAME_OPS: [&str; 2] = ["name_eq", "name_contains"];

/// Whether a filter tree uses a directory-name operator.
pub fn uses_name_ops(node: &Value) -> bool {
    match node {
        Value::Object(fields) => fields.iter().any(|(key, value)| {
            (key == "op" && value.as_str().is_some_and(|op| NAME_OPS.contains(&op)))
                || uses_name_ops(value)
        }),
        Value::Array(items) => items.iter().any(uses_name_ops),
        _ => false,
    }
}
