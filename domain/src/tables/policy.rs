//! Row policies (spec section 2, "Row policy"): the boolean tree a grant narrows
//! rows with, compiled to a [`Condition`].
//!
//! A policy is checked strictly when it is authored ([`Mode::Author`]: every problem
//! is a 400 naming the node path) and compiled leniently for each read
//! ([`Mode::Read`]): a node that no longer resolves (a deleted column, a changed
//! type, an empty or oversized `$me` set) becomes SQL's unknown, which admits no row
//! in any position, so anything unresolvable narrows and never widens.

use super::TableError;
use super::column::{ColumnDef, ColumnType};
use super::query::{self, Condition, Field, MAX_DEPTH, MAX_IN, MAX_PREDICATES, Op, Quantifier};
use chrono::{DateTime, Days, NaiveDate, Utc};
use serde_json::{Map, Value};
use std::collections::HashMap;
use uuid::Uuid;

/// Link leaves in one policy.
pub const MAX_LINK_LEAVES: usize = 6;
/// Entries a `$me` or `$me.department` set may hold; a larger set fails closed.
pub const MAX_PRINCIPAL_SET: usize = 1000;

/// What the tokens of a policy mean for one read.
#[derive(Debug, Clone, PartialEq)]
pub struct Tokens {
    /// `$today` (UTC).
    pub today: NaiveDate,
    /// `$now`.
    pub now: DateTime<Utc>,
    /// `$me`: the caller's tagged principal cells (itself and its live rooms);
    /// `None` when it cannot be resolved.
    pub me: Option<Vec<String>>,
    /// `$me.department`: the tagged cells of the caller's departments (their members
    /// and rooms); `None` when not resolved.
    pub me_department: Option<Vec<String>>,
}

/// How a policy is compiled.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// Authoring: every problem is an error; principal tokens are only checked.
    Author,
    /// A read: every problem narrows (the node becomes unknown).
    Read(&'a Tokens),
}

/// The columns of the tables a policy's link leaves may reach, by table id.
pub type Targets = HashMap<Uuid, Vec<ColumnDef>>;

/// Compiles a policy against the table's columns. In [`Mode::Read`] it never fails.
pub fn compile(
    node: &Value,
    columns: &[ColumnDef],
    targets: &Targets,
    mode: Mode<'_>,
) -> Result<Condition, TableError> {
    let mut compiler = Compiler {
        targets,
        mode,
        predicates: 0,
        links: 0,
    };
    let compiled = compiler.node(node, columns, "", 1);
    match (compiled, mode) {
        (Ok(condition), _) => Ok(condition),
        (Err(message), Mode::Author) => Err(TableError::InvalidQuery(message)),
        (Err(_), Mode::Read(_)) => Ok(UNKNOWN),
    }
}

/// The channel floor of a governed department table: the rows whose scope column
/// holds one of `values` (scope values are strings; numbers and booleans are read
/// from their text). Returns the condition and the canonical values; a scope column
/// that no longer exists gives unknown, which admits no row.
pub fn floor(columns: &[ColumnDef], key: &str, values: &[String]) -> (Condition, Vec<Value>) {
    let Some(column) = columns
        .iter()
        .find(|c| c.key == key && c.column_type.is_stored() && c.column_type.is_scalar())
    else {
        return (UNKNOWN, Vec::new());
    };
    let field = Field::Column(Box::new(column.clone()));
    let canonical: Vec<Value> = values
        .iter()
        .filter_map(|v| {
            query::operand(&field, &Value::String(v.clone()))
                .ok()
                .or_else(|| {
                    let parsed = serde_json::from_str::<Value>(v).ok()?;
                    query::operand(&field, &parsed).ok()
                })
        })
        .collect();
    let condition = if canonical.is_empty() {
        Condition::Const(Some(false))
    } else {
        Condition::Test {
            field,
            op: Op::In,
            operands: canonical.clone(),
        }
    };
    (condition, canonical)
}

