//! Resolving a parsed formula against the table: references become internal keys
//! (or the tree of another formula column) and every operation is type-checked.

use super::{BinOp, Expr, Kind};
use crate::tables::column::{ColumnDef, ColumnType};

/// Resolves every reference of a parsed expression and checks its types.
pub fn resolve(expr: Expr, columns: &[ColumnDef]) -> Result<Expr, String> {
    let resolved = match expr {
        Expr::Ref(reference) => return column(&reference, columns),
        Expr::Neg(inner) => {
            let inner = resolve(*inner, columns)?;
            expect_number("unary -", inner.kind())?;
            Expr::Neg(Box::new(inner))
        }
        Expr::Binary { op, left, right } => {
            let left = resolve(*left, columns)?;
            let right = resolve(*right, columns)?;
            check_binary(op, left.kind(), right.kind())?;
            Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            }
        }
        Expr::If(condition, then, otherwise) => {
            let condition = resolve(*condition, columns)?;
            if condition.kind() != Kind::Boolean {
                return Err(format!(
                    "formula: the condition of IF must be a boolean, not {}",
                    name(condition.kind())
                ));
            }
            let then = resolve(*then, columns)?;
            let otherwise = resolve(*otherwise, columns)?;
            if !compatible(then.kind(), otherwise.kind()) {
                return Err(format!(
                    "formula: the branches of IF must be of one kind, not {} and {}",
                    name(then.kind()),
                    name(otherwise.kind())
                ));
            }
            Expr::If(Box::new(condition), Box::new(then), Box::new(otherwise))
        }
        Expr::And(items) => Expr::And(booleans("AND", items, columns)?),
        Expr::Or(items) => Expr::Or(booleans("OR", items, columns)?),
        literal => literal,
    };
    Ok(resolved)
}

fn column(reference: &str, columns: &[ColumnDef]) -> Result<Expr, String> {
    let Some(column) = columns
        .iter()
        .find(|c| c.key == reference)
        .or_else(|| columns.iter().find(|c| c.name == reference))
    else {
        if reference.contains("->") {
            return Err(format!(
                "formula: cross-table references like [{reference}] are not available yet"
            ));
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

fn booleans(function: &str, items: Vec<Expr>, columns: &[ColumnDef]) -> Result<Vec<Expr>, String> {
    items
        .into_iter()
        .map(|item| {
            let item = resolve(item, columns)?;
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
