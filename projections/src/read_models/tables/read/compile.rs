//! Filters, search and sorts compiled to SQL with bound parameters.
//!
//! An empty cell fails every value operator (so `col neq X` excludes it) and
//! `not(col eq X)` includes it. Outside a `not`, SQL's NULL already fails a WHERE
//! clause, so predicates stay plain and indexable; under a `not` each predicate is
//! wrapped in `coalesce(..., false)` so that the negation of an empty cell's NULL is
//! true.

use super::super::physical::{PREFIX_CHARS, ident, table_name};
use super::TableHandle;
use chrono::{DateTime, NaiveDate, Utc};
use domain::tables::column::ColumnType;
use domain::tables::query::{Condition, Field, Op, Order, Quantifier};
use domain::tables::values::parse_duration;
use serde_json::Value;
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

/// What to read: filter, search, sort, projection and window.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Row filter.
    pub condition: Option<Condition>,
    /// Case-insensitive substring over string and text columns.
    pub q: Option<String>,
    /// Sort keys (then `id`); empty means creation order.
    pub sort: Vec<(Field, Order)>,
    /// Internal keys of the columns to return; `None` for all.
    pub projection: Option<Vec<String>>,
    /// What the caller may read (a grant's rows); `None` for every row.
    pub access: Option<Condition>,
    /// A per-row flag read with each record (whether the caller may edit it).
    pub flag: Option<Condition>,
    /// Rows to return (none: all).
    pub limit: Option<i64>,
    /// Rows to skip.
    pub offset: i64,
}

/// The SQL of a field of the record table (alias `t`).
pub(super) fn field_sql(field: &Field) -> anyhow::Result<String> {
    field_of(field, "t")
}

/// The SQL of a field of the table under `alias`.
fn field_of(field: &Field, alias: &str) -> anyhow::Result<String> {
    Ok(match field {
        Field::Column(c) => match &c.formula {
            Some(formula) => super::formula::value(formula, alias)?,
            None => match super::gate::value(c, alias)? {
                Some(computed) => computed,
                None => format!("{alias}.{}", ident(&c.key)?),
            },
        },
        Field::Id => format!("{alias}.id"),
        Field::CreatedAt => format!("{alias}.created_at"),
        Field::UpdatedAt => format!("{alias}.updated_at"),
        Field::CreatedBy => format!("{alias}.created_by"),
    })
}

fn like_pattern(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

fn prefix(s: &str) -> String {
    s.chars().take(PREFIX_CHARS).collect()
}

fn parse<T: std::str::FromStr>(v: &Value) -> anyhow::Result<T> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("operand {v} does not parse"))
}

fn push_value(
    qb: &mut QueryBuilder<'static, Postgres>,
    field: &Field,
    v: &Value,
) -> anyhow::Result<()> {
    use ColumnType as T;
    if *field == Field::Id {
        qb.push_bind(parse::<Uuid>(v)?);
        return Ok(());
    }
    match field.value_type() {
        T::Integer => qb.push_bind(v.as_i64().unwrap_or_default()),
        T::Float => qb.push_bind(v.as_f64().unwrap_or_default()),
        T::Boolean => qb.push_bind(v.as_bool().unwrap_or_default()),
        T::Date => qb.push_bind(NaiveDate::parse_from_str(
            v.as_str().unwrap_or_default(),
            "%Y-%m-%d",
        )?),
        T::Datetime => qb.push_bind(parse::<DateTime<Utc>>(v)?),
        T::Interval => {
            let micros = parse_duration(v).unwrap_or_default();
            qb.push("make_interval(secs => ");
            qb.push_bind(micros as f64 / 1e6);
            qb.push(")")
        }
        _ => qb.push_bind(v.as_str().unwrap_or_default().to_string()),
    };
    Ok(())
}