/// Whether the policy uses a token (to load what it needs only when it is used).
pub fn mentions(node: &Value, token: &str) -> bool {
    match node {
        Value::String(s) => s == token,
        Value::Array(items) => items.iter().any(|v| mentions(v, token)),
        Value::Object(fields) => fields.values().any(|v| mentions(v, token)),
        _ => false,
    }
}

const UNKNOWN: Condition = Condition::Const(None);

/// Whether a condition contains an unknown node.
fn has_unknown(condition: &Condition) -> bool {
    match condition {
        Condition::Const(None) => true,
        Condition::And(items) | Condition::Or(items) => items.iter().any(has_unknown),
        Condition::Not(inner) | Condition::IsTrue(inner) => has_unknown(inner),
        Condition::Link { target, .. } => has_unknown(target),
        _ => false,
    }
}

struct Compiler<'a> {
    targets: &'a Targets,
    mode: Mode<'a>,
    predicates: usize,
    links: usize,
}

fn at(path: &str, message: impl std::fmt::Display) -> String {
    format!("row policy node ${path}: {message}")
}

/// A resolved operand: values, a principal set, or unknown.
enum Operand {
    Values(Vec<Value>),
    Unknown,
}

impl Compiler<'_> {
    /// A child node: in read mode a failing child becomes unknown in place.
    fn child(
        &mut self,
        node: &Value,
        columns: &[ColumnDef],
        path: &str,
        depth: usize,
    ) -> Result<Condition, String> {
        match (self.node(node, columns, path, depth), self.mode) {
            (Err(_), Mode::Read(_)) => Ok(UNKNOWN),
            (result, _) => result,
        }
    }

    fn node(
        &mut self,
        node: &Value,
        columns: &[ColumnDef],
        path: &str,
        depth: usize,
    ) -> Result<Condition, String> {
        let Value::Object(fields) = node else {
            return Err(at(path, "a node must be an object"));
        };
        if depth > MAX_DEPTH {
            return Err(at(path, format!("deeper than {MAX_DEPTH} levels")));
        }
        for key in ["and", "or"] {
            if !fields.contains_key(key) {
                continue;
            }
            let items = match fields.get(key) {
                Some(Value::Array(items)) if fields.len() == 1 && !items.is_empty() => items,
                _ => {
                    return Err(at(
                        path,
                        format!("`{key}` takes a non-empty list and nothing else"),
                    ));
                }
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(self.child(item, columns, &format!("{path}.{key}[{i}]"), depth + 1)?);
            }
            return Ok(if key == "and" {
                Condition::And(out)
            } else {
                Condition::Or(out)
            });
        }
        if let Some(inner) = fields.get("not") {
            if fields.len() != 1 {
                return Err(at(path, "`not` takes one node and nothing else"));
            }
            let inner = self.child(inner, columns, &format!("{path}.not"), depth + 1)?;
            return Ok(Condition::Not(Box::new(inner)));
        }
        if fields.contains_key("link") {
            return self.link(fields, columns, path, depth);
        }
        self.predicates += 1;
        if self.predicates > MAX_PREDICATES {
            return Err(at(path, format!("more than {MAX_PREDICATES} predicates")));
        }
        self.predicate(fields, columns, path)
    }

    fn link(
        &mut self,
        fields: &Map<String, Value>,
        columns: &[ColumnDef],
        path: &str,
        depth: usize,
    ) -> Result<Condition, String> {
        if fields.contains_key("op") || fields.contains_key("value") {
            return Err(at(
                path,
                "a `{link, op, value}` membership leaf is not accepted; use `{link, quantifier, target}`",
            ));
        }
        self.links += 1;
        if self.links > MAX_LINK_LEAVES {
            return Err(at(path, format!("more than {MAX_LINK_LEAVES} link leaves")));
        }
        let quantifier = match fields.get("quantifier").and_then(Value::as_str) {
            Some("any") => Quantifier::Any,
            Some("all") => Quantifier::All,
            _ => return Err(at(path, "`quantifier` must be `any` or `all`")),
        };
        let require_present = match (quantifier, fields.get("require_present")) {
            (Quantifier::All, Some(Value::Bool(b))) => *b,
            (Quantifier::All, _) => {
                return Err(at(
                    path,
                    "`require_present` (boolean) must be stated on `all`",
                ));
            }
            (Quantifier::Any, None) => false,
            (Quantifier::Any, Some(_)) => {
                return Err(at(path, "`require_present` must be absent on `any`"));
            }
        };
        let allowed = ["link", "quantifier", "target", "require_present"];
        if let Some(extra) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(at(path, format!("unknown key `{extra}`")));
        }
        let key = fields
            .get("link")
            .and_then(Value::as_str)
            .ok_or_else(|| at(path, "`link` names a link column by internal key"))?;
        let column = columns
            .iter()
            .find(|c| c.key == key && c.column_type == ColumnType::Link)
            .ok_or_else(|| at(path, format!("`{key}` is not a link column of this table")))?;
        let target_table = column
            .target_table_id
            .ok_or_else(|| at(path, "the link column has no target table"))?;
        let target_columns = self
            .targets
            .get(&target_table)
            .ok_or_else(|| at(path, "the link's target table does not exist"))?;
        let node = fields
            .get("target")
            .ok_or_else(|| at(path, "a link leaf needs `target`"))?;
        let target = self.child(node, target_columns, &format!("{path}.target"), depth + 1)?;
        if has_unknown(&target) {
            return Ok(UNKNOWN);
        }
        Ok(Condition::Link {
            column: column.key.clone(),
            target_table,
            quantifier,
            require_present,
            target: Box::new(target),
        })
    }

    fn predicate(
        &mut self,
        fields: &Map<String, Value>,
        columns: &[ColumnDef],
        path: &str,
    ) -> Result<Condition, String> {
        let (key, op_name) = query::predicate_parts(fields).map_err(|m| at(path, m))?;
        let op = Op::parse(op_name)
            .filter(|op| !matches!(op, Op::NameEq | Op::NameContains))
            .ok_or_else(|| {
                at(
                    path,
                    format!("op `{op_name}` is not accepted in a row policy"),
                )
            })?;
        let column = columns
            .iter()
            .find(|c| c.key == key)
            .ok_or_else(|| at(path, format!("unknown column `{key}` (use internal keys)")))?;
        let t = column.column_type;
        if !t.is_stored() || !t.is_scalar() {
            return Err(at(
                path,
                format!("`{key}` is not a stored scalar column ({})", t.as_str()),
            ));
        }
        if !query::op_applies(op, t) {
            return Err(at(
                path,
                format!("op `{op_name}` does not apply to a {} column", t.as_str()),
            ));
        }
        let field = Field::Column(Box::new(column.clone()));
        let test = |op: Op, operands: Vec<Value>| Condition::Test {
            field: field.clone(),
            op,
            operands,
        };
        let value = fields.get("value");
        if matches!(op, Op::IsNull | Op::IsNotNull) {
            if value.is_some() {
                return Err(at(path, format!("`{op_name}` takes no `value`")));
            }
            return Ok(test(op, Vec::new()));
        }
        let value = value.ok_or_else(|| at(path, format!("`{op_name}` needs a `value`")))?;
        let entries: Vec<&Value> = match (op, value) {
            (Op::In, Value::Array(items)) if items.len() <= MAX_IN => items.iter().collect(),
            (Op::In, Value::Array(_)) => {
                return Err(at(
                    path,
                    format!("`in` lists hold at most {MAX_IN} entries"),
                ));
            }
            (Op::In, _) => return Err(at(path, "`in` takes a list")),
            _ => vec![value],
        };
        let mut operands = Vec::new();
        let mut is_set = false;
        for entry in entries {
            let (values, set) = match self.operand(column, op, entry, path)? {
                Operand::Unknown => return Ok(UNKNOWN),
                Operand::Values(values) if values.len() != 1 => (values, true),
                Operand::Values(values) => (values, is_token(entry)),
            };
            is_set |= set && t == ColumnType::Principal;
            operands.extend(values);
        }
        Ok(match op {
            Op::Eq if is_set => test(Op::In, operands),
            Op::Neq if is_set => Condition::And(vec![
                test(Op::IsNotNull, Vec::new()),
                Condition::Not(Box::new(test(Op::In, operands))),
            ]),
            _ => test(op, operands),
        })
    }

    /// One operand: a literal of the column's type or a token.
    fn operand(
        &self,
        column: &ColumnDef,
        op: Op,
        value: &Value,
        path: &str,
    ) -> Result<Operand, String> {
        let t = column.column_type;
        let Some(token) = value.as_str().filter(|_| is_token(value)) else {
            let field = Field::Column(Box::new(column.clone()));
            let operand = if op == Op::Contains {
                match value {
                    Value::String(s) if !s.is_empty() => value.clone(),
                    _ => return Err(at(path, "`contains` takes a non-empty string")),
                }
            } else {
                query::operand(&field, value).map_err(|m| at(path, m))?
            };
            return Ok(Operand::Values(vec![operand]));
        };
        if token == "$me" || token == "$me.department" {
            if t != ColumnType::Principal || !matches!(op, Op::Eq | Op::Neq | Op::In) {
                return Err(at(
                    path,
                    format!("`{token}` applies to principal columns with eq, neq or in"),
                ));
            }
            let Mode::Read(tokens) = self.mode else {
                return Ok(Operand::Values(vec![Value::String(String::new())]));
            };
            let set = if token == "$me" {
                &tokens.me
            } else {
                &tokens.me_department
            };
            return Ok(match set {
                Some(set) if !set.is_empty() && set.len() <= MAX_PRINCIPAL_SET => {
                    Operand::Values(set.iter().cloned().map(Value::String).collect())
                }
                _ => Operand::Unknown,
            });
        }
        let (today, now) = match self.mode {
            Mode::Read(tokens) => (tokens.today, tokens.now),
            Mode::Author => (Utc::now().date_naive(), Utc::now()),
        };
        if op == Op::Contains {
            return Err(at(path, format!("`{token}` does not apply to `contains`")));
        }
        let value = match (token, t) {
            ("$now", ColumnType::Datetime) => now.to_rfc3339(),
            ("$now", _) => return Err(at(path, "`$now` applies to datetime columns")),
            (_, ColumnType::Date | ColumnType::Datetime) => {
                let day = today_offset(token, today)
                    .ok_or_else(|| at(path, format!("unknown token `{token}`")))?;
                if t == ColumnType::Date {
                    day.to_string()
                } else {
                    format!("{day}T00:00:00Z")
                }
            }
            _ => {
                return Err(at(
                    path,
                    format!("`{token}` applies to date and datetime columns"),
                ));
            }
        };
        Ok(Operand::Values(vec![Value::String(value)]))
    }
}

/// Whether an operand is a token (`$today…`, `$now`, `$me…`).
fn is_token(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| ["$today", "$now", "$me"].iter().any(|p| s.starts_with(p)))
}

/// `$today`, `$today+Nd` or `$today-Nd` relative to `today`.
fn today_offset(token: &str, today: NaiveDate) -> Option<NaiveDate> {
    let rest = token.strip_prefix("$today")?;
    if rest.is_empty() {
        return Some(today);
    }
    let (sign, days) = rest.split_at(1);
    let days: u64 = days.strip_suffix('d')?.parse().ok()?;
    match sign {
        "+" => today.checked_add_days(Days::new(days)),
        "-" => today.checked_sub_days(Days::new(days)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
