//! Formula columns (spec section 2, `expression`): an expression over the row,
//! parsed once when the column is created into a typed tree that names columns by
//! internal key (so renames flow through) and is stored with the column.
//!
//! Grammar (`docs/formulas.md`): numbers, double-quoted strings, `TRUE` and `FALSE`,
//! `[Column]` references by display name or internal key, cross-table references
//! `[Link -> Column]` through a cardinality-one link, unary minus, `* /`, `+ -`,
//! the comparisons `< <= > >= == !=` (not chained), `IF(condition, then, else)`,
//! `AND(...)`, `OR(...)` and parentheses.
//!
//! Values follow SQL: an empty cell in gives an empty value out, `AND` and `OR` use
//! three-valued logic, and `IF` takes its else branch when the condition is false or
//! empty. `+ - *` of integers is an integer (empty when it leaves the 64-bit range);
//! `/` always gives a float, and division by zero gives an empty value.

mod parse;
mod resolve;

pub use parse::parse;
pub use resolve::{Tables, resolve};

use super::column::{ColumnDef, ColumnType, OtherTable};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Characters of an expression at most.
pub const MAX_CHARS: usize = 1000;
/// Nesting levels (parentheses and function calls) at most.
pub const MAX_NESTING: usize = 20;
/// Column references at most.
pub const MAX_REFS: usize = 20;
/// Levels of operations a stored tree holds at most, those of the formulas it
/// reads included: its JSON nests two levels per operation, and JSON readers stop
/// at 128 (a chain `1 + 1 + ... + 1` is one level per `+`).
pub const MAX_TREE_DEPTH: usize = 40;
/// Operations and values a stored tree holds at most, copies of the formulas it
/// reads included (so that formulas reading formulas cannot grow without bound).
pub const MAX_TREE_NODES: usize = 1000;

/// The kind of value an expression yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// 64-bit integer.
    Integer,
    /// Double-precision number.
    Float,
    /// True or false.
    Boolean,
    /// Text (string, text and select columns, string literals).
    Text,
    /// Calendar date.
    Date,
    /// Instant.
    Datetime,
}

impl Kind {
    /// The kind of a column's values, if formulas can read them.
    pub fn of(column: &ColumnDef) -> Option<Self> {
        use ColumnType as T;
        Some(match column.column_type {
            T::Integer => Self::Integer,
            T::Float => Self::Float,
            T::Boolean => Self::Boolean,
            T::String | T::Text | T::Select => Self::Text,
            T::Date => Self::Date,
            T::Datetime => Self::Datetime,
            T::Formula => column.formula.as_ref()?.kind,
            _ => return None,
        })
    }

    /// Integer or float.
    pub fn is_number(self) -> bool {
        matches!(self, Self::Integer | Self::Float)
    }

    /// The column type a formula of this kind reads as (filters, sorts, decoding).
    pub fn column_type(self) -> ColumnType {
        match self {
            Self::Integer => ColumnType::Integer,
            Self::Float => ColumnType::Float,
            Self::Boolean => ColumnType::Boolean,
            Self::Text => ColumnType::String,
            Self::Date => ColumnType::Date,
            Self::Datetime => ColumnType::Datetime,
        }
    }
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `<`
    Lt,
    /// `<=`
    Lte,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `==`
    Eq,
    /// `!=`
    Neq,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Add => "+",
            Self::Sub => "-",
            Self::Mul => "*",
            Self::Div => "/",
            Self::Lt => "<",
            Self::Lte => "<=",
            Self::Gt => ">",
            Self::Gte => ">=",
            Self::Eq => "==",
            Self::Neq => "!=",
        }
    }

    /// Whether it compares (and yields a boolean).
    pub fn is_comparison(self) -> bool {
        !matches!(self, Self::Add | Self::Sub | Self::Mul | Self::Div)
    }
}

