//! Property: a formula computed by the SQL that reads records equals a reference
//! evaluation written here, over random expressions (arithmetic, unary minus,
//! comparisons, `IF`, `AND`, `OR`, division at the top) and rows with empty cells:
//! SQL-like empty values, three-valued logic, integer results outside 64 bits empty,
//! division by zero empty.

use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::formula::{Formula, MAX_REFS};
use projections::read_models::tables::read::{Selection, TableHandle};
use projections::read_models::tables::table_name;
use projections::testing::TestDatabase;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use uuid::Uuid;

const TABLE: Uuid = Uuid::from_u128(0x100);
const INTS: [Option<i64>; 5] = [None, Some(-3), Some(0), Some(7), Some(100_000)];
const FLOATS: [Option<f64>; 4] = [None, Some(-2.5), Some(0.0), Some(1.25)];
const BOOLS: [Option<bool>; 3] = [None, Some(true), Some(false)];

fn column(key: &str, name: &str, t: ColumnType) -> ColumnDef {
    ColumnDef::new(key, name, t)
}

fn columns() -> Vec<ColumnDef> {
    vec![
        column("col_a", "A", ColumnType::Integer),
        column("col_b", "B", ColumnType::Float),
        column("col_c", "C", ColumnType::Boolean),
    ]
}

/// A numeric expression of the generator.
#[derive(Debug, Clone)]
enum N {
    Int(i64),
    Half(i64),
    A,
    B,
    Neg(Box<N>),
    Bin(char, Box<N>, Box<N>),
    If(Box<Cond>, Box<N>, Box<N>),
}