fn push_list(
    qb: &mut QueryBuilder<'static, Postgres>,
    field: &Field,
    values: &[Value],
) -> anyhow::Result<()> {
    use ColumnType as T;
    if *field == Field::Id {
        qb.push_bind(
            values
                .iter()
                .map(parse::<Uuid>)
                .collect::<anyhow::Result<Vec<_>>>()?,
        );
        return Ok(());
    }
    match field.value_type() {
        T::Integer => qb.push_bind(values.iter().filter_map(Value::as_i64).collect::<Vec<_>>()),
        T::Float => qb.push_bind(values.iter().filter_map(Value::as_f64).collect::<Vec<_>>()),
        T::Boolean => qb.push_bind(values.iter().filter_map(Value::as_bool).collect::<Vec<_>>()),
        T::Date => qb.push_bind(
            values
                .iter()
                .map(|v| {
                    Ok(NaiveDate::parse_from_str(
                        v.as_str().unwrap_or_default(),
                        "%Y-%m-%d",
                    )?)
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
        ),
        T::Datetime => qb.push_bind(
            values
                .iter()
                .map(parse::<DateTime<Utc>>)
                .collect::<anyhow::Result<Vec<_>>>()?,
        ),
        T::Interval => {
            let secs: Vec<f64> = values
                .iter()
                .map(|v| parse_duration(v).unwrap_or_default() as f64 / 1e6)
                .collect();
            qb.push("ARRAY(SELECT make_interval(secs => x) FROM unnest(");
            qb.push_bind(secs);
            qb.push(") AS x)")
        }
        _ => qb.push_bind(
            values
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>(),
        ),
    };
    Ok(())
}

fn push_test(
    qb: &mut QueryBuilder<'static, Postgres>,
    field: &Field,
    op: Op,
    operands: &[Value],
    company_id: Uuid,
    alias: &str,
) -> anyhow::Result<()> {
    let col = field_of(field, alias)?;
    let t = field.value_type();
    let first = operands.first().cloned().unwrap_or(Value::Null);
    let comparison = |op: Op| match op {
        Op::Eq => "=",
        Op::Neq => "<>",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        _ => "<=",
    };
    match op {
        Op::IsNull => {
            qb.push(format!("{col} IS NULL"));
        }
        Op::IsNotNull => {
            qb.push(format!("{col} IS NOT NULL"));
        }
        Op::Eq if t.is_textual() && matches!(field, Field::Column(_)) => {
            let s = first.as_str().unwrap_or_default().to_string();
            qb.push(format!("left({col}, {PREFIX_CHARS}) = "));
            qb.push_bind(prefix(&s));
            qb.push(format!(" AND {col} = "));
            qb.push_bind(s);
        }
        Op::Eq | Op::Neq | Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            qb.push(format!("{col} {} ", comparison(op)));
            push_value(qb, field, &first)?;
        }
        Op::In => {
            qb.push(format!("{col} = ANY("));
            push_list(qb, field, operands)?;
            qb.push(")");
        }
        Op::Contains if t.is_textual() => {
            qb.push(format!("{col} ILIKE "));
            qb.push_bind(like_pattern(first.as_str().unwrap_or_default()));
        }
        Op::Contains if t == ColumnType::Link => {
            qb.push(format!("{col} @> ARRAY["));
            qb.push_bind(parse::<Uuid>(&first)?);
            qb.push("]::uuid[]");
        }
        Op::Contains => {
            qb.push(format!("{col} @> ARRAY["));
            qb.push_bind(first.as_str().unwrap_or_default().to_string());
            qb.push("]::text[]");
        }
        Op::NameEq | Op::NameContains => {
            let (table, name) = if t == ColumnType::User {
                ("users", "username")
            } else {
                ("social_clients", "display_name")
            };
            qb.push(format!(
                "{col} IN (SELECT id::text FROM {table} WHERE company_id = "
            ));
            qb.push_bind(company_id);
            let s = first.as_str().unwrap_or_default().to_string();
            if op == Op::NameEq {
                qb.push(format!(" AND {name} = "));
                qb.push_bind(s);
            } else {
                qb.push(format!(" AND {name} ILIKE "));
                qb.push_bind(like_pattern(&s));
            }
            qb.push(")");
        }
    }
    Ok(())
}

/// Where a condition is compiled: the company, the alias of the row it tests and
/// whether it sits under a `not`.
#[derive(Clone, Copy)]
struct Scope<'a> {
    company_id: Uuid,
    alias: &'a str,
    under_not: bool,
    depth: usize,
}

/// Compiles a condition on the record row (alias `t`) into `qb`.
pub(super) fn push_condition(
    qb: &mut QueryBuilder<'static, Postgres>,
    condition: &Condition,
    company_id: Uuid,
) -> anyhow::Result<()> {
    push_condition_as(qb, condition, company_id, "t")
}

/// Compiles a condition on the row under `alias` into `qb`.
pub(super) fn push_condition_as(
    qb: &mut QueryBuilder<'static, Postgres>,
    condition: &Condition,
    company_id: Uuid,
    alias: &str,
) -> anyhow::Result<()> {
    let scope = Scope {
        company_id,
        alias,
        under_not: false,
        depth: 0,
    };
    push_node(qb, condition, scope)
}