/// An expression. [`parse`] yields `Ref` leaves; [`resolve`] turns every one into
/// `Column` or `Formula`, so a stored tree holds no `Ref`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// An integer literal.
    Integer(i64),
    /// A decimal literal.
    Float(f64),
    /// A string literal.
    Text(String),
    /// `TRUE` or `FALSE`.
    Boolean(bool),
    /// A column reference as written (display name or internal key), unresolved.
    Ref(String),
    /// A stored column.
    Column {
        /// Internal key.
        key: String,
        /// Its values' kind.
        kind: Kind,
    },
    /// `[Link -> Target]`: an integer or float column of the record a
    /// cardinality-one link column names (read under the caller's permissions on
    /// that table; evaluate-only: never filtered or sorted by).
    Linked {
        /// The link column (internal key).
        link: String,
        /// The table it targets.
        table: Uuid,
        /// The target column (internal key).
        key: String,
        /// Its values' kind (integer or float).
        kind: Kind,
    },
    /// Another formula column, with its tree (formulas cannot change, so the copy
    /// stays true).
    Formula {
        /// Internal key.
        key: String,
        /// Its tree.
        expr: Box<Expr>,
    },
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `IF(condition, then, else)`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `AND(...)`.
    And(Vec<Expr>),
    /// `OR(...)`.
    Or(Vec<Expr>),
}