/// A boolean expression of the generator.
#[derive(Debug, Clone)]
enum Cond {
    C,
    Lit(bool),
    Cmp(&'static str, N, N),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

/// What the formula is: a number, a quotient, or a condition.
#[derive(Debug, Clone)]
enum Top {
    Number(N),
    Quotient(N, N),
    Condition(Cond),
}

fn numbers() -> BoxedStrategy<N> {
    let leaf = prop_oneof![
        (0i64..60).prop_map(N::Int),
        (0i64..20).prop_map(N::Half),
        Just(N::A),
        Just(N::B),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let condition = prop_oneof![
            Just(Cond::C),
            any::<bool>().prop_map(Cond::Lit),
            (
                prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| Cond::Cmp(op, a, b)),
        ];
        let conditions = prop_oneof![
            condition.clone(),
            prop::collection::vec(condition.clone(), 1..4).prop_map(Cond::And),
            prop::collection::vec(condition, 1..4).prop_map(Cond::Or),
        ];
        prop_oneof![
            inner.clone().prop_map(|n| N::Neg(Box::new(n))),
            (
                prop::sample::select(vec!['+', '-', '*']),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| N::Bin(op, Box::new(a), Box::new(b))),
            (conditions, inner.clone(), inner).prop_map(|(c, a, b)| N::If(
                Box::new(c),
                Box::new(a),
                Box::new(b)
            )),
        ]
    })
    .boxed()
}

fn tops() -> impl Strategy<Value = Top> {
    let n = numbers();
    prop_oneof![
        n.clone().prop_map(Top::Number),
        (n.clone(), n.clone()).prop_map(|(a, b)| Top::Quotient(a, b)),
        (
            prop::sample::select(vec!["<", ">=", "==", "!="]),
            n.clone(),
            n.clone()
        )
            .prop_map(|(op, a, b)| Top::Condition(Cond::Cmp(op, a, b))),
        (n.clone(), n)
            .prop_map(|(a, b)| Top::Condition(Cond::Or(vec![Cond::Cmp(">", a, b), Cond::C,]))),
    ]
}

fn text_n(n: &N) -> String {
    match n {
        N::Int(i) => i.to_string(),
        N::Half(i) => format!("{i}.5"),
        N::A => "[A]".into(),
        N::B => "[B]".into(),
        N::Neg(a) => format!("-({})", text_n(a)),
        N::Bin(op, a, b) => format!("({} {op} {})", text_n(a), text_n(b)),
        N::If(c, a, b) => format!("IF({}, {}, {})", text_c(c), text_n(a), text_n(b)),
    }
}

fn text_c(c: &Cond) -> String {
    let list = |items: &[Cond]| items.iter().map(text_c).collect::<Vec<_>>().join(", ");
    match c {
        Cond::C => "[C]".into(),
        Cond::Lit(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Cond::Cmp(op, a, b) => format!("{} {op} {}", text_n(a), text_n(b)),
        Cond::And(items) => format!("AND({})", list(items)),
        Cond::Or(items) => format!("OR({})", list(items)),
    }
}

fn text(top: &Top) -> String {
    match top {
        Top::Number(n) => text_n(n),
        Top::Quotient(a, b) => format!("{} / {}", text_n(a), text_n(b)),
        Top::Condition(c) => text_c(c),
    }
}

/// A reference value: integers exact (i128), floats as f64.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }
}

struct Row {
    a: Option<i64>,
    b: Option<f64>,
    c: Option<bool>,
}

/// `Err` when the reference itself cannot follow (i128 overflow): the case is
/// skipped.
fn eval_n(n: &N, row: &Row) -> Result<Option<Num>, ()> {
    Ok(match n {
        N::Int(i) => Some(Num::Int(i128::from(*i))),
        N::Half(i) => Some(Num::Float(*i as f64 + 0.5)),
        N::A => row.a.map(|a| Num::Int(i128::from(a))),
        N::B => row.b.map(Num::Float),
        N::Neg(a) => match eval_n(a, row)? {
            Some(Num::Int(i)) => Some(Num::Int(-i)),
            Some(Num::Float(x)) => Some(Num::Float(-x)),
            None => None,
        },
        N::Bin(op, a, b) => match (eval_n(a, row)?, eval_n(b, row)?) {
            (Some(Num::Int(x)), Some(Num::Int(y))) => Some(Num::Int(
                match op {
                    '+' => x.checked_add(y),
                    '-' => x.checked_sub(y),
                    _ => x.checked_mul(y),
                }
                .ok_or(())?,
            )),
            (Some(x), Some(y)) => Some(Num::Float(match op {
                '+' => x.f() + y.f(),
                '-' => x.f() - y.f(),
                _ => x.f() * y.f(),
            })),
            _ => None,
        },
        N::If(c, a, b) => {
            let (then, otherwise) = (eval_n(a, row)?, eval_n(b, row)?);
            let chosen = if eval_c(c, row)? == Some(true) {
                then
            } else {
                otherwise
            };
            // A branch of a mixed IF reads as a float.
            let mixed = matches!(
                (then, otherwise),
                (Some(Num::Int(_)), Some(Num::Float(_))) | (Some(Num::Float(_)), Some(Num::Int(_)))
            ) || kind_is_float(a) != kind_is_float(b);
            match chosen {
                Some(v) if mixed => Some(Num::Float(v.f())),
                other => other,
            }
        }
    })
}

fn kind_is_float(n: &N) -> bool {
    match n {
        N::Int(_) | N::A => false,
        N::Half(_) | N::B => true,
        N::Neg(a) => kind_is_float(a),
        N::Bin(_, a, b) | N::If(_, a, b) => kind_is_float(a) || kind_is_float(b),
    }
}

fn eval_c(c: &Cond, row: &Row) -> Result<Option<bool>, ()> {
    Ok(match c {
        Cond::C => row.c,
        Cond::Lit(b) => Some(*b),
        Cond::Cmp(op, a, b) => match (eval_n(a, row)?, eval_n(b, row)?) {
            (Some(x), Some(y)) => {
                let ordering = match (x, y) {
                    (Num::Int(x), Num::Int(y)) => x.cmp(&y),
                    _ => x.f().partial_cmp(&y.f()).ok_or(())?,
                };
                Some(match *op {
                    "<" => ordering.is_lt(),
                    "<=" => ordering.is_le(),
                    ">" => ordering.is_gt(),
                    ">=" => ordering.is_ge(),
                    "==" => ordering.is_eq(),
                    _ => ordering.is_ne(),
                })
            }
            _ => None,
        },
        Cond::And(items) | Cond::Or(items) => {
            let values = items
                .iter()
                .map(|i| eval_c(i, row))
                .collect::<Result<Vec<_>, _>>()?;
            let decisive = matches!(c, Cond::Or(_));
            if values.contains(&Some(decisive)) {
                Some(decisive)
            } else if values.contains(&None) {
                None
            } else {
                Some(!decisive)
            }
        }
    })
}

/// The expected JSON value of a formula on a row (`Err`: skip the case).
fn expected(top: &Top, row: &Row) -> Result<Value, ()> {
    Ok(match top {
        Top::Condition(c) => eval_c(c, row)?.map_or(Value::Null, Value::Bool),
        Top::Quotient(a, b) => match (eval_n(a, row)?, eval_n(b, row)?) {
            (Some(x), Some(y)) if y.f() != 0.0 => serde_json::json!(x.f() / y.f()),
            _ => Value::Null,
        },
        Top::Number(n) => match eval_n(n, row)? {
            Some(Num::Int(i)) if !kind_is_float(n) => {
                i64::try_from(i).map_or(Value::Null, |i| serde_json::json!(i))
            }
            Some(v) => serde_json::json!(v.f()),
            None => Value::Null,
        },
    })
}

fn same(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(x), Some(y)) if got.is_f64() || want.is_f64() => {
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => got == want,
    }
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for a in INTS {
        for b in FLOATS {
            for c in BOOLS {
                rows.push(Row { a, b, c });
            }
        }
    }
    rows
}

