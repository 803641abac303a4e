//! Formula columns compiled to SQL over the record row, so that pages, filters,
//! sorts, aggregations and exports compute them in the same query that reads the
//! row (never one query per record).
//!
//! Numbers compute in `numeric` and read through the guards of migration
//! `0506_formula_functions.sql`; division by zero is `NULLIF`'s empty value; `IF`
//! is a `CASE`, whose empty condition takes the else branch.

use super::super::physical::ident;
use super::gate::{exposed, gated};
use domain::tables::formula::{BinOp, Expr, Formula, Kind};

/// The SQL of a formula's value for the row under `alias`.
pub(super) fn value(formula: &Formula, alias: &str) -> anyhow::Result<String> {
    Ok(read_as(formula.kind, &sql(&formula.expr, alias)?))
}

/// A computed numeric value read as its kind.
fn read_as(kind: Kind, sql: &str) -> String {
    match kind {
        Kind::Integer => format!("ct_formula_integer({sql})"),
        Kind::Float => format!("ct_formula_float({sql})"),
        _ => sql.to_string(),
    }
}

fn sql(expr: &Expr, alias: &str) -> anyhow::Result<String> {
    Ok(match expr {
        Expr::Integer(n) => format!("({n})::numeric"),
        Expr::Float(x) => format!("({x:?})::numeric"),
        Expr::Text(s) => format!("'{}'::text", s.replace('\'', "''")),
        Expr::Boolean(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Expr::Ref(r) => anyhow::bail!("unresolved formula reference [{r}]"),
        Expr::Column { key, kind } if kind.is_number() => {
            format!("{alias}.{}::numeric", ident(key)?)
        }
        Expr::Column { key, .. } => format!("{alias}.{}", ident(key)?),
        // The linked record's column as the caller reads it there (see `gate`).
        Expr::Linked {
            link,
            table,
            key,
            kind,
        } => format!(
            "(SELECT r.{}::numeric FROM {} AS r WHERE r.id = ANY({alias}.{}) LIMIT 1)",
            exposed(key, kind.column_type())?,
            gated(*table),
            ident(link)?
        ),
        // Another formula reads as its own column does (guarded), so both show the
        // same value.
        Expr::Formula { expr, .. } => {
            let kind = expr.kind();
            let inner = read_as(kind, &sql(expr, alias)?);
            if kind.is_number() {
                format!("({inner})::numeric")
            } else {
                inner
            }
        }
        Expr::Neg(inner) => format!("(-{})", sql(inner, alias)?),
        Expr::Binary { op, left, right } => {
            let (l, r) = (sql(left, alias)?, sql(right, alias)?);
            match op {
                BinOp::Div => format!("({l} / NULLIF({r}, 0))"),
                BinOp::Eq => format!("({l} = {r})"),
                BinOp::Neq => format!("({l} <> {r})"),
                op => format!("({l} {} {r})", op.symbol()),
            }
        }
        Expr::If(condition, then, otherwise) => format!(
            "(CASE WHEN {} THEN {} ELSE {} END)",
            sql(condition, alias)?,
            sql(then, alias)?,
            sql(otherwise, alias)?
        ),
        Expr::And(items) => list(items, " AND ", alias)?,
        Expr::Or(items) => list(items, " OR ", alias)?,
    })
}

fn list(items: &[Expr], joiner: &str, alias: &str) -> anyhow::Result<String> {
    let parts = items
        .iter()
        .map(|e| sql(e, alias))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(format!("({})", parts.join(joiner)))
}