impl Expr {
    /// The kind of a resolved expression's values.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Integer(_) => Kind::Integer,
            Self::Float(_) => Kind::Float,
            Self::Text(_) => Kind::Text,
            Self::Boolean(_) | Self::And(_) | Self::Or(_) => Kind::Boolean,
            // Unresolved references are never asked; text is a harmless answer.
            Self::Ref(_) => Kind::Text,
            Self::Column { kind, .. } | Self::Linked { kind, .. } => *kind,
            Self::Formula { expr, .. } | Self::Neg(expr) => expr.kind(),
            Self::Binary { op, .. } if op.is_comparison() => Kind::Boolean,
            Self::Binary { op: BinOp::Div, .. } => Kind::Float,
            Self::Binary { left, right, .. } | Self::If(_, left, right) => {
                match (left.kind(), right.kind()) {
                    (Kind::Integer, Kind::Integer) => Kind::Integer,
                    (a, b) if a.is_number() && b.is_number() => Kind::Float,
                    (a, _) => a,
                }
            }
        }
    }

    /// Levels of the tree (a leaf is 1).
    pub fn depth(&self) -> usize {
        1 + self.children().iter().map(|c| c.depth()).max().unwrap_or(0)
    }

    /// Nodes of the tree.
    pub fn nodes(&self) -> usize {
        1 + self.children().iter().map(|c| c.nodes()).sum::<usize>()
    }

    fn children(&self) -> Vec<&Expr> {
        match self {
            Self::Formula { expr, .. } | Self::Neg(expr) => vec![expr],
            Self::Binary { left, right, .. } => vec![left, right],
            Self::If(a, b, c) => vec![a, b, c],
            Self::And(items) | Self::Or(items) => items.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// The internal keys this expression reads directly (a referenced formula
    /// counts as itself, not as what it reads).
    pub fn references(&self, out: &mut Vec<String>) {
        match self {
            Self::Column { key, .. } | Self::Formula { key, .. } if !out.contains(key) => {
                out.push(key.clone());
            }
            Self::Linked { link, .. } if !out.contains(link) => out.push(link.clone()),
            Self::Neg(e) => e.references(out),
            Self::Binary { left, right, .. } => {
                left.references(out);
                right.references(out);
            }
            Self::If(a, b, c) => {
                for e in [a, b, c] {
                    e.references(out);
                }
            }
            Self::And(items) | Self::Or(items) => items.iter().for_each(|e| e.references(out)),
            _ => {}
        }
    }

    /// The cross-table references it holds, those of the formulas it reads
    /// included: (table, target column key, target column type).
    pub fn linked(&self, out: &mut Vec<(Uuid, String, ColumnType)>) {
        if let Self::Linked {
            table, key, kind, ..
        } = self
        {
            let read = (*table, key.clone(), kind.column_type());
            if !out.contains(&read) {
                out.push(read);
            }
        }
        for child in self.children() {
            child.linked(out);
        }
    }

    /// The expression as text, naming columns by their current display names (by
    /// key where a name holds `]`; a cross-table reference names the target column
    /// by its internal key).
    pub fn render(&self, columns: &[ColumnDef]) -> String {
        let name = |key: &str| {
            columns
                .iter()
                .find(|c| c.key == key)
                .map(|c| c.name.as_str())
                .filter(|n| !n.contains(']'))
                .unwrap_or(key)
                .to_string()
        };
        let nested = |e: &Expr| match e {
            Self::Binary { .. } => format!("({})", e.render(columns)),
            _ => e.render(columns),
        };
        let list = |items: &[Expr]| {
            items
                .iter()
                .map(|e| e.render(columns))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::Integer(n) => n.to_string(),
            Self::Float(x) => format!("{x:?}"),
            Self::Text(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            Self::Boolean(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            Self::Ref(r) => format!("[{r}]"),
            Self::Column { key, .. } | Self::Formula { key, .. } => format!("[{}]", name(key)),
            Self::Linked { link, key, .. } => format!("[{} -> {key}]", name(link)),
            Self::Neg(e) => format!("-{}", nested(e)),
            Self::Binary { op, left, right } => {
                format!("{} {} {}", nested(left), op.symbol(), nested(right))
            }
            Self::If(a, b, c) => format!(
                "IF({}, {}, {})",
                a.render(columns),
                b.render(columns),
                c.render(columns)
            ),
            Self::And(items) => format!("AND({})", list(items)),
            Self::Or(items) => format!("OR({})", list(items)),
        }
    }
}

/// A formula column's stored form: the resolved tree and the kind it yields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Formula {
    /// The resolved tree.
    pub expr: Expr,
    /// What it yields.
    pub kind: Kind,
}

impl Formula {
    /// Parses and resolves an expression against the table's columns and the
    /// tables its links target.
    pub fn build(
        expression: &str,
        columns: &[ColumnDef],
        others: &[OtherTable],
    ) -> Result<Self, String> {
        let parsed = parse(expression)?;
        let expr = resolve(parsed, Tables { columns, others })?;
        let (depth, nodes) = (expr.depth(), expr.nodes());
        if depth > MAX_TREE_DEPTH || nodes > MAX_TREE_NODES {
            return Err(format!(
                "formula: the expression holds {nodes} operations and values {depth} levels deep (formulas it reads included); at most {MAX_TREE_NODES} and {MAX_TREE_DEPTH} can be stored"
            ));
        }
        Ok(Self {
            kind: expr.kind(),
            expr,
        })
    }

    /// The internal keys it reads directly.
    pub fn references(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.expr.references(&mut out);
        out
    }

    /// The columns of other tables it reads through links: (table, key, type).
    pub fn linked(&self) -> Vec<(Uuid, String, ColumnType)> {
        let mut out = Vec::new();
        self.expr.linked(&mut out);
        out
    }
}

/// The computed columns (formulas, rollups, lookups) that read `key` directly, by
/// display name.
pub fn dependents(columns: &[ColumnDef], key: &str) -> Vec<String> {
    columns
        .iter()
        .filter(|c| c.reads().iter().any(|k| k == key))
        .map(|c| c.name.clone())
        .collect()
}

/// `hidden` plus every computed column that reads a hidden column, directly or
/// through a formula: a computed column never shows what its caller may not see.
pub fn with_dependents(columns: &[ColumnDef], mut hidden: Vec<String>) -> Vec<String> {
    // Computed columns read only columns created before them, so one pass in column
    // order reaches every indirect dependent.
    for column in columns {
        if !hidden.contains(&column.key) && column.reads().iter().any(|k| hidden.contains(k)) {
            hidden.push(column.key.clone());
        }
    }
    hidden
}

#[cfg(test)]
mod tests;