fn push_node(
    qb: &mut QueryBuilder<'static, Postgres>,
    condition: &Condition,
    scope: Scope<'_>,
) -> anyhow::Result<()> {
    match condition {
        Condition::And(items) | Condition::Or(items) => {
            let joiner = if matches!(condition, Condition::And(_)) {
                " AND "
            } else {
                " OR "
            };
            qb.push("(");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    qb.push(joiner);
                }
                push_node(qb, item, scope)?;
            }
            qb.push(")");
        }
        Condition::Not(inner) => {
            qb.push("(NOT ");
            push_node(
                qb,
                inner,
                Scope {
                    under_not: true,
                    ..scope
                },
            )?;
            qb.push(")");
        }
        Condition::IsTrue(inner) => {
            qb.push("((");
            push_node(qb, inner, scope)?;
            qb.push(") IS TRUE)");
        }
        Condition::Const(value) => {
            qb.push(match value {
                Some(true) => "true",
                Some(false) => "false",
                None => "NULL::boolean",
            });
        }
        Condition::Test {
            field,
            op,
            operands,
        } => {
            qb.push(if scope.under_not { "coalesce((" } else { "(" });
            push_test(qb, field, *op, operands, scope.company_id, scope.alias)?;
            qb.push(if scope.under_not { "), false)" } else { ")" });
        }
        Condition::Link {
            column,
            target_table,
            quantifier,
            require_present,
            target,
        } => push_link(
            qb,
            scope,
            column,
            *target_table,
            *quantifier,
            *require_present,
            target,
        )?,
    }
    Ok(())
}

/// A link leaf: `any` is an EXISTS over the linked live records; `all` finds no
/// linked id that is dangling or whose record fails the target, and with
/// `require_present` also needs one live linked record. It is never unknown.
fn push_link(
    qb: &mut QueryBuilder<'static, Postgres>,
    scope: Scope<'_>,
    column: &str,
    target_table: Uuid,
    quantifier: Quantifier,
    require_present: bool,
    target: &Condition,
) -> anyhow::Result<()> {
    let cell = format!("{}.{}", scope.alias, ident(column)?);
    let linked = format!("l{}", scope.depth + 1);
    let inner = Scope {
        company_id: scope.company_id,
        alias: &linked,
        under_not: false,
        depth: scope.depth + 1,
    };
    let target_sql = table_name(target_table);
    let present =
        format!("EXISTS (SELECT 1 FROM {target_sql} AS {linked} WHERE {linked}.id = ANY({cell})");
    match quantifier {
        Quantifier::Any => {
            qb.push(format!("{present} AND "));
            push_node(qb, target, inner)?;
            qb.push(")");
        }
        Quantifier::All => {
            qb.push(format!(
                "(NOT EXISTS (SELECT 1 FROM unnest({cell}) AS u{d}(id) LEFT JOIN {target_sql} AS {linked} \
                 ON {linked}.id = u{d}.id WHERE {linked}.id IS NULL OR NOT coalesce(",
                d = scope.depth + 1
            ));
            push_node(qb, target, inner)?;
            qb.push(", false))");
            if require_present {
                qb.push(format!(" AND {present})"));
            }
            qb.push(")");
        }
    }
    Ok(())
}

impl Selection {
    pub(super) fn push_where(
        &self,
        qb: &mut QueryBuilder<'static, Postgres>,
        table: &TableHandle,
    ) -> anyhow::Result<()> {
        qb.push(" WHERE true");
        for condition in [&self.access, &self.condition].into_iter().flatten() {
            qb.push(" AND ");
            push_condition(qb, condition, table.company_id)?;
        }
        if let Some(q) = self.q.as_deref().filter(|q| !q.is_empty()) {
            let textual: Vec<String> = table
                .readable()
                .filter(|c| c.column_type.is_textual())
                .filter(|c| {
                    self.projection
                        .as_ref()
                        .is_none_or(|keys| keys.contains(&c.key))
                })
                .map(|c| ident(&c.key).map(|k| format!("t.{k}")))
                .collect::<anyhow::Result<_>>()?;
            if textual.is_empty() {
                qb.push(" AND false");
            } else {
                qb.push(" AND (");
                for (i, col) in textual.iter().enumerate() {
                    if i > 0 {
                        qb.push(" OR ");
                    }
                    qb.push(format!("{col} ILIKE "));
                    qb.push_bind(like_pattern(q));
                }
                qb.push(")");
            }
        }
        Ok(())
    }

    pub(super) fn push_order(
        &self,
        qb: &mut QueryBuilder<'static, Postgres>,
    ) -> anyhow::Result<()> {
        if self.sort.is_empty() {
            qb.push(" ORDER BY t.created_at, t.id");
            return Ok(());
        }
        let mut keys = Vec::new();
        for (field, order) in &self.sort {
            let col = field_sql(field)?;
            let direction = match order {
                Order::Asc => "ASC NULLS LAST",
                Order::Desc => "DESC NULLS LAST",
            };
            if field.value_type().is_textual() && matches!(field, Field::Column(_)) {
                keys.push(format!("left({col}, {PREFIX_CHARS}) {direction}"));
            }
            keys.push(format!("{col} {direction}"));
        }
        keys.push("t.id".into());
        qb.push(format!(" ORDER BY {}", keys.join(", ")));
        Ok(())
    }

    pub(super) fn push_window(&self, qb: &mut QueryBuilder<'static, Postgres>) {
        if let Some(limit) = self.limit {
            qb.push(" LIMIT ");
            qb.push_bind(limit);
        }
        if self.offset > 0 {
            qb.push(" OFFSET ");
            qb.push_bind(self.offset);
        }
    }
}
