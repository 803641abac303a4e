//! Resolving a parsed formula against the table: references become internal keys
//! (or the tree of another formula column, or a numeric column of the record a
//! cardinality-one link names) and every operation is type-checked.

use super::{BinOp, Expr, Kind};
use crate::tables::column::{Cardinality, ColumnDef, ColumnType, OtherTable};

/// What references resolve against: the table's columns and the tables its link
/// columns target.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'a> {
    /// The table's columns.
    pub columns: &'a [ColumnDef],
    /// The tables its link columns target (that exist in the company).
    pub others: &'a [OtherTable],
}

/// Resolves every reference of a parsed expression and checks its types.
pub fn resolve(expr: Expr, tables: Tables<'_>) -> Result<Expr, String> {
    let resolved = match expr {
        Expr::Ref(reference) => return column(&reference, tables),
        Expr::Neg(inner) => {
            let inner = resolve(*inner, tables)?;
            expect_number("unary -", inner.kind())?;
            Expr::Neg(Box::new(inner))
        }
        Expr::Binary { op, left, right } => {
            let left = resolve(*left, tables)?;
            let right = resolve(*right, tables)?;
            check_binary(op, left.kind(), right.kind())?;
            Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            }
        }
        Expr::If(condition, then, otherwise) => {
            let condition = resolve(*condition, tables)?;
            if condition.kind() != Kind::Boolean {
                return Err(format!(
                    "formula: the condition of IF must be a boolean, not {}",
                    name(condition.kind())
                ));
            }
            let then = resolve(*then, tables)?;
            let otherwise = resolve(*otherwise, tables)?;
            if !compatible(then.kind(), otherwise.kind()) {
                return Err(format!(
                    "formula: the branches of IF must be of one kind, not {} and {}",
                    name(then.kind()),
                    name(otherwise.kind())
                ));
            }
            Expr::If(Box::new(condition), Box::new(then), Box::new(otherwise))
        }
        Expr::And(items) => Expr::And(booleans("AND", items, tables)?),
        Expr::Or(items) => Expr::Or(booleans("OR", items, tables)?),
        literal => literal,
    };
    Ok(resolved)
}

fn named<'a>(columns: &'a [ColumnDef], reference: &str) -> Option<&'a ColumnDef> {
    columns
        .iter()
        .find(|c| c.key == reference)
        .or_else(|| columns.iter().find(|c| c.name == reference))
}

fn column(reference: &str, tables: Tables<'_>) -> Result<Expr, String> {
    let Some(column) = named(tables.columns, reference) else {
        if let Some((link, target)) = reference.split_once("->") {
            return linked(link.trim(), target.trim(), tables);
        }
        return Err(format!(
            "formula: Column '{reference}' does not exist in table schema"
        ));
    };
    if column.column_type == ColumnType::Formula {
        let formula = column
            .formula
            .as_ref()
            .ok_or_else(|| format!("formula: column '{}' has no expression", column.name))?;
        return Ok(Expr::Formula {
            key: column.key.clone(),
            expr: Box::new(formula.expr.clone()),
        });
    }
    let kind = Kind::of(column).ok_or_else(|| {
        format!(
            "formula: column '{}' is a {} column, which formulas cannot read",
            column.name,
            column.column_type.as_str()
        )
    })?;
    Ok(Expr::Column {
        key: column.key.clone(),
        kind,
    })
}

/// `[Link -> Target]`: a numeric stored column of the record a cardinality-one
/// link column names.
fn linked(link: &str, target: &str, tables: Tables<'_>) -> Result<Expr, String> {
    let reference = format!("[{link} -> {target}]");
    let column = named(tables.columns, link)
        .filter(|c| c.column_type == ColumnType::Link)
        .ok_or_else(|| format!("formula: in {reference}, '{link}' is not a link column"))?;
    if column.link_cardinality() != Cardinality::One {
        return Err(format!(
            "formula: in {reference}, '{link}' must be a cardinality-one link"
        ));
    }
    let table = column.target_table_id.unwrap_or_default();
    let others = tables
        .others
        .iter()
        .find(|o| o.id == table)
        .ok_or_else(|| format!("formula: in {reference}, the linked table does not exist"))?;
    let read = named(&others.columns, target).ok_or_else(|| {
        format!("formula: in {reference}, '{target}' is not a column of the linked table")
    })?;
    let kind = match read.column_type {
        ColumnType::Integer => Kind::Integer,
        ColumnType::Float => Kind::Float,
        other => {
            return Err(format!(
                "formula: in {reference}, '{target}' is a {} column; cross-table references read integer and float columns",
                other.as_str()
            ));
        }
    };
    Ok(Expr::Linked {
        link: column.key.clone(),
        table,
        key: read.key.clone(),
        kind,
    })
}

fn booleans(function: &str, items: Vec<Expr>, tables: Tables<'_>) -> Result<Vec<Expr>, String> {
    items
        .into_iter()
        .map(|item| {
            let item = resolve(item, tables)?;
            if item.kind() != Kind::Boolean {
                return Err(format!(
                    "formula: the arguments of {function} must be booleans, not {}",
                    name(item.kind())
                ));
            }
            Ok(item)
        })
        .collect()
}

fn name(kind: Kind) -> &'static str {
    match kind {
        Kind::Integer => "an integer",
        Kind::Float => "a float",
        Kind::Boolean => "a boolean",
        Kind::Text => "text",
        Kind::Date => "a date",
        Kind::Datetime => "a datetime",
    }
}

fn expect_number(what: &str, kind: Kind) -> Result<(), String> {
    if kind.is_number() {
        Ok(())
    } else {
        Err(format!("formula: {what} needs numbers, not {}", name(kind)))
    }
}

/// Whether two kinds mix: numbers with numbers, anything else with itself.
fn compatible(a: Kind, b: Kind) -> bool {
    (a.is_number() && b.is_number()) || a == b
}

fn check_binary(op: BinOp, left: Kind, right: Kind) -> Result<(), String> {
    let what = format!("`{}`", op.symbol());
    if !op.is_comparison() {
        expect_number(&what, left)?;
        return expect_number(&what, right);
    }
    let ordered = !matches!(op, BinOp::Eq | BinOp::Neq);
    if !compatible(left, right) || (ordered && left == Kind::Boolean) {
        return Err(format!(
            "formula: {what} cannot compare {} with {}",
            name(left),
            name(right)
        ));
    }
    Ok(())
}