#[test]
fn formulas_compute_in_sql_what_a_reference_evaluation_gives() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDatabase::fresh());
    let rows = rows();
    runtime.block_on(async {
        let name = table_name(TABLE);
        sqlx::query(&format!(
            "CREATE TABLE {name} (id uuid PRIMARY KEY, created_at timestamptz NOT NULL,
             updated_at timestamptz NOT NULL DEFAULT now(), created_by text NOT NULL DEFAULT 'user:x',
             col_a bigint, col_b double precision, col_c boolean)"
        ))
        .execute(&db.pool)
        .await
        .unwrap();
        for (i, row) in rows.iter().enumerate() {
            sqlx::query(&format!(
                "INSERT INTO {name} (id, created_at, col_a, col_b, col_c)
                 VALUES ($1, now() + make_interval(secs => $2), $3, $4, $5)"
            ))
            .bind(Uuid::from_u128(0x1000 + i as u128))
            .bind(i as f64)
            .bind(row.a)
            .bind(row.b)
            .bind(row.c)
            .execute(&db.pool)
            .await
            .unwrap();
        }
    });
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    runner
        .run(&tops(), |top| {
            let source = text(&top);
            let Ok(want) = rows
                .iter()
                .map(|r| expected(&top, r))
                .collect::<Result<Vec<_>, _>>()
            else {
                return Ok(());
            };
            // Expressions past the reference limit are refused (tested with the
            // parser); the generator may build one.
            if source.matches('[').count() > MAX_REFS {
                return Ok(());
            }
            let formula = Formula::build(&source, &columns(), &[])
                .map_err(|e| TestCaseError::fail(format!("{source}: {e}")))?;
            let mut f = column("col_f", "F", ColumnType::Formula);
            f.formula = Some(Box::new(formula));
            let mut all = columns();
            all.push(f);
            let handle = TableHandle {
                company_id: Uuid::nil(),
                table_id: TABLE,
                columns: all,
                gates: Vec::new(),
            };
            let selection = Selection {
                projection: Some(vec!["col_f".into()]),
                ..Selection::default()
            };
            let page = runtime
                .block_on(handle.page(&db.pool, &selection))
                .map_err(|e| TestCaseError::fail(format!("{source}: {e:#}")))?;
            for ((record, want), row) in page.iter().zip(&want).zip(&rows) {
                let got = &record.cells[0].1;
                prop_assert!(
                    same(got, want),
                    "{source} on a={:?} b={:?} c={:?}: SQL gave {got}, the reference {want}",
                    row.a,
                    row.b,
                    row.c
                );
            }
            Ok(())
        })
        .unwrap();
}
